"""Nothing lost, nothing faked: resume safety, divergence, plug-in errors, corrupt files and bad
inputs that must end in one clear line, never a traceback or a silently wrong run.

Every refusal is checked for the same three things: exit code, one line on stderr naming the
problem, and no run files changed or written.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
import yaml

from sfl_sim.cli import main
from sfl_sim.runs.rundir.files import RunDir
from tests.helpers import ROOT, finished_run, read_rows, run_cli, small_scenario, write_yaml

SMALL = small_scenario()


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def snapshot(directory: Path) -> dict:
    return {p.relative_to(directory): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture
def finished(tmp_path: Path, capsys) -> tuple[Path, Path]:
    """A finished 2-round fedavg run: (scenario file, run directory)."""
    path, out = finished_run(tmp_path, capsys, SMALL)
    return path, out / "fedavg"


# -- 1. resume refuses a different scenario --------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("change, field", [
    (["--seed", "7"], "seed"),
    (["--set", "training.learning_rate=0.1"], "training.learning_rate"),
    (["--set", "data.partition={name: dirichlet, beta: 0.5}"], "data.partition"),
    (["--set", "clients.count=5"], "clients.count"),
    (["--set", "cell.uplink_bandwidth_hz=1e6"], "cell.uplink_bandwidth_hz"),
    (["--set", "model.params.conv_channels=[8, 4, 4, 4, 4]"], "model.params.conv_channels"),
])
def test_resume_refuses_a_changed_scenario(finished, capsys, change, field) -> None:
    path, run_dir = finished
    before = snapshot(run_dir)
    code, err = run_cli(capsys, str(path), "-o", str(run_dir.parent), "--resume", "--rounds", "3", *change)
    assert code == 2
    line = one_line(err)
    assert "different scenario" in line and field in line, line
    assert snapshot(run_dir) == before


@pytest.mark.slow
def test_resume_refuses_another_algorithm_in_the_same_directory(finished, capsys) -> None:
    path, run_dir = finished
    before = snapshot(run_dir)
    code, err = run_cli(capsys, str(path), "-o", str(run_dir.parent), "--resume",
                        "--set", "algorithms=[{name: fedprox, label: fedavg}]")
    assert code == 2 and "algorithm.name" in one_line(err)
    assert snapshot(run_dir) == before


@pytest.mark.slow
def test_resume_with_more_rounds_continues_the_same_run(finished, capsys, tmp_path) -> None:
    path, run_dir = finished
    code, err = run_cli(capsys, str(path), "-o", str(run_dir.parent), "--resume", "--rounds", "3")
    assert code == 0, err
    assert [r["round"] for r in read_rows(run_dir / "metrics.csv")] == ["0", "1", "2", "3"]
    assert yaml.safe_load((run_dir / "scenario.yaml").read_text())["rounds"] == 3
    straight = write_yaml(tmp_path, {**SMALL, "rounds": 3}, "three.yaml")
    assert run_cli(capsys, str(straight), "-o", str(tmp_path / "straight"))[0] == 0
    assert (read_rows(run_dir / "metrics.csv", host_time=False)
            == read_rows(tmp_path / "straight" / "fedavg" / "metrics.csv", host_time=False))


@pytest.mark.slow
def test_resume_may_change_the_host_settings(finished, capsys) -> None:
    """execution, eval_batch_size and torch threads only decide how fast the host works: a resume
    may change them (RESUMABLE_FIELDS), and one made before execution / torch_threads_used were
    recorded resumes too."""
    path, run_dir = finished
    code, err = run_cli(capsys, str(path), "-o", str(run_dir.parent), "--resume", "--rounds", "3",
                        "--set", "execution=loop", "--set", "eval_batch_size=64")
    assert code == 0, err
    scenario_file = run_dir / "scenario.yaml"
    old = yaml.safe_load(scenario_file.read_text())
    assert old["execution"] == "loop" and old["torch_threads_used"] == 1
    for key in ("execution", "torch_threads_used"):
        del old[key]
    scenario_file.write_text(yaml.safe_dump(old, sort_keys=False))
    code, err = run_cli(capsys, str(path), "-o", str(run_dir.parent), "--resume", "--rounds", "4")
    assert code == 0, err
    assert [r["round"] for r in read_rows(run_dir / "metrics.csv")] == ["0", "1", "2", "3", "4"]


# -- 2. a crafted checkpoint cannot run code -----------------------------------------------------------
class _Exploit:
    def __reduce__(self):
        return (os.system, (f"touch {os.environ.get('SFL_SIM_PWNED', '/tmp/sfl_sim_pwned')}",))


@pytest.mark.slow
def test_crafted_checkpoint_is_refused_and_runs_nothing(finished, capsys, tmp_path, monkeypatch) -> None:
    path, run_dir = finished
    marker = tmp_path / "pwned"
    monkeypatch.setenv("SFL_SIM_PWNED", str(marker))
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    state["algorithm"] = _Exploit()
    torch.save(state, run_dir / "checkpoint.pt")
    code, err = run_cli(capsys, str(path), "-o", str(run_dir.parent), "--resume", "--rounds", "3")
    assert code == 2
    line = one_line(err)
    assert "checkpoint.pt" in line and "refused" in line
    assert not marker.exists()


@pytest.mark.slow
def test_checkpoint_holds_only_data(finished) -> None:
    _, run_dir = finished
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)  # would raise on any object
    assert set(state) >= {"round", "algorithm", "cell", "rng", "counters", "selector"}


# -- 5. divergence stops the run -------------------------------------------------------------------------
@pytest.mark.slow
def test_divergence_stops_with_status_diverged(tmp_path, capsys) -> None:
    # a step that overflows float32 whatever the dropout masks draw (at 1000 the loss blew up to ~3e6
    # and came back, or not, depending on them)
    path = write_yaml(tmp_path, {**SMALL, "rounds": 4, "training": {**SMALL["training"], "learning_rate": 1e20}})
    out = tmp_path / "out"
    code = main(["scenario", str(path), "-o", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    line = one_line(err)
    assert "diverged at round" in line and "learning_rate" in line
    summary = json.loads((out / "fedavg" / "summary.json").read_text())
    assert summary["status"] == "diverged" and "final_test_loss" in summary
    kept = read_rows(out / "fedavg" / "metrics.csv")
    assert kept[0]["round"] == "0" and int(kept[-1]["round"]) == summary["rounds_completed"] < 4


# -- 6. physically impossible channels, caught by --check ------------------------------------------------
@pytest.mark.parametrize("override, field", [
    ("cell.uplink_bandwidth_hz=1e-300", "cell.uplink_bandwidth_hz"),
    ("cell.client_tx_power_w=1e308", "cell.client_tx_power_w"),
    ("cell.noise_psd_dbm_per_hz=1e6", "cell.noise_psd_dbm_per_hz"),
    ("cell.noise_psd_dbm_per_hz=-1e6", "cell.noise_psd_dbm_per_hz"),
    ("cell.downlink.bandwidth_hz=1e-300", "cell.downlink.bandwidth_hz"),
    ("cell.placement.radius_m=1e300", "cell.placement"),
    ("clients.compute_flops_per_s_min=1e-300", "clients.compute_flops_per_s_min"),
])
def test_impossible_channel_is_caught_by_check(tmp_path, capsys, override, field) -> None:
    path = write_yaml(tmp_path, SMALL)
    code, err = run_cli(capsys, str(path), "-o", str(tmp_path / "out"), "--check", "--set", override)
    assert code == 2
    assert field in one_line(err)
    assert not (tmp_path / "out").exists()


# -- 7. duplicate keys, empty files, binary files -------------------------------------------------------
def test_duplicate_key_is_refused(tmp_path, capsys) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(yaml.safe_dump(SMALL) + "rounds: 5\n")
    code, err = run_cli(capsys, str(path), "--check")
    assert code == 2 and "'rounds' appears twice" in one_line(err)


@pytest.mark.parametrize("content", [b"", b"# only a comment\n", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
                                     b"\xff\xfe\xfa"])
def test_empty_or_binary_scenario_is_refused(tmp_path, capsys, content) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    code, err = run_cli(capsys, str(path), "--check")
    assert code == 2
    line = one_line(err)
    assert "bad.yaml" in line and ("empty" in line or "text" in line)


# -- 8. labels are names, not paths ---------------------------------------------------------------------
@pytest.mark.parametrize("label", ["..", "", ".", "a/b", "../escape", " "])
def test_label_must_be_a_plain_name(tmp_path, capsys, label) -> None:
    path = write_yaml(tmp_path, {**SMALL, "algorithms": [{"name": "fedavg", "label": label}]})
    code, err = run_cli(capsys, str(path), "-o", str(tmp_path / "out" / "inner"))
    assert code == 2 and "algorithms[0]" in one_line(err)
    assert not (tmp_path / "out").exists()


# -- 9. output directory problems before any work --------------------------------------------------------
def test_output_dir_under_a_file_is_refused_before_data_load(tmp_path, capsys, monkeypatch) -> None:
    (tmp_path / "afile").write_text("x")
    import sfl_sim.runs.runner as runner

    monkeypatch.setattr(runner, "load_dataset", lambda cfg: pytest.fail("data loaded before the output check"))
    code, err = run_cli(capsys, str(write_yaml(tmp_path, SMALL)), "-o", str(tmp_path / "afile" / "out"))
    assert code == 2 and "is under" in one_line(err) and "afile" in one_line(err)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories anyway")
def test_read_only_output_dir_is_refused(tmp_path, capsys) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        code, err = run_cli(capsys, str(write_yaml(tmp_path, SMALL)), "-o", str(ro / "out"))
        assert code == 2 and "cannot be written" in one_line(err)
    finally:
        ro.chmod(0o700)


# -- 10. corrupt or missing files ------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate_checkpoint", "garbage_checkpoint", "garbage_metrics",
                                    "delete_metrics", "delete_rounds", "drop_checkpoint_row"])
def test_damaged_run_directory_is_refused_on_resume(finished, capsys, damage) -> None:
    path, run_dir = finished
    ck, metrics = run_dir / "checkpoint.pt", run_dir / "metrics.csv"
    if damage == "truncate_checkpoint":
        ck.write_bytes(ck.read_bytes()[:200])
    elif damage == "garbage_checkpoint":
        ck.write_bytes(b"not a checkpoint at all")
    elif damage == "garbage_metrics":
        metrics.write_text("round,sim_time_s\nxx,yy\n")
    elif damage == "delete_metrics":
        metrics.unlink()
    elif damage == "delete_rounds":
        (run_dir / "rounds.csv").unlink()
    else:  # a metrics.csv that stops before the checkpoint's round
        text = metrics.read_text().splitlines()
        metrics.write_text("\n".join(text[:-1]) + "\n")
    before = snapshot(run_dir)
    code, err = run_cli(capsys, str(path), "-o", str(run_dir.parent), "--resume", "--rounds", "3")
    assert code == 2
    line = one_line(err)
    assert str(run_dir) in line and ("new directory" in line or "-o" in line), line
    assert snapshot(run_dir) == before


@pytest.mark.slow
def test_plain_rerun_never_overwrites_results_without_metrics(finished, capsys) -> None:
    path, run_dir = finished
    (run_dir / "metrics.csv").unlink()
    before = snapshot(run_dir)
    code, err = run_cli(capsys, str(path), "-o", str(run_dir.parent))
    assert code == 2 and "already holds a run" in one_line(err)
    assert snapshot(run_dir) == before


@pytest.mark.slow
def test_results_without_checkpoint_are_not_overwritten(finished, capsys) -> None:
    path, run_dir = finished
    (run_dir / "checkpoint.pt").unlink()
    before = snapshot(run_dir)
    code, err = run_cli(capsys, str(path), "-o", str(run_dir.parent))
    assert code == 2 and "no checkpoint.pt" in one_line(err)
    assert snapshot(run_dir) == before


# -- 11. a run that died at round 0 can be restarted ------------------------------------------------------
@pytest.mark.slow
def test_run_that_died_at_round_zero_restarts(tmp_path, capsys) -> None:
    path = write_yaml(tmp_path, SMALL)
    run_dir = tmp_path / "out" / "fedavg"
    run_dir.mkdir(parents=True)
    (run_dir / "metrics.csv").write_text("round,sim_time_s,test_accuracy,test_loss,uplink_bytes,downlink_bytes,"
                                         "client_flops,server_flops,host_time_s\n")
    code, err = run_cli(capsys, str(path), "-o", str(tmp_path / "out"))  # no marker: not sfl-sim's, kept
    assert code == 2 and "metrics.csv exists and was not written by sfl-sim" in one_line(err)
    RunDir(run_dir).mark()  # what a run writes first
    code, err = run_cli(capsys, str(path), "-o", str(tmp_path / "out"))
    assert code == 0, err
    assert [r["round"] for r in read_rows(run_dir / "metrics.csv")] == ["0", "1", "2"]


@pytest.mark.slow
def test_run_killed_before_its_first_checkpoint_restarts(finished, capsys) -> None:
    """Killed after the first trained evaluation row but before the first checkpoint was saved."""
    path, run_dir = finished
    (run_dir / "checkpoint.pt").unlink()
    lines = (run_dir / "metrics.csv").read_text().splitlines()
    (run_dir / "metrics.csv").write_text("\n".join(lines[:3]) + "\n")  # header, rounds 0 and 1
    summary = json.loads((run_dir / "summary.json").read_text())
    (run_dir / "summary.json").write_text(json.dumps({**summary, "status": "running"}))
    code, err = run_cli(capsys, str(path), "-o", str(run_dir.parent))
    assert code == 0, err
    assert [r["round"] for r in read_rows(run_dir / "metrics.csv")] == ["0", "1", "2"]


# -- 12. cell.csv is written once, at the start ------------------------------------------------------------
@pytest.mark.slow
def test_cell_csv_keeps_the_initial_positions_on_resume(tmp_path, capsys) -> None:
    data = {**SMALL, "rounds": 3, "cell": {"mobility": {"name": "random_waypoint", "speed_min_m_per_s": 5.0,
                                                           "speed_max_m_per_s": 20.0}}}
    path = write_yaml(tmp_path, data)
    out = tmp_path / "out"
    code, err = run_cli(capsys, str(path), "-o", str(out), "--rounds", "2")
    assert code == 0, err
    initial = (out / "fedavg" / "cell.csv").read_bytes()
    assert run_cli(capsys, str(path), "-o", str(out), "--resume")[0] == 0
    assert (out / "fedavg" / "cell.csv").read_bytes() == initial
    assert run_cli(capsys, str(path), "-o", str(out), "--resume")[0] == 0  # resuming a finished run
    assert (out / "fedavg" / "cell.csv").read_bytes() == initial


# -- 13. a refused data set file is one line --------------------------------------------------------------
def test_malicious_cifar_pickle_is_one_line(tmp_path, capsys) -> None:
    root = tmp_path / "cifar-10-batches-py"
    root.mkdir()
    payload = pickle.dumps(_Exploit())
    for name in ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch",
                 "batches.meta"]:
        (root / name).write_bytes(payload)
    data = {**SMALL, "data": {"dataset": {"name": "cifar10", "data_root": str(tmp_path)},
                              "partition": {"name": "iid"}}}
    code, err = run_cli(capsys, str(write_yaml(tmp_path, data)), "--check", "-o", str(tmp_path / "o"))
    assert code == 2
    assert "data.dataset" in one_line(err)


# -- 14. resource bombs are bounded at validation -----------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("override, field", [
    ("training.torch_threads=1000000000", "training.torch_threads"),
    ("training.batch_size=1000000000", "training.batch_size"),
])
def test_resource_bombs_are_refused(tmp_path, capsys, override, field) -> None:
    code, err = run_cli(capsys, str(write_yaml(tmp_path, SMALL)), "--check", "-o", str(tmp_path / "o"),
                        "--set", override)
    assert code == 2 and field in one_line(err)


# -- 15. typos get a did-you-mean ----------------------------------------------------------------------------
def test_unknown_scenario_key_suggests_the_right_one(tmp_path, capsys) -> None:
    code, err = run_cli(capsys, str(write_yaml(tmp_path, SMALL)), "--check", "--set", "clients.partcipation=0.2")
    assert code == 2 and "did you mean 'participation'" in one_line(err)


# -- 4. plug-in failures are one line naming the field and the class ---------------------------------------
PLUGIN = textwrap.dedent('''
    import numpy as np

    class Raises:
        def __init__(self):
            raise RuntimeError("cannot reach the licence server")

        def loss_db(self, distance_m):
            return 100.0 + 0 * np.asarray(distance_m)

    class NoLoss:
        """A path loss without loss_db."""

    class NanLoss:
        def loss_db(self, distance_m):
            return np.full(np.shape(distance_m), np.nan)

    class NanSelector:
        def prepare(self, counts):
            pass
        def select(self, n_clients, n_selected, rng):
            return np.array([0] * n_selected)
        def state_dict(self):
            return {}
        def load_state_dict(self, state):
            pass
''')


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch) -> Path:
    (tmp_path / "bad_plugins.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("bad_plugins", None)  # a module of that name imported by another test file
    yield tmp_path
    sys.modules.pop("bad_plugins", None)


@pytest.mark.slow
def test_plugin_constructor_that_raises_is_one_line(plugin_dir, capsys) -> None:
    data = {**SMALL, "cell": {"pathloss": {"name": "bad_plugins:Raises"}}}
    code, err = run_cli(capsys, str(write_yaml(plugin_dir, data)), "--check", "-o", str(plugin_dir / "o"))
    assert code == 2
    line = one_line(err)
    assert "cell.pathloss" in line and "Raises" in line and "licence server" in line


@pytest.mark.slow
@pytest.mark.parametrize("name, words", [
    ("bad_plugins:NoLoss", ["cell.pathloss", "NoLoss", "loss_db"]),
    ("bad_plugins:NanLoss", ["cell", "NanLoss", "finite"]),
    ("os:system", ["cell.pathloss", "os:system", "not a class"]),
    ("subprocess:Popen", ["cell.pathloss", "Popen", "loss_db"]),
])
def test_plugin_with_the_wrong_interface_or_output_is_one_line(plugin_dir, capsys, name, words) -> None:
    data = {**SMALL, "cell": {"pathloss": {"name": name}}}
    code, err = run_cli(capsys, str(write_yaml(plugin_dir, data)), "--check", "-o", str(plugin_dir / "o"))
    assert code == 2
    line = one_line(err)
    for w in words:
        assert w in line, (w, line)
    assert not (plugin_dir / "o").exists()


def test_component_parameter_typo_lists_the_accepted_ones(tmp_path, capsys) -> None:
    data = {**SMALL, "cell": {"pathloss": {"name": "log_distance", "exponnt": 3.0}}}
    code, err = run_cli(capsys, str(write_yaml(tmp_path, data)), "--check", "-o", str(tmp_path / "o"))
    assert code == 2
    line = one_line(err)
    assert "cell.pathloss" in line and "did you mean 'exponent'" in line and "accepted" in line


@pytest.mark.slow
def test_plugin_returning_garbage_fails_the_run_in_one_line(plugin_dir, capsys) -> None:
    data = {**SMALL, "clients": {**SMALL["clients"], "selection": {"name": "bad_plugins:NanSelector"}}}
    out = plugin_dir / "o"
    code, err = run_cli(capsys, str(write_yaml(plugin_dir, data)), "-o", str(out))
    assert code == 1
    line = one_line(err)
    assert "clients.selection" in line and "NanSelector" in line
    assert json.loads((out / "fedavg" / "summary.json").read_text())["status"] == "failed"


def test_debug_shows_the_traceback(plugin_dir, capsys) -> None:
    data = {**SMALL, "cell": {"pathloss": {"name": "bad_plugins:Raises"}}}
    with pytest.raises(Exception):  # noqa: B017 (whatever the plug-in raises goes through)
        main(["scenario", str(write_yaml(plugin_dir, data)), "--check", "--debug", "-o", str(plugin_dir / "o")])


# -- kill and resume with a real SIGKILL ---------------------------------------------------------------------
@pytest.mark.slow
def test_sigkill_midway_then_resume_reproduces_the_rows(tmp_path) -> None:
    data = {**SMALL, "rounds": 12, "algorithms": [{"name": "scala"}]}
    path = write_yaml(tmp_path, data)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "sfl_sim.cli", "scenario", str(path), "--no-progress"]
    assert subprocess.run(cmd + ["-o", str(tmp_path / "full")], env=env, capture_output=True).returncode == 0
    proc = subprocess.Popen(cmd + ["-o", str(tmp_path / "cut")], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    metrics = tmp_path / "cut" / "scala" / "metrics.csv"
    deadline = time.time() + 120
    while time.time() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < 5):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(metrics.read_text().splitlines()) < 14, "the run finished before it could be killed"
    done = subprocess.run(cmd + ["-o", str(tmp_path / "cut"), "--resume"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for name in ("metrics.csv", "rounds.csv"):
        assert (read_rows(tmp_path / "cut" / "scala" / name, host_time=False)
                == read_rows(tmp_path / "full" / "scala" / name, host_time=False))
    shutil.rmtree(tmp_path / "cut")


@pytest.mark.slow
@pytest.mark.parametrize("field, value, words", [
    ("clients.selection", "bad_plugins:NoLoss", ["clients.selection", "NoLoss", "select"]),
    ("data.partition", "bad_plugins:NoLoss", ["data.partition", "NoLoss", "split"]),
    ("data.dataset", "bad_plugins:NoLoss", ["data.dataset", "NoLoss", "load"]),
])
def test_simulator_plugins_are_checked_against_their_protocol(plugin_dir, capsys, field, value, words) -> None:
    code, err = run_cli(capsys, str(write_yaml(plugin_dir, SMALL)), "--check", "-o", str(plugin_dir / "o"),
                        "--set", f"{field}={{name: '{value}'}}")
    assert code == 2
    line = one_line(err)
    for w in words:
        assert w in line, (w, line)
