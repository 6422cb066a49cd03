"""Loading sfl-sim run directories from disk, one :class:`Run` each.

A run directory (schema_version 1) holds, among others, three files written by the simulator
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

They are read by the study-data loader (:func:`sfl_sim.analysis.study_data.read_run_dirs`), the
one reading of run directories in the analysis; a :class:`Run` is one directory of what it read.

This module deliberately imports neither torch, simpy nor the simulator.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sfl_sim.analysis.readers import RunFormatError
from sfl_sim.analysis.study_data import RunFiles, read_run_dirs
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
    "runs_of",
]


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


def runs_of(files: RunFiles) -> list[Run]:
    """One :class:`Run` per directory read by :func:`~sfl_sim.analysis.study_data.read_run_dirs`, in order.

    Parameters
    ----------
    files : RunFiles

    Returns
    -------
    list of Run
        ``metrics`` is the directory's rows of ``files.metrics`` (columns :data:`METRICS_COLUMNS`,
        sorted by ``round``); ``label`` is ``summary["label"]`` if set, else the directory name.
    """
    by_run = dict(tuple(files.metrics.groupby("run_id", sort=False)))
    empty = files.metrics.iloc[0:0]
    out = []
    for run_id, (run_dir, summary, scenario) in enumerate(zip(files.dirs, files.summaries, files.scenarios,
                                                              strict=True)):
        metrics = by_run.get(run_id, empty)[list(METRICS_COLUMNS)].reset_index(drop=True)
        label = summary.get("label") or run_dir.resolve().name
        out.append(Run(path=run_dir, label=str(label), scenario=scenario, metrics=metrics, summary=summary))
    return out


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
    (run,) = load_runs([path])
    return run


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
    return runs_of(read_run_dirs(paths, rounds=False))
