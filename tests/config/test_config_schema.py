"""The typed scenario: JSON Schema for editors, attribute access, one-line errors from pydantic."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pydantic
import pytest

from sfl_sim.catalog.component_schema import json_schema
from sfl_sim.cli import main
from sfl_sim.config import ConfigError, Scenario, validate, yaml_load
from tests.helpers import schema_validator

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture(scope="module")
def schema() -> dict:
    return json_schema()


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(SCENARIOS.rglob("*.yaml")), ids=lambda p: p.name)
def test_schema_accepts_every_shipped_scenario(schema, path) -> None:
    schema_validator(schema).validate(yaml_load(path.read_text()))


@pytest.mark.slow
@pytest.mark.parametrize("bad", [
    {"clients": {"cuont": 3}},
    {"rounds": "many"},
    {"cell": {"downlink": {"mode": "multicast"}}},
    {"training": {"learning_rate": -1}},
    {"algorithms": []},
    {"execution": "fast"},
    {"eval_batch_size": "big"},
    {"eval_batch_size": 0},
])
def test_schema_rejects_a_bad_scenario(schema, bad) -> None:
    with pytest.raises(jsonschema.ValidationError):
        schema_validator(schema).validate(bad)
    with pytest.raises(ConfigError):  # and so does the validator the run uses
        validate(bad)


def test_schema_command_prints_the_schema(capsys) -> None:
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["title"] == "sfl-sim scenario" and "cell" in printed["properties"]


def test_bare_component_names_are_specs() -> None:
    cfg = validate({"cell": {"pathloss": "free_space"}, "algorithms": ["fedavg", {"name": "scala", "label": "s2"}]})
    assert isinstance(cfg, Scenario)
    assert cfg.cell.pathloss.name == "free_space" and cfg.cell.pathloss.params == {}
    assert [a.label for a in cfg.algorithms] == ["fedavg", "s2"]
    assert cfg.algorithms[1].params == {}  # the label is not a constructor parameter


def test_scenario_is_frozen() -> None:
    cfg = validate({})
    with pytest.raises(pydantic.ValidationError):
        cfg.rounds = 3  # type: ignore[misc]


@pytest.mark.slow
@pytest.mark.parametrize("execution", ["auto", "loop", "vectorised"])
def test_schema_and_validator_accept_the_execution_field_and_eval_batch_auto(schema, execution) -> None:
    scenario = {"execution": execution, "eval_batch_size": "auto"}
    schema_validator(schema).validate(scenario)
    cfg = validate(scenario)
    assert cfg.execution == execution and cfg.eval_batch_size == "auto"
    assert validate({}).execution == "auto" and validate({"eval_batch_size": 500}).eval_batch_size == 500
    assert set(schema["properties"]["execution"]["enum"]) == {"auto", "loop", "vectorised"}


def test_a_bad_execution_is_refused_in_one_line_naming_what_is_allowed() -> None:
    with pytest.raises(ConfigError) as err:
        validate({"execution": "fast"})
    message = str(err.value)
    assert message.startswith("execution: got 'fast'") and "auto, loop, vectorised" in message and "\n" not in message
