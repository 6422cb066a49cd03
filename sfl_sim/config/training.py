"""The ``training:`` section: optimizer, learning-rate schedule, local work, and per-algorithm overrides.

``training.optimizer`` and ``training.lr_schedule`` are a ``name`` plus parameters; the names,
parameter models and defaults come from :mod:`sfl_sim.config.optimizers`, and so does their JSON
Schema.  An algorithm's ``training:`` block (:data:`TrainingOverride`) replaces some shared
fields for its run; :func:`merge_training` applies it.
"""
from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, create_model, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from sfl_sim.config.choices import ClientOptimizerState
from sfl_sim.config.errors import CrossFieldError, validate_nested
from sfl_sim.config.fields import (
    MAX_TORCH_THREADS,
    Allowed,
    Integer,
    Number,
    OneOf,
    PositiveFloat,
    PositiveInt,
    Section,
)
from sfl_sim.config.optimizers import BUILTIN_OPTIMIZERS, BUILTIN_SCHEDULES

__all__ = ["OptimizerSpec", "LrScheduleSpec", "Training", "TrainingOverride", "LOCAL_WORK_FIELDS",
           "DEFAULT_LOCAL_ITERATIONS", "OVERRIDABLE_TRAINING_FIELDS", "override_dict", "merge_training"]


def _first_line(doc: str | None) -> str:
    return (doc or "").split("\n")[0]


def _unknown_name(name: str, known: tuple[str, ...], allowed_text: str) -> PydanticCustomError:
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return PydanticCustomError("nested", "{message}", {"message": f"name: got {name!r}{hint}; allowed: {allowed_text}"})


class _NamedSpec(BaseModel):
    """A ``name`` plus hyper-parameters beside it; a bare string is the name alone."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str

    @property
    def params(self) -> dict[str, Any]:
        """Everything beside ``name``."""
        return dict(self.model_extra or {})

    def as_dict(self) -> dict[str, Any]:
        """``{"name": ..., **params}`` as written to ``scenario.yaml``."""
        return {"name": self.name, **self.params}


_OPTIMIZER_NAMES = tuple(BUILTIN_OPTIMIZERS)
_OPTIMIZER_RULE = (f"one of {', '.join(_OPTIMIZER_NAMES)} or package.module:Class (a torch.optim.Optimizer "
                   f"subclass), as a name or a mapping with 'name' and its hyper-parameters")


class OptimizerSpec(_NamedSpec):
    """``training.optimizer``: ``sgd`` (default), ``adam``, ``adamw`` or ``package.module:Class``.

    Built-ins (:data:`~sfl_sim.config.optimizers.BUILTIN_OPTIMIZERS`) take torch's
    hyper-parameters beside ``name``, checked here and filled with torch's defaults, so
    ``scenario.yaml`` records every value the run used.  A ``module:Class`` must name a
    ``torch.optim.Optimizer`` subclass; its parameters are checked when the run is built.  The
    learning rate is ``training.learning_rate`` (and its schedule), never a parameter.
    """

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = {"name": value}
        if not isinstance(value, dict):
            raise PydanticCustomError("component", "{allowed}", {"allowed": _OPTIMIZER_RULE})
        value = dict(value)
        name = value.pop("name", _OPTIMIZER_NAMES[0])  # {momentum: 0.9} alone means SGD (what --set builds)
        if not isinstance(name, str) or not name:
            raise PydanticCustomError("component", "{allowed}", {"allowed": _OPTIMIZER_RULE, "label": name})
        for key in ("lr", "learning_rate", "params"):
            if key in value:
                raise PydanticCustomError("nested", "{message}", {"message": (
                    f"{key}: got {value[key]!r}; allowed: no {key!r} here (the learning rate is "
                    f"training.learning_rate, stepped by training.lr_schedule)")})
        if name in BUILTIN_OPTIMIZERS:
            return {"name": name, **validate_nested(BUILTIN_OPTIMIZERS[name].params, value)}
        if ":" not in name:
            raise _unknown_name(name, _OPTIMIZER_NAMES, _OPTIMIZER_RULE)
        return {"name": name, **value}

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        shapes = [{"type": "object",
                   "properties": {"name": {"const": name}, **entry.params.model_json_schema()["properties"]},
                   "additionalProperties": False} for name, entry in BUILTIN_OPTIMIZERS.items()]
        custom = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[^:]+:[^:]+$"}},
                  "required": ["name"], "description": "a torch.optim.Optimizer subclass and its parameters"}
        return {"anyOf": [{"enum": list(_OPTIMIZER_NAMES)}, {"type": "string", "pattern": "^[^:]+:[^:]+$"},
                          *shapes, custom], "description": _first_line(cls.__doc__)}


_SCHEDULE_NAMES = tuple(BUILTIN_SCHEDULES)
_SCHEDULE_RULE = f"one of {', '.join(_SCHEDULE_NAMES)}, as a name or a mapping with 'name' and its parameters"


class LrScheduleSpec(_NamedSpec):
    """``training.lr_schedule``: the learning rate of each round (``constant`` by default).

    ``step`` (``step_size_rounds``, ``gamma``), ``exponential`` (``gamma``) and ``cosine``
    (``rounds``, ``eta_min``) are torch's StepLR, ExponentialLR and CosineAnnealingLR stepped once
    per round (:data:`~sfl_sim.config.optimizers.BUILTIN_SCHEDULES`); round 1 trains with
    ``training.learning_rate``.
    """

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = {"name": value}
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            raise PydanticCustomError("component", "{allowed}", {"allowed": _SCHEDULE_RULE})
        value = dict(value)
        name = value.pop("name")
        if name not in BUILTIN_SCHEDULES:
            raise _unknown_name(name, _SCHEDULE_NAMES, ", ".join(_SCHEDULE_NAMES))
        return {"name": name, **validate_nested(BUILTIN_SCHEDULES[name].params, value)}

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        shapes = []
        for name, entry in BUILTIN_SCHEDULES.items():
            sub = entry.params.model_json_schema()
            shapes.append({"type": "object", "properties": {"name": {"const": name}, **sub.get("properties", {})},
                           "required": ["name", *sub.get("required", [])], "additionalProperties": False})
        return {"anyOf": [{"enum": list(_SCHEDULE_NAMES)}, *shapes], "description": _first_line(cls.__doc__)}


#: The local-work fields: a run sets one of them (``local_iterations`` is the default).
LOCAL_WORK_FIELDS = ("local_iterations", "local_epochs")
DEFAULT_LOCAL_ITERATIONS = 5


class Training(Section):
    """``training:``: how each client and the server learn.

    Local work is either ``local_iterations`` (T iterations of eq. 3 minibatches, the default) or
    ``local_epochs`` (E passes over the client's data in batches of ``batch_size``); setting both
    is an error, setting neither means ``local_iterations: 5``.
    """

    batch_size: Annotated[PositiveInt, Allowed("an integer >= 1 (with local_iterations: B, the server-side "
                                               "minibatch split over the cohort by eq. 3; with local_epochs: "
                                               "every client's batch b)")] = 320
    local_iterations: Annotated[PositiveInt, Allowed("an integer >= 1 (T)")] | None = DEFAULT_LOCAL_ITERATIONS
    local_epochs: Annotated[PositiveInt, Allowed("an integer >= 1 (E)")] | None = None
    learning_rate: PositiveFloat = 0.01
    optimizer: OptimizerSpec = Field(default_factory=lambda: OptimizerSpec.model_validate(_OPTIMIZER_NAMES[0]))
    lr_schedule: LrScheduleSpec = Field(default_factory=lambda: LrScheduleSpec.model_validate(_SCHEDULE_NAMES[0]))
    max_grad_norm: Annotated[float, Number(0, low_open=True, why="largest gradient 2-norm of one step")] | None \
        = None
    client_optimizer_state: Annotated[ClientOptimizerState, OneOf(ClientOptimizerState)] = "fresh"
    torch_threads: Annotated[int, Integer(1, MAX_TORCH_THREADS, why="host threads")] | None = None

    @model_validator(mode="before")
    @classmethod
    def _local_work(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        iterations, epochs = value.get("local_iterations"), value.get("local_epochs")
        if iterations is not None and epochs is not None:
            raise CrossFieldError("local_epochs", epochs, f"null when local_iterations is set (got {iterations!r}); "
                                  f"a run does T local iterations or E local epochs, not both", relative=True)
        if epochs is None:  # neither given (or T alone): T, 5 by default
            return {**value, "local_iterations": DEFAULT_LOCAL_ITERATIONS if iterations is None else iterations,
                    "local_epochs": None}
        return {**value, "local_iterations": None}  # E alone: no T

    @model_validator(mode="after")
    def _schedule_floor(self) -> Training:
        eta_min = self.lr_schedule.params.get("eta_min", 0.0)
        if eta_min > self.learning_rate:
            raise CrossFieldError("lr_schedule.eta_min", eta_min, f"at most training.learning_rate "
                                  f"({self.learning_rate!r})", relative=True)
        return self


#: Training fields an algorithm's ``training:`` block may override (threads are a host setting).
OVERRIDABLE_TRAINING_FIELDS = tuple(f for f in Training.model_fields if f != "torch_threads")

if TYPE_CHECKING:
    TrainingOverride = Section  # built below from Training's fields, which a type checker cannot follow
else:
    TrainingOverride = create_model(
        "TrainingOverride", __base__=Section, __doc__=(
            "An algorithm's ``training:`` block: the shared ``training:`` fields it replaces for that run."),
        **{name: (Training.model_fields[name].annotation | None, Field(None, json_schema_extra=None))
           for name in OVERRIDABLE_TRAINING_FIELDS})


def override_dict(override: BaseModel) -> dict[str, Any]:
    """The fields an override block sets, as YAML-able data (in field order)."""
    dumped = override.model_dump(mode="json")
    return {k: dumped[k] for k in OVERRIDABLE_TRAINING_FIELDS if k in override.model_fields_set}


def merge_training(shared: Training, override: BaseModel | None) -> Training:
    """The training settings of one run: ``shared`` with the fields ``override`` sets replaced.

    A given ``local_iterations`` or ``local_epochs`` replaces the pair (setting one clears the
    other); ``optimizer`` and ``lr_schedule`` are replaced whole.

    Raises
    ------
    ValidationError
        If the merged settings are not valid (e.g. ``eta_min`` above the overriding rate).
    """
    if override is None:
        return shared
    given = override_dict(override)
    merged = shared.model_dump(mode="json")
    if any(f in given for f in LOCAL_WORK_FIELDS):
        for f in LOCAL_WORK_FIELDS:
            merged[f] = given.get(f)
    merged.update(given)
    return Training.model_validate(merged)
