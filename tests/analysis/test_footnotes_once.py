"""The report's tables state each footnote once: under the first table of a file (Markdown, LaTeX) or of
the README that has it; a later table points to that one instead of repeating it."""

from __future__ import annotations

import re

import pytest

from sfl_sim.analysis.report import write_report
from sfl_sim.analysis.tables import Layout, StatedNotes, to_latex, to_markdown
from tests.analysis.synthetic_runs import write_run

SHARED = "mean ± std over seeds"


def _layouts() -> list[Layout]:
    rows = [(None, [("fedavg", ["1.0"])])]
    return [Layout("First", [("a",)], rows, [SHARED, "only the first"], label="tab:first"),
            Layout("Second", [("a",)], rows, [SHARED, "only the second"], label="tab:second"),
            Layout("Third", [("a",)], rows, [SHARED], label="")]


def test_markdown_states_a_shared_note_once_and_points_to_it():
    stated: StatedNotes = {}
    text = "\n".join(to_markdown(lo, stated) for lo in _layouts())
    assert text.count(SHARED) == 1 and "only the first" in text and "only the second" in text
    assert text.count("_Also the notes under “First”._") == 2
    assert stated == {SHARED: "“First”", "only the first": "“First”", "only the second": "“Second”"}
    # without a shared record each table carries all its notes (a table rendered alone)
    assert all(SHARED in to_markdown(lo) for lo in _layouts())


def test_latex_refers_to_the_float_that_states_the_note():
    stated: StatedNotes = {}
    text = "\n".join(to_latex(lo, stated) for lo in _layouts())
    assert text.count(r"mean $\pm$ std over seeds") == 1
    assert text.count(r"Also the notes of Table~\ref{tab:first}.") == 2


@pytest.mark.slow
def test_report_files_and_readme_state_each_note_once(tmp_path):
    for s in range(2):
        write_run(tmp_path / "s" / "fedavg" / f"seed{s}", "fedavg", s)
        write_run(tmp_path / "s" / "scala" / f"seed{s}", "scala", s)
    write_run(tmp_path / "s" / "scala" / "seed2", "scala", 2, status="running")  # a study-wide note
    out = tmp_path / "out"
    write_report(tmp_path / "s", out, reference="fedavg", targets=(0.5, 0.6), figures=False)
    study_note = "1 run(s) not complete, left out (see runs.csv)."
    for name in ("accuracy.md", "tta.md", "overhead.md", "README.md"):
        text = (out / name).read_text()
        notes = re.findall(r"^_(?!Also the notes under)(.+)_  $", text, flags=re.M)
        assert notes and len(notes) == len(set(notes)), name
        assert text.count(study_note) == 1, name
    readme = (out / "README.md").read_text()
    assert readme.count("mean ± std over seeds (std: sample standard deviation") == 1
    tex = (out / "tta.tex").read_text()
    assert tex.count("left out (see runs.csv)") == 1 and r"Also the notes of Table~\ref{tab:tta-50}." in tex
