"""sfl-sim removes or rewrites only what it wrote itself (the marker, :mod:`sfl_sim.runs.rundir.marker`):
a scenario's output directory, its run directories and ``--overwrite`` (issue 50, data loss 1, 2, 5)."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

from sfl_sim.runs.rundir import marker
from sfl_sim.runs.rundir.files import RunDir
from tests.helpers import run_cli, small_scenario, write_yaml

TINY = small_scenario(rounds=1, train=200, test=100, algorithms=[{"name": "fedavg", "label": "scala"}])


def _err_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("sfl-sim:")]
    assert len(lines) == 1, err
    return lines[0]


def test_hand_written_files_in_a_label_directory_are_refused_not_restarted_over(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    (out / "scala").mkdir(parents=True)
    for name in ("scenario.yaml", "cell.csv", "energy.csv"):
        (out / "scala" / name).write_text("mine\n")
    code, err = run_cli(capsys, str(write_yaml(tmp_path, TINY)), "-o", str(out), "--check")
    line = _err_line(err)
    assert code == 2 and "scala" in line and "was not written by sfl-sim" in line
    assert all((out / "scala" / n).read_text() == "mine\n" for n in ("scenario.yaml", "cell.csv", "energy.csv"))


@pytest.mark.parametrize("name", ["summary.csv", "summary.md"])
def test_a_scenario_directory_s_own_summary_files_of_the_user_are_refused(tmp_path, capsys, name) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text("my notes\n")
    code, err = run_cli(capsys, str(write_yaml(tmp_path, TINY)), "-o", str(out), "--check")
    assert code == 2 and f"{out / name} exists and was not written by sfl-sim" in _err_line(err)
    assert (out / name).read_text() == "my notes\n"


@pytest.mark.parametrize("name", ["summary.json", "metrics.csv"])
def test_overwrite_refuses_run_file_names_in_a_directory_that_holds_no_run(tmp_path, capsys, name) -> None:
    home = tmp_path / "home"
    (home / "scala").mkdir(parents=True)
    (home / "scala" / name).write_text('{"mine": 1}\n')
    code, err = run_cli(capsys, str(write_yaml(tmp_path, TINY)), "-o", str(home), "--overwrite", "--check")
    assert code == 2 and f"{home / 'scala' / name} exists and was not written by sfl-sim" in _err_line(err)
    code, err = run_cli(capsys, str(write_yaml(tmp_path, TINY)), "-o", str(home), "--overwrite")
    assert code == 2 and (home / "scala" / name).read_text() == '{"mine": 1}\n'


def test_a_run_made_before_the_marker_is_recognised_by_its_summary(tmp_path) -> None:
    run = RunDir(tmp_path)
    (tmp_path / "metrics.csv").write_text("round\n0\n")
    assert not run.owned()
    (tmp_path / "summary.json").write_text(json.dumps({"schema_version": 1, "status": "running"}))
    assert run.owned()
    run.check_owned()
    (tmp_path / "summary.json").write_text(json.dumps({"status": "running"}))  # no schema_version: not a run's
    assert not run.owned()


def test_a_marker_of_another_kind_is_refused(tmp_path) -> None:
    marker.record(tmp_path, "study", ["runs.csv"])
    with pytest.raises(marker.RunDirError, match="is a study directory.*not a run directory"):
        marker.claim(tmp_path, "run", ["metrics.csv"])


FAILING_SELECTOR = textwrap.dedent('''
    import numpy as np

    class FailsInRoundOne:
        def prepare(self, counts):
            pass
        def select(self, n_clients, n_selected, rng):
            raise RuntimeError("this selector fails in round 1")
        def state_dict(self):
            return {}
        def load_state_dict(self, state):
            pass
''')


@pytest.mark.slow
def test_overwrite_with_a_run_that_fails_in_round_one_keeps_the_complete_run(tmp_path, capsys, monkeypatch) -> None:
    (tmp_path / "failing_selector.py").write_text(FAILING_SELECTOR)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("failing_selector", None)
    out = tmp_path / "out"
    path = write_yaml(tmp_path, TINY)
    assert run_cli(capsys, str(path), "-o", str(out))[0] == 0
    before = {p.name: p.read_bytes() for p in (out / "scala").iterdir()}
    (out / "scala" / "mine.txt").write_text("kept")
    failing = {**TINY, "clients": {**TINY["clients"], "selection": {"name": "failing_selector:FailsInRoundOne"}}}
    assert run_cli(capsys, str(write_yaml(tmp_path, failing, "f.yaml")), "-o", str(out), "--overwrite",
                   "--check")[0] == 0
    code, err = run_cli(capsys, str(write_yaml(tmp_path, failing, "f.yaml")), "-o", str(out), "--overwrite")
    assert code == 1 and "still holds the run it was to replace" in err
    assert {p.name: p.read_bytes() for p in (out / "scala").iterdir() if p.name != "mine.txt"} == before
    assert sorted(p.name for p in out.iterdir()) == [".sfl-sim.json", "scala", "summary.csv", "summary.md"]
    # a good run replaces it, and what the user put beside the run stays
    code, err = run_cli(capsys, str(path), "-o", str(out), "--overwrite", "--set", "metrics.client_record=false")
    assert code == 0, err
    assert not (out / "scala" / "clients.csv").exists() and (out / "scala" / "mine.txt").read_text() == "kept"
    assert json.loads((out / "scala" / "summary.json").read_text())["status"] == "complete"
    assert marker.is_kind(out / "scala", "run") and "staging_for" not in marker.read(out / "scala")
    sys.modules.pop("failing_selector", None)


@pytest.mark.slow
def test_a_staging_directory_left_by_a_killed_overwrite_is_removed_by_the_next(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    path = write_yaml(tmp_path, TINY)
    assert run_cli(capsys, str(path), "-o", str(out))[0] == 0
    stage = marker.staging_dir(out / "scala", "overwrite")
    (stage / "checkpoint.pt").write_bytes(b"half")
    assert run_cli(capsys, str(path), "-o", str(out), "--overwrite")[0] == 0
    assert not stage.exists()
