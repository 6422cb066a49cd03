"""The training: section end to end: one-line errors for every field, the JSON Schema, per-algorithm
overrides recorded in scenario.yaml, classes.csv and the best-accuracy definition, and resume —
refused when a training field changed, exact (optimizer state included) when nothing did."""
from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path

import jsonschema
import pytest
import torch
import yaml

from sfl_sim.analysis import load_classes
from sfl_sim.catalog.component_schema import json_schema
from sfl_sim.config import ConfigError, validate
from sfl_sim.runs.rundir.schema import BEST_ACCURACY_DEFINITION
from tests.helpers import finished_run, read_rows, run_cli, schema_validator, small_scenario, write_yaml

SMALL = small_scenario(partition={"name": "dirichlet", "beta": 0.1})

#: FedVLS with the paper's optimizer and local epochs beside SCALA with Adam and a schedule, with
#: FedVLS's vacant-class metric.
MIXED = {**SMALL, "metrics": {"local_vacant_class_accuracy": True}, "algorithms": [
    {"name": "fedvls", "training": {"optimizer": {"name": "sgd", "momentum": 0.9, "weight_decay": 1.0e-5},
                                    "local_epochs": 1, "batch_size": 32, "client_optimizer_state": "persist",
                                    "max_grad_norm": 5.0}},
    {"name": "scala", "training": {"optimizer": "adam",
                                   "lr_schedule": {"name": "step", "step_size_rounds": 1, "gamma": 0.5}}},
]}


# -- configuration ---------------------------------------------------------------------------------
@pytest.mark.parametrize("training, words", [
    ({"optimizer": {"name": "sgd", "momentum": 1.5}}, ["training.optimizer.momentum", "1.5", "[0, 1)"]),
    ({"optimizer": "adagard"}, ["training.optimizer.name", "adagard", "sgd, adam, adamw", "module:Class"]),
    ({"optimizer": {"name": "sgd", "momentun": 0.9}}, ["training.optimizer.momentun", "did you mean 'momentum'"]),
    ({"optimizer": {"name": "adam", "lr": 0.1}}, ["training.optimizer.lr", "training.learning_rate"]),
    ({"optimizer": {"name": "sgd", "nesterov": True}}, ["training.optimizer.nesterov", "momentum > 0"]),
    ({"optimizer": {"name": "adamw", "betas": [0.9, 1.2]}}, ["training.optimizer.betas", "[0, 1)"]),
    ({"lr_schedule": "warmup"}, ["training.lr_schedule.name", "warmup", "constant, step, exponential, cosine"]),
    ({"lr_schedule": {"name": "step"}}, ["training.lr_schedule.step_size_rounds", "missing"]),
    ({"lr_schedule": {"name": "cosine", "rounds": 10, "eta_min": 1.0}}, ["training.lr_schedule.eta_min", "at most"]),
    ({"lr_schedule": {"name": "exponential", "gamma": 0}}, ["training.lr_schedule.gamma", "(0, 1]"]),
    ({"local_epochs": 2, "local_iterations": 5}, ["training.local_epochs", "not both"]),
    ({"local_epochs": 0}, ["training.local_epochs", "integer >= 1"]),
    ({"max_grad_norm": -1}, ["training.max_grad_norm", "> 0"]),
    ({"client_optimizer_state": "keep"}, ["training.client_optimizer_state", "fresh, persist"]),
])
def test_each_training_field_is_refused_in_one_line(training, words) -> None:
    with pytest.raises(ConfigError) as info:
        validate({"training": training})
    line = str(info.value)
    assert "\n" not in line
    for w in words:
        assert w in line, (w, line)


def test_an_algorithms_training_block_is_checked_with_its_path() -> None:
    with pytest.raises(ConfigError, match=r"^algorithms\[1\]\.training\.optimizer\.momentum: got -1"):
        validate({"algorithms": ["scala", {"name": "fedvls", "training": {"optimizer": {"momentum": -1}}}]})
    with pytest.raises(ConfigError, match=r"^algorithms\[0\]\.training\.torch_threads: unknown key"):
        validate({"algorithms": [{"name": "fedvls", "training": {"torch_threads": 2}}]})
    with pytest.raises(ConfigError, match=r"^algorithms\[0\]\.training\.lr_schedule\.eta_min"):
        validate({"training": {"lr_schedule": {"name": "cosine", "rounds": 4, "eta_min": 0.005}},
                  "algorithms": [{"name": "fedvls", "training": {"learning_rate": 0.001}}]})


def test_override_replaces_fields_and_local_work_as_a_pair() -> None:
    cfg = validate({**MIXED, "training": {**SMALL["training"], "max_grad_norm": 1.0}})
    fedvls, scala = cfg.training_for("fedvls"), cfg.training_for("scala")
    assert (fedvls.local_epochs, fedvls.local_iterations, fedvls.batch_size) == (1, None, 32)
    assert fedvls.optimizer.params == {"momentum": 0.9, "dampening": 0.0, "nesterov": False, "weight_decay": 1e-5}
    assert (scala.local_iterations, scala.local_epochs, scala.max_grad_norm) == (1, None, 1.0)  # shared values
    assert scala.optimizer.name == "adam" and scala.optimizer.params["betas"] == [0.9, 0.999]
    assert cfg.algorithms[0].params == {} and cfg.algorithms[1].params == {}  # never a constructor argument


def test_set_builds_an_sgd_optimizer_from_a_bare_field(tmp_path, capsys) -> None:
    from sfl_sim.config import load_scenario
    cfg = load_scenario(write_yaml(tmp_path, SMALL), ["training.optimizer.momentum=0.9"])
    assert cfg.training.optimizer.as_dict()["name"] == "sgd" and cfg.training.optimizer.params["momentum"] == 0.9


@pytest.mark.slow
def test_json_schema_accepts_the_new_fields_and_rejects_bad_ones() -> None:
    schema = json_schema()
    schema_validator(schema).validate(MIXED)
    schema_validator(schema).validate({"training": {"optimizer": "my_pkg:Lion", "lr_schedule": "constant"}})
    for bad in ({"training": {"optimizer": {"name": "sgd", "momentum": "lots"}}},
                {"training": {"lr_schedule": {"name": "step"}}},
                {"training": {"client_optimizer_state": "keep"}},
                {"algorithms": [{"name": "fedvls", "training": {"local_epochs": 0}}]}):
        with pytest.raises(jsonschema.ValidationError):
            schema_validator(schema).validate(bad)


PLUGIN = textwrap.dedent('''
    import torch


    class HalfSGD(torch.optim.SGD):
        """SGD at half the given rate."""

        def __init__(self, params, lr, momentum=0.0):
            super().__init__(params, lr=lr / 2, momentum=momentum)


    class NotAnOptimizer:
        def __init__(self, params, lr):
            pass
''')


@pytest.mark.parametrize("value, words", [
    ("my_optim:NotAnOptimizer", ["training.optimizer", "not a torch.optim.Optimizer"]),
    ("{name: 'my_optim:HalfSGD', nesterov: true}", ["training.optimizer", "nesterov", "momentum"]),
    ("my_optim:Missing", ["training.optimizer.name", "Missing"]),
])
def test_a_bad_optimizer_class_is_one_line_before_any_work(tmp_path, capsys, monkeypatch, value, words) -> None:
    (tmp_path / "my_optim.py").write_text(PLUGIN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, err = run_cli(capsys, str(write_yaml(tmp_path, SMALL)), "--check", "-o", str(tmp_path / "o"),
                        "--set", f"training.optimizer={value}")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_a_module_class_optimizer_trains(tmp_path, capsys, monkeypatch) -> None:
    (tmp_path / "my_optim.py").write_text(PLUGIN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    data = {**SMALL, "training": {**SMALL["training"], "optimizer": {"name": "my_optim:HalfSGD", "momentum": 0.5}}}
    code, err = run_cli(capsys, str(write_yaml(tmp_path, data)), "-o", str(tmp_path / "o"))
    assert code == 0, err
    state = torch.load(tmp_path / "o" / "fedavg" / "checkpoint.pt", weights_only=True)
    assert "optimizers" not in state["algorithm"]  # fresh client state: nothing outlives a round


# -- a run: scenario.yaml, classes.csv, summary ------------------------------------------------------
@pytest.fixture
def mixed(tmp_path: Path, capsys) -> tuple[Path, Path]:
    return finished_run(tmp_path, capsys, MIXED)


@pytest.mark.slow
def test_the_override_is_in_the_runs_scenario_yaml(mixed) -> None:
    _, out = mixed
    fedvls = yaml.safe_load((out / "fedvls" / "scenario.yaml").read_text())
    assert fedvls["algorithm"]["training"]["optimizer"]["momentum"] == 0.9
    assert fedvls["algorithm"]["training"]["local_epochs"] == 1
    assert fedvls["training"]["optimizer"]["momentum"] == 0.0  # the shared section, as written
    scala = yaml.safe_load((out / "scala" / "scenario.yaml").read_text())
    assert scala["algorithm"]["training"]["optimizer"]["name"] == "adam"


@pytest.mark.slow
def test_classes_csv_and_the_best_accuracy_definition(mixed) -> None:
    _, out = mixed
    for label in ("fedvls", "scala"):
        classes = load_classes(out / label)
        metrics = read_rows(out / label / "metrics.csv", host_time=False)
        assert classes["round"].tolist() == [int(r["round"]) for r in metrics] == [0, 1, 2]
        per_class = classes[[f"class_{n}_accuracy" for n in range(10)]]
        assert per_class.notna().all().all() and ((per_class >= 0) & (per_class <= 1)).all().all()
        summary = json.loads((out / label / "summary.json").read_text())
        trained = [float(r["test_accuracy"]) for r in metrics if int(r["round"]) >= 1]
        assert summary["best_test_accuracy"] == max(trained)
        assert summary["best_test_accuracy_definition"] == BEST_ACCURACY_DEFINITION
    # FedVLS has local models and Dirichlet(0.1) clients have vacant classes; SCALA has none.
    fedvls, scala = load_classes(out / "fedvls"), load_classes(out / "scala")
    assert fedvls["local_vacant_class_accuracy"].isna().tolist() == [True, False, False]
    assert scala["local_vacant_class_accuracy"].isna().all()


@pytest.mark.slow
def test_optimizer_state_is_checkpointed_as_plain_data(mixed) -> None:
    _, out = mixed
    fedvls = torch.load(out / "fedvls" / "checkpoint.pt", weights_only=True)["algorithm"]["optimizers"]
    assert set(fedvls) == {"clients"}  # persisted momentum buffers, per client that took part
    scala = torch.load(out / "scala" / "checkpoint.pt", weights_only=True)["algorithm"]["optimizers"]
    assert set(scala) == {"schedule", "server"} and scala["schedule"]["lr"] == pytest.approx(0.01 / 4)


# -- resume ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("change, field", [
    (["--set", "training.optimizer.momentum=0.9"], "training.optimizer.momentum"),
    (["--set", "training.optimizer=adam"], "training.optimizer.name"),
    (["--set", "training.lr_schedule={name: exponential, gamma: 0.9}"], "training.lr_schedule.name"),
    (["--set", "training.local_epochs=2", "--set", "training.local_iterations=null"], "training.local_epochs"),
    (["--set", "training.max_grad_norm=1.0"], "training.max_grad_norm"),
    (["--set", "training.client_optimizer_state=persist"], "training.client_optimizer_state"),
])
def test_resume_refuses_a_changed_training_field(mixed, capsys, change, field) -> None:
    path, out = mixed
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume", "--rounds", "3", *change)
    assert code == 2 and "different scenario" in err and field in err, err


@pytest.mark.slow
def test_resume_refuses_a_changed_algorithm_training_block(mixed, capsys, tmp_path) -> None:
    path, out = mixed
    changed = {**MIXED, "algorithms": [{**MIXED["algorithms"][0], "training": {
        **MIXED["algorithms"][0]["training"], "optimizer": {"name": "sgd", "momentum": 0.5}}}, MIXED["algorithms"][1]]}
    code, err = run_cli(capsys, str(write_yaml(tmp_path, changed, "changed.yaml")), "-o", str(out), "--resume")
    assert code == 2 and "algorithm.training.optimizer.momentum: 0.9 -> 0.5" in err, err


@pytest.mark.slow
def test_resume_reproduces_the_rows_exactly(mixed, capsys, tmp_path) -> None:
    """Two rounds, then two more on resume = four straight (persisted client momentum, Adam moments
    and the step schedule come back from the checkpoint)."""
    path, out = mixed
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume", "--rounds", "4")
    assert code == 0, err
    straight = write_yaml(tmp_path, {**MIXED, "rounds": 4}, "four.yaml")
    assert run_cli(capsys, str(straight), "-o", str(tmp_path / "straight"))[0] == 0
    for label in ("fedvls", "scala"):
        for name in ("metrics.csv", "rounds.csv", "classes.csv"):
            assert (read_rows(out / label / name, host_time=False)
                    == read_rows(tmp_path / "straight" / label / name, host_time=False)), (label, name)


@pytest.mark.slow
def test_a_run_made_before_the_training_fields_existed_resumes(tmp_path, capsys) -> None:
    """... and before ``metrics:`` and ``rounds.csv``'s ``round_host_time_s``: the old rows are
    kept (that cell empty), the new ones have it."""
    path = write_yaml(tmp_path, SMALL)
    out = tmp_path / "out"
    assert run_cli(capsys, str(path), "-o", str(out))[0] == 0
    scenario_file = out / "fedavg" / "scenario.yaml"
    old = yaml.safe_load(scenario_file.read_text())
    for key in ("local_epochs", "optimizer", "lr_schedule", "max_grad_norm", "client_optimizer_state"):
        del old["training"][key]
    del old["metrics"]
    scenario_file.write_text(yaml.safe_dump(old, sort_keys=False))
    (out / "fedavg" / "classes.csv").unlink()
    rounds_file = out / "fedavg" / "rounds.csv"
    made = read_rows(rounds_file)
    with rounds_file.open("w", newline="") as fh:  # the header before round_host_time_s existed
        writer = csv.DictWriter(fh, [c for c in made[0] if c != "round_host_time_s"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(made)
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume", "--rounds", "3")
    assert code == 0, err
    assert load_classes(out / "fedavg")["round"].tolist() == [3]  # started afresh at the resumed rows
    resumed = read_rows(rounds_file)
    assert [r["round"] for r in resumed] == ["1", "2", "3"]
    assert [r["round_host_time_s"] == "" for r in resumed] == [True, True, False]
    assert ([{k: v for k, v in r.items() if k != "round_host_time_s"} for r in resumed[:2]]
            == [{k: v for k, v in r.items() if k != "round_host_time_s"} for r in made])


@pytest.mark.slow
def test_the_vacant_class_metric_is_opt_in_and_changes_no_training_number(mixed, capsys, tmp_path) -> None:
    """The same runs without ``metrics.local_vacant_class_accuracy``: every number of metrics.csv,
    rounds.csv and classes.csv but the host times and the (now empty) vacant-class cells is equal."""
    _, out = mixed
    (tmp_path / "off").mkdir()
    off = finished_run(tmp_path / "off", capsys, {k: v for k, v in MIXED.items() if k != "metrics"})[1]
    for label in ("fedvls", "scala"):
        for name in ("metrics.csv", "rounds.csv"):
            assert read_rows(out / label / name, host_time=False) == read_rows(off / label / name, host_time=False)
        with_probe, without = read_rows(out / label / "classes.csv"), read_rows(off / label / "classes.csv")
        assert all(r["local_vacant_class_accuracy"] == "" for r in without)
        assert ([{**r, "local_vacant_class_accuracy": ""} for r in with_probe] == without)
    # A resume may switch it on: it records what is measured, not what is trained.
    code, err = run_cli(capsys, str(write_yaml(tmp_path, {**MIXED, "rounds": 3}, "on.yaml")), "-o", str(off),
                        "--resume")
    assert code == 0, err
    assert [r["local_vacant_class_accuracy"] != "" for r in read_rows(off / "fedvls" / "classes.csv")] == \
        [False, False, False, True]
