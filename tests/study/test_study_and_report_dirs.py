"""A report folder and a study directory are sfl-sim's own kinds (the marker,
:mod:`sfl_sim.runs.rundir.marker`): neither rewrites a file sfl-sim did not write, nor is written
into the other; a study never rewrites the user's study file (issue 50, data loss 3 and 4; 14)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sfl_sim.cli import main
from sfl_sim.runs.rundir import marker
from tests.helpers import small_scenario, write_yaml

TINY = small_scenario(seed=None, rounds=1, train=200, test=100, algorithms=["fedavg"])


def _line(capsys) -> str:
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("sfl-sim")]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture
def study(tmp_path, capsys) -> Path:
    """A finished one-run study: its directory holds the user's study file too (``S/study.yaml``)."""
    s = tmp_path / "S"
    s.mkdir()
    write_yaml(s, TINY, "base.yaml")
    text = "# my study: keep this comment\nbase: base.yaml\nseeds: [0]\n"
    (s / "study.yaml").write_text(text)
    assert main(["study", str(s / "study.yaml"), "-o", str(s), "--no-progress"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return s


@pytest.mark.slow
def test_a_study_never_rewrites_the_study_file_it_runs(study, capsys) -> None:
    assert (study / "study.yaml").read_text() == "# my study: keep this comment\nbase: base.yaml\nseeds: [0]\n"
    assert marker.is_kind(study, "study") and "study.yaml" not in marker.listed(study)
    assert main(["study", str(study / "study.yaml"), "-o", str(study), "--no-progress"]) == 0  # rerun: skips
    assert (study / "study.yaml").read_text().startswith("# my study")


@pytest.mark.slow
def test_another_study_into_a_directory_with_a_users_study_yaml_is_refused(study, tmp_path, capsys) -> None:
    other = tmp_path / "other.yaml"
    other.write_text(f"base: {study / 'base.yaml'}\nseeds: [1]\n")
    assert main(["study", str(other), "-o", str(study), "--no-progress"]) == 2
    assert f"{study / 'study.yaml'} exists and was not written by sfl-sim" in _line(capsys)
    assert (study / "study.yaml").read_text().startswith("# my study")


@pytest.mark.slow
def test_report_into_the_study_directory_is_refused_and_its_runs_csv_kept(study, capsys) -> None:
    before = (study / "runs.csv").read_text()
    assert main(["report", str(study), "-o", str(study), "--no-figures"]) == 2
    assert "is a study directory" in _line(capsys)
    assert (study / "runs.csv").read_text() == before


@pytest.mark.slow
@pytest.mark.parametrize("name", ["README.md", "runs.csv"])
def test_report_refuses_a_users_file_of_its_names(study, tmp_path, capsys, name) -> None:
    out = tmp_path / "OUT"
    out.mkdir()
    (out / name).write_text("mine\n")
    assert main(["report", str(study), "-o", str(out), "--no-figures"]) == 2
    assert f"{out / name} exists and was not written by sfl-sim" in _line(capsys)
    assert (out / name).read_text() == "mine\n"


@pytest.mark.slow
def test_report_rewrites_its_own_folder_and_a_study_is_refused_there(study, tmp_path, capsys) -> None:
    out = tmp_path / "OUT"
    assert main(["report", str(study), "-o", str(out), "--no-figures"]) == 0
    assert marker.is_kind(out, "report") and "README.md" in marker.listed(out)
    assert main(["report", str(study), "-o", str(out), "--no-figures"]) == 0  # its own files: rewritten
    capsys.readouterr()
    assert main(["study", str(study / "study.yaml"), "-o", str(out), "--no-progress"]) == 2
    assert "is a report directory" in _line(capsys)


def test_a_report_folder_made_before_the_marker_is_recognised_by_its_readme(tmp_path) -> None:
    from sfl_sim.analysis.report import claim_report_dir

    (tmp_path / "runs.csv").write_text("x\n")
    with pytest.raises(marker.RunDirError, match="runs.csv exists and was not written"):
        claim_report_dir(tmp_path)
    (tmp_path / "README.md").write_text("# sfl-sim report\n\nold\n")
    claim_report_dir(tmp_path)


@pytest.mark.parametrize("where", ["file", "under_a_file"])
def test_report_into_a_file_is_one_line(tmp_path, capsys, where) -> None:
    (tmp_path / "f").write_text("x")
    out = tmp_path / "f" if where == "file" else tmp_path / "f" / "x"
    (tmp_path / "runs").mkdir()
    code = main(["report", str(tmp_path / "runs"), "-o", str(out)])
    line = _line(capsys)
    assert code == 2 and "--debug" not in line and "not a directory" in line


def test_a_study_s_record_made_before_the_marker_is_recognised(tmp_path) -> None:
    from sfl_sim.runs.rundir.upgrade import made_before_marker

    def legacy_study_file(path, record=None):
        return made_before_marker("study", path, record)

    (tmp_path / "runs.csv").write_text("name,status,seed,final_test_accuracy,made_by,error\n")
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({"base": "/x.yaml"}))
    assert legacy_study_file(tmp_path / "runs.csv")
    assert legacy_study_file(tmp_path / "study.yaml", record=yaml.safe_dump({"base": "/x.yaml"}))
    assert not legacy_study_file(tmp_path / "study.yaml", record=yaml.safe_dump({"base": "/y.yaml"}))
