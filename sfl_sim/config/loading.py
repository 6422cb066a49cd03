"""Reading a scenario: the file, then ``--set`` overrides and CLI values, then validation.

Every failure is a :class:`~sfl_sim.errors.ConfigError` with one line naming the field (dotted
path), the value given and what is allowed, e.g. ``cell.uplink_bandwidth_hz: got -5; allowed: a
number > 0 in the range [1, 1e+12] (Hz ...)``.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sfl_sim.config.errors import format_validation_error
from sfl_sim.config.models import Scenario
from sfl_sim.config.overrides import apply_override, parse_override
from sfl_sim.config.yaml_io import read_yaml_file
from sfl_sim.errors import ConfigError

__all__ = ["validate", "load_scenario_raw", "load_scenario"]


def validate(raw: Mapping[str, Any]) -> Scenario:
    """Fill defaults and check a raw scenario mapping.

    Raises
    ------
    ConfigError
        On the first unknown key, wrong type or out-of-range value (one line).
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"scenario: expected a mapping, got {raw!r}")
    try:
        return Scenario.model_validate(dict(raw))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, Scenario)) from None


def load_scenario_raw(path: str | Path, overrides: list[str] | None = None,
                      extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Read a scenario file and apply ``--set`` overrides and CLI values, without validating."""
    raw = read_yaml_file(Path(path))
    for text in overrides or []:
        keys, value = parse_override(text)
        apply_override(raw, keys, value)
    for key, value in (extra or {}).items():
        if value is not None:
            raw[key] = value
    return raw


def load_scenario(path: str | Path, overrides: list[str] | None = None,
                  extra: dict[str, Any] | None = None) -> Scenario:
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
        If the file is missing, empty, not text or not YAML, or any field is invalid.
    """
    return validate(load_scenario_raw(path, overrides, extra))
