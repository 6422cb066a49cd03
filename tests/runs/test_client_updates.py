"""Client updates (client-rounds whose update the server used) beside rounds: in ``summary.json``,
the printed table, ``summary.csv`` and ``summary.md`` — an asynchronous round is one aggregation."""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest

from sfl_sim.analysis.readers import read_summary
from sfl_sim.cli import main
from sfl_sim.runs.rundir import upgrade
from sfl_sim.runs.rundir.files import RunDir
from tests.helpers import small_scenario, write_yaml

#: End-to-end runs of the real training (each takes a second or more): the inner loop leaves them out.
pytestmark = pytest.mark.slow

BUFF = {"name": "fedbuff", "concurrency": 3, "buffer_size": 2}


def test_client_updates_are_the_kept_rows_of_clients_csv_and_are_shown_beside_rounds(tmp_path, capsys):
    path = write_yaml(tmp_path, small_scenario(rounds=3, algorithms=["fedavg", BUFF]))
    code = main(["scenario", str(path), "-o", str(tmp_path / "out"), "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0
    counts = {}
    for name in ("fedavg", "fedbuff"):
        summary = json.loads((tmp_path / "out" / name / "summary.json").read_text())
        kept = int((pd.read_csv(tmp_path / "out" / name / "clients.csv")["outcome"] == "kept").sum())
        assert summary["client_updates"] == kept == summary["client_rounds"] - summary["dropped_clients"]
        counts[name] = kept
    assert counts == {"fedavg": 9, "fedbuff": 6}  # 3 rounds of a cohort of 3; 3 aggregations of 2
    header = next(line for line in printed.splitlines() if line.startswith("run "))
    assert header.split()[:3] == ["run", "rounds", "updates"]
    totals = printed.split(header)[1].splitlines()[1:3]  # the totals' rows, before the time-to-accuracy table
    assert [line.split()[:3] for line in totals] == [["fedavg", "3", "9"], ["fedbuff", "3", "6"]]
    with (tmp_path / "out" / "summary.csv").open() as fh:
        assert {r["label"]: r["client_updates"] for r in csv.DictReader(fh)} == {"fedavg": "9", "fedbuff": "6"}
    assert "| status | rounds | updates |" in (tmp_path / "out" / "summary.md").read_text()


def test_a_summary_made_before_client_updates_reads_them_from_its_drop_counts(tmp_path):
    old = {"schema_version": 1, "status": "complete", "client_rounds": 12,
           "dropped_clients_by_cause": {"outage": 2, "deadline": 1}}
    assert upgrade.summary(old)["client_updates"] == 9 and "client_updates" not in old
    assert upgrade.summary({**old, "client_updates": 4})["client_updates"] == 4  # recorded: kept as is
    assert "client_updates" not in upgrade.summary({"schema_version": 1})  # nothing to count it from: unknown
    (tmp_path / "summary.json").write_text(json.dumps(old))
    assert read_summary(tmp_path / "summary.json")["client_updates"] == 9
    assert (RunDir(tmp_path).read_summary() or {})["client_updates"] == 9
