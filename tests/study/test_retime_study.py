"""Train once, time many in a study: runs that differ only in timing fields train once and are
re-timed from it; a refused re-timing trains instead, and the log, ``runs.csv`` and the report's
run list say which was which."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import sfl_sim
from sfl_sim.study.execute import retime_plan
from sfl_sim.study.plan import expand, load_study
from tests.helpers import read_rows, small_scenario
from tests.study.test_study import write_study

BASE = small_scenario(seed=None, rounds=2, algorithms=["fedavg"], learning_rate=0.05)


def test_runs_differing_in_timing_only_share_one_training(tmp_path: Path) -> None:
    path = write_study(tmp_path, {"seeds": [0, 1], "grid": {
        "cell.uplink_bandwidth_hz": [1e6, 5e6], "training.learning_rate": [0.05, 0.1]}}, BASE)
    runs = expand(*load_study(path))
    plan = retime_plan(runs, [], lambda r: tmp_path / r.name)
    assert len(runs) == 8 and len(plan) == 4  # (lr, seed) pairs train once each
    for name, source in plan.items():
        a, b = (next(r for r in runs if r.name == n).coordinates for n in (name, source))
        assert a["cell.uplink_bandwidth_hz"] == 5e6 and b["cell.uplink_bandwidth_hz"] == 1e6
        assert {k: v for k, v in a.items() if k != "cell.uplink_bandwidth_hz"} == \
               {k: v for k, v in b.items() if k != "cell.uplink_bandwidth_hz"}


@pytest.mark.slow
def test_a_study_retimes_and_falls_back_to_training(tmp_path: Path, capsys) -> None:
    from sfl_sim.cli import main

    path = write_study(tmp_path, {"seeds": [0], "grid": {"stragglers": {
        "all": {"policy": "wait_all"},
        "late": {"policy": "deadline", "deadline_s": 1e-6},  # drops everyone: training changes
        "lax": {"policy": "deadline", "deadline_s": 1e6}}}}, BASE)
    out = tmp_path / "study"
    assert main(["study", str(path), "-o", str(out), "--no-progress"]) == 0
    assert main(["study", str(path), "-o", str(out)]) == 0  # all done: skipped, retimed ones too
    assert "3 of 3 runs already finished" in capsys.readouterr().err
    with (out / "runs.csv").open() as fh:
        made = {r["name"]: r["made_by"] for r in csv.DictReader(fh)}
    names = sorted(made)
    late = next(n for n in names if "late" in n)
    lax = next(n for n in names if "lax" in n)
    first = next(n for n in names if "all" in n)
    summaries = {n: json.loads((out / n / "summary.json").read_text()) for n in names}
    assert summaries[lax]["retimed_from"] == first and "coordinates" in summaries[lax]
    assert summaries[late]["retime_refused"].startswith(f"{out / first}: cannot be re-timed")
    assert "dropped (deadline)" in summaries[late]["retime_refused"]
    # the re-timed run is the run a training would have made
    full = tmp_path / "full"
    sfl_sim.run(str(tmp_path / "base.yaml"), overrides=["stragglers.policy=deadline", "stragglers.deadline_s=1e6"],
                output_dir=full, seed=0)
    for name in ("metrics.csv", "rounds.csv", "energy.csv"):
        assert read_rows(out / lax / name, host_time=False) == read_rows(full / "fedavg" / name, host_time=False)
    report = sfl_sim.report(out, output_dir=tmp_path / "report")
    assert set(report.runs["made_by"]) == {"trained", f"re-timed from {first}",
                                           f"trained, re-timing refused: {summaries[late]['retime_refused']}"}
    readme = (tmp_path / "report" / "README.md").read_text()
    assert "## How the runs were made" in readme and "1 run(s) re-timed" in readme
    assert "1 run(s) trained because their re-timing was refused" in readme and late in readme


@pytest.mark.slow
def test_more_rounds_resume_the_training_and_retime_again(tmp_path: Path) -> None:
    # The study asks 3 rounds after 2: the trained run resumes, the re-timed one is re-timed anew
    # from it (not "resumed" as an interrupted training), and equals the full 3-round run.
    from sfl_sim.cli import main

    grid = {"seeds": [0], "grid": {"cell.uplink_bandwidth_hz": [1e6, 5e6]}}
    out = tmp_path / "study"
    assert main(["study", str(write_study(tmp_path, grid, BASE)), "-o", str(out), "--no-progress"]) == 0
    longer = write_study(tmp_path, {**grid, "set": {"rounds": 3}}, BASE)
    assert main(["study", str(longer), "-o", str(out), "--no-progress"]) == 0
    with (out / "runs.csv").open() as fh:
        made = {r["name"]: r["made_by"] for r in csv.DictReader(fh)}
    (source,) = [n for n, how in made.items() if not how]  # trained (resumed for its third round)
    (retimed,) = [n for n in made if n != source]
    assert made[retimed] == f"re-timed from {source}"
    assert len(read_rows(out / retimed / "rounds.csv")) == 3
    full = tmp_path / "full"
    sfl_sim.run(str(tmp_path / "base.yaml"), overrides=["cell.uplink_bandwidth_hz=5e6", "rounds=3"], output_dir=full,
                seed=0)
    for name in ("metrics.csv", "rounds.csv"):
        assert read_rows(out / retimed / name, host_time=False) == read_rows(full / "fedavg" / name, host_time=False)
