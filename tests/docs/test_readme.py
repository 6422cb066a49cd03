"""The README stays a short front page whose links and examples hold (the documentation is ``docs/``)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT

README = ROOT / "README.md"


def test_readme_is_short_and_its_links_lead_somewhere() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        if not re.match(r"[a-z]+://", link):
            assert (ROOT / link).exists(), f"README links to {link}, which does not exist"


def test_readme_shows_the_test_commands() -> None:
    text = README.read_text()
    assert '. .venv/bin/activate && python -m pytest -q -n auto --dist loadscope\n' in text
    assert '. .venv/bin/activate && python -m pytest -q -m "not slow" -n auto\n' in text


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "python -m pytest -q -n auto --dist loadscope" in ci, "CI must run the README's test command"


def test_ci_also_runs_the_readme_install_alone() -> None:
    """CI installs the README's extras only (``.[test]``) in a clean venv of its own and runs the
    inner-loop suite there, so a test that needs Ray, Sionna or the docs tools cannot pass in CI
    and fail for a user who followed the README."""
    setup = next(line for line in README.read_text().splitlines() if "python3 -m venv .venv" in line)
    installs = re.findall(r"pip install [^&]+?(?= &&|$)", setup)
    assert installs == ["pip install torch==2.13.0", "pip install -e '.[test]'"], installs
    ci = (ROOT / ".ci" / "run").read_text()
    assert "  pip install -q torch==2.13.0 && pip install -q -e '.[test]'\n" in ci
    readme_part = ci[ci.index('python3 -m venv "$readme_venv"'):]
    assert 'python -m pytest -q -m "not slow"' in readme_part.split("\n)\n")[0]


@pytest.mark.slow
def test_readme_study_example_plans(tmp_path: Path) -> None:
    import sfl_sim

    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", README.read_text(), flags=re.S) if "base:" in b]
    study = tmp_path / "compare.yaml"
    study.write_text(block)
    plan = sfl_sim.plan_study(study, output_dir=tmp_path / "out")
    assert len(plan.runs) == 3 * len(yaml.safe_load(block)["seeds"])
