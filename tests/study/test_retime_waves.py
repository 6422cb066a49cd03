"""A study re-times a run from any finished run of its training whose decisions it shares (issue 56
item 3): over bandwidth x scheduler x an outage rule, it trains once per distinct training (the
drops the outage rule makes are part of it) and re-times the rest, equal bit for bit to a training."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import sfl_sim
from sfl_sim.runs.rundir.schema import COMPLETE, WORK_SHA256
from sfl_sim.runs.rundir.work import work_path
from sfl_sim.study.plan import expand, load_study
from sfl_sim.study.waves import Waves, closest_first
from tests.helpers import read_rows, small_scenario
from tests.runs.test_retime import COMPARED
from tests.study.test_study import write_study

BASE = {**small_scenario(seed=None, rounds=2, algorithms=["fedavg"], learning_rate=0.05),
        "cell": {"downlink": {"mode": "unicast"}}}
#: At 5 MHz three of the first cohorts' uplinks fall below 11 Mbit/s (outage: dropped); at 20 MHz
#: none does, nor with no outage rule: two trainings, whatever the scheduler.
GRID = {"cell.outage": {"rate11M": {"min_rate_bps": 11.0e6}, "never": {"min_rate_bps": 0.0}},
        "cell.uplink_bandwidth_hz": [5.0e6, 20.0e6],
        "cell.scheduler": {"static": {"name": "static"}, "rr": {"name": "round_robin"}}}


def _same(full: Path, retimed: Path) -> None:
    """Every non-host column of the run's files and summary equal (but what the study notes: its
    coordinates, where the re-timing came from; and the work record's digest, its source's)."""
    for name in COMPARED:
        if (full / name).exists():
            assert read_rows(retimed / name, host_time=False) == read_rows(full / name, host_time=False), name
    noted = ("output_dir", "path", WORK_SHA256, "coordinates", "retimed_from")
    a, b = ({k: v for k, v in json.loads((d / "summary.json").read_text()).items() if "host" not in k
             and k not in noted} for d in (full, retimed))
    assert a == b


def _runs(tmp_path: Path):
    return expand(*load_study(write_study(tmp_path, {"seeds": [0], "grid": GRID}, BASE)))


def test_the_waves_train_one_run_and_retry_the_refused_on_the_next_trained(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    dirs = tmp_path / "study"
    waves = Waves(runs, [], lambda r: dirs / r.name)
    first = waves.next()
    assert [(s.run.name, s.sources) for s in first] == [(runs[0].name, ())]  # one group: its first run trains
    work_path(dirs / runs[0].name).parent.mkdir(parents=True)
    work_path(dirs / runs[0].name).write_bytes(b"")
    waves.record(first[0], COMPLETE, deferred=False)
    second = waves.next()
    assert [s.run.name for s in second] == [r.name for r in runs[1:]]
    assert all(s.sources == (runs[0],) and not s.train_if_refused for s in second)
    for step in second[1:]:  # every one refused: they wait, and the first of them trains next
        waves.record(step, "deferred", deferred=True, reasons=["refused"])
    waves.record(second[0], COMPLETE, deferred=False)  # re-timed: no source (it shares runs[0]'s decisions)
    third = waves.next()
    assert [(s.run.name, s.sources, s.refused) for s in third] == [(runs[2].name, (), ("refused",))]
    work_path(dirs / runs[2].name).parent.mkdir(parents=True)
    work_path(dirs / runs[2].name).write_bytes(b"")
    waves.record(third[0], COMPLETE, deferred=False)
    fourth = waves.next()  # the rest try the new source only (runs[0] refused them already)
    assert [s.run.name for s in fourth] == [r.name for r in runs[3:]]
    assert all(s.sources == (runs[2],) for s in fourth)


def test_the_closest_finished_run_is_tried_first(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    target = next(r for r in runs if r.coordinates["cell.outage"] == "never"
                  and r.coordinates["cell.uplink_bandwidth_hz"] == 20e6 and r.coordinates["cell.scheduler"] == "rr")
    ordered = closest_first(target, runs)
    assert ordered[0] is target
    assert sum(a == b for a, b in zip(ordered[1].coordinates.values(), target.coordinates.values(), strict=True)) == \
        len(target.coordinates) - 1


def test_the_dry_run_says_the_plan_and_its_cost(tmp_path: Path, capsys) -> None:
    from sfl_sim.cli import main

    path = write_study(tmp_path, {"seeds": [0], "grid": GRID}, BASE)
    assert main(["study", str(path), "-o", str(tmp_path / "study"), "--dry-run", "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = _runs(tmp_path)[0].name
    assert lines[0].endswith("0 done, 8 to run")
    assert lines[1].startswith("expected: 1 training(s), 7 re-timing(s)") and "at most 8 trainings" in lines[1]
    assert "host time: not estimated" in lines[1]
    assert lines[2].endswith(f"{first}  (train)")
    assert all(line.endswith(f"(re-time from {first})") for line in lines[3:]) and len(lines) == 10


@pytest.mark.slow
def test_a_study_over_bandwidth_scheduler_and_outage_trains_once_per_training(tmp_path: Path) -> None:
    from sfl_sim.cli import main

    path = write_study(tmp_path, {"seeds": [0], "grid": GRID}, BASE)
    out = tmp_path / "study"
    assert main(["study", str(path), "-o", str(out), "--no-progress"]) == 0
    with (out / "runs.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    trained = [r for r in rows if not r["made_by"] or r["made_by"].startswith("trained")]
    retimed = [r for r in rows if r["made_by"].startswith("re-timed from ")]
    assert len(rows) == 8 and len(trained) == 2 and len(retimed) == 6
    refused = next(r["made_by"] for r in trained if r["made_by"])  # the field and both its values
    assert "cannot be re-timed with cell.uplink_bandwidth_hz 2e+07 (the source had 5e+06)" in refused, refused
    outage_5mhz = {r["name"] for r in rows
                   if r["cell.outage"] == "rate11M" and r["cell.uplink_bandwidth_hz"] == "5000000.0"}
    assert len(outage_5mhz & {r["name"] for r in trained}) == 1  # the one with drops, and one without
    # every re-timed run is the run its own training makes, in every non-host column
    for row in retimed:
        coords = {"cell.outage": GRID["cell.outage"][row["cell.outage"]],
                  "cell.uplink_bandwidth_hz": float(row["cell.uplink_bandwidth_hz"]),
                  "cell.scheduler": GRID["cell.scheduler"][row["cell.scheduler"]]}
        full = tmp_path / "full" / row["name"]
        sfl_sim.run(str(tmp_path / "base.yaml"), overrides=coords, output_dir=full, seed=0)
        _same(full / "fedavg", out / row["name"])
    # the plan of the finished study: nothing to do; of one more seed, the host time measured here
    plan = sfl_sim.plan_study(path, output_dir=out)
    assert all(r.done for r in plan.runs) and plan.expected == "expected: nothing to run"
    more = tmp_path / "more"
    more.mkdir()
    plan = sfl_sim.plan_study(write_study(more, {"seeds": [0, 1], "grid": GRID}, BASE), output_dir=out)
    assert plan.expected.startswith("expected: 1 training(s), 7 re-timing(s)")
    assert "host time ~" in plan.expected and "(mean of 2 trained run(s) here" in plan.expected
    assert "and of 6 re-timed" in plan.expected
