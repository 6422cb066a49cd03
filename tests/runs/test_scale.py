"""A federation of 10,000 clients with 1,000 per round builds and trains a round on this machine.

The engine, working copies and aggregation must hold at 1,000 clients per round.  A
tiny model and one local iteration keep it to well under a minute on a 2-core CPU; the test
checks the round really had 1,000 clients (their uploads counted one by one) and the run files.
"""
from __future__ import annotations

import csv
import json
import time

import pytest

from sfl_sim.config import validate
from sfl_sim.runs.build import build_run
from sfl_sim.runs.runner import run_one

BIG = {
    "rounds": 1, "eval_every_rounds": 1, "eval_samples": 200, "device": "cpu",
    "clients": {"count": 10_000, "participation": 0.1},
    "training": {"batch_size": 1000, "local_iterations": 1},  # B_k = 1 sample per client
    "data": {"partition": {"name": "dirichlet", "beta": 0.5, "min_samples_per_client": 2}},
    "model": {"name": "alexnet", "split_point": "S2",
              "params": {"conv_channels": [2, 2, 2, 2, 2], "fc_features": [4, 4]}},
}


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["scala", "fedavg"])
def test_ten_thousand_clients_one_thousand_per_round(tmp_path, algorithm):
    cfg = validate({**BIG, "algorithms": [{"name": algorithm}]})
    start = time.perf_counter()
    run = build_run(cfg, cfg.algorithms[0])
    summary = run_one(run, tmp_path / algorithm, progress=False)
    host_s = time.perf_counter() - start
    assert summary["status"] == "complete" and summary["rounds_completed"] == 1
    with (tmp_path / algorithm / "rounds.csv").open() as fh:
        (row,) = list(csv.DictReader(fh))
    assert len(row["cohort"].split()) == 1000
    by_kind = json.loads((tmp_path / algorithm / "summary.json").read_text())["traffic_and_compute_by_kind"]
    model_kind = "uplink/client_model" if algorithm == "scala" else "uplink/model"
    one_upload = by_kind[model_kind] / 1000
    assert one_upload == int(one_upload) > 0  # 1,000 equal model uploads
    print(f"{algorithm}: build + 1 round of 1,000 clients + evaluation in {host_s:.1f} s")
