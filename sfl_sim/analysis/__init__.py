"""Offline analysis of sfl-sim run directories.

Reads ``scenario.yaml``, ``metrics.csv``, ``rounds.csv``, ``classes.csv``, ``energy.csv``,
``clients.csv`` and ``summary.json`` from run directories on disk. Never imports torch, simpy or the
simulator: of ``sfl_sim`` only the run directory's schema (:mod:`sfl_sim.runs.rundir.schema`).

Modules, each using the others' public names only:

* reading: :mod:`~sfl_sim.analysis.readers` (one file, its errors), :mod:`~sfl_sim.analysis.study_data`
  (the loader: finding run directories, reading them once, each run's coordinates, :class:`StudyData`),
  :mod:`~sfl_sim.analysis.runs` (one :class:`Run` per directory of what the loader read),
  :mod:`~sfl_sim.analysis.classes`, :mod:`~sfl_sim.analysis.energy_data`, :mod:`~sfl_sim.analysis.radio_data`;
* numbers: :mod:`~sfl_sim.analysis.tta`, :mod:`~sfl_sim.analysis.stats`, :mod:`~sfl_sim.analysis.units`;
* tables: :mod:`~sfl_sim.analysis.comparison` (one row per run: ``summary.csv`` and the end-of-run table),
  :mod:`~sfl_sim.analysis.tables` and :mod:`~sfl_sim.analysis.energy` (the report's);
* figures: :mod:`~sfl_sim.analysis.figure_style` (what every figure shares), :mod:`~sfl_sim.analysis.figures`
  (accuracy curves, also ``sfl-sim plot``'s via :mod:`~sfl_sim.analysis.plots`),
  :mod:`~sfl_sim.analysis.radio_figures` (round-time breakdown, SINR/rate CDFs, energy per client),
  :mod:`~sfl_sim.analysis.sweep` (a metric against a numeric setting field); the report's set of them with
  their captions: :mod:`~sfl_sim.analysis.report_figures`, written by :mod:`~sfl_sim.analysis.report`
  (``sfl-sim report``).

The public names below are imported lazily (PEP 562), so ``import sfl_sim.runs.rundir.schema`` — which the
simulator does to share the run-file schema — costs nothing and pulls in neither pandas nor
matplotlib.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> submodule that defines it
_EXPORTS = {
    "SCHEMA_VERSION": "sfl_sim.runs.rundir.schema",
    "METRICS_COLUMNS": "sfl_sim.runs.rundir.schema",
    "ROUNDS_COLUMNS": "sfl_sim.runs.rundir.schema",
    "Run": "runs",
    "RunFormatError": "readers",
    "load_run": "runs",
    "load_runs": "runs",
    "load_classes": "classes",
    "classes_long": "classes",
    "class_columns": "classes",
    "time_to_accuracy_s": "tta",
    "tta_column_name": "tta",
    "summary_table": "comparison",
    "plot_accuracy_vs_time": "plots",
    "plot_uplink_vs_time": "plots",
    "plot_runs": "plots",
    "run_labels": "plots",
    "StudyData": "study_data",
    "StudyError": "study_data",
    "find_run_dirs": "study_data",
    "load_study": "study_data",
    "paired_speedup": "stats",
    "write_report": "report",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sfl_sim.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(module if "." in module else f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
