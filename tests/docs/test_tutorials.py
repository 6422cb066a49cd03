"""Every tutorial of the documentation runs end to end as written (``docs/tutorials/``)."""
from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

from tests.docs.tutorials import TUTORIALS, blocks, run_tutorial, tutorial_pages


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
    start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    outputs = run_tutorial(page, tmp_path)
    assert outputs, page.name
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{page.name}: {time.perf_counter() - start:.1f} s wall, "
          f"{used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime:.1f} s CPU")  # -s shows it
