"""What this installation offers: every registered component, and the package version.

``sfl-sim list [KIND]`` prints, for every registry (algorithms, models, datasets, partitioners,
client selectors, availability models, compressors, device energy models and each channel kind of
:data:`sfl_sim.channel.REGISTRIES`), each short name with the
first line of its docstring and its constructor parameters with their defaults — the names a
scenario may use, and the keys it may put beside ``name``.  Components registered by installed
packages through entry points (``sfl_sim.<kind>``) are listed too.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from sfl_sim.channel.kinds import CHANNEL_KINDS

__all__ = ["KINDS", "UnknownKindError", "Entry", "package_version", "registries", "resolve_kinds",
           "entries", "parameters", "listing"]

#: Every kind of component, in listing order, with the scenario field that names one (the channel
#: kinds from :data:`sfl_sim.channel.CHANNEL_KINDS`).
KINDS: dict[str, str] = {
    "algorithm": "algorithms[].name",
    "model": "model.name, parameters in model.params",
    "dataset": "data.dataset.name",
    "partitioner": "data.partition.name",
    "selector": "clients.selection.name",
    "availability": "clients.availability.name",
    "compressor": "compression.activations/gradients/updates/model_download.name (top level or per algorithm)",
    "energy": "energy.device.name",
    "handover_policy": "server.edge.on_handover.name",
    **{kind.name: f"{kind.field}.name" for kind in CHANNEL_KINDS},
}

#: A group name accepted by :func:`resolve_kinds`: every channel kind.
CHANNEL_GROUP = "channel"



class UnknownKindError(ValueError):
    """``sfl-sim list`` was given a kind that names no registry."""


@dataclass(frozen=True)
class Entry:
    """One registered component.

    Attributes
    ----------
    name : str
        The short name a scenario uses.
    summary : str
        First line of the class's (or factory's) docstring; ``""`` when it has none.
    params : list of str
        Constructor parameters a scenario may set: ``name=default``, a bare ``name`` when it is
        required, ``*args`` / ``**kwargs`` as written.
    """

    name: str
    summary: str
    params: list[str]


def package_version() -> str:
    """Version of the installed ``sfl-sim`` distribution (``importlib.metadata``).

    Returns ``"unknown (not installed)"`` when the package runs from a source tree that was never
    installed.
    """
    try:
        return metadata.version("sfl-sim")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def registries() -> dict[str, Any]:
    """Every registry by kind (the keys of :data:`KINDS`), importing the packages that fill them."""
    from sfl_sim.algorithms import ALGORITHMS  # imports torch: only when a listing is asked for
    from sfl_sim.channel import REGISTRIES
    from sfl_sim.clients.availability import AVAILABILITY
    from sfl_sim.clients.energy import ENERGY
    from sfl_sim.clients.selection import SELECTORS
    from sfl_sim.compression import COMPRESSORS
    from sfl_sim.data import DATASETS, PARTITIONERS
    from sfl_sim.engine.edge import HANDOVER_POLICIES
    from sfl_sim.models import MODELS

    found = {"algorithm": ALGORITHMS, "model": MODELS, "dataset": DATASETS, "partitioner": PARTITIONERS,
             "selector": SELECTORS, "availability": AVAILABILITY, "compressor": COMPRESSORS,
             "energy": ENERGY, "handover_policy": HANDOVER_POLICIES,
             **REGISTRIES}
    return {kind: found[kind] for kind in KINDS}


def resolve_kinds(text: str | None) -> list[str]:
    """The kinds ``text`` asks for.

    Parameters
    ----------
    text : str or None
        ``None`` for every kind; a kind, singular or plural (``algorithm``, ``algorithms``), any
        case; or ``channel`` for every channel kind.

    Raises
    ------
    UnknownKindError
        One line naming ``text`` and the allowed kinds.
    """
    if text is None:
        return list(KINDS)
    key = text.strip().lower()
    if key in (CHANNEL_GROUP, CHANNEL_GROUP + "s"):
        return list(KINDS)[list(KINDS).index("placement"):]
    for kind in KINDS:
        if key in (kind, kind + "s"):
            return [kind]
    raise UnknownKindError(f"unknown kind {text!r}; allowed: {', '.join(KINDS)}, {CHANNEL_GROUP} "
                           f"(singular or plural, e.g. algorithms)")


def _default_text(value: Any) -> str:
    """``repr``, except large floats in the scenario files' ``2e9`` form, not ``2000000000.0``."""
    if isinstance(value, float) and abs(value) >= 1e5:
        mantissa, exponent = f"{value:.15e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    return repr(value)


def parameters(obj: Any, skip: tuple[str, ...] = ()) -> list[str]:
    """Constructor parameters of a class (or a factory's parameters) as ``name=default`` strings.

    Parameters
    ----------
    obj : class or callable
    skip : tuple of str
        Parameter names to leave out (those the simulator supplies).

    Returns
    -------
    list of str
        In signature order; ``self`` is never included; ``[]`` when the signature cannot be read.
    """
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # some builtins and C extensions have no readable signature
        return []
    out = []
    for p in signature.parameters.values():
        if p.name in skip or p.name == "self":
            continue
        if p.kind is p.VAR_POSITIONAL:
            out.append("*" + p.name)
        elif p.kind is p.VAR_KEYWORD:
            out.append("**" + p.name)
        elif p.default is p.empty:
            out.append(p.name)
        else:
            out.append(f"{p.name}={_default_text(p.default)}")
    return out


def _summary(obj: Any) -> str:
    # The object's own docstring: a subclass without one should not borrow its base's words.
    doc = obj.__doc__ if isinstance(obj.__doc__, str) else ""
    lines = inspect.cleandoc(doc).splitlines()
    return lines[0].strip() if lines else ""


def entries(kind: str) -> list[Entry]:
    """Every registered component of ``kind`` (a key of :data:`KINDS`), sorted by name."""
    registry = registries()[kind]
    skip = registry.supplied  # what the simulator passes itself, not a scenario key
    return [Entry(name, _summary(obj), parameters(obj, skip))
            for name in registry.names() for obj in (registry.get(name),)]


def listing(text: str | None = None) -> str:
    """What ``sfl-sim list [KIND]`` prints.

    One block per kind: a heading with the number of components and the scenario field that
    names them, then per component its name and summary, and below them its parameters.

    Raises
    ------
    UnknownKindError
        If ``text`` names no kind (see :func:`resolve_kinds`).
    """
    blocks = []
    for kind in resolve_kinds(text):
        found = entries(kind)
        width = max((len(e.name) for e in found), default=0)
        lines = [f"{kind} ({len(found)}) -- scenario: {KINDS[kind]}"]
        for e in found:
            lines.append(f"  {e.name:<{width}}  {e.summary or '(no description)'}")
            params = ", ".join(e.params) if e.params else "none"
            lines.append(f"  {'':<{width}}  parameters: {params}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
