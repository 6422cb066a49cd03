"""Parsing the files of one run directory, each refused in one line naming the file.

``summary.json`` (a JSON object carrying ``schema_version`` 1; unknown keys kept),
``scenario.yaml`` (a YAML mapping, read with the safe loader) and ``metrics.csv`` (exactly the
columns of :data:`~sfl_sim.runs.rundir.schema.METRICS_COLUMNS`, all numeric), ``clients.csv``
(:func:`read_clients`, empty when the run has none). The study-data
loader (:func:`sfl_sim.analysis.study_data.read_run_dirs`) reads every run directory through
these; it parses the ``metrics.csv`` files of many runs in one call and comes here for a file
that call cannot take, so the error names the file and what is wrong in it.

This module imports neither torch, simpy nor the simulator.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from sfl_sim.runs.rundir.reader import RunFiles, summary_in_todays_shape
from sfl_sim.runs.rundir.schema import (
    CLIENTS_COLUMNS,
    CLIENTS_FILE,
    CLIENTS_NUMERIC_COLUMNS,
    METRICS_COLUMNS,
    SCHEMA_VERSION,
    STALENESS_COLUMNS,
)

__all__ = ["RunFormatError", "read_summary", "read_scenario", "check_schema_version", "read_metrics", "read_clients",
           "empty_clients", "read_staleness"]

_INT_COLUMNS = ("round",)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when built in: ~10x faster


class RunFormatError(ValueError):
    """A run directory is missing a file or does not match the schema."""


def read_summary(path: Path) -> dict[str, Any]:
    """``summary.json`` as a dict in today's shape (:func:`sfl_sim.runs.rundir.reader.summary_in_todays_shape`;
    unknown keys kept; the schema version is not checked here).

    Raises
    ------
    RunFormatError
        If the file is not valid JSON or not a JSON object.
    """
    try:
        with path.open("r", encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise RunFormatError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise RunFormatError(
            f"{path}: expected a JSON object at top level, got {type(data).__name__}"
        )
    return summary_in_todays_shape(data)


def read_scenario(path: Path) -> dict[str, Any]:
    """``scenario.yaml`` as a dict (an empty file is an empty scenario).

    Raises
    ------
    RunFormatError
        If the file is not valid YAML or not a mapping.
    """
    try:
        with path.open("r", encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=_YAML_LOADER)
    except yaml.YAMLError as exc:
        raise RunFormatError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise RunFormatError(
            f"{path}: expected a YAML mapping at top level, got {type(data).__name__}"
        )
    return data


def check_schema_version(run_dir: Path, summary: dict[str, Any], summary_path: Path) -> None:
    """Refuse a summary whose ``schema_version`` is missing or not the one this analysis reads.

    Raises
    ------
    RunFormatError
        Naming the file (missing field) or the run directory and both versions.
    """
    if "schema_version" not in summary:
        raise RunFormatError(
            f"{summary_path}: missing field 'schema_version'; this analysis reads "
            f"{SCHEMA_VERSION}"
        )
    version = summary["schema_version"]
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise RunFormatError(
            f"run dir {run_dir} has schema_version {version!r}; this analysis reads "
            f"{SCHEMA_VERSION}"
        )


def read_metrics(path: Path) -> pd.DataFrame:
    """One ``metrics.csv``, checked column by column.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`~sfl_sim.runs.rundir.schema.METRICS_COLUMNS` in that order (whatever order the
        file has them in), numeric (``round`` int64 when no cell is empty), sorted by ``round``.

    Raises
    ------
    RunFormatError
        If the file is empty or cannot be parsed, misses a column, has an extra or a duplicate one,
        or has a value that is not a number (naming the column and the data row).
    """
    try:
        df = pd.read_csv(path)
    except pd.errors.EmptyDataError as exc:
        raise RunFormatError(
            f"{path}: empty file; expected header {','.join(METRICS_COLUMNS)}"
        ) from exc
    except pd.errors.ParserError as exc:
        raise RunFormatError(f"{path}: cannot parse CSV: {exc}") from exc

    columns = [str(c) for c in df.columns]
    missing = [c for c in METRICS_COLUMNS if c not in columns]
    extra = [c for c in columns if c not in METRICS_COLUMNS]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {missing}")
        if extra:
            parts.append(f"unexpected column(s) {extra}")
        raise RunFormatError(
            f"{path}: {'; '.join(parts)}; expected header {','.join(METRICS_COLUMNS)}"
        )
    if len(set(columns)) != len(columns):
        raise RunFormatError(f"{path}: duplicate column names in header {columns}")

    df = df[list(METRICS_COLUMNS)]
    for col in METRICS_COLUMNS:
        converted = pd.to_numeric(df[col], errors="coerce")
        bad = converted.isna() & df[col].notna()
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise RunFormatError(
                f"{path}: column '{col}' has non-numeric value {df[col].iloc[row]!r} "
                f"in data row {row + 1}"
            )
        df[col] = converted
    for col in METRICS_COLUMNS:
        if col in _INT_COLUMNS:
            if df[col].notna().all():
                df[col] = df[col].astype("int64")
        elif len(df) == 0:
            df[col] = df[col].astype("float64")
    return df.sort_values("round", kind="stable").reset_index(drop=True)


def empty_clients() -> pd.DataFrame:
    """A ``clients.csv`` frame without rows: :data:`~sfl_sim.runs.rundir.schema.CLIENTS_COLUMNS`,
    numeric but ``outcome`` (text)."""
    return pd.DataFrame({c: pd.Series(dtype="object" if c == "outcome" else "float64") for c in CLIENTS_COLUMNS})


def read_clients(run_dir: Path) -> pd.DataFrame:
    """A run's ``clients.csv``, the per-client record of every round, in today's columns.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`~sfl_sim.runs.rundir.schema.CLIENTS_COLUMNS`: ``outcome`` as text, the
        others numeric (an empty cell is NaN: ``cqi`` without CQIs, ``downlink_rate_bps`` with
        the ``ideal`` downlink); no rows when the run has no file (older than the file, or with
        ``metrics.client_record`` off: :meth:`sfl_sim.runs.rundir.reader.RunFiles.why_missing` says why).

    Raises
    ------
    RunFormatError
        If the file cannot be parsed, or a numeric column holds text (naming the file and column).
    """
    files = RunFiles(run_dir)
    path, text = files.file(CLIENTS_FILE), files.log_text(CLIENTS_FILE)
    if text is None:
        return empty_clients()
    try:
        df = pd.read_csv(io.StringIO(text), dtype={"outcome": "object"}, keep_default_na=False, na_values=[""])
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise RunFormatError(f"{path}: cannot parse CSV: {exc}") from exc
    if df.empty:  # a header only (the run stopped before its first round ended): no dtype to check
        return empty_clients()
    for c in CLIENTS_NUMERIC_COLUMNS:
        if not pd.api.types.is_numeric_dtype(df[c]):
            raise RunFormatError(f"{path}: column {c} holds a value that is not a number")
    return df.astype({c: "float64" for c in CLIENTS_NUMERIC_COLUMNS if c not in ("round", "client")})


def read_staleness(path: Path) -> pd.DataFrame:
    """An asynchronous run's ``staleness.csv``: columns :data:`~sfl_sim.runs.rundir.schema.STALENESS_COLUMNS`,
    numeric, one row per update an aggregation used.

    Raises
    ------
    RunFormatError
        If the file cannot be parsed or its header is not exactly those columns.
    """
    try:
        df = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise RunFormatError(f"{path}: cannot parse CSV ({exc}); expected header {','.join(STALENESS_COLUMNS)}") \
            from exc
    if tuple(str(c) for c in df.columns) != STALENESS_COLUMNS:
        raise RunFormatError(f"{path}: header {list(df.columns)}; expected {','.join(STALENESS_COLUMNS)}")
    return df.apply(pd.to_numeric)
