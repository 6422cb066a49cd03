"""Every grid point is checked as its runs' builds would check it, before any run starts (issue 35, item 2).

The scenario model *and* every component's parameters (the cell built and deployed, the energy
model, the compressors, the availability model...), in ``--dry-run`` too; a large grid says its
size and its progress; a property test over grids: any grid either plans or is refused in one line.

``SFL_SIM_PROPERTY_EXAMPLES=300 python -m pytest tests/study/test_grid_checks.py -k property`` runs
more examples.
"""
from __future__ import annotations

import io
import os
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sfl_sim
from sfl_sim.cli import main
from sfl_sim.errors import UserError
from sfl_sim.study import plan
from tests.helpers import small_scenario, write_yaml

BASE = small_scenario(seed=None, rounds=1, algorithms=["scala", "fedavg"])

#: Values the scenario model accepts and a component refuses (issue 35's list), each as a grid
#: field, a bad value beside a good one, and words its one line must hold.
REFUSED_AT_BUILD = [
    ("cell.rate", {"name": "mcs_table", "table": "cqi_table9"}, ["cell.rate.table", "cqi_table9", "cqi_table1"]),
    ("cell.power_control", {"name": "open_loop", "p0_dbm": -80, "alpha": 0.3},
     ["cell.power_control.alpha", "0.3", "one of 0.0, 0.4"]),
    ("energy", {"enabled": True, "device": {"name": "dvfs", "kappa": -1}}, ["energy.device.kappa", "-1", ">= 0"]),
    ("compression.activations", {"name": "quantize", "bits": 17}, ["compression.activations.bits", "17", "<= 16"]),
    ("cell.harq", {"name": "harq", "max_transmissions": 0}, ["cell.harq.max_transmissions", "0", ">= 1"]),
    ("cell.pathloss", {"name": "log_distance", "exponent": -2}, ["cell.pathloss.exponent", "-2", "> 0"]),
    ("clients.availability", {"name": "markov", "mean_on_s": -5, "mean_off_s": 10},
     ["clients.availability.mean_on_s", "-5", "> 0"]),
    ("cell.interference", {"name": "first_tier", "activity": 0.1, "inter_site_distance_m": 1},
     ["inter_site_distance_m", "got 1 m", "at least sqrt(3) R"]),
    ("training.optimizer", {"name": "sgd", "momentum": -1}, ["training.optimizer", "momentum", "-1"]),
]
GOOD = {"cell.rate": {"name": "shannon"}, "cell.power_control": {"name": "fixed"}, "energy": {"enabled": False},
        "compression.activations": None, "cell.harq": None, "cell.pathloss": {"name": "tr36814_macro"},
        "clients.availability": {"name": "always"}, "cell.interference": {"name": "none"},
        "training.optimizer": {"name": "sgd"}}


def write_study(tmp_path, study: dict):
    write_yaml(tmp_path, BASE, "base.yaml")
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({"base": "base.yaml", "output_dir": str(tmp_path / "out"), **study},
                                   sort_keys=False))
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("field", "bad", "words"), REFUSED_AT_BUILD, ids=[c[0] for c in REFUSED_AT_BUILD])
def test_a_point_its_build_would_refuse_is_refused_before_any_run_in_dry_run_too(tmp_path, capsys, field, bad,
                                                                                  words) -> None:
    path = write_study(tmp_path, {"seeds": [0], "grid": {field: {"good": GOOD[field], "bad": bad}}})
    for args in (["study", str(path), "--dry-run"], ["study", str(path)]):
        code = main(args)
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert f"grid point ({field}=bad)" in err, err
        for word in words:
            assert word in err, (word, err)
    assert not (tmp_path / "out").exists()  # not even the good point ran
    with pytest.raises(UserError) as info:  # the Python API plans the same
        sfl_sim.plan_study(path)
    assert "\n" not in str(info.value) and words[0] in str(info.value)


@pytest.mark.slow
def test_sfl_sim_check_with_seeds_checks_the_components_too(tmp_path) -> None:
    scenario = write_yaml(tmp_path, BASE, "base.yaml")
    with pytest.raises(UserError, match=r"energy.device.kappa: got 1e\+300"):
        sfl_sim.check(scenario, seeds="0,1", overrides={"energy": {"enabled": True,
                                                                   "device": {"name": "dvfs", "kappa": 1e300}}})


@pytest.mark.slow
def test_each_distinct_component_spec_is_built_once(tmp_path, monkeypatch) -> None:
    from sfl_sim.runs import build

    built: list[str] = []
    real = build.build_cell
    monkeypatch.setattr(build, "build_cell", lambda cfg: built.append(cfg.cell.rate.name) or real(cfg))
    rates = [{"name": "shannon"}, {"name": "shannon_gap"}]
    path = write_study(tmp_path, {"seeds": [0, 1], "grid": {"training.learning_rate": [0.01, 0.02, 0.03],
                                                           "cell.rate": rates}})
    runs = plan.expand(*plan.load_study(path))
    assert len(runs) == 3 * 2 * 2 * 2 and sorted(built) == ["shannon", "shannon_gap"]


@pytest.mark.slow
def test_a_large_grid_says_its_size_and_its_progress(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(plan, "LARGE_GRID_POINTS", 4)
    monkeypatch.setattr(plan, "PROGRESS_EVERY_S", 0.0)
    path = write_study(tmp_path, {"seeds": [0], "grid": {"training.learning_rate": [0.01, 0.02],
                                                        "training.local_iterations": [1, 2]}})
    said = io.StringIO()
    plan.expand(*plan.load_study(path), progress=said)
    lines = said.getvalue().splitlines()
    assert lines[0] == "study: 4 grid points x 1 seeds; checking every point before any run starts"
    assert "study: checked 1 of 4 grid points" in lines and lines[-1] == "study: checked all 4 grid points"
    quiet = io.StringIO()
    monkeypatch.setattr(plan, "LARGE_GRID_POINTS", 5)
    plan.expand(*plan.load_study(path), progress=quiet)
    assert quiet.getvalue() == ""


@pytest.mark.parametrize(("grid", "words"), [
    ({"rounds": []}, ["study grid: got []", "rounds takes a non-empty list"]),
    ({"cell.rate": {1: {"name": "shannon"}}}, ["study grid: got 1", "cell.rate labels"]),
    ({5: [1]}, ["study grid: got 5", "dotted scenario field names"]),
    ({"rounds": 3}, ["study grid: got 3", "rounds takes a non-empty list"]),
])
def test_a_bad_grid_names_its_field(tmp_path, capsys, grid, words) -> None:
    code = main(["study", str(write_study(tmp_path, {"seeds": [0], "grid": grid})), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, (word, err)


# -- property: any grid plans or is refused in one line --------------------------------------------------
EXAMPLES = int(os.environ.get("SFL_SIM_PROPERTY_EXAMPLES", "15"))
FIELDS = ["rounds", "clients.participation", "clients.count", "cell.rate", "cell.power_control", "energy.device",
          "compression.activations", "cell.harq", "training.learning_rate", "cell.interference",
          "clients.availability", "energy.battery"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 300), st.sampled_from(
    [0.0, -1.0, 0.3, 1e-300, 1e300, float("inf"), float("nan"), 17, "x", "cqi_table9"]))
COMPONENTS = st.fixed_dictionaries({"name": st.sampled_from(
    ["shannon", "mcs_table", "open_loop", "fixed", "dvfs", "per_flop", "quantize", "harq", "first_tier", "markov",
     "nope"])}, optional={k: SCALARS for k in ["table", "alpha", "p0_dbm", "kappa", "bits", "max_transmissions",
                                             "activity", "inter_site_distance_m", "mean_on_s", "mean_off_s",
                                             "capacity_min_j", "capacity_max_j"]})
VALUES = st.one_of(SCALARS, COMPONENTS, st.lists(SCALARS, max_size=2))
GRIDS = st.dictionaries(st.sampled_from(FIELDS), st.lists(VALUES, min_size=1, max_size=2), max_size=2)


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(grid=GRIDS)
def test_property_any_grid_plans_or_is_refused_in_one_line(tmp_path, grid) -> None:
    path = write_study(tmp_path, {"seeds": [0], "grid": grid})
    start = time.perf_counter()
    try:
        plan.expand(*plan.load_study(path))
    except UserError as exc:
        text = str(exc)
        assert "\n" not in text and len(text) < 2000, text
    assert time.perf_counter() - start < 60


#: An algorithm's client counts against the point's clients (issue 50, items 9 and 13): 6 clients,
#: participation 0.5, so 3 per round.
COHORT_REFUSED = [
    ({"name": "fedbuff", "concurrency": 3, "buffer_size": 5}, ["algorithms[0].buffer_size", "got 5", "concurrency (3"]),
    ({"name": "fedbuff", "concurrency": 50, "buffer_size": 2}, ["algorithms[0].concurrency", "got 50", "(6)"]),
    ({"name": "scala", "trigger_clients": 50}, ["algorithms[0].trigger_clients", "got 50", "3 clients selected"]),
]


@pytest.mark.slow
@pytest.mark.parametrize(("bad", "words"), COHORT_REFUSED, ids=[str(c[0]) for c in COHORT_REFUSED])
def test_client_counts_beyond_the_clients_are_refused_before_any_run(tmp_path, capsys, bad, words) -> None:
    path = write_study(tmp_path, {"seeds": [0], "grid": {"algorithms": [[{"name": "fedavg"}], [bad]]}})
    for args in (["study", str(path), "--dry-run"], ["study", str(path)]):
        code = main(args)
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        for word in words:
            assert word in err, (word, err)
    assert not (tmp_path / "out").exists()  # fedavg's point did not run first
    scenario = write_yaml(tmp_path, {**BASE, "algorithms": [bad]}, "one.yaml")
    code = main(["scenario", str(scenario), "--check", "-o", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and words[0] in err, err


@pytest.mark.slow
def test_the_evaluation_grid_refusal_names_the_registered_asynchronous_algorithms(tmp_path, capsys) -> None:
    from sfl_sim.algorithms import ALGORITHMS
    from sfl_sim.algorithms.asynchronous import is_asynchronous

    scenario = write_yaml(tmp_path, {**BASE, "algorithms": ["fedavg"], "eval_every_sim_s": 5.0}, "one.yaml")
    code = main(["scenario", str(scenario), "--check", "-o", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    names = [n for n in ALGORITHMS.names() if is_asynchronous(ALGORITHMS.get(n))]
    assert code == 2 and "eval_every_sim_s: got 5.0" in err and "async_sfl" in names, err
    assert err.strip().endswith(f"asynchronous ones: {', '.join(names)})"), err


def test_labels_that_differ_only_in_case_are_refused_naming_both(tmp_path, capsys) -> None:
    path = write_study(tmp_path, {"grid": {"training.learning_rate": {"Fast": 0.1, "slow": 0.01, "fast": 0.05}}})
    code = main(["study", str(path), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "training.learning_rate labels" in err and "'Fast' and 'fast'" in err, err


@pytest.mark.slow
def test_a_large_dry_run_says_the_count_first_and_lists_the_first_runs(tmp_path, capsys) -> None:
    from sfl_sim import cli

    rates = [0.001 * (i + 1) for i in range(cli.DRY_RUN_LISTED + 10)]
    path = write_study(tmp_path, {"seeds": [0], "grid": {"training.learning_rate": rates}})
    total = len(rates) * 2  # BASE has two algorithms
    assert main(["study", str(path), "--dry-run", "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{total} runs (1 seeds) from ") and lines[0].endswith(f"0 done, {total} to run")
    assert lines[1].startswith(f"expected: {total} training(s), 0 re-timing(s)")
    assert len(lines) == 2 + cli.DRY_RUN_LISTED + 1 and all(line.startswith("to run ") and line.endswith("(train)")
                                                            for line in lines[2:-1])
    assert lines[-1] == f"... and {total - cli.DRY_RUN_LISTED} more (0 done, {total - cli.DRY_RUN_LISTED} to run); " \
                        f"--list-all lists every run"
    assert main(["study", str(path), "--dry-run", "--no-progress", "--list-all"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2 + total
