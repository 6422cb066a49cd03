"""Scenario files: typed models, defaults, validation, ``--set`` overrides and the JSON Schema.

A scenario is a YAML mapping.  :func:`load_scenario` reads it, applies command-line overrides and
validates it into a frozen :class:`Scenario` before any work starts.  One job per module:

* :mod:`~sfl_sim.config.yaml_io` — YAML loading (1.2-style floats, a repeated key refused);
* :mod:`~sfl_sim.config.fields` — field types: bounds and the allowed-values text of errors;
* :mod:`~sfl_sim.config.optimizers` — the built-in optimizers and learning-rate schedules;
* :mod:`~sfl_sim.config.training` — the ``training:`` section and per-algorithm overrides;
* :mod:`~sfl_sim.config.models` — the other sections, component specs, :class:`Scenario`, the schema;
* :mod:`~sfl_sim.config.overrides` — ``--set`` parsing and applying, dotted paths;
* :mod:`~sfl_sim.config.errors` — pydantic's errors as one line naming field, value and what is allowed;
* :mod:`~sfl_sim.config.loading` — file, overrides and validation together.

Every failure is a :class:`ConfigError` with one line, e.g. ``cell.uplink_bandwidth_hz: got -5;
allowed: a number > 0 in the range [1, 1e+12] (Hz ...)``.
"""
from sfl_sim.config.errors import format_validation_error
from sfl_sim.config.fields import Allowed
from sfl_sim.config.loading import load_scenario, load_scenario_raw, validate
from sfl_sim.config.models import AlgorithmSpec, ComponentSpec, Metrics, Scenario
from sfl_sim.config.overrides import apply_override, flatten, parse_override
from sfl_sim.config.training import LrScheduleSpec, OptimizerSpec, Training, merge_training
from sfl_sim.config.yaml_io import read_yaml_file, yaml_load
from sfl_sim.errors import ConfigError

__all__ = ["ConfigError", "Scenario", "ComponentSpec", "AlgorithmSpec", "Training", "Metrics", "OptimizerSpec",
           "LrScheduleSpec", "merge_training", "load_scenario", "load_scenario_raw", "validate", "parse_override",
           "apply_override", "yaml_load", "read_yaml_file", "format_validation_error", "flatten",
           "Allowed"]
