"""Studies: grid expansion, resumable and idempotent execution, failures that do not stop
the others, the local pool and Ray giving the same rows, and the ``--seeds`` shorthand."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from sfl_sim.cli import main
from sfl_sim.config import ConfigError
from sfl_sim.study.plan import StudySpec, expand, load_study, value_label
from tests.helpers import ROOT, read_rows, small_scenario, write_yaml

BASE = small_scenario(seed=None, rounds=3, algorithms=["scala", "fedavg"], learning_rate=0.05)


def write_study(tmp_path: Path, study: dict, base: dict = BASE) -> Path:
    write_yaml(tmp_path, base, "base.yaml")
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({"base": "base.yaml", **study}, sort_keys=False))  # grid order as written
    return path


def study_rows(study_dir: Path) -> dict:
    """Every run's metrics and per-round rows (host time excepted), by run name."""
    return {p.parent.name: (read_rows(p, host_time=False), read_rows(p.parent / "rounds.csv", host_time=False))
            for p in sorted(study_dir.glob("*/metrics.csv"))}


# -- expansion -------------------------------------------------------------------------------------------
def test_grid_expands_to_the_cartesian_product_times_algorithms_times_seeds(tmp_path) -> None:
    path = write_study(tmp_path, {"seeds": [0, 1, 2], "grid": {
        "data.partition": [{"name": "quantity", "alpha": 2}, {"name": "dirichlet", "beta": 0.1}],
        "clients.participation": [0.5, 1.0]}})
    spec, base = load_study(path)
    runs = expand(spec, base)
    assert len(runs) == 2 * 2 * 2 * 3  # partitions x participations x algorithms (from the base) x seeds
    names = [r.name for r in runs]
    assert len(set(names)) == len(names)
    assert names == [r.name for r in expand(*load_study(path))]  # stable across invocations
    first = runs[0]
    assert first.name == "partition=quantity-alpha2__participation=0.5__alg=scala__seed=0"
    assert first.coordinates == {"data.partition": {"name": "quantity", "alpha": 2}, "clients.participation": 0.5,
                                 "algorithm": "scala", "seed": 0}
    assert first.scenario["seed"] == 0 and [a["name"] for a in first.scenario["algorithms"]] == ["scala"]
    assert runs[-1].scenario["data"]["partition"] == {"name": "dirichlet", "beta": 0.1}


def test_algorithms_as_a_grid_field_and_names_that_would_collide(tmp_path) -> None:
    path = write_study(tmp_path, {"seeds": [0], "grid": {"clients.participation": [0.5, 2.0]}})
    with pytest.raises(ConfigError, match=r"grid point \(clients.participation=2.0\)"):  # before any work
        expand(*load_study(path))
    path = write_study(tmp_path, {"seeds": [0], "grid": {
        "algorithms": [[{"name": "scala"}], [{"name": "fedavg"}, {"name": "fedprox", "mu": 0.1}]],
        "training.learning_rate": [0.1, 0.10000000001]}})
    runs = expand(*load_study(path))
    assert [r.label for r in runs] == ["scala", "scala", "fedavg", "fedprox", "fedavg", "fedprox"]  # file order
    names = [r.name for r in runs]
    assert len(set(names)) == len(names) and all("~" in n for n in names)  # 0.1 and 0.1000…1 read alike


def test_named_grid_values_name_the_runs_and_stand_for_their_values(tmp_path) -> None:
    from sfl_sim.analysis.study_data import run_coordinates

    shannon = {"name": "shannon"}
    mcs = {"name": "mcs_table", "table": "cqi_table1", "overhead_fraction": 0.08}
    path = write_study(tmp_path, {"seeds": [0, 1], "grid": {
        "cell.rate": {"shannon": shannon, "mcs-8pct": mcs}, "clients.participation": [0.5, 1.0]}})
    runs = expand(*load_study(path))
    assert len(runs) == 2 * 2 * 2 * 2
    assert runs[0].name == "rate=shannon__participation=0.5__alg=scala__seed=0"
    assert runs[0].coordinates == {"cell.rate": "shannon", "clients.participation": 0.5, "algorithm": "scala",
                                   "seed": 0}
    assert runs[0].scenario["cell"]["rate"] == shannon  # the run itself holds the value, not the label
    last = runs[-1]
    assert last.name == "rate=mcs-8pct__participation=1__alg=fedavg__seed=1"
    assert last.scenario["cell"]["rate"] == mcs and last.coordinates["cell.rate"] == "mcs-8pct"
    # The report's coordinates take the label for the whole varying section.
    pick = [runs[0], last]
    coords = run_coordinates([r.scenario for r in pick], [{"coordinates": r.coordinates} for r in pick])
    assert coords.fields == ("cell.rate", "clients.participation")
    assert [v["cell.rate"] for v in coords.values] == ["shannon", "mcs-8pct"]


def test_a_misspelled_component_in_a_grid_is_refused_before_any_run(tmp_path) -> None:
    path = write_study(tmp_path, {"seeds": [0], "grid": {"cell.rate": [{"name": "shannon"}, {"name": "shanon"}]}})
    with pytest.raises(ConfigError, match=r"grid point \(cell.rate=.*shanon.*\): cell.rate.name: unknown rate "
                                          r"'shanon' \(did you mean 'shannon'\?\)"):
        expand(*load_study(path))


def test_a_named_grid_value_that_is_invalid_names_its_label(tmp_path) -> None:
    path = write_study(tmp_path, {"seeds": [0], "grid": {"clients.participation": {"half": 0.5, "too-many": 2.0}}})
    with pytest.raises(ConfigError, match=r"grid point \(clients.participation=too-many\)"):
        expand(*load_study(path))


def test_value_labels_are_short_and_safe() -> None:
    assert value_label({"name": "dirichlet", "beta": 0.1}) == "dirichlet-beta0.1"
    assert value_label([32, 64]) == "32+64"
    assert value_label("my/mod:Class") == "my_mod_Class"


def test_a_whole_compression_block_reads_short_and_other_dicts_as_before() -> None:
    from typing import get_args

    from sfl_sim.config.choices import CompressionPath
    from sfl_sim.study.plan import _PATH_LABELS

    assert set(_PATH_LABELS) == set(get_args(CompressionPath))
    q8 = {"name": "quantize", "bits": 8}
    assert value_label({"activations": q8, "updates": q8}) == "act-q8_upd-q8"
    assert value_label({"activations": {"name": "topk", "fraction": 0.1},
                        "updates": {"name": "rand_topk", "fraction": 0.1, "error_feedback": True}}) == \
        "act-top0.1_upd-rtop0.1-ef"
    assert value_label({"updates": {"name": "quantize", "bits": 4, "rounding": "stochastic"}, "gradients": None,
                        "model_download": {"name": "my.pkg:Codec", "k": 3}}) == \
        "upd-q4-stochastic_grad-none_dl-my.pkg_Codec-k3"
    # Other dicts (the shipped studies' grid values) keep their names, so their run directories do too.
    assert value_label({"name": "markov", "mean_on_s": 120.0, "peak_hour": 20.0}) == "markov-mean_on_s120-peak_hour20"
    assert value_label({"placement": {"name": "uniform_disc"}}) == "placementuniform_disc"
    assert value_label({"updates": 8}) == "updates8"


@pytest.mark.parametrize("study, words", [
    ({"seeds": [0], "grdi": {}}, ["study grdi", "did you mean 'grid'"]),
    ({"seeds": "0,1"}, ["study seeds", "list"]),
    ({"seeds": [0, 0]}, ["distinct seeds"]),
    ({"seeds": [0], "grid": {"seed": [1, 2]}}, ["seed"]),
    ({"seeds": [0], "grid": {"clients.cuont": [3]}}, ["clients.cuont", "did you mean 'count'"]),
    ({"seeds": [0], "grid": {"training.learning_rate": []}}, ["grid"]),
    ({"seeds": [0], "grid": {"training.learning_rate": {}}}, ["grid"]),
    ({"seeds": [0], "grid": {"training.learning_rate": {"a/b": 0.1}}},
     ["study grid: got 'a/b'", "training.learning_rate labels"]),
    ({"seeds": [0], "grid": {"algorithms": {"s": [{"name": "scala"}]}}}, ["algorithms as a list", "label"]),
])
def test_a_bad_study_is_one_line(tmp_path, capsys, study, words) -> None:
    code = main(["study", str(write_study(tmp_path, study)), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, (w, err)
    assert not (tmp_path / "out").exists()


def test_base_may_be_a_shipped_scenario_name(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"base": "paper/fashion_mnist_alpha2", "seeds": [0, 1]}))
    spec, base = load_study(path)
    assert base.name == "fashion_mnist_alpha2.yaml" and isinstance(spec, StudySpec)


# -- execution -------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_study_runs_every_run_then_skips_them(tmp_path, capsys) -> None:
    path = write_study(tmp_path, {"seeds": [0, 1]})
    out = tmp_path / "out"
    assert main(["study", str(path), "-o", str(out), "--no-progress"]) == 0
    first = study_rows(out)
    assert len(first) == 4
    for name, (metrics, _) in first.items():
        summary = json.loads((out / name / "summary.json").read_text())
        assert summary["status"] == "complete" and summary["coordinates"]["seed"] in (0, 1)
        assert metrics[0]["round"] == "0"
    updates = {name: str(json.loads((out / name / "summary.json").read_text())["client_updates"]) for name in first}
    with (out / "runs.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert {r["status"] for r in rows} == {"complete"} and {r["name"]: r["client_updates"] for r in rows} == updates
    capsys.readouterr()
    assert main(["study", str(path), "-o", str(out)]) == 0  # idempotent: nothing runs again
    assert "4 of 4 runs already finished; running 0" in capsys.readouterr().err
    assert study_rows(out) == first
    with (out / "runs.csv").open() as fh:  # a skipped run's row still says what it was given
        assert {r["name"]: r["client_updates"] for r in csv.DictReader(fh)} == updates


@pytest.mark.slow
def test_two_workers_give_the_rows_of_one(tmp_path) -> None:
    path = write_study(tmp_path, {"seeds": [0, 1]})
    assert main(["study", str(path), "-o", str(tmp_path / "one"), "--no-progress"]) == 0
    assert main(["study", str(path), "-o", str(tmp_path / "two"), "--workers", "2", "--no-progress"]) == 0
    assert study_rows(tmp_path / "one") == study_rows(tmp_path / "two")


@pytest.mark.slow
def test_a_failing_run_is_reported_and_the_others_finish(tmp_path, capsys) -> None:
    path = write_study(tmp_path, {"seeds": [0], "grid": {"training.learning_rate": [0.05, 1000.0]}})
    out = tmp_path / "out"
    code = main(["study", str(path), "-o", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    with (out / "runs.csv").open() as fh:
        status = {r["name"]: r for r in csv.DictReader(fh)}
    diverged = [n for n, r in status.items() if r["status"] == "diverged"]
    assert diverged and all("learning_rate=1000" in n for n in diverged)
    assert all(r["status"] == "complete" for n, r in status.items() if "learning_rate=0.05" in n)
    assert all(n in err for n in diverged) and "diverged at round" in err


@pytest.mark.slow
def test_killed_study_rerun_equals_an_uninterrupted_one(tmp_path) -> None:
    path = write_study(tmp_path, {"seeds": [0, 1], "set": {"rounds": 6}})
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "sfl_sim.cli", "study", str(path), "--no-progress", "--workers", "2"]
    assert subprocess.run(cmd + ["-o", str(tmp_path / "full")], env=env, capture_output=True).returncode == 0
    proc = subprocess.Popen(cmd + ["-o", str(tmp_path / "cut")], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    started = lambda: [p for p in (tmp_path / "cut").glob("*/metrics.csv") if len(p.read_text().splitlines()) >= 3]  # noqa: E731
    while time.time() < deadline and len(started()) < 2:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole study: pool workers included
    proc.wait()
    done = [p for p in (tmp_path / "cut").glob("*/summary.json") if json.loads(p.read_text())["status"] == "complete"]
    assert len(done) < 4, "the study finished before it could be killed"
    again = subprocess.run(cmd + ["-o", str(tmp_path / "cut")], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert study_rows(tmp_path / "cut") == study_rows(tmp_path / "full")


@pytest.mark.slow
def test_a_changed_study_refuses_to_reuse_a_run_made_with_other_settings(tmp_path, capsys) -> None:
    path = write_study(tmp_path, {"seeds": [0]})
    out = tmp_path / "out"
    assert main(["study", str(path), "-o", str(out), "--no-progress"]) == 0
    before = study_rows(out)
    changed = write_study(tmp_path, {"seeds": [0], "set": {"training.learning_rate": 0.02}})
    assert main(["study", str(changed), "-o", str(out), "--no-progress"]) == 1
    assert "different scenario" in capsys.readouterr().err
    assert study_rows(out) == before


@pytest.mark.slow
def test_seeds_shorthand_runs_a_study(tmp_path, capsys) -> None:
    path = write_yaml(tmp_path, {**BASE, "output_dir": str(tmp_path / "seeds")})
    assert main(["scenario", str(path), "--seeds", "0,1", "--no-progress", "--rounds", "2"]) == 0
    names = sorted(p.name for p in (tmp_path / "seeds").iterdir() if p.is_dir())
    assert names == ["alg=fedavg__seed=0", "alg=fedavg__seed=1", "alg=scala__seed=0", "alg=scala__seed=1"]
    assert yaml.safe_load((tmp_path / "seeds" / "alg=scala__seed=1" / "scenario.yaml").read_text())["rounds"] == 2


@pytest.mark.slow
def test_ray_executor_gives_the_rows_of_the_local_one(tmp_path) -> None:
    pytest.importorskip("ray", reason="the Ray extra: pip install -e '.[ray]' (CI installs it)")
    path = write_study(tmp_path, {"seeds": [0, 1]})
    assert main(["study", str(path), "-o", str(tmp_path / "local"), "--no-progress"]) == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    ray = subprocess.run([sys.executable, "-m", "sfl_sim.cli", "study", str(path), "-o", str(tmp_path / "ray"),
                          "--executor", "ray", "--no-progress"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert ray.returncode == 0, ray.stderr
    assert study_rows(tmp_path / "ray") == study_rows(tmp_path / "local")


@pytest.mark.slow
def test_ray_missing_says_how_to_install(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    code = main(["study", str(write_study(tmp_path, {"seeds": [0]})), "-o", str(tmp_path / "o"), "--executor", "ray"])
    err = capsys.readouterr().err
    assert code == 2 and "pip install" in err and "[ray]" in err


@pytest.mark.parametrize("path", sorted((ROOT / "studies").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_study_files_expand(path) -> None:
    runs = expand(*load_study(path))
    assert runs and len({r.name for r in runs}) == len(runs)
