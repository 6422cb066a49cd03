"""Shared parts of the loaders of colour-image data sets kept in a local folder (CIFAR, CINIC-10).

Nothing is downloaded at run time: each loader reads a folder the user prepared, named by the
``data_root`` parameter or, when that is ``None``, by the loader's environment variable
``SFL_SIM_<NAME>_DIR``.  There is no default folder.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sfl_sim.data.datasets import ArrayDataset, DatasetNotFoundError, LoaderParams, resolve_data_root
from sfl_sim.kit.component import Component

__all__ = ["DatasetFormatError", "LocalImageDataset"]


class DatasetFormatError(ValueError):
    """A data set file exists but is corrupt, truncated or not in the expected layout.

    The message names the file.
    """


class LocalImageDataset(Component):
    """Base of the loaders that read 3×32×32 colour images from a local folder.

    Subclasses set :attr:`name`, :attr:`env_var`, :attr:`num_classes`, :attr:`mean`,
    :attr:`std`, :attr:`expected` (a description of the files for error messages) and
    :attr:`how_to_get`, and implement :meth:`_read` returning the four arrays.

    Attributes
    ----------
    data_root : str or None
        The folder the data set is read from: the parameter, else the environment variable
        :attr:`env_var`; if that is unset too, :meth:`load` raises :class:`DatasetNotFoundError`.

    Raises
    ------
    ValueError
        If ``data_root`` is not None or a path, or a ``max_*_samples`` is not None or an
        integer >= 1.
    """

    name: str = ""
    env_var: str = ""
    num_classes: int = 10
    mean: tuple[float, ...] = (0.0, 0.0, 0.0)
    std: tuple[float, ...] = (1.0, 1.0, 1.0)
    expected: str = ""
    how_to_get: str = ""

    class Params(LoaderParams):
        """The loader's parameters (:class:`~sfl_sim.data.datasets.LoaderParams`)."""

    params: Params

    def __post_init__(self) -> None:
        self.data_root, self._source = resolve_data_root(self.params.data_root, self.env_var, None)

    def _not_found(self, problem: str) -> DatasetNotFoundError:
        if self.data_root is None:
            where = (f"no directory given for dataset {self.name!r} (data_root is null and "
                     f"{self.env_var} is unset)")
        else:
            where = f"dataset {self.name!r}: {problem} (data_root {self.data_root!r} from {self._source})"
        return DatasetNotFoundError(
            f"{where}; expected {self.expected}; nothing is downloaded at run time: {self.how_to_get}, "
            f"then set data_root or {self.env_var} to that folder"
        )

    def _read(self, root: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Read ``(train_x, train_y, test_x, test_y)`` from ``root`` (subclasses)."""
        raise NotImplementedError

    def load(self) -> ArrayDataset:
        """Read the data set into an :class:`ArrayDataset`.

        Returns
        -------
        ArrayDataset
            ``train_x`` / ``test_x`` uint8 ``(N, 32, 32, 3)`` (RGB, channels last), labels int64
            ``(N,)``, ``input_shape`` ``(3, 32, 32)``, ``mean`` / ``std`` the class constants.

        Raises
        ------
        DatasetNotFoundError
            If no folder is given or expected files are missing (the message lists them).
        DatasetFormatError
            If a file is corrupt or not in the expected layout (the message names it).
        """
        if self.data_root is None:
            raise self._not_found("no directory")
        train_x, train_y, test_x, test_y = self._read(self.data_root)
        n_train, n_test = self.params.max_train_samples, self.params.max_test_samples
        if n_train is not None:
            train_x, train_y = train_x[:n_train], train_y[:n_train]
        if n_test is not None:
            test_x, test_y = test_x[:n_test], test_y[:n_test]
        return ArrayDataset(
            name=self.name,
            train_x=np.ascontiguousarray(train_x),
            train_y=np.ascontiguousarray(train_y, dtype=np.int64),
            test_x=np.ascontiguousarray(test_x),
            test_y=np.ascontiguousarray(test_y, dtype=np.int64),
            num_classes=self.num_classes,
            input_shape=(3, 32, 32),
            mean=tuple(self.mean),
            std=tuple(self.std),
        )

    def _params(self) -> list[str]:
        return [f"data_root={self.data_root!r}", f"max_train_samples={self.params.max_train_samples!r}",
                f"max_test_samples={self.params.max_test_samples!r}"]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self._params())})"


def check_labels(path: str, labels: Any, count: int, num_classes: int) -> np.ndarray:
    """Labels of a file as int64 ``(count,)`` in ``[0, num_classes)``, else DatasetFormatError."""
    try:
        y = np.asarray(labels)
    except Exception as exc:  # pragma: no cover - numpy accepts nearly anything
        raise DatasetFormatError(f"{path!r}: labels are not an array ({exc})") from exc
    if y.ndim != 1 or len(y) != count or (y.size and not np.issubdtype(y.dtype, np.integer)):
        raise DatasetFormatError(f"{path!r}: expected {count} integer labels, got dtype {y.dtype} shape {y.shape}")
    y = y.astype(np.int64)
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise DatasetFormatError(f"{path!r}: labels must lie in [0, {num_classes}), got [{y.min()}, {y.max()}]")
    return y

