"""Rounds, client updates and simulated time side by side, and the warning when compared runs'
budgets differ by more than 2x (an asynchronous round is one aggregation)."""

from __future__ import annotations

import pandas as pd

from sfl_sim.analysis.budget import budget_table, budget_warnings, run_budgets
from sfl_sim.analysis.study_data import load_study
from tests.analysis.synthetic_runs import write_run
from tests.analysis.test_radio_figures import write_clients


def _table(updates: dict[str, float], times: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"setting": "s", "algorithm": a, "rounds": 20.0, "client_updates": updates[a],
                          "sim_time_s": times[a]} for a in updates])


def test_a_2x_difference_in_updates_or_time_is_warned_about():
    assert budget_warnings(_table({"fedavg": 200, "fedasync": 101}, {"fedavg": 5.8, "fedasync": 3.0})) == []
    (line,) = budget_warnings(_table({"fedavg": 200, "fedasync": 20}, {"fedavg": 5.8, "fedasync": 3.0}))
    assert line.startswith("Warning: the compared runs' budgets differ by more than 2x in s: client updates "
                           "fedasync 20 vs fedavg 200 (10.0x)")
    lines = budget_warnings(_table({"fedavg": 200, "fedasync": 20}, {"fedavg": 5.8, "fedasync": 0.25}))
    assert [w.split(": ")[2].split(" fedasync")[0] for w in lines] == ["client updates", "simulated time"]


def test_client_updates_are_the_kept_rows_of_clients_csv(tmp_path):
    for a in ("fedavg", "fedasync"):
        d = write_run(tmp_path / a, a, 0)
        frame = write_clients(d, 0, 5e6, rounds=5, cohort=3 if a == "fedavg" else 1)
        kept = int((frame["outcome"] == "kept").sum())
        assert kept
    study = load_study(tmp_path)
    runs = run_budgets(study).set_index("algorithm")
    clients = study.clients
    for a in ("fedavg", "fedasync"):
        assert runs.loc[a, "client_updates"] == ((clients["algorithm"] == a) & (clients["outcome"] == "kept")).sum()
        assert runs.loc[a, "rounds"] == study.metrics.loc[study.metrics["algorithm"] == a, "round"].max()
    assert len(budget_table(study)) == 2


def test_a_runs_own_count_of_client_updates_wins_over_its_clients_csv(tmp_path):
    """An asynchronous run's clients.csv misses the dispatch groups still in flight at its end (their
    rows come when a group's last client arrives); its summary.json counts every update the server used."""
    import json

    d = write_run(tmp_path / "fedasync", "fedasync", 0)
    write_clients(d, 0, 5e6, rounds=5, cohort=1)
    summary = json.loads((d / "summary.json").read_text())
    (d / "summary.json").write_text(json.dumps({**summary, "client_updates": 7}))
    assert run_budgets(load_study(tmp_path))["client_updates"].tolist() == [7.0]
