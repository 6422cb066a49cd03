"""A resumed run is the run it claims to be, across code changes too (issue 27).

Every run directory records what the run resolved to (``resolved.yaml``); ``--resume`` and a study's
"finished or resumable" check compare it with what today's code resolves the scenario to: a changed
default is refused field by field, stating the old value resumes it and reproduces its rows, another
version of the code is a warning (``--strict-versions``: a refusal), and a run made before the record
existed resumes with one line saying its defaults cannot be checked.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.fl.fedvls import FedVLS
from sfl_sim.cli import main
from sfl_sim.clients.energy.models import PA_EFFICIENCY, SERVER_J_PER_FLOP, YANG_2021_KAPPA
from sfl_sim.config import validate
from sfl_sim.kit.params import parameter_values
from sfl_sim.runs import resolved
from sfl_sim.runs.resolved import parameter_differences, resolve_run
from sfl_sim.runs.rundir import upgrade
from tests.helpers import finished_run, read_rows, run_cli, small_scenario, write_yaml

FEDVLS = small_scenario(algorithms=["fedvls"])


def snapshot(directory: Path) -> dict:
    return {p.relative_to(directory): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def record_of(run_dir: Path) -> dict:
    return yaml.safe_load((run_dir / "resolved.yaml").read_text())


def set_fedvls_default(monkeypatch, form: str) -> None:
    """FedVLS's ``suppression_form`` default as it was in another version of the code (its parameter
    model's default; the model's compiled validator and schema come back with the rest on undo)."""
    model = FedVLS.Params
    for compiled in ("__pydantic_validator__", "__pydantic_serializer__", "__pydantic_core_schema__"):
        monkeypatch.setattr(model, compiled, getattr(model, compiled))
    monkeypatch.setattr(model.model_fields["suppression_form"], "default", form)
    model.model_rebuild(force=True)


@pytest.fixture
def made_with_paper(tmp_path, capsys, monkeypatch) -> tuple[Path, Path]:
    """A finished 2-round FedVLS run made by code whose default was the printed form: (scenario, run dir)."""
    with monkeypatch.context() as m:
        set_fedvls_default(m, "paper")
        path, out = finished_run(tmp_path, capsys, FEDVLS)
    return path, out / "fedvls"


# -- the record ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_record_holds_every_component_the_training_settings_and_the_versions(tmp_path, capsys) -> None:
    _, out = finished_run(tmp_path, capsys, FEDVLS)
    record = record_of(out / "fedvls")
    components = record["components"]
    assert list(components) == ["algorithm", "model", "data.dataset", "data.partition", "cell.placement",
                                "cell.pathloss", "cell.shadowing", "cell.fading", "cell.rate", "cell.allocation",
                                "cell.mobility", "cell.power_control", "cell.interference", "clients.selection",
                                "training.optimizer", "energy.device"]
    assert components["algorithm"] == {"name": "fedvls", "class": "sfl_sim.algorithms.fl.fedvls:FedVLS",
                                       "params": {"lam": 0.1, "suppression_weight": 0.005,
                                                  "suppression_form": "released"}}
    # given values and defaults side by side; what the simulator passes itself is left out
    model = components["model"]["params"]
    assert model["conv_channels"] == [4] * 5 and "dropout" in model and "num_classes" not in model
    assert components["data.dataset"]["params"]["max_train_samples"] == 600
    assert components["clients.selection"]["name"] == "uniform"
    assert components["training.optimizer"]["class"] == "torch.optim.sgd:SGD"
    assert components["training.optimizer"]["params"]["momentum"] == 0.0
    assert "lr" not in components["training.optimizer"]["params"]
    assert record["training"]["batch_size"] == 16 and "torch_threads" not in record["training"]
    versions = record["versions"]
    assert versions["torch"] == str(torch.__version__) and versions["numpy"] == np.__version__
    assert set(resolved.VERSION_KEYS) <= set(versions)


def test_parameters_come_from_the_models_fixed_fields_and_plug_in_constructors() -> None:
    # besplit_a fixes dtd itself: BESplit's parameters, dtd as it sets it
    besplit_a = parameter_values(ALGORITHMS.get("besplit_a"), {"tau": 3.0}, ("setup",))
    assert besplit_a["dtd"] is True and besplit_a["tau"] == 3.0 and besplit_a["ea"] is True
    assert parameter_values(ALGORITHMS.get("besplit_g"), {}, ("setup",))["dtd"] is False

    class Base:
        def __init__(self, a: int = 1, b: tuple = (1, 2)) -> None:
            pass

    class Plugin(Base):
        def __init__(self, c: str = "x", **kwargs) -> None:
            super().__init__(**kwargs)

    # a plug-in's model comes from its constructor, through **kwargs to its base's
    assert parameter_values(Plugin, {"a": 5, "extra": None}) == {"c": "x", "a": 5, "b": (1, 2), "extra": None}
    assert parameter_values(dict, {"k": 1}) == {"k": 1}  # no readable signature: what was given


def test_a_selector_from_the_algorithms_default_is_recorded() -> None:
    cfg = validate(small_scenario(algorithms=["fedcbs"]))
    selection = resolve_run(cfg, "fedcbs").record["components"]["clients.selection"]
    assert selection["name"] == "class_balanced" and selection["params"]["beta_last"] == 10.0


def test_parameter_differences_name_the_field_as_the_scenario_writes_it() -> None:
    cfg = validate(small_scenario(algorithms=["fedavg", "fedvls"]))
    today = resolve_run(cfg, "fedvls")
    made = json.loads(json.dumps(today.record))
    made["components"]["algorithm"]["params"]["suppression_form"] = "paper"
    made["components"]["model"]["params"]["dropout"] = 0.25
    del made["components"]["cell.rate"]["params"]["noise_figure_db"]  # added after the run: its default holds
    made["components"]["cell.fading"]["params"]["gone"] = 1
    assert parameter_differences(made, today.record, today.algorithm_field) == [
        "algorithms[1].suppression_form: made with 'paper', now 'released'",
        "model.params.dropout: made with 0.25, now 0.5",
        "cell.fading.gone: made with 1, now '<absent>'"]


def test_versions_without_git(monkeypatch) -> None:
    """Outside a checkout, or where git is missing, the commit is unknown and nothing fails."""
    resolved._git_state.cache_clear()
    monkeypatch.setenv("PATH", "")
    try:
        versions = resolved.code_versions()
        assert versions["git_commit"] is None and versions["git_dirty"] is None
        assert versions["torch"] == str(torch.__version__)
    finally:
        resolved._git_state.cache_clear()


# -- resume --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_changed_default_is_refused_with_the_field_named(made_with_paper, capsys) -> None:
    path, run_dir = made_with_paper
    assert record_of(run_dir)["components"]["algorithm"]["params"]["suppression_form"] == "paper"
    before = snapshot(run_dir)
    code, err = run_cli(capsys, str(path), "-o", str(run_dir.parent), "--resume", "--rounds", "3")
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 3 and "Traceback" not in err, err
    assert "made with other parameters" in lines[0]
    assert lines[1].strip() == "algorithms[0].suppression_form: made with 'paper', now 'released'"
    assert "state the recorded value" in lines[2] and "(-o)" in lines[2]
    assert snapshot(run_dir) == before


@pytest.mark.slow
def test_stating_the_old_value_resumes_and_reproduces_the_rows(made_with_paper, capsys, tmp_path) -> None:
    path, run_dir = made_with_paper
    stated = write_yaml(tmp_path, {**FEDVLS, "algorithms": [{"name": "fedvls", "suppression_form": "paper"}]},
                        "stated.yaml")
    code, err = run_cli(capsys, str(stated), "-o", str(run_dir.parent), "--resume", "--rounds", "3")
    assert code == 0, err
    assert "warning" not in err
    straight = write_yaml(tmp_path, {**FEDVLS, "rounds": 3,
                                     "algorithms": [{"name": "fedvls", "suppression_form": "paper"}]}, "three.yaml")
    assert run_cli(capsys, str(straight), "-o", str(tmp_path / "straight"))[0] == 0
    for name in ("metrics.csv", "rounds.csv", "classes.csv"):
        assert (read_rows(run_dir / name, host_time=False)
                == read_rows(tmp_path / "straight" / "fedvls" / name, host_time=False)), name
    assert [r["after_round"] for r in record_of(run_dir)["resumes"]] == [2]


@pytest.mark.slow
def test_another_version_warns_and_resumes(tmp_path, capsys, monkeypatch) -> None:
    path, out = finished_run(tmp_path, capsys, FEDVLS)
    run_dir = out / "fedvls"
    made = record_of(run_dir)["versions"]["sfl_sim"]
    monkeypatch.setattr("sfl_sim.catalog.package_version", lambda: "99.0.0")
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume", "--rounds", "3")
    assert code == 0, err
    warning = [line for line in err.splitlines() if "warning" in line]
    assert len(warning) == 1 and f"made with sfl-sim {made}, this is sfl-sim 99.0.0" in warning[0], err
    assert [r["round"] for r in read_rows(run_dir / "metrics.csv")] == ["0", "1", "2", "3"]
    resumes = record_of(run_dir)["resumes"]
    assert resumes == [{"after_round": 2, "versions": {**resumes[0]["versions"], "sfl_sim": "99.0.0"}}]
    assert record_of(run_dir)["versions"]["sfl_sim"] == made  # what the run was made with stays


@pytest.mark.slow
def test_strict_versions_refuses_another_version(tmp_path, capsys) -> None:
    path, out = finished_run(tmp_path, capsys, FEDVLS)
    run_dir = out / "fedvls"
    record = record_of(run_dir)
    record["versions"]["torch"] = "2.0.0"  # made with an older torch
    (run_dir / "resolved.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
    before = snapshot(run_dir)
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume", "--rounds", "3", "--strict-versions")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--strict-versions" in lines[0], err
    assert f"made with torch 2.0.0, this is torch {torch.__version__}" in lines[0]
    assert snapshot(run_dir) == before


@pytest.mark.slow
def test_an_old_run_without_the_record_resumes_with_one_line(tmp_path, capsys) -> None:
    path, out = finished_run(tmp_path, capsys, FEDVLS)
    run_dir = out / "fedvls"
    (run_dir / "resolved.yaml").unlink()
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume", "--rounds", "3")
    assert code == 0, err
    warning = [line for line in err.splitlines() if "warning" in line]
    assert len(warning) == 1 and "defaults" in warning[0] and "cannot be checked" in warning[0], err
    assert [r["round"] for r in read_rows(run_dir / "metrics.csv")] == ["0", "1", "2", "3"]
    assert not (run_dir / "resolved.yaml").exists()  # a record written now would not be what it was made with


# -- energy ---------------------------------------------------------------------------------------------
def test_the_record_names_the_energy_model_and_section() -> None:
    record = resolve_run(validate(FEDVLS), "fedvls").record
    device = record["components"]["energy.device"]
    assert device["name"] == "dvfs" and device["class"] == "sfl_sim.clients.energy.models:DvfsEnergy"
    assert device["params"]["kappa"] == YANG_2021_KAPPA and device["params"]["pa_efficiency"] == PA_EFFICIENCY
    assert device["params"]["rrc_tail"] is False  # every radio constant, the defaults included
    assert record["energy"] == {"enabled": True, "server_j_per_flop": SERVER_J_PER_FLOP, "battery": None}
    given = {**FEDVLS, "energy": {"device": {"name": "per_flop", "j_per_flop": 1e-11},
                                  "battery": {"capacity_min_j": 100.0, "capacity_max_j": 200.0}}}
    record = resolve_run(validate(given), "fedvls").record
    assert record["components"]["energy.device"]["params"]["j_per_flop"] == 1e-11
    assert record["energy"]["battery"] == {"capacity_min_j": 100.0, "capacity_max_j": 200.0}
    off = resolve_run(validate({**FEDVLS, "energy": {"enabled": False}}), "fedvls").record
    assert "energy.device" not in off["components"] and off["energy"]["enabled"] is False


def test_energy_parameters_are_compared_when_both_records_have_them() -> None:
    today = resolve_run(validate(FEDVLS), "fedvls").record
    made = yaml.safe_load(yaml.safe_dump(today))
    assert parameter_differences(made, today) == []
    made["components"]["energy.device"]["params"]["kappa"] = 2e-28
    made["energy"]["battery"] = {"capacity_min_j": 1.0, "capacity_max_j": 2.0}
    assert parameter_differences(made, today) == [
        f"energy.device.kappa: made with 2e-28, now {YANG_2021_KAPPA!r}",
        "energy.battery: made with {'capacity_min_j': 1.0, 'capacity_max_j': 2.0}, now None"]


def test_a_record_made_before_energy_accounting_adopts_todays_and_is_no_difference() -> None:
    today = resolve_run(validate(FEDVLS), "fedvls").record
    made = yaml.safe_load(yaml.safe_dump(today))
    del made["energy"], made["components"]["energy.device"]
    read = upgrade.resolved(made, today, from_round=3)
    (note,) = read.notes
    assert "made before energy accounting" in note and "charged with energy.device 'dvfs'" in note
    # read with today's energy record from the round it continues at; its from_round is not compared
    assert read.value["energy"]["from_round"] == 3 and read.value["components"]["energy.device"] == \
        today["components"]["energy.device"]
    assert parameter_differences(read.value, today) == []
    again = upgrade.resolved(read.value, today, from_round=5)  # adopted once
    assert again.notes == () and again.value["energy"]["from_round"] == 3


@pytest.mark.slow
@pytest.mark.parametrize("strict", [False, True])
def test_a_run_made_before_energy_accounting_resumes_with_one_line_and_adopts_it(tmp_path, capsys,
                                                                                  strict) -> None:
    path, out = finished_run(tmp_path, capsys, FEDVLS)
    run_dir = out / "fedvls"
    record = record_of(run_dir)
    del record["energy"], record["components"]["energy.device"]
    (run_dir / "resolved.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
    made_with = yaml.safe_load((run_dir / "scenario.yaml").read_text())
    del made_with["energy"]  # nor did its scenario.yaml have the section
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump(made_with, sort_keys=False))
    # the resume states the device's parameters, as the shipped scenarios do
    device = resolve_run(validate(FEDVLS), "fedvls").record["components"]["energy.device"]
    assert device["name"] == "dvfs" and device["params"]
    path.write_text(yaml.safe_dump({**FEDVLS, "energy": {"device": {"name": "dvfs", **device["params"]}}}))
    flags = ["--strict-versions"] if strict else []
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume", "--rounds", "3", *flags)
    assert code == 0, err
    warning = [line for line in err.splitlines() if "warning" in line]
    assert len(warning) == 1 and "made before energy accounting" in warning[0], err
    assert "charged with energy.device 'dvfs'" in warning[0]
    after = record_of(run_dir)
    assert after["energy"]["from_round"] == 3
    assert after["components"]["energy.device"]["name"] == "dvfs"
    assert [r["after_round"] for r in after["resumes"]] == [2]
    # the next resume compares the adopted record and has nothing to say
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume", "--rounds", "4", *flags)
    assert code == 0, err
    assert not [line for line in err.splitlines() if "warning" in line], err
    assert record_of(run_dir)["energy"]["from_round"] == 3


# -- studies -------------------------------------------------------------------------------------------
def run_study(tmp_path: Path, capsys, *flags: str) -> tuple[int, str, dict]:
    """``sfl-sim study`` of FEDVLS x seed 0 into tmp_path/study: exit code, stderr, runs.csv by name."""
    write_yaml(tmp_path, small_scenario(seed=None, algorithms=["fedvls"]), "base.yaml")
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({"base": "base.yaml", "seeds": [0]}))
    code = main(["study", str(path), "-o", str(tmp_path / "study"), "--no-progress", *flags])
    with (tmp_path / "study" / "runs.csv").open() as fh:
        rows = {r["name"]: r for r in csv.DictReader(fh)}
    return code, capsys.readouterr().err, rows


@pytest.mark.slow
def test_a_study_checks_its_runs_the_same_way(tmp_path, capsys, monkeypatch) -> None:
    with monkeypatch.context() as m:
        set_fedvls_default(m, "paper")
        code, err, rows = run_study(tmp_path, capsys)
    assert code == 0, err
    (name, _), = rows.items()
    run_dir = tmp_path / "study" / name
    before = snapshot(run_dir)
    # today's default differs: the finished run is neither skipped nor mixed
    code, err, rows = run_study(tmp_path, capsys)
    assert code == 1
    assert rows[name]["status"] == "failed"
    assert "algorithms[0].suppression_form: made with 'paper', now 'released'" in rows[name]["error"]
    assert snapshot(run_dir) == before
    # the code it was made with: skipped, as before
    with monkeypatch.context() as m:
        set_fedvls_default(m, "paper")
        code, err, rows = run_study(tmp_path, capsys)
        assert code == 0 and rows[name]["status"] == "skipped", err
        # another version: skipped with a warning; --strict-versions refuses to reuse it
        m.setattr("sfl_sim.catalog.package_version", lambda: "99.0.0")
        code, err, rows = run_study(tmp_path, capsys)
        assert code == 0 and rows[name]["status"] == "skipped", err
        assert "this is sfl-sim 99.0.0" in err
        code, err, rows = run_study(tmp_path, capsys, "--strict-versions")
        assert code == 1 and rows[name]["status"] == "failed"
        assert "--strict-versions" in rows[name]["error"] and "sfl-sim 99.0.0" in rows[name]["error"]
    assert snapshot(run_dir) == before


def test_stating_a_recorded_value_is_no_scenario_change_even_for_a_selector_left_unset() -> None:
    """fedcbs picks its own selector when clients.selection is null: stating that selector with the
    recorded values resumes; another value, or no record to compare with, is a scenario change."""
    from sfl_sim.runs.rundir.files import made_with_differences
    from sfl_sim.runs.runner import resolved_scenario

    cpu = torch.device("cpu")
    made_cfg = validate(small_scenario(algorithms=["fedcbs"]))
    made_with = resolved_scenario(made_cfg, "fedcbs", cpu)
    record = resolve_run(made_cfg, "fedcbs").record
    selection = {"name": "class_balanced", **record["components"]["clients.selection"]["params"]}

    def asked(**change) -> dict:
        data = small_scenario(algorithms=["fedcbs"])
        data["clients"]["selection"] = {**selection, **change}
        return resolved_scenario(validate(data), "fedcbs", cpu)

    assert made_with_differences(made_with, asked(), record) == []
    assert made_with_differences(made_with, asked(beta_first=2.0), record) == [
        "clients.selection.beta_first: '<absent>' -> 2.0"]
    assert made_with_differences(made_with, asked(), None)  # an old run: nothing says what it used


# -- run identity: a registered name and its parameters, not an import path ---------------------------
_MOVED_RATE = '''
from sfl_sim.channel.link.rate import ShannonRate


class MovedRate(ShannonRate):
    """Shannon's rate, defined in a module that the next version of the code moves."""
'''


@pytest.mark.slow
def test_a_component_class_that_moved_resumes_with_one_warning(tmp_path, capsys, monkeypatch) -> None:
    """A run is made with a registered rate model; the code then moves the class to another module
    (same name, same parameters): the run resumes, says so in one line, and its rows equal a
    straight run's."""
    from sfl_sim.channel import RATES

    code_dir = tmp_path / "code"
    code_dir.mkdir()
    (code_dir / "old_home.py").write_text(_MOVED_RATE)
    (code_dir / "new_home.py").write_text(_MOVED_RATE)
    monkeypatch.syspath_prepend(str(code_dir))
    import new_home
    import old_home

    data = {**small_scenario(algorithms=["fedavg"]), "cell": {"rate": {"name": "moved_rate"}}}
    monkeypatch.setitem(RATES._entries, "moved_rate", old_home.MovedRate)
    path, out = finished_run(tmp_path, capsys, data)
    run_dir = out / "fedavg"
    assert record_of(run_dir)["components"]["cell.rate"]["class"] == "old_home:MovedRate"

    monkeypatch.setitem(RATES._entries, "moved_rate", new_home.MovedRate)  # the move
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume", "--rounds", "3")
    assert code == 0, err
    warning = [line for line in err.splitlines() if "warning" in line]
    assert len(warning) == 1 and "cell.rate: old_home:MovedRate -> new_home:MovedRate" in warning[0], err
    assert "registered name and parameters" in warning[0]
    straight = write_yaml(tmp_path, {**data, "rounds": 3}, "three.yaml")
    assert run_cli(capsys, str(straight), "-o", str(tmp_path / "straight"))[0] == 0
    for name in ("metrics.csv", "rounds.csv"):
        assert (read_rows(run_dir / name, host_time=False)
                == read_rows(tmp_path / "straight" / "fedavg" / name, host_time=False)), name


def test_a_changed_class_is_no_parameter_difference() -> None:
    cfg = validate(small_scenario(algorithms=["fedavg"]))
    today = resolve_run(cfg, "fedavg")
    made = json.loads(json.dumps(today.record))
    made["components"]["cell.pathloss"]["class"] = "old.home:TR36814Macro"
    assert parameter_differences(made, today.record, today.algorithm_field) == []
    assert resolved.class_differences(made, today.record, today.algorithm_field) == [
        f"cell.pathloss: old.home:TR36814Macro -> {today.record['components']['cell.pathloss']['class']}"]
