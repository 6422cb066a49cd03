"""``--set FIELD=VALUE`` overrides: parsing them, applying them to a raw scenario, and dotted paths.

An override's value is YAML (``--set clients.participation=0.2``, ``--set cell.pathloss=free_space``),
applied to the raw mapping before validation, so an overridden scenario is checked like a
written one.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from sfl_sim.config.yaml_io import yaml_load
from sfl_sim.errors import ConfigError
from sfl_sim.kit.checks import one_line

__all__ = ["parse_override", "apply_override", "flatten"]


def parse_override(text: str) -> tuple[list[str], Any]:
    """Parse ``a.b.c=VALUE`` (VALUE in YAML syntax) into (path, value).

    Raises
    ------
    ConfigError
        If there is no ``=``, the key is empty or the value is not YAML.
    """
    key, sep, value_text = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r}: expected FIELD=VALUE, e.g. clients.participation=0.2")
    try:
        value = yaml_load(value_text)
    except (yaml.YAMLError, ConfigError) as exc:
        raise ConfigError(f"--set {text!r}: value is not valid YAML ({one_line(exc)})") from None
    return key.strip().split("."), value


def apply_override(raw: dict[str, Any], path: list[str], value: Any) -> None:
    """Set ``raw[path[0]][path[1]]... = value``, creating intermediate mappings.

    Raises
    ------
    ConfigError
        If a field on the way holds a value that is not a mapping.
    """
    node = raw
    for i, part in enumerate(path[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif isinstance(child, str) and i == len(path) - 2:
            child = node[part] = {"name": child}  # a bare component name gains a parameter
        if not isinstance(child, dict):
            raise ConfigError(f"--set {'.'.join(path)}: {'.'.join(path[: i + 1])} is {child!r}, not a mapping")
        node = child
    node[path[-1]] = value


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}} -> {"a.b": 1}`` (lists and component specs' parameters included)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, where))
        else:
            out[where] = value
    return out
