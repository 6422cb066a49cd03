"""Runs on a radio in time (a Jakes fading at a fixed Doppler speed, Gauss-Markov mobility within
the round): ``sfl-sim scenario`` end to end, a killed run resumed to the straight run's files, and
``sfl-sim retime`` under another scheduler on the same fading process (common random numbers)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sfl_sim.cli import main
from sfl_sim.config import load_scenario
from sfl_sim.runs import checkpoint, runner
from tests.helpers import read_rows, small_scenario, write_yaml

pytestmark = pytest.mark.slow

#: The radio in time: 30 km/h Doppler for the fading, clients walking within the round.
CELL = {"fading": {"name": "jakes", "speed_m_per_s": 8.33}, "mobility": {"name": "gauss_markov"}}


def _scenario(tmp_path: Path, rounds: int, downlink: str = "unicast") -> Path:
    data = small_scenario(rounds=rounds, eval_every_rounds=2, algorithms=["fedavg"])
    data["cell"] = {**CELL, "downlink": {"mode": downlink}}
    return write_yaml(tmp_path, data)


def _files(run_dir: Path) -> dict[str, object]:
    """Every file of ``run_dir`` as comparable data, host times and a resume's records left out."""
    out: dict[str, object] = {}
    for path in sorted(run_dir.iterdir()):
        if path.suffix == ".csv":
            out[path.name] = read_rows(path, host_time=False)
        elif path.name == "summary.json":
            out[path.name] = {k: v for k, v in json.loads(path.read_text()).items() if k != "host_time_s"}
        elif path.suffix == ".yaml":
            data = yaml.safe_load(path.read_text())
            data.pop("resumes", None)
            data.pop("output_dir", None)
            out[path.name] = data
        else:
            out[path.name] = "present"
    return out


def test_a_run_in_time_runs_end_to_end_and_a_killed_run_resumes_to_its_files(tmp_path, capsys):
    path = _scenario(tmp_path, rounds=4)
    assert main(["scenario", str(path), "-o", str(tmp_path / "straight"), "--no-progress"]) == 0, \
        capsys.readouterr().err
    rounds = read_rows(tmp_path / "straight" / "fedavg" / "rounds.csv", host_time=False)
    assert len(rounds) == 4
    state = checkpoint.read(tmp_path / "straight" / "fedavg" / "checkpoint.pt")
    assert state["cell"]["radio_time_s"] > 0  # the radio state followed the clock

    cfg = load_scenario(path, extra={"output_dir": str(tmp_path / "cut")})

    def kill(rnd: int, info: dict) -> None:
        if rnd == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run_one(runner.build_run(cfg, cfg.algorithms[0]), tmp_path / "cut" / "fedavg", progress=False,
                       on_round=kill)
    capsys.readouterr()
    assert main(["scenario", str(path), "-o", str(tmp_path / "cut"), "--resume", "--no-progress"]) == 0, \
        capsys.readouterr().err
    straight, resumed = _files(tmp_path / "straight" / "fedavg"), _files(tmp_path / "cut" / "fedavg")
    assert resumed.keys() == straight.keys()
    for name in straight:
        assert resumed[name] == straight[name], name


def test_retimes_under_another_scheduler_see_the_same_fading_process(tmp_path, capsys):
    path = _scenario(tmp_path, rounds=2, downlink="ideal")
    assert main(["scenario", str(path), "-o", str(tmp_path / "source"), "--no-progress"]) == 0, \
        capsys.readouterr().err
    source = tmp_path / "source" / "fedavg"
    forms = {"static": "cell.scheduler=static", "fluid": "cell.scheduler={name: round_robin, fidelity: fluid}"}
    for name, override in forms.items():
        assert main(["retime", str(source), "--set", override, "-o", str(tmp_path / name), "--no-progress"]) == 0, \
            capsys.readouterr().err
    # every client's upload of round 1 starts when its local steps end, the same instant in every
    # form (no downlink time): the gain its rate was computed with is the one process's value then,
    # in every form (nothing drawn from a stream the forms share); later rounds start at other times
    gains = {name: {(r["round"], r["client"]): r["fading_gain_db"]
                    for r in read_rows(d / "clients.csv", host_time=False)}
             for name, d in {"source": source, **{name: tmp_path / name for name in forms}}.items()}
    first = {key: v for key, v in gains["source"].items() if key[0] in (1, "1")}
    assert first and len(set(first.values())) == len(first)  # gains of their own, not one number
    for name in forms:
        assert {key: gains[name][key] for key in first} == first, name
    durations = {name: [r["round_sim_time_s"] for r in read_rows(tmp_path / name / "rounds.csv", host_time=False)]
                 for name in forms}
    assert durations["static"] != durations["fluid"]
