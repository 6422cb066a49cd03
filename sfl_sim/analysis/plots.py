"""Plots of sfl-sim runs against simulated time.

Figures are drawn on matplotlib's non-interactive Agg canvas directly
(``matplotlib.figure.Figure`` + ``FigureCanvasAgg``), so nothing is shown on
screen, no global pyplot state is touched and the process-wide backend is
left alone.
The x axis is the simulated clock (``sim_time_s``), never host time; the accuracy-versus-energy
panel (runs that recorded client energy) has the cumulative client energy on it instead.

One line per run. Lines are labelled by the run's label; where several runs share
one (two seeds of ``scala``), the coordinates that tell them apart are appended —
``scala (seed 1)``, ``scala (partition=dirichlet(beta=0.1), seed 0)`` — so no two
legend entries are the same. :func:`plot_runs` accepts scenario and study
directories as well as run directories.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from sfl_sim.analysis.energy import cumulative_energy_j
from sfl_sim.analysis.runs import Run, load_runs
from sfl_sim.analysis.study_data import find_run_dirs, run_coordinates, short_field_names

__all__ = [
    "BYTES_PER_MB",
    "ACCURACY_PLOT_FILE",
    "UPLINK_PLOT_FILE",
    "ENERGY_PLOT_FILE",
    "plot_accuracy_vs_energy",
    "run_labels",
    "line_figure",
    "plot_accuracy_vs_time",
    "plot_uplink_vs_time",
    "plot_runs",
]

#: Bytes in one megabyte (SI, 10**6) for axis scaling.
BYTES_PER_MB = 1_000_000

ACCURACY_PLOT_FILE = "accuracy_vs_time.png"
UPLINK_PLOT_FILE = "uplink_vs_time.png"
ENERGY_PLOT_FILE = "accuracy_vs_energy.png"

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
    canvas.print_png(out)
    return out


def run_labels(runs: Sequence[Run]) -> list[str]:
    """Legend labels, unique across ``runs``.

    Parameters
    ----------
    runs : sequence of Run
        Loaded runs.

    Returns
    -------
    list of str
        ``run.label``, with the coordinates that differ among the runs sharing that label
        appended in parentheses (setting fields by their short name, then ``seed N``); if even
        those agree (the same run copied), the run directory is appended.
    """
    runs = list(runs)
    labels = [r.label for r in runs]
    if len(set(labels)) == len(labels):
        return labels
    coords = run_coordinates(
        [r.scenario for r in runs], [r.summary for r in runs], names=[r.path.name for r in runs]
    )
    fields, values, seeds = coords.fields, coords.values, coords.seeds
    short = short_field_names(fields)
    out = list(labels)
    for label in dict.fromkeys(labels):
        idx = [i for i, lab in enumerate(labels) if lab == label]
        if len(idx) < 2:
            continue
        parts: dict[int, list[str]] = {i: [] for i in idx}
        for f in fields:
            if len({values[i][f] for i in idx}) > 1:
                for i in idx:
                    parts[i].append(f"{short[f]}={values[i][f]}")
        if len({str(seeds[i]) for i in idx}) > 1:
            for i in idx:
                parts[i].append(f"seed {seeds[i]}")
        for i in idx:
            out[i] = f"{label} ({', '.join(parts[i])})" if parts[i] else label
    if len(set(out)) < len(out):  # same coordinates: tell them apart by directory
        counts = {lab: out.count(lab) for lab in out}
        out = [f"{lab} [{runs[i].path}]" if counts[lab] > 1 else lab for i, lab in enumerate(out)]
    return out


def line_figure(
    runs: Sequence[Run], y_column: str, y_scale: float, y_label: str, title: str
) -> Figure:
    """One line per run of ``y_column / y_scale`` against simulated time, labelled by :func:`run_labels`.

    Parameters
    ----------
    runs : sequence of Run
        Loaded runs (at least one).
    y_column : str
        A metrics column.
    y_scale : float
        Divisor of the y values (e.g. 1e6 for MB).
    y_label, title : str
        Axis label and title.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        If ``runs`` is empty.
    KeyError
        If a run's metrics lack ``sim_time_s`` or ``y_column``.
    """
    runs = _check_runs(runs, ("sim_time_s", y_column))
    fig = Figure(figsize=_FIGSIZE_IN, dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for run, label in zip(runs, run_labels(runs), strict=True):
        m = run.metrics.sort_values("round", kind="stable") if "round" in run.metrics else run.metrics
        x = m["sim_time_s"].to_numpy(dtype=float)
        y = m[y_column].to_numpy(dtype=float) / y_scale
        ax.plot(x, y, marker="o" if len(x) <= 30 else None, markersize=3, label=label)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel(y_label)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    # below the axes, in as many columns as fit: a legend inside would hide lines
    longest_label = max(map(len, ax.get_legend_handles_labels()[1]))
    ncol = max(1, min(len(runs), int(_FIGSIZE_IN[0] // (0.45 + 0.075 * longest_label))))
    fig.legend(loc="outside lower center", ncol=ncol, fontsize="small", frameon=False)
    return fig


def _line_plot(
    runs: Sequence[Run],
    y_column: str,
    y_scale: float,
    y_label: str,
    title: str,
    out_path: str | os.PathLike[str],
) -> Path:
    return _save(line_figure(runs, y_column, y_scale, y_label, title), out_path)


def plot_accuracy_vs_time(runs: Sequence[Run], out_path: str | os.PathLike[str]) -> Path:
    """Plot test accuracy (%) against simulated time, one labelled line per run (legend below).

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
        runs, "test_accuracy", 0.01, "test accuracy (%)", "Test accuracy vs simulated time", out_path
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


def plot_accuracy_vs_energy(runs: Sequence[Run], out_path: str | os.PathLike[str]) -> Path | None:
    """Plot test accuracy (%) against cumulative client energy (J), one line per run that recorded
    energy (:func:`sfl_sim.analysis.energy.cumulative_energy_j`); None (nothing written) when none did."""
    runs = _check_runs(runs, ("round", "test_accuracy"))
    lines = []
    for run, label in zip(runs, run_labels(runs), strict=True):
        m = run.metrics.sort_values("round", kind="stable")
        x = cumulative_energy_j(run.path, m["round"].to_numpy())
        if np.isfinite(x).any():
            lines.append((x, 100.0 * m["test_accuracy"].to_numpy(dtype=float), label))
    if not lines:
        return None
    fig = Figure(figsize=_FIGSIZE_IN, dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for x, y, label in lines:
        ax.plot(x, y, marker="o" if len(x) <= 30 else None, markersize=3, label=label)
    ax.set_xlabel("cumulative client energy (J)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("Test accuracy vs client energy")
    ax.grid(True, alpha=0.3)
    longest_label = max(len(label) for _, _, label in lines)
    ncol = max(1, min(len(lines), int(_FIGSIZE_IN[0] // (0.45 + 0.075 * longest_label))))
    fig.legend(loc="outside lower center", ncol=ncol, fontsize="small", frameon=False)
    return _save(fig, out_path)


def plot_runs(
    run_dirs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
) -> list[Path]:
    """Load run directories and write the standard comparison plots.

    Parameters
    ----------
    run_dirs : path or iterable of paths
        Run directories, or scenario / study directories with run directories below
        (see :func:`sfl_sim.analysis.study_data.find_run_dirs`).
    out_dir : str or os.PathLike
        Output directory; created if missing.

    Returns
    -------
    list of pathlib.Path
        ``[out_dir / "accuracy_vs_time.png", out_dir / "uplink_vs_time.png"]``, and
        ``out_dir / "accuracy_vs_energy.png"`` when a run recorded client energy.

    Raises
    ------
    FileNotFoundError
        If a path does not exist or holds no run directory.
    """
    dirs = find_run_dirs(run_dirs)
    if not dirs:
        shown = [run_dirs] if isinstance(run_dirs, (str, os.PathLike)) else list(run_dirs)
        raise FileNotFoundError(
            f"no run directories (with summary.json and metrics.csv) under {', '.join(map(str, shown))}"
        )
    runs = load_runs(dirs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [
        plot_accuracy_vs_time(runs, out / ACCURACY_PLOT_FILE),
        plot_uplink_vs_time(runs, out / UPLINK_PLOT_FILE),
    ]
    energy = plot_accuracy_vs_energy(runs, out / ENERGY_PLOT_FILE)
    return written if energy is None else [*written, energy]
