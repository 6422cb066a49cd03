"""A work record is checked before ``sfl-sim retime`` replays any of it (issue 50 items 7 and 15): bound to
its run by the digest in ``summary.json``, each line as the recorder writes it, its totals the run's own."""
from __future__ import annotations

import gzip
import json
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import sfl_sim
from sfl_sim.cli import main
from sfl_sim.runs.retime import RetimeRefused, retime
from sfl_sim.runs.rundir import work
from sfl_sim.runs.rundir.schema import WORK_SHA256
from sfl_sim.runs.work_check import UnboundRecordWarning
from tests.helpers import small_scenario

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete FedAvg run of 2 rounds, 6 clients."""
    tmp = tmp_path_factory.mktemp("record")
    path = tmp / "s.yaml"
    path.write_text(yaml.safe_dump(small_scenario(algorithms=["fedavg"], rounds=2)))
    sfl_sim.run(str(path), output_dir=tmp / "source", progress=False)
    return tmp / "source" / "fedavg"


def _tampered(source: Path, to: Path, edit: Callable[[list[dict[str, Any]]], None], digest: str = "keep") -> Path:
    """A copy of ``source`` with ``edit`` applied to its record's round lines; ``digest``: ``keep`` the
    run's, ``match`` the edited record (a consistent forgery), ``drop`` it (a run made before digests)."""
    shutil.copytree(source, to)
    rounds = work.read_rounds(to)
    edit(rounds)
    with gzip.open(work.work_path(to), "wb") as fh:
        for data in [{"work_version": 1}, *rounds]:
            fh.write(json.dumps(data, separators=(",", ":")).encode() + b"\n")
    summary_path = to / "summary.json"
    summary = json.loads(summary_path.read_text())
    if digest == "match":
        summary[WORK_SHA256] = work.digest(to)
    elif digest == "drop":
        summary.pop(WORK_SHA256)
    summary_path.write_text(json.dumps(summary))
    return to


def _times_1000(rounds: list[dict[str, Any]]) -> None:
    for data in rounds:
        for ops in data["processes"]:
            for op in ops:
                if op[0] in ("u", "d"):
                    op[2] *= 1000
                elif op[0] == "b":
                    op[1] *= 1000


def _refusal(run_dir: Path, out: Path) -> str:
    with pytest.raises(RetimeRefused) as info:
        retime(run_dir, ["cell.uplink_bandwidth_hz=3e6"], out)
    assert "\n" not in str(info.value)
    assert not out.exists()
    return str(info.value)


def test_a_complete_run_keeps_its_records_digest_and_a_retimed_copy_carries_it(source: Path, tmp_path: Path) -> None:
    summary = json.loads((source / "summary.json").read_text())
    assert summary[WORK_SHA256] == work.digest(source)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a bound record: no warning
        retime(source, ["cell.uplink_bandwidth_hz=3e6"], tmp_path / "a")
    assert json.loads((tmp_path / "a" / "summary.json").read_text())[WORK_SHA256] == summary[WORK_SHA256]
    retime(tmp_path / "a", ["cell.uplink_bandwidth_hz=20e6"], tmp_path / "b")  # and re-timable again


def test_a_record_that_is_not_the_runs_is_refused_by_its_digest(source: Path, tmp_path: Path) -> None:
    bad = _tampered(source, tmp_path / "run", _times_1000)
    message = _refusal(bad, tmp_path / "out")
    assert message.startswith(f"{work.work_path(bad)}: sha256 ") and f"the {WORK_SHA256} of summary.json" in message


def test_a_record_whose_totals_are_not_the_runs_is_refused(source: Path, tmp_path: Path, capsys) -> None:
    # a consistent forgery (the digest made to match), and a run made before digests (none: warned)
    forged = _tampered(source, tmp_path / "forged", _times_1000, digest="match")
    message = _refusal(forged, tmp_path / "out")
    assert message.startswith(f"{work.work_path(forged)}: round 1: downlink_bytes: the record has "), message
    assert "what rounds.csv counted" in message
    old = _tampered(source, tmp_path / "old", _times_1000, digest="drop")
    with pytest.warns(UnboundRecordWarning, match="no work_sha256 .* checked against the run's counts in rounds.csv"):
        assert "round 1: downlink_bytes" in _refusal(old, tmp_path / "out")
    # only uploads inflated: the uplink count refuses it
    def uploads(rounds: list[dict[str, Any]]) -> None:
        for ops in rounds[0]["processes"]:
            for op in ops:
                if op[0] == "u":
                    op[2] *= 1000
    up = _tampered(source, tmp_path / "up", uploads, digest="match")
    assert ": round 1: uplink_bytes: the record has " in _refusal(up, tmp_path / "out")
    # the command line: one line, exit 2
    assert main(["retime", str(forged), "--set", "cell.uplink_bandwidth_hz=3e6", "-o", str(tmp_path / "c"),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "downlink_bytes: the record has" in err, err


def _first(kind: str) -> Callable[[list[dict[str, Any]]], list[Any]]:
    def find(rounds: list[dict[str, Any]]) -> list[Any]:
        return next(op for ops in rounds[0]["processes"] for op in ops if op[0] == kind)
    return find


def _set(kind: str, index: int, value: Any) -> Callable[[list[dict[str, Any]]], None]:
    def edit(rounds: list[dict[str, Any]]) -> None:
        _first(kind)(rounds)[index] = value
    return edit


@pytest.mark.parametrize(("edit", "field", "got", "allowed"), [
    (_set("c", 2, -5.0), "[2]", "-5.0", "a finite number >= 0"),
    (_set("u", 1, 9999), "[1]", "9999", "a client id in [0, 5] (the run has 6 clients)"),
    (_set("c", 0, "zz"), "[0]", "'zz'", "an op code: c, h, u, d"),
    (_set("u", 2, 1e400), "[2]", "inf", "a finite number >= 0"),
], ids=["negative-flops", "client-9999", "op-zz", "infinite-bytes"])
def test_a_record_line_the_recorder_cannot_have_written_is_refused_naming_line_and_field(
        source: Path, tmp_path: Path, edit, field: str, got: str, allowed: str) -> None:
    bad = _tampered(source, tmp_path / "run", edit, digest="match")
    message = _refusal(bad, tmp_path / "out")
    assert message.startswith(f"{work.work_path(bad)} line 2: processes["), message
    assert f"{field}: got {got}; allowed: {allowed}" in message, message


def test_rounds_out_of_order_are_refused(source: Path, tmp_path: Path) -> None:
    def swap(rounds: list[dict[str, Any]]) -> None:
        rounds[0]["round"], rounds[1]["round"] = 2, 1
    message = _refusal(_tampered(source, tmp_path / "run", swap, digest="match"), tmp_path / "out")
    assert "line 2: round: got 2" not in message and "line 3: round: got 1; allowed: 3 (the round after 2)" in message
