"""Where ``sfl-sim retime`` writes (issue 50, items 9 and 14): only what it says it wrote, with the
permissions of any run directory, no staging copy left by a killed re-timing, never inside its
source, and a one-line refusal for an output path it cannot use."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sfl_sim.cli import main
from sfl_sim.runs.rundir import marker
from tests.helpers import small_scenario, write_yaml

#: End-to-end runs of the real training (each takes a second or more): the inner loop leaves them out.
pytestmark = pytest.mark.slow

TINY = small_scenario(rounds=1, train=200, test=100, algorithms=["fedavg"])


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("retime_src")
    assert main(["scenario", str(write_yaml(tmp, TINY)), "-o", str(tmp / "out"), "--no-progress"]) == 0
    return tmp / "out" / "fedavg"


def _retime(capsys, src: Path, out: Path | str) -> tuple[int, str, str]:
    code = main(["retime", str(src), "--set", "cell.uplink_bandwidth_hz=5e6", "-o", str(out), "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
def test_retime_says_only_what_it_wrote_with_the_permissions_of_a_run_directory(source, tmp_path, capsys) -> None:
    out = tmp_path / "again"
    old = os.umask(0o022)
    try:
        code, printed, err = _retime(capsys, source, out)
    finally:
        os.umask(old)
    assert code == 0, err
    assert "summary.csv" not in printed and not (tmp_path / "summary.csv").exists()
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert marker.is_kind(out, "run") and "staging_for" not in marker.read(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again"]  # no staging copy left


@pytest.mark.slow
def test_a_staging_copy_left_by_a_killed_retime_is_removed(source, tmp_path, capsys) -> None:
    out = tmp_path / "again"
    stage = marker.staging_dir(out, "retime")  # as a killed re-timing leaves it
    (stage / "checkpoint.pt").write_bytes(b"half a run")
    code, _, err = _retime(capsys, source, out)
    assert code == 0, err
    assert not stage.exists() and (out / "metrics.csv").is_file()


def test_a_directory_of_the_same_name_that_is_not_sfl_sims_is_kept(source, tmp_path, capsys) -> None:
    (tmp_path / ".again.retime").mkdir()
    (tmp_path / ".again.retime" / "mine.txt").write_text("mine")
    code, _, err = _retime(capsys, source, tmp_path / "again")
    assert code == 2 and "was not written by sfl-sim" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / ".again.retime" / "mine.txt").read_text() == "mine"


def test_an_output_inside_the_source_run_is_refused(source, capsys) -> None:
    code, _, err = _retime(capsys, source, source / "x")
    assert code == 2 and "inside the run to re-time" in err and len(err.strip().splitlines()) == 1
    assert not (source / "x").exists() and not any(p.name.startswith(".x.") for p in source.iterdir())


@pytest.mark.parametrize("where", ["file", "under_a_file", "unwritable"])
def test_an_unusable_output_path_is_one_line(source, tmp_path, capsys, where) -> None:
    (tmp_path / "f").write_text("x")
    out = {"file": tmp_path / "f", "under_a_file": tmp_path / "f" / "x", "unwritable": "/proc/sfl-sim-none/x"}[where]
    code, _, err = _retime(capsys, source, out)
    assert code == 2 and "--debug" not in err and len(err.strip().splitlines()) == 1, err
    assert (tmp_path / "f").read_text() == "x"
