"""Report figures: accuracy against simulated time and against cumulative uplink bytes.

One figure per setting, one line per algorithm: the mean over seeds on a common grid with a
shaded band (± one std, ddof 1, or min–max). The grid is the union of the seeds' evaluation
points (x values), from the latest first evaluation to the earliest last evaluation among the
seeds, so every plotted point averages *all* seeds; a seed's value at x is its last evaluation at
or before x (step-wise, "last evaluation" interpolation — the accuracy of the model one would
hold at that time), and lines are drawn as steps accordingly.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot state, no display).
"""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .stats import DDOF
from .study_data import StudyData
from .tables import target_text

__all__ = [
    "BANDS",
    "CURVES",
    "mean_curve",
    "setting_figure",
    "save_figure",
    "setting_slug",
]

#: Band options: ``"std"`` (mean ± one sample std) or ``"minmax"`` (min to max over seeds).
BANDS = ("std", "minmax")

#: Figure kinds: file stem -> (x column, x scale, x label).
CURVES: dict[str, tuple[str, float, str]] = {
    "accuracy_vs_time": ("sim_time_s", 1.0, "simulated time (s)"),
    "accuracy_vs_uplink": ("uplink_bytes", 1e6, "cumulative uplink (MB)"),
}

_DPI = 120
_FIGSIZE_IN = (6.4, 4.0)


def mean_curve(runs: Sequence[tuple[np.ndarray, np.ndarray]], band: str = "std") -> pd.DataFrame:
    """Mean over seeds of step-wise curves on their common grid.

    Parameters
    ----------
    runs : sequence of (x, y) arrays
        One per seed, x non-decreasing (evaluation order), y the accuracy there.
    band : {"std", "minmax"}
        What ``low`` and ``high`` hold.

    Returns
    -------
    pandas.DataFrame
        Columns ``x``, ``mean``, ``low``, ``high``, ``n`` (seeds averaged, the same on every row).
        ``x`` is the union of the seeds' x values within [max of first x, min of last x]; each
        seed contributes its last y at x' <= x. With ``band="std"`` and one seed, ``low`` and
        ``high`` are ``nan``. Empty when no seed has a point.
    """
    if band not in BANDS:
        raise ValueError(f"band must be one of {', '.join(BANDS)}; got {band!r}")
    runs = [(np.asarray(x, float), np.asarray(y, float)) for x, y in runs]
    runs = [(x[np.isfinite(x)], y[np.isfinite(x)]) for x, y in runs]
    runs = [(x, y) for x, y in runs if x.size]
    if not runs:
        return pd.DataFrame(columns=["x", "mean", "low", "high", "n"], dtype=float)
    start = max(x[0] for x, _ in runs)
    stop = min(x[-1] for x, _ in runs)
    grid = np.unique(np.concatenate([x for x, _ in runs]))
    grid = grid[(grid >= start) & (grid <= stop)]
    values = np.vstack([y[np.searchsorted(x, grid, side="right") - 1] for x, y in runs])
    mean = values.mean(axis=0)
    if band == "std":
        if len(runs) > 1:
            std = values.std(axis=0, ddof=DDOF)
            low, high = mean - std, mean + std
        else:
            low = high = np.full_like(mean, np.nan)
    else:
        low, high = values.min(axis=0), values.max(axis=0)
    return pd.DataFrame({"x": grid, "mean": mean, "low": low, "high": high, "n": len(runs)})


def setting_figure(
    study: StudyData,
    setting: str,
    kind: str = "accuracy_vs_time",
    *,
    band: str = "std",
    targets: Sequence[float] = (),
    algorithms: Sequence[str] | None = None,
) -> Figure:
    """Accuracy of every algorithm of one setting against time or uplink bytes.

    Parameters
    ----------
    study : StudyData
    setting : str
        A label of ``study.settings``; it is the figure title.
    kind : str
        A key of :data:`CURVES`.
    band : {"std", "minmax"}
        The shaded band around each mean line.
    targets : sequence of float
        Accuracy targets drawn as horizontal dashed lines.
    algorithms : sequence of str, optional
        Line order (default ``study.algorithms``).

    Returns
    -------
    matplotlib.figure.Figure
        One line per algorithm with runs in this setting, labelled ``"<algorithm> (n seeds)"``
        (algorithm coordinates are unique, so labels are too).
    """
    x_col, x_scale, x_label = CURVES[kind]
    fig = Figure(figsize=_FIGSIZE_IN, dpi=_DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    m = study.metrics.loc[study.metrics["setting"] == setting]
    for i, algorithm in enumerate(algorithms or study.algorithms):
        part = m.loc[m["algorithm"] == algorithm]
        if part.empty:
            continue
        curves = [(g[x_col].to_numpy(float) / x_scale, g["test_accuracy"].to_numpy(float))
                  for _, g in part.groupby("run_id", sort=True)]
        c = mean_curve(curves, band)
        if c.empty:
            continue
        n = int(c["n"].iloc[0])
        color = f"C{i % 10}"
        ax.step(c["x"], c["mean"], where="post", color=color,
                label=f"{algorithm} ({n} seed{'s' if n != 1 else ''})")
        if c["low"].notna().any():
            ax.fill_between(c["x"], c["low"], c["high"], step="post", color=color, alpha=0.2, linewidth=0)
    for t in targets:
        ax.axhline(t, color="0.4", linestyle="--", linewidth=0.8, label=f"target {target_text(t)}")
    ax.set_xlabel(x_label)
    ax.set_ylabel("test accuracy")
    title = textwrap.wrap(setting, 75) or [""]
    ax.set_title("\n".join(title[:2]) + ("..." if len(title) > 2 else ""),
                 fontsize="medium" if len(title) == 1 else "small")
    ax.grid(True, alpha=0.3)
    band_text = "± 1 std" if band == "std" else "min–max"
    ax.text(0.01, 0.99, f"mean over seeds, band {band_text}", transform=ax.transAxes,
            ha="left", va="top", fontsize="x-small", color="0.4")
    if ax.get_legend_handles_labels()[0]:
        # a fixed corner: loc="best" scans every vertex, and accuracy curves rise away from it
        ax.legend(loc="lower right", fontsize="small")
    # fixed margins instead of tight_layout, which draws the figure once more (a third of its cost)
    fig.subplots_adjust(left=0.11, right=0.97, bottom=0.13, top=0.9 if len(title) == 1 else 0.87)
    return fig


def save_figure(fig: Figure, stem: str | os.PathLike[str]) -> list[Path]:
    """Write ``stem.png`` and ``stem.pdf`` (PDF without a creation date, so reruns are identical).

    Returns
    -------
    list of pathlib.Path
        The two files.
    """
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    png, pdf = stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".pdf")
    fig.savefig(png, format="png")
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
