"""Every tutorial of the documentation runs end to end as written (``docs/tutorials/``)."""
from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

from tests.docs.tutorials import (
    TUTORIALS,
    blocks,
    checked_lines,
    missing_extras,
    needed_extras,
    run_tutorial,
    shape,
    shown_outputs,
    tutorial_pages,
)


def test_every_tutorial_is_listed_and_runs_something() -> None:
    index = (TUTORIALS / "index.md").read_text()
    pages = tutorial_pages()
    assert len(pages) >= 4
    for page in pages:
        assert f"({page.name})" in index, f"{page.name} is not in the tutorials' index"
        found = blocks(page)
        assert any(b.action == "run" for b in found), f"{page.name} runs nothing"
        for b in found:
            assert b.action != "run" or b.lang in ("bash", "python"), (page.name, b.lang)


@pytest.mark.slow
@pytest.mark.parametrize("page", tutorial_pages(), ids=lambda p: p.stem)
def test_tutorial_runs_as_written(page: Path, tmp_path: Path) -> None:
    missing = missing_extras(page)
    if missing:
        pytest.skip(f"{page.name} needs the optional extra(s) {missing}: pip install -e '.[{','.join(missing)}]' "
                    f"(CI installs them)")
    start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    outputs = run_tutorial(page, tmp_path)
    assert outputs, page.name
    for i, text in shown_outputs(page):  # a shown output cannot go stale silently
        printed = {shape(line) for line in outputs[i].splitlines()}
        stale = [line for line in checked_lines(text) if line not in printed]
        assert checked_lines(text) and not stale, (f"{page.name}: the output shown after run block {i} has "
                                                   f"{stale}, which the run no longer prints:\n{outputs[i]}")
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{page.name}: {time.perf_counter() - start:.1f} s wall, "
          f"{used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime:.1f} s CPU")  # -s shows it


def test_the_tutorials_show_what_their_table_printing_commands_print() -> None:
    """Each command that prints a table is followed by its output (checked against the real run by
    :func:`test_tutorial_runs_as_written`)."""
    shown = {page.name: len(shown_outputs(page)) for page in tutorial_pages()}
    assert all(n >= 1 for name, n in shown.items() if name != "ray.md"), shown  # ray.md's print no table
    assert all(checked_lines(text) for page in tutorial_pages() for _, text in shown_outputs(page))


def test_a_tutorial_that_uses_ray_declares_the_extra() -> None:
    """A page that runs ``--executor ray`` says it needs the Ray extra, so it is skipped, not failed,
    where the README's install (``.[test]``) has no Ray."""
    for page in tutorial_pages():
        if any(b.action == "run" and "--executor ray" in b.code for b in blocks(page)):
            assert "ray" in needed_extras(page), page.name


def test_a_page_missing_its_extra_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "t.md"
    page.write_text("<!-- test: needs ray -->\n# t\n")
    monkeypatch.setattr("tests.docs.tutorials.importlib.util.find_spec", lambda name: None)
    assert missing_extras(page) == ["ray"]
    page.write_text("<!-- test: needs nope -->\n")
    with pytest.raises(AssertionError, match="known extras"):
        needed_extras(page)
