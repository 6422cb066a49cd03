"""Scenario files: schema, defaults, validation and ``--set`` overrides.

A scenario is a YAML mapping.  :func:`load_scenario` reads it, applies command-line overrides,
fills defaults and checks every field *before any work starts*: an unknown key, a wrong type or a
value out of range raises :class:`ConfigError` with one message naming the field (dotted path),
the value given and what is allowed.

Swappable parts (dataset, partitioner, model, algorithm, channel components) are *component
specs*: a mapping with ``name`` (a registered short name or ``package.module:Class``) and the
component's own parameters beside it.  Their parameters are checked when the component is built,
which also happens before training (see :mod:`sfl_sim.runner`); errors there are re-raised as
:class:`ConfigError` with the field path too.
"""
from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

import yaml


class ConfigError(ValueError):
    """A scenario field is unknown, of the wrong type or out of range."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e9`` and ``1.0e9`` as floats.

    PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent (``1.0e+9``); a
    scenario author writing ``20e6`` Hz would otherwise get a string.
    """


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."),
)


def yaml_load(text: str) -> Any:
    """Parse scenario YAML (safe loader, YAML 1.2-style floats)."""
    return yaml.load(text, Loader=_Loader)


@dataclass(frozen=True)
class Field:
    """One scalar scenario field.

    Parameters
    ----------
    kind : str
        ``"int"``, ``"float"``, ``"bool"``, ``"str"``, ``"str?"`` (string or null),
        ``"int?"`` (int or null), ``"component"`` (a component spec) or ``"list"``.
    default : Any
        Value used when the key is absent.
    check : callable, optional
        Predicate on the value; when it returns False the error says ``allowed``.
    allowed : str
        Human description of the allowed values.
    """

    kind: str
    default: Any
    check: Optional[Callable[[Any], bool]] = None
    allowed: str = ""


def _positive(x: float) -> bool:
    return x > 0


def _non_negative(x: float) -> bool:
    return x >= 0


def _fraction(x: float) -> bool:
    return 0 < x <= 1


def _comp(name: str, **params: Any) -> Field:
    return Field("component", {"name": name, **params})


# The schema mirrors the YAML nesting.  Every number carries its unit in its name.
SCHEMA: Dict[str, Any] = {
    "name": Field("str", "scenario"),
    "seed": Field("int", 0, _non_negative, "an integer >= 0"),
    "rounds": Field("int", 40, _positive, "an integer >= 1"),
    "eval_every_rounds": Field("int", 1, _positive, "an integer >= 1"),
    "eval_samples": Field("int?", None, lambda x: x is None or x > 0, "null (whole test set) or an integer >= 1"),
    "eval_batch_size": Field("int", 1000, _positive, "an integer >= 1"),
    "target_accuracies": Field("list", [0.5, 0.6, 0.7, 0.8], None, "a list of fractions in (0, 1]"),
    "device": Field("str", "auto", lambda x: x in ("auto", "cpu", "cuda"), "one of auto, cpu, cuda"),
    "output_dir": Field("str", "runs/scenario"),
    "algorithms": Field("list", [{"name": "scala"}], None, "a non-empty list of component specs"),
    "training": {
        "batch_size": Field("int", 320, _positive, "an integer >= 1 (B, the server-side minibatch)"),
        "local_iterations": Field("int", 5, _positive, "an integer >= 1 (T)"),
        "learning_rate": Field("float", 0.01, _positive, "a number > 0"),
        "torch_threads": Field("int?", None, lambda x: x is None or x > 0, "null or an integer >= 1"),
    },
    "data": {
        "dataset": _comp("fashion_mnist"),
        "partition": _comp("quantity", alpha=2),
    },
    "model": {
        "name": Field("str", "alexnet"),
        "split_point": Field("str", "S2"),
        "params": Field("dict", {}),
    },
    "clients": {
        "count": Field("int", 100, _positive, "an integer >= 1"),
        "participation": Field("float", 0.1, _fraction, "a fraction in (0, 1]"),
        "selection": Field("component?", None),
        "compute_flops_per_s_min": Field("float", 1.0e9, _positive, "a number > 0"),
        "compute_flops_per_s_max": Field("float", 1.0e10, _positive, "a number > 0"),
    },
    "stragglers": {
        "policy": Field("str", "wait_all", lambda x: x in ("wait_all", "deadline", "over_selection"),
                        "one of wait_all, deadline, over_selection"),
        "deadline_s": Field("float?", None, lambda x: x is None or x > 0, "null or a number > 0"),
        "over_selection_fraction": Field("float", 0.25, _positive, "a number > 0"),
    },
    "server": {
        "compute_flops_per_s": Field("float", 1.0e12, _positive, "a number > 0"),
    },
    "cell": {
        "placement": _comp("uniform_disc", radius_m=500.0, min_distance_m=10.0),
        "pathloss": _comp("tr36814_macro"),
        "shadowing": _comp("none"),
        "rate": _comp("shannon"),
        "allocation": _comp("equal"),
        "fading": _comp("none"),
        "coherence": Field("str", "per_round", lambda x: x in ("per_round", "per_iteration", "per_transmission"),
                           "one of per_round, per_iteration, per_transmission"),
        "mobility": _comp("static"),
        "outage": {
            "min_rate_bps": Field("float", 0.0, _non_negative, "a number >= 0 (0 and no min_snr_db: no outage)"),
            "min_snr_db": Field("float?", None, lambda x: x is None or math.isfinite(x), "null or a finite number"),
            "max_attempts": Field("int", 1, _positive, "an integer >= 1 (attempts in all, 1 = no retransmission)"),
            "on_outage": Field("str", "retransmit", lambda x: x in ("retransmit", "drop"), "one of retransmit, drop"),
        },
        "client_tx_power_w": Field("float", 0.2, _positive, "a number > 0"),
        "uplink_bandwidth_hz": Field("float", 20.0e6, _positive, "a number > 0"),
        "noise_psd_dbm_per_hz": Field("float", -174.0, math.isfinite, "a finite number"),
        "downlink": {
            "mode": Field("str", "ideal", lambda x: x in ("ideal", "broadcast"), "one of ideal, broadcast"),
            "server_tx_power_w": Field("float", 10.0, _positive, "a number > 0"),
            "bandwidth_hz": Field("float", 20.0e6, _positive, "a number > 0"),
        },
    },
}


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "int?":
        return value is None or _type_ok("int", value)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "float?":
        return value is None or _type_ok("float", value)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "str?":
        return value is None or isinstance(value, str)
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    if kind == "component":
        return isinstance(value, (dict, str))
    if kind == "component?":
        return value is None or isinstance(value, (dict, str))
    raise AssertionError(kind)


_TYPE_WORDS = {
    "int": "an integer", "int?": "an integer or null", "float": "a number", "float?": "a number or null", "bool": "true or false",
    "str": "a string", "str?": "a string or null", "list": "a list", "dict": "a mapping",
    "component": "a mapping with 'name' (or a bare name)",
    "component?": "null or a mapping with 'name' (or a bare name)",
}


def _validate(schema: Mapping[str, Any], given: Any, path: str) -> Dict[str, Any]:
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ConfigError(f"{path or 'scenario'}: expected a mapping, got {given!r}")
    unknown = sorted(set(given) - set(schema))
    if unknown:
        key = unknown[0]
        where = f"{path}.{key}" if path else key
        raise ConfigError(
            f"{where}: unknown key (value {given[key]!r}); allowed keys here: {', '.join(sorted(schema))}"
        )
    out: Dict[str, Any] = {}
    for key, spec in schema.items():
        where = f"{path}.{key}" if path else key
        if isinstance(spec, dict):
            out[key] = _validate(spec, given.get(key), where)
            continue
        value = given.get(key, copy.deepcopy(spec.default))
        if not _type_ok(spec.kind, value):
            raise ConfigError(f"{where}: got {value!r}; allowed: {_TYPE_WORDS[spec.kind]}")
        if spec.kind == "float" or (spec.kind == "float?" and value is not None):
            value = float(value)
            if not math.isfinite(value):
                raise ConfigError(f"{where}: got {value!r}; allowed: a finite number")
        if spec.kind == "component" or (spec.kind == "component?" and value is not None):
            value = normalize_component(value, where)
        if spec.check is not None and not spec.check(value):
            raise ConfigError(f"{where}: got {value!r}; allowed: {spec.allowed}")
        out[key] = value
    return out


def normalize_component(value: Any, where: str) -> Dict[str, Any]:
    """Turn a bare name or a mapping into ``{"name": str, **params}``.

    Raises
    ------
    ConfigError
        If there is no string ``name``.
    """
    if isinstance(value, str):
        return {"name": value}
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        raise ConfigError(f"{where}: got {value!r}; allowed: a mapping with a string 'name' and parameters")
    return dict(value)


def _check_cross_fields(cfg: Dict[str, Any]) -> None:
    clients = cfg["clients"]
    if clients["compute_flops_per_s_max"] < clients["compute_flops_per_s_min"]:
        raise ConfigError(
            f"clients.compute_flops_per_s_max: got {clients['compute_flops_per_s_max']!r}; allowed: a number "
            f">= clients.compute_flops_per_s_min ({clients['compute_flops_per_s_min']!r})"
        )
    stragglers = cfg["stragglers"]
    if stragglers["policy"] == "deadline" and stragglers["deadline_s"] is None:
        raise ConfigError("stragglers.deadline_s: got None; allowed: a number > 0 (simulated seconds per local "
                          "iteration) when stragglers.policy is deadline")
    for i, target in enumerate(cfg["target_accuracies"]):
        if not isinstance(target, (int, float)) or isinstance(target, bool) or not 0 < target <= 1:
            raise ConfigError(f"target_accuracies[{i}]: got {target!r}; allowed: a fraction in (0, 1]")
    if not cfg["algorithms"]:
        raise ConfigError("algorithms: got []; allowed: a non-empty list of component specs")
    cfg["algorithms"] = [normalize_component(a, f"algorithms[{i}]") for i, a in enumerate(cfg["algorithms"])]
    labels = [algorithm_label(a) for a in cfg["algorithms"]]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"algorithms: labels {labels!r} repeat; allowed: distinct labels (set 'label' to tell runs apart)")


def algorithm_label(spec: Mapping[str, Any]) -> str:
    """The run-directory name of an algorithm spec: its ``label`` or its ``name``."""
    label = spec.get("label", spec["name"])
    return str(label).replace(":", "_").replace("/", "_")


def validate(raw: Mapping[str, Any]) -> Dict[str, Any]:
    """Fill defaults and check a raw scenario mapping; returns a new, complete mapping.

    Raises
    ------
    ConfigError
        On the first unknown key, wrong type or out-of-range value.
    """
    cfg = _validate(SCHEMA, copy.deepcopy(dict(raw)), "")
    _check_cross_fields(cfg)
    return cfg


def parse_override(text: str) -> tuple[List[str], Any]:
    """Parse ``a.b.c=VALUE`` (VALUE in YAML syntax) into (path, value).

    Raises
    ------
    ConfigError
        If there is no ``=`` or the key is empty.
    """
    key, sep, value_text = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r}: expected FIELD=VALUE, e.g. clients.participation=0.2")
    try:
        value = yaml_load(value_text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {text!r}: value is not valid YAML ({exc})") from exc
    return key.strip().split("."), value


def apply_override(raw: Dict[str, Any], path: List[str], value: Any) -> None:
    """Set ``raw[path[0]][path[1]]... = value``, creating intermediate mappings."""
    node = raw
    for i, part in enumerate(path[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"--set {'.'.join(path)}: {'.'.join(path[: i + 1])} is {child!r}, not a mapping")
        node = child
    node[path[-1]] = value


def load_scenario(path: str | Path, overrides: Optional[List[str]] = None,
                  extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Read, override and validate a scenario file.

    Parameters
    ----------
    path : str or Path
        YAML scenario file.
    overrides : list of str, optional
        ``FIELD=VALUE`` strings from ``--set`` (applied after the file).
    extra : dict, optional
        Top-level values from dedicated CLI flags (``seed``, ``rounds``...), applied last.

    Raises
    ------
    ConfigError
        If the file is missing or not YAML, or any field is invalid.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"scenario file {str(path)!r} does not exist")
    try:
        raw = yaml_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"scenario file {str(path)!r} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"scenario file {str(path)!r}: expected a mapping at the top level")
    for text in overrides or []:
        keys, value = parse_override(text)
        apply_override(raw, keys, value)
    for key, value in (extra or {}).items():
        if value is not None:
            raw[key] = value
    return validate(raw)
