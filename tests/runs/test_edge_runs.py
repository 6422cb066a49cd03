"""``server.edge`` end to end on today's single cell (no network): the backhaul's aggregation in
each round's clock and bytes, the rounds.csv columns and the summary's totals, and the one-line
refusals."""
from __future__ import annotations

import csv
import json
import math

import pandas as pd
import pytest

from sfl_sim.cli import main
from sfl_sim.clients.energy.models import BACKHAUL_J_PER_BIT
from sfl_sim.config import validate
from sfl_sim.errors import ConfigError
from sfl_sim.runs.build import build_handover_policy
from sfl_sim.runs.rundir.reader import RunFiles
from sfl_sim.runs.rundir.schema import ROUNDS_COLUMNS, ROUNDS_FILE
from tests.helpers import small_scenario, write_yaml

pytestmark = pytest.mark.slow

EDGE = {"compute_flops_per_s": 1.0e12, "backhaul_bps": 1.0e6, "backhaul_latency_s": 0.25}
EDGE_COLUMNS = ["handovers", "handover_lost_s", "migrations", "handover_drops", "backhaul_bytes"]


def _run(tmp_path, name: str, edge: dict | None, algorithm: str = "fedavg",
         energy: bool = True) -> tuple[pd.DataFrame, dict]:
    data = small_scenario(rounds=2, algorithms=[algorithm])
    if edge is not None:
        data["server"] = {"edge": edge}
    if not energy:
        data["energy"] = {"enabled": False}
    path = write_yaml(tmp_path, data, f"{name}.yaml")
    assert main(["scenario", str(path), "-o", str(tmp_path / name), "--no-progress"]) == 0
    out = tmp_path / name / algorithm
    return pd.read_csv(out / "rounds.csv"), json.loads((out / "summary.json").read_text())


def test_one_cell_aggregates_over_the_backhaul_each_round(tmp_path) -> None:
    plain, plain_summary = _run(tmp_path, "plain", None)
    edged, summary = _run(tmp_path, "edge", EDGE)
    assert list(edged.columns) == list(ROUNDS_COLUMNS)
    cohort = len(str(edged["cohort"][0]).split())
    model_bytes = plain_summary["traffic_and_compute_by_kind"]["downlink/model"] // (2 * cohort)  # the broadcasts
    one_way_s = 8 * model_bytes / EDGE["backhaul_bps"] + EDGE["backhaul_latency_s"]
    # the edge (as fast as the server) changes nothing else: each round gains the cell's aggregate
    # up and the global model down
    assert (edged["round_sim_time_s"] - plain["round_sim_time_s"]).tolist() == pytest.approx([2 * one_way_s] * 2)
    assert edged["backhaul_bytes"].tolist() == [2 * model_bytes] * 2
    assert edged[EDGE_COLUMNS[:-1]].to_numpy().sum() == 0 and plain[EDGE_COLUMNS].to_numpy().sum() == 0
    assert summary["backhaul_bytes"] == 4 * model_bytes and summary["handovers_in_rounds"] == 0
    assert "backhaul_bytes" not in plain_summary  # without an edge the summary is as it was
    assert "backhaul_energy_j" not in plain_summary and plain["backhaul_energy_j"].tolist() == [0.0, 0.0]
    # the backhaul's energy, 8 x bytes x J/bit (the default, Aslan et al. 2018), per round and in all
    energy = _column(tmp_path / "edge" / "fedavg", "backhaul_energy_j")
    assert energy == [float(8.0 * (2 * model_bytes) * BACKHAUL_J_PER_BIT)] * 2 and energy[0] > 0
    assert summary["backhaul_energy_j"] == 8.0 * summary["backhaul_bytes"] * BACKHAUL_J_PER_BIT
    assert summary["backhaul_energy_j"] == pytest.approx(math.fsum(energy), rel=1e-15)
    # summary.md: the backhaul section for the edge run, none for the run without
    table = (tmp_path / "edge" / "summary.md").read_text().split("# Edge servers: the backhaul")[1].split("\n# ")[0]
    assert f"| fedavg | 0 | 0 | {4 * model_bytes / 1e6:.3g} | {summary['backhaul_energy_j']:.3g} |" in table
    assert "backhaul" not in (tmp_path / "plain" / "summary.md").read_text()


def _column(run_dir, column: str) -> list[float | str]:
    """A rounds.csv column as written (pandas' default float parser may miss the last bit)."""
    with (run_dir / "rounds.csv").open(newline="") as fh:
        return [float(r[column]) if r[column] else r[column] for r in csv.DictReader(fh)]


def test_the_backhaul_energy_follows_its_j_per_bit_and_the_energy_ledger(tmp_path) -> None:
    _, summary = _run(tmp_path, "half", {**EDGE, "backhaul_j_per_bit": 1e-6})
    energy = _column(tmp_path / "half" / "fedavg", "backhaul_energy_j")
    assert energy == [8.0 * b * 1e-6 for b in _column(tmp_path / "half" / "fedavg", "backhaul_bytes")]
    assert summary["backhaul_energy_j"] == 8.0 * summary["backhaul_bytes"] * 1e-6 > 0
    _, off = _run(tmp_path, "off", EDGE, energy=False)  # no energy ledger: no energy, as client_energy_j
    assert _column(tmp_path / "off" / "fedavg", "backhaul_energy_j") == ["", ""]
    assert "backhaul_energy_j" not in off and off["backhaul_bytes"] > 0
    # a run directory written before the column reads it empty, the other columns as written
    run_dir = tmp_path / "half" / "fedavg"
    rounds = pd.read_csv(run_dir / "rounds.csv", dtype=str, keep_default_na=False)
    rounds.drop(columns="backhaul_energy_j").to_csv(run_dir / "rounds.csv", index=False)
    header, *rows = RunFiles(run_dir).log_text(ROUNDS_FILE).splitlines()
    assert header.split(",") == list(ROUNDS_COLUMNS) and len(rows) == 2
    read = [dict(zip(ROUNDS_COLUMNS, row.split(","), strict=True)) for row in rows]
    assert [r["backhaul_energy_j"] for r in read] == ["", ""]
    assert [r["backhaul_bytes"] for r in read] == rounds["backhaul_bytes"].tolist()


def test_a_split_algorithm_runs_its_steps_on_the_edge(tmp_path) -> None:
    fast, summary = _run(tmp_path, "fast", {**EDGE, "on_handover": "drop"}, algorithm="splitfed_v1")
    slow, _ = _run(tmp_path, "slow", {**EDGE, "compute_flops_per_s": 1.0e7}, algorithm="splitfed_v1")
    assert (fast["backhaul_bytes"] > 0).all() and summary["migrations"] == 0 and summary["handover_drops"] == 0
    # the per-client server steps run on the (one) edge: a slow edge slows every round by about
    # their FLOPs at its rate (less the little the clients' own work overlaps with them)
    seconds = (slow["server_flops"] / 1.0e7 - fast["server_flops"] / EDGE["compute_flops_per_s"]).tolist()
    assert (slow["round_sim_time_s"] - fast["round_sim_time_s"]).tolist() == pytest.approx(seconds, rel=0.01)


@pytest.mark.parametrize(("edge", "message"), [
    ({"on_handover": "teleport"}, "server.edge.on_handover.name: "),
    ({"on_handover": {"name": "migrate", "speed": 2}}, "server.edge.on_handover: "),
    ({"on_handover": "tests.runs.test_edge_runs:NotAPolicy"}, "server.edge.on_handover: "),
])
def test_a_bad_policy_is_one_line_naming_the_field(edge, message) -> None:
    cfg = validate({"server": {"edge": edge}})
    with pytest.raises(ConfigError) as info:
        build_handover_policy(cfg)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


class NotAPolicy:
    """No ``decide``: refused by the protocol check."""


def test_an_asynchronous_algorithm_with_an_edge_is_refused(tmp_path, capsys) -> None:
    data = small_scenario(rounds=1, algorithms=[{"name": "fedbuff", "concurrency": 3, "buffer_size": 2}])
    data["server"] = {"edge": EDGE}
    path = write_yaml(tmp_path, data)
    assert main(["scenario", str(path), "-o", str(tmp_path / "out"), "--no-progress"]) != 0
    assert "server.edge: got" in capsys.readouterr().err


def test_scalas_cloud_steps_take_their_payloads_over_the_backhaul(tmp_path) -> None:
    plain, plain_summary = _run(tmp_path, "plain", None, algorithm="scala")
    edged, summary = _run(tmp_path, "edge", EDGE, algorithm="scala")
    by_kind, plain_kind = summary["traffic_and_compute_by_kind"], plain_summary["traffic_and_compute_by_kind"]
    # every iteration's activations and labels go from the cell's edge to the cloud, the gradients back
    for kind, air in (("activations", "uplink/activations"), ("labels", "uplink/labels"),
                      ("activation_gradients", "downlink/activation_gradients")):
        assert by_kind[f"backhaul/{kind}"] == by_kind[air] == plain_kind[air] > 0
    assert summary["backhaul_bytes"] == sum(v for k, v in by_kind.items() if k.startswith("backhaul/"))
    assert edged["backhaul_bytes"].sum() == summary["backhaul_bytes"] and summary["migrations"] == 0
    # each iteration waits for two backhaul crossings at least (up, then down)
    iterations = small_scenario(rounds=2)["training"]["local_iterations"]
    slower = (edged["round_sim_time_s"] - plain["round_sim_time_s"]).tolist()
    assert min(slower) > iterations * 2 * EDGE["backhaul_latency_s"]


def test_an_edge_run_is_not_re_timed_and_a_study_trains_it(tmp_path, capsys) -> None:
    """The rounds of a run with edge servers are not in its work record (handovers, migrations,
    the backhaul): ``sfl-sim retime`` refuses it in one line naming ``server.edge`` before any work,
    and a study does not plan to re-time edge runs from one another."""
    from sfl_sim.study.plan import StudyRun
    from sfl_sim.study.waves import training_groups

    _run(tmp_path, "edge", EDGE)
    capsys.readouterr()
    code = main(["retime", str(tmp_path / "edge" / "fedavg"), "-o", str(tmp_path / "again"),
                 "--set", "server.edge.backhaul_bps=2e6", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and "server.edge" in err[0] and "work record" in err[0]
    assert not (tmp_path / "again").exists() or not any((tmp_path / "again").iterdir())
    base = small_scenario(rounds=2, algorithms=["fedavg"])
    plain = [StudyRun(f"r{i}", {"algorithm": "fedavg", "b": b}, {**base, "cell": {"uplink_bandwidth_hz": b}})
             for i, b in enumerate((10e6, 20e6))]
    edged = [StudyRun(r.name + "e", r.coordinates, {**r.scenario, "server": {"edge": EDGE}}) for r in plain]
    assert len(training_groups(plain)) == 1 and training_groups(edged) == []
