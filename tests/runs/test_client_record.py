"""clients.csv in real runs: split and FL algorithms with drops (outage, deadline), HARQ and a timed
downlink; the time parts add up to each client's span, the longest span is the round's duration,
the counts add up to rounds.csv; a resume appends like the other logs; the switch turns it off."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from sfl_sim.cli import main
from sfl_sim.config import load_scenario
from sfl_sim.data import DATASETS
from sfl_sim.runs import runner
from sfl_sim.runs.rundir.schema import CLIENT_KEPT, CLIENT_SPAN_COLUMN, CLIENT_TIME_COLUMNS, CLIENTS_COLUMNS
from tests.helpers import small_scenario, write_yaml


def _lossy(cell: dict, stragglers: dict) -> dict:
    """Six clients on a 1 MHz uplink with MCS rates and Rayleigh fading per transmission, a unicast
    downlink, and ``cell`` and ``stragglers`` on top."""
    return {**small_scenario(algorithms=["fedavg", "splitfed_v1"], rounds=3, clients=6, participation=1.0),
            "cell": {"rate": {"name": "mcs_table"}, "fading": {"name": "rayleigh"}, "coherence": "per_transmission",
                     "downlink": {"mode": "unicast"}, "uplink_bandwidth_hz": 1.0e6, **cell},
            "stragglers": stragglers}


#: Outage drops (a threshold, one retransmission) with HARQ; the server waits for every client.
OUTAGE = _lossy({"harq": {"mode": "sampled", "max_transmissions": 4},
                 "outage": {"min_snr_db": 26.0, "on_outage": "retransmit", "max_attempts": 2}}, {"policy": "wait_all"})
#: Deadline drops, no outage threshold: an upload the deadline cut off ends without counting more.
DEADLINE = _lossy({}, {"policy": "deadline", "deadline_s": 0.045})
#: Both: an upload cut off by the deadline while it retransmits after an outage.
BOTH = _lossy({"harq": {"mode": "sampled", "max_transmissions": 4},
               "outage": {"min_snr_db": 26.0, "on_outage": "retransmit", "max_attempts": 2}},
              {"policy": "deadline", "deadline_s": 0.045})

#: clients.csv columns that sum over a round's rows to its rounds.csv value.
SUMMED = ("uplink_attempts", "retransmissions", "dropped_transmissions", "harq_retransmissions", "uplink_bytes",
          "downlink_bytes", "client_flops")


def _run(tmp_path: Path, data: dict, out: str = "out") -> Path:
    assert main(["scenario", str(write_yaml(tmp_path, data)), "-o", str(tmp_path / out), "--no-progress"]) == 0
    return tmp_path / out


@pytest.mark.slow
@pytest.mark.parametrize(("data", "wanted"), [
    (OUTAGE, {"outage"}),
    (DEADLINE, {"deadline"}),
    (BOTH, {"outage", "deadline"}),
], ids=["outage+harq", "deadline", "deadline+outage_retransmission"])
def test_the_record_adds_up_to_the_rounds_for_split_and_fl(tmp_path: Path, data: dict, wanted: set) -> None:
    out = _run(tmp_path, data)
    causes = set()
    for label in ("fedavg", "splitfed_v1"):
        clients = pd.read_csv(out / label / "clients.csv", keep_default_na=False, na_values=[""])
        rounds = pd.read_csv(out / label / "rounds.csv", keep_default_na=False)
        assert tuple(clients.columns) == CLIENTS_COLUMNS
        parts = clients[list(CLIENT_TIME_COLUMNS)].to_numpy()
        for row, span in zip(parts, clients[CLIENT_SPAN_COLUMN], strict=True):
            assert math.fsum(row) == pytest.approx(span, rel=1e-12, abs=0.0)
        assert (parts >= 0).all()
        for _, r in rounds.iterrows():
            mine = clients[clients["round"] == r["round"]]
            assert mine["client"].tolist() == [int(k) for k in r["cohort"].split()]  # cohort order
            assert mine[CLIENT_SPAN_COLUMN].max() == pytest.approx(r["round_sim_time_s"], rel=1e-12, abs=0.0)
            for column in SUMMED:
                assert mine[column].sum() == pytest.approx(r[column], rel=1e-12, abs=0.0), column
            dropped = {f"{k}:{why}" for k, why in zip(mine["client"], mine["outcome"], strict=True)
                       if why != CLIENT_KEPT}
            assert dropped == set(str(r["dropped"]).split()) and len(dropped) == r["dropped_clients"]
        causes |= set(clients["outcome"])
        assert (clients["downlink_rate_bps"] > 0).all() and clients["cqi"].between(0, 15).all()
        assert clients["downlink_s"].sum() > 0
        assert (clients["harq_wait_s"].sum() > 0) == ("harq" in data["cell"])
    assert {CLIENT_KEPT, *wanted} <= causes  # the setting the test needs


@pytest.mark.slow
def test_a_resumed_run_appends_to_the_record_and_the_switch_turns_it_off(tmp_path: Path) -> None:
    data = {**OUTAGE, "algorithms": [{"name": "splitfed_v1"}]}
    full = _run(tmp_path, data, "full") / "splitfed_v1" / "clients.csv"
    path = write_yaml(tmp_path, data)
    cfg = load_scenario(path, extra={"output_dir": str(tmp_path / "cut")})
    dataset = DATASETS.create("fashion_mnist", max_train_samples=600, max_test_samples=200).load()

    def interrupt(rnd: int, info: dict) -> None:
        if rnd == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run_one(runner.build_run(cfg, cfg.algorithms[0], dataset), tmp_path / "cut" / "splitfed_v1",
                       progress=False, on_round=interrupt)
    assert main(["scenario", str(path), "-o", str(tmp_path / "cut"), "--resume", "--no-progress"]) == 0
    assert (tmp_path / "cut" / "splitfed_v1" / "clients.csv").read_text() == full.read_text()
    off = _run(tmp_path, {**data, "metrics": {"client_record": False}}, "off") / "splitfed_v1"
    assert not (off / "clients.csv").exists() and (off / "rounds.csv").exists()
