"""``max_sim_time_s``: a simulated-time budget that stops a run at the end of the round that reached it,
evaluated as its last, recorded as its own stop reason."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sfl_sim.cli import main
from sfl_sim.config import validate
from sfl_sim.errors import ConfigError
from sfl_sim.runs.rundir.schema import STOP_REASON, STOPPED_AT_ROUNDS, STOPPED_AT_TIME_BUDGET
from sfl_sim.runs.runner import time_budget_spent
from tests.helpers import read_rows, small_scenario, write_yaml

SMALL = small_scenario(seed=2, rounds=5, eval_every_rounds=3, algorithms=["fedavg"], clients=6, participation=0.5)


def test_the_budget_is_a_positive_number_or_null() -> None:
    assert validate({}).max_sim_time_s is None
    assert not time_budget_spent(validate({}), 1e12)
    cfg = validate({"max_sim_time_s": 10})
    assert cfg.max_sim_time_s == 10.0
    assert not time_budget_spent(cfg, 9.99) and time_budget_spent(cfg, 10.0)
    for bad in (0, -1.0, "soon", float("inf")):
        with pytest.raises(ConfigError, match=r"^max_sim_time_s: got .*; allowed: null or a number > 0 "
                                              r"\(simulated s\)$"):
            validate({"max_sim_time_s": bad})


def _run(tmp_path: Path, name: str, **fields) -> Path:
    out = tmp_path / name
    assert main(["scenario", str(write_yaml(tmp_path, {**SMALL, **fields}, f"{name}.yaml")), "-o", str(out),
                 "--no-progress"]) == 0
    return out / "fedavg"


@pytest.mark.slow
def test_a_run_stops_at_the_round_that_reaches_its_budget(tmp_path: Path, capsys) -> None:
    straight = _run(tmp_path, "straight")
    summary = json.loads((straight / "summary.json").read_text())
    assert summary["status"] == "complete" and summary[STOP_REASON] == STOPPED_AT_ROUNDS
    clock = [float(r["sim_time_s"]) for r in read_rows(straight / "rounds.csv")]
    budget = (clock[1] + clock[2]) / 2  # reached during round 3

    stopped = _run(tmp_path, "budget", max_sim_time_s=budget)
    summary = json.loads((stopped / "summary.json").read_text())
    assert summary["status"] == "complete" and summary[STOP_REASON] == STOPPED_AT_TIME_BUDGET
    assert summary["rounds_completed"] == 3 and summary["rounds_planned"] == 5
    rounds = read_rows(stopped / "rounds.csv", host_time=False)
    assert rounds == read_rows(straight / "rounds.csv", host_time=False)[:3]  # same seed, same rounds
    # round 3 ends past the budget: it is evaluated (the cadence would have, too), and nothing after it
    assert [r["round"] for r in read_rows(stopped / "metrics.csv")] == ["0", "3"]
    assert float(rounds[-1]["sim_time_s"]) >= budget > float(rounds[-2]["sim_time_s"])

    # reached in round 2, off the cadence: round 2 is still evaluated, as the run's last
    early = _run(tmp_path, "early", max_sim_time_s=(clock[0] + clock[1]) / 2)
    assert [r["round"] for r in read_rows(early / "metrics.csv")] == ["0", "2"]
    assert json.loads((early / "summary.json").read_text())["rounds_completed"] == 2

    # a resume of a run that spent its budget has nothing left to train
    before = (stopped / "rounds.csv").read_text()
    path = tmp_path / "budget.yaml"
    assert main(["scenario", str(path), "-o", str(tmp_path / "budget"), "--resume", "--no-progress"]) == 0
    assert (stopped / "rounds.csv").read_text() == before
    capsys.readouterr()
