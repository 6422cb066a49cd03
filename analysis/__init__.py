"""Offline analysis of sfl-sim run directories.

Reads ``scenario.yaml``, ``metrics.csv`` and ``summary.json`` from run
directories on disk. Never imports torch, simpy or ``sfl_sim``.
"""

from .plots import plot_accuracy_vs_time, plot_runs, plot_uplink_vs_time
from .runs import (
    METRICS_COLUMNS,
    SCHEMA_VERSION,
    Run,
    RunFormatError,
    load_run,
    load_runs,
)
from .tta import summary_table, time_to_accuracy_s, tta_column_name

__all__ = [
    "METRICS_COLUMNS",
    "SCHEMA_VERSION",
    "Run",
    "RunFormatError",
    "load_run",
    "load_runs",
    "time_to_accuracy_s",
    "tta_column_name",
    "summary_table",
    "plot_accuracy_vs_time",
    "plot_uplink_vs_time",
    "plot_runs",
]
