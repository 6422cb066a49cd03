"""CIFAR-10 and CIFAR-100 (Krizhevsky, 2009) from their "python version" pickle files.

Layout, as unpacked from ``cifar-10-python.tar.gz`` / ``cifar-100-python.tar.gz`` of
https://www.cs.toronto.edu/~kriz/cifar.html (nothing is downloaded at run time)::

    cifar-10-batches-py/data_batch_1 .. data_batch_5, test_batch
    cifar-100-python/train, test

Each file is a pickled dict (written by Python 2; keys are bytes such as ``b"data"`` when read
with ``encoding="bytes"``, str with ``"latin1"`` -- both are accepted) holding ``data``, a uint8
array ``(N, 3072)`` whose rows are three 32×32 planes R, G, B in row-major order, and the labels
(``labels`` for CIFAR-10; ``fine_labels`` and ``coarse_labels`` for CIFAR-100) as lists of ints.

Files are read with a restricted unpickler that only rebuilds dicts, lists, numbers, strings and
numpy arrays, so a tampered file cannot run code.  Samples keep the files' order (batches 1..5,
then the rows of each), so ``max_train_samples`` keeps a prefix of ``data_batch_1``, whose labels
are already shuffled.
"""
from __future__ import annotations

import os
import pickle
from typing import Annotated, Any, Literal

import numpy as np

from sfl_sim.data.datasets import DATASETS
from sfl_sim.data.images import DatasetFormatError, LocalImageDataset, check_labels
from sfl_sim.kit.params import Doc

__all__ = ["CIFAR10", "CIFAR100", "CIFAR10_FILES", "CIFAR100_FILES", "read_cifar_batch"]

#: CIFAR-10 folder name and its train / test batch files.
CIFAR10_DIR = "cifar-10-batches-py"
CIFAR10_FILES: tuple[tuple[str, ...], tuple[str, ...]] = (
    tuple(f"data_batch_{k}" for k in range(1, 6)),
    ("test_batch",),
)
#: CIFAR-100 folder name and its train / test files.
CIFAR100_DIR = "cifar-100-python"
CIFAR100_FILES: tuple[tuple[str, ...], tuple[str, ...]] = (("train",), ("test",))

_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("_codecs", "encode"),
}


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"global {module}.{name} is not allowed in a CIFAR batch file")


def read_cifar_batch(path: str, label_key: str) -> tuple[np.ndarray, np.ndarray]:
    """Read one CIFAR python batch file.

    Parameters
    ----------
    path : str
        The pickle file (e.g. ``.../cifar-10-batches-py/data_batch_1``).
    label_key : str
        ``"labels"`` (CIFAR-10), ``"fine_labels"`` or ``"coarse_labels"`` (CIFAR-100).

    Returns
    -------
    images : numpy.ndarray
        uint8 ``(N, 32, 32, 3)``, RGB, channels last.
    labels : numpy.ndarray
        int64 ``(N,)`` (range not checked here).

    Raises
    ------
    DatasetFormatError
        If the file is not such a pickle, lacks a key, or ``data`` is not uint8 ``(N, 3072)``
        with one label per row; the message names the file.
    """
    try:
        with open(path, "rb") as fh:
            entry = _RestrictedUnpickler(fh, encoding="latin1").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError,
            KeyError, ImportError, MemoryError, UnicodeDecodeError, OverflowError) as exc:
        raise DatasetFormatError(f"CIFAR batch file {path!r} is corrupt, truncated or not a CIFAR "
                                 f"python pickle ({type(exc).__name__}: {exc})") from exc
    if not isinstance(entry, dict):
        raise DatasetFormatError(f"CIFAR batch file {path!r}: expected a pickled dict, got {type(entry).__name__}")
    entry = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in entry.items()}
    for key in ("data", label_key):
        if key not in entry:
            raise DatasetFormatError(f"CIFAR batch file {path!r}: no key {key!r}; keys present: "
                                     f"{', '.join(sorted(map(str, entry)))}")
    data = entry["data"]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise DatasetFormatError(f"CIFAR batch file {path!r}: 'data' must be a uint8 array of shape (N, 3072), "
                                 f"got {type(data).__name__} {getattr(data, 'dtype', '')} {getattr(data, 'shape', '')}")
    labels = np.asarray(entry[label_key])
    if labels.ndim != 1 or len(labels) != len(data) or (labels.size and not np.issubdtype(labels.dtype, np.integer)):
        raise DatasetFormatError(f"CIFAR batch file {path!r}: {label_key!r} must hold {len(data)} integer labels, "
                                 f"got dtype {labels.dtype} shape {labels.shape}")
    images = data.reshape(len(data), 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels.astype(np.int64)


class _CifarPickles(LocalImageDataset):
    folder: str = ""
    files: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    @property
    def label_key(self) -> str:
        return "labels"

    def _resolve(self, root: str) -> tuple[str, list[str]]:
        """The folder holding the files (``root`` or ``root/folder``) and the files missing there."""
        names = self.files[0] + self.files[1]
        best: tuple[str, list[str]] | None = None
        for candidate in (root, os.path.join(root, self.folder)):
            missing = [n for n in names if not os.path.isfile(os.path.join(candidate, n))]
            if not missing:
                return candidate, []
            if best is None or len(missing) < len(best[1]):
                best = (candidate, missing)
        assert best is not None
        return best

    def _read(self, root: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        folder, missing = self._resolve(root)
        if missing:
            raise self._not_found(f"missing {', '.join(missing)} in {folder!r}")
        out: list[np.ndarray] = []
        for names in self.files:
            xs, ys = [], []
            for name in names:
                path = os.path.join(folder, name)
                x, y = read_cifar_batch(path, self.label_key)
                xs.append(x)
                ys.append(check_labels(path, y, len(x), self.num_classes))
            out += [np.concatenate(xs), np.concatenate(ys)]
        return out[0], out[1], out[2], out[3]


@DATASETS.register("cifar10")
class CIFAR10(_CifarPickles):
    """CIFAR-10: 50 000 train / 10 000 test 32×32 RGB images, 10 classes.

    Folder: ``data_root``, else ``$SFL_SIM_CIFAR10_DIR``; it may be ``cifar-10-batches-py``
    itself or its parent.  Normalisation constants are the per-channel mean and standard
    deviation of the training pixels scaled to [0, 1]: mean (0.4914, 0.4822, 0.4465), std
    (0.2470, 0.2435, 0.2616) (not the per-image (0.2023, 0.1994, 0.2010) often quoted).  They are
    fixed, so ``max_train_samples`` runs use the same normalisation.  Class order: airplane,
    automobile, bird, cat, deer, dog, frog, horse, ship, truck.

    Parameters
    ----------
    data_root, max_train_samples, max_test_samples
        See :class:`~sfl_sim.data.images.LocalImageDataset`.  The train order is
        ``data_batch_1`` .. ``data_batch_5``.
    """

    name = "cifar10"
    env_var = "SFL_SIM_CIFAR10_DIR"
    num_classes = 10
    mean = (0.4914, 0.4822, 0.4465)
    std = (0.2470, 0.2435, 0.2616)
    folder = CIFAR10_DIR
    files = CIFAR10_FILES
    expected = (f"the CIFAR-10 python pickles {', '.join(CIFAR10_FILES[0] + CIFAR10_FILES[1])} in "
                f"data_root or in data_root/{CIFAR10_DIR}")
    how_to_get = ("download cifar-10-python.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html "
                  f"and unpack it (it creates {CIFAR10_DIR}/)")


@DATASETS.register("cifar100")
class CIFAR100(_CifarPickles):
    """CIFAR-100: 50 000 train / 10 000 test 32×32 RGB images, 100 fine or 20 coarse classes.

    Folder: ``data_root``, else ``$SFL_SIM_CIFAR100_DIR``; it may be ``cifar-100-python`` itself
    or its parent.  Normalisation constants (training pixels scaled to [0, 1]): mean (0.5071,
    0.4865, 0.4409), std (0.2673, 0.2564, 0.2762).

    Parameters
    ----------
    data_root, max_train_samples, max_test_samples
        See :class:`~sfl_sim.data.images.LocalImageDataset`.

    Raises
    ------
    ValueError
        If ``label_type`` is not ``"fine"`` or ``"coarse"``, or as the base class.
    """

    name = "cifar100"
    env_var = "SFL_SIM_CIFAR100_DIR"
    num_classes = 100
    mean = (0.5071, 0.4865, 0.4409)
    std = (0.2673, 0.2564, 0.2762)
    folder = CIFAR100_DIR
    files = CIFAR100_FILES
    expected = f"the CIFAR-100 python pickles train, test in data_root or in data_root/{CIFAR100_DIR}"
    how_to_get = ("download cifar-100-python.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html "
                  f"and unpack it (it creates {CIFAR100_DIR}/)")

    class Params(LocalImageDataset.Params):
        """CIFAR-100's parameters: the loaders' (:class:`~sfl_sim.data.datasets.LoaderParams`) and its own."""

        label_type: Annotated[Literal["fine", "coarse"], Doc(
            "``fine``: the 100 classes (``fine_labels``; the SCALA papers' setting); ``coarse``: the 20 "
            "superclasses (``coarse_labels``).")] = "fine"

    params: Params

    def __post_init__(self) -> None:
        super().__post_init__()
        self.num_classes = 100 if self.params.label_type == "fine" else 20

    @property
    def label_key(self) -> str:
        return f"{self.params.label_type}_labels"

    def _params(self) -> list[str]:
        return super()._params() + [f"label_type={self.params.label_type!r}"]
