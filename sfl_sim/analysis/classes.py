"""Loading ``classes.csv``: per-class test accuracy and local models' vacant-class accuracy.

``classes.csv`` has one row per evaluated round (the rows of ``metrics.csv``) with the columns
:data:`~sfl_sim.runs.rundir.schema.CLASSES_LEADING_COLUMNS` — ``round`` and
``local_vacant_class_accuracy`` — then ``class_<n>_accuracy`` for every class n.  Empty cells
(no measurement: ``metrics.local_vacant_class_accuracy`` off, an algorithm without local models,
a class without test samples) load as NaN.

This module imports neither torch nor ``sfl_sim``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from sfl_sim.analysis.runs import RunFormatError
from sfl_sim.runs.rundir.reader import RunFiles
from sfl_sim.runs.rundir.schema import CLASS_ACCURACY_COLUMN, CLASSES_FILE, CLASSES_LEADING_COLUMNS, classes_columns

__all__ = ["class_columns", "load_classes", "classes_long"]

_CLASS_COLUMN = re.compile("^" + re.escape(CLASS_ACCURACY_COLUMN).replace(r"\{\}", r"(\d+)") + "$")


def _class_of(column: str) -> int:
    """The class index in a per-class accuracy column's name (a name :func:`class_columns` kept)."""
    match = _CLASS_COLUMN.match(column)
    if match is None:
        raise ValueError(f"{column!r} is not a per-class accuracy column")
    return int(match.group(1))


def class_columns(frame: pd.DataFrame) -> list[str]:
    """The per-class accuracy columns of a loaded ``classes.csv``, in class order."""
    found = [(int(m.group(1)), c) for c in frame.columns if (m := _CLASS_COLUMN.match(str(c)))]
    return [c for _, c in sorted(found)]


def load_classes(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a run directory's ``classes.csv`` (or the file itself).

    Parameters
    ----------
    path : str or os.PathLike
        A run directory, or the path of its ``classes.csv``.

    Returns
    -------
    pandas.DataFrame
        ``round`` (int), ``local_vacant_class_accuracy`` and ``class_0_accuracy`` ...
        ``class_<N-1>_accuracy`` (floats, NaN where empty), sorted by round.

    Raises
    ------
    FileNotFoundError
        If there is no ``classes.csv`` (:meth:`sfl_sim.runs.rundir.reader.RunFiles.why_missing` says why).
    RunFormatError
        If the header is not ``round, local_vacant_class_accuracy, class_0_accuracy, ...`` with
        classes 0..N-1 in order, or a cell is not a number.
    """
    file = Path(path)
    if file.is_dir():
        file = file / CLASSES_FILE
    if not file.is_file():
        raise FileNotFoundError(f"{file} does not exist ({RunFiles.why_missing(CLASSES_FILE)})")
    try:
        df = pd.read_csv(file)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise RunFormatError(f"{file}: cannot parse CSV: {exc}") from exc
    columns = [str(c) for c in df.columns]
    n = len(columns) - len(CLASSES_LEADING_COLUMNS)
    expected = list(classes_columns(n))
    if columns != expected or n < 1:
        raise RunFormatError(f"{file}: header {columns}; expected {','.join(CLASSES_LEADING_COLUMNS)},"
                             f"{CLASS_ACCURACY_COLUMN.format(0)},... one column per class in order")
    for col in columns:
        converted = pd.to_numeric(df[col], errors="coerce")
        bad = converted.isna() & df[col].notna()
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise RunFormatError(f"{file}: column '{col}' has non-numeric value {df[col].iloc[row]!r} "
                                 f"in data row {row + 1}")
        df[col] = converted.astype("float64") if col != "round" else converted.astype("int64")
    return df.sort_values("round", kind="stable").reset_index(drop=True)


def classes_long(frame: pd.DataFrame) -> pd.DataFrame:
    """A loaded ``classes.csv`` as tidy rows: ``round``, ``class`` (int), ``accuracy``."""
    cols = class_columns(frame)
    long = frame.melt(id_vars=["round"], value_vars=cols, var_name="class", value_name="accuracy")
    long["class"] = long["class"].map(_class_of)
    return long.sort_values(["round", "class"], kind="stable").reset_index(drop=True)

