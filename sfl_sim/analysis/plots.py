"""``sfl-sim plot``: every run as a line of its own, against simulated time.

``accuracy_vs_time.png`` (test accuracy, %) and ``uplink_vs_time.png`` (cumulative uplink, MB),
and ``accuracy_vs_energy.png`` (accuracy against cumulative client energy, J) when a run recorded
energy: one line per run, drawn by the report's figure code (:func:`sfl_sim.analysis.figures.runs_figure`;
a run keeps its colour in all three). The x axis is the simulated clock (``sim_time_s``), never
host time.

Lines are labelled by the run's label; where several runs share one (two seeds of ``scala``),
the coordinates that tell them apart are appended — ``scala (seed 1)``,
``scala (partition=dirichlet(beta=0.1), seed 0)`` — so no two legend entries are the same.
:func:`plot_runs` accepts scenario and study directories as well as run directories.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from sfl_sim.analysis.energy_data import ENERGY_CURVE_COLUMN, metrics_with_energy
from sfl_sim.analysis.figures import FIGURE_KINDS, runs_figure, write_png
from sfl_sim.analysis.runs import Run, runs_of
from sfl_sim.analysis.study_data import find_run_dirs, read_run_dirs, run_coordinates, short_field_names, study_of
from sfl_sim.analysis.units import BYTES_PER_MB
from sfl_sim.runs.rundir import marker

__all__ = [
    "BYTES_PER_MB",
    "ACCURACY_PLOT_FILE",
    "UPLINK_PLOT_FILE",
    "ENERGY_PLOT_FILE",
    "run_labels",
    "plot_accuracy_vs_time",
    "plot_uplink_vs_time",
    "plot_runs",
]

_ACCURACY, _UPLINK, _ENERGY = "accuracy_vs_time", "uplink_vs_time", "accuracy_vs_energy"
ACCURACY_PLOT_FILE = f"{_ACCURACY}.png"
UPLINK_PLOT_FILE = f"{_UPLINK}.png"
ENERGY_PLOT_FILE = f"{_ENERGY}.png"
_TITLES = {
    _ACCURACY: "Test accuracy vs simulated time",
    _UPLINK: "Uplink traffic vs simulated time",
    _ENERGY: "Test accuracy vs client energy",
}


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


def _plot(runs: Sequence[Run], kind: str, out_path: str | os.PathLike[str]) -> Path:
    runs = list(runs)
    if not runs:
        raise ValueError("no runs to plot")
    columns = [axis.column for axis in FIGURE_KINDS[kind]]
    for run in runs:
        missing = [c for c in columns if c not in run.metrics.columns]
        if missing:
            raise KeyError(f"run {run.label!r} ({run.path}): metrics missing column(s) {missing}")
    lines = list(zip(run_labels(runs), [r.metrics for r in runs], strict=True))
    return write_png(runs_figure(lines, kind, _TITLES[kind]), out_path)


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
    return _plot(runs, _ACCURACY, out_path)


def plot_uplink_vs_time(runs: Sequence[Run], out_path: str | os.PathLike[str]) -> Path:
    """Plot cumulative uplink traffic (MB, :data:`BYTES_PER_MB` bytes) against simulated time.

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
    return _plot(runs, _UPLINK, out_path)


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
        ``out_dir / "accuracy_vs_energy.png"`` when a run recorded client energy
        (:func:`sfl_sim.analysis.energy_data.metrics_with_energy`, the report's definition).

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
    out = Path(out_dir)
    marker.claim_folder(out, "plots", (ACCURACY_PLOT_FILE, UPLINK_PLOT_FILE, ENERGY_PLOT_FILE))
    files = read_run_dirs(dirs)
    runs = runs_of(files)
    written = [
        plot_accuracy_vs_time(runs, out / ACCURACY_PLOT_FILE),
        plot_uplink_vs_time(runs, out / UPLINK_PLOT_FILE),
    ]
    metrics = metrics_with_energy(study_of(files, unique=False))  # a copied run is a line, not a seed
    if metrics[ENERGY_CURVE_COLUMN].notna().any():
        by_run = dict(tuple(metrics.groupby("run_id")))
        lines = [(label, by_run.get(run_id, metrics.iloc[0:0])) for run_id, label in enumerate(run_labels(runs))]
        written.append(write_png(runs_figure(lines, _ENERGY, _TITLES[_ENERGY]), out / ENERGY_PLOT_FILE))
    return written
