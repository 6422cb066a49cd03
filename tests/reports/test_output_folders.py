"""The folders of ``sfl-sim plot``, ``channel`` and ``traces`` are sfl-sim's own kinds
(:mod:`sfl_sim.runs.rundir.marker`): a user's file of one of their names is never overwritten, and a
folder of another kind is refused, each in one line before any work."""
from __future__ import annotations

from pathlib import Path

import pytest

from sfl_sim.cli import main
from sfl_sim.runs.rundir import marker
from tests.analysis.synthetic_runs import write_run
from tests.helpers import small_scenario, write_yaml

#: End-to-end runs of the real training (each takes a second or more): the inner loop leaves them out.
pytestmark = pytest.mark.slow

TRACE = "client,start_s,end_s\n0,0,3600\n1,1800,7200\n"


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--debug" not in err, err
    return err


def test_plot_never_overwrites_a_users_figure(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "r" / "scala", "scala", 0)
    out = tmp_path / "figs"
    out.mkdir()
    (out / "accuracy_vs_time.png").write_bytes(b"my own figure")
    assert main(["plot", str(run), "-o", str(out)]) == 2
    assert "accuracy_vs_time.png exists and was not written by sfl-sim" in _one_line(capsys)
    assert (out / "accuracy_vs_time.png").read_bytes() == b"my own figure"
    assert not (out / "uplink_vs_time.png").exists()


def test_plot_rewrites_its_own_folder_and_refuses_another_kind(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "r" / "scala", "scala", 0)
    out = tmp_path / "plots"
    for _ in range(2):  # its own files: rewritten
        assert main(["plot", str(run), "-o", str(out)]) == 0
    assert marker.is_kind(out, "plots")
    capsys.readouterr()
    (tmp_path / "trace.csv").write_text(TRACE)
    assert main(["traces", str(tmp_path / "trace.csv"), "-o", str(out)]) == 2
    assert "is a plot folder (sfl-sim plot)" in _one_line(capsys)


def test_traces_never_overwrite_a_users_file(tmp_path, capsys) -> None:
    (tmp_path / "trace.csv").write_text(TRACE)
    out = tmp_path / "out"
    out.mkdir()
    (out / "traces.csv").write_text("my notes\n")
    assert main(["traces", str(tmp_path / "trace.csv"), "-o", str(out)]) == 2
    assert "traces.csv exists and was not written by sfl-sim" in _one_line(capsys)
    assert (out / "traces.csv").read_text() == "my notes\n"
    fresh = tmp_path / "fresh"
    assert main(["traces", str(tmp_path / "trace.csv"), "-o", str(fresh)]) == 0
    assert main(["traces", str(tmp_path / "trace.csv"), "-o", str(fresh)]) == 0


@pytest.mark.slow
def test_channel_never_overwrites_a_users_file(tmp_path, capsys) -> None:
    scenario = write_yaml(tmp_path, small_scenario(rounds=1, train=120, test=40, eval_samples=40))
    out = tmp_path / "cell"
    out.mkdir()
    (out / "cell.png").write_bytes(b"my own map")
    assert main(["channel", str(scenario), "-o", str(out)]) == 2
    assert "cell.png exists and was not written by sfl-sim" in _one_line(capsys)
    assert (out / "cell.png").read_bytes() == b"my own map" and not (out / "cell.csv").exists()
    fresh: Path = tmp_path / "fresh"
    assert main(["channel", str(scenario), "-o", str(fresh)]) == 0
    assert main(["channel", str(scenario), "-o", str(fresh)]) == 0
    assert marker.is_kind(fresh, "cell_report")
