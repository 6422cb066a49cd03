"""CIFAR-10/100 and CINIC-10 loaders on tiny files written in the real on-disk formats."""
from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch
from PIL import Image

from sfl_sim.data import DATASETS, ArrayDataset, DatasetNotFoundError
from sfl_sim.data.cifar import CIFAR10, CIFAR100, read_cifar_batch
from sfl_sim.data.cinic import CINIC10, CINIC10_CLASSES
from sfl_sim.data.images import DatasetFormatError

PER_BATCH = 6  # images per CIFAR-10 batch file


def _batch(rng, n, label_keys, num_classes, str_keys=False):
    """A dict like the real CIFAR pickles: uint8 data (N, 3072), labels as lists of Python ints."""
    entry = {
        b"batch_label": b"training batch 1 of 5",
        b"data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8),
        b"filenames": [f"img_{i}.png".encode() for i in range(n)],
    }
    for key in label_keys:
        entry[key.encode()] = [int(v) for v in rng.integers(0, num_classes, size=n)]
    if str_keys:  # what a pickle re-written after loading with encoding="latin1" holds
        entry = {k.decode(): v for k, v in entry.items()}
    return entry


def _dump(path, obj):
    with open(path, "wb") as fh:
        pickle.dump(obj, fh, protocol=2)  # the real files are Python-2 pickles (protocol 2)


def make_cifar10(root, seed=0, skip=None, str_keys=False):
    folder = os.path.join(root, "cifar-10-batches-py")
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    entries = {}
    for name in [f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]:
        entries[name] = _batch(rng, PER_BATCH, ["labels"], 10, str_keys)
        if name != skip:
            _dump(os.path.join(folder, name), entries[name])
    return folder, entries


def make_cifar100(root, seed=0):
    folder = os.path.join(root, "cifar-100-python")
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    entries = {}
    for name, n in (("train", 8), ("test", 5)):
        entries[name] = _batch(rng, n, ["fine_labels", "coarse_labels"], 20)
        entries[name][b"fine_labels"] = [int(v) for v in rng.integers(0, 100, size=n)]
        _dump(os.path.join(folder, name), entries[name])
    return folder, entries


def _planes_to_hwc(data):
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)


# ----------------------------------------------------------------------------------------- CIFAR


@pytest.mark.parametrize("point_at", ["parent", "folder"])
def test_cifar10_reads_pickles_from_folder_or_parent(tmp_path, point_at):
    folder, entries = make_cifar10(tmp_path)
    ds = DATASETS.create("cifar10", data_root=str(tmp_path if point_at == "parent" else folder)).load()
    assert isinstance(ds, ArrayDataset) and ds.name == "cifar10"
    assert ds.train_x.shape == (5 * PER_BATCH, 32, 32, 3) and ds.train_x.dtype == np.uint8
    assert ds.test_x.shape == (PER_BATCH, 32, 32, 3)
    assert ds.train_y.dtype == np.int64 and ds.input_shape == (3, 32, 32) and ds.num_classes == 10
    assert ds.mean == (0.4914, 0.4822, 0.4465) and ds.std == (0.2470, 0.2435, 0.2616)
    train_data = np.concatenate([entries[f"data_batch_{k}"][b"data"] for k in range(1, 6)])
    np.testing.assert_array_equal(ds.train_x, _planes_to_hwc(train_data))
    np.testing.assert_array_equal(ds.train_y, sum((entries[f"data_batch_{k}"][b"labels"] for k in range(1, 6)), []))
    np.testing.assert_array_equal(ds.test_y, entries["test_batch"][b"labels"])
    # Row-major RGB planes: pixel (row 2, col 5) of channel G is element 1024 + 2*32 + 5.
    assert ds.test_x[3, 2, 5, 1] == entries["test_batch"][b"data"][3, 1024 + 2 * 32 + 5]
    x, y = ds.tensors("test")
    assert x.shape == (PER_BATCH, 3, 32, 32) and y.dtype == torch.int64
    expected = (ds.test_x[0, 4, 7, 2] / 255.0 - 0.4465) / 0.2616
    assert float(x[0, 2, 4, 7]) == pytest.approx(expected, abs=1e-5)


def test_cifar10_str_keys_env_var_and_limits(tmp_path, monkeypatch):
    folder, entries = make_cifar10(tmp_path, str_keys=True)
    monkeypatch.setenv("SFL_SIM_CIFAR10_DIR", folder)
    loader = CIFAR10(max_train_samples=8, max_test_samples=2)
    assert loader.data_root == folder
    ds = loader.load()
    assert ds.num_samples("train") == 8 and ds.num_samples("test") == 2
    np.testing.assert_array_equal(ds.train_x[:6], _planes_to_hwc(entries["data_batch_1"]["data"]))
    np.testing.assert_array_equal(ds.train_y[6:], entries["data_batch_2"]["labels"][:2])
    assert repr(loader) == f"CIFAR10(data_root={folder!r}, max_train_samples=8, max_test_samples=2)"


def test_cifar100_fine_and_coarse_labels(tmp_path):
    _, entries = make_cifar100(tmp_path)
    fine = CIFAR100(data_root=str(tmp_path)).load()
    assert fine.num_classes == 100 and fine.train_x.shape == (8, 32, 32, 3) and fine.test_x.shape == (5, 32, 32, 3)
    np.testing.assert_array_equal(fine.train_y, entries["train"][b"fine_labels"])
    np.testing.assert_array_equal(fine.test_x, _planes_to_hwc(entries["test"][b"data"]))
    assert fine.mean == (0.5071, 0.4865, 0.4409)
    coarse = DATASETS.create("cifar100", data_root=str(tmp_path), label_type="coarse").load()
    assert coarse.num_classes == 20
    np.testing.assert_array_equal(coarse.test_y, entries["test"][b"coarse_labels"])
    with pytest.raises(ValueError, match="label_type"):
        CIFAR100(data_root=str(tmp_path), label_type="super")


def test_cifar_missing_files_say_what_and_where(tmp_path, monkeypatch):
    monkeypatch.delenv("SFL_SIM_CIFAR10_DIR", raising=False)
    monkeypatch.delenv("SFL_SIM_CIFAR100_DIR", raising=False)
    with pytest.raises(DatasetNotFoundError) as info:
        CIFAR10().load()
    msg = str(info.value)
    assert "SFL_SIM_CIFAR10_DIR" in msg and "data_root" in msg and "data_batch_1" in msg
    assert "nothing is downloaded" in msg and "cifar-10-python.tar.gz" in msg

    folder, _ = make_cifar10(tmp_path, skip="data_batch_3")
    with pytest.raises(DatasetNotFoundError) as info:
        CIFAR10(data_root=str(tmp_path)).load()
    msg = str(info.value)
    assert "missing data_batch_3" in msg and folder in msg and "data_batch_2" not in msg.split(";")[0]

    with pytest.raises(DatasetNotFoundError) as info:
        CIFAR100(data_root=str(tmp_path / "nowhere")).load()
    assert "cifar-100-python" in str(info.value) and "train, test" in str(info.value)
    assert isinstance(info.value, FileNotFoundError)


def test_cifar_corrupt_files_name_the_file(tmp_path):
    folder, _ = make_cifar10(tmp_path)
    path = os.path.join(folder, "data_batch_2")
    with open(path, "rb") as fh:
        payload = fh.read()
    with open(path, "wb") as fh:
        fh.write(payload[: len(payload) // 2])  # truncated
    with pytest.raises(DatasetFormatError, match="data_batch_2"):
        CIFAR10(data_root=folder).load()

    _dump(path, {b"data": np.zeros((2, 3072), dtype=np.float32), b"labels": [0, 1]})
    with pytest.raises(DatasetFormatError, match=r"data_batch_2.*uint8 array of shape \(N, 3072\)"):
        CIFAR10(data_root=folder).load()
    _dump(path, {b"data": np.zeros((2, 3072), dtype=np.uint8), b"fine_labels": [0, 1]})
    with pytest.raises(DatasetFormatError, match="no key 'labels'"):
        CIFAR10(data_root=folder).load()
    _dump(path, {b"data": np.zeros((2, 3072), dtype=np.uint8), b"labels": [0, 10]})
    with pytest.raises(DatasetFormatError, match=r"data_batch_2.*\[0, 10\)"):
        CIFAR10(data_root=folder).load()
    _dump(path, {b"data": np.zeros((2, 3072), dtype=np.uint8), b"labels": [0]})
    with pytest.raises(DatasetFormatError, match="2 integer labels"):
        CIFAR10(data_root=folder).load()
    with open(path, "wb") as fh:
        fh.write(b"this is not a pickle")
    with pytest.raises(DatasetFormatError, match="data_batch_2"):
        CIFAR10(data_root=folder).load()


def test_cifar_pickle_with_code_references_is_refused(tmp_path):
    path = tmp_path / "evil"
    _dump(path, {b"data": os.getcwd, b"labels": []})  # pickled as a global reference
    with pytest.raises(DatasetFormatError, match="not allowed"):
        read_cifar_batch(str(path), "labels")


# -------------------------------------------------------------------------------------- CINIC-10


def _png(path, array, mode="RGB"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(array, mode=mode).save(path)


def make_cinic(root, per_class=None, gray=None, splits=("train", "valid", "test")):
    """Write 32x32 PNGs into split/class folders; returns {split: [(class, name, array), ...]}."""
    per_class = per_class or {"train": 2, "valid": 1, "test": 1}
    rng = np.random.default_rng(0)
    written = {}
    for split in splits:
        written[split] = []
        for label, cls in enumerate(CINIC10_CLASSES):
            for i in range(per_class[split]):
                name = f"{cls}-{split}-{i}.png"
                if gray == (split, cls, i):
                    arr = rng.integers(0, 256, size=(32, 32), dtype=np.uint8)
                    _png(os.path.join(root, split, cls, name), arr, mode="L")
                    arr = np.repeat(arr[:, :, None], 3, axis=2)
                else:
                    arr = rng.integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
                    _png(os.path.join(root, split, cls, name), arr)
                written[split].append((label, name, arr))
    return written


def test_cinic10_reads_png_folders_in_interleaved_class_order(tmp_path):
    written = make_cinic(tmp_path / "CINIC-10", gray=("train", "cat", 1))
    loader = DATASETS.create("cinic10", data_root=str(tmp_path), num_workers=2)  # parent of CINIC-10/
    ds = loader.load()
    assert ds.name == "cinic10" and ds.num_classes == 10 and ds.input_shape == (3, 32, 32)
    assert ds.train_x.shape == (20, 32, 32, 3) and ds.test_x.shape == (10, 32, 32, 3)
    assert ds.train_x.dtype == np.uint8 and ds.train_y.dtype == np.int64
    np.testing.assert_array_equal(ds.train_y, np.tile(np.arange(10), 2))  # round-robin over classes
    by_key = {(label, name): arr for label, name, arr in written["train"]}
    for n, (label, i) in enumerate([(c, k) for k in range(2) for c in range(10)]):
        expected = by_key[(label, f"{CINIC10_CLASSES[label]}-train-{i}.png")]
        np.testing.assert_array_equal(ds.train_x[n], expected)  # gray cat converted to RGB
    assert ds.mean == pytest.approx((0.47889522, 0.47227842, 0.43047404))


def test_cinic10_valid_in_train_limits_and_env_var(tmp_path, monkeypatch):
    make_cinic(tmp_path)
    monkeypatch.setenv("SFL_SIM_CINIC10_DIR", str(tmp_path))
    ds = CINIC10(include_valid_in_train=True).load()
    assert ds.num_samples("train") == 30
    np.testing.assert_array_equal(ds.train_y[20:], np.arange(10))
    small = CINIC10(max_train_samples=5, max_test_samples=3).load()
    np.testing.assert_array_equal(small.train_y, np.arange(5))  # a class-balanced prefix
    np.testing.assert_array_equal(small.train_x, ds.train_x[:5])
    assert small.num_samples("test") == 3
    with pytest.raises(ValueError, match="include_valid_in_train"):
        CINIC10(include_valid_in_train="yes")
    with pytest.raises(ValueError, match="num_workers"):
        CINIC10(num_workers=0)


def test_cinic10_missing_data_messages(tmp_path, monkeypatch):
    monkeypatch.delenv("SFL_SIM_CINIC10_DIR", raising=False)
    with pytest.raises(DatasetNotFoundError) as info:
        CINIC10().load()
    msg = str(info.value)
    assert "SFL_SIM_CINIC10_DIR" in msg and "train/<class>/*.png" in msg and "nothing is downloaded" in msg

    make_cinic(tmp_path, splits=("train",), per_class={"train": 1})
    with pytest.raises(DatasetNotFoundError, match=r"missing folder\(s\) test/"):
        CINIC10(data_root=str(tmp_path)).load()
    with pytest.raises(DatasetNotFoundError, match=r"valid/, test/"):
        CINIC10(data_root=str(tmp_path), include_valid_in_train=True).load()


def test_cinic10_bad_folders_and_files_name_them(tmp_path):
    make_cinic(tmp_path, splits=("train", "test"), per_class={"train": 1, "test": 1})
    os.rename(tmp_path / "test" / "ship", tmp_path / "test" / "boat")
    with pytest.raises(DatasetFormatError, match="unexpected class folder.*boat"):
        CINIC10(data_root=str(tmp_path)).load()
    os.rename(tmp_path / "test" / "boat", tmp_path / "elsewhere")
    with pytest.raises(DatasetFormatError, match="class folder 'ship' is missing"):
        CINIC10(data_root=str(tmp_path)).load()
    os.rename(tmp_path / "elsewhere", tmp_path / "test" / "ship")

    bad = tmp_path / "train" / "dog" / "dog-train-0.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    with pytest.raises(DatasetFormatError, match="dog-train-0.png"):
        CINIC10(data_root=str(tmp_path)).load()
    _png(str(bad), np.zeros((16, 32, 3), dtype=np.uint8))
    with pytest.raises(DatasetFormatError, match=r"dog-train-0.png.*32x32"):
        CINIC10(data_root=str(tmp_path)).load()
    os.remove(bad)
    with pytest.raises(DatasetFormatError, match="holds no .png"):
        CINIC10(data_root=str(tmp_path)).load()


def test_loaded_data_feeds_the_new_models(tmp_path):
    from sfl_sim.models import build_model

    make_cifar10(tmp_path)
    ds = CIFAR10(data_root=str(tmp_path)).load()
    x, _ = ds.tensors("test")
    for name, params in (("resnet18", {"width": 4}), ("vgg11", {"conv_channels": (4,) * 8, "fc_features": (8, 8)})):
        model = build_model(name, ds.input_shape, ds.num_classes, **params).eval()
        with torch.no_grad():
            assert model(x).shape == (len(x), 10)
