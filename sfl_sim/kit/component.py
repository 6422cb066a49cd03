"""A component whose parameters are declared once, in its nested ``Params`` model.

Every swappable part the project ships (a path-loss model, a selector, an algorithm...) is a
:class:`Component`: its ``Params`` (a :class:`~sfl_sim.kit.params.ParamsModel`) states each
parameter's name, type, default, bounds, choices and description, and everything else is derived
from it:

- the constructor: ``Cls(**values)`` (or positionally, in the model's field order) validates the
  values with the model and keeps them as :attr:`Component.params`; a class whose parameters need
  more work than storing them does it in ``__post_init__``; an algorithm or a model, whose
  constructor also takes what the simulator supplies (a training setup, an input shape), passes its
  parameters on with ``super().__init__(**params)``;
- ``inspect.signature(Cls)`` (for ``help``, IDEs and ``sfl-sim list``) and the ``Parameters``
  section of the class docstring, generated from the model;
- the JSON Schema, the registry's validation and the ``resolved.yaml`` record
  (:mod:`sfl_sim.kit.params`).

A subclass extends its base's model (``class Params(Base.Params): ...``) or inherits it; a field
marked :data:`~sfl_sim.kit.params.FIXED` is a base's parameter the subclass sets itself.  A class of
one's own need not be a Component: a plain class with a typed constructor works (its model is
derived from its signature).
"""
from __future__ import annotations

import inspect
import re
from typing import Any, ClassVar

import numpy as np

from sfl_sim.kit.params import FIXED, ParamsModel, field_doc

__all__ = ["Component", "NoParams"]


class NoParams(ParamsModel):
    """The model of a component without parameters."""


def _plain(value: Any) -> Any:
    """Python data for the model's strict types: numpy scalars and arrays as Python numbers and lists
    (a call from Python may pass them; a scenario never does)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _user_fields(model: type[ParamsModel]) -> list[str]:
    return [name for name, info in model.model_fields.items() if not any(m is FIXED for m in info.metadata)]


class Component:
    """Base of a component whose parameters are its ``Params`` model (see the module docstring).

    Attributes
    ----------
    params : ParamsModel
        The validated parameters (frozen), the :data:`~sfl_sim.kit.params.FIXED` ones included.
    """

    class Params(ParamsModel):
        """No parameters (a component that has some declares its own ``Params``)."""

    #: Constructor arguments the simulator supplies before the parameters (shown first in the
    #: signature; the class's own ``__init__`` takes them).
    supplied_args: ClassVar[tuple[str, ...]] = ()
    params: ParamsModel

    def __init__(self, *args: Any, **values: Any) -> None:
        model = type(self).Params
        names = _user_fields(model)
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes {len(names)} parameter(s) ({', '.join(names) or 'none'}), "
                            f"got {len(args)} positional values")
        for name, value in zip(names, args, strict=False):  # positional values fill the first fields
            if name in values:
                raise TypeError(f"{type(self).__name__} got {name!r} twice")
            values[name] = value
        fixed = sorted(set(values) & (set(model.model_fields) - set(names)))
        if fixed:
            raise ValueError(f"{fixed[0]}: unknown parameter (value {values[fixed[0]]!r}); allowed: "
                             f"{', '.join(names) or 'none'} ({type(self).__name__} sets {fixed[0]} itself)")
        self.params = model.parse({k: _plain(v) for k, v in values.items()})
        self.__post_init__()

    def __post_init__(self) -> None:
        """What the class computes from its parameters once they are validated (default: nothing)."""

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self.params, name)!r}" for name in _user_fields(type(self).Params))
        return f"{type(self).__name__}({shown})"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own_init = vars(cls).get("__init__")
        # A subclass with a constructor of its own that names parameters (a plug-in subclassing a
        # shipped component) is read from its signature instead; otherwise the model is the truth.
        declared = own_init is None or _takes_only_params(own_init, cls.supplied_args)
        cls.__params_declared__ = declared  # type: ignore[attr-defined]  # read by kit.params.declares_model
        if declared:
            cls.__signature__ = _signature(cls)  # type: ignore[attr-defined]
            cls.__doc__ = _with_parameters_section(cls)
        else:
            cls.__signature__ = None  # type: ignore[attr-defined]  # inspect reads its __init__


def _takes_only_params(init: Any, supplied: tuple[str, ...]) -> bool:
    """Whether a constructor takes the supplied arguments and ``*args``/``**params`` only."""
    try:
        signature = inspect.signature(init)
    except (TypeError, ValueError):
        return False
    for p in signature.parameters.values():
        if p.name == "self" or p.name in supplied or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        return False
    return True


def _signature(cls: type[Component]) -> inspect.Signature:
    """``(supplied..., field=default, ...)``: what calling the class takes."""
    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in cls.supplied_args]
    for name, info in cls.Params.model_fields.items():
        if any(m is FIXED for m in info.metadata):
            continue
        default = inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
        params.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                        annotation=info.annotation))
    return inspect.Signature(params)


_HEADING = "Parameters\n----------"
_NEXT_SECTION = re.compile(r"^\w[\w ]*\n-{3,}$", re.M)


def _with_parameters_section(cls: type[Component]) -> str:
    """The class docstring with a ``Parameters`` section generated from its model (replacing one
    the docstring had: the model is where parameters are described)."""
    own = vars(cls).get("__doc__")
    doc = inspect.cleandoc(own) if isinstance(own, str) else ""
    lines = []
    for name, info in cls.Params.model_fields.items():
        if any(m is FIXED for m in info.metadata):
            continue
        kind = getattr(info.annotation, "__name__", None) or str(info.annotation).replace("typing.", "")
        default = "" if info.is_required() else f", default {info.get_default(call_default_factory=True)!r}"
        lines.append(f"{name} : {kind}{default}")
        text = field_doc(info)
        if text:
            lines.append(f"    {text}")
    if not lines:
        return doc
    if _HEADING in doc:  # the supplied arguments are described already: the parameters follow them
        start = doc.index(_HEADING) + len(_HEADING)
        following = _NEXT_SECTION.search(doc, start)
        end = following.start() if following else len(doc)
        return doc[:end].rstrip() + "\n" + "\n".join(lines) + ("\n\n" + doc[end:].lstrip() if following else "")
    section = "\n".join([_HEADING, *lines])
    head, sep, rest = doc.partition("\n\n")
    return f"{head}\n\n{section}" + (f"\n\n{rest}" if sep else "")
