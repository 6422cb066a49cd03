"""A metric against a numeric setting field (e.g. time to a target against the uplink bandwidth), one
line per algorithm, with an interval over seeds at each value: the figure a parameter sweep needs.

A setting field is *numeric* when every setting's value of it reads as a number (:func:`numeric_fields`).
Where the study has other setting fields too, one figure per combination of their values — or, for
one of them named as the *line field* (``sfl-sim report --lines FIELD``), one line per (algorithm,
value of that field) within a figure.  The x axis is in the field's unit, read from its name's suffix
(``_hz`` in MHz, ...: :func:`sfl_sim.analysis.units.field_axis`), ticks at the swept values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FormatStrFormatter, NullFormatter, NullLocator

from sfl_sim.analysis.figure_style import (
    DEFAULT_WIDTH_IN,
    check_width,
    fonts,
    legend_below,
    legend_columns,
    line_width,
    new_figure,
)
from sfl_sim.analysis.stats import BOOTSTRAP_SEED, MIN_SEEDS_FOR_CI, N_BOOT, bootstrap_mean_ci
from sfl_sim.analysis.study_data import StudyData, short_field_names
from sfl_sim.analysis.units import field_axis

__all__ = ["numeric_fields", "sweep_groups", "sweep_figure", "sweep_caption"]


#: Most swept values to put a tick at each (more: matplotlib's ticks).
_MAX_VALUE_TICKS = 8
#: Marker of the lines past the tenth colour (so that lines 1 and 11 differ).
_MARKERS = ("o", "s", "^", "D")


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if np.isfinite(value) else None


def numeric_fields(study: StudyData) -> list[str]:
    """The setting fields whose value in every setting is a number, with at least two values."""
    out = []
    for f in study.setting_fields:
        values = [_number(study.setting_values(s)[f]) for s in study.settings]
        if all(v is not None for v in values) and len(set(values)) > 1:
            out.append(f)
    return out


def sweep_groups(study: StudyData, field: str,
                 line_field: str | None = None) -> list[tuple[str, list[tuple[float, str]]]]:
    """The settings along ``field``, grouped by the values of the other setting fields.

    Parameters
    ----------
    study : StudyData
    field : str
        The numeric setting field of the x axis.
    line_field : str, optional
        A setting field whose values become lines of one figure rather than figures of their own:
        it does not split the groups.

    Returns
    -------
    list of (rest, points)
        ``rest``: the other fields (but ``line_field``) as ``name=value`` text ("" when there are
        none); ``points``: (the field's value, setting) sorted by value. Only groups of two or more
        values.
    """
    short = short_field_names(study.setting_fields)
    groups: dict[str, list[tuple[float, str]]] = {}
    for s in study.settings:
        values = study.setting_values(s)
        rest = ", ".join(f"{short[f]}={values[f]}" for f in study.setting_fields if f not in (field, line_field))
        groups.setdefault(rest, []).append((float(values[field]), s))
    return [(rest, sorted(points)) for rest, points in groups.items() if len({v for v, _ in points}) > 1]


def sweep_figure(per_run: pd.DataFrame, value_column: str, y_label: str, field: str,
                 points: Sequence[tuple[float, str]], algorithms: Sequence[str], *, title: str,
                 width_in: float = DEFAULT_WIDTH_IN, log_x: bool = False, n_boot: int = N_BOOT,
                 bootstrap_seed: int = BOOTSTRAP_SEED, line_of: Mapping[str, str] | None = None) -> Figure:
    """A per-run metric against a numeric setting field, one line per algorithm.

    Parameters
    ----------
    per_run : pandas.DataFrame
        One row per run: ``setting``, ``algorithm``, and ``value_column`` (``nan``: the run has no
        value, e.g. did not reach the target).
    value_column, y_label : str
        The metric and its axis label.
    field : str
        The setting field on the x axis (its dotted name and unit label the axis).
    points : sequence of (float, str)
        (x value, setting) along the axis (:func:`sweep_groups`).
    line_of : mapping, optional
        Setting -> the text of its line field's value (``"scheduler=pf"``): one line per (algorithm,
        that text) instead of per algorithm.
    algorithms : sequence of str
        Line order.
    title : str
    width_in : float, optional
    log_x : bool, optional
    n_boot, bootstrap_seed : int, optional
        Of the bootstrap CI.

    Returns
    -------
    matplotlib.figure.Figure
        Per algorithm, the mean over the seeds with a value at each x (markers and a line), with error
        bars: the 95 % bootstrap CI of the mean from :data:`~sfl_sim.analysis.stats.MIN_SEEDS_FOR_CI`
        seeds, else the min–max over the seeds; the legend gives the seed counts (k/n with a value).
    """
    check_width(width_in)
    base, small = fonts(width_in)
    x_label, scale = field_axis(field, [x for x, _ in points])
    lines = []
    line_values = list(dict.fromkeys(line_of[s] for _, s in points)) if line_of else [None]
    series = [(a, v) for a in algorithms for v in line_values]
    for j, (a, v_line) in enumerate(series):
        xs, means, lows, highs, counts = [], [], [], [], []
        for x, s in points:
            if line_of and line_of[s] != v_line:
                continue
            rows = per_run.loc[(per_run["setting"] == s) & (per_run["algorithm"] == a), value_column]
            v = rows.to_numpy(dtype=float)
            got = v[np.isfinite(v)]
            counts.append(f"{got.size}/{v.size}")
            if not got.size:
                continue
            if got.size >= MIN_SEEDS_FOR_CI:
                low, high = bootstrap_mean_ci(got[:, None], n_boot=n_boot, seed=bootstrap_seed)
                lo, hi = float(low[0]), float(high[0])
            else:
                lo, hi = float(got.min()), float(got.max())
            xs.append(x)
            means.append(float(got.mean()))
            lows.append(lo)
            highs.append(hi)
        if xs:
            name = a if v_line is None else f"{a}, {v_line}"
            lines.append((f"{name} ({', '.join(counts)} seeds)", f"C{j % 10}", np.array(xs), np.array(means),
                          np.array(lows), np.array(highs), _MARKERS[j // 10 % len(_MARKERS)]))
    labels = [lab for lab, *_ in lines]
    ncol = legend_columns(labels, width_in, small)
    fig = new_figure(width_in, -(-len(labels) // ncol) if labels else 0)
    ax = fig.add_subplot()
    handles = []
    for label, color, xs_, mean_, lo_, hi_, marker in lines:
        ax.errorbar(xs_ / scale, mean_, yerr=np.vstack([mean_ - lo_, hi_ - mean_]), color=color, marker=marker,
                    markersize=4, linewidth=line_width(width_in), capsize=3)
        handles.append(Line2D([], [], color=color, marker=marker, markersize=4, linewidth=line_width(width_in),
                              label=label))
    if log_x:
        ax.set_xscale("log")
    values = sorted({x / scale for x, _ in points})
    if len(values) <= _MAX_VALUE_TICKS:  # ticks at the swept values, as plain numbers (no "1e7" offset)
        ax.set_xticks(values)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.set_xlabel(x_label, fontsize=base)
    ax.set_ylabel(y_label, fontsize=base)
    ax.set_title(title, fontsize=base)
    ax.tick_params(labelsize=small)
    ax.grid(True, alpha=0.3)
    legend_below(fig, handles, width_in)
    return fig


def sweep_caption(what: str, field: str, n_boot: int = N_BOOT) -> str:
    """The caption of :func:`sweep_figure` of the metric ``what`` along ``field``."""
    return (f"{what[0].upper()}{what[1:]} against {field}, one line per algorithm: the mean over the seeds that have a "
            f"value at each {field} (k/n in the legend, per value from left to right), error bars the 95 % "
            f"percentile bootstrap CI of that mean ({n_boot} resamples) from {MIN_SEEDS_FOR_CI} seeds on, else the "
            "minimum to maximum over the seeds.")
