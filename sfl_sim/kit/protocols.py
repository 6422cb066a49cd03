"""Checking that an object offers what a :class:`typing.Protocol` asks of it, with one-line errors.

``isinstance(obj, Protocol)`` answers yes or no; a user whose plug-in is refused needs to know
which member is missing and what signature it should have.  :func:`missing_members` lists what an
object lacks, :func:`describe_members` writes members as ``loss_db(distance_m)``, and
:func:`check_protocol` raises :class:`ComponentProtocolError` naming the component, the missing
members and the protocol.  Imports only the standard library.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["ComponentProtocolError", "protocol_members", "missing_members", "describe_members", "check_protocol"]


class ComponentProtocolError(TypeError):
    """A component lacks a member its protocol requires (the message names it)."""


def protocol_members(protocol: type) -> dict[str, Callable[..., Any] | None]:
    """The members a protocol requires: name -> the declared function (None for a data member).

    Parameters
    ----------
    protocol : type
        A :class:`typing.Protocol` class.

    Returns
    -------
    dict
        In declaration order, base protocols first.
    """
    members: dict[str, Callable[..., Any] | None] = {}
    for klass in reversed(protocol.__mro__):
        if klass is object or klass is Protocol or not getattr(klass, "_is_protocol", False):
            continue
        for name in getattr(klass, "__annotations__", {}):
            if not name.startswith("_"):
                members.setdefault(name, None)
        for name, value in vars(klass).items():
            # Protocol machinery and dunders start with "_"; a component's members never do.
            if not name.startswith("_") and callable(value):
                members[name] = value
    return members


def missing_members(obj: Any, protocol: type) -> list[str]:
    """Names of the members of ``protocol`` that ``obj`` lacks (a method that is not callable
    counts as missing).

    Parameters
    ----------
    obj : object
        An instance, or a class (then data members are not checked: instances may set them in
        ``__init__``).
    protocol : type
        A :class:`typing.Protocol` class.

    Returns
    -------
    list of str
        Empty when ``obj`` conforms.
    """
    is_class = inspect.isclass(obj)
    missing = []
    for name, declared in protocol_members(protocol).items():
        if declared is None:
            if not is_class and not hasattr(obj, name):
                missing.append(name)
            continue
        value = getattr(obj, name, None)
        if value is None or not callable(value):
            missing.append(name)
    return missing


def describe_members(protocol: type, names: list[str] | None = None) -> str:
    """``"loss_db(distance_m)"``-style text for members of ``protocol`` (all by default)."""
    members = protocol_members(protocol)
    parts = []
    for name in members if names is None else names:
        declared = members.get(name)
        if declared is None:
            parts.append(f"attribute {name}")
            continue
        try:
            params = list(inspect.signature(declared).parameters.values())[1:]
            text = ", ".join(p.name if p.default is inspect.Parameter.empty else f"{p.name}=..." for p in params)
        except (TypeError, ValueError):
            text = "..."
        parts.append(f"{name}({text})")
    return ", ".join(parts)


def _component_name(obj: Any) -> str:
    cls = obj if inspect.isclass(obj) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def check_protocol(obj: Any, protocol: type, what: str) -> Any:
    """Raise unless ``obj`` offers every member of ``protocol``; return ``obj``.

    Parameters
    ----------
    obj : object
        The built component (or its class).
    protocol : type
        E.g. ``PROTOCOLS["pathloss"]``.
    what : str
        Where the component comes from, for the message (e.g. the scenario field
        ``"cell.pathloss"``).

    Returns
    -------
    object
        ``obj`` itself.

    Raises
    ------
    ComponentProtocolError
        One line: ``"cell.pathloss: my_model.Foo lacks loss_db(distance_m);
        sfl_sim.channel.protocols.PathLoss requires loss_db(distance_m)"``.
    """
    missing = missing_members(obj, protocol)
    if missing:
        raise ComponentProtocolError(
            f"{what}: {_component_name(obj)} lacks {describe_members(protocol, missing)}; "
            f"{protocol.__module__}.{protocol.__qualname__} requires {describe_members(protocol)}"
        )
    return obj


def check_protocols(obj: Any, protocols: tuple[type, ...], what: str) -> Any:
    """Raise unless ``obj`` offers every member of one of ``protocols`` (a kind with more than one
    form, e.g. a fading drawn per block or one that evolves in time); return ``obj``.

    Raises
    ------
    ComponentProtocolError
        One line for the first protocol, naming the others it could have met instead.
    """
    if any(not missing_members(obj, protocol) for protocol in protocols):
        return obj
    first, others = protocols[0], protocols[1:]
    missing = missing_members(obj, first)
    instead = "".join(f"; or {p.__module__}.{p.__qualname__}'s {describe_members(p)}" for p in others)
    raise ComponentProtocolError(
        f"{what}: {_component_name(obj)} lacks {describe_members(first, missing)}; "
        f"{first.__module__}.{first.__qualname__} requires {describe_members(first)}{instead}"
    )

