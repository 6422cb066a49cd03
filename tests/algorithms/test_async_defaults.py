"""Asynchronous defaults that are asynchronous (issue 56): a default FedBuff is no FedAvg, the
relative ``buffer_size`` default fits every cohort, and ``resolved.yaml`` records what it resolved to."""
from __future__ import annotations

import pytest
import yaml

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.clients.selection import cohort_size
from sfl_sim.config import load_scenario, validate
from sfl_sim.kit.params import params_model
from sfl_sim.runs.build import check_cohort_limits
from tests.helpers import ROOT, finished_run, read_rows, small_scenario


def _policy(name: str, cohort: int, **params):
    cls = ALGORITHMS.get(name)
    return cls.policy_for(params_model(cls, ALGORITHMS.supplied).model_validate(params), cohort)


@pytest.mark.parametrize("name", ["fedbuff", "async_sfl"])
def test_the_default_buffer_is_half_the_concurrency_at_least_one(name):
    assert [_policy(name, c).buffer_size for c in (1, 2, 3, 4, 10, 11)] == [1, 1, 1, 2, 5, 5]
    assert _policy(name, 10, concurrency=20).buffer_size == 10
    assert _policy(name, 10, buffer_size=7).buffer_size == 7  # a number given is kept


def test_the_shipped_cohort_runs_fedbuff_asynchronously():
    """With the shipped scenario's cohort (10), default FedBuff buffers fewer updates than it has
    clients in flight and refills a slot on arrival: its updates are stale, so it is no FedAvg."""
    cfg = load_scenario(ROOT / "scenarios" / "cellular_100clients.yaml")
    cohort = cohort_size(cfg.clients.count, cfg.clients.participation)
    policy = _policy("fedbuff", cohort)
    assert cohort == 10 and policy.concurrency == 10 and policy.buffer_size == 5 and policy.refill == "on_arrival"


@pytest.mark.parametrize("name", ["fedbuff", "async_sfl", "fedasync"])
def test_a_cohort_of_three_takes_the_defaults(name):
    data = small_scenario(algorithms=[name])  # 6 clients, participation 0.5: a cohort of 3
    cfg = validate(data)
    check_cohort_limits(cfg, cfg.algorithms[0], "algorithms[0]")  # no refusal


@pytest.mark.slow
def test_default_fedbuff_differs_from_fedavg_and_records_its_buffer(tmp_path, capsys):
    _, out = finished_run(tmp_path, capsys, small_scenario(rounds=3, algorithms=["fedavg", "fedbuff"]))
    staleness = read_rows(out / "fedbuff" / "staleness.csv")
    assert any(int(r["staleness"]) > 0 for r in staleness)  # an asynchronous run
    assert read_rows(out / "fedbuff" / "metrics.csv", host_time=False) != \
        read_rows(out / "fedavg" / "metrics.csv", host_time=False)
    record = yaml.safe_load((out / "fedbuff" / "resolved.yaml").read_text())["components"]["algorithm"]
    assert record["params"]["buffer_size"] is None
    assert record["resolved"] == {"concurrency": 3, "buffer_size": 1, "period_s": None, "refill": "on_arrival"}
    fedavg = yaml.safe_load((out / "fedavg" / "resolved.yaml").read_text())["components"]["algorithm"]
    assert "resolved" not in fedavg


@pytest.mark.slow
def test_default_async_sfl_runs_a_cohort_of_three(tmp_path, capsys):
    _, out = finished_run(tmp_path, capsys, small_scenario(rounds=2, algorithms=["async_sfl"]))
    record = yaml.safe_load((out / "async_sfl" / "resolved.yaml").read_text())["components"]["algorithm"]
    assert record["resolved"]["buffer_size"] == 1 and record["resolved"]["concurrency"] == 3
