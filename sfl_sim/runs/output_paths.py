"""Where commands write when no ``-o/--output-dir`` is given: under the run or scenario directory.

Outputs land beside the results they describe, never in whatever directory the command happened
to be typed in.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["cell_report_dir", "plot_dir"]


def cell_report_dir(scenario_output_dir: Path | str) -> Path:
    """Default folder of ``sfl-sim channel``: ``<scenario output_dir>/cell_report``."""
    return Path(scenario_output_dir) / "cell_report"


def plot_dir(run_dirs: Sequence[Path | str]) -> Path:
    """Default folder of ``sfl-sim plot``.

    ``<scenario directory>/plots`` when every run directory lies in the same parent (the runs of
    one scenario, ``<output_dir>/<label>``), else ``<first run directory>/plots``.

    Raises
    ------
    ValueError
        If ``run_dirs`` is empty.
    """
    if not run_dirs:
        raise ValueError("run_dirs: got none; allowed: one or more run directories")
    parents = {Path(d).resolve().parent for d in run_dirs}
    if len(parents) == 1:
        return Path(run_dirs[0]).parent / "plots"
    return Path(run_dirs[0]) / "plots"
