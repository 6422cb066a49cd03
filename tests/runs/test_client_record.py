"""clients.csv in real runs: split and FL algorithms with drops (outage, deadline), HARQ and a timed
downlink; the time parts add up to each client's span, the longest span is the round's duration,
the counts add up to rounds.csv; a resume appends like the other logs; the switch turns it off."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
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


GRANTS = ("uplink_granted_rb_mean", "uplink_rb_s", "uplink_transport_blocks", "uplink_scheduled_rate_bps",
          "uplink_sinr_used_db")


@pytest.mark.slow
@pytest.mark.parametrize("scheduler", [{"name": "static"}, {"name": "round_robin"},
                                       {"name": "proportional_fair", "fidelity": "slot"}],
                         ids=["static", "round_robin_fluid", "proportional_fair_slot"])
def test_the_grant_columns_say_what_the_scheduler_did(tmp_path: Path, scheduler: dict) -> None:
    from sfl_sim.channel import ResourceGrid

    data = {**small_scenario(algorithms=["splitfed_v1"], rounds=2, clients=6, participation=1.0),
            "cell": {"scheduler": scheduler, "fading": {"name": "rayleigh"}}, "metrics": {"slot_trace": True}}
    run = _run(tmp_path, data) / "splitfed_v1"
    slot = scheduler.get("fidelity") == "slot"
    assert (run / "slots.csv").exists() == slot
    clients = pd.read_csv(run / "clients.csv", keep_default_na=False, na_values=[""])
    rounds = pd.read_csv(run / "rounds.csv", keep_default_na=False)
    if scheduler["name"] == "static":
        assert clients[list(GRANTS)].isna().all().all()  # no grants: the share columns say it all
        return
    cfg = load_scenario(write_yaml(tmp_path, data))
    n_rb = ResourceGrid(cfg.cell.numerology, cfg.cell.uplink_bandwidth_hz).n_rb
    # the RB-seconds of a round's rows are the band's load in rounds.csv
    for _, r in rounds.iterrows():
        mine = clients[clients["round"] == r["round"]]
        assert mine["uplink_rb_s"].sum() == pytest.approx(r["uplink_rb_load"] * n_rb * r["round_sim_time_s"],
                                                         rel=1e-9)
    assert clients["uplink_granted_rb_mean"].between(0, n_rb).all()
    assert (clients["uplink_scheduled_rate_bps"] > 0).all()
    # the SINR of the grants is not the static share's: the scheduler's RBs and fading draws
    assert not np.allclose(clients["uplink_sinr_used_db"], clients["sinr_db"])
    blocks = clients["uplink_transport_blocks"]
    assert (blocks > 0).all() if slot else blocks.isna().all()
    if slot:  # the trace's grants add up to the record's
        trace = pd.read_csv(run / "slots.csv").groupby(["round", "client"])
        slot_s = ResourceGrid(cfg.cell.numerology, cfg.cell.uplink_bandwidth_hz).slot_s
        mine = clients.set_index(["round", "client"])
        assert (trace["rbs"].sum() * slot_s).to_numpy() == pytest.approx(mine["uplink_rb_s"].to_numpy(), rel=1e-9)
        assert trace.size().to_numpy().tolist() == mine["uplink_transport_blocks"].astype(int).tolist()


def test_the_uploads_fading_gain_is_the_radio_states_at_each_uploads_start() -> None:
    from sfl_sim.config import validate
    from sfl_sim.engine.accounting import Busy
    from sfl_sim.engine.client_rounds import uploads_fading_gain
    from sfl_sim.runs.build import build_cell

    cell = build_cell(validate({"seed": 1, "clients": {"count": 4, "participation": 1.0},
                                "cell": {"fading": {"name": "jakes", "speed_m_per_s": 3.0}}}))
    busy = [Busy("uplink", 0.010, 0.020), Busy("compute", 0.020, 0.030), Busy("uplink", 0.125, 0.2)]
    gains = cell.radio.fading.power_gain_at(np.array([2, 2]), np.array([0.010, 0.125]))
    assert uploads_fading_gain(cell, 2, busy, 7.0) == pytest.approx(float(gains.mean()), rel=1e-12)
    assert math.isnan(uploads_fading_gain(cell, 2, busy[1:2], 7.0))  # it sent nothing
    block = build_cell(validate({"seed": 1, "clients": {"count": 4, "participation": 1.0},
                                 "cell": {"fading": {"name": "rayleigh"}}}))
    assert uploads_fading_gain(block, 2, busy, 7.0) == 7.0  # the draw its rate was last computed with


@pytest.mark.slow
def test_the_channel_in_time_columns(tmp_path: Path) -> None:
    from sfl_sim.channel.large_scale.pathloss import SPEED_OF_LIGHT_M_PER_S

    base = small_scenario(algorithms=["splitfed_v1"], rounds=2, clients=6, participation=1.0)
    jakes = _run(tmp_path, {**base, "cell": {"fading": {"name": "jakes", "speed_m_per_s": 3.0}}}, "jakes")
    clients = pd.read_csv(jakes / "splitfed_v1" / "clients.csv", keep_default_na=False, na_values=[""])
    assert (clients["speed_m_per_s"] == 3.0).all()
    # the default TR 36.814 macro path loss has no carrier: the cell's 2 GHz
    np.testing.assert_allclose(clients["doppler_hz"], 3.0 * 2.0e9 / SPEED_OF_LIGHT_M_PER_S, rtol=1e-12)
    assert np.isfinite(clients["fading_gain_uploads_db"]).all()
    # several uploads a round (one per iteration and the model): their mean is not the last one's gain
    assert not np.allclose(clients["fading_gain_uploads_db"], clients["fading_gain_db"])
    block = _run(tmp_path, {**base, "cell": {"fading": {"name": "rayleigh"}}}, "block")
    clients = pd.read_csv(block / "splitfed_v1" / "clients.csv", keep_default_na=False, na_values=[""])
    assert (clients["speed_m_per_s"] == 0.0).all() and clients["doppler_hz"].isna().all()
    np.testing.assert_array_equal(clients["fading_gain_uploads_db"], clients["fading_gain_db"])
