"""``server.edge`` on the real network radio end to end: a client walks (a BonnMotion trace,
``tests/channel/network/data/crossing.movements``) from site 0's cell into site 1's on a 7-site
network during the round's first local step; the migration's bytes and time in rounds.csv and the
round's clock are the hand calculation, and with ``drop`` the client's round is dropped with reason ``handover``.

Client 0 moves from (60, 35) m to (140, 81) m in 0.2 s and stays there (site 1 is at
(173.2, 100) m); client 1 stays at (-50, -30) m in site 0's cell.  The clients compute at 1 MFLOP/s,
so the handover (A3, at 0.4 s) comes while client 0 still computes its activations, and a 10 kbit/s
backhaul makes its migration (2.9 s and more) the round's critical path: client 0's server step
waits for it, long after client 1 is done.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from sfl_sim.cli import main
from sfl_sim.clients.energy.models import BACKHAUL_J_PER_BIT
from sfl_sim.config import validate
from sfl_sim.runs.build import build_run
from tests.helpers import small_scenario, write_yaml

pytestmark = pytest.mark.slow

TRACE = Path(__file__).parents[1] / "channel" / "network" / "data" / "crossing.movements"
BACKHAUL_BPS = 1e4


def _scenario(latency_s: float, policy: str) -> dict:
    data = small_scenario(rounds=1, algorithms=["splitfed_v1"], clients=2, participation=1.0,
                          partition={"name": "iid"})
    data["clients"].update({"compute_flops_per_s_min": 1e6, "compute_flops_per_s_max": 1e6})
    data["cell"] = {"network": {"name": "hexgrid", "n_sites": 7, "isd_m": 200.0, "sectors_per_site": 1},
                    "mobility": {"name": "trace", "path": str(TRACE), "format": "bonnmotion"}}
    data["server"] = {"edge": {"compute_flops_per_s": 1e12, "backhaul_bps": BACKHAUL_BPS,
                               "backhaul_latency_s": latency_s, "on_handover": policy}}
    return data


def _run(tmp_path: Path, latency_s: float, policy: str = "migrate") -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    name = f"{policy}-{latency_s}"
    path = write_yaml(tmp_path, _scenario(latency_s, policy), f"{name}.yaml")
    assert main(["scenario", str(path), "-o", str(tmp_path / name), "--no-progress"]) == 0
    out = tmp_path / name / "splitfed_v1"
    return (pd.read_csv(out / "rounds.csv"), pd.read_csv(out / "handovers.csv"),
            json.loads((out / "summary.json").read_text()))


def test_a_migration_across_a_cell_border_costs_the_hand_calculation(tmp_path) -> None:
    cfg = validate(_scenario(0.5, "migrate"))
    algorithm = build_run(cfg, cfg.algorithms[0]).algorithm
    state_bytes, aggregate_bytes = algorithm.handover_state_bytes(), algorithm.aggregate_bytes()
    assert state_bytes > 0 and aggregate_bytes > 0
    rounds, handovers, summary = _run(tmp_path, 0.5)
    [event] = handovers.itertuples()
    assert (event.client, event.source_cell, event.target_cell, event.cause) == (0, 0, 1, "a3")
    assert 0 < event.time_s < 1.0  # while client 0 computes its activations
    migration_s = 8 * state_bytes / BACKHAUL_BPS + 0.5
    row = rounds.iloc[0]
    assert (row["handovers"], row["migrations"], row["handover_drops"]) == (1, 1, 0)
    assert row["handover_lost_s"] == pytest.approx(event.interruption_s + migration_s, rel=1e-12)
    # the migration, then each cell's aggregate up and the global model down (two cells)
    assert row["backhaul_bytes"] == state_bytes + 2 * 2 * aggregate_bytes
    # and its energy at the default J/bit (one round: the round's is the run's)
    with (tmp_path / "migrate-0.5" / "splitfed_v1" / "rounds.csv").open(newline="") as fh:
        [written] = list(csv.DictReader(fh))
    assert float(written["backhaul_energy_j"]) == 8.0 * row["backhaul_bytes"] * BACKHAUL_J_PER_BIT
    assert summary["backhaul_energy_j"] == float(written["backhaul_energy_j"]) > 0
    assert summary["migrations"] == 1 and summary["handovers_in_rounds"] == 1 and summary["handovers"]["a3"] == 1
    # the round's clock: 0.5 s more latency is 0.5 s more for the migration client 0's server step
    # waits for, and 2 x 0.5 s more for the aggregation (up, then down); nothing else moves
    slower, _, _ = _run(tmp_path, 1.0)
    assert slower["round_sim_time_s"][0] - row["round_sim_time_s"] == pytest.approx(3 * 0.5, abs=1e-9)
    assert slower["handover_lost_s"][0] - row["handover_lost_s"] == pytest.approx(0.5, abs=1e-12)


def test_with_drop_the_client_crossing_is_dropped_for_its_handover(tmp_path) -> None:
    rounds, _, summary = _run(tmp_path, 0.5, policy="drop")
    row = rounds.iloc[0]
    assert (row["handovers"], row["migrations"], row["handover_drops"], row["dropped"]) == (1, 0, 1, "0:handover")
    assert summary["dropped_clients_by_cause"] == {"handover": 1} and summary["handover_drops"] == 1
