"""Scenario files: typed models, defaults, validation, ``--set`` overrides and the JSON Schema.

A scenario is a YAML mapping.  :func:`load_scenario` reads it, applies command-line overrides and
validates it into a frozen :class:`Scenario` (pydantic v2 models, strict types, unknown keys
forbidden) *before any work starts*.  Code reads it by attribute: ``cfg.cell.downlink.mode``.

Every failure is a :class:`ConfigError` with one line naming the field (dotted path), the value
given and what is allowed, e.g. ``cell.uplink_bandwidth_hz: got -5; allowed: a number in [1, 1e+12]
(Hz ...)``; :func:`format_validation_error` turns pydantic's errors into that line.

Swappable parts (dataset, partitioner, model, algorithm, channel components) are open
:class:`ComponentSpec` s: a ``name`` (a registered short name or ``package.module:Class``) and the
component's own parameters beside it.  Their parameters are checked when the component is built,
which also happens before training (see :mod:`sfl_sim.runner`).

``sfl-sim schema`` prints :func:`json_schema`, so editors complete and check scenario YAML.
"""
from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Annotated, Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Type, Union

import yaml
from channel import limits
from simkit.ranges import Range
from pydantic import (BaseModel, ConfigDict, Field, GetJsonSchemaHandler, ValidationError, create_model,
                      model_serializer, model_validator)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from sfl_sim.choices import (ClientOptimizerState, Coherence, DeviceName, DownlinkMode, ExecutionMode, LrScheduleName,
                             OnOutage, OptimizerName, OutOfRange, StragglerPolicy, allowed)
from sfl_sim.errors import ConfigError


# ---------------------------------------------------------------------------------------------- YAML
class _Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e9`` as a float and refuses a key given twice in one mapping.

    PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent (``1.0e+9``); a
    scenario author writing ``20e6`` Hz would otherwise get a string.  A repeated key would
    silently replace a whole section (the second ``cell:`` wins), so it is an error.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Dict[Any, Any]:
        self.flatten_mapping(node)  # resolve '<<' merge keys first: they may legitimately repeat keys
        first_line: Dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise ConfigError(f"key {key!r} appears twice in one mapping (lines {first_line[key]} and {line}); "
                                  f"allowed: each key once (a repeated section would silently replace the first)")
            first_line[key] = line
        return super().construct_mapping(node, deep=deep)


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
    """Parse scenario YAML (safe loader, YAML 1.2-style floats, no repeated keys).

    Raises
    ------
    ConfigError
        On a repeated key.
    yaml.YAMLError
        On a syntax error.
    """
    return yaml.load(text, Loader=_Loader)


def read_yaml_file(path: Path, what: str = "scenario file") -> Any:
    """Read a YAML file that must be a non-empty text mapping; every failure is one ConfigError line."""
    if not path.is_file():
        raise ConfigError(f"{what} {str(path)!r} does not exist")
    data = path.read_bytes()
    if b"\x00" in data:
        raise ConfigError(f"{what} {str(path)!r} is not a text file (it holds NUL bytes); allowed: a YAML text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {str(path)!r} is not UTF-8 text (byte {exc.start}); "
                          f"allowed: a YAML text file") from None
    try:
        raw = yaml_load(text)
    except ConfigError as exc:
        raise ConfigError(f"{what} {str(path)!r}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {str(path)!r} is not valid YAML: {' '.join(str(exc).split())}") from None
    if raw is None:
        raise ConfigError(f"{what} {str(path)!r} is empty; allowed: a YAML mapping (see scenarios/ for examples)")
    if not isinstance(raw, dict):
        raise ConfigError(f"{what} {str(path)!r}: expected a mapping at the top level, got {type(raw).__name__}")
    return raw


# ------------------------------------------------------------------------------- field descriptions
class Allowed:
    """Field metadata: the human description of the allowed values, used in error messages."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Allowed({self.text!r})"


def _bounded(kind: type, lo: Optional[float] = None, hi: Optional[float] = None, *, lo_open: bool = False,
             unit: str = "", why: str = "") -> Any:
    """An int/float type with inclusive bounds (or an exclusive lower bound), finite, described once."""
    word = "an integer" if kind is int else "a number"
    if lo is not None and hi is not None and lo > 0 and not lo_open:
        text = f"{word} > 0 in the range [{lo:g}, {hi:g}]"  # a physical quantity: positive, and bounded
    elif lo is not None and hi is not None:
        text = f"{word} in {'(' if lo_open else '['}{lo:g}, {hi:g}]"
    elif lo is not None:
        text = f"{word} {'>' if lo_open else '>='} {lo:g}"
    else:
        text = f"{word} <= {hi:g}"
    if unit or why:
        text += f" ({', '.join(x for x in (unit, why) if x)})"
    constraints: Dict[str, Any] = {"gt" if lo_open else "ge": lo} if lo is not None else {}
    if hi is not None:
        constraints["le"] = hi
    if kind is float:
        constraints["allow_inf_nan"] = False
    return Annotated[kind, Field(**constraints), Allowed(text)]


PositiveInt = _bounded(int, 1)
NonNegativeInt = _bounded(int, 0)
PositiveFloat = _bounded(float, 0, lo_open=True)
Fraction = _bounded(float, 0, 1, lo_open=True)

def _physical(rng: "Range") -> Any:
    """A float field bounded by one of :mod:`channel.limits`' ranges (one definition for both)."""
    return _bounded(float, rng.low, rng.high, lo_open=rng.low_open, unit=rng.unit, why=rng.reason)


# Physical ranges: a value outside them is a typo or a unit slip, and inside the simulator it
# becomes an infinite SNR, a zero-time upload or an overflow instead of an error.
BandwidthHz = _physical(limits.BANDWIDTH_HZ)
ClientPowerW = _physical(limits.CLIENT_TX_POWER_W)
ServerPowerW = _physical(limits.SERVER_TX_POWER_W)
NoisePsdDbmPerHz = _physical(limits.NOISE_PSD_DBM_PER_HZ)
ComputeFlopsPerS = _bounded(float, 1.0, 1e21, unit="FLOP/s", why="from a microcontroller to a supercomputer")
#: Host threads: libgomp aborts far above any real core count.
MAX_TORCH_THREADS = 1024


def _allowed_literal(choice: Any) -> Any:
    return Annotated[choice, Allowed("one of " + ", ".join(allowed(choice)))]


# ------------------------------------------------------------------------------------------ models
class _Section(BaseModel):
    """A fixed part of the scenario: strict types, unknown keys refused, frozen once validated."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ComponentSpec(BaseModel):
    """A swappable component: ``name`` plus the component's own parameters (any keys).

    A bare string is read as ``{"name": string}``.  The parameters are checked by the component
    itself when the runner builds it (before any work).

    Attributes
    ----------
    name : str
        A registered short name or ``package.module:Class``.
    params : dict
        Everything beside ``name`` (and an algorithm's ``label``).
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    name: Annotated[str, Field(min_length=1), Allowed("a non-empty string")]

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"name": value}
        if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
            raise PydanticCustomError("component", "{allowed}",
                                      {"allowed": "a mapping with a string 'name' and parameters (or a bare name)"})
        return value

    @property
    def params(self) -> Dict[str, Any]:
        """The component's parameters: every key but ``name`` and ``label``."""
        return {k: v for k, v in (self.model_extra or {}).items() if k != "label"}

    def as_dict(self) -> Dict[str, Any]:
        """``{"name": ..., **params}`` (with ``label`` when set), as written in YAML."""
        return {"name": self.name, **(self.model_extra or {})}

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # Editors must accept the bare-name shorthand too.
        mapping = handler(schema)
        return {"anyOf": [{"type": "string", "minLength": 1, "description": "a registered name or module:Class"},
                          mapping]}


_LABEL_RULE = "a non-empty name without '/', '\\\\', NUL, and not '.' or '..' (it names the run directory)"


# ------------------------------------------------------------------------------------- training
class _SGDParams(_Section):
    """Hyper-parameters of ``torch.optim.SGD`` besides the learning rate."""

    momentum: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False), Allowed("a number in [0, 1)")] = 0.0
    dampening: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False), Allowed("a number in [0, 1]")] = 0.0
    nesterov: bool = False
    weight_decay: _bounded(float, 0, why="L2 penalty") = 0.0

    @model_validator(mode="after")
    def _nesterov(self) -> "_SGDParams":
        if self.nesterov and (self.momentum == 0 or self.dampening != 0):
            raise _CrossFieldError("nesterov", True, "true only with momentum > 0 and dampening 0 (torch.optim.SGD)",
                                   relative=True)
        return self


_Beta = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False), Allowed("a number in [0, 1)")]


class _AdamParams(_Section):
    """Hyper-parameters of ``torch.optim.Adam`` besides the learning rate."""

    betas: Annotated[List[_Beta], Field(min_length=2, max_length=2),
                     Allowed("two numbers in [0, 1) (beta1, beta2)")] = Field(default_factory=lambda: [0.9, 0.999])
    eps: _bounded(float, 0, lo_open=True) = 1e-8
    weight_decay: _bounded(float, 0, why="L2 penalty") = 0.0
    amsgrad: bool = False


class _AdamWParams(_AdamParams):
    """Hyper-parameters of ``torch.optim.AdamW`` besides the learning rate (decoupled weight decay)."""

    weight_decay: _bounded(float, 0, why="decoupled weight decay") = 0.01


#: Built-in optimizers: their hyper-parameters (checked and filled with torch's defaults here).
_OPTIMIZER_PARAMS: Dict[str, Type[_Section]] = {"sgd": _SGDParams, "adam": _AdamParams, "adamw": _AdamWParams}


class _ConstantParams(_Section):
    """``constant``: the learning rate of every round is ``training.learning_rate``."""


class _StepParams(_Section):
    """``step``: multiply the learning rate by ``gamma`` every ``step_size_rounds`` rounds (StepLR)."""

    step_size_rounds: Annotated[PositiveInt, Allowed("an integer >= 1 (rounds between decays)")]
    gamma: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False), Allowed("a number in (0, 1]")] = 0.1


class _ExponentialParams(_Section):
    """``exponential``: multiply the learning rate by ``gamma`` after every round (ExponentialLR)."""

    gamma: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False), Allowed("a number in (0, 1]")]


class _CosineParams(_Section):
    """``cosine``: cosine annealing from the learning rate to ``eta_min`` over ``rounds`` rounds
    (CosineAnnealingLR with T_max = ``rounds``)."""

    rounds: Annotated[PositiveInt, Allowed("an integer >= 1 (T_max, the rounds of one half cosine)")]
    eta_min: _bounded(float, 0, why="the learning rate at the end of the half cosine") = 0.0


_SCHEDULE_PARAMS: Dict[str, Type[_Section]] = {"constant": _ConstantParams, "step": _StepParams,
                                               "exponential": _ExponentialParams, "cosine": _CosineParams}


def _nested_error(model: Type[BaseModel], data: Mapping[str, Any]) -> Dict[str, Any]:
    """Validate ``data`` with ``model`` and dump it (defaults filled); a failure becomes one
    :class:`PydanticCustomError` line relative to the field being validated."""
    try:
        return model.model_validate(dict(data)).model_dump(mode="json")
    except ValidationError as exc:
        raise PydanticCustomError("nested", "{message}", {"message": format_validation_error(exc, model)}) from None


class _NamedSpec(BaseModel):
    """A ``name`` plus hyper-parameters beside it; a bare string is the name alone."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str

    @property
    def params(self) -> Dict[str, Any]:
        """Everything beside ``name``."""
        return dict(self.model_extra or {})

    def as_dict(self) -> Dict[str, Any]:
        """``{"name": ..., **params}`` as written to ``scenario.yaml``."""
        return {"name": self.name, **self.params}


class OptimizerSpec(_NamedSpec):
    """``training.optimizer``: ``sgd`` (default), ``adam``, ``adamw`` or ``package.module:Class``.

    Built-ins take torch's hyper-parameters beside ``name`` (SGD: momentum, dampening, nesterov,
    weight_decay; Adam/AdamW: betas, eps, weight_decay, amsgrad), checked here and filled with
    torch's defaults, so ``scenario.yaml`` records every value the run used.  A ``module:Class``
    must name a ``torch.optim.Optimizer`` subclass; its parameters are checked when the run is
    built.  The learning rate is ``training.learning_rate`` (and its schedule), never a parameter.
    """

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = {"name": value}
        if not isinstance(value, dict):
            raise PydanticCustomError("component", "{allowed}", {"allowed": _OPTIMIZER_RULE})
        value = dict(value)
        name = value.pop("name", "sgd")  # {momentum: 0.9} alone means SGD (what --set builds)
        if not isinstance(name, str) or not name:
            raise PydanticCustomError("component", "{allowed}", {"allowed": _OPTIMIZER_RULE, "label": name})
        for key in ("lr", "learning_rate", "params"):
            if key in value:
                raise PydanticCustomError("nested", "{message}", {"message": (
                    f"{key}: got {value[key]!r}; allowed: no {key!r} here (the learning rate is "
                    f"training.learning_rate, stepped by training.lr_schedule)")})
        if name in _OPTIMIZER_PARAMS:
            return {"name": name, **_nested_error(_OPTIMIZER_PARAMS[name], value)}
        if ":" not in name:
            close = difflib.get_close_matches(name, list(_OPTIMIZER_PARAMS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise PydanticCustomError("nested", "{message}", {"message": (
                f"name: got {name!r}{hint}; allowed: {_OPTIMIZER_RULE}")})
        return {"name": name, **value}

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        shapes = [{"type": "object",
                   "properties": {"name": {"const": name}, **params.model_json_schema()["properties"]},
                   "additionalProperties": False} for name, params in _OPTIMIZER_PARAMS.items()]
        custom = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[^:]+:[^:]+$"}},
                  "required": ["name"], "description": "a torch.optim.Optimizer subclass and its parameters"}
        return {"anyOf": [{"enum": list(_OPTIMIZER_PARAMS)}, {"type": "string", "pattern": "^[^:]+:[^:]+$"},
                          *shapes, custom], "description": cls.__doc__.split("\n")[0]}


_OPTIMIZER_RULE = (f"one of {', '.join(allowed(OptimizerName))} or package.module:Class (a torch.optim.Optimizer "
                   f"subclass), as a name or a mapping with 'name' and its hyper-parameters")


class LrScheduleSpec(_NamedSpec):
    """``training.lr_schedule``: the learning rate of each round (``constant`` by default).

    ``step`` (``step_size_rounds``, ``gamma``), ``exponential`` (``gamma``) and ``cosine``
    (``rounds``, ``eta_min``) are torch's StepLR, ExponentialLR and CosineAnnealingLR stepped once
    per round; round 1 trains with ``training.learning_rate``.
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
        if name not in _SCHEDULE_PARAMS:
            close = difflib.get_close_matches(name, list(_SCHEDULE_PARAMS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise PydanticCustomError("nested", "{message}", {"message": f"name: got {name!r}{hint}; allowed: "
                                                                        f"{', '.join(allowed(LrScheduleName))}"})
        return {"name": name, **_nested_error(_SCHEDULE_PARAMS[name], value)}

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        shapes = []
        for name, params in _SCHEDULE_PARAMS.items():
            sub = params.model_json_schema()
            shapes.append({"type": "object", "properties": {"name": {"const": name}, **sub.get("properties", {})},
                           "required": ["name", *sub.get("required", [])], "additionalProperties": False})
        return {"anyOf": [{"enum": list(_SCHEDULE_PARAMS)}, *shapes], "description": cls.__doc__.split("\n")[0]}


_SCHEDULE_RULE = (f"one of {', '.join(allowed(LrScheduleName))}, as a name or a mapping with 'name' and its "
                  f"parameters")

#: The local-work fields: a run sets one of them (``local_iterations`` is the default).
LOCAL_WORK_FIELDS = ("local_iterations", "local_epochs")
DEFAULT_LOCAL_ITERATIONS = 5


class Training(_Section):
    """``training:``: how each client and the server learn.

    Local work is either ``local_iterations`` (T iterations of eq. 3 minibatches, the default) or
    ``local_epochs`` (E passes over the client's data in batches of ``batch_size``); setting both
    is an error, setting neither means ``local_iterations: 5``.
    """

    batch_size: Annotated[PositiveInt, Allowed("an integer >= 1 (with local_iterations: B, the server-side "
                                               "minibatch split over the cohort by eq. 3; with local_epochs: "
                                               "every client's batch b)")] = 320
    local_iterations: Optional[Annotated[PositiveInt, Allowed("an integer >= 1 (T)")]] = DEFAULT_LOCAL_ITERATIONS
    local_epochs: Optional[Annotated[PositiveInt, Allowed("an integer >= 1 (E)")]] = None
    learning_rate: PositiveFloat = 0.01
    optimizer: OptimizerSpec = Field(default_factory=lambda: OptimizerSpec.model_validate("sgd"))
    lr_schedule: LrScheduleSpec = Field(default_factory=lambda: LrScheduleSpec.model_validate("constant"))
    max_grad_norm: Optional[_bounded(float, 0, lo_open=True, why="largest gradient 2-norm of one step")] = None
    client_optimizer_state: _allowed_literal(ClientOptimizerState) = "fresh"
    torch_threads: Optional[_bounded(int, 1, MAX_TORCH_THREADS, why="host threads")] = None

    @model_validator(mode="before")
    @classmethod
    def _local_work(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        iterations, epochs = value.get("local_iterations"), value.get("local_epochs")
        if iterations is not None and epochs is not None:
            raise _CrossFieldError("local_epochs", epochs, f"null when local_iterations is set (got {iterations!r}); "
                                   f"a run does T local iterations or E local epochs, not both", relative=True)
        if epochs is None:  # neither given (or T alone): T, 5 by default
            return {**value, "local_iterations": DEFAULT_LOCAL_ITERATIONS if iterations is None else iterations,
                    "local_epochs": None}
        return {**value, "local_iterations": None}  # E alone: no T

    @model_validator(mode="after")
    def _schedule_floor(self) -> "Training":
        eta_min = self.lr_schedule.params.get("eta_min", 0.0)
        if eta_min > self.learning_rate:
            raise _CrossFieldError("lr_schedule.eta_min", eta_min, f"at most training.learning_rate "
                                   f"({self.learning_rate!r})", relative=True)
        return self


#: Training fields an algorithm's ``training:`` block may override (threads are a host setting).
OVERRIDABLE_TRAINING_FIELDS = tuple(f for f in Training.model_fields if f != "torch_threads")

TrainingOverride = create_model(
    "TrainingOverride", __base__=_Section, __doc__=(
        "An algorithm's ``training:`` block: the shared ``training:`` fields it replaces for that run."),
    **{name: (Optional[Training.model_fields[name].annotation], Field(None, json_schema_extra=None))
       for name in OVERRIDABLE_TRAINING_FIELDS})


def override_dict(override: BaseModel) -> Dict[str, Any]:
    """The fields an override block sets, as YAML-able data (in field order)."""
    dumped = override.model_dump(mode="json")
    return {k: dumped[k] for k in OVERRIDABLE_TRAINING_FIELDS if k in override.model_fields_set}


def merge_training(shared: Training, override: Optional[BaseModel]) -> Training:
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


class AlgorithmSpec(ComponentSpec):
    """An algorithm: a component spec with an optional ``label`` naming its run directory and an
    optional ``training:`` block overriding the shared training settings for this run (neither
    is passed to the algorithm's constructor)."""

    training: Optional[TrainingOverride] = None  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _check_label(self) -> "AlgorithmSpec":
        label = (self.model_extra or {}).get("label")
        if label is None:
            return self
        if not isinstance(label, str) or not label.strip() or label in (".", "..") or \
                any(c in label for c in "/\\\x00"):
            raise PydanticCustomError("label", "{allowed}", {"allowed": _LABEL_RULE, "label": label})
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> Dict[str, Any]:
        # Only what the scenario wrote: no 'training: null' for runs without an override (their
        # resolved scenario.yaml stays as it was), and only the overridden training fields.
        data = handler(self)
        data.pop("training", None)
        if self.training is not None:
            data["training"] = override_dict(self.training)
        return data

    @property
    def label(self) -> str:
        """The run-directory name: ``label``, else ``name`` with ``:`` and ``/`` made safe."""
        label = (self.model_extra or {}).get("label")
        if label is not None:
            return label
        return self.name.replace(":", "_").replace("/", "_").replace("\\", "_")

    def as_dict(self) -> Dict[str, Any]:
        """``{"name": ..., **params}`` with ``label`` and the ``training`` override when set."""
        data = super().as_dict()
        if self.training is not None:
            data["training"] = override_dict(self.training)
        return data


def _default(name: str, **params: Any) -> Any:
    return Field(default_factory=lambda: ComponentSpec(name=name, **params))


class Data(_Section):
    """``data:``: the data set and how it is split among the clients."""

    dataset: ComponentSpec = _default("fashion_mnist")
    partition: ComponentSpec = _default("quantity", alpha=2)


class ModelSection(_Section):
    """``model:``: the network and where it is cut."""

    name: str = "alexnet"
    split_point: str = "S2"
    params: Dict[str, Any] = Field(default_factory=dict)


class Clients(_Section):
    """``clients:``: how many, how many per round, how fast."""

    count: _bounded(int, 1, 10_000_000) = 100
    participation: Fraction = 0.1
    selection: Optional[ComponentSpec] = None
    compute_flops_per_s_min: ComputeFlopsPerS = 1.0e9
    compute_flops_per_s_max: ComputeFlopsPerS = 1.0e10


class Stragglers(_Section):
    """``stragglers:``: how the server waits for clients."""

    policy: _allowed_literal(StragglerPolicy) = "wait_all"
    deadline_s: Optional[PositiveFloat] = None
    over_selection_fraction: PositiveFloat = 0.25


class Server(_Section):
    """``server:``: the edge server's compute."""

    compute_flops_per_s: ComputeFlopsPerS = 1.0e12


class Metrics(_Section):
    """``metrics:``: optional measurements beyond the run's own evaluation, off by default.

    They change what ``classes.csv`` records, never what the run trains; each costs host time at
    every evaluated round, so a run asks only for those it reports.
    """

    local_vacant_class_accuracy: Annotated[bool, Allowed(
        "true or false (FedVLS's accuracy of the round's local models on their vacant classes, in classes.csv; "
        "it scores every aggregated local model at each evaluated round)")] = False


class Outage(_Section):
    """``cell.outage:``: when an upload fails and what happens then."""

    min_rate_bps: Annotated[_bounded(float, 0), Allowed("a number >= 0 (0 and no min_snr_db: no outage)")] = 0.0
    min_snr_db: Optional[_bounded(float, -100.0, 100.0, unit="dB")] = None
    max_attempts: Annotated[_bounded(int, 1, 1000),
                            Allowed("an integer in [1, 1000] (attempts in all, 1 = no retransmission)")] = 1
    on_outage: _allowed_literal(OnOutage) = "retransmit"


class Downlink(_Section):
    """``cell.downlink:``: whether and how server-to-client transfers take time."""

    mode: _allowed_literal(DownlinkMode) = "ideal"
    server_tx_power_w: ServerPowerW = 10.0
    bandwidth_hz: BandwidthHz = 20.0e6


class CellSection(_Section):
    """``cell:``: the radio components and the link budget."""

    placement: ComponentSpec = _default("uniform_disc", radius_m=500.0, min_distance_m=35.0)
    pathloss: ComponentSpec = _default("tr36814_macro")
    shadowing: ComponentSpec = _default("none")
    rate: ComponentSpec = _default("shannon")
    allocation: ComponentSpec = _default("equal")
    fading: ComponentSpec = _default("none")
    coherence: _allowed_literal(Coherence) = "per_round"
    out_of_range: Annotated[OutOfRange, Allowed("one of warn, error (clients outside the path-loss model's "
                                                "distance range)")] = "warn"
    mobility: ComponentSpec = _default("static")
    outage: Outage = Field(default_factory=Outage)
    client_tx_power_w: ClientPowerW = 0.2
    uplink_bandwidth_hz: BandwidthHz = 20.0e6
    noise_psd_dbm_per_hz: NoisePsdDbmPerHz = -174.0
    downlink: Downlink = Field(default_factory=Downlink)


class Scenario(_Section):
    """A whole scenario (see ``scenarios/cellular_100clients.yaml`` for every field with a comment)."""

    name: str = "scenario"
    seed: Annotated[int, Field(ge=0, lt=2**63), Allowed("an integer >= 0 (below 2**63)")] = 0
    rounds: PositiveInt = 40
    eval_every_rounds: PositiveInt = 1
    eval_samples: Optional[PositiveInt] = None
    eval_batch_size: Annotated[Union[PositiveInt, Literal["auto"]],
                               Allowed("an integer >= 1, or auto (the default for the run's device)")] = "auto"
    target_accuracies: List[Annotated[Fraction, Allowed("a fraction in (0, 1]")]] = \
        Field(default_factory=lambda: [0.5, 0.6, 0.7, 0.8])
    device: _allowed_literal(DeviceName) = "auto"
    execution: _allowed_literal(ExecutionMode) = "auto"
    output_dir: Annotated[str, Field(min_length=1), Allowed("a non-empty path")] = "runs/scenario"
    algorithms: Annotated[List[AlgorithmSpec], Field(min_length=1), Allowed("a non-empty list of component specs")] = \
        Field(default_factory=lambda: [AlgorithmSpec(name="scala")])
    training: Training = Field(default_factory=Training)
    data: Data = Field(default_factory=Data)
    model: ModelSection = Field(default_factory=ModelSection)
    clients: Clients = Field(default_factory=Clients)
    stragglers: Stragglers = Field(default_factory=Stragglers)
    server: Server = Field(default_factory=Server)
    cell: CellSection = Field(default_factory=CellSection)
    metrics: Metrics = Field(default_factory=Metrics)

    @model_validator(mode="after")
    def _cross_fields(self) -> "Scenario":
        c = self.clients
        if c.compute_flops_per_s_max < c.compute_flops_per_s_min:
            raise _CrossFieldError("clients.compute_flops_per_s_max", c.compute_flops_per_s_max,
                                   f"a number >= clients.compute_flops_per_s_min ({c.compute_flops_per_s_min!r})")
        if self.stragglers.policy == "deadline" and self.stragglers.deadline_s is None:
            raise _CrossFieldError("stragglers.deadline_s", None, "a number > 0 (simulated seconds per local "
                                   "iteration) when stragglers.policy is deadline")
        labels = [a.label for a in self.algorithms]
        if len(set(labels)) != len(labels):
            raise _CrossFieldError("algorithms", labels, "distinct labels (set 'label' to tell runs apart)",
                                   what="labels")
        for i, spec in enumerate(self.algorithms):
            try:
                merge_training(self.training, spec.training)
            except ValidationError as exc:  # e.g. eta_min above the rate this algorithm overrides
                raise _CrossFieldError(f"algorithms[{i}].training", "", "").with_message(
                    f"algorithms[{i}].training.{format_validation_error(exc, Training)} (merged with training:)") \
                    from None
        return self

    def algorithm(self, label: str) -> AlgorithmSpec:
        """The algorithm spec whose run label is ``label``."""
        for spec in self.algorithms:
            if spec.label == label:
                return spec
        raise KeyError(label)

    def training_for(self, label: str) -> Training:
        """The training settings of the run of ``label``: ``training:`` with that algorithm's
        ``training:`` block applied (:func:`merge_training`)."""
        return merge_training(self.training, self.algorithm(label).training)

    def to_yaml_dict(self) -> Dict[str, Any]:
        """The scenario as plain YAML-able data (components flattened back to ``{name, **params}``)."""
        return self.model_dump(mode="json")


class _CrossFieldError(ValueError):
    """A check between fields; carries its own field path (pydantic's would be the model's root).

    ``relative=True``: ``where`` is relative to the model whose validator raised it (a section
    used in several places, e.g. ``training`` and an algorithm's ``training`` block), and the
    error's location is prefixed when formatted."""

    def __init__(self, where: str, value: Any, allowed_text: str, what: str = "got", relative: bool = False) -> None:
        super().__init__(f"{where}: {what} {value!r}; allowed: {allowed_text}")
        self.relative = relative

    def with_message(self, message: str) -> "_CrossFieldError":
        """The same error with a prebuilt one-line message."""
        self.args = (message,)
        return self


# ----------------------------------------------------------------------------------- error messages
_TYPE_WORDS = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "float_type": "a number", "float_parsing": "a number", "finite_number": "a finite number",
    "bool_type": "true or false", "string_type": "a string", "list_type": "a list",
    "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
    "none_required": "null",
}


def _walk(model: Type[BaseModel], loc: Sequence[Any]) -> Tuple[str, Optional[Any], Optional[Type[BaseModel]]]:
    """Follow a pydantic error location through the model classes.

    Returns the dotted path of the real fields (union/validator tags dropped), the FieldInfo of
    the last field (or None) and the model class the last key belongs to (for unknown keys).
    """
    path, info, current, parent = "", None, model, model
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            continue
        if isinstance(current, type) and issubclass(current, BaseModel) and part in current.model_fields:
            parent = current
            info = current.model_fields[part]
            path = f"{path}.{part}" if path else part
            current = _inner_model(info.annotation)
            continue
        if isinstance(current, type) and issubclass(current, BaseModel) \
                and current.model_config.get("extra") != "allow":
            parent = current
            path = f"{path}.{part}" if path else str(part)  # an unknown key
            info, current = None, None
            continue
        if current is None or (isinstance(current, type) and issubclass(current, BaseModel)):
            if current is not None and current.model_config.get("extra") == "allow":
                path = f"{path}.{part}" if path else str(part)  # a component parameter
        # else: a union/function tag such as 'int' or 'function-after[...]': not a field
    return path, info, parent


def _inner_model(annotation: Any) -> Any:
    """The model class inside ``Optional[...]``/``List[...]``/``Annotated[...]``, if any."""
    import typing

    stack = [annotation]
    while stack:
        ann = stack.pop()
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            return ann
        stack.extend(typing.get_args(ann))
    return None


def _allowed_text(info: Any) -> Optional[str]:
    if info is None:
        return None
    texts = [m.text for m in info.metadata if isinstance(m, Allowed)]
    if not texts:  # Optional[Annotated[...]] keeps the metadata inside the annotation
        import typing

        stack = [info.annotation]
        while stack:
            ann = stack.pop()
            for meta in getattr(ann, "__metadata__", ()):
                if isinstance(meta, Allowed):
                    texts.append(meta.text)
            stack.extend(typing.get_args(ann))
        if texts:
            optional = type(None) in typing.get_args(info.annotation)
            return ("null or " if optional else "") + texts[-1]  # the outermost: the most specific
    return texts[-1] if texts else None


def format_validation_error(exc: ValidationError, model: Type[BaseModel] = None) -> str:  # type: ignore[assignment]
    """One line for the first error of ``exc``: ``field: got VALUE; allowed: WHAT``.

    Unknown keys list the keys allowed at that level with a "did you mean" hint.
    """
    model = model or Scenario
    err = exc.errors(include_url=False)[0]
    ctx = err.get("ctx") or {}
    where, info, parent = _walk(model, err["loc"])
    if isinstance(ctx.get("error"), _CrossFieldError):
        return f"{where}.{ctx['error']}" if ctx["error"].relative and where else str(ctx["error"])
    if err["type"] == "nested":  # a sub-model's own one-line error, relative to this field
        return f"{where}.{ctx['message']}" if where else ctx["message"]
    where = where or "scenario"
    value = err.get("input")
    if err["type"] == "extra_forbidden":
        key = str(err["loc"][-1])
        keys = sorted(parent.model_fields)
        close = difflib.get_close_matches(key, keys, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"{where}: unknown key (value {value!r}){hint}; allowed keys here: {', '.join(keys)}"
    if err["type"] in ("component", "label"):
        return f"{where}: got {ctx.get('label', value)!r}; allowed: {ctx['allowed']}"
    if err["type"] == "missing":
        return f"{where}: missing; allowed: {_allowed_text(info) or 'a value'}"
    if err["type"] in ("model_type", "model_attributes_type", "dict_type") and info is None:
        return f"{where}: expected a mapping, got {value!r}"
    text = _allowed_text(info) or ctx.get("allowed") or _TYPE_WORDS.get(err["type"]) or err["msg"]
    return f"{where}: got {value!r}; allowed: {text}"


# ----------------------------------------------------------------------------------------- loading
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
        raise ConfigError(format_validation_error(exc)) from None


def parse_override(text: str) -> tuple[List[str], Any]:
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
        raise ConfigError(f"--set {text!r}: value is not valid YAML ({' '.join(str(exc).split())})") from None
    return key.strip().split("."), value


def apply_override(raw: Dict[str, Any], path: List[str], value: Any) -> None:
    """Set ``raw[path[0]][path[1]]... = value``, creating intermediate mappings."""
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


def load_scenario_raw(path: str | Path, overrides: Optional[List[str]] = None,
                      extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Read a scenario file and apply ``--set`` overrides and CLI values, without validating."""
    raw = read_yaml_file(Path(path))
    for text in overrides or []:
        keys, value = parse_override(text)
        apply_override(raw, keys, value)
    for key, value in (extra or {}).items():
        if value is not None:
            raw[key] = value
    return raw


def load_scenario(path: str | Path, overrides: Optional[List[str]] = None,
                  extra: Optional[Dict[str, Any]] = None) -> Scenario:
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


def json_schema() -> Dict[str, Any]:
    """The JSON Schema of a scenario file (for editors: completion and checking of YAML), each
    component field with its components' parameters (:mod:`sfl_sim.component_schema`)."""
    from sfl_sim.component_schema import add_components  # reads the registries (imports torch)

    sections = {name: f.annotation.__name__ for name, f in Scenario.model_fields.items()
                if isinstance(f.annotation, type)}
    schema = add_components(Scenario.model_json_schema(), sections)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "sfl-sim scenario"
    return schema


def flatten(data: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """``{"a": {"b": 1}} -> {"a.b": 1}`` (lists and component specs' parameters included)."""
    out: Dict[str, Any] = {}
    for key, value in data.items():
        where = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, where))
        else:
            out[where] = value
    return out


__all__ = ["ConfigError", "Scenario", "ComponentSpec", "AlgorithmSpec", "Training", "Metrics", "OptimizerSpec",
           "LrScheduleSpec",
           "merge_training", "load_scenario", "load_scenario_raw",
           "validate", "parse_override", "apply_override", "json_schema", "yaml_load", "read_yaml_file",
           "format_validation_error", "flatten"]
