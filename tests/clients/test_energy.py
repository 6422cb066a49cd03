"""The client energy ledger: models and their sources, the ledger's rules, a hand calculation of one
round of SCALA and of FedAvg, closure across energy.csv, rounds.csv and summary.json, resume."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import sfl_sim
from sfl_sim.clients.energy import ENERGY, DvfsEnergy, EnergyLedger, PerFlopEnergy, busy_seconds, check_energy, models
from sfl_sim.clients.energy.conformance import EnergyConformanceError
from sfl_sim.clients.selection import BatteryAwareSelection, UniformSelection, select_online
from sfl_sim.config import validate
from sfl_sim.engine import DELIVERED, Busy, Lost
from sfl_sim.errors import ConfigError
from tests.helpers import ROOT, finished_run, read_rows, run_cli, small_scenario, two_client_simulator, write_yaml

SCENARIO = ROOT / "sfl_sim" / "scenarios" / "cellular_100clients.yaml"


# -- the defaults and their sources -------------------------------------------------------------------
def test_default_constants_are_the_sources_values_as_quoted() -> None:
    # Huang et al., MobiSys 2012: Table 4 (LTE alpha_u 438.39 mW/Mbps, alpha_d 51.97 mW/Mbps,
    # beta 1288.04 mW) and Table 3 (RRC_CONNECTED tail: 1060.0 mW for 11576 ms).
    assert models.HUANG_2012 == {"alpha_u_w_per_mbps": 438.39e-3, "alpha_d_w_per_mbps": 51.97e-3,
                                 "beta_w": 1288.04e-3, "tail_power_w": 1060.0e-3, "tail_s": 11576e-3}
    assert models.YANG_2021_KAPPA == 1e-28  # Yang et al., IEEE TWC 2021, Sec. VI
    assert pytest.approx((0.9 + 3.7) / 2 * 1e-12, rel=1e-15) == models.HOROWITZ_2014_J_PER_FLOP  # ISSCC 2014
    assert pytest.approx(400 / 19.5e12, rel=1e-15) == models.SERVER_J_PER_FLOP  # A100 SXM: 400 W, 19.5 TFLOP/s
    radio = models.RadioParams()
    assert (radio.circuit_power_w, radio.rx_power_w) == (1.28804, 1.28804)
    # Aslan et al., J. Industrial Ecology 2018, abstract: 0.06 kWh/GB (2015); 1 kWh = 3.6e6 J, GB = 8e9 bit
    assert models.ASLAN_2018_KWH_PER_GB == 0.06
    assert pytest.approx(2.7e-5, rel=1e-15) == models.BACKHAUL_J_PER_BIT
    assert pytest.approx(0.06, rel=1e-15) == models.BACKHAUL_J_PER_BIT * 8e9 / 3.6e6  # back to kWh/GB
    assert validate({"server": {"edge": {}}}).server.edge.backhaul_j_per_bit == models.BACKHAUL_J_PER_BIT
    assert (radio.idle_power_w, radio.tail_power_w, radio.tail_s, radio.rrc_tail) == (1.06, 1.06, 11.576, False)


def test_every_constant_of_the_default_profile_is_in_the_scenario_file_with_its_default() -> None:
    energy = yaml.safe_load(SCENARIO.read_text())["energy"]
    built = ENERGY.build(energy["device"]["name"])
    device = {k: v for k, v in energy["device"].items() if k != "name"}
    assert device == built.params.model_dump()
    assert energy["server_j_per_flop"] == validate({}).energy.server_j_per_flop == models.SERVER_J_PER_FLOP
    assert validate({}).energy.device.name == energy["device"]["name"] and energy["battery"] is None
    text = SCENARIO.read_text().split("\nenergy:")[1]
    for key in device:  # each with its unit or source on its line
        line = next(x for x in text.splitlines() if x.strip().startswith(f"{key}:"))
        assert "#" in line, line


# -- the models -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", [PerFlopEnergy(), DvfsEnergy(), DvfsEnergy(rrc_tail=True)], ids=repr)
def test_built_in_models_pass_the_conformance_check(model) -> None:
    assert "additive" in check_energy(model)


def test_the_conformance_check_names_a_model_with_negative_energy() -> None:
    class Broken(PerFlopEnergy):
        def idle_j(self, seconds: float) -> float:
            return -seconds

    with pytest.raises(EnergyConformanceError, match="finite, non-negative"):
        check_energy(Broken())


def test_model_equations() -> None:
    dvfs = DvfsEnergy(kappa=2e-28, flops_per_cycle=4.0, pa_efficiency=0.5, circuit_power_w=0.1)
    assert dvfs.compute_j(8e9, 4e9) == pytest.approx(2e-28 * 2e9 * 1e9 ** 2, rel=1e-15)
    assert dvfs.transmit_j(0.2, 3.0) == pytest.approx((0.2 / 0.5 + 0.1) * 3.0, rel=1e-15)
    tail = DvfsEnergy(rrc_tail=True, tail_power_w=1.0, tail_s=10.0)
    assert tail.tail_j(math.inf, 4.0) == pytest.approx(6.0)  # 4 s of the tail already inside the round
    assert tail.tail_j(2.0, 4.0) == pytest.approx(2.0)  # the next activity comes 2 s after the round
    assert tail.tail_j(math.inf, 12.0) == 0.0 and DvfsEnergy().tail_j(math.inf, 0.0) == 0.0


def test_busy_seconds_counts_overlaps_once() -> None:
    assert busy_seconds([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.8)]) == pytest.approx(4.0)
    assert busy_seconds([]) == 0.0


def test_ledger_rules_overlap_cut_at_the_end_and_a_client_that_left() -> None:
    model = PerFlopEnergy(j_per_flop=1.0, pa_efficiency=1.0, circuit_power_w=0.0, rx_power_w=10.0,
                          idle_power_w=100.0)
    ledger = EnergyLedger(model, np.array([1.0, 1.0]), 0.5)

    class Ctx:
        cohort = np.array([0, 1])
        start_s = 10.0
        busy = {0: [Busy("compute", 10.0, 12.0, flops=2.0), Busy("uplink", 11.0, 13.0, tx_power_w=1.0),
                    Busy("compute", 19.0, 21.0, flops=4.0)],  # cut at the round's end (20 s): half its FLOPs
                1: [Busy("downlink", 10.0, 11.0), Busy("uplink", 11.0, 12.0, tx_power_w=2.0)]}
        left_s = {1: 12.0}  # lost after outage at 12 s: out of the round from then on

    zero, one = ledger.charge_round(3, Ctx, 20.0)
    assert (zero.compute_j, zero.uplink_j, zero.downlink_j) == (2.0 + 2.0, 2.0, 0.0)
    assert zero.idle_j == pytest.approx(100.0 * (10.0 - 3.0 - 1.0))  # busy: [10, 13] and [19, 20]
    assert (one.compute_j, one.uplink_j, one.downlink_j, one.idle_j) == (0.0, 2.0, 10.0, 0.0)
    assert ledger.spent_j.tolist() == [zero.total_j, one.total_j]
    assert ledger.summary(4.0) == {"client_energy_j": zero.total_j + one.total_j,
                                   "client_energy_j_max": zero.total_j, "server_energy_j": 2.0}


def test_a_non_finite_charge_is_refused_where_it_arises_and_never_recorded() -> None:
    class Overflowing(PerFlopEnergy):  # a plug-in whose arithmetic overflows
        def compute_j(self, flops: float, flops_per_s: float) -> float:
            return math.inf

    ledger = EnergyLedger(Overflowing(), np.array([1.0]), 0.5)

    class Ctx:
        cohort = np.array([0])
        start_s = 0.0
        busy = {0: [Busy("compute", 0.0, 1.0, flops=2.0)]}
        left_s: dict = {}

    with pytest.raises(ValueError) as info:
        ledger.charge_round(1, Ctx, 1.0)
    assert "client 0" in str(info.value) and "not finite" in str(info.value) and "\n" not in str(info.value)
    assert ledger.spent_j.tolist() == [0.0]  # nothing non-finite kept for summary.json or energy.csv


# -- one round by hand ----------------------------------------------------------------------------------
HAND_MODELS = {
    "per_flop": {"name": "per_flop", "j_per_flop": 1e-9, "pa_efficiency": 0.5, "circuit_power_w": 0.1,
                 "rx_power_w": 0.3, "idle_power_w": 0.05},
    "dvfs": {"name": "dvfs", "kappa": 1e-27, "flops_per_cycle": 4.0, "pa_efficiency": 0.4, "circuit_power_w": 0.7,
             "rx_power_w": 0.3, "idle_power_w": 0.02},
}


def _csv(path: Path) -> list[dict]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["scala", "fedavg"])
@pytest.mark.parametrize("device", sorted(HAND_MODELS))
def test_one_round_by_hand_equals_the_ledger(tmp_path, capsys, algorithm, device) -> None:
    # One client per round, so each quantity of the round in rounds.csv is that client's; its rate
    # and speed are its row of cell.csv (the equal share of the cohort of one: the whole band).
    data = {**small_scenario(algorithms=[algorithm], rounds=1, participation=1 / 6),
            "energy": {"device": HAND_MODELS[device], "server_j_per_flop": 3e-11}}
    _, out = finished_run(tmp_path, capsys, data)
    run = out / algorithm
    (rnd,) = _csv(run / "rounds.csv")
    client = int(rnd["cohort"])
    cell = _csv(run / "cell.csv")[client]
    flops, nbytes = float(rnd["client_flops"]), float(rnd["uplink_bytes"])
    speed, rate = float(cell["compute_flops_per_s"]), float(cell["uplink_rate_bps"])
    p = HAND_MODELS[device]
    if device == "per_flop":
        compute_j = flops * p["j_per_flop"]
    else:
        compute_j = p["kappa"] * (flops / p["flops_per_cycle"]) * (speed / p["flops_per_cycle"]) ** 2
    airtime_s = 8 * nbytes / rate
    uplink_j = (0.2 / p["pa_efficiency"] + p["circuit_power_w"]) * airtime_s  # cell.client_tx_power_w 0.2 W
    idle_s = float(rnd["round_sim_time_s"]) - flops / speed - airtime_s  # no overlap: one thing at a time
    assert idle_s > 0 if algorithm == "scala" else idle_s == pytest.approx(0.0, abs=1e-15)  # SCALA waits for the server
    idle_j = p["idle_power_w"] * idle_s
    (row,) = _csv(run / "energy.csv")
    assert (int(row["round"]), int(row["client"])) == (1, client)
    assert float(row["compute_j"]) == pytest.approx(compute_j, rel=1e-12)
    assert float(row["uplink_j"]) == pytest.approx(uplink_j, rel=1e-12)
    assert float(row["downlink_j"]) == 0.0  # cell.downlink.mode ideal: no air time
    assert float(row["idle_j"]) == pytest.approx(idle_j, rel=1e-9, abs=1e-15)
    total = compute_j + uplink_j + idle_j
    assert float(row["total_j"]) == pytest.approx(total, rel=1e-12)
    assert float(rnd["client_energy_j"]) == pytest.approx(total, rel=1e-12)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["client_energy_j"] == summary["client_energy_j_max"] == pytest.approx(total, rel=1e-12)
    assert summary["server_energy_j"] == pytest.approx(float(rnd["server_flops"]) * 3e-11, rel=1e-12)


# -- the ledger closes; resume ------------------------------------------------------------------------------
def _closes(run: Path) -> None:
    energy, rounds = _csv(run / "energy.csv"), _csv(run / "rounds.csv")
    summary = json.loads((run / "summary.json").read_text())
    per_client: dict[int, float] = {}
    for rnd in rounds:
        mine = [r for r in energy if r["round"] == rnd["round"]]
        assert sorted(int(r["client"]) for r in mine) == sorted(map(int, rnd["cohort"].split()))
        for r in mine:
            parts = [float(r[k]) for k in ("compute_j", "uplink_j", "downlink_j", "idle_j")]
            assert float(r["total_j"]) == pytest.approx(sum(parts), rel=1e-12)
            per_client[int(r["client"])] = per_client.get(int(r["client"]), 0.0) + float(r["total_j"])
        assert float(rnd["client_energy_j"]) == pytest.approx(math.fsum(float(r["total_j"]) for r in mine), rel=1e-12)
    assert summary["client_energy_j"] == pytest.approx(math.fsum(float(r["client_energy_j"]) for r in rounds),
                                                       rel=1e-12)
    assert summary["client_energy_j_max"] == pytest.approx(max(per_client.values()), rel=1e-12)
    assert summary["server_energy_j"] == pytest.approx(
        summary["server_flops"] * validate({}).energy.server_j_per_flop, rel=1e-12)


@pytest.mark.slow
def test_the_ledger_closes_with_the_default_profile_and_a_timed_downlink(tmp_path, capsys) -> None:
    data = {**small_scenario(algorithms=["scala", "fedavg"], rounds=2),
            "cell": {"downlink": {"mode": "broadcast"}}}
    _, out = finished_run(tmp_path, capsys, data)
    for label in ("scala", "fedavg"):
        _closes(out / label)
        assert any(float(r["downlink_j"]) > 0 for r in _csv(out / label / "energy.csv"))


@pytest.mark.slow
@pytest.mark.parametrize("battery", [None, {"capacity_min_j": 0.002, "capacity_max_j": 0.02}],
                         ids=["plain", "battery"])
def test_resume_reproduces_energy_csv(tmp_path, capsys, battery) -> None:
    data = {**small_scenario(algorithms=["scala"], rounds=2), "eval_every_rounds": 2, "energy": {"battery": battery}}
    path, out = finished_run(tmp_path, capsys, data)
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume", "--rounds", "4")
    assert code == 0, err
    straight = write_yaml(tmp_path, {**data, "rounds": 4}, "four.yaml")
    assert run_cli(capsys, str(straight), "-o", str(tmp_path / "straight"))[0] == 0
    resumed = (out / "scala" / "energy.csv").read_bytes()
    assert resumed == (tmp_path / "straight" / "scala" / "energy.csv").read_bytes()
    assert [r["round"] for r in read_rows(out / "scala" / "energy.csv")][-1] == "4"
    assert (json.loads((out / "scala" / "summary.json").read_text())["client_energy_j"]
            == json.loads((tmp_path / "straight" / "scala" / "summary.json").read_text())["client_energy_j"])
    _closes(out / "scala")


@pytest.mark.slow
def test_energy_disabled_writes_no_energy_file_and_an_empty_column(tmp_path, capsys) -> None:
    data = {**small_scenario(rounds=1), "energy": {"enabled": False}}
    _, out = finished_run(tmp_path, capsys, data)
    assert not (out / "fedavg" / "energy.csv").exists()
    assert [r["client_energy_j"] for r in _csv(out / "fedavg" / "rounds.csv")] == [""]
    assert "client_energy_j" not in json.loads((out / "fedavg" / "summary.json").read_text())


# -- bad input ------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("override, words", [
    ("energy.device.pa_efficiency=1.5", ["energy.device.pa_efficiency", "1.5", "<= 1"]),
    ("energy.device.pa_efficiency=0", ["energy.device.pa_efficiency", "> 0"]),
    ("energy.device.kappa=-1", ["energy.device.kappa", "-1", ">= 0"]),
    ("energy.device.idle_power_w=.inf", ["energy.device.idle_power_w", "inf", "finite"]),
    ("energy.device={name: per_flop, j_per_flop: .nan}", ["energy.device.j_per_flop", "nan", "finite"]),
    ("energy.server_j_per_flop=-1", ["energy.server_j_per_flop", "-1"]),
    ("energy.battery={capacity_min_j: -5, capacity_max_j: 10}", ["energy.battery.capacity_min_j", "-5"]),
    ("energy.battery={capacity_min_j: 50, capacity_max_j: 10}", ["energy.battery.capacity_max_j", "capacity_min_j"]),
    ("energy.device.pa_efficiency=.nan", ["energy.device.pa_efficiency", "nan", "> 0 and <= 1"]),
    ("energy.device.pa_efficiency=-0.1", ["energy.device.pa_efficiency", "-0.1", "> 0 and <= 1"]),
    ("energy.device={name: per_flop, pa_efficiency: .inf}", ["energy.device.pa_efficiency", "inf", "finite"]),
    ("energy.device.kappa=.nan", ["energy.device.kappa", "nan", "finite"]),
    ("energy.device.flops_per_cycle=0", ["energy.device.flops_per_cycle", "0", ">= 0.001"]),
    ("energy.device.circuit_power_w=-1", ["energy.device.circuit_power_w", "-1", ">= 0"]),
    ("energy.device.rx_power_w=.nan", ["energy.device.rx_power_w", "nan", "finite"]),
    ("energy.device.tail_power_w=-0.5", ["energy.device.tail_power_w", "-0.5", ">= 0"]),
    ("energy.device.tail_s=.inf", ["energy.device.tail_s", "inf", "finite"]),
    ("energy.device={name: per_flop, j_per_flop: -1e-12}", ["energy.device.j_per_flop", "-1e-12", ">= 0"]),
    ("energy.server_j_per_flop=.nan", ["energy.server_j_per_flop", "nan"]),
    ("energy.server_j_per_flop=.inf", ["energy.server_j_per_flop", "inf"]),
    ("energy.battery={capacity_min_j: .nan, capacity_max_j: 10}", ["energy.battery.capacity_min_j", "nan"]),
    ("energy.battery={capacity_min_j: 1, capacity_max_j: .inf}", ["energy.battery.capacity_max_j", "inf"]),
    ("energy.battery={capacity_min_j: -1, capacity_max_j: -0.5}", ["energy.battery.capacity_min_j", "-1"]),
    ("energy={enabled: false, battery: {capacity_min_j: 1, capacity_max_j: 2}}", ["energy.enabled", "energy.battery"]),
    ("energy.device.kapa=1e-28", ["energy.device", "kapa", "kappa"]),
    # issue 35: ranges with physical meaning, so no accepted value gives inf joules
    ("energy.device.kappa=1e300", ["energy.device.kappa", "1e+300", "<= 1e-20"]),
    ("energy.device.flops_per_cycle=1e-300", ["energy.device.flops_per_cycle", "1e-300", ">= 0.001"]),
    ("energy.device.idle_power_w=1e300", ["energy.device.idle_power_w", "1e+300", "<= 10000"]),
    ("energy.device.tail_s=1e12", ["energy.device.tail_s", "1000000000000.0", "<= 3600"]),
    ("energy.device={name: per_flop, j_per_flop: 1e300}", ["energy.device.j_per_flop", "1e+300", "<= 1"]),
    ("energy.battery={capacity_min_j: 0, capacity_max_j: 0}", ["energy.battery.capacity_min_j", "0", "(0, 1e+12]"]),
    ("energy.device.name=nope", ["energy.device.name", "nope"]),
])
def test_bad_energy_input_is_one_line_naming_the_field_before_any_work(tmp_path, capsys, override, words) -> None:
    code, err = run_cli(capsys, str(SCENARIO), "-o", str(tmp_path / "out"), "--check", "--set", override)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ConfigError) as info:  # the Python API's check, the same line
        sfl_sim.check(SCENARIO, overrides=[override], output_dir=tmp_path / "api")
    assert err.strip().endswith(str(info.value)) and "\n" not in str(info.value)
    assert not (tmp_path / "api").exists()


# -- batteries ----------------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 40), data=st.data())
def test_a_client_with_too_little_energy_is_never_selected(seed, n, data) -> None:
    rng = np.random.default_rng(seed)
    ledger = EnergyLedger(PerFlopEnergy(), np.ones(n), 0.0, capacity_j=rng.uniform(0.0, 2.0, n))
    ledger.expected_j = rng.uniform(0.0, 2.0, n)
    ledger.remaining_j[rng.random(n) < 0.2] = 0.0
    eligible = ledger.selectable()
    assert not np.any(eligible & ((ledger.remaining_j < ledger.expected_j) | (ledger.remaining_j <= 0)))
    if not eligible.any():
        return  # the runner ends such a run with one line (test_no_charged_client_ends_the_run_in_one_line)
    k = data.draw(st.integers(1, n))
    for selector in (UniformSelection(), BatteryAwareSelection()):
        if isinstance(selector, BatteryAwareSelection):
            selector.observe_battery(ledger.remaining_j)
        cohort = select_online(selector, n, k, np.random.default_rng(seed), eligible)
        assert eligible[cohort].all() and cohort.size == min(k, int(eligible.sum()))


@pytest.mark.slow
def test_battery_aware_draws_in_proportion_to_the_charge_left() -> None:
    selector = BatteryAwareSelection()
    selector.observe_battery(np.array([1.0, 3.0, 0.0, 6.0]))
    rng = np.random.default_rng(0)
    counts = np.zeros(4)
    n_draws = 20000
    for _ in range(n_draws):
        counts[selector.select(4, 1, rng, available=np.array([True, True, False, True]))] += 1
    p = np.array([0.1, 0.3, 0.0, 0.6])
    # binomial standard deviation of each count: within 4 of them
    assert np.all(np.abs(counts - n_draws * p) <= 4 * np.sqrt(n_draws * p * (1 - p)) + 1e-9), counts


@pytest.mark.slow
def test_no_charged_client_ends_the_run_in_one_line(tmp_path, capsys) -> None:
    # capacities far below one round's cost: round 1 empties every battery it touches, and with
    # every client of the cell in each cohort no one is left charged for round 2
    data = {**small_scenario(rounds=3, participation=1.0),
            "energy": {"battery": {"capacity_min_j": 1e-9, "capacity_max_j": 2e-9}}}
    code, err = run_cli(capsys, str(write_yaml(tmp_path, data)), "-o", str(tmp_path / "out"))
    assert code != 0 and "Traceback" not in err
    line = [x for x in err.strip().splitlines() if "energy.battery" in x]
    assert line and "no online client has the charge for round 2" in line[0], err
    summary = json.loads((tmp_path / "out" / "fedavg" / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["depleted_clients"] == 6


@pytest.mark.slow
def test_batteries_drain_deplete_and_drop_with_cause_battery(tmp_path, capsys) -> None:
    # 12 batteries of 2-8 mJ for 3 clients a round, ~3.5 mJ each at the default link budget (measured): some
    # run out mid-round, and enough charge is left for every round
    data = {**small_scenario(algorithms=["scala", "fedavg"], rounds=4, clients=12, participation=0.25),
            "energy": {"battery": {"capacity_min_j": 0.002, "capacity_max_j": 0.008}}}
    data["clients"]["selection"] = {"name": "battery_aware"}
    _, out = finished_run(tmp_path, capsys, data)
    causes = []
    for label in ("scala", "fedavg"):
        run = out / label
        _closes(run)
        energy = _csv(run / "energy.csv")
        left: dict[int, float] = {}
        for row in energy:
            client, battery = int(row["client"]), float(row["battery_j"])
            assert client not in left or left[client] > 0.0  # an empty battery is never selected again
            assert battery >= 0.0 and (client not in left or battery <= left[client])
            if client in left:
                assert battery == pytest.approx(left[client] - float(row["total_j"]), abs=1e-12) or battery == 0.0
            left[client] = battery
        summary = json.loads((run / "summary.json").read_text())
        assert summary["depleted_clients"] == sum(1 for b in left.values() if b == 0.0) >= 1
        causes += [d.split(":")[1] for r in _csv(run / "rounds.csv") for d in r["dropped"].split()]
    assert "battery" in causes


class ChargeWatchingSelection:
    """A plug-in selector (no base class) that records the charges it is handed (BatteryObserver)."""

    seen: list = []

    def prepare(self, client_label_counts) -> None:
        pass

    def observe_battery(self, remaining_j) -> None:
        ChargeWatchingSelection.seen.append(np.array(remaining_j, dtype=float))

    def select(self, n_clients, n_selected, rng, available=None):
        pool = np.arange(n_clients) if available is None else np.flatnonzero(available)
        return np.sort(rng.choice(pool, size=n_selected, replace=False)).astype(np.int64)

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state) -> None:
        pass


@pytest.mark.slow
def test_any_selector_with_observe_battery_is_handed_the_charges(tmp_path, capsys) -> None:
    from sfl_sim.clients.protocols import BatteryObserver

    assert isinstance(ChargeWatchingSelection(), BatteryObserver)
    assert isinstance(BatteryAwareSelection(), BatteryObserver)
    ChargeWatchingSelection.seen = []
    data = {**small_scenario(algorithms=["fedavg"], rounds=3),
            "energy": {"battery": {"capacity_min_j": 5.0, "capacity_max_j": 10.0}}}
    data["clients"]["selection"] = {"name": f"{__name__}:ChargeWatchingSelection"}
    _, out = finished_run(tmp_path, capsys, data)
    seen = ChargeWatchingSelection.seen
    assert len(seen) == 3 and all(s.shape == (data["clients"]["count"],) for s in seen)
    assert np.all(seen[0] >= 5.0) and np.all(seen[0] <= 10.0)
    assert np.all(seen[2] <= seen[1]) and np.any(seen[2] < seen[0])  # charges only fall, and do fall
    ChargeWatchingSelection.seen = []
    (tmp_path / "plain").mkdir()
    finished_run(tmp_path / "plain", capsys, {**data, "energy": {}})
    assert ChargeWatchingSelection.seen == []  # no batteries: never called


@pytest.mark.slow
def test_no_batteries_means_no_battery_column_and_no_depleted_count(tmp_path, capsys) -> None:
    _, out = finished_run(tmp_path, capsys, small_scenario(rounds=1))
    assert "battery_j" not in _csv(out / "fedavg" / "energy.csv")[0]
    assert "depleted_clients" not in json.loads((out / "fedavg" / "summary.json").read_text())


def test_an_upload_that_would_empty_the_battery_ends_when_it_empties() -> None:
    model = PerFlopEnergy(j_per_flop=1e-6, pa_efficiency=0.5, circuit_power_w=0.1, idle_power_w=0.01)
    # client 0 can afford its 1 J of compute and a bit of its upload, client 1 everything
    ledger = EnergyLedger(model, np.array([1e6, 1e6]), 0.0, capacity_j=np.array([1.02, 100.0]))
    sim = two_client_simulator(battery=ledger)  # 1e6 FLOP/s clients on a 1 MHz uplink
    outcomes = {}

    def client(ctx, k):
        yield from ctx.compute(k, 1e6)
        outcomes[k] = yield ctx.upload(k, 200_000, "activations")

    def round_process(ctx):
        yield ctx.all_of([ctx.process(client(ctx, k)) for k in (0, 1)])

    sim.run_round(round_process, [0, 1])
    ctx = sim.last_round
    assert outcomes[0] == Lost("battery") and outcomes[1] == DELIVERED
    zero, one = ledger.charge_round(1, ctx, sim.now_s)
    assert zero.total_j == pytest.approx(1.02, rel=1e-9) and ledger.remaining_j[0] == 0.0 and ledger.depleted[0]
    assert ctx.left_s[0] < sim.now_s  # it left before the round ended
    air_s = (ctx.left_s[0] - 1.0)  # compute took 1 s, then it transmitted until it emptied
    assert zero.uplink_j == pytest.approx((0.2 / 0.5 + 0.1) * air_s, rel=1e-9) and zero.idle_j == 0.0
    assert one.total_j < 100.0 and ledger.remaining_j[1] == pytest.approx(100.0 - one.total_j)
    assert not ledger.selectable()[0]
    assert ledger.summary(0.0)["depleted_clients"] == 1


def _tail_ctx(start_s: float, busy: list, cohort=(0,)):
    class Ctx:
        pass

    ctx = Ctx()
    ctx.cohort, ctx.start_s, ctx.busy, ctx.left_s = np.array(cohort), start_s, {0: busy}, {}
    return ctx


def _tail_model(idle_power_w: float = 0.0) -> PerFlopEnergy:
    return PerFlopEnergy(j_per_flop=0.0, pa_efficiency=1.0, circuit_power_w=0.0, idle_power_w=idle_power_w,
                         rrc_tail=True, tail_power_w=1.0, tail_s=10.0)


def test_the_rrc_tail_by_hand_over_two_rounds() -> None:
    """P_tail = 1 W, T_tail = 10 s, idle 0 W.  Round 1 [0, 2]: upload [0, 1] (1 J).  The client sits out
    rounds until round 2 starts at 6 s: its tail ran from 2 s to 6 s (the first second of it, in round 1,
    is idle there): 4 J carried into round 2.  Round 2 [6, 8]: upload [6, 7]; the tail from 7 s ends at
    17 s, but the client's next round starts at once (8 s): nothing carried, its tail there is idle."""
    ledger = EnergyLedger(_tail_model(), np.ones(1), 0.0)
    (one,) = ledger.charge_round(1, _tail_ctx(0.0, [Busy("uplink", 0.0, 1.0, tx_power_w=1.0)]), 2.0)
    assert (one.uplink_j, one.idle_j) == (1.0, 0.0)  # nothing after the round is known yet
    (two,) = ledger.charge_round(2, _tail_ctx(6.0, [Busy("uplink", 6.0, 7.0, tx_power_w=1.0)]), 8.0)
    assert (two.uplink_j, two.idle_j) == (1.0, pytest.approx(4.0))
    (three,) = ledger.charge_round(3, _tail_ctx(8.0, []), 9.0)
    assert three.idle_j == 0.0
    # sitting out 20 s after round 3: the tail from 7 s ran out at 17 s, 8 s of it after round 3
    (four,) = ledger.charge_round(4, _tail_ctx(29.0, []), 30.0)
    assert four.idle_j == pytest.approx(8.0)


def test_over_back_to_back_rounds_the_tail_is_charged_once() -> None:
    """Over n back-to-back rounds of 0.49 s a client's tail energy is at most P_tail x (its span + T_tail)
    (it was T_tail per round: ~12 J a round)."""
    ledger = EnergyLedger(_tail_model(idle_power_w=1.0), np.ones(1), 0.0)
    idle_j, t = 0.0, 0.0
    for rnd in range(1, 31):
        ctx = _tail_ctx(t, [Busy("uplink", t, t + 0.1, tx_power_w=1.0)])
        (row,) = ledger.charge_round(rnd, ctx, t + 0.49)
        idle_j += row.idle_j
        t += 0.49
    span_s = t
    assert idle_j <= 1.0 * (span_s + 10.0)
    assert idle_j == pytest.approx(30 * 0.39)  # the idle seconds of the rounds, nothing more


def test_a_battery_emptied_by_the_rrc_tail_between_rounds_is_charged_exactly_its_charge() -> None:
    ledger = EnergyLedger(_tail_model(), np.ones(1), 0.0, capacity_j=np.array([3.0]))
    (row,) = ledger.charge_round(1, _tail_ctx(0.0, [Busy("uplink", 0.0, 1.0, tx_power_w=1.0)]), 2.0)
    assert row.total_j == pytest.approx(1.0) and ledger.remaining_j[0] == pytest.approx(2.0)
    # 6 s later: 6 J of tail ran before the round, more than the 2 J left: it emptied there
    (row,) = ledger.charge_round(2, _tail_ctx(8.0, [Busy("uplink", 8.0, 9.0, tx_power_w=1.0)]), 10.0)
    assert row.total_j == pytest.approx(2.0) and ledger.remaining_j[0] == 0.0 and ledger.depleted[0]


def test_a_resumed_ledger_carries_the_pending_tail() -> None:
    ledger = EnergyLedger(_tail_model(), np.ones(1), 0.0)
    ledger.charge_round(1, _tail_ctx(0.0, [Busy("uplink", 0.0, 1.0, tx_power_w=1.0)]), 2.0)
    again = EnergyLedger(_tail_model(), np.ones(1), 0.0)
    again.load_state_dict(ledger.state_dict())
    assert again.carried_tail_j(0, 6.0) == ledger.carried_tail_j(0, 6.0) == pytest.approx(4.0)


@pytest.mark.slow
def test_a_run_killed_after_its_checkpoint_resumes_to_the_same_energy_csv(tmp_path, capsys) -> None:
    from sfl_sim.config import validate as validate_scenario
    from sfl_sim.runs.runner import prepare_scenario, run_one

    data = {**small_scenario(algorithms=["scala"], rounds=4), "eval_every_rounds": 2,
            "energy": {"battery": {"capacity_min_j": 0.002, "capacity_max_j": 0.02}}}
    cfg = validate_scenario({**data, "output_dir": str(tmp_path / "killed")})

    def kill_after_round_3(rnd, info):
        if rnd == 3:
            raise KeyboardInterrupt

    ((run, plan),) = prepare_scenario(cfg)
    with pytest.raises(KeyboardInterrupt):
        run_one(run, plan.run_dir, progress=False, plan=plan, on_round=kill_after_round_3)
    assert {r["round"] for r in read_rows(plan.run_dir / "energy.csv")} == {"1", "2", "3"}  # 3: after the checkpoint
    ((run, plan),) = prepare_scenario(cfg, resume=True)
    run_one(run, plan.run_dir, progress=False, plan=plan)
    straight = write_yaml(tmp_path, data, "straight.yaml")
    assert run_cli(capsys, str(straight), "-o", str(tmp_path / "straight"))[0] == 0
    assert (plan.run_dir / "energy.csv").read_bytes() == (tmp_path / "straight" / "scala" / "energy.csv").read_bytes()


def test_the_rrc_tail_after_the_last_participation_is_charged_up_to_the_runs_end() -> None:
    """Issue 51 item 6.  P_tail = 1 W, T_tail = 10 s, idle 0 W.  Round 1 [0, 2]: upload [0, 1] (1 J); the
    client sits out round 2, which ends the run at 6 s: its tail ran from 2 s to 6 s inside the run,
    4 J (the tail's first second, in round 1, is idle there).  A run ending at 30 s charges the rest of
    the tail, 11 - 2 = 9 s: 9 J.  A client of the last round has no tail inside the run."""
    ledger = EnergyLedger(_tail_model(), np.ones(2), 0.0)
    ledger.charge_round(1, _tail_ctx(0.0, [Busy("uplink", 0.0, 1.0, tx_power_w=1.0)]), 2.0)
    (last,) = ledger.charge_round(2, _tail_ctx(2.0, [Busy("uplink", 2.0, 3.0, tx_power_w=1.0)], cohort=(1,)), 6.0)
    rows = ledger.charge_run_end(2, 6.0)
    assert [(r.round, r.client, r.idle_j, r.total_j) for r in rows] == [(2, 0, pytest.approx(4.0), pytest.approx(4.0))]
    assert ledger.spent_j[0] == pytest.approx(1.0 + 4.0) and ledger.spent_j[1] == pytest.approx(last.total_j)
    # a run extended after that end charges only the rest: client 0 back at 20 s carries 11 - 6 = 5 s, 5 J
    (back,) = ledger.charge_round(3, _tail_ctx(20.0, []), 21.0)
    assert back.idle_j == pytest.approx(5.0)
    other = EnergyLedger(_tail_model(), np.ones(1), 0.0)
    other.charge_round(1, _tail_ctx(0.0, [Busy("uplink", 0.0, 1.0, tx_power_w=1.0)]), 2.0)
    assert other.charge_run_end(5, 30.0)[0].idle_j == pytest.approx(9.0)


def test_a_client_still_at_work_at_the_runs_end_has_its_tail_cut_by_that_work() -> None:
    """An asynchronous run can end while a client is out on a new dispatch.  P_tail = 1 W, T_tail =
    10 s.  Round 1 [0, 2]: upload [0, 1]; the client is dispatched again at 5 s and still out when the
    run ends at 8 s: its tail ran from 2 s to 5 s (3 J), not to 8 s (6 J)."""
    ledger = EnergyLedger(_tail_model(), np.ones(1), 0.0)
    ledger.charge_round(1, _tail_ctx(0.0, [Busy("uplink", 0.0, 1.0, tx_power_w=1.0)]), 2.0)
    (row,) = ledger.charge_run_end(4, 8.0, busy_from_s={0: 5.0})
    assert row.idle_j == pytest.approx(3.0)
    assert ledger.charge_run_end(4, 8.0, busy_from_s={0: 5.0}) == []  # charged once
