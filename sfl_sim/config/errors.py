"""Pydantic's validation errors as one line: ``field: got VALUE; allowed: WHAT``.

:func:`format_validation_error` follows the first error's location through the model classes to
the field it names (dropping pydantic's union and validator tags), and takes "allowed" from the
field's :class:`~sfl_sim.config.fields.Allowed` metadata; an unknown key lists the keys allowed
at its level with a "did you mean" hint.  Checks between fields raise :class:`CrossFieldError`,
which carries its own field path.
"""
from __future__ import annotations

import difflib
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from sfl_sim.config.fields import Allowed

__all__ = ["CrossFieldError", "format_validation_error", "validate_nested"]


class CrossFieldError(ValueError):
    """A check between fields; carries its own field path (pydantic's would be the model's root).

    Parameters
    ----------
    where : str
        The dotted field the message names.
    value : object
        The value given.
    allowed_text : str
        What is allowed.
    what : str
        The word before the value (``got``; ``labels`` for a list of labels).
    relative : bool
        ``where`` is relative to the model whose validator raised it (a section used in several
        places, e.g. ``training`` and an algorithm's ``training`` block), and the error's
        location is prefixed when formatted.
    """

    def __init__(self, where: str, value: Any, allowed_text: str, what: str = "got", relative: bool = False) -> None:
        super().__init__(f"{where}: {what} {value!r}; allowed: {allowed_text}")
        self.relative = relative

    def with_message(self, message: str) -> CrossFieldError:
        """The same error with a prebuilt one-line message."""
        self.args = (message,)
        return self


_TYPE_WORDS = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "float_type": "a number", "float_parsing": "a number", "finite_number": "a finite number",
    "bool_type": "true or false", "string_type": "a string", "list_type": "a list",
    "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
    "none_required": "null",
}


def _is_model(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseModel)


def _walk(model: type[BaseModel], loc: Sequence[Any]) -> tuple[str, FieldInfo | None, type[BaseModel]]:
    """Follow a pydantic error location through the model classes.

    Returns the dotted path of the real fields (union/validator tags dropped), the FieldInfo of
    the last field (or None) and the model class the last key belongs to (for unknown keys).
    """
    path = ""
    info: FieldInfo | None = None
    current: type[BaseModel] | None = model
    parent = model
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            continue
        if current is not None and part in current.model_fields:
            parent = current
            info = current.model_fields[part]
            path = f"{path}.{part}" if path else part
            current = _inner_model(info.annotation)
            continue
        if current is not None and current.model_config.get("extra") != "allow":
            parent = current
            path = f"{path}.{part}" if path else str(part)  # an unknown key
            info, current = None, None
            continue
        if current is not None and current.model_config.get("extra") == "allow":
            path = f"{path}.{part}" if path else str(part)  # a component parameter
        # else: a union/function tag such as 'int' or 'function-after[...]': not a field
    return path, info, parent


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    """The model class inside ``Optional[...]``/``List[...]``/``Annotated[...]``, if any."""
    stack = [annotation]
    while stack:
        ann = stack.pop()
        if _is_model(ann):
            return typing.cast(type[BaseModel], ann)
        stack.extend(typing.get_args(ann))
    return None


def _allowed_text(info: FieldInfo | None) -> str | None:
    if info is None:
        return None
    texts = [m.text for m in info.metadata if isinstance(m, Allowed)]
    if not texts:  # Optional[Annotated[...]] keeps the metadata inside the annotation
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


def format_validation_error(exc: ValidationError, model: type[BaseModel]) -> str:
    """One line for the first error of ``exc``: ``field: got VALUE; allowed: WHAT``.

    Parameters
    ----------
    exc : pydantic.ValidationError
        From ``model.model_validate``.
    model : type
        The model that was validated (its fields name the error's location).

    Returns
    -------
    str
        Unknown keys list the keys allowed at that level with a "did you mean" hint.
    """
    err = exc.errors(include_url=False)[0]
    ctx = err.get("ctx") or {}
    where, info, parent = _walk(model, err["loc"])
    if isinstance(ctx.get("error"), CrossFieldError):
        return f"{where}.{ctx['error']}" if ctx["error"].relative and where else str(ctx["error"])
    if err["type"] == "nested":  # a sub-model's own one-line error, relative to this field
        return f"{where}.{ctx['message']}" if where else str(ctx["message"])
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


def validate_nested(model: type[BaseModel], data: Mapping[str, Any]) -> dict[str, Any]:
    """Validate ``data`` with ``model`` and dump it (defaults filled), from inside a validator.

    Raises
    ------
    pydantic_core.PydanticCustomError
        ``nested``: the failure's one line relative to the field being validated, which
        :func:`format_validation_error` prefixes with that field's path.
    """
    try:
        return model.model_validate(dict(data)).model_dump(mode="json")
    except ValidationError as exc:
        raise PydanticCustomError("nested", "{message}", {"message": format_validation_error(exc, model)}) from None
