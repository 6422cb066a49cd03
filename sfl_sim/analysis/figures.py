"""The accuracy curves of the analysis: the report's (accuracy against simulated time, cumulative uplink
bytes and client energy) and ``sfl-sim plot``'s (accuracy and cumulative uplink against simulated time).

The report draws one figure per setting with one line per algorithm (:func:`setting_figure`), and one
figure per algorithm with one line per setting (:func:`levels_figure`: every setting of the study, or
the compression levels of one), all of a kind on common axes, so "how much does this setting change
the curve?" is read off one plot or across plots of the same scale. ``sfl-sim plot`` draws every run
as a line of its own (:func:`runs_figure`) with the same code. Every figure kind
(:data:`FIGURE_KINDS`) is a pair of axes (:class:`Axis`) over the metrics columns.

* **A mean over the same seeds everywhere.** Seeds evaluate at different times (rounds of random
  duration), so each seed's curve is linearly interpolated between its evaluations onto one grid,
  and the mean is taken there, only where *every* seed has run: from the latest first to the
  earliest last evaluation. After that, each seed that runs on is drawn alone as a thin dashed
  line, so the mean never jumps when a seed ends (a survivorship jump reads as a collapse); ○ marks
  each seed's last evaluation. ``max_sim_time_s`` in the scenario makes the seeds end together.
* **A band that says what it is** (:data:`BANDS`): ± one sample std (ddof 1; the legend gives the
  seed count), a 95 % percentile bootstrap CI of the mean (:func:`sfl_sim.analysis.stats.bootstrap_mean_ci`,
  only with :data:`sfl_sim.analysis.stats.MIN_SEEDS_FOR_CI` seeds or more), or the min–max over seeds.
  ``seed_lines=True`` draws every seed as a thin line instead. Smoothing (a centred rolling mean over
  ``smooth`` evaluations of each seed) only when asked; a log x axis only when asked.
* **Paper-ready.** Accuracy in % like the tables; the legend below the axes, so it hides nothing;
  targets as horizontal lines of distinct styles, labelled inside the axes, which always include
  them; fonts of at least :data:`~sfl_sim.analysis.figure_style.MIN_FONT_PT` pt at any width. No
  caption in the image: :func:`curves_caption` is the text the report writes beside it.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter
from matplotlib.transforms import blended_transform_factory

from sfl_sim.analysis.energy_data import ENERGY_CURVE_COLUMN
from sfl_sim.analysis.figure_style import (
    DEFAULT_WIDTH_IN,
    MAX_WIDTH_IN,
    MIN_FONT_PT,
    MIN_WIDTH_IN,
    check_width,
    fonts,
    legend_below,
    legend_columns,
    line_width,
    new_figure,
    save_figure,
    setting_slug,
    write_png,
)
from sfl_sim.analysis.stats import BOOTSTRAP_SEED, DDOF, MIN_SEEDS_FOR_CI, N_BOOT, bootstrap_mean_ci
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
    "seed_tails",
    "setting_figure",
    "levels_figure",
    "runs_figure",
    "common_limits",
    "curves_caption",
    "band_text",
    "save_figure",
    "write_png",
    "setting_slug",
]

#: Band options: ``"std"`` (mean ± one sample std), ``"ci"`` (95 % percentile bootstrap CI of the mean,
#: from :data:`~sfl_sim.analysis.stats.MIN_SEEDS_FOR_CI` seeds on) or ``"minmax"`` (min to max over seeds).
BANDS = ("std", "ci", "minmax")


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
#: Line styles of the target lines, in target order (then repeated).
TARGET_STYLES: tuple = ("--", ":", "-.", (0, (6, 2, 1, 2, 1, 2)), (0, (1, 3)))

_GRID_POINTS = 256
_TAIL_STYLE = (0, (3, 2))  # a seed running on alone after the earliest last evaluation
#: The mean line's pattern of the lines past matplotlib's 10 colours: line i is colour C{i % 10} with
#: pattern i // 10 (solid, dash-dot, dotted), so no two of 30 lines look alike (our choice).
LINE_PATTERNS: tuple[Any, ...] = ("solid", (0, (6, 1.5, 1.5, 1.5)), (0, (1, 1.2)))
_TAIL_SHARE = 0.45  # its width, as a share of the mean line's


def check_figure_options(band: str = "std", width_in: float = DEFAULT_WIDTH_IN, smooth: int = 0) -> None:
    """Refuse a bad band, width or smoothing window with one line naming it and what is allowed.

    Raises
    ------
    ValueError
    """
    if band not in BANDS:
        raise ValueError(f"band must be one of {', '.join(BANDS)}; got {band!r}")
    check_width(width_in)
    if isinstance(smooth, bool) or not isinstance(smooth, (int, np.integer)) or smooth < 0:
        raise ValueError(f"smooth must be a whole number of evaluations >= 0 (0: none); got {smooth!r}")


def _prepare(runs: Sequence[tuple[np.ndarray, np.ndarray]], smooth: int,
             log_x: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
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
        if log_x:  # a log axis has no 0: the round-0 evaluation is left out
            x, y = x[x > 0], y[x > 0]
            if not x.size:
                continue
        # one value per x (the last evaluation there), as linear interpolation needs
        last = np.r_[x[1:] != x[:-1], True]
        out.append((x[last], y[last]))
    return out


def mean_curve(runs: Sequence[tuple[np.ndarray, np.ndarray]], band: str = "std", smooth: int = 0, *,
               log_x: bool = False, n_boot: int = N_BOOT, bootstrap_seed: int = BOOTSTRAP_SEED) -> pd.DataFrame:
    """Mean over seeds, linearly interpolated onto a common grid, where every seed has run.

    Parameters
    ----------
    runs : sequence of (x, y) arrays
        One per seed: x the evaluation points, y the accuracy there (non-finite points dropped).
    band : {"std", "ci", "minmax"}
        What ``low`` and ``high`` hold.
    smooth : int, optional
        Centred rolling mean over this many evaluations of each seed first (0 or 1: none).
    log_x : bool, optional
        For a log x axis: points at x <= 0 left out, the even grid even in log x.
    n_boot, bootstrap_seed : int, optional
        Resamples and generator seed of the ``"ci"`` band.

    Returns
    -------
    pandas.DataFrame
        Columns ``x``, ``mean``, ``low``, ``high``, ``n``. ``x`` spans from the latest first to the
        earliest last x of the seeds (where all of them have run): the seeds' x values there and an
        even grid of 256 points; ``n`` is the number of seeds (all running), ``mean`` their mean, each
        seed linearly interpolated between its evaluations. ``low``/``high``: mean ∓ the sample std
        (``nan`` for one seed), the 95 % percentile bootstrap CI of the mean (``nan`` below
        :data:`~sfl_sim.analysis.stats.MIN_SEEDS_FOR_CI` seeds), or the min and max over the seeds.
        Empty when no seed has a point or the seeds' spans do not overlap (:func:`seed_tails` then
        gives every seed whole).
    """
    check_figure_options(band=band, smooth=smooth)
    runs = _prepare(runs, smooth, log_x)
    cols = ["x", "mean", "low", "high", "n"]
    if not runs:
        return pd.DataFrame(columns=cols, dtype=float)
    start, stop = max(x[0] for x, _ in runs), min(x[-1] for x, _ in runs)
    if start > stop:
        return pd.DataFrame(columns=cols, dtype=float)
    even = np.geomspace(start, stop, _GRID_POINTS) if log_x else np.linspace(start, stop, _GRID_POINTS)
    inside = [x[(x >= start) & (x <= stop)] for x, _ in runs]
    grid = np.unique(np.concatenate([even, *inside]))
    values = np.vstack([np.interp(grid, x, y) for x, y in runs])
    n = len(runs)
    mean = values.mean(axis=0)
    if band == "std":
        std = values.std(axis=0, ddof=DDOF) if n > DDOF else np.full(grid.shape, np.nan)
        low, high = mean - std, mean + std
    elif band == "ci":
        low, high = bootstrap_mean_ci(values, n_boot=n_boot, seed=bootstrap_seed)
    else:
        low, high = values.min(axis=0), values.max(axis=0)
    return pd.DataFrame({"x": grid, "mean": mean, "low": low, "high": high, "n": np.full(grid.shape, n)})


def seed_tails(runs: Sequence[tuple[np.ndarray, np.ndarray]], smooth: int = 0, *,
               log_x: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each seed's curve after the earliest last evaluation (where :func:`mean_curve` stops), joined to it.

    Returns
    -------
    list of (x, y)
        For each seed that runs on past the earliest last x: its points after it, led by its
        (interpolated) value there. Every seed whole when the seeds' spans do not overlap.
    """
    runs = _prepare(runs, smooth, log_x)
    if not runs:
        return []
    start, stop = max(x[0] for x, _ in runs), min(x[-1] for x, _ in runs)
    if start > stop:
        return runs
    out = []
    for x, y in runs:
        after = x > stop
        if after.any():
            out.append((np.r_[stop, x[after]], np.r_[np.interp(stop, x, y), y[after]]))
    return out


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
    log_x: bool = False,
    n_boot: int = N_BOOT,
    bootstrap_seed: int = BOOTSTRAP_SEED,
) -> Figure:
    """Accuracy (%) of every algorithm of one setting against time, uplink bytes or client energy.

    Parameters
    ----------
    study : StudyData
    setting : str
        A label of ``study.settings``; it is the figure title.
    kind : str
        A key of :data:`FIGURE_KINDS` (the report draws those of :data:`CURVES` and :data:`EXTRA_CURVES`).
    band : {"std", "ci", "minmax"}
        The shaded band around each mean line (see :func:`mean_curve`).
    targets : sequence of float
        Accuracy targets (fractions) drawn as horizontal lines (styles :data:`TARGET_STYLES`),
        each labelled inside the axes at its left end, under the markers; the y axis includes them.
    algorithms : sequence of str, optional
        Line order (default ``study.algorithms``).
    width_in : float, optional
        Figure width in inches (:data:`MIN_WIDTH_IN` to :data:`MAX_WIDTH_IN`); the height follows,
        fonts are 8/7 pt below 5.5 in and 10/9 pt above.
    seed_lines : bool, optional
        Also draw every seed as a thin line (then no band).
    smooth : int, optional
        Rolling mean over this many evaluations of each seed (0: none).
    log_x : bool, optional
        A log x axis (the round-0 evaluation at 0 is left out).
    n_boot, bootstrap_seed : int, optional
        Of the ``"ci"`` band.

    Returns
    -------
    matplotlib.figure.Figure
        One mean line per algorithm with runs in this setting, labelled ``"<algorithm> (n seeds)"``
        in a legend below the axes (a figure legend: ``fig.legends[0]``); no caption
        (:func:`curves_caption`).
    """
    check_figure_options(band, width_in, smooth)
    m = study.metrics.loc[study.metrics["setting"] == setting]
    lines = [(algorithm, m.loc[m["algorithm"] == algorithm]) for algorithm in (algorithms or study.algorithms)]
    return _curves_figure(lines, setting, kind, band=band, targets=targets, width_in=width_in,
                          seed_lines=seed_lines, smooth=smooth, log_x=log_x, n_boot=n_boot,
                          bootstrap_seed=bootstrap_seed)


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
    log_x: bool = False,
    n_boot: int = N_BOOT,
    bootstrap_seed: int = BOOTSTRAP_SEED,
) -> Figure:
    """Accuracy (%) of one algorithm against uplink bytes, time or energy, one line per setting given
    (every setting of a study, or its compression levels: the settings that differ only in
    ``compression.*``).

    Parameters
    ----------
    study : StudyData
    algorithm : str
    levels : sequence of (setting, line label)
        The settings drawn, in order, each with the label of its line.
    title : str
        The figure title.
    kind, band, targets, width_in, seed_lines, smooth, log_x, n_boot, bootstrap_seed
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
                          seed_lines=seed_lines, smooth=smooth, log_x=log_x, n_boot=n_boot,
                          bootstrap_seed=bootstrap_seed)


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
        :data:`MAX_EVALUATION_DOTS` and ○ at its last; the legend below the axes, titled with what
        the marks mean (``sfl-sim plot`` writes no caption beside it). No legend when no run has a
        point (e.g. an energy figure of runs that recorded none).
    """
    check_figure_options(width_in=width_in)
    return _curves_figure([(label, m.assign(run_id=0)) for label, m in lines], title, kind, band="std", targets=(),
                          width_in=width_in, seed_lines=False, smooth=0, one_run_per_line=True)


def _curves_figure(lines: Sequence[tuple[str, pd.DataFrame]], title_text: str, kind: str, *, band: str,
                   targets: Sequence[float], width_in: float, seed_lines: bool, smooth: int,
                   one_run_per_line: bool = False, log_x: bool = False, n_boot: int = N_BOOT,
                   bootstrap_seed: int = BOOTSTRAP_SEED) -> Figure:
    """The figure of :func:`setting_figure`, :func:`levels_figure` and :func:`runs_figure`: one mean line per
    (label, metrics rows of its runs); a line of one run (``one_run_per_line``) is labelled as given and
    dotted at its evaluations."""
    x_axis, y_axis = FIGURE_KINDS[kind]
    base, small = fonts(width_in)
    full_lw = line_width(width_in)

    drawn = []  # (label, colour, per-seed arrays, mean curve, tails)
    for i, (name, part) in enumerate(lines):
        if part.empty:
            continue
        seeds = [(g[x_axis.column].to_numpy(float) / x_axis.scale, g[y_axis.column].to_numpy(float) / y_axis.scale)
                 for _, g in part.groupby("run_id", sort=True)]
        prepared = _prepare(seeds, smooth, log_x)
        if not prepared:
            continue
        c = mean_curve(seeds, band, smooth, log_x=log_x, n_boot=n_boot, bootstrap_seed=bootstrap_seed)
        drawn.append((name, (f"C{i % 10}", LINE_PATTERNS[(i // 10) % len(LINE_PATTERNS)]), prepared, c,
                      seed_tails(seeds, smooth, log_x=log_x)))

    if one_run_per_line:
        labels = [a for a, *_ in drawn]
        dotted = [len(sd[0][0]) <= MAX_EVALUATION_DOTS for _, _, sd, _, _ in drawn]
        note = "one line per run; " + ("dots: its evaluations, ○ its last" if any(dotted) else "○ its last evaluation")
        chars = max(20, int(width_in * 72 / (0.5 * small)))
        note_lines = textwrap.wrap(note, chars)
    else:
        labels = [f"{a} ({len(sd)} seed{'s' if len(sd) != 1 else ''})" for a, _, sd, _, _ in drawn]
        dotted = [False] * len(drawn)
        note_lines = []
    ncol = legend_columns(labels, width_in, small)
    legend_rows = math.ceil(len(labels) / ncol) + len(note_lines) if labels else 0
    title = textwrap.wrap(title_text, int(width_in * 72 / (0.55 * base))) or [""]
    title = title[:2] if len(title) <= 2 else [title[0], title[1] + "..."]

    fig = new_figure(width_in, legend_rows, len(title))
    ax = fig.add_subplot()
    handles = []
    end_size = 3.2 if width_in < 5.5 else 4
    dot_size = 0.6 * end_size
    for (_name, (color, pattern), seeds, c, tails), label, dots in zip(drawn, labels, dotted, strict=True):
        if seed_lines:
            for sx, sy in seeds:
                ax.plot(sx, sy, color=color, linewidth=0.6, alpha=0.5)
        elif c["low"].notna().any():
            ax.fill_between(c["x"], c["low"], c["high"], where=c["low"].notna().to_numpy(), color=color, alpha=0.18,
                            linewidth=0)
        if not c.empty:
            ax.plot(c["x"], c["mean"], color=color, linewidth=full_lw, linestyle=pattern, solid_capstyle="butt")
        for tx, ty in tails:
            ax.plot(tx, ty, color=color, linewidth=_TAIL_SHARE * full_lw, linestyle=_TAIL_STYLE)
        if dots:
            (sx, sy), = seeds
            # not clipped: the round-0 dot sits on the left edge of the axes (x from 0)
            ax.plot(sx, sy, linestyle="none", marker="o", markersize=dot_size, color=color, zorder=2.5,
                    clip_on=False)
        ends = np.array([(sx[-1], sy[-1]) for sx, sy in seeds])
        ax.plot(ends[:, 0], ends[:, 1], linestyle="none", marker="o", markersize=end_size,
                markerfacecolor="white", markeredgecolor=color, markeredgewidth=0.9, zorder=3)
        handles.append(Line2D([], [], color=color, linewidth=full_lw, linestyle=pattern, label=label,
                              marker="o" if dots else None, markersize=dot_size))

    if log_x:
        ax.set_xscale("log")
        # 1-2-5 ticks in plain numbers: matplotlib's default labels minor log ticks when the axis
        # spans less than a decade, at its default size and overlapping
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    elif drawn and min(float(sx[0]) for _, _, seeds, _, _ in drawn for sx, _ in seeds) >= 0:
        ax.set_xlim(left=0)
    _draw_targets(ax, targets, y_axis, small)
    ax.set_xlabel(x_axis.label, fontsize=base)
    ax.set_ylabel(y_axis.label, fontsize=base)
    ax.tick_params(labelsize=small)
    ax.xaxis.get_offset_text().set_fontsize(small)
    ax.yaxis.get_offset_text().set_fontsize(small)
    ax.set_title("\n".join(title), fontsize=base)
    ax.grid(True, alpha=0.3)
    legend_below(fig, handles, width_in, "\n".join(note_lines) or None)
    return fig


#: Target labels above the curves and bands (2) but under the end markers (3).
_TARGET_LABEL_ZORDER = 2.6


def _draw_targets(ax, targets: Sequence[float], y_axis: Axis, font_pt: float) -> None:
    """Each target as a horizontal line, labelled inside the axes at its left end (where the curves are
    still low: at the right end the label covered the last evaluations' markers), under the markers;
    the y range widened to hold every target clear of the frame."""
    if not targets:
        return
    ys = [t / y_axis.scale for t in targets]
    lo, hi = ax.get_ylim()
    pad = 0.05 * (max(hi, *ys) - min(lo, *ys))
    ax.set_ylim(min(lo, min(ys) - pad), max(hi, max(ys) + pad))
    label_at = blended_transform_factory(ax.transAxes, ax.transData)
    for k, (t, y) in enumerate(zip(targets, ys, strict=True)):
        ax.axhline(y, color="0.3", linestyle=TARGET_STYLES[k % len(TARGET_STYLES)], linewidth=0.9, zorder=1)
        ax.text(0.01, y, target_text(t), transform=label_at, ha="left", va="bottom", fontsize=font_pt,
                color="0.3", zorder=_TARGET_LABEL_ZORDER,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 0.5})


def common_limits(figures: Sequence[Figure]) -> None:
    """Put every figure's (first) axes on the union of their x and y ranges: figures of one kind
    compared side by side read on the same scale."""
    axes = [f.axes[0] for f in figures if f.axes]
    if len(axes) < 2:
        return
    xs = np.array([a.get_xlim() for a in axes])
    ys = np.array([a.get_ylim() for a in axes])
    for a in axes:
        a.set_xlim(xs[:, 0].min(), xs[:, 1].max())
        a.set_ylim(ys[:, 0].min(), ys[:, 1].max())


def band_text(band: str, *, seed_lines: bool = False, n_boot: int = N_BOOT) -> str:
    """What the band around a mean line is, in words."""
    if seed_lines:
        return "every seed is also drawn as a thin line (no band)"
    if band == "std":
        return f"band: ± 1 sample standard deviation over the seeds (ddof = {DDOF}; none for one seed)"
    if band == "ci":
        return (f"band: 95 % percentile bootstrap confidence interval of the mean ({n_boot} resamples of the seeds "
                f"with replacement), drawn only for {MIN_SEEDS_FOR_CI} seeds or more (with fewer, the percentile "
                "interval cannot cover 95 %)")
    return "band: minimum to maximum over the seeds"


def curves_caption(kind: str, *, per: str, band: str = "std", seed_lines: bool = False, smooth: int = 0,
                   log_x: bool = False, targets: Sequence[float] = (), common_axes: bool = False,
                   n_boot: int = N_BOOT) -> str:
    """The caption the report writes beside a figure of :func:`setting_figure` or :func:`levels_figure`.

    Parameters
    ----------
    kind : str
        A key of :data:`FIGURE_KINDS`.
    per : str
        What one line is (``"algorithm"``, ``"setting"``, ``"compression level"``).
    band, seed_lines, smooth, log_x, targets, n_boot
        As the figure was drawn.
    common_axes : bool
        Whether every figure of this kind shares its axes' ranges.

    Returns
    -------
    str
        One paragraph: the axes, what a line, the dashed tails, ○ and the band are, and the options.
    """
    x_axis, y_axis = FIGURE_KINDS[kind]
    y_what, x_what = y_axis.label.rsplit(" (", 1)[0], x_axis.label
    parts = [
        f"{y_what.capitalize()} (%) against {x_what}, one line per {per} (its number of seeds in the legend).",
        "A line is the mean over its seeds, each seed linearly interpolated between its evaluations, drawn where "
        "every seed has run (from the latest first to the earliest last evaluation); after that each seed that runs "
        "on is drawn alone as a thin dashed line (no mean over fewer seeds); ○ marks each seed's last evaluation.",
        band_text(band, seed_lines=seed_lines, n_boot=n_boot).capitalize() + ".",
    ]
    if smooth > 1:
        parts.append(f"Each seed smoothed by a centred rolling mean over {smooth} evaluations.")
    if targets:
        parts.append(f"Horizontal lines: the targets {', '.join(target_text(t) for t in targets)}.")
    if log_x:
        parts.append("Log x axis (the evaluation of the initial model, at 0, is not shown).")
    if common_axes:
        parts.append("All figures of this kind share their axes' ranges.")
    return " ".join(parts)
