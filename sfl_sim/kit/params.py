"""Typed component parameters: one pydantic model per component class.

(The radio layer imports pydantic only through this module: :func:`Field`,
:func:`field_validator` and :func:`model_validator` are pydantic's, re-exported for its models.)

A component's parameters are the keys a scenario puts beside its ``name``.  Their model is

- **declared** by the shipped components, :class:`sfl_sim.kit.component.Component` subclasses:
  the nested ``Params`` (a :class:`ParamsModel`) is the one place each parameter's name, type,
  default, bounds (``Annotated[float, RANGE]`` with a :class:`sfl_sim.kit.ranges.Range`, or
  pydantic's ``Field``), choices (``Literal``) and description (:class:`Doc`) are stated.  The
  constructor, the JSON Schema (:func:`params_schema`), ``sfl-sim list``, the class docstring's
  ``Parameters`` section and the run's ``resolved.yaml`` (:func:`parameter_values`) are derived
  from it.  A field marked :data:`FIXED` is one its class sets for a base's parameter (CA-SFL is
  SCALA with fixed flags): recorded, never a scenario key;
- **derived** for a class of one's own (a plug-in), by :func:`params_model`, from the
  constructor's typed signature: each keyword parameter becomes a field of its annotation and
  default (a parameter without an annotation, or with one pydantic cannot check from YAML data,
  e.g. ``np.ndarray``, takes anything); ``Annotated[float, RANGE]`` is a finite number bounded by
  that range.  A constructor taking ``**kwargs`` that forwards them to its base class gets the
  base's parameters too (up the MRO while each takes ``**kwargs``, up to a declared component);
  one that keeps ``**kwargs`` open accepts any further key unchecked.  A plug-in may also declare
  a ``Params`` model of its own.  A class whose signature cannot be read has no model and is not
  checked.

:class:`~sfl_sim.kit.registry.Registry` validates the parameters of every component it builds with
this model, :func:`params_schema` gives the JSON Schema for ``sfl-sim schema``, and
:func:`parameter_values` the full parameters a build uses, for ``resolved.yaml``.  Every failure is
one line in the project's ``NAME: got VALUE; allowed: WHAT`` format (:mod:`sfl_sim.kit.checks`).
"""
from __future__ import annotations

import collections.abc
import copy
import inspect
import re
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from sfl_sim.kit.ranges import Range

__all__ = ["ParamsModel", "Doc", "FIXED", "Field", "field_validator", "model_validator", "params_model",
           "declared_params", "is_declared", "validate_params", "params_schema", "parameter_values",
           "doc_descriptions", "field_doc", "describe_error", "allowed_text", "NonNegative", "Positive", "PositiveInt",
           "NonNegativeInt", "UnitInterval", "positive_ints"]

P = TypeVar("P", bound="ParamsModel")

#: A finite number >= 0 (a weight, a coefficient).
NonNegative = typing.Annotated[float, Field(ge=0, allow_inf_nan=False)]
#: A finite number > 0.
Positive = typing.Annotated[float, Field(gt=0, allow_inf_nan=False)]
#: An integer >= 1 (a count of things that must exist).
PositiveInt = typing.Annotated[int, Field(ge=1)]
#: An integer >= 0.
NonNegativeInt = typing.Annotated[int, Field(ge=0)]
#: A probability that excludes 1 (a dropout rate, a momentum).
UnitInterval = typing.Annotated[float, Field(ge=0, lt=1)]


def positive_ints(length: int) -> Any:
    """The type of a list (or tuple) of exactly ``length`` integers >= 1 (layer widths)."""
    return typing.Annotated[typing.Sequence[PositiveInt], Field(min_length=length, max_length=length)]


class Doc:
    """What a parameter is, in ``Annotated`` metadata: the one description of it that the JSON
    Schema, ``sfl-sim list`` and the class docstring show.

    >>> mu: Annotated[float, Field(ge=0), Doc("Proximal coefficient; 0 is FedAvg.")] = 0.01
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = " ".join(text.split())

    def __repr__(self) -> str:
        return f"Doc({self.text!r})"


class _Fixed:
    def __repr__(self) -> str:
        return "FIXED"


#: ``Annotated`` metadata of a field whose class sets it for a base's parameter (its default is
#: the value): recorded in ``resolved.yaml``, never a scenario key, not in the schema or the list.
FIXED = _Fixed()


class ParamsModel(BaseModel):
    """Base of a declared parameter model: strict types (no ``"1"`` for 1, no ``true`` for 1),
    unknown keys refused, frozen.

    Examples
    --------
    >>> class FedProx(FedAvg):
    ...     class Params(FedAvg.Params):
    ...         mu: Annotated[float, Field(ge=0), Doc("Proximal coefficient.")] = 0.01
    ...     def local_loss(self, ...): ... self.params.mu ...
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    #: Parameters the component no longer has, name -> why: one given is refused in one line
    #: saying so (``NAME: got VALUE; allowed: nothing (WHY)``), not as a misspelt name.
    retired: typing.ClassVar[Mapping[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _no_retired(cls, values: Any) -> Any:
        """Refuse a retired parameter with why it is gone."""
        if isinstance(values, Mapping):
            for name, why in cls.retired.items():
                if name in values:
                    raise ValueError(f"{name}: got {values[name]!r}; allowed: nothing ({why})")
        return values

    @model_validator(mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, values: Any) -> Any:
        """Refuse ``true`` where a number is expected: strict mode does for ``float``, but a
        ``Literal[0.0, ..., 1.0]`` accepts ``True`` (``True == 1.0``)."""
        if isinstance(values, Mapping):
            for name, value in values.items():
                info = cls.model_fields.get(name)
                if isinstance(value, bool) and info is not None and bool not in _annotations_in(info.annotation):
                    raise ValueError(f"{name}: got {value!r}; allowed: {allowed_text(info)}")
        return values

    @classmethod
    def parse(cls: type[P], values: Mapping[str, Any]) -> P:
        """The validated parameters, else ``ValueError`` with one line (``mu: got -1; allowed: ...``)."""
        try:
            return cls.model_validate(dict(values))
        except ValidationError as exc:
            raise ValueError(describe_error(exc, cls)) from None


def declared_params(cls: Any) -> type[BaseModel] | None:
    """The ``Params`` model ``cls`` declares in its own body (not one inherited), or None."""
    model = vars(cls).get("Params") if isinstance(cls, type) else None
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


# ------------------------------------------------------------------------------------ derivation
_SEQUENCES = (list, tuple, collections.abc.Sequence)
#: ``Union[a, b]`` and ``a | b`` (PEP 604) are the same union to a reader of annotations.
_UNIONS = (typing.Union, types.UnionType)


def _range_field(rng: Range) -> FieldInfo:
    bounds: dict[str, Any] = {"gt" if rng.low_open else "ge": rng.low}
    if rng.high != float("inf"):
        bounds["le"] = rng.high
    unit = f"{rng.unit}: " if rng.unit else ""
    return Field(allow_inf_nan=False, description=f"{unit}{rng.reason}", **bounds)


def _with_ranges(annotation: Any) -> Any:
    """``annotation`` with every ``Annotated[float, Range]`` inside it made a bounded float."""
    if typing.get_origin(annotation) is typing.Annotated:
        base, *meta = typing.get_args(annotation)
        ranges = [m for m in meta if isinstance(m, Range)]
        rest = [m for m in meta if not isinstance(m, Range)]
        if ranges:  # an int keeps its type (a count), anything else is a float
            bounded: Any = typing.Annotated[int if base is int else float, _range_field(ranges[-1])]
            for meta in rest:
                bounded = typing.Annotated[bounded, meta]
            return bounded
        return annotation
    if typing.get_origin(annotation) in _UNIONS:
        return typing.Union[tuple(_with_ranges(a) for a in typing.get_args(annotation))]  # noqa: UP007 (built from parts)
    if typing.get_origin(annotation) in _SEQUENCES and len(typing.get_args(annotation)) == 1:
        return typing.Sequence[_with_ranges(typing.get_args(annotation)[0])]  # type: ignore[misc]
    return annotation


def _annotation(parameter: inspect.Parameter, namespace: Mapping[str, Any]) -> Any:
    """The parameter's annotation as a type (a string one evaluated in its module); ``Any`` when it
    has none or names something only a type checker sees."""
    ann = parameter.annotation
    if ann is inspect.Parameter.empty:
        return Any
    for _ in range(2):  # a quoted annotation under ``from __future__ import annotations`` is a str twice
        if not isinstance(ann, str):
            break
        try:
            ann = eval(ann, dict(namespace))  # noqa: S307 - the class's own annotation, in its own module
        except Exception:
            return Any
    if isinstance(ann, str):
        return Any
    ann = _with_ranges(ann)
    try:  # a type pydantic checks by isinstance only (an ndarray, a tensor) would refuse YAML's lists
        TypeAdapter(ann, config=ConfigDict(strict=True))
    except Exception:
        return Any
    return ann


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an array default: no single truth value
        return a is b


def _declared_field(cls: type, name: str) -> FieldInfo | None:
    """The field ``name`` of the nearest ``Params`` declared in ``cls``'s MRO: a subclass that
    passes a parameter on to its base keeps the base's declaration."""
    for k in cls.__mro__:
        model = declared_params(k)
        if model is not None and name in model.model_fields:
            return model.model_fields[name]
    return None


def _owners(cls: type) -> list[type]:
    """The classes of ``cls``'s MRO that define ``__init__`` (the constructors ``**kwargs`` reach)."""
    return [k for k in cls.__mro__ if "__init__" in vars(k) and k is not object]


def declares_model(cls: Any) -> bool:
    """Whether ``cls``'s parameters are its ``Params`` model (a :class:`~sfl_sim.kit.component.Component`
    whose constructor takes nothing else), not a signature to derive a model from."""
    return isinstance(cls, type) and bool(vars(cls).get("__params_declared__"))


def _declared_model(cls: type) -> type[BaseModel]:
    """The ``Params`` model of a declared component."""
    return typing.cast(type[BaseModel], cls.Params)  # type: ignore[attr-defined]


def _fixed(info: FieldInfo) -> bool:
    return any(m is FIXED for m in info.metadata)


@cache
def _user_model(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` without its :data:`FIXED` fields: what a scenario may set."""
    if not any(_fixed(info) for info in model.model_fields.values()):
        return model  # the declaration itself, validators included
    fields = {name: (info.annotation, info) for name, info in model.model_fields.items() if not _fixed(info)}
    return create_model(model.__name__, __config__=model.model_config, **fields)  # type: ignore[call-overload]


def fixed_values(cls: Any) -> dict[str, Any]:
    """The :data:`FIXED` fields of a declared component's model with their values."""
    if not declares_model(cls):
        return {}
    return {name: info.default for name, info in _declared_model(cls).model_fields.items() if _fixed(info)}


def _fields(cls: type, supplied: tuple[str, ...]) -> tuple[dict[str, Any], bool, bool] | None:
    """(fields, open, declared) of ``cls``'s parameters, or None without a readable signature.

    The constructors ``**kwargs`` reach are walked up the MRO; a declared component on the way
    contributes its model's fields and closes the walk (its constructor takes nothing else)."""
    owners = [k for k in cls.__mro__[1:] if declares_model(k) or "__init__" in vars(k) and k is not object]
    if "__init__" in vars(cls):
        owners.insert(0, cls)
    if not owners:
        return {}, False, False
    fields: dict[str, Any] = {}
    declared = False
    for owner in owners:
        if declares_model(owner):
            for name, field in _user_model(_declared_model(owner)).model_fields.items():
                fields.setdefault(name, (field.annotation, field))
            return fields, False, True
        init = vars(owner)["__init__"]
        try:
            signature = inspect.signature(init)
        except (TypeError, ValueError):
            return None
        forwards = False
        for p in signature.parameters.values():
            if p.kind is p.VAR_KEYWORD:
                forwards = True
                continue
            if p.kind is p.VAR_POSITIONAL or p.name == "self" or p.name in supplied or p.name in fields:
                continue
            info = _declared_field(cls, p.name)
            if info is not None:
                declared = True
                if p.default is not p.empty and not _same(p.default, info.default):
                    info = copy.copy(info)  # the signature's default is what a build without it uses
                    info.default = p.default
                fields[p.name] = (info.annotation, info)  # the declared type and bounds
            else:
                default = ... if p.default is p.empty else p.default
                fields[p.name] = (_annotation(p, getattr(init, "__globals__", {})), default)
        if not forwards:
            return fields, False, declared
    return fields, True, declared


@cache
def _model(cls: type, supplied: tuple[str, ...]) -> type[BaseModel] | None:
    if declares_model(cls):
        return _user_model(_declared_model(cls))
    own = declared_params(cls)
    found = _fields(cls, supplied)
    if found is None:
        return own
    fields, open_, _ = found
    if own is not None and not open_ and set(own.model_fields) == set(fields):
        return own  # the declaration is the whole model (its validators included)
    config = ConfigDict(extra="allow" if open_ else "forbid", strict=True, frozen=True)
    try:
        model = create_model(f"{cls.__name__}Params", __config__=config, **fields)
    except Exception:  # an annotation pydantic cannot model (a plug-in's own type): leave it unchecked
        return None
    # A forward reference that names nothing would fail at validation time: leave it unchecked too.
    return model if model.__pydantic_complete__ else None


def params_model(cls: Any, supplied: tuple[str, ...] = ()) -> type[BaseModel] | None:
    """The parameter model of a component class (declared or derived): the keys a scenario may
    set; None when its constructor's signature cannot be read.

    Parameters
    ----------
    cls : type
        The component class.
    supplied : tuple of str
        Constructor parameters the simulator passes itself (an algorithm's ``setup``), left out.
    """
    if not isinstance(cls, type):
        return None
    return _model(cls, tuple(supplied))


def parameter_values(cls: Any, given: Mapping[str, Any], supplied: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every parameter of ``cls`` with the value a build with ``given`` uses: the model's defaults
    filled in, a declared component's :data:`FIXED` fields included (what ``resolved.yaml`` records).

    Parameters
    ----------
    cls : type
        The component class.
    given : mapping
        The parameters the scenario gives.
    supplied : tuple of str
        Parameters the simulator passes itself, left out.

    Returns
    -------
    dict
        In the model's field order, then any key a ``**kwargs`` constructor keeps open; ``given``
        as it is for a class without a model.  Values are the ones a build passes on (the given
        value where given, else the default).
    """
    given = {k: v for k, v in given.items() if k not in supplied}
    model = params_model(cls, tuple(supplied))
    if model is None:
        return dict(given)
    out = {name: given[name] if name in given else info.get_default(call_default_factory=True)
           for name, info in model.model_fields.items() if name in given or not info.is_required()}
    out.update(fixed_values(cls))
    for name, value in given.items():
        out.setdefault(name, value)
    return out


def is_declared(cls: Any, supplied: tuple[str, ...] = ()) -> bool:
    """True when a parameter of ``cls`` has a declared field (in a ``Params`` of ``cls`` or of a
    base class), False when every one is derived from the signature alone."""
    found = _fields(cls, tuple(supplied)) if isinstance(cls, type) else None
    return bool(found and found[2])


# ---------------------------------------------------------------------------------------- errors
_TYPE_WORDS: dict[Any, str] = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def _g(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


_PLURALS = {"an integer": "integers", "a number": "numbers", "a finite number": "finite numbers",
            "true or false": "booleans", "a string": "strings"}


def _tightest(bounds: list[tuple[str, Any]]) -> list[str]:
    """The tightest lower and upper bound of ``(ge|gt|le|lt, value)`` pairs, in words (a field may
    carry a range and a stricter bound of its own: ``> 0`` beside a range's ``>= 0``)."""
    signs = dict(_BOUNDS)
    lower = [(v, attr == "gt") for attr, v in bounds if attr in ("ge", "gt")]
    upper = [(v, attr == "lt") for attr, v in bounds if attr in ("le", "lt")]
    out = []
    if lower:
        value, strict = max(lower)  # the largest bound; on a tie the strict one (True > False)
        out.append(f"{signs['gt' if strict else 'ge']} {_g(value)}")
    if upper:
        value, strict = min(upper, key=lambda b: (b[0], not b[1]))
        out.append(f"{signs['lt' if strict else 'le']} {_g(value)}")
    return out


def _words(ann: Any, metadata: list[Any]) -> str:
    """``ann`` with its constraints ``metadata``, in words."""
    optional = False
    args = typing.get_args(ann)
    if typing.get_origin(ann) in _UNIONS and type(None) in args:
        optional = True
        rest = [a for a in args if a is not type(None)]
        ann = rest[0] if len(rest) == 1 else ann
    if typing.get_origin(ann) is typing.Annotated:
        ann, *more = typing.get_args(ann)
        metadata = [*metadata, *(x for m in more for x in getattr(m, "metadata", [m]))]
    origin = typing.get_origin(ann)
    if origin in _UNIONS:  # a number or a keyword: each member in words
        text = " or ".join(_words(a, metadata) for a in args if a is not type(None))
    elif origin is typing.Literal:
        choices = typing.get_args(ann)
        text = repr(choices[0]) if len(choices) == 1 else "one of " + ", ".join(str(a) for a in choices)
    elif origin in _SEQUENCES:
        item = _words((typing.get_args(ann) or (Any,))[0], [])
        lengths = {attr: getattr(m, attr) for m in metadata for attr in ("min_length", "max_length")
                   if getattr(m, attr, None) is not None}
        count = (f"{lengths['min_length']} " if lengths.get("min_length") == lengths.get("max_length")
                 and lengths else "")
        word, _, bounds = item.partition(" >") if " >" in item else (item, "", "")
        text = f"a list of {count}{_PLURALS.get(word, word)}" + (f" >{bounds}" if bounds else "")
    else:
        text = _TYPE_WORDS.get(ann) or getattr(ann, "__name__", None) or str(ann).replace("typing.", "")
        ranges = [m for m in metadata if isinstance(m, Range)]
        if ann is float and (ranges or any(getattr(m, "allow_inf_nan", True) is False for m in metadata)):
            text = "a finite number"
        found = [(attr, getattr(m, attr)) for m in metadata for attr, _ in _BOUNDS
                 if getattr(m, attr, None) is not None]  # annotated_types' Ge, Gt, Le, Lt
        for rng in ranges:
            found.append(("gt" if rng.low_open else "ge", float(rng.low)))
            if rng.high != float("inf"):
                found.append(("le", float(rng.high)))
        limits = _tightest(found)
        if limits:
            text += " " + " and ".join(limits)
    return ("null or " if optional else "") + text


def _range_of(info: FieldInfo) -> Range | None:
    """The :class:`~sfl_sim.kit.ranges.Range` bounding a field (or the number in an optional or
    keyword-or-number field), if any."""
    nested = [m for ann in _annotations_in(info.annotation) if typing.get_origin(ann) is typing.Annotated
              for m in typing.get_args(ann)[1:]]
    found = [m for m in [*nested, *info.metadata] if isinstance(m, Range)]
    return found[-1] if found else None


def _range_note(rng: Range) -> str:
    return f"{rng.unit}: {rng.reason}" if rng.unit else rng.reason


def field_doc(info: FieldInfo) -> str | None:
    """What a declared field is (its :class:`Doc`), or None."""
    docs = [m.text for m in info.metadata if isinstance(m, Doc)]
    return docs[-1] if docs else None


def allowed_text(info: FieldInfo) -> str:
    """What a field accepts, in words: ``a finite number >= 0``, ``one of batch, local_data``,
    ``a list of 5 integers >= 1``; a range's reason in brackets."""
    text = _words(info.annotation, list(info.metadata))
    rng = _range_of(info)
    note = info.description or (_range_note(rng) if rng is not None else None)
    return text + (f" ({note})" if note else "")


def _annotations_in(ann: Any) -> list[Any]:
    """``ann`` and every annotation nested in it."""
    return [ann, *(a for arg in typing.get_args(ann) for a in _annotations_in(arg))]


def describe_error(exc: ValidationError, model: type[BaseModel]) -> str:
    """One line for the first error of ``exc``: ``NAME: got VALUE; allowed: WHAT``."""
    err = exc.errors(include_url=False)[0]
    loc = err["loc"]
    name = str(loc[0]) if loc else "parameters"
    info = model.model_fields.get(name)
    # pydantic names the union member that failed in the location ("sigma_db.constrained-float"):
    # a reader wants the field and the list index only
    union = info is not None and any(typing.get_origin(a) in _UNIONS for a in _annotations_in(info.annotation))
    where = name + "".join(f"[{p}]" if isinstance(p, int) else ("" if union else f".{p}") for p in loc[1:])
    value = err.get("input")
    if err["type"] == "extra_forbidden":
        return f"{where}: unknown parameter (value {value!r}); allowed: {', '.join(model.model_fields) or 'none'}"
    if err["type"] == "missing":
        return f"{where}: missing; allowed: {allowed_text(info) if info is not None else 'a value'}"
    if err["type"] in ("value_error", "assertion_error") and not loc:  # a check between parameters
        return str(err["msg"]).split(", ", 1)[-1]
    if err["type"] in ("value_error", "assertion_error"):
        return f"{where}: got {value!r}; allowed: {str(err['msg']).split(', ', 1)[-1]}"
    if info is None:
        return f"{where}: got {value!r}; allowed: {err['msg'][0].lower()}{err['msg'][1:]}"
    return f"{where}: got {value!r}; allowed: {allowed_text(info)}"  # for a list item too: the field's rule


def validate_params(cls: Any, params: Mapping[str, Any], supplied: tuple[str, ...] = ()) -> str | None:
    """Check ``params`` (the scenario's keys beside ``name``) against ``cls``'s parameter model.

    Returns
    -------
    str or None
        None when they pass (or ``cls`` has no model), else the one-line reason.
    """
    model = params_model(cls, supplied)
    if model is None:
        return None
    given = {k: v for k, v in params.items() if k not in supplied}
    try:
        model.model_validate(given)
    except ValidationError as exc:
        return describe_error(exc, model)
    return None


_SECTION = re.compile(r"^(\w[\w ]*)\n-{3,}$", re.M)


def doc_descriptions(cls: Any) -> dict[str, str]:
    """Parameter name -> its description: a declared field's :class:`Doc`; else (a plug-in) the
    numpy-style ``Parameters`` section of the class's docstring or, for a parameter it does not
    describe, of the nearest base's; one line each."""
    out: dict[str, str] = {}
    model = params_model(cls)
    for name, info in (model.model_fields.items() if model is not None else ()):
        text = field_doc(info)
        if text:
            out[name] = text
    for k in getattr(cls, "__mro__", (cls,)):
        doc = k.__doc__ if isinstance(k.__doc__, str) else ""
        for name, text in _doc_section(inspect.cleandoc(doc)).items():
            out.setdefault(name, text)
    return out


def _doc_section(doc: str) -> dict[str, str]:
    sections = list(_SECTION.finditer(doc))
    out: dict[str, str] = {}
    for i, section in enumerate(sections):
        if section.group(1).strip() != "Parameters":
            continue
        end = sections[i + 1].start() if i + 1 < len(sections) else len(doc)
        names: list[str] = []
        for line in doc[section.end():end].splitlines():
            if line and not line[0].isspace():  # "name : type" or "a, b : type"
                names = [n.strip() for n in line.split(":", 1)[0].split(",")]
                for n in names:
                    out.setdefault(n, "")
            elif line.strip() and names:
                for n in names:
                    out[n] = f"{out[n]} {line.strip()}".strip()
    return {k: v for k, v in out.items() if v}


def params_schema(cls: Any, supplied: tuple[str, ...] = ()) -> dict[str, Any]:
    """JSON Schema of ``cls``'s parameters: ``{"properties": ..., "required": [...], "$defs": ...,
    "additionalProperties": bool}``; an unreadable or unmodelable class gives an open object."""
    model = params_model(cls, supplied)
    if model is None:
        return {"properties": {}, "additionalProperties": True}
    try:
        schema = model.model_json_schema()
    except Exception:  # a field type without a JSON form (e.g. a tensor): its name only
        return {"properties": {name: {} for name in model.model_fields},
                "additionalProperties": model.model_config.get("extra") == "allow"}
    schema.pop("title", None)
    schema.pop("type", None)
    schema.setdefault("properties", {})
    described = doc_descriptions(cls)
    for name, prop in schema["properties"].items():
        info = model.model_fields.get(name)
        rng = _range_of(info) if info is not None else None
        if rng is not None and "description" not in prop:  # a declared field's range: its reason
            prop["description"] = _range_note(rng)
        if name in described:  # the parameter's own words first, a range's reason after them
            prop["description"] = described[name] + (f" ({prop['description']})" if "description" in prop else "")
    schema["additionalProperties"] = model.model_config.get("extra") == "allow"
    return schema
