"""Finding and loading many run directories; each run's setting, algorithm and seed."""

from __future__ import annotations

import copy
import json
import os

import numpy as np
import pandas as pd
import pytest
import yaml

from sfl_sim.analysis.runs import RunFormatError
from sfl_sim.analysis.study_data import (
    StudyError,
    find_run_dirs,
    format_value,
    load_study,
    run_coordinates,
)
from sfl_sim.analysis.tta import first_reaching, time_to_accuracy_s
from sfl_sim.runs.rundir.schema import METRICS_COLUMNS, ROUNDS_NUMERIC_COLUMNS
from sfl_sim.runs.rundir.upgrade import sections_added_later
from tests.analysis.synthetic_runs import PARTITIONS, scenario_for, write_run, write_study

# ----------------------------------------------------------------------------- discovery


def test_find_run_dirs_accepts_run_scenario_and_study_dirs(tmp_path):
    dirs = write_study(tmp_path / "study")
    assert find_run_dirs(tmp_path / "study") == sorted(dirs)
    assert find_run_dirs(dirs[0]) == [dirs[0]]  # a run dir itself
    scenario_out = dirs[0].parent.parent  # partition=.../ holds algorithms=*/seed=*
    assert find_run_dirs(scenario_out) == sorted(d for d in dirs if d.is_relative_to(scenario_out))
    # several paths, overlapping: each run once, in the order given
    both = find_run_dirs([dirs[-1], tmp_path / "study"])
    assert both[0] == dirs[-1] and len(both) == len(dirs)


def test_find_run_dirs_needs_summary_and_metrics_and_skips_hidden(tmp_path):
    run = write_run(tmp_path / "a" / "scala", "scala", 0)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "summary.json").write_text("{}")  # no metrics.csv: not a run dir
    hidden = write_run(tmp_path / ".cache" / "x", "scala", 1)
    assert find_run_dirs(tmp_path) == [run]
    assert hidden not in find_run_dirs(tmp_path)


def test_find_run_dirs_follows_a_symlink_once(tmp_path):
    run = write_run(tmp_path / "real" / "scala", "scala", 0)
    (tmp_path / "view").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "view" / "link")
    os.symlink(tmp_path / "view", tmp_path / "view" / "loop")  # a loop is not walked forever
    assert find_run_dirs(tmp_path / "view") == [tmp_path / "view" / "link" / "scala"]
    assert find_run_dirs(tmp_path) == [run]


def test_find_run_dirs_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        find_run_dirs(tmp_path / "nope")
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError):
        find_run_dirs(tmp_path / "f")
    with pytest.raises(StudyError, match="no run directories"):
        load_study(tmp_path)


# ----------------------------------------------------------------------------- coordinates


def test_inferred_setting_is_the_fields_that_differ(tmp_path):
    """Hand-run scenario outputs, no study coordinates: the setting comes from the scenarios."""
    for seed in (0, 1):
        for q in (0.1, 0.2):
            for a in ("scala", "fedavg"):
                out = tmp_path / f"runs_q{q}_seed{seed}" / a
                write_run(out, a, seed, overrides={"clients.participation": q,
                                                   "output_dir": str(out.parent),  # differs: ignored
                                                   "eval_batch_size": 500 + seed,   # host only: ignored
                                                   "device": "cuda" if seed else "cpu"})
    st = load_study(tmp_path)
    assert st.setting_fields == ("clients.participation",)
    assert st.settings == ("participation=0.1", "participation=0.2")
    assert st.algorithms == ("fedavg", "scala")
    assert sorted(st.runs["seed"].unique()) == [0, 1]
    assert set(st.runs.groupby(["setting", "algorithm"]).size()) == {2}


def test_component_spec_with_a_varying_name_is_one_coordinate():
    scenarios = [scenario_for("scala", 0, {"data.partition": p}) for p in PARTITIONS]
    c = run_coordinates(scenarios, [{}] * 4)
    assert c.fields == ("data.partition",)
    assert [v["data.partition"] for v in c.values] == [
        "quantity(alpha=2)", "quantity(alpha=4)", "dirichlet(beta=0.05)", "dirichlet(beta=0.1)"]
    # same name, one parameter differs: the parameter is the coordinate
    c = run_coordinates([scenario_for("scala", 0, {"data.partition.alpha": a}) for a in (2, 4)], [{}] * 2)
    assert c.fields == ("data.partition.alpha",) and [v["data.partition.alpha"] for v in c.values] == ["2", "4"]


def test_runs_made_before_power_control_interference_and_harq_join_their_defaults():
    """A run whose cell lacks power_control, interference and harq, and whose energy device states
    no parameters, is the setting of one that states their defaults (what the shipped scenarios
    write today); a non-default value is a setting of its own, and shows only what differs."""
    old = scenario_for("scala", 0)
    for key in ("power_control", "interference", "harq"):
        old.get("cell", {}).pop(key, None)
    old.pop("energy", None)
    today = sections_added_later()
    now = scenario_for("scala", 1, {"cell.power_control": today["cell"]["power_control"],
                                    "cell.interference": today["cell"]["interference"], "cell.harq": None,
                                    "energy": today["energy"]})
    implicit = scenario_for("scala", 2, {"energy": {**today["energy"], "device": {"name": "dvfs"}}})
    assert run_coordinates([old, now, implicit], [{}] * 3).fields == ()
    open_loop = scenario_for("scala", 0, {"cell.power_control": {"name": "open_loop", "p0_dbm": -90.0}})
    hot = scenario_for("scala", 0, {"energy": {**today["energy"],
                                               "device": {**today["energy"]["device"], "kappa": 2e-28}}})
    c = run_coordinates([old, now, open_loop, hot], [{}] * 4)
    assert c.fields == ("cell.power_control", "energy.device.kappa")
    assert [v["cell.power_control"] for v in c.values] == ["fixed", "fixed", "open_loop(p0_dbm=-90)", "fixed"]
    assert [v["energy.device.kappa"] for v in c.values] == ["1e-28", "1e-28", "1e-28", "2e-28"]


def test_rounds_is_part_of_the_setting_unless_ignored():
    scenarios = [scenario_for("scala", 0, {"rounds": r}) for r in (10, 20)]
    assert run_coordinates(scenarios, [{}] * 2).fields == ("rounds",)
    assert run_coordinates(scenarios, [{}] * 2, ignore=["rounds"]).fields == ()


def test_a_run_made_before_energy_existed_has_the_default_energy_section(tmp_path):
    """scenario.yaml without ``energy:`` (made before energy accounting) is the default section."""
    default = sections_added_later()["energy"]
    per_flop = {**copy.deepcopy(default), "device": {"name": "per_flop"}}
    for seed in (0, 1):  # seed 0 made before energy existed, seed 1 with the default energy section
        write_run(tmp_path / "default" / f"s{seed}", "scala", seed, overrides={"energy": default} if seed else None)
        write_run(tmp_path / "per_flop" / f"s{seed}", "scala", seed, overrides={"energy": per_flop})
    st = load_study(tmp_path / "default")
    assert st.setting_fields == () and len(st.settings) == 1
    assert set(st.runs.groupby(["setting", "algorithm"]).size()) == {2}
    st = load_study(tmp_path)  # the pre-energy run joins the default device, not a setting of its own
    assert st.setting_fields == ("energy.device",)
    assert st.settings == ("device=dvfs", "device=per_flop")
    assert st.runs.groupby("setting")["seed"].apply(sorted).to_dict() == {"device=dvfs": [0, 1],
                                                                           "device=per_flop": [0, 1]}
    # a battery is a setting of its own: the pre-energy run (no battery) stays with the default
    battery = {**copy.deepcopy(default), "battery": {"capacity_min_j": 10.0, "capacity_max_j": 20.0}}
    c = run_coordinates([scenario_for("scala", 0), scenario_for("scala", 0, {"energy": default}),
                         scenario_for("scala", 0, {"energy": battery})], [{}] * 3)
    assert c.fields and all(f.startswith("energy.battery") for f in c.fields)
    assert c.values[0] == c.values[1] != c.values[2]


def test_study_coordinates_are_used_when_every_run_has_them(tmp_path):
    write_study(tmp_path, partitions=PARTITIONS[:3], coordinates=True)
    st = load_study(tmp_path)
    assert st.setting_fields == ("data.partition",)
    assert "partition=dirichlet(beta=0.05)" in st.settings
    assert st.settings == ("partition=dirichlet(beta=0.05)", "partition=quantity(alpha=2)",
                           "partition=quantity(alpha=4)")
    assert set(st.runs["data.partition"]) == {"quantity(alpha=2)", "quantity(alpha=4)", "dirichlet(beta=0.05)"}


def test_coordinates_that_miss_a_varying_field_are_not_trusted():
    scenarios = [scenario_for("scala", 0, {"clients.participation": q}) for q in (0.1, 0.2)]
    summaries = [{"coordinates": {"data.partition": {"name": "quantity", "alpha": 2}, "seed": 0}}] * 2
    assert run_coordinates(scenarios, summaries).fields == ("clients.participation",)


def test_algorithm_label_then_spec_label_then_name():
    sc = [scenario_for("scala", 0), scenario_for("scala", 1), scenario_for("fedavg", 0)]
    sc[1]["algorithm"]["label"] = "scala_T2"
    c = run_coordinates(sc, [{}, {}, {"label": "FedAvg"}])
    assert c.algorithms == ["scala", "scala_T2", "FedAvg"]
    assert c.seeds == [0, 1, 0]


def test_same_label_different_algorithm_parameters_stay_apart():
    a, b = scenario_for("scala", 0), scenario_for("scala", 0)
    b["algorithm"]["temperature"] = 2.0
    assert run_coordinates([a, b], [{}, {}]).algorithms == ["scala [temperature=-]", "scala [temperature=2]"]


def test_duplicate_runs_are_an_error_naming_both(tmp_path):
    write_run(tmp_path / "cpu" / "scala", "scala", 0)
    write_run(tmp_path / "gpu" / "scala", "scala", 0, overrides={"device": "cuda"})
    with pytest.raises(StudyError, match="same setting") as exc:
        load_study(tmp_path)
    assert "cpu" in str(exc.value) and "gpu" in str(exc.value)


def test_format_value():
    assert format_value({"name": "dirichlet", "beta": 0.1}) == "dirichlet(beta=0.1)"
    assert format_value({"name": "none"}) == "none"
    assert format_value({"a": 1.0, "b": [1, 2]}) == "{a=1, b=[1, 2]}"
    assert format_value(1.0e9) == "1000000000" or format_value(1.0e9) == "1e+09"
    assert format_value(0.1) == "0.1" and format_value(1 / 3) == repr(1 / 3)
    assert format_value(None) == "null" and format_value(True) == "true"


# ----------------------------------------------------------------------------- loading


def test_metrics_frame_equals_the_files(tmp_path):
    dirs = write_study(tmp_path, seeds=(0, 1))
    st = load_study(tmp_path)
    assert list(st.metrics.columns) == ["run_id", "setting", "algorithm", "seed", *METRICS_COLUMNS]
    for run in st.runs.itertuples():
        got = st.metrics.loc[st.metrics["run_id"] == run.run_id, list(METRICS_COLUMNS)].reset_index(drop=True)
        want = pd.read_csv(os.path.join(run.path, "metrics.csv"))
        pd.testing.assert_frame_equal(got, want, check_dtype=False)
        rounds = st.rounds.loc[st.rounds["run_id"] == run.run_id, list(ROUNDS_NUMERIC_COLUMNS)]
        want_r = pd.read_csv(os.path.join(run.path, "rounds.csv"))[list(ROUNDS_NUMERIC_COLUMNS)]
        pd.testing.assert_frame_equal(rounds.reset_index(drop=True), want_r, check_dtype=False)
    assert len(st.runs) == len(dirs)
    assert st.metrics["round"].min() == 0  # the round-0 row is kept


def test_loading_without_round0_and_without_rounds_csv(tmp_path):
    write_run(tmp_path / "a", "scala", 0, round0=False, with_rounds_csv=False)
    st = load_study(tmp_path)
    assert st.metrics["round"].min() == 2
    assert st.rounds.empty and list(st.rounds.columns)[-1] == ROUNDS_NUMERIC_COLUMNS[-1]


def test_rounds_csv_written_before_round_host_time_s_existed_loads_with_it_empty(tmp_path):
    d = write_run(tmp_path / "a", "scala", 0)
    new = pd.read_csv(d / "rounds.csv")
    new.drop(columns=["round_host_time_s"]).to_csv(d / "rounds.csv", index=False)
    write_run(tmp_path / "b", "scala", 1)
    st = load_study(tmp_path)
    old = st.rounds.loc[st.rounds["seed"] == 0].reset_index(drop=True)
    assert old["round_host_time_s"].isna().all()
    other = [c for c in ROUNDS_NUMERIC_COLUMNS if c != "round_host_time_s"]
    pd.testing.assert_frame_equal(old[other], new[other], check_dtype=False)


def test_reordered_metrics_header_takes_the_slow_path(tmp_path):
    d = write_run(tmp_path / "a", "scala", 0)
    df = pd.read_csv(d / "metrics.csv")
    df[list(reversed(df.columns))].to_csv(d / "metrics.csv", index=False)
    write_run(tmp_path / "b", "scala", 1)
    st = load_study(tmp_path)
    got = st.metrics.loc[st.metrics["seed"] == 0, list(METRICS_COLUMNS)].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, df, check_dtype=False)


def test_bad_metrics_value_names_the_file(tmp_path):
    write_run(tmp_path / "good", "scala", 0)
    bad = write_run(tmp_path / "bad", "scala", 1)
    text = (bad / "metrics.csv").read_text().replace("0.1,2.3", "oops,2.3", 1)
    (bad / "metrics.csv").write_text(text)
    with pytest.raises(RunFormatError, match="test_accuracy") as exc:
        load_study(tmp_path)
    assert str(bad / "metrics.csv") in str(exc.value)


def test_bad_schema_version_is_named(tmp_path):
    d = write_run(tmp_path / "a", "scala", 0)
    summary = json.loads((d / "summary.json").read_text())
    summary["schema_version"] = 2
    (d / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(RunFormatError, match="schema_version 2"):
        load_study(tmp_path)


def test_unknown_files_are_ignored(tmp_path):
    d = write_run(tmp_path / "a", "scala", 0)
    (d / "classes.csv").write_text("round,class,accuracy\n1,0,0.5\n")
    (d / "checkpoint.pt").write_bytes(b"\x00\x01")
    assert len(load_study(tmp_path).runs) == 1


def test_default_targets_are_the_scenarios_common_ones(tmp_path):
    write_run(tmp_path / "a", "scala", 0, overrides={"target_accuracies": [0.5, 0.6, 0.7]})
    write_run(tmp_path / "b", "scala", 1, overrides={"target_accuracies": [0.7, 0.6]})
    assert load_study(tmp_path).targets == (0.6, 0.7)


# ----------------------------------------------------------------------------- tta for many runs


def test_first_reaching_matches_time_to_accuracy_per_run(tmp_path):
    write_study(tmp_path, seeds=(0, 1, 2))
    st = load_study(tmp_path)
    for target in (0.0, 0.1, 0.35, 0.5, 0.65, 0.99):
        hit = first_reaching(st.metrics, target)
        for run_id, m in st.metrics.groupby("run_id"):
            want = time_to_accuracy_s(m, target)
            got = hit["sim_time_s"].get(run_id, np.nan)
            assert (np.isnan(want) and np.isnan(got)) or want == got
    # round 0 reaches a target at or below the initial accuracy, at t = 0
    assert (first_reaching(st.metrics, 0.1)["sim_time_s"] == 0).all()


def test_scenario_yaml_is_read_with_the_safe_loader(tmp_path):
    d = write_run(tmp_path / "a", "scala", 0)
    (d / "scenario.yaml").write_text("seed: 0\nbad: !!python/object:os.system {}\n")
    with pytest.raises(RunFormatError, match="YAML"):
        load_study(tmp_path)
    (d / "scenario.yaml").write_text(yaml.safe_dump(scenario_for("scala", 0)))
    assert len(load_study(tmp_path).runs) == 1
