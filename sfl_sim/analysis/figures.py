"""The figures of the analysis: the report's (accuracy against simulated time and against cumulative
uplink bytes) and ``sfl-sim plot``'s (accuracy and cumulative uplink against simulated time).

The report draws one figure per setting, one line per algorithm (and, for a study over ``compression:``,
one figure per algorithm with one line per compression level, :func:`levels_figure`): the mean over seeds
on a common grid with a shaded band (± one std, ddof 1, or min–max), sized for a paper as it is.
``sfl-sim plot`` draws every run as a line of its own (:func:`runs_figure`) with the same code: a
line of one run is that run's curve, with a dot at each of its evaluations when there are at most
:data:`MAX_EVALUATION_DOTS`. Every figure kind (:data:`FIGURE_KINDS`) is a pair of axes
(:class:`Axis`) over the metrics columns.

* **Every seed's data.** The curve spans from the earliest first to the latest last evaluation
  of the algorithm's seeds; at each x it is the mean over the seeds *running* there (whose
  evaluations span x), and the line thins as seeds end (its width is proportional to the share
  of seeds still running, never below a third), so a slow algorithm is not cut off at its
  fastest seed. Each seed's last evaluation is marked (○). ``seed_lines=True`` also draws every
  seed as a thin line.
* **Common grid.** Seeds evaluate at different times (rounds of random duration), so each seed's
  curve is linearly interpolated between its evaluations onto one grid (the union of the
  evaluation points and an even grid), and the mean and band are taken there: no sawtooth from
  a seed's value jumping at its own evaluation times. Smoothing (a centred rolling mean over
  ``smooth`` evaluations of each seed) only when asked.
* **Paper-ready.** Accuracy in % like the tables; the legend outside the axes, below them, so it
  hides nothing; targets as horizontal lines of distinct styles labelled at the right edge of
  the axes; every font in points, at least :data:`MIN_FONT_PT` pt at any width from
  :data:`MIN_WIDTH_IN` in (one column of a two-column paper is about 3.5 in).

Figures are drawn on matplotlib's Agg canvas directly (no pyplot state, no display).
"""

from __future__ import annotations

import math
import os
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from sfl_sim.analysis.energy_data import ENERGY_CURVE_COLUMN
from sfl_sim.analysis.stats import DDOF
from sfl_sim.analysis.study_data import StudyData
from sfl_sim.analysis.tables import target_text
from sfl_sim.analysis.units import BYTES_PER_MB

__all__ = [
    "Axis",
    "FIGURE_KINDS",
    "BANDS",
    "CURVES",
    "EXTRA_CURVES",
    "MAX_EVALUATION_DOTS",
    "DEFAULT_WIDTH_IN",
    "MIN_WIDTH_IN",
    "MAX_WIDTH_IN",
    "MIN_FONT_PT",
    "TARGET_STYLES",
    "check_figure_options",
    "mean_curve",
    "setting_figure",
    "levels_figure",
    "runs_figure",
    "save_figure",
    "write_png",
    "setting_slug",
]

#: Band options: ``"std"`` (mean ± one sample std) or ``"minmax"`` (min to max over seeds).
BANDS = ("std", "minmax")


class Axis(NamedTuple):
    """One axis of a figure: a metrics column, shown in a unit.

    Attributes
    ----------
    column : str
        The metrics column (``sim_time_s``, ``test_accuracy``, ...).
    scale : float
        The column's values are divided by it (1e6: bytes shown in MB; 0.01: a fraction in %).
    label : str
        The axis label, with the unit.
    """

    column: str
    scale: float
    label: str


_TIME = Axis("sim_time_s", 1.0, "simulated time (s)")
_ACCURACY = Axis("test_accuracy", 0.01, "test accuracy (%)")
_UPLINK = Axis("uplink_bytes", float(BYTES_PER_MB), "cumulative uplink (MB)")
# a column the study adds itself (:func:`sfl_sim.analysis.energy_data.metrics_with_energy`)
_ENERGY = Axis(ENERGY_CURVE_COLUMN, 1.0, "cumulative client energy (J)")

#: Every figure kind: file stem -> (x axis, y axis).
FIGURE_KINDS: dict[str, tuple[Axis, Axis]] = {
    "accuracy_vs_time": (_TIME, _ACCURACY),
    "accuracy_vs_uplink": (_UPLINK, _ACCURACY),
    "accuracy_vs_energy": (_ENERGY, _ACCURACY),
    "uplink_vs_time": (_TIME, _UPLINK),
}
#: The report's figure kinds of every study: file stem -> x axis (accuracy on y).
CURVES: dict[str, Axis] = {kind: FIGURE_KINDS[kind][0] for kind in ("accuracy_vs_time", "accuracy_vs_uplink")}
#: The report's figure kinds drawn only when the runs recorded what they need: file stem -> x axis.
EXTRA_CURVES: dict[str, Axis] = {"accuracy_vs_energy": FIGURE_KINDS["accuracy_vs_energy"][0]}
#: A line of one run (:func:`runs_figure`) marks its evaluations with dots up to this many.
MAX_EVALUATION_DOTS = 30

#: Default figure width (in): matplotlib's default, a full text width.
DEFAULT_WIDTH_IN = 6.4
#: Narrowest and widest figure (in); one column of a two-column paper is about 3.3-3.5 in.
MIN_WIDTH_IN = 3.0
MAX_WIDTH_IN = 12.0
#: Smallest font of a figure (pt), at any width.
MIN_FONT_PT = 7.0
#: Line styles of the target lines, in target order (then repeated).
TARGET_STYLES: tuple = ("--", ":", "-.", (0, (6, 2, 1, 2, 1, 2)), (0, (1, 3)))

_PNG_DPI = 200
_GRID_POINTS = 256
_ASPECT = 0.62  # axes-area height / width, before the legend rows
_MIN_LINE_SHARE = 1 / 3  # thinnest mean line, as a share of the full width


def check_figure_options(band: str = "std", width_in: float = DEFAULT_WIDTH_IN, smooth: int = 0) -> None:
    """Refuse a bad band, width or smoothing window with one line naming it and what is allowed.

    Raises
    ------
    ValueError
    """
    if band not in BANDS:
        raise ValueError(f"band must be one of {', '.join(BANDS)}; got {band!r}")
    w = float(width_in)
    if not math.isfinite(w) or not MIN_WIDTH_IN <= w <= MAX_WIDTH_IN:
        raise ValueError(f"figure width must be {MIN_WIDTH_IN:g} to {MAX_WIDTH_IN:g} in (one column is about "
                         f"3.5 in); got {width_in!r}")
    if isinstance(smooth, bool) or not isinstance(smooth, (int, np.integer)) or smooth < 0:
        raise ValueError(f"smooth must be a whole number of evaluations >= 0 (0: none); got {smooth!r}")


def _prepare(runs: Sequence[tuple[np.ndarray, np.ndarray]], smooth: int) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for x, y in runs:
        x, y = np.asarray(x, float), np.asarray(y, float)
        keep = np.isfinite(x) & np.isfinite(y)
        x, y = x[keep], y[keep]
        if not x.size:
            continue
        order = np.argsort(x, kind="stable")
        x, y = x[order], y[order]
        if smooth > 1:
            y = pd.Series(y).rolling(smooth, center=True, min_periods=1).mean().to_numpy()
        # one value per x (the last evaluation there), as linear interpolation needs
        last = np.r_[x[1:] != x[:-1], True]
        out.append((x[last], y[last]))
    return out


def mean_curve(runs: Sequence[tuple[np.ndarray, np.ndarray]], band: str = "std", smooth: int = 0) -> pd.DataFrame:
    """Mean over seeds, linearly interpolated onto a common grid, over the seeds running at each x.

    Parameters
    ----------
    runs : sequence of (x, y) arrays
        One per seed: x the evaluation points, y the accuracy there (non-finite points dropped).
    band : {"std", "minmax"}
        What ``low`` and ``high`` hold.
    smooth : int, optional
        Centred rolling mean over this many evaluations of each seed first (0 or 1: none).

    Returns
    -------
    pandas.DataFrame
        Columns ``x``, ``mean``, ``low``, ``high``, ``n``. ``x`` is the union of the seeds' x
        values and an even grid of 256 points over [earliest first x, latest last x]; ``n`` is the
        number of seeds running at x (first x <= x <= last x), ``mean`` their mean, each seed
        linearly interpolated between its evaluations. ``low``/``high``: mean ∓ the sample std
        (``nan`` where fewer than two seeds run) or the min and max over the running seeds. Empty
        when no seed has a point.
    """
    check_figure_options(band=band, smooth=smooth)
    runs = _prepare(runs, smooth)
    cols = ["x", "mean", "low", "high", "n"]
    if not runs:
        return pd.DataFrame(columns=cols, dtype=float)
    start = min(x[0] for x, _ in runs)
    stop = max(x[-1] for x, _ in runs)
    grid = np.unique(np.concatenate([np.linspace(start, stop, _GRID_POINTS), *[x for x, _ in runs]]))
    values = np.vstack([np.interp(grid, x, y) for x, y in runs])
    running = np.vstack([(grid >= x[0]) & (grid <= x[-1]) for x, _ in runs])
    n = running.sum(axis=0)
    total = np.where(running, values, 0.0).sum(axis=0)
    mean = total / n  # every grid point lies in some seed's span, so n >= 1
    if band == "std":
        dev = np.where(running, values - mean, 0.0)
        var = (dev ** 2).sum(axis=0) / np.maximum(n - DDOF, 1)
        std = np.where(n > DDOF, np.sqrt(var), np.nan)
        low, high = mean - std, mean + std
    else:
        low = np.where(running, values, np.inf).min(axis=0)
        high = np.where(running, values, -np.inf).max(axis=0)
    return pd.DataFrame({"x": grid, "mean": mean, "low": low, "high": high, "n": n})


def _fonts(width_in: float) -> tuple[float, float]:
    """(base, small) font sizes in pt: smaller on narrow figures, never below MIN_FONT_PT."""
    base = 10.0 if width_in >= 5.5 else 8.0
    return base, max(MIN_FONT_PT, base - 1.0)


def _legend_columns(labels: Sequence[str], width_in: float, font_pt: float) -> int:
    """As many legend columns as fit the figure width (an entry: its text plus ~0.45 in of handle)."""
    entry_in = max(len(t) for t in labels) * 0.55 * font_pt / 72 + 0.45
    return max(1, min(len(labels), int(width_in * 0.95 // entry_in)))


def setting_figure(
    study: StudyData,
    setting: str,
    kind: str = "accuracy_vs_time",
    *,
    band: str = "std",
    targets: Sequence[float] = (),
    algorithms: Sequence[str] | None = None,
    width_in: float = DEFAULT_WIDTH_IN,
    seed_lines: bool = False,
    smooth: int = 0,
) -> Figure:
    """Accuracy (%) of every algorithm of one setting against time or uplink bytes.

    Parameters
    ----------
    study : StudyData
    setting : str
        A label of ``study.settings``; it is the figure title.
    kind : str
        A key of :data:`FIGURE_KINDS` (the report draws those of :data:`CURVES` and :data:`EXTRA_CURVES`).
    band : {"std", "minmax"}
        The shaded band around each mean line (see :func:`mean_curve`).
    targets : sequence of float
        Accuracy targets (fractions) drawn as horizontal lines (styles :data:`TARGET_STYLES`),
        each labelled at the right edge of the axes.
    algorithms : sequence of str, optional
        Line order (default ``study.algorithms``).
    width_in : float, optional
        Figure width in inches (:data:`MIN_WIDTH_IN` to :data:`MAX_WIDTH_IN`); the height follows,
        fonts are 8/7 pt below 5.5 in and 10/9 pt above.
    seed_lines : bool, optional
        Also draw every seed as a thin line (then no band).
    smooth : int, optional
        Rolling mean over this many evaluations of each seed (0: none).

    Returns
    -------
    matplotlib.figure.Figure
        One mean line per algorithm with runs in this setting, labelled ``"<algorithm> (n seeds)"``
        in a legend below the axes (a figure legend: ``fig.legends[0]``).
    """
    check_figure_options(band, width_in, smooth)
    m = study.metrics.loc[study.metrics["setting"] == setting]
    lines = [(algorithm, m.loc[m["algorithm"] == algorithm]) for algorithm in (algorithms or study.algorithms)]
    return _curves_figure(lines, setting, kind, band=band, targets=targets, width_in=width_in,
                          seed_lines=seed_lines, smooth=smooth)


def levels_figure(
    study: StudyData,
    algorithm: str,
    levels: Sequence[tuple[str, str]],
    title: str,
    kind: str = "accuracy_vs_uplink",
    *,
    band: str = "std",
    targets: Sequence[float] = (),
    width_in: float = DEFAULT_WIDTH_IN,
    seed_lines: bool = False,
    smooth: int = 0,
) -> Figure:
    """Accuracy (%) of one algorithm against uplink bytes or time, one line per setting given
    (e.g. per compression level: the settings that differ only in ``compression.*``).

    Parameters
    ----------
    study : StudyData
    algorithm : str
    levels : sequence of (setting, line label)
        The settings drawn, in order, each with the label of its line.
    title : str
        The figure title.
    kind, band, targets, width_in, seed_lines, smooth
        As in :func:`setting_figure`.

    Returns
    -------
    matplotlib.figure.Figure
        One mean line per setting with runs of ``algorithm``, labelled ``"<label> (n seeds)"``.
    """
    check_figure_options(band, width_in, smooth)
    m = study.metrics.loc[study.metrics["algorithm"] == algorithm]
    lines = [(label, m.loc[m["setting"] == setting]) for setting, label in levels]
    return _curves_figure(lines, title, kind, band=band, targets=targets, width_in=width_in,
                          seed_lines=seed_lines, smooth=smooth)


def runs_figure(lines: Sequence[tuple[str, pd.DataFrame]], kind: str, title: str, *,
                width_in: float = DEFAULT_WIDTH_IN) -> Figure:
    """One line per run: each run's curve as it is, labelled as given (``sfl-sim plot``).

    Parameters
    ----------
    lines : sequence of (label, metrics)
        Per run, its legend label and its metrics rows (one run's: a :class:`~sfl_sim.analysis.runs.Run`'s
        ``metrics``, or one ``run_id`` of a study's), with the columns of ``kind``'s axes.
    kind : str
        A key of :data:`FIGURE_KINDS`.
    title : str
        The figure title.
    width_in : float, optional
        Figure width in inches, as in :func:`setting_figure`.

    Returns
    -------
    matplotlib.figure.Figure
        One line per run that has a point, in the colour of its place in ``lines`` (the same run,
        the same colour in every kind), with a dot at each evaluation when it has at most
        :data:`MAX_EVALUATION_DOTS` and ○ at its last; the legend below the axes. No legend when
        no run has a point (e.g. an energy figure of runs that recorded none).
    """
    check_figure_options(width_in=width_in)
    return _curves_figure([(label, m.assign(run_id=0)) for label, m in lines], title, kind, band="std", targets=(),
                          width_in=width_in, seed_lines=False, smooth=0, one_run_per_line=True)


def _curves_figure(lines: Sequence[tuple[str, pd.DataFrame]], title_text: str, kind: str, *, band: str,
                   targets: Sequence[float], width_in: float, seed_lines: bool, smooth: int,
                   one_run_per_line: bool = False) -> Figure:
    """The figure of :func:`setting_figure` and :func:`runs_figure`: one mean line per (label, metrics rows
    of its runs); a line of one run (``one_run_per_line``) is labelled as given and dotted at its evaluations."""
    x_axis, y_axis = FIGURE_KINDS[kind]
    base, small = _fonts(width_in)
    full_lw = 1.8 if width_in >= 5.5 else 1.4

    drawn = []  # (label, colour, per-seed arrays, curve)
    for i, (name, part) in enumerate(lines):
        if part.empty:
            continue
        seeds = _prepare([(g[x_axis.column].to_numpy(float) / x_axis.scale,
                           g[y_axis.column].to_numpy(float) / y_axis.scale)
                          for _, g in part.groupby("run_id", sort=True)], smooth)
        c = mean_curve(seeds, band)
        if not c.empty:
            drawn.append((name, f"C{i % 10}", seeds, c))

    if one_run_per_line:
        labels = [a for a, _, _, _ in drawn]
        dotted = [len(sd[0][0]) <= MAX_EVALUATION_DOTS for _, _, sd, _ in drawn]
        note = "one line per run; " + ("dots: its evaluations, ○ its last" if any(dotted) else "○ its last evaluation")
    else:
        labels = [f"{a} ({len(sd)} seed{'s' if len(sd) != 1 else ''})" for a, _, sd, _ in drawn]
        dotted = [False] * len(drawn)
        band_text = ("band: ± 1 std" if band == "std" else "band: min–max") if not seed_lines else "thin lines: seeds"
        note = (f"mean over the seeds running; the line thins as seeds end, ○ a seed's last evaluation; {band_text}"
                + (f"; smoothed over {smooth} evaluations" if smooth > 1 else ""))
    chars = max(20, int(width_in * 72 / (0.5 * small)))
    note_lines = textwrap.wrap(note, chars)
    ncol = _legend_columns(labels, width_in, small) if labels else 1
    legend_rows = math.ceil(len(labels) / ncol) + len(note_lines) if labels else 0
    title = textwrap.wrap(title_text, int(width_in * 72 / (0.55 * base))) or [""]
    title = title[:2] if len(title) <= 2 else [title[0], title[1] + "..."]
    height_in = width_in * _ASPECT + (legend_rows * 1.5 * small + len(title) * 1.4 * base) / 72 + 0.1

    fig = Figure(figsize=(width_in, height_in), dpi=_PNG_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    handles = []
    end_size = 3.2 if width_in < 5.5 else 4
    dot_size = 0.6 * end_size
    for (_algorithm, color, seeds, c), label, dots in zip(drawn, labels, dotted, strict=True):
        x, mean, n = c["x"].to_numpy(), c["mean"].to_numpy(), c["n"].to_numpy()
        total = len(seeds)
        if seed_lines:
            for sx, sy in seeds:
                ax.plot(sx, sy, color=color, linewidth=0.6, alpha=0.5)
        elif c["low"].notna().any():
            ax.fill_between(x, c["low"], c["high"], where=c["low"].notna().to_numpy(), color=color, alpha=0.18,
                            linewidth=0)
        # one piece per number of running seeds, each as wide as its share of the seeds
        cuts = np.flatnonzero(np.diff(n)) + 1
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(x)], strict=True):
            hi = min(b + 1, len(x))  # join to the next piece
            share = n[a] / total
            ax.plot(x[a:hi], mean[a:hi], color=color, solid_capstyle="butt",
                    linewidth=full_lw * (_MIN_LINE_SHARE + (1 - _MIN_LINE_SHARE) * share))
        if dots:
            (sx, sy), = seeds
            # not clipped: the round-0 dot sits on the left edge of the axes (x from 0)
            ax.plot(sx, sy, linestyle="none", marker="o", markersize=dot_size, color=color, zorder=2.5,
                    clip_on=False)
        ends = np.array([(sx[-1], sy[-1]) for sx, sy in seeds])
        ax.plot(ends[:, 0], ends[:, 1], linestyle="none", marker="o", markersize=end_size,
                markerfacecolor="white", markeredgecolor=color, markeredgewidth=0.9, zorder=3)
        handles.append(Line2D([], [], color=color, linewidth=full_lw, label=label,
                              marker="o" if dots else None, markersize=dot_size))

    for k, t in enumerate(targets):
        y = t / y_axis.scale
        ax.axhline(y, color="0.3", linestyle=TARGET_STYLES[k % len(TARGET_STYLES)], linewidth=0.9, zorder=1)
        ax.annotate(target_text(t), xy=(1.0, y), xycoords=("axes fraction", "data"), xytext=(3, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=small, color="0.3")
    ax.set_xlabel(x_axis.label, fontsize=base)
    ax.set_ylabel(y_axis.label, fontsize=base)
    ax.tick_params(labelsize=small)
    ax.xaxis.get_offset_text().set_fontsize(small)
    ax.yaxis.get_offset_text().set_fontsize(small)
    if drawn and min(sd[0][0] for _, _, seeds, _ in drawn for sd in seeds) >= 0:
        ax.set_xlim(left=0)
    ax.set_title("\n".join(title), fontsize=base)
    ax.grid(True, alpha=0.3)
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncol=ncol, fontsize=small, frameon=False,
                   title="\n".join(note_lines), title_fontsize=small)
    return fig


def write_png(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` as a PNG file at ``path`` (parent directories created), whatever its suffix.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=_PNG_DPI)
    return out


def save_figure(fig: Figure, stem: str | os.PathLike[str]) -> list[Path]:
    """Write ``stem.png`` and ``stem.pdf`` (PDF without a creation date, so reruns are identical).

    Returns
    -------
    list of pathlib.Path
        The two files.
    """
    stem = Path(stem)
    png, pdf = stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".pdf")
    write_png(fig, png)
    fig.savefig(pdf, format="pdf", metadata={"CreationDate": None})
    return [png, pdf]


def setting_slug(setting: str, taken: set[str] | None = None, max_len: int = 80) -> str:
    """A file-name-safe, unique directory name for a setting label.

    Parameters
    ----------
    setting : str
        Setting label, e.g. ``"partition=dirichlet(beta=0.1)"``.
    taken : set of str, optional
        Slugs already used; the result is added to it, with ``-2``, ``-3``... on a collision.
    max_len : int
        Longest slug before the suffix.

    Returns
    -------
    str
        E.g. ``"partition=dirichlet_beta=0.1"``.
    """
    slug = re.sub(r"[^A-Za-z0-9.=+-]+", "_", setting).strip("_.") or "setting"
    slug = slug[:max_len].rstrip("_.")
    if taken is None:
        return slug
    out, k = slug, 2
    while out in taken:
        out, k = f"{slug}-{k}", k + 1
    taken.add(out)
    return out
