"""A run on a network of cells end to end: what handovers.csv and the summary say happened is what
happened before the run's clock stopped (the radio evaluates handovers ahead of the clock)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from sfl_sim.cli import main
from tests.helpers import small_scenario, write_yaml

pytestmark = pytest.mark.slow


def test_handovers_are_those_before_the_runs_end(tmp_path) -> None:
    data = small_scenario(rounds=3, algorithms=["splitfed_v1"])
    data["cell"] = {"network": {"name": "hexgrid", "n_sites": 7, "isd_m": 200.0, "sectors_per_site": 1},
                    "mobility": {"name": "gauss_markov", "mean_speed_m_per_s": 33.0, "min_distance_m": 35.0}}
    data["server"] = {"edge": {"compute_flops_per_s": 1e12, "backhaul_bps": 1e8, "backhaul_latency_s": 0.005}}
    path = write_yaml(tmp_path, data, "net.yaml")
    assert main(["scenario", str(path), "-o", str(tmp_path / "out"), "--no-progress"]) == 0
    out = tmp_path / "out" / "splitfed_v1"
    rounds = pd.read_csv(out / "rounds.csv")
    handovers = pd.read_csv(out / "handovers.csv")
    summary = json.loads((out / "summary.json").read_text())
    end_s = float(rounds["sim_time_s"].iloc[-1])
    assert (handovers["time_s"] <= end_s).all()
    assert summary["n_cells"] == 7
    assert sum(summary["handovers"].values()) == len(handovers)
    # the radio had looked ahead (a measurement chunk past the end): with 33 m/s on 200 m cells it found
    # handovers there that the run never reached
    assert end_s < 1.0


@pytest.fixture(scope="module")
def network_slot_run(tmp_path_factory) -> tuple:
    """:func:`_network_slot_run` once for the tests that read it: ``(run dir, slots, handovers)``."""
    return _network_slot_run(tmp_path_factory.mktemp("network_slot_run"))


def _network_slot_run(tmp_path) -> tuple:
    """A tiny 7-site run with a slot-form scheduler and the slot trace (the client record is on by default)."""
    data = small_scenario(rounds=2, algorithms=["fedavg"], clients=8, participation=1.0)
    # slow clients (3e5 FLOP/s): rounds of seconds, long enough for clients at 33 m/s to change cell
    data["clients"].update({"compute_flops_per_s_min": 3e5, "compute_flops_per_s_max": 3e5})
    data["cell"] = {"network": {"name": "hexgrid", "n_sites": 7, "isd_m": 200.0, "sectors_per_site": 1},
                    "mobility": {"name": "gauss_markov", "mean_speed_m_per_s": 33.0, "min_distance_m": 35.0},
                    "scheduler": {"name": "proportional_fair", "fidelity": "slot"}}
    data["metrics"] = {"slot_trace": True}
    path = write_yaml(tmp_path, data, "net.yaml")
    assert main(["scenario", str(path), "-o", str(tmp_path / "out"), "--no-progress"]) == 0
    out = tmp_path / "out" / "fedavg"
    return out, pd.read_csv(out / "slots.csv"), pd.read_csv(out / "handovers.csv")


def test_a_network_runs_slots_carry_each_grants_cell(network_slot_run) -> None:
    out, slots, handovers = network_slot_run
    assert list(slots.columns)[-1] == "cell" and slots["cell"].dtype.kind == "i"
    assert slots["cell"].between(0, 6).all()
    assert slots["cell"].nunique() > 1  # eight clients over seven cells: not all granted by cell 0
    # each grant's cell is the serving cell when its transfer started: the client's cell at the round's
    # start (clients.csv) or one a handover of it took it to before the grant
    clients = pd.read_csv(out / "clients.csv")
    assert clients["cell"].between(-1, 6).all() and clients["cell"].nunique() > 1
    start = clients.set_index(["round", "client"])["cell"]
    for g in slots.itertuples():
        moved = handovers[(handovers["client"] == g.client) & (handovers["time_s"] <= g.time_s)]
        assert g.cell in {int(start[(g.round, g.client)]), *moved["target_cell"].tolist()}


def test_a_network_runs_summary_gives_each_cells_load(network_slot_run) -> None:
    out, _, handovers = network_slot_run
    clients = pd.read_csv(out / "clients.csv")
    summary = json.loads((out / "summary.json").read_text())
    cells = summary["cells"]
    assert [c["cell"] for c in cells] == list(range(7))
    served = clients[clients["cell"] >= 0].groupby("cell")
    for c in cells:
        mine = clients[clients["cell"] == c["cell"]]
        assert c["client_rounds"] == len(mine)
        assert c["uplink_bytes"] == int(mine["uplink_bytes"].sum())
        assert c["uplink_air_s"] == pytest.approx(float(mine["uplink_air_s"].sum()), rel=1e-12)
        assert c["handovers_in"] == int((handovers["target_cell"] == c["cell"]).sum())
        assert c["handovers_out"] == int((handovers["source_cell"] == c["cell"]).sum())
    assert sum(c["client_rounds"] for c in cells) == int(served.size().sum()) == len(clients)
    assert sum(c["handovers_in"] for c in cells) > 0  # 33 m/s over 200 m cells: clients change cell
    table = (out.parent / "summary.md").read_text().split("# Load per cell")[1].split("\n# ")[0]
    rows = [line for line in table.splitlines() if line.startswith("| fedavg |")]
    assert len(rows) == 7
    busiest = max(cells, key=lambda c: c["client_rounds"])
    assert f"| fedavg | {busiest['cell']} | {busiest['client_rounds']} |" in table


def test_a_network_runs_report_gives_its_busiest_and_least_busy_cells_share(network_slot_run, tmp_path) -> None:
    """The report's radio table of a network run: 7 cells, the largest and the smallest share of the run's
    client-rounds served (clients.csv's cell, as summary.json's cells count them), shown although the
    run lost nothing on the radio."""
    from sfl_sim.analysis import load_study
    from sfl_sim.analysis.radio_table import has_cell_load, radio_table
    from sfl_sim.analysis.report import write_report

    out, _, _ = network_slot_run
    clients = pd.read_csv(out / "clients.csv")
    cells = json.loads((out / "summary.json").read_text())["cells"]
    served = [c["client_rounds"] for c in cells]
    study = load_study(out.parent)
    assert has_cell_load(study)
    row = radio_table(study).iloc[0]
    assert row["n_cells"] == 7
    assert row["cell_share_max"] == max(served) / len(clients)
    assert row["cell_share_min"] == min(served) / len(clients)
    assert max(served) > min(served)  # eight clients over seven cells: not an even load
    report = tmp_path / "report"
    write_report([out.parent], report, figures=False)
    md = (report / "radio.md").read_text()
    assert md.startswith("# What the radio lost, and the cells' load")
    header, _, line = [x for x in md.splitlines() if x.startswith("|")][:3]
    got = dict(zip([h.strip() for h in header.split("|")], [v.strip() for v in line.split("|")], strict=True))
    assert got["cells"] == "7"
    assert got["busiest cell %"] == f"{100 * max(served) / len(clients):.1f}"
    assert got["least-busy cell %"] == f"{100 * min(served) / len(clients):.1f}"
    assert "busiest and the least-busy cell's share" in md
    assert {"n_cells", "cell_share_max", "cell_share_min"} <= set(pd.read_csv(report / "radio.csv").columns)
