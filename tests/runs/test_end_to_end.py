"""Short real runs on a slice of the real Fashion-MNIST: files written, same seed same rows, resume.

CI installs Debian's dataset-fashion-mnist (see .ci/run); these tests need it.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sfl_sim.cli import main
from sfl_sim.config import load_scenario
from sfl_sim.data import DATASETS
from sfl_sim.runs import runner
from tests.helpers import read_rows, small_scenario, write_yaml

SMALL = small_scenario(seed=3, eval_samples=200, algorithms=["scala", "fedavg"], width=8, fc=16, train=1000, test=500,
                       batch_size=32, local_iterations=2, clients=10, participation=0.3)


@pytest.mark.slow
def test_two_round_run_writes_result_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = main(["scenario", str(write_yaml(tmp_path, SMALL)), "-o", str(out), "--no-progress"])
    assert code == 0
    for label in ("scala", "fedavg"):
        run_dir = out / label
        rows = read_rows(run_dir / "metrics.csv")
        assert [r["round"] for r in rows] == ["0", "1", "2"]  # round 0: the initial model at t = 0
        assert float(rows[0]["sim_time_s"]) == 0 and float(rows[0]["uplink_bytes"]) == 0
        assert float(rows[2]["sim_time_s"]) > float(rows[1]["sim_time_s"]) > 0
        assert float(rows[2]["uplink_bytes"]) > float(rows[1]["uplink_bytes"]) > 0
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["schema_version"] == 1 and summary["status"] == "complete"
        assert summary["rounds_completed"] == 2
        assert summary["evaluated"] == "global model on the test set"
        scenario = yaml.safe_load((run_dir / "scenario.yaml").read_text())
        assert scenario["algorithm"]["name"] == label and scenario["seed"] == 3
        assert len(read_rows(run_dir / "cell.csv")) == 10
        assert (run_dir / "checkpoint.pt").exists()
        per_round = read_rows(run_dir / "rounds.csv")
        assert [r["round"] for r in per_round] == ["1", "2"]
        for col in ("uplink_bytes", "downlink_bytes", "client_flops", "server_flops"):
            assert sum(float(r[col]) for r in per_round) == pytest.approx(float(rows[-1][col]))
        assert len(per_round[0]["cohort"].split()) == 3
        assert all(float(r["round_host_time_s"]) > 0 for r in per_round)
        # metrics.local_vacant_class_accuracy is off by default: the column is there, empty.
        assert [r["local_vacant_class_accuracy"] for r in read_rows(run_dir / "classes.csv")] == ["", "", ""]
    # SCALA's server trains the deep layers: it computes server FLOPs; FedAvg never does.
    assert float(read_rows(out / "fedavg" / "metrics.csv")[-1]["server_flops"]) == 0
    assert float(read_rows(out / "scala" / "metrics.csv")[-1]["server_flops"]) > 0

    plots = tmp_path / "plots"
    assert main(["plot", str(out / "scala"), str(out / "fedavg"), "-o", str(plots)]) == 0
    for name in ("accuracy_vs_time.png", "uplink_vs_time.png"):
        assert (plots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_same_seed_same_rows(tmp_path: Path) -> None:
    scenario = write_yaml(tmp_path, {**SMALL, "algorithms": [{"name": "scala"}]})
    for name in ("a", "b"):
        assert main(["scenario", str(scenario), "-o", str(tmp_path / name), "--no-progress"]) == 0
    a = read_rows(tmp_path / "a" / "scala" / "metrics.csv", host_time=False)
    b = read_rows(tmp_path / "b" / "scala" / "metrics.csv", host_time=False)
    assert a == b


@pytest.mark.slow
@pytest.mark.parametrize("cell", [{}, {
    "power_control": {"name": "open_loop", "p0_dbm": -80.0, "alpha": 0.8},
    "interference": {"name": "first_tier", "activity": 0.5},
    "downlink": {"mode": "unicast"},
}], ids=["default", "power_control+first_tier+unicast"])
def test_interrupted_run_resumes_to_the_same_rows(tmp_path: Path, capsys, cell) -> None:
    data = {**SMALL, "rounds": 3, "algorithms": [{"name": "scala"}], "output_dir": str(tmp_path / "full")}
    if cell:  # the interference draws a new noise rise every round: the checkpoint must carry it
        data["cell"] = {**data.get("cell", {}), **cell}
    path = write_yaml(tmp_path, data)
    assert main(["scenario", str(path), "--no-progress"]) == 0
    full = read_rows(tmp_path / "full" / "scala" / "metrics.csv", host_time=False)

    cfg = load_scenario(path, extra={"output_dir": str(tmp_path / "cut")})
    dataset = DATASETS.create("fashion_mnist", max_train_samples=1000, max_test_samples=500).load()

    def interrupt(rnd: int, info: dict) -> None:
        if rnd == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run_one(runner.build_run(cfg, cfg.algorithms[0], dataset), tmp_path / "cut" / "scala",
                       progress=False, on_round=interrupt)
    assert len(read_rows(tmp_path / "cut" / "scala" / "metrics.csv")) == 3  # rounds 0, 1, 2
    # Without --resume nothing is overwritten.
    assert main(["scenario", str(path), "-o", str(tmp_path / "cut"), "--no-progress"]) == 2
    capsys.readouterr()
    assert main(["scenario", str(path), "-o", str(tmp_path / "cut"), "--resume"]) == 0
    assert f"run 1/1 scala on cpu, 3 rounds, resuming after round 2, output {tmp_path / 'cut' / 'scala'}" in (
        capsys.readouterr().err)
    resumed = read_rows(tmp_path / "cut" / "scala" / "metrics.csv", host_time=False)
    assert resumed == full
    assert (read_rows(tmp_path / "cut" / "scala" / "rounds.csv", host_time=False)
            == read_rows(tmp_path / "full" / "scala" / "rounds.csv", host_time=False))


def test_cli_summary_flags_runs_not_scored_on_the_global_model(tmp_path: Path, capsys) -> None:
    from sfl_sim.cli import _print_summaries
    base = {"rounds_completed": 1, "final_test_accuracy": 0.5, "best_test_accuracy": 0.5, "final_sim_time_s": 1.0,
            "host_time_s": 1.0, "uplink_bytes": 0, "time_to_accuracy_s": {}}
    _print_summaries([dict(base, label="v1", evaluated="global model on the test set"),
                      dict(base, label="a", evaluated="mean over the latest cohort's auxiliary models")], tmp_path)
    out = capsys.readouterr().out
    assert "note: a accuracy is of the mean over the latest cohort's auxiliary models" in out
    assert "note: v1" not in out
