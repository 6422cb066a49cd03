"""IDX reader and Fashion-MNIST / MNIST loaders on tiny IDX files written in tmp_path."""
from __future__ import annotations

import gzip
import os
import struct

import numpy as np
import pytest

from sfl_sim.data import (
    DATASETS,
    MNIST,
    ArrayDataset,
    DatasetNotFoundError,
    FashionMNIST,
    IdxFormatError,
    read_idx,
    write_idx,
)

N_TRAIN, N_TEST = 50, 20


def _idx_bytes(arr: np.ndarray, code: int = 0x08, dtype: str = ">u1") -> bytes:
    header = struct.pack(">BBBB", 0, 0, code, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(dtype).tobytes()


def _write(path, payload: bytes) -> None:
    if str(path).endswith(".gz"):
        with gzip.open(path, "wb") as fh:
            fh.write(payload)
    else:
        with open(path, "wb") as fh:
            fh.write(payload)


def _make_dir(root, *, gz: bool, seed: int = 0, skip: str | None = None, test_labels: int = N_TEST):
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, size=(N_TRAIN, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": (np.arange(N_TRAIN) % 10).astype(np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, size=(N_TEST, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": (np.arange(test_labels) % 10).astype(np.uint8),
    }
    os.makedirs(root, exist_ok=True)
    for name, arr in arrays.items():
        if name == skip:
            continue
        _write(os.path.join(root, name + (".gz" if gz else "")), _idx_bytes(arr))
    return arrays


@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_raw_and_gzip(tmp_path, gz):
    arr = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    path = tmp_path / ("a.idx" + (".gz" if gz else ""))
    _write(path, _idx_bytes(arr))
    out = read_idx(path)
    assert out.dtype == np.uint8 and out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out, arr)
    out[0, 0, 0] = 7  # writable copy


@pytest.mark.parametrize("code,dtype", [(0x09, ">i1"), (0x0B, ">i2"), (0x0C, ">i4"), (0x0D, ">f4"), (0x0E, ">f8")])
def test_read_idx_other_type_codes(tmp_path, code, dtype):
    arr = np.array([[-3, 0, 5], [1, 2, -1]])
    path = tmp_path / "x.idx"
    _write(path, _idx_bytes(arr, code, dtype))
    out = read_idx(path)
    assert out.dtype == np.dtype(dtype).newbyteorder("=")
    np.testing.assert_array_equal(out, arr)


def test_write_idx_roundtrip(tmp_path):
    arr = np.random.default_rng(1).normal(size=(3, 5)).astype(np.float32)
    for name in ("r.idx", "r.idx.gz"):
        write_idx(tmp_path / name, arr)
        np.testing.assert_array_equal(read_idx(tmp_path / name), arr)


def test_read_idx_bad_magic(tmp_path):
    path = tmp_path / "bad-magic"
    path.write_bytes(b"\x12\x34\x08\x01" + struct.pack(">I", 3) + b"abc")
    with pytest.raises(IdxFormatError, match="bad magic.*") as exc:
        read_idx(path)
    assert str(path) in str(exc.value)


def test_read_idx_unknown_type_code(tmp_path):
    path = tmp_path / "bad-type"
    path.write_bytes(b"\x00\x00\x07\x01" + struct.pack(">I", 3) + b"abc")
    with pytest.raises(ValueError, match="type code 0x07"):
        read_idx(path)


def test_read_idx_truncated_and_trailing(tmp_path):
    good = _idx_bytes(np.zeros((4, 28, 28), dtype=np.uint8))
    short = tmp_path / "short"
    short.write_bytes(good[:-10])
    with pytest.raises(IdxFormatError, match="truncated") as exc:
        read_idx(short)
    assert "short" in str(exc.value)
    header_only = tmp_path / "hdr"
    header_only.write_bytes(good[:6])
    with pytest.raises(IdxFormatError, match="truncated header"):
        read_idx(header_only)
    long = tmp_path / "long"
    long.write_bytes(good + b"xx")
    with pytest.raises(IdxFormatError, match="trailing"):
        read_idx(long)


def test_read_idx_corrupt_gzip(tmp_path):
    path = tmp_path / "c.gz"
    full = gzip.compress(_idx_bytes(np.zeros((10, 28, 28), dtype=np.uint8)))
    path.write_bytes(full[: len(full) // 2])
    with pytest.raises(IdxFormatError, match="c.gz"):
        read_idx(path)


@pytest.mark.parametrize("gz", [False, True])
def test_fashion_mnist_loads_tiny_files(tmp_path, gz):
    arrays = _make_dir(tmp_path, gz=gz)
    ds = FashionMNIST(data_root=str(tmp_path)).load()
    assert isinstance(ds, ArrayDataset) and ds.name == "fashion_mnist"
    assert ds.train_x.shape == (N_TRAIN, 28, 28) and ds.train_x.dtype == np.uint8
    assert ds.test_x.shape == (N_TEST, 28, 28)
    assert ds.train_y.dtype == np.int64 and ds.train_y.shape == (N_TRAIN,)
    np.testing.assert_array_equal(ds.train_x, arrays["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(ds.test_y, arrays["t10k-labels-idx1-ubyte"])
    assert ds.num_classes == 10 and ds.input_shape == (1, 28, 28)
    assert ds.mean == (0.2860,) and ds.std == (0.3530,)


def test_mixed_raw_and_gz_files(tmp_path):
    _make_dir(tmp_path, gz=True, skip="train-labels-idx1-ubyte")
    _write(tmp_path / "train-labels-idx1-ubyte", _idx_bytes((np.arange(N_TRAIN) % 10).astype(np.uint8)))
    assert FashionMNIST(data_root=str(tmp_path)).load().train_y.shape == (N_TRAIN,)


def test_mnist_and_env_var(tmp_path, monkeypatch):
    _make_dir(tmp_path, gz=True)
    monkeypatch.setenv("SFL_SIM_MNIST_DIR", str(tmp_path))
    ds = MNIST().load()
    assert ds.name == "mnist" and ds.mean == (0.1307,) and ds.std == (0.3081,)
    assert ds.train_x.shape == (N_TRAIN, 28, 28)
    monkeypatch.setenv("SFL_SIM_FASHION_MNIST_DIR", str(tmp_path))
    assert FashionMNIST().load().test_x.shape == (N_TEST, 28, 28)


def test_max_samples_takes_prefix(tmp_path):
    arrays = _make_dir(tmp_path, gz=False)
    ds = FashionMNIST(data_root=str(tmp_path), max_train_samples=7, max_test_samples=1000).load()
    assert ds.train_x.shape == (7, 28, 28) and ds.test_x.shape == (N_TEST, 28, 28)
    np.testing.assert_array_equal(ds.train_x, arrays["train-images-idx3-ubyte"][:7])
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_train_samples"):
            FashionMNIST(data_root=str(tmp_path), max_train_samples=bad)


def test_tensors_shape_dtype_normalisation(tmp_path):
    arrays = _make_dir(tmp_path, gz=True)
    ds = FashionMNIST(data_root=str(tmp_path)).load()
    x, y = ds.tensors("train")
    import torch

    assert x.shape == (N_TRAIN, 1, 28, 28) and x.dtype == torch.float32
    assert y.shape == (N_TRAIN,) and y.dtype == torch.int64
    expected = (arrays["train-images-idx3-ubyte"].astype(np.float32) / 255.0 - 0.2860) / 0.3530
    np.testing.assert_allclose(x[:, 0].numpy(), expected, rtol=1e-5, atol=1e-5)
    xt, yt = ds.tensors("test", device="cpu")
    assert xt.shape == (N_TEST, 1, 28, 28) and yt.shape == (N_TEST,)
    with pytest.raises(ValueError, match="split"):
        ds.tensors("valid")


def test_tensors_colour_channels_last():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(4, 5, 6, 3), dtype=np.uint8)
    y = np.array([0, 1, 2, 1], dtype=np.int64)
    ds = ArrayDataset("c", x, y, x[:2], y[:2], 3, (3, 5, 6), (0.5, 0.4, 0.3), (0.2, 0.25, 0.5))
    xt, _ = ds.tensors("train")
    assert tuple(xt.shape) == (4, 3, 5, 6)
    np.testing.assert_allclose(xt[:, 2].numpy(), (x[..., 2] / 255.0 - 0.3) / 0.5, rtol=1e-5, atol=1e-5)


def test_array_dataset_validation():
    x = np.zeros((3, 4, 4), dtype=np.uint8)
    y = np.zeros(3, dtype=np.int64)
    with pytest.raises(ValueError, match="train_y"):
        ArrayDataset("d", x, y[:2], x, y, 10, (1, 4, 4), (0.5,), (0.5,))
    with pytest.raises(ValueError, match="mean"):
        ArrayDataset("d", x, y, x, y, 10, (1, 4, 4), (0.5, 0.5), (0.5,))
    with pytest.raises(ValueError, match="train_x"):
        ArrayDataset("d", x.astype(np.float32), y, x, y, 10, (1, 4, 4), (0.5,), (0.5,))


def test_missing_directory_error(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(DatasetNotFoundError) as exc:
        FashionMNIST(data_root=str(missing)).load()
    msg = str(exc.value)
    assert isinstance(exc.value, FileNotFoundError)
    assert str(missing) in msg
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        assert name in msg
    assert "apt-get install dataset-fashion-mnist" in msg
    assert "SFL_SIM_FASHION_MNIST_DIR" in msg


def test_one_missing_file_is_named(tmp_path):
    _make_dir(tmp_path, gz=True, skip="t10k-labels-idx1-ubyte")
    with pytest.raises(DatasetNotFoundError, match="missing t10k-labels-idx1-ubyte"):
        FashionMNIST(data_root=str(tmp_path)).load()


def test_mnist_without_directory(monkeypatch):
    monkeypatch.delenv("SFL_SIM_MNIST_DIR", raising=False)
    with pytest.raises(DatasetNotFoundError, match="data_root") as exc:
        MNIST().load()
    assert "SFL_SIM_MNIST_DIR" in str(exc.value) and "train-images-idx3-ubyte" in str(exc.value)


def test_corrupt_magic_through_loader(tmp_path):
    _make_dir(tmp_path, gz=False)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\xff\xff\x08\x03" + b"\x00" * 20)
    with pytest.raises(IdxFormatError, match="train-images-idx3-ubyte.*bad magic"):
        FashionMNIST(data_root=str(tmp_path)).load()


def test_count_mismatch(tmp_path):
    _make_dir(tmp_path, gz=False, test_labels=N_TEST - 1)
    with pytest.raises(ValueError, match="20 images.*19 labels"):
        FashionMNIST(data_root=str(tmp_path)).load()


def test_dataset_registry(tmp_path):
    assert {"fashion_mnist", "mnist"} <= set(DATASETS.names())
    assert DATASETS.get("fashion_mnist") is FashionMNIST
    assert DATASETS.get("sfl_sim.data.datasets:MNIST") is MNIST
    _make_dir(tmp_path, gz=True)
    loader = DATASETS.create("mnist", data_root=str(tmp_path), max_train_samples=5)
    assert loader.load().train_x.shape[0] == 5


REAL_DIR = "/usr/share/datasets/fashion-mnist"


@pytest.mark.skipif(not os.path.isdir(REAL_DIR), reason="Debian's dataset-fashion-mnist is not installed")
def test_real_fashion_mnist(monkeypatch):
    monkeypatch.delenv("SFL_SIM_FASHION_MNIST_DIR", raising=False)
    ds = FashionMNIST().load()
    assert ds.train_x.shape == (60000, 28, 28) and ds.test_x.shape == (10000, 28, 28)
    assert ds.num_classes == 10
    assert set(np.unique(ds.train_y)) == set(range(10))
