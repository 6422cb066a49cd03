"""Plots of sfl-sim runs against simulated time.

Figures are drawn on matplotlib's non-interactive Agg canvas directly
(``matplotlib.figure.Figure`` + ``FigureCanvasAgg``), so nothing is shown on
screen, no global pyplot state is touched and the process-wide backend is
left alone.
The x axis is always the simulated clock (``sim_time_s``), never host time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .runs import Run, load_runs

__all__ = [
    "BYTES_PER_MB",
    "ACCURACY_PLOT_FILE",
    "UPLINK_PLOT_FILE",
    "plot_accuracy_vs_time",
    "plot_uplink_vs_time",
    "plot_runs",
]

#: Bytes in one megabyte (SI, 10**6) for axis scaling.
BYTES_PER_MB = 1_000_000

ACCURACY_PLOT_FILE = "accuracy_vs_time.png"
UPLINK_PLOT_FILE = "uplink_vs_time.png"

_DPI = 120
_FIGSIZE_IN = (6.4, 4.0)


def _check_runs(runs: Sequence[Run], columns: Iterable[str]) -> list[Run]:
    runs = list(runs)
    if not runs:
        raise ValueError("no runs to plot")
    for run in runs:
        missing = [c for c in columns if c not in run.metrics.columns]
        if missing:
            raise KeyError(f"run {run.label!r} ({run.path}): metrics missing column(s) {missing}")
    return runs


def _save(fig: Figure, out_path: str | os.PathLike[str]) -> Path:
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    canvas = FigureCanvasAgg(fig)
    fig.tight_layout()
    canvas.print_png(out)
    return out


def _line_plot(
    runs: Sequence[Run],
    y_column: str,
    y_scale: float,
    y_label: str,
    title: str,
    out_path: str | os.PathLike[str],
) -> Path:
    runs = _check_runs(runs, ("sim_time_s", y_column))
    fig = Figure(figsize=_FIGSIZE_IN, dpi=_DPI)
    ax = fig.add_subplot()
    for run in runs:
        m = run.metrics.sort_values("round", kind="stable") if "round" in run.metrics else run.metrics
        x = m["sim_time_s"].to_numpy(dtype=float)
        y = m[y_column].to_numpy(dtype=float) / y_scale
        ax.plot(x, y, marker="o" if len(x) <= 30 else None, markersize=3, label=run.label)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel(y_label)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return _save(fig, out_path)


def plot_accuracy_vs_time(runs: Sequence[Run], out_path: str | os.PathLike[str]) -> Path:
    """Plot test accuracy against simulated time, one labelled line per run.

    Parameters
    ----------
    runs : sequence of Run
        Loaded runs (at least one).
    out_path : str or os.PathLike
        PNG file to write; parent directories are created.

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    ValueError
        If ``runs`` is empty.
    KeyError
        If a run's metrics lack ``sim_time_s`` or ``test_accuracy``.
    """
    return _line_plot(
        runs, "test_accuracy", 1.0, "test accuracy", "Test accuracy vs simulated time", out_path
    )


def plot_uplink_vs_time(runs: Sequence[Run], out_path: str | os.PathLike[str]) -> Path:
    """Plot cumulative uplink traffic (MB, 10**6 bytes) against simulated time.

    Parameters
    ----------
    runs : sequence of Run
        Loaded runs (at least one).
    out_path : str or os.PathLike
        PNG file to write; parent directories are created.

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    ValueError
        If ``runs`` is empty.
    KeyError
        If a run's metrics lack ``sim_time_s`` or ``uplink_bytes``.
    """
    return _line_plot(
        runs,
        "uplink_bytes",
        float(BYTES_PER_MB),
        "cumulative uplink (MB)",
        "Uplink traffic vs simulated time",
        out_path,
    )


def plot_runs(
    run_dirs: Iterable[str | os.PathLike[str]], out_dir: str | os.PathLike[str]
) -> list[Path]:
    """Load run directories and write the standard comparison plots.

    Parameters
    ----------
    run_dirs : iterable of str or os.PathLike
        Run directories to load with :func:`analysis.load_runs`.
    out_dir : str or os.PathLike
        Output directory; created if missing.

    Returns
    -------
    list of pathlib.Path
        ``[out_dir / "accuracy_vs_time.png", out_dir / "uplink_vs_time.png"]``.
    """
    runs = load_runs(run_dirs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [
        plot_accuracy_vs_time(runs, out / ACCURACY_PLOT_FILE),
        plot_uplink_vs_time(runs, out / UPLINK_PLOT_FILE),
    ]
