"""How figures are written for a paper: the PDF's fonts embedded (TrueType, not Type 3), and the
selectable ``paper`` style (serif text, one column wide)."""

from __future__ import annotations

import re

import matplotlib
import pytest

from sfl_sim.analysis.figure_style import STYLE_WIDTH_IN, check_style, figure_style, new_figure, save_figure


def _pdf_fonts(data: bytes) -> tuple[list[bytes], bool]:
    """The font subtypes a PDF declares, and whether it carries an embedded TrueType font program."""
    return re.findall(rb"/Subtype\s*/(Type3|TrueType|Type1|Type0|CIDFontType2)\b", data), b"/FontFile2" in data


def _figure():
    fig = new_figure(3.5)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("uplink bandwidth (MHz)")
    ax.set_title("accuracy (%)")
    return fig


def test_the_pdf_embeds_its_fonts_as_truetype(tmp_path):
    png, pdf = save_figure(_figure(), tmp_path / "f")
    subtypes, embedded = _pdf_fonts(pdf.read_bytes())
    assert subtypes and b"Type3" not in subtypes and embedded, subtypes
    assert png.read_bytes().startswith(b"\x89PNG")
    assert matplotlib.rcParams["pdf.fonttype"] == 3  # matplotlib's own setting untouched after the write


def test_the_paper_style_is_serif_and_one_column_wide(tmp_path):
    assert STYLE_WIDTH_IN["paper"] == 3.5
    with figure_style("paper"):
        fig = _figure()
        fig.canvas.draw()
        names = {t.get_fontname() for t in (fig.axes[0].xaxis.label, fig.axes[0].title)}
        _, pdf = save_figure(fig, tmp_path / "f")
    assert names == {"STIXGeneral"}
    assert b"STIX" in pdf.read_bytes()
    assert matplotlib.rcParams["font.family"] == ["sans-serif"]  # restored after the block
    with figure_style("default"):
        fig = _figure()
        fig.canvas.draw()
        assert fig.axes[0].xaxis.label.get_fontname() == "DejaVu Sans"


def test_an_unknown_style_is_one_line():
    with pytest.raises(ValueError, match=r"^style: got 'ieee'; allowed: default, paper$"):
        check_style("ieee")
