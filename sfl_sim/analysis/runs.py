"""Loading sfl-sim run directories from disk.

A run directory (schema_version 1) holds three files written by the simulator
as the run goes:

``scenario.yaml``
    The resolved scenario (a YAML mapping).
``metrics.csv``
    One row per evaluated round with the columns in :data:`METRICS_COLUMNS`.
    Bytes and FLOPs columns are cumulative since the start of the run;
    ``sim_time_s`` is the simulated clock and ``host_time_s`` is cumulative
    wall-clock seconds on the host. The two clocks are never mixed.
``summary.json``
    Run-level summary; must carry ``schema_version`` 1. Unknown keys are kept.

This module deliberately imports neither torch, simpy nor ``sfl_sim``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from sfl_sim.runs.rundir import upgrade
from sfl_sim.runs.rundir.schema import METRICS_COLUMNS, METRICS_FILE, SCENARIO_FILE, SCHEMA_VERSION, SUMMARY_FILE

__all__ = [
    "SCHEMA_VERSION",
    "METRICS_COLUMNS",
    "SCENARIO_FILE",
    "METRICS_FILE",
    "SUMMARY_FILE",
    "RunFormatError",
    "Run",
    "load_run",
    "load_runs",
]

_INT_COLUMNS = ("round",)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when built in


class RunFormatError(ValueError):
    """A run directory is missing a file or does not match the schema."""


@dataclass
class Run:
    """One simulator run loaded from its run directory.

    Attributes
    ----------
    path : pathlib.Path
        The run directory.
    label : str
        Human-readable name: ``summary["label"]`` if set, else the directory name.
    scenario : dict
        The resolved scenario read from ``scenario.yaml``, in today's shape
        (:func:`sfl_sim.runs.rundir.upgrade.scenario`).
    metrics : pandas.DataFrame
        ``metrics.csv``, one row per evaluated round, columns
        :data:`METRICS_COLUMNS`, sorted by ``round``.
    summary : dict
        ``summary.json`` as read (unknown keys kept).
    """

    path: Path
    label: str
    scenario: dict = field(repr=False)
    metrics: pd.DataFrame = field(repr=False)
    summary: dict = field(repr=False)

    @property
    def algorithm(self) -> str:
        """Algorithm name from the summary, else from ``scenario.algorithm.name``.

        Returns
        -------
        str
            The algorithm name, or ``""`` when neither file names one.
        """
        name = self.summary.get("algorithm")
        if name:
            return str(name)
        algo = self.scenario.get("algorithm")
        if isinstance(algo, dict) and algo.get("name"):
            return str(algo["name"])
        return ""


def _read_scenario(path: Path) -> dict:
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


def _read_summary(path: Path) -> dict:
    try:
        with path.open("r", encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise RunFormatError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise RunFormatError(
            f"{path}: expected a JSON object at top level, got {type(data).__name__}"
        )
    return data


def _check_schema_version(run_dir: Path, summary: dict, summary_path: Path) -> None:
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


def _read_metrics(path: Path) -> pd.DataFrame:
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


def load_run(path: str | os.PathLike[str]) -> Run:
    """Load one run directory.

    Parameters
    ----------
    path : str or os.PathLike
        Directory holding ``scenario.yaml``, ``metrics.csv`` and ``summary.json``.

    Returns
    -------
    Run
        The loaded run; ``metrics`` sorted by ``round``.

    Raises
    ------
    FileNotFoundError
        If the directory or one of the three files is missing (the message
        names the missing path).
    RunFormatError
        If ``summary.json`` has an unsupported ``schema_version``, or
        ``metrics.csv`` is missing a column or has an extra one, or a file
        cannot be parsed.
    """
    run_dir = Path(path)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run dir {run_dir} does not exist or is not a directory")
    for name in (SUMMARY_FILE, SCENARIO_FILE, METRICS_FILE):
        if not (run_dir / name).is_file():
            raise FileNotFoundError(f"run dir {run_dir} is missing {name}")

    summary_path = run_dir / SUMMARY_FILE
    summary = _read_summary(summary_path)
    _check_schema_version(run_dir, summary, summary_path)
    scenario = upgrade.scenario(_read_scenario(run_dir / SCENARIO_FILE))
    metrics = _read_metrics(run_dir / METRICS_FILE)

    label = summary.get("label")
    if not label:
        label = run_dir.resolve().name
    return Run(
        path=run_dir,
        label=str(label),
        scenario=scenario,
        metrics=metrics,
        summary=summary,
    )


def load_runs(paths: Iterable[str | os.PathLike[str]]) -> list[Run]:
    """Load several run directories, in the order given.

    Parameters
    ----------
    paths : iterable of str or os.PathLike
        Run directories.

    Returns
    -------
    list of Run
        One :class:`Run` per path.

    Raises
    ------
    FileNotFoundError, RunFormatError
        As :func:`load_run`, for the first bad directory.
    """
    if isinstance(paths, (str, os.PathLike)):
        raise TypeError("load_runs expects an iterable of paths; use load_run for one path")
    return [load_run(p) for p in paths]
