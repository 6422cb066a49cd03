"""In-memory image datasets and the loaders that read them from local IDX files.

Nothing is downloaded at run time.  Fashion-MNIST is read from Debian's
``dataset-fashion-mnist`` package (``/usr/share/datasets/fashion-mnist``) unless another folder
is given; MNIST has no default folder.
"""
from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np

from sfl_sim.data.idx import read_idx
from sfl_sim.data.protocols import DatasetLoader
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel, PositiveInt
from sfl_sim.kit.registry import Registry

if TYPE_CHECKING:  # annotations only: the data layer needs torch only in tensors()
    import torch

__all__ = [
    "ArrayDataset",
    "DatasetNotFoundError",
    "DATASETS",
    "IdxImageDataset",
    "FashionMNIST",
    "MNIST",
    "IDX_FILES",
]

DATASETS = Registry("dataset", protocol=DatasetLoader)

#: The four IDX file names (without ``.gz``) of the MNIST / Fashion-MNIST layout, in the order
#: train images, train labels, test images, test labels.
IDX_FILES: tuple[str, str, str, str] = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)

_SPLITS = ("train", "test")


class DatasetNotFoundError(FileNotFoundError):
    """Raised when a dataset's files are not where the loader looks.

    The message says which files are expected in which directory and how to obtain them.
    """


@dataclass(frozen=True, eq=False)
class ArrayDataset:
    """A labelled image dataset held in memory as numpy arrays.

    Parameters
    ----------
    name : str
        Dataset name, e.g. ``"fashion_mnist"``.
    train_x, test_x : numpy.ndarray
        ``uint8`` pixel values in [0, 255], shape ``(N, H, W)`` for gray images or
        ``(N, H, W, C)`` for C-channel images.
    train_y, test_y : numpy.ndarray
        ``int64`` class labels in ``[0, num_classes)``, shape ``(N,)``.
    num_classes : int
        Number of classes.
    input_shape : tuple of int
        ``(C, H, W)`` of one sample as fed to a model (channels first).
    mean, std : tuple of float
        Per-channel mean and standard deviation (length C) of the pixel values scaled to [0, 1],
        used by :meth:`tensors` for normalisation.

    Raises
    ------
    ValueError
        If the arrays' dtypes, shapes or lengths are inconsistent with each other or with
        ``input_shape`` / ``mean`` / ``std``, or a label is outside ``[0, num_classes)``.
    """

    name: str
    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    num_classes: int
    input_shape: tuple[int, int, int]
    mean: tuple[float, ...]
    std: tuple[float, ...]

    def __post_init__(self) -> None:
        if isinstance(self.num_classes, bool) or not isinstance(self.num_classes, numbers.Integral) \
                or self.num_classes < 1:
            raise ValueError(f"num_classes must be an integer >= 1, got {self.num_classes!r}")
        if len(self.input_shape) != 3:
            raise ValueError(f"input_shape must be (C, H, W), got {self.input_shape!r}")
        c, h, w = self.input_shape
        for attr in ("mean", "std"):
            val = getattr(self, attr)
            if len(val) != c:
                raise ValueError(f"{attr} must have one entry per channel ({c}), got {val!r}")
        if any(not (s > 0) for s in self.std):
            raise ValueError(f"std must be > 0 in every channel, got {self.std!r}")
        expected = (h, w) if c == 1 else (h, w, c)
        for split in _SPLITS:
            x = getattr(self, f"{split}_x")
            y = getattr(self, f"{split}_y")
            if not isinstance(x, np.ndarray) or x.dtype != np.uint8:
                raise ValueError(f"{split}_x must be a uint8 numpy array, got {type(x).__name__} "
                                 f"of dtype {getattr(x, 'dtype', None)}")
            if not (x.shape[1:] == expected or (c == 1 and x.shape[1:] == (h, w, 1))):
                raise ValueError(f"{split}_x must have shape (N, {', '.join(map(str, expected))}) "
                                 f"for input_shape {self.input_shape}, got {x.shape}")
            if not isinstance(y, np.ndarray) or y.dtype != np.int64 or y.ndim != 1:
                raise ValueError(f"{split}_y must be a 1-D int64 numpy array, got {type(y).__name__} "
                                 f"of dtype {getattr(y, 'dtype', None)} and shape {getattr(y, 'shape', None)}")
            if len(y) != len(x):
                raise ValueError(f"{split}_y has {len(y)} labels but {split}_x has {len(x)} images")
            if len(y) and (y.min() < 0 or y.max() >= self.num_classes):
                raise ValueError(f"{split}_y must lie in [0, {self.num_classes}), got labels in "
                                 f"[{y.min()}, {y.max()}]")

    def num_samples(self, split: str) -> int:
        """Number of samples in ``split`` (``"train"`` or ``"test"``)."""
        return len(self._arrays(split)[1])

    def _arrays(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        if split not in _SPLITS:
            raise ValueError(f"split must be one of {_SPLITS}, got {split!r}")
        return getattr(self, f"{split}_x"), getattr(self, f"{split}_y")

    def tensors(self, split: str, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """The normalised torch tensors of one split.

        Parameters
        ----------
        split : {"train", "test"}
            Which split.
        device : str or torch.device, default "cpu"
            Where to put the tensors.

        Returns
        -------
        x : torch.Tensor
            ``float32``, shape ``(N, C, H, W)``, value ``(pixel / 255 - mean[c]) / std[c]``.
        y : torch.Tensor
            ``int64``, shape ``(N,)``.

        Raises
        ------
        ValueError
            If ``split`` is not ``"train"`` or ``"test"``.
        """
        import torch  # lazy: the data layer itself needs only numpy

        x_np, y_np = self._arrays(split)
        c, h, w = self.input_shape
        x = torch.from_numpy(np.ascontiguousarray(x_np)).to(device=device)
        x = x.reshape(len(x_np), h, w, c).permute(0, 3, 1, 2).to(torch.float32).div_(255.0)
        mean = torch.tensor(self.mean, dtype=torch.float32, device=x.device).view(1, c, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float32, device=x.device).view(1, c, 1, 1)
        x = ((x - mean) / std).contiguous()
        y = torch.from_numpy(np.ascontiguousarray(y_np, dtype=np.int64)).to(device=device)
        return x, y


class LoaderParams(ParamsModel):
    """The parameters every image data set loader takes (the ``Params`` of
    :class:`IdxImageDataset` and :class:`~sfl_sim.data.images.LocalImageDataset`)."""

    data_root: Annotated[str | Path | None, Doc(
        "Folder holding the files.  ``None``: the loader's environment variable, else its default directory "
        "(if it has one).  Resolved when the loader is built.")] = None
    max_train_samples: Annotated[PositiveInt | None, Doc(
        "Keep only the *first* n samples of the training split (deterministic prefix, no shuffling; for tests "
        "and quick runs).  ``None`` keeps all; a value above the split's size keeps all.")] = None
    max_test_samples: Annotated[PositiveInt | None, Doc(
        "Keep only the *first* n samples of the test split, as ``max_train_samples``.")] = None


def resolve_data_root(data_root: Any, env_var: str, default_dir: str | None) -> tuple[str | None, str]:
    """Where a loader looks for its files, and why: ``data_root`` if given, else the environment
    variable ``env_var``, else ``default_dir`` (may be None).

    Returns
    -------
    (str or None, str)
        The directory and a phrase naming its source, for error messages.
    """
    if data_root is not None:
        if not isinstance(data_root, (str, os.PathLike)):
            raise ValueError(f"data_root must be None or a path string, got {data_root!r}")
        return os.fspath(data_root), "data_root"
    if env_var and os.environ.get(env_var):
        return os.environ[env_var], f"environment variable {env_var}"
    if default_dir is not None:
        return default_dir, "default directory"
    return None, ""


class IdxImageDataset(Component):
    """Base loader for a 28x28 gray-scale dataset stored as the four MNIST-layout IDX files.

    Subclasses set :attr:`name`, :attr:`env_var`, :attr:`default_dir`, :attr:`mean`,
    :attr:`std`, :attr:`num_classes` and :attr:`how_to_get`.

    Attributes
    ----------
    data_root : str or None
        The folder the files are read from: the parameter, else the environment variable
        :attr:`env_var`, else :attr:`default_dir`.

    Raises
    ------
    ValueError
        If a ``max_*_samples`` is not None or an integer >= 1.
    """

    name: str = ""
    env_var: str = ""
    default_dir: str | None = None
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    num_classes: int = 10
    how_to_get: str = ""

    class Params(LoaderParams):
        """The loader's parameters (:class:`LoaderParams`)."""

    params: Params

    def __post_init__(self) -> None:
        self.data_root, self._source = resolve_data_root(self.params.data_root, self.env_var, self.default_dir)

    def _not_found(self, missing: list[str]) -> DatasetNotFoundError:
        files = ", ".join(f"{f}[.gz]" for f in IDX_FILES)
        if self.data_root is None:
            where = (f"no directory given for dataset {self.name!r} (data_root is None and "
                     f"{self.env_var} is unset)")
        else:
            miss = ", ".join(missing)
            where = (f"dataset {self.name!r}: missing {miss} in directory {self.data_root!r} "
                     f"(from {self._source})")
        return DatasetNotFoundError(
            f"{where}; expected the four IDX files {files} (raw or gzip) in one directory; "
            f"{self.how_to_get}"
        )

    def _find(self, base: str) -> str | None:
        assert self.data_root is not None
        for candidate in (base, base + ".gz"):
            path = os.path.join(self.data_root, candidate)
            if os.path.isfile(path):
                return path
        return None

    def load(self) -> ArrayDataset:
        """Read the four IDX files into an :class:`ArrayDataset`.

        Returns
        -------
        ArrayDataset
            ``train_x`` / ``test_x`` uint8 ``(N, 28, 28)``, labels int64 ``(N,)``,
            ``input_shape`` ``(1, 28, 28)``, ``mean`` / ``std`` the class constants.

        Raises
        ------
        DatasetNotFoundError
            If the directory or any of the four files (raw or ``.gz``) is missing.
        IdxFormatError
            If a file is corrupt or truncated (the message names the file).
        ValueError
            If image and label counts differ, images are not 3-D, or labels are out of range.
        """
        if self.data_root is None:
            raise self._not_found(list(IDX_FILES))
        paths = {base: self._find(base) for base in IDX_FILES}
        missing = [base for base, p in paths.items() if p is None]
        if missing:
            raise self._not_found(missing)
        arrays = [read_idx(paths[base]) for base in IDX_FILES]  # type: ignore[arg-type]
        out = {}
        for split, (xi, yi), limit in (
            ("train", (0, 1), self.params.max_train_samples),
            ("test", (2, 3), self.params.max_test_samples),
        ):
            x, y = arrays[xi], arrays[yi]
            xp, yp = paths[IDX_FILES[xi]], paths[IDX_FILES[yi]]
            if x.ndim != 3 or x.dtype != np.uint8:
                raise ValueError(f"{xp!r}: expected uint8 images of shape (N, H, W), got {x.dtype} {x.shape}")
            if y.ndim != 1:
                raise ValueError(f"{yp!r}: expected labels of shape (N,), got {y.shape}")
            if len(x) != len(y):
                raise ValueError(f"{split} split of {self.name!r}: {xp!r} has {len(x)} images but "
                                 f"{yp!r} has {len(y)} labels")
            if len(y) and (int(y.min()) < 0 or int(y.max()) >= self.num_classes):
                raise ValueError(f"{yp!r}: labels must lie in [0, {self.num_classes}), got "
                                 f"[{int(y.min())}, {int(y.max())}]")
            if limit is not None:
                x, y = x[:limit], y[:limit]
            out[split] = (np.ascontiguousarray(x), y.astype(np.int64))
        if out["train"][0].shape[1:] != out["test"][0].shape[1:]:
            raise ValueError(f"{self.name!r}: train images {out['train'][0].shape[1:]} and test images "
                             f"{out['test'][0].shape[1:]} differ in size")
        h, w = out["train"][0].shape[1:]
        return ArrayDataset(
            name=self.name,
            train_x=out["train"][0],
            train_y=out["train"][1],
            test_x=out["test"][0],
            test_y=out["test"][1],
            num_classes=self.num_classes,
            input_shape=(1, int(h), int(w)),
            mean=tuple(self.mean),
            std=tuple(self.std),
        )

    def __repr__(self) -> str:
        p = self.params
        return (f"{type(self).__name__}(data_root={self.data_root!r}, "
                f"max_train_samples={p.max_train_samples!r}, max_test_samples={p.max_test_samples!r})")


@DATASETS.register("fashion_mnist")
class FashionMNIST(IdxImageDataset):
    """Fashion-MNIST (Xiao et al., 2017): 60 000 train / 10 000 test 28x28 gray images, 10 classes.

    Directory: ``data_root``, else ``$SFL_SIM_FASHION_MNIST_DIR``, else
    ``/usr/share/datasets/fashion-mnist`` (installed by Debian's ``dataset-fashion-mnist``).
    Normalisation constants are the customary fixed train-set statistics
    mean 0.2860, std 0.3530 (pixels scaled to [0, 1]); they are not recomputed, so subsets
    and ``max_train_samples`` runs use the same normalisation.
    See :class:`IdxImageDataset` for the parameters.
    """

    name = "fashion_mnist"
    env_var = "SFL_SIM_FASHION_MNIST_DIR"
    default_dir = "/usr/share/datasets/fashion-mnist"
    mean = (0.2860,)
    std = (0.3530,)
    num_classes = 10
    how_to_get = ("install Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist), "
                  "or set data_root / SFL_SIM_FASHION_MNIST_DIR to a folder holding the files "
                  "(https://github.com/zalandoresearch/fashion-mnist)")


@DATASETS.register("mnist")
class MNIST(IdxImageDataset):
    """MNIST (LeCun et al., 1998): 60 000 train / 10 000 test 28x28 gray digits, 10 classes.

    Directory: ``data_root``, else ``$SFL_SIM_MNIST_DIR``; there is no default directory.
    Normalisation constants are the customary fixed train-set statistics mean 0.1307,
    std 0.3081 (pixels scaled to [0, 1]).  See :class:`IdxImageDataset` for the parameters.
    """

    name = "mnist"
    env_var = "SFL_SIM_MNIST_DIR"
    default_dir = None
    mean = (0.1307,)
    std = (0.3081,)
    num_classes = 10
    how_to_get = ("download the four MNIST IDX files (e.g. from a mirror of "
                  "http://yann.lecun.com/exdb/mnist/) into a folder and pass it as data_root "
                  "or set SFL_SIM_MNIST_DIR")
