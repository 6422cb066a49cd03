"""What every figure of the analysis shares: its width and fonts for a paper, its legend below the axes,
and how it is written (PNG and PDF, reproducible, the PDF's fonts embedded as TrueType), its selectable
style (:data:`STYLES`: ``paper`` is serif, Times-like, one column wide), and the file-name-safe names of
settings.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot state, no display). Captions are not
drawn into an image: the report writes them beside it, in Markdown and LaTeX.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = [
    "DEFAULT_WIDTH_IN",
    "MIN_WIDTH_IN",
    "MAX_WIDTH_IN",
    "MIN_FONT_PT",
    "PNG_DPI",
    "PDF_RC",
    "STYLES",
    "STYLE_WIDTH_IN",
    "check_style",
    "figure_style",
    "check_width",
    "fonts",
    "line_width",
    "legend_columns",
    "new_figure",
    "legend_below",
    "write_png",
    "save_figure",
    "setting_slug",
    "text_boxes_overlap",
]

#: Default figure width (in): matplotlib's default, a full text width.
DEFAULT_WIDTH_IN = 6.4
#: Narrowest and widest figure (in); one column of a two-column paper is about 3.3-3.5 in.
MIN_WIDTH_IN = 3.0
MAX_WIDTH_IN = 12.0
#: Smallest font of a figure (pt), at any width.
MIN_FONT_PT = 7.0
#: Resolution of the PNG files.
PNG_DPI = 200
_ASPECT = 0.62  # axes-area height / width, before the legend rows
#: How every PDF is written: fonts embedded as TrueType (Type 42) subsets, which publishers' checks
#: (IEEE PDF eXpress, ACM) accept, where matplotlib's default Type 3 is refused by some.
PDF_RC: dict[str, Any] = {"pdf.fonttype": 42, "ps.fonttype": 42}
#: The selectable figure styles (``sfl-sim report --style``): name -> matplotlib rcParams.
#: ``paper``: serif text and math in STIX (Times-like, shipped with matplotlib, so no TeX needed).
STYLES: dict[str, dict[str, Any]] = {
    "default": {},
    "paper": {"font.family": "serif", "font.serif": ["STIXGeneral", "DejaVu Serif"], "mathtext.fontset": "stix",
              "axes.linewidth": 0.6, "grid.linewidth": 0.4, "xtick.major.width": 0.6, "ytick.major.width": 0.6},
}
#: The figure width a style draws at when none is given (in): ``paper`` one column of a two-column paper.
STYLE_WIDTH_IN: dict[str, float] = {"default": 6.4, "paper": 3.5}


def check_style(style: str) -> str:
    """A figure style name, refused in one line unless it is a key of :data:`STYLES`.

    Raises
    ------
    ValueError
    """
    if style not in STYLES:
        raise ValueError(f"style: got {style!r}; allowed: {', '.join(STYLES)}")
    return style


@contextlib.contextmanager
def figure_style(style: str = "default") -> Iterator[None]:
    """Draw and save figures in ``style`` (:data:`STYLES`) inside this block; matplotlib's global
    settings are as before after it."""
    with matplotlib.rc_context({**STYLES[check_style(style)], **PDF_RC}):  # type: ignore[dict-item]
        yield


def check_width(width_in: float) -> float:
    """A figure width, refused in one line unless it is :data:`MIN_WIDTH_IN` to :data:`MAX_WIDTH_IN` in.

    Raises
    ------
    ValueError
    """
    w = float(width_in)
    if not math.isfinite(w) or not MIN_WIDTH_IN <= w <= MAX_WIDTH_IN:
        raise ValueError(f"figure width must be {MIN_WIDTH_IN:g} to {MAX_WIDTH_IN:g} in (one column is about "
                         f"3.5 in); got {width_in!r}")
    return w


def fonts(width_in: float) -> tuple[float, float]:
    """(base, small) font sizes in pt: smaller on narrow figures, never below :data:`MIN_FONT_PT`."""
    base = 10.0 if width_in >= 5.5 else 8.0
    return base, max(MIN_FONT_PT, base - 1.0)


def line_width(width_in: float) -> float:
    """The width of a figure's main lines (pt)."""
    return 1.8 if width_in >= 5.5 else 1.4


def legend_columns(labels: Sequence[str], width_in: float, font_pt: float) -> int:
    """As many legend columns as fit the figure width (an entry: its text plus ~0.45 in of handle)."""
    if not labels:
        return 1
    entry_in = max(len(t) for t in labels) * 0.55 * font_pt / 72 + 0.45
    return max(1, min(len(labels), int(width_in * 0.95 // entry_in)))


def new_figure(width_in: float, legend_rows: int = 0, title_lines: int = 1, aspect: float = _ASPECT,
               ncols: int = 1) -> Figure:
    """A figure of ``width_in`` whose height leaves ``aspect`` × width to the axes plus room for
    ``legend_rows`` rows of legend below them and the title; ``ncols`` axes side by side."""
    base, small = fonts(width_in)
    height_in = width_in * aspect / (1 if ncols == 1 else 1.4) + (
        legend_rows * 1.5 * small + title_lines * 1.4 * base) / 72 + 0.1
    fig = Figure(figsize=(width_in, height_in), dpi=PNG_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def legend_below(fig: Figure, handles: Sequence, width_in: float, title: str | None = None) -> None:
    """The figure's legend below its axes (so it hides nothing), in as many columns as fit."""
    if not handles:
        return
    _, small = fonts(width_in)
    ncol = legend_columns([h.get_label() for h in handles], width_in, small)
    fig.legend(handles=list(handles), loc="outside lower center", ncol=ncol, fontsize=small, frameon=False,
               title=title, title_fontsize=small)


def write_png(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` as a PNG file at ``path`` (parent directories created), whatever its suffix.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=PNG_DPI)
    return out


def save_figure(fig: Figure, stem: str | os.PathLike[str]) -> list[Path]:
    """Write ``stem.png`` and ``stem.pdf`` (PDF without a creation date, so reruns are identical; its
    fonts embedded as TrueType, :data:`PDF_RC`).

    Returns
    -------
    list of pathlib.Path
        The two files.
    """
    stem = Path(stem)
    png, pdf = stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".pdf")
    write_png(fig, png)
    with matplotlib.rc_context(PDF_RC):  # type: ignore[arg-type]
        fig.savefig(pdf, format="pdf", metadata={"CreationDate": None})
    return [png, pdf]


def text_boxes_overlap(texts: Sequence, renderer, pad_px: float = 1.0) -> bool:
    """Whether any two of the (visible, non-empty) matplotlib texts overlap as drawn by ``renderer``
    (their window extents, each widened by ``pad_px`` pixels)."""
    boxes = [t.get_window_extent(renderer).padded(pad_px) for t in texts if t.get_visible() and t.get_text()]
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


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
