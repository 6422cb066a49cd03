"""The component entries of the scenario JSON Schema: one shape per registered component.

:func:`json_schema` gives every component field (``cell.pathloss``,
``algorithms[]``, ``model``...) a schema told apart by ``name``: a bare registered name, a
``package.module:Class`` (its parameters unchecked by the schema: the run checks them when it
builds the class), or a mapping whose ``name`` is one registered name and whose other keys are
that component's parameters (:mod:`sfl_sim.kit.params`: types, defaults, bounds, choices).  An editor
using the schema completes ``fedprox: {mu: ..}`` and flags ``mu: -1``.
"""
from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Any

from sfl_sim.channel.kinds import CHANNEL_KINDS
from sfl_sim.kit.params import params_schema
from sfl_sim.kit.registry import Registry

__all__ = ["COMPONENT_FIELDS", "add_components", "component_shapes", "json_schema"]

#: Scenario component fields (section, field) -> the registry kind that names them; the model
#: (``model.name`` with ``model.params``) and the algorithms (a list) are placed by
#: :func:`add_components` itself.
COMPONENT_FIELDS: dict[tuple[str, str], str] = {
    ("data", "dataset"): "dataset",
    ("data", "partition"): "partitioner",
    ("clients", "selection"): "selector",
    ("clients", "availability"): "availability",
    ("energy", "device"): "energy",
    **{tuple(kind.field.split(".")): kind.name for kind in CHANNEL_KINDS},  # type: ignore[misc]
}

#: The schema definitions of the scenario's component specs (a spec class with its own definition
#: in the scenario schema, ``cell.harq``'s, is one more).
SPEC_REFS = ("#/$defs/ComponentSpec", "#/$defs/HarqSpec")

#: A ``package.module:Class`` plug-in name.
PLUGIN_PATTERN = "^[^:]+:[^:]+$"


def _summary(cls: Any) -> str:
    doc = cls.__doc__ if isinstance(cls.__doc__, str) else ""
    lines = inspect.cleandoc(doc).splitlines()
    return lines[0].strip() if lines else ""


def component_shapes(registry: Registry, defs: dict[str, Any],
                     extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One object schema per registered component of ``registry``: ``name`` fixed, its parameters
    beside it (``extra``: keys every component of the kind may also have, e.g. an algorithm's
    ``label``).  Definitions the parameter schemas refer to are added to ``defs``."""
    shapes = []
    for name in registry.names():
        cls = registry.get(name)
        params = params_schema(cls, registry.supplied)
        defs.update(params.pop("$defs", {}))
        shapes.append({
            "type": "object",
            "title": name,
            "description": _summary(cls),
            "properties": {"name": {"const": name}, **(extra or {}), **params["properties"]},
            "required": ["name", *params.get("required", [])],
            "additionalProperties": params["additionalProperties"],
        })
    return shapes


def _kind_schema(kind: str, registry: Registry, defs: dict[str, Any],
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    plugin = {"type": "object", "properties": {"name": {"type": "string", "pattern": PLUGIN_PATTERN}, **(extra or {})},
              "required": ["name"], "description": f"a {kind} class of your own and its parameters"}
    return {"oneOf": [{"enum": registry.names(), "description": f"a registered {kind}"},
                      {"type": "string", "pattern": PLUGIN_PATTERN, "description": "package.module:Class"},
                      *component_shapes(registry, defs, extra), plugin],
            "description": f"a {kind}: a registered name or package.module:Class, alone or as 'name' with its "
                           f"parameters beside it"}


def _replace_component_ref(node: Any, ref: str) -> Any:
    """``node`` with the generic component spec reference(s) in it pointing at ``ref``."""
    if isinstance(node, dict):
        if node.get("$ref") in SPEC_REFS:
            return {**node, "$ref": ref}
        return {k: _replace_component_ref(v, ref) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace_component_ref(v, ref) for v in node]
    return node


def add_components(schema: dict[str, Any], section_defs: Mapping[str, str]) -> dict[str, Any]:
    """Give each component field of the scenario ``schema`` (from ``Scenario.model_json_schema()``)
    its kind's per-component shapes, in place; returns ``schema``.

    Parameters
    ----------
    schema : dict
        The scenario's JSON Schema.
    section_defs : mapping of str to str
        Scenario section (``"cell"``) -> the name of its definition in ``schema["$defs"]``.
    """
    from sfl_sim.catalog import registries

    found = registries()
    defs = schema.setdefault("$defs", {})
    new_defs: dict[str, Any] = {}

    def section_def(section: str) -> dict[str, Any]:
        return defs[section_defs[section]]

    implied = {k.name: k.implied_name for k in CHANNEL_KINDS if k.implied_name is not None}
    for (section, field), kind in COMPONENT_FIELDS.items():
        def_name = f"{kind.capitalize()}Spec"
        new_defs[def_name] = _kind_schema(kind, found[kind], new_defs)
        if kind in implied:  # a mapping without name names this one
            shape = next(s for s in new_defs[def_name]["oneOf"] if s.get("title") == implied[kind])
            shape["required"] = [r for r in shape["required"] if r != "name"]
        properties = section_def(section)["properties"]
        properties[field] = _replace_component_ref(properties[field], f"#/$defs/{def_name}")

    # Algorithms: an algorithm spec may also carry its run's 'label' and a 'training' override.
    algorithm_def = defs["AlgorithmSpec"]
    mapping = next(s for s in algorithm_def["anyOf"] if s.get("type") == "object")
    extra = {k: v for k, v in mapping["properties"].items() if k != "name"}
    extra["label"] = {"type": "string", "minLength": 1, "description": "the run directory's name (default: name)"}
    new_defs["AlgorithmSpec"] = {**_kind_schema("algorithm", found["algorithm"], new_defs, extra),
                                 "title": "AlgorithmSpec"}

    # The model: name and split point beside a 'params' mapping checked by the named model.
    model_def = section_def("model")
    models = found["model"]
    name_schema = model_def["properties"]["name"]
    model_def["properties"]["name"] = {
        **name_schema, "anyOf": [{"enum": models.names()}, {"type": "string", "pattern": PLUGIN_PATTERN}]}
    default_model = name_schema.get("default")
    rules = []
    for shape in component_shapes(models, new_defs):
        params = {k: v for k, v in shape["properties"].items() if k != "name"}
        then = {"properties": {"params": {"type": "object", "properties": params,
                                          "additionalProperties": shape["additionalProperties"]}}}
        when: dict[str, Any] = {"properties": {"name": {"const": shape["title"]}}, "required": ["name"]}
        if shape["title"] == default_model:
            when = {"anyOf": [when, {"not": {"required": ["name"]}}]}
        rules.append({"if": when, "then": then})
    model_def["allOf"] = rules

    defs.update(new_defs)
    text = json.dumps(schema)
    for ref in SPEC_REFS:
        if ref not in text:
            defs.pop(ref.rsplit("/", 1)[1], None)
    return schema


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file (for editors: completion and checking of YAML), each
    component field with its components' parameters (``sfl-sim schema`` prints it)."""
    from sfl_sim.config import Scenario

    sections = {name: f.annotation.__name__ for name, f in Scenario.model_fields.items()
                if isinstance(f.annotation, type)}
    schema = add_components(Scenario.model_json_schema(), sections)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "sfl-sim scenario"
    return schema
