"""Typed component parameters: every built-in component has a parameter model, ``sfl-sim schema``
shows it, and a wrong parameter is refused by the schema and by the run's one-line error."""
from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Annotated, Any

import jsonschema
import numpy as np
import pytest
import yaml

from sfl_sim.catalog import parameters, registries
from sfl_sim.catalog.component_schema import json_schema
from sfl_sim.channel import CELL_KINDS, CHANNEL_KINDS
from sfl_sim.cli import main
from sfl_sim.config import Scenario, yaml_load
from sfl_sim.kit.params import (
    ParamsModel,
    declares_model,
    field_doc,
    parameter_values,
    params_model,
    params_schema,
    validate_params,
)
from sfl_sim.kit.ranges import Range
from sfl_sim.kit.registry import ComponentParameterError, ComponentValueError, Registry
from sfl_sim.runs.resolved import COMPONENT_FIELDS
from sfl_sim.study.plan import expand, load_study
from tests.helpers import schema_validator

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "sfl_sim" / "scenarios").rglob("*.yaml"))
STUDIES = sorted((ROOT / "studies").glob("*.yaml"))
BASE = ROOT / "sfl_sim" / "scenarios" / "cellular_100clients.yaml"
BUILT_IN = [(kind, name) for kind, registry in registries().items() for name in registry.names()]


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json_schema()


@pytest.mark.slow
def test_the_schema_is_a_valid_json_schema(schema) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.slow
@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_scenario_validates(schema, path) -> None:
    schema_validator(schema).validate(yaml_load(path.read_text()))


@pytest.mark.slow
@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.name)
def test_every_study_base_and_run_validates(schema, path) -> None:
    spec, base = load_study(path)
    schema_validator(schema).validate(yaml_load(base.read_text()))
    for run in expand(spec, base):  # every grid point the study runs
        schema_validator(schema).validate(run.scenario)


#: (--set override, words the one-line error must hold): a wrong type, a bound, a choice, an
#: unknown name, for each family of components.
WRONG = [
    ("algorithms=[{name: fedprox, mu: -1}]", ["algorithms[0].mu", "-1", ">= 0"]),
    ("algorithms=[{name: fedprox, mu: lots}]", ["algorithms[0].mu", "lots", "number"]),
    ("algorithms=[{name: fedprox, mux: 0.1}]", ["algorithms", "mux", "did you mean 'mu'"]),
    ("algorithms=[{name: scala, label_prior: global}]", ["label_prior", "global", "batch, local_data"]),
    ("algorithms=[{name: besplit_g, ema_beta: 1.5}]", ["ema_beta", "1.5", "< 1"]),
    ("algorithms=[{name: scala_pe, inverter_channels: 0}]", ["inverter_channels", "0", ">= 1"]),
    ("model.params={conv_channels: [64, 192]}", ["model.params.conv_channels", "5 integers"]),
    ("model.params={dropout: 1.5}", ["model.params.dropout", "1.5", "< 1"]),
    ("data.dataset.max_train_samples=0", ["data.dataset.max_train_samples", "0", ">= 1"]),
    ("data.partition={name: dirichlet, beta: 0}", ["data.partition.beta", "0", "> 0"]),
    ("data.partition={name: quantity, alpha: 2.5}", ["data.partition.alpha", "2.5", "integer"]),
    ("clients.selection={name: class_balanced, exploration: -1}", ["clients.selection.exploration", "-1"]),
    ("cell.pathloss={name: tr38901_uma, carrier_frequency_hz: 1.0e+3}", ["cell.pathloss.carrier_frequency_hz",
                                                                        "1000", "TR 38.901"]),
    ("cell.pathloss={name: tr38901_uma, los: sometimes}", ["cell.pathloss.los", "sometimes", "stochastic"]),
    ("cell.pathloss={name: log_distance, exponnt: 3}", ["cell.pathloss", "exponnt", "did you mean 'exponent'"]),
    ("cell.shadowing={name: lognormal, sigma_db: 80}", ["cell.shadowing.sigma_db", "80"]),
    ("cell.fading={name: nakagami, m: 0.1}", ["cell.fading.m", "0.1", ">= 0.5"]),
    ("cell.fading={name: jakes, speed_m_per_s: -3}", ["cell.fading.speed_m_per_s", "-3", "null or",
                                                      ">= 0 and <= 1000"]),
    ("cell.rate={name: shannon, noise_figure_db: true}", ["cell.rate.noise_figure_db", "True"]),
    ("cell.allocation={name: equal_finish_time, rtol: 0}", ["cell.allocation.rtol", "0", "> 0"]),
    ("cell.mobility={name: random_waypoint, pause_s: -1}", ["cell.mobility.pause_s", "-1"]),
    ("cell.power_control={name: open_loop, alpha: 0.3}", ["cell.power_control.alpha", "0.3", "0.4"]),
    ("cell.power_control={name: open_loop, p_max_dbm: 60}", ["cell.power_control.p_max_dbm", "60"]),
    ("cell.interference={name: first_tier, activity: 1.5}", ["cell.interference.activity", "1.5", "<= 1"]),
    ("cell.interference={name: noise_rise, noise_rise_db: -3}", ["cell.interference.noise_rise_db", "-3"]),
    ("cell.placement={name: uniform_disc, radius_m: 1.0e+6}", ["cell.placement.radius_m", "1000000.0", "uniform_disc"]),
]


def _raw_with(override: str) -> dict[str, Any]:
    from sfl_sim.config import apply_override, parse_override

    raw = yaml_load(BASE.read_text())
    keys, value = parse_override(override)
    apply_override(raw, keys, value)
    return raw


@pytest.mark.slow
@pytest.mark.parametrize("override, words", WRONG, ids=[w[0] for w in WRONG])
def test_a_wrong_component_parameter_is_refused_by_schema_and_run(tmp_path, capsys, schema, override,
                                                                  words) -> None:
    with pytest.raises(jsonschema.ValidationError):
        schema_validator(schema).validate(_raw_with(override))
    out = tmp_path / "out"
    code = main(["scenario", str(BASE), "--check", "--no-progress", "-o", str(out), "--set", override])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in err, (w, err)
    assert not out.exists()


@pytest.mark.slow
def test_a_right_component_parameter_passes_schema(schema) -> None:
    for override in ("algorithms=[{name: fedprox, mu: 0.5}]", "cell.pathloss={name: tr38901_uma, "
                     "carrier_frequency_hz: 2.8e10, los: nlos}", "model.params={dropout: 0.2}",
                     "cell.shadowing={name: correlated, sigma_db: model, decorrelation_m: 30}",
                     "algorithms=[{name: my_pkg.algo:Mine, anything: 1, label: mine}]"):
        schema_validator(schema).validate(_raw_with(override))


@pytest.mark.parametrize("kind, name", BUILT_IN, ids=[f"{k}:{n}" for k, n in BUILT_IN])
def test_every_built_in_component_declares_its_parameters_once(kind, name) -> None:
    """A built-in's ``Params`` model is the one statement of its parameters: its constructor's
    signature, the class docstring, ``sfl-sim list``, the JSON Schema and the resolved record all
    derive from it, and every parameter has a description."""
    registry = registries()[kind]
    cls = registry.get(name)
    assert declares_model(cls), f"{cls.__qualname__} states its parameters outside a Params model"
    model = params_model(cls, registry.supplied)
    assert model is not None and model.model_config.get("extra") == "forbid"
    fields = model.model_fields
    signature = inspect.signature(cls)
    shown = {n: p for n, p in signature.parameters.items() if n not in registry.supplied}
    assert list(shown) == list(fields)
    for field, info in fields.items():
        assert field_doc(info), f"{name}.{field} has no description (Doc)"
        if info.is_required():
            assert shown[field].default is inspect.Parameter.empty
        else:
            assert shown[field].default == info.get_default(call_default_factory=True)
            assert parameter_values(cls, {}, registry.supplied)[field] == shown[field].default
        assert f"{field} : " in (cls.__doc__ or ""), f"{name}.{field} is missing from the docstring"
    listed = [p.split("=")[0] for p in parameters(cls, registry.supplied)]
    assert listed == list(fields)
    assert set(params_schema(cls, registry.supplied)["properties"]) == set(fields)


def test_schema_entries_are_told_apart_by_name(schema) -> None:
    pathloss = schema["$defs"]["PathlossSpec"]["oneOf"]
    shapes = {s["title"]: s for s in pathloss if s.get("type") == "object" and "title" in s}
    uma = shapes["tr38901_uma"]["properties"]
    assert uma["name"] == {"const": "tr38901_uma"}
    assert uma["carrier_frequency_hz"]["minimum"] == 0.5e9 and uma["carrier_frequency_hz"]["default"] == 3.5e9
    assert uma["los"]["enum"] == ["stochastic", "los", "nlos"]
    algorithms = {s["title"]: s for s in schema["$defs"]["AlgorithmSpec"]["oneOf"] if "title" in s}
    mu = algorithms["fedprox"]["properties"]["mu"]
    assert (mu["type"], mu["default"], mu["minimum"]) == ("number", 0.01, 0)
    assert mu["description"].startswith("Proximal coefficient")  # from the parameter's Doc
    assert {"label", "training"} <= set(algorithms["fedprox"]["properties"])


def test_channel_kinds_table_is_the_one_list() -> None:
    names = [k.name for k in CHANNEL_KINDS]
    assert names == ["placement", "pathloss", "shadowing", "fading", "rate", "allocation", "mobility", "power_control",
                     "interference", "harq", "scheduler", "network", "handover"]
    # harq and the scheduler go to the engine; network and handover are passed to the cell by name
    assert [k.name for k in CELL_KINDS] == names[:-4]
    for kind in CHANNEL_KINDS:
        section, field = kind.field.split(".")
        assert field in Scenario.model_fields[section].annotation.model_fields  # type: ignore[union-attr]
        # resolved.yaml records cell.harq and cell.scheduler only when named (older records compare equal)
        assert COMPONENT_FIELDS.get(kind.field) == (kind.name if kind in CELL_KINDS else None)
        assert registries()[kind.name] is kind.registry
        assert kind.registry.protocol is kind.protocol


# -- plug-ins ------------------------------------------------------------------------------------
class _Typed:
    def __init__(self, gain: float = 1.0, mode: str = "a") -> None:
        self.gain, self.mode = gain, mode


class _Open:
    def __init__(self, gain: float = 1.0, **extra: Any) -> None:
        self.gain, self.extra = gain, extra


class _Array:
    def __init__(self, weights: np.ndarray, scale: int = 1) -> None:
        self.weights, self.scale = np.asarray(weights), scale


class _Declared:
    class Params(ParamsModel):
        gain: float = 1.0

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = _Declared.Params.parse({"gain": gain}).gain


def test_a_plug_in_without_a_model_gets_one_from_its_signature() -> None:
    assert validate_params(_Typed, {"gain": 2}) is None
    assert validate_params(_Typed, {"gain": "2"}) == "gain: got '2'; allowed: a number"
    assert validate_params(_Open, {"gain": 2.0, "anything": [1]}) is None  # **kwargs: open
    assert validate_params(_Declared, {"gain": True}) == "gain: got True; allowed: a number"
    # A type pydantic could only check by isinstance takes anything (the constructor converts it).
    assert validate_params(_Array, {"weights": [1, 2]}) is None
    assert validate_params(_Array, {"weights": [1], "scale": 1.5}) == "scale: got 1.5; allowed: an integer"
    reg = Registry("plugin_test")
    reg.register("typed")(_Typed)
    with pytest.raises(ComponentValueError, match="plugin_test 'typed': mode: got 3; allowed: a string"):
        reg.build("typed", mode=3)
    with pytest.raises(ComponentParameterError, match="did you mean 'gain'"):
        reg.build("typed", gian=3)
    assert reg.build("typed", gain=3).gain == 3  # the value given, not a converted one


class _Optional:
    """A component whose optional and union parameters carry a :class:`Range`."""

    class Params(ParamsModel):
        speed_m_per_s: Annotated[float | None, Range(0.0, 10.0, ">= 0; our test's bound", "m/s")] = None
        count: Annotated[int | None, Range(1.0, 5.0, "a test count")] = None
        level: Annotated[float | str, Range(0.0, 1.0, "a test level", low_open=True)] = "auto"

    def __init__(self, speed_m_per_s: float | None = None, count: int | None = None,
                 level: float | str = "auto") -> None:
        self.params = _Optional.Params.parse({"speed_m_per_s": speed_m_per_s, "count": count, "level": level})


def test_a_range_on_an_optional_or_union_parameter_is_applied() -> None:
    """``Annotated[float | None, RANGE]`` (and a number-or-keyword union) bounds the number, as
    ``Annotated[float, RANGE]`` does: the one-line error names the field, the value and the range."""
    assert validate_params(_Optional, {"speed_m_per_s": None, "count": 3, "level": "auto"}) is None
    assert validate_params(_Optional, {"speed_m_per_s": 10.0, "level": 1.0}) is None
    assert validate_params(_Optional, {"speed_m_per_s": -3}) == (
        "speed_m_per_s: got -3; allowed: null or a finite number >= 0 and <= 10 (m/s: >= 0; our test's bound)")
    assert validate_params(_Optional, {"speed_m_per_s": float("inf")}).startswith("speed_m_per_s: got inf; ")
    assert validate_params(_Optional, {"count": 0}).startswith("count: got 0; allowed: null or an integer >= 1")
    assert validate_params(_Optional, {"level": 0.0}).startswith("level: got 0.0; allowed: ")


def test_a_declared_model_checks_a_direct_call_too() -> None:
    from sfl_sim.algorithms.fl.fedprox import FedProx
    from tests.helpers import tiny_setup

    with pytest.raises(ValueError, match=r"^mu: got -1; allowed: a finite number >= 0$"):
        FedProx(tiny_setup(), mu=-1)


def test_schema_command_prints_component_parameters(capsys) -> None:
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    text = json.dumps(printed)
    for word in ("fedprox", "tr38901_uma", "carrier_frequency_hz", "conv_channels", "min_samples_per_client",
                 "qcid_floor", "max_train_samples", "k_factor_db", "rtol", "pause_s"):
        assert word in text, word


@pytest.mark.slow
def test_yaml_default_scenario_still_checks(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(yaml_load(BASE.read_text())))
    assert main(["scenario", str(path), "--check", "-o", str(tmp_path / "o")]) == 0
