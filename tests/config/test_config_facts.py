"""Facts defined once: the built-in optimizer and schedule tables agree with torch and with every
place that reads them; the host-only fields name real scenario fields; the engine's training
settings are a view of the scenario's ``training:`` section."""
from __future__ import annotations

import dataclasses
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sfl_sim.analysis.study_data import NON_SETTING_FIELDS
from sfl_sim.config import ConfigError, Training, flatten, validate
from sfl_sim.config.optimizers import BUILTIN_OPTIMIZERS, BUILTIN_SCHEDULES
from sfl_sim.optim import OPTIMIZERS, RoundSchedule, TrainingSettings
from sfl_sim.runs.rundir.files import RESUMABLE_FIELDS, scenario_differences
from sfl_sim.runs.rundir.schema import HOST_ONLY_FIELDS
from sfl_sim.runs.runner import resolved_scenario

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", BUILTIN_OPTIMIZERS)
def test_each_builtin_optimizer_is_registered_as_its_torch_class_and_takes_its_parameters(name):
    builtin = BUILTIN_OPTIMIZERS[name]
    cls = OPTIMIZERS.get(name)
    assert cls is getattr(torch.optim, builtin.torch_class)
    accepted = inspect.signature(cls).parameters
    defaults = builtin.params().model_dump()
    for field, value in defaults.items():
        assert field in accepted, f"{name}: torch.optim.{builtin.torch_class} takes no {field!r}"
        torch_default = accepted[field].default
        assert value == (list(torch_default) if isinstance(torch_default, tuple) else torch_default), field


@pytest.mark.parametrize("name,params", [("constant", {}), ("step", {"step_size_rounds": 2}),
                                         ("exponential", {"gamma": 0.5}), ("cosine", {"rounds": 3})])
def test_each_builtin_schedule_builds_its_torch_scheduler_with_the_validated_defaults(name, params):
    assert set(BUILTIN_SCHEDULES) == {"constant", "step", "exponential", "cosine"}
    schedule = RoundSchedule(0.1, name, params)
    torch_class = BUILTIN_SCHEDULES[name].torch_class
    scheduler = schedule._scheduler
    assert (scheduler is None) if torch_class is None else type(scheduler).__name__ == torch_class
    spec = validate({"training": {"lr_schedule": {"name": name, **params}}}).training.lr_schedule
    expected = BUILTIN_SCHEDULES[name].params.model_validate(params).model_dump(mode="json")
    assert spec.params == expected  # the scenario records what RoundSchedule used


def test_a_schedule_refuses_what_the_scenario_refuses_in_the_same_words():
    with pytest.raises(ValueError, match=r"^lr_schedule 'step': step_size_rounds: missing; allowed: an integer"):
        RoundSchedule(0.1, "step", {})
    with pytest.raises(ConfigError, match=r"training\.lr_schedule\.step_size_rounds: missing; allowed: an integer"):
        validate({"training": {"lr_schedule": "step"}})


def test_training_settings_are_a_view_of_the_training_section():
    default = TrainingSettings.from_training(Training())
    plain = TrainingSettings()
    for field in dataclasses.fields(TrainingSettings):
        if field.name.endswith("_params"):
            assert getattr(plain, field.name) == {}  # empty: torch's defaults, which the section fills in
            assert field.name[: -len("_params")] in Training.model_fields
        else:
            assert field.name in Training.model_fields
            assert getattr(plain, field.name) == getattr(default, field.name), field.name
    merged = validate({"training": {"optimizer": {"name": "adam", "eps": 1e-6}, "local_epochs": 2,
                                    "max_grad_norm": 1.5, "client_optimizer_state": "persist"}}).training
    settings = TrainingSettings.from_training(merged)
    assert (settings.optimizer, settings.optimizer_params["eps"], settings.local_epochs, settings.max_grad_norm,
            settings.client_optimizer_state) == ("adam", 1e-6, 2, 1.5, "persist")


def test_host_only_fields_are_fields_of_a_runs_scenario_yaml_and_feed_resume_and_study():
    cfg = validate({})
    recorded = flatten(resolved_scenario(cfg, cfg.algorithms[0].label, torch.device("cpu")))
    for field in HOST_ONLY_FIELDS:
        assert any(k == field or k.startswith(field + ".") for k in recorded), field
    assert set(HOST_ONLY_FIELDS) <= set(RESUMABLE_FIELDS) and set(HOST_ONLY_FIELDS) <= set(NON_SETTING_FIELDS)
    made_with = resolved_scenario(cfg, cfg.algorithms[0].label, torch.device("cpu"))
    asked = {**made_with, "metrics": {"local_vacant_class_accuracy": True}, "device": "cpu", "rounds": 80,
             "seed": 3}
    assert scenario_differences(made_with, asked) == ["seed: 0 -> 3"]


@pytest.mark.slow
def test_validating_a_scenario_loads_no_torch():
    """Validation (what a study's parent process and every one-line refusal need) stays light; the
    JSON Schema does import the component registries, since it lists every component's parameters."""
    code = ("import sys; from sfl_sim.config import validate; "
            "validate({'training': {'optimizer': 'adam', 'lr_schedule': {'name': 'cosine', 'rounds': 4}}}); "
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr


def test_a_choice_is_defined_once_the_resolved_execution_has_its_own_name():
    """The cell's out-of-range choice is the channel's (config re-exports it); what a run's
    ``execution`` resolves to (loop or vectorised) is a type of its own, not the user's choice."""
    from typing import get_args

    from sfl_sim.algorithms._exec.execution import ResolvedExecution
    from sfl_sim.channel.cell import OUT_OF_RANGE_CHOICES, OutOfRange
    from sfl_sim.config import choices

    assert choices.OutOfRange is OutOfRange and get_args(OutOfRange) == OUT_OF_RANGE_CHOICES
    assert set(get_args(ResolvedExecution)) == set(get_args(choices.ExecutionMode)) - {"auto"}
