"""Availability and device traces wired into runs: selection sees who is online, a round with
nobody online waits, departures are counted, resume reproduces the rows, bad input is one line."""
from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sfl_sim.algorithms.split.cs_sfl import LabelAwareSelection
from sfl_sim.cli import main
from sfl_sim.clients.selection import ClassBalancedSelection, UniformSelection, select_online
from sfl_sim.config import load_scenario, validate
from sfl_sim.data import DATASETS
from sfl_sim.errors import ConfigError
from sfl_sim.runs import runner
from sfl_sim.runs.build import build_availability, forward_flops_per_sample
from tests.helpers import read_rows, run_cli, small_scenario, write_yaml

pytestmark = pytest.mark.integration

#: Rounds of the small scenario last about 2 ms of simulated time: on/off periods of that order.
MARKOV = {"name": "markov", "mean_on_s": 0.002, "mean_off_s": 0.004}


def _counts(n: int, classes: int = 4) -> np.ndarray:
    return np.random.default_rng(n).integers(1, 20, size=(n, classes))


def _selectors(n: int):
    uniform = UniformSelection()
    balanced = ClassBalancedSelection()
    balanced.prepare(_counts(n))
    aware = LabelAwareSelection()
    aware.prepare(_counts(n))
    return [uniform, balanced, aware]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12), want=st.integers(1, 12), seed=st.integers(0, 2**31), data=st.data())
def test_selection_never_picks_an_offline_client(n, want, seed, data) -> None:
    online = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if not online.any():
        online[data.draw(st.integers(0, n - 1))] = True
    want = min(want, n)
    for selector in _selectors(n):
        picked = select_online(selector, n, want, np.random.default_rng(seed), online)
        assert online[picked].all(), (selector, picked, online)
        assert len(picked) == min(want, int(online.sum())) == len(np.unique(picked))


def test_all_online_is_the_plain_call() -> None:
    for a, b in zip(_selectors(9), _selectors(9), strict=True):
        got = select_online(a, 9, 4, np.random.default_rng(3), np.ones(9, dtype=bool))
        assert got.tolist() == b.select(9, 4, np.random.default_rng(3)).tolist()


def _run(tmp_path: Path, data: dict, name: str = "out") -> Path:
    path = write_yaml(tmp_path, data, name + ".yaml")
    assert main(["scenario", str(path), "-o", str(tmp_path / name), "--no-progress"]) == 0
    return tmp_path / name


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["wait_all", "over_selection"])
def test_markov_run_selects_only_online_clients_and_counts_departures(tmp_path, policy) -> None:
    data = small_scenario(algorithms=["fedavg"], rounds=6, clients=6, participation=0.5, eval_every_rounds=3)
    data["clients"]["availability"] = MARKOV
    data["stragglers"] = {"policy": policy, "over_selection_fraction": 0.5}
    selected = 3 if policy == "wait_all" else 5  # ceil(3 * 1.5) = 5 over-selected, 3 kept
    out = _run(tmp_path, data)
    rows = read_rows(out / "fedavg" / "rounds.csv")
    model = build_availability(validate(data))  # the same seeded paths the run replayed
    departures = 0
    for row in rows:
        start = float(row["sim_time_s"]) - float(row["round_sim_time_s"]) + float(row["availability_wait_s"])
        cohort = [int(c) for c in row["cohort"].split()]
        online = model.online(np.arange(6), start)
        assert online[cohort].all() and int(row["online_clients"]) == int(online.sum())
        assert len(cohort) == min(selected, int(online.sum()))
        gone = [int(d.split(":")[0]) for d in row["dropped"].split() if d.endswith(":unavailable")]
        assert int(row["unavailable_clients"]) == len(gone)
        end = float(row["sim_time_s"])
        for k in gone:  # it left during the round: offline at some instant of it (it may be back by the end)
            assert not all(model.online([k], t)[0] for t in np.linspace(start, end, 4001))
        departures += len(gone)
    assert departures > 0  # the means are chosen so that some leave
    summary = json.loads((out / "fedavg" / "summary.json").read_text())
    assert summary["unavailable_clients"] == departures


@pytest.mark.slow
def test_a_round_with_nobody_online_waits_for_the_first_to_come(tmp_path) -> None:
    trace = tmp_path / "late.csv"
    trace.write_text("client,start_s,end_s\n" + "".join(f"{k},{5 + 2 * k},1000\n" for k in range(6)))
    data = small_scenario(algorithms=["fedavg"], rounds=2, clients=6, participation=0.5)
    data["clients"]["availability"] = {"name": "trace", "path": str(trace), "mapping": "order"}
    rows = read_rows(_run(tmp_path, data) / "fedavg" / "rounds.csv")
    assert float(rows[0]["availability_wait_s"]) == 5.0 and rows[0]["cohort"] == "0"
    assert float(rows[0]["round_sim_time_s"]) > 5.0 and rows[0]["online_clients"] == "1"
    assert float(rows[1]["availability_wait_s"]) == 0.0


@pytest.mark.slow
def test_always_writes_the_files_it_wrote_before(tmp_path) -> None:
    data = small_scenario(algorithms=["fedavg"], rounds=1)
    out = _run(tmp_path, data, "plain")
    explicit = _run(tmp_path, {**data, "clients": {**data["clients"], "availability": "always"}}, "always")
    scenario = (out / "fedavg" / "scenario.yaml").read_text()
    assert "availability" not in scenario and "capability" not in scenario
    row = read_rows(out / "fedavg" / "rounds.csv", host_time=False)[0]
    assert row["online_clients"] == "6" and row["unavailable_clients"] == "0" and row["availability_wait_s"] == "0.0"
    assert read_rows(explicit / "fedavg" / "rounds.csv", host_time=False) == \
        read_rows(out / "fedavg" / "rounds.csv", host_time=False)


@pytest.mark.slow
def test_interrupted_markov_run_resumes_to_the_same_rows(tmp_path) -> None:
    data = small_scenario(algorithms=["scala"], rounds=4, clients=6, participation=0.5, eval_every_rounds=2)
    data["clients"]["availability"] = MARKOV
    full = _run(tmp_path, data, "full")
    path = write_yaml(tmp_path, data, "cut.yaml")
    cfg = load_scenario(path, extra={"output_dir": str(tmp_path / "cut")})
    dataset = DATASETS.create("fashion_mnist", max_train_samples=600, max_test_samples=200).load()

    def interrupt(rnd: int, info: dict) -> None:
        if rnd == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run_one(runner.build_run(cfg, cfg.algorithms[0], dataset), tmp_path / "cut" / "scala",
                       progress=False, on_round=interrupt)
    assert main(["scenario", str(path), "-o", str(tmp_path / "cut"), "--resume", "--no-progress"]) == 0
    for name in ("rounds.csv", "metrics.csv"):
        assert read_rows(tmp_path / "cut" / "scala" / name, host_time=False) == \
            read_rows(full / "scala" / name, host_time=False)


def test_capability_csv_sets_compute_and_uplink(tmp_path) -> None:
    trace = tmp_path / "devices.csv"
    trace.write_text("client,compute_flops_per_s,uplink_bps\n" +
                     "".join(f"{k},{(k + 1) * 1e8},{'' if k % 2 else 2e6}\n" for k in range(6)))
    data = small_scenario(algorithms=["fedavg"], rounds=1)
    data["clients"]["capability"] = {"path": str(trace), "mapping": "order"}
    run = runner.prepare_scenario(validate({**data, "output_dir": str(tmp_path / "o")}))[0][0]
    assert run.client_flops_per_s.tolist() == [(k + 1) * 1e8 for k in range(6)]
    sim = runner.build_simulator(run)
    assert sim.traced_uplink_bps == {0: 2e6, 2: 2e6, 4: 2e6}


@pytest.mark.parametrize("columns, mode, refused", [
    ("uplink_bps", "broadcast", "uplink_bps (3 clients"),
    ("downlink_bps", "unicast", "downlink_bps (3 clients"),
    ("downlink_bps", "broadcast", None),  # a broadcast downlink has no band: its traced rates hold
    ("", "unicast", None),  # compute speeds only
])
def test_traced_link_rates_and_a_dynamic_scheduler_are_refused_together(tmp_path, columns, mode, refused) -> None:
    trace = tmp_path / "devices.csv"
    header = "client,compute_flops_per_s" + (f",{columns}" if columns else "")
    trace.write_text(header + "\n" + "".join(f"{k},{(k + 1) * 1e8}" + (f",{'' if k % 2 else 2e6}" if columns else "")
                                             + "\n" for k in range(6)))
    data = small_scenario(algorithms=["fedavg"], rounds=1)
    data["clients"]["capability"] = {"path": str(trace), "mapping": "order"}
    data["cell"] = {"scheduler": {"name": "round_robin"}, "downlink": {"mode": mode}}
    cfg = validate({**data, "output_dir": str(tmp_path / "o")})
    if refused is None:
        runner.prepare_scenario(cfg)
        return
    with pytest.raises(ConfigError) as info:
        runner.prepare_scenario(cfg)
    text = str(info.value)
    assert "\n" not in text and text.startswith("cell.scheduler: got 'round_robin'; allowed: static with "
                                              "clients.capability's traced ") and refused in text, text


def test_fedscale_capacity_becomes_flops_by_the_models_forward_flops(tmp_path) -> None:
    path = tmp_path / "client_device_capacity"
    path.write_bytes(pickle.dumps({1: {"computation": 20.0, "communication": 800.0},
                                   2: {"computation": 50.0, "communication": 1600.0}}))
    data = small_scenario(algorithms=["fedavg"], rounds=1, partition={"name": "iid"})
    data["clients"]["count"] = 2
    data["clients"]["capability"] = {"path": str(path), "format": "fedscale", "mapping": "order"}
    run = runner.prepare_scenario(validate({**data, "output_dir": str(tmp_path / "o")}))[0][0]
    forward = forward_flops_per_sample(run.setup.model, run.setup.train_x[:1])
    assert forward > 0
    assert run.client_flops_per_s.tolist() == [forward / 0.020, forward / 0.050]
    assert run.capability.uplink_bps.tolist() == [800e3, 1600e3]


class _Evil:
    def __reduce__(self):
        return (print, ("ran code",))


@pytest.mark.slow
@pytest.mark.parametrize("clients, words", [
    ({"availability": {"name": "trace", "path": "/nonexistent.csv"}}, ["clients.availability", "no such file"]),
    ({"availability": {"name": "markov", "mean_on_s": -1, "mean_off_s": 1}}, ["clients.availability", "mean_on_s"]),
    ({"capability": {"path": "BAD"}}, ["clients.capability", "compute_flops_per_s got 'fast'"]),
    ({"capability": {"path": "EVIL", "format": "fedscale"}}, ["clients.capability", "refuses global"]),
    ({"availability": {"name": "trace", "path": "NOBODY", "mapping": "order"}},
     ["clients.availability", "no client is online"]),
    ({"availability": MARKOV, "selection": {"name": "old_selector_plugin:OldSelector"}},
     ["clients.selection", "available"]),
])
def test_bad_input_is_one_line(tmp_path, capsys, monkeypatch, clients, words) -> None:
    (tmp_path / "bad.csv").write_text("client,compute_flops_per_s\n0,fast\n")
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps({0: {"computation": _Evil(), "communication": 1.0}}))
    (tmp_path / "nobody.csv").write_text("client,start_s,end_s\n7,0,10\n")  # clients 0..5 never online
    (tmp_path / "old_selector_plugin.py").write_text(
        "import numpy as np\n"
        "class OldSelector:\n"
        "    def prepare(self, counts): pass\n"
        "    def select(self, n_clients, n_selected, rng): return np.arange(n_selected)\n"
        "    def state_dict(self): return {}\n"
        "    def load_state_dict(self, state): pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "old_selector_plugin", raising=False)  # imported afresh, dropped after
    files = {"BAD": "bad.csv", "EVIL": "evil.pkl", "NOBODY": "nobody.csv"}
    for spec in clients.values():
        if isinstance(spec, dict) and spec.get("path") in files:
            spec["path"] = str(tmp_path / files[spec["path"]])
    data = small_scenario(algorithms=["fedavg"], rounds=1)
    data["clients"].update(clients)
    code, err = run_cli(capsys, str(write_yaml(tmp_path, data)), "-o", str(tmp_path / "o"))
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1, err
    assert all(w in lines[0] for w in words), lines[0]
    assert "ran code" not in capsys.readouterr().out
