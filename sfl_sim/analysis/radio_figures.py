"""The report's figures of what the radio did and where the time went, from the runs' ``clients.csv``
and ``energy.csv`` (:mod:`sfl_sim.analysis.radio_data`):

* :func:`breakdown_figure`: a stacked bar per (setting, algorithm) of the mean client span in a round,
  split into its parts (computing, uplink air time, HARQ waits, downlink, waiting for the server, for
  the others, for anyone to come online);
* :func:`cdf_figure`: the empirical CDF over every client-round of a ``clients.csv`` column (SINR,
  uplink rate), one line per setting;
* :func:`energy_figure`: the empirical CDF over clients of each client's energy over its run, one
  line per (setting, algorithm), Jain's fairness index in the legend.

No caption is drawn into an image: each function's ``*_caption`` partner is the text the report
writes beside it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

from sfl_sim.analysis.figure_style import (
    DEFAULT_WIDTH_IN,
    check_width,
    fonts,
    legend_below,
    legend_columns,
    line_width,
    new_figure,
    text_boxes_overlap,
)
from sfl_sim.analysis.radio_data import UPLINK_RATE_GOT
from sfl_sim.runs.rundir.schema import CLIENT_TIME_COLUMNS

__all__ = ["TIME_PART_LABELS", "CDF_COLUMNS", "breakdown_figure", "breakdown_caption", "cdf_figure", "cdf_caption",
           "energy_figure", "energy_caption"]

#: The legend text of each part of a client's span (:data:`~sfl_sim.runs.rundir.schema.CLIENT_TIME_COLUMNS`).
TIME_PART_LABELS: dict[str, str] = {
    "compute_s": "computing",
    "uplink_air_s": "uplink air time",
    "harq_wait_s": "HARQ feedback waits",
    "downlink_s": "downlink",
    "wait_server_s": "waiting for the server",
    "wait_others_s": "waiting for the other clients",
    "availability_wait_s": "waiting for anyone online",
}

#: ``clients.csv`` columns drawn as CDFs: column -> (axis label, scale dividing the column, log x).
CDF_COLUMNS: dict[str, tuple[str, float, bool]] = {
    "sinr_db": ("uplink SINR (dB)", 1.0, False),
    "uplink_rate_bps": ("uplink rate (Mbit/s)", 1e6, True),
    UPLINK_RATE_GOT: ("uplink rate got (Mbit/s)", 1e6, True),
    "downlink_rate_bps": ("downlink rate (Mbit/s)", 1e6, True),
}


#: Line style of each setting of :func:`energy_figure`, then (past four settings) a marker on it too.
_SETTING_STYLES = ("-", "--", ":", "-.")
_SETTING_MARKERS = ("", "o", "s", "^", "v", "D", "x", "+")


def _axes_text(ax, width_in: float, xlabel: str, ylabel: str, title: str) -> None:
    base, small = fonts(width_in)
    ax.set_xlabel(xlabel, fontsize=base)
    ax.set_ylabel(ylabel, fontsize=base)
    ax.set_title(title, fontsize=base)
    ax.tick_params(labelsize=small)
    ax.grid(True, alpha=0.3)


def breakdown_figure(table: pd.DataFrame, settings: Sequence[str], algorithms: Sequence[str], *,
                     setting_names: dict[str, str] | None = None, width_in: float = DEFAULT_WIDTH_IN) -> Figure:
    """Stacked bars of where a client's time in a round went, one bar per (setting, algorithm).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`sfl_sim.analysis.radio_data.time_breakdown`.
    settings, algorithms : sequence of str
        Bar order: settings in groups, algorithms within a group.
    setting_names : dict, optional
        Setting label -> the text under its group (default the label).
    width_in : float, optional

    Returns
    -------
    matplotlib.figure.Figure
        One bar per row of ``table``, its segments the parts of :data:`TIME_PART_LABELS` in that order
        (a part that is 0 everywhere is left out of the legend); the y axis in seconds.
    """
    check_width(width_in)
    _, small = fonts(width_in)
    names = setting_names or {}
    index = {(r.setting, r.algorithm): r for r in table.itertuples(index=False)}
    bars = [(s, a) for s in settings for a in algorithms if (s, a) in index]
    parts = [p for p in CLIENT_TIME_COLUMNS if any(getattr(index[b], p) > 0 for b in bars)]
    labels = [TIME_PART_LABELS[p] for p in parts]
    ncol = legend_columns(labels, width_in, small)
    fig = new_figure(width_in, -(-len(labels) // ncol) if labels else 0)
    ax = fig.add_subplot()
    x, ticks, centres, group_names, gap = [], [], [], [], 0.6
    pos = 0.0
    for s in settings:
        group = [a for a in algorithms if (s, a) in index]
        if not group:
            continue
        centres.append(pos + (len(group) - 1) / 2)
        group_names.append(names.get(s, s))
        for a in group:
            x.append(pos)
            ticks.append(a)
            pos += 1.0
        pos += gap
    bottom = np.zeros(len(bars))
    for k, p in enumerate(parts):
        h = np.array([getattr(index[b], p) for b in bars], dtype=float)
        ax.bar(x, h, bottom=bottom, width=0.8, color=f"C{k}", label=TIME_PART_LABELS[p])
        bottom += h
    ax.set_xticks(x, ticks, fontsize=small)
    _axes_text(ax, width_in, "", "mean client time per round (s)", "Where a client's time in a round went")
    ax.grid(True, axis="y", alpha=0.3)
    ax.grid(False, axis="x")
    legend_below(fig, [Patch(color=f"C{k}", label=TIME_PART_LABELS[p]) for k, p in enumerate(parts)], width_in)
    _fit_bar_labels(fig, ax, group_names, centres, pos - gap, small)
    return fig


def _fit_bar_labels(fig: Figure, ax, group_names: Sequence[str], centres: Sequence[float], span: float,
                    font_pt: float) -> None:
    """Make the bars' labels readable at any width: the algorithms' turned upright where they would
    overlap side by side, and each setting once under its group, below them, wrapped to the group's
    width (narrower until no two settings overlap)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg: new_figure's canvas
    if text_boxes_overlap(ax.get_xticklabels(), renderer):
        ax.tick_params(axis="x", which="major", labelrotation=90)
        fig.canvas.draw()
    if len(group_names) < 2:
        return
    ax.xaxis.remove_overlapping_locs = False  # a group of an odd count of bars centres on a bar's tick
    # below the lowest algorithm label (points from the axes' bottom), whether it lies or stands
    bottom_px = min(t.get_window_extent(renderer).y0 for t in ax.get_xticklabels())
    below_pt = (ax.get_window_extent(renderer).y0 - bottom_px) * 72 / fig.dpi
    ax.tick_params(axis="x", which="minor", length=0, pad=below_pt + 0.4 * font_pt)
    bar_pt = ax.get_window_extent(renderer).width * 72 / fig.dpi / max(span, 1.0)
    chars = max(6, int(bar_pt * (span + 0.6) / len(group_names) / (0.6 * font_pt)))
    while True:
        ax.set_xticks(centres, ["\n".join(textwrap.wrap(n, chars)) for n in group_names], minor=True,
                      fontsize=font_pt)
        fig.canvas.draw()
        if chars <= 6 or not text_boxes_overlap(ax.get_xticklabels(minor=True), renderer):
            return
        chars = max(6, int(chars * 0.8))


def breakdown_caption(table: pd.DataFrame) -> str:
    """The caption of :func:`breakdown_figure`."""
    seeds = sorted(set(table["n_runs"].astype(int))) if not table.empty else [0]
    n = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    return ("Where a client's time in a round went (clients.csv): each bar is the mean over the client-rounds of a "
            f"run (kept and dropped clients alike), then over its {n} seeds, of each part of a client's span in the "
            "round; the parts add up to the mean span (a dropped client's span ends when it leaves, so drops "
            "shorten it).")


def cdf_figure(clients: pd.DataFrame, column: str, settings: Sequence[str], *,
               setting_names: dict[str, str] | None = None, width_in: float = DEFAULT_WIDTH_IN) -> Figure:
    """The empirical CDF of one ``clients.csv`` column over every client-round, one line per setting.

    Parameters
    ----------
    clients : pandas.DataFrame
        :attr:`StudyData.clients <sfl_sim.analysis.study_data.StudyData.clients>`.
    column : str
        A key of :data:`CDF_COLUMNS`.
    settings : sequence of str
        Line order.
    setting_names : dict, optional
        Setting label -> legend text (default the label).
    width_in : float, optional

    Returns
    -------
    matplotlib.figure.Figure
        One step line per setting with finite values (all algorithms and seeds pooled), labelled
        ``"<setting> (n client-rounds)"``; a log x axis for rates.
    """
    check_width(width_in)
    axis_label, scale, log_x = CDF_COLUMNS[column]
    _, small = fonts(width_in)
    names = setting_names or {}
    lines = []
    for s in settings:
        v = clients.loc[clients["setting"] == s, column].to_numpy(dtype=float) / scale
        v = np.sort(v[np.isfinite(v) & ((v > 0) if log_x else True)])
        if v.size:
            lines.append((f"{names.get(s, s)} ({v.size} client-rounds)", v))
    labels = [lab for lab, _ in lines]
    ncol = legend_columns(labels, width_in, small)
    fig = new_figure(width_in, -(-len(labels) // ncol) if labels else 0)
    ax = fig.add_subplot()
    handles = []
    for k, (label, v) in enumerate(lines):
        p = np.arange(1, v.size + 1) / v.size
        (h,) = ax.step(np.r_[v[0], v], np.r_[0.0, p], where="post", color=f"C{k}", linewidth=line_width(width_in),
                       label=label)
        handles.append(h)
    if log_x and lines:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # as in the accuracy figures
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(0, 1)
    _axes_text(ax, width_in, axis_label, "fraction of client-rounds", f"CDF of the {axis_label.split(' (')[0]}")
    legend_below(fig, handles, width_in)
    return fig


def cdf_caption(column: str) -> str:
    """The caption of :func:`cdf_figure` for ``column``."""
    what = CDF_COLUMNS[column][0].split(" (")[0]
    if column == UPLINK_RATE_GOT:
        return ("Empirical CDF of the uplink rate each client's upload got, over every client-round of a setting "
                "(clients.csv; all algorithms and seeds pooled, kept and dropped clients alike): under a dynamic "
                "scheduler the scheduled rate (uplink_scheduled_rate_bps: the bits sent on its grants over its "
                "time in the band), under the static split the rate on its share at its last upload attempt's "
                "fading draw (uplink_rate_bps). Log x axis.")
    return (f"Empirical CDF of the {what} over every client-round of a setting (clients.csv; all algorithms and "
            "seeds pooled, kept and dropped clients alike): the value as the client's uplink stood at the round's "
            "end (its last upload attempt's fading draw)." + (" Log x axis." if CDF_COLUMNS[column][2] else ""))


def energy_figure(energy: pd.DataFrame, fairness: pd.DataFrame, settings: Sequence[str], algorithms: Sequence[str],
                  *, setting_names: dict[str, str] | None = None, width_in: float = DEFAULT_WIDTH_IN) -> Figure:
    """The empirical CDF over clients of each client's energy over its run, per (setting, algorithm).

    Parameters
    ----------
    energy : pandas.DataFrame
        :func:`sfl_sim.analysis.radio_data.client_energy`.
    fairness : pandas.DataFrame
        :func:`sfl_sim.analysis.radio_data.energy_fairness` of it.
    settings, algorithms : sequence of str
        Line order; colour per algorithm, line style per setting.
    setting_names : dict, optional
    width_in : float, optional

    Returns
    -------
    matplotlib.figure.Figure
        One step line per (setting, algorithm) with energy rows (all seeds' clients pooled), labelled
        with Jain's fairness index (mean over seeds): ``"<algorithm>, <setting> (Jain's index 0.93)"``;
        colour per algorithm, per setting its own pair of line style and marker (four styles, then
        markers on them), so that no two lines look alike.
    """
    check_width(width_in)
    _, small = fonts(width_in)
    names = setting_names or {}
    jain = {(r.setting, r.algorithm): r.jain_mean for r in fairness.itertuples(index=False)}
    lines = []
    for i, s in enumerate(settings):
        for j, a in enumerate(algorithms):
            v = np.sort(energy.loc[(energy["setting"] == s) & (energy["algorithm"] == a), "energy_j"].to_numpy(float))
            if v.size:
                where = f", {names.get(s, s)}" if len(settings) > 1 else ""
                lines.append((f"{a}{where} (Jain's index {jain.get((s, a), float('nan')):.2f})", v,
                              f"C{j % 10}", i))
    labels = [lab for lab, *_ in lines]
    ncol = legend_columns(labels, width_in, small)
    fig = new_figure(width_in, -(-len(labels) // ncol) if labels else 0)
    ax = fig.add_subplot()
    handles = []
    for label, v, color, i in lines:
        p = np.arange(1, v.size + 1) / v.size
        style, marker = _SETTING_STYLES[i % len(_SETTING_STYLES)], _SETTING_MARKERS[i // len(_SETTING_STYLES)
                                                                                   % len(_SETTING_MARKERS)]
        (h,) = ax.step(np.r_[v[0], v], np.r_[0.0, p], where="post", color=color, linestyle=style,
                       linewidth=line_width(width_in), label=label, marker=marker, markersize=3.5,
                       markevery=max(1, (v.size + 1) // 5), markerfacecolor="white")
        handles.append(h)
    ax.set_ylim(0, 1)
    _axes_text(ax, width_in, "client energy over the run (J)", "fraction of clients", "Energy per client")
    legend_below(fig, handles, width_in)
    return fig


def energy_caption() -> str:
    """The caption of :func:`energy_figure`."""
    return ("Empirical CDF over clients of the energy each client spent over its run (energy.csv total_j summed per "
            "client; the clients of every seed pooled; clients never selected are not charged and not counted). "
            "Jain's index (in the legend, no unit): (Σx)²/(n Σx²) of the clients' energy in a run, mean over seeds: "
            "1 when every "
            "client spent the same, 1/n when one client spent it all.")
