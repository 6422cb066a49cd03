"""Name → class registries with ``package.module:Class`` ids and entry points.

One mechanism serves every swappable part of the project (the channel components of ``channel``;
algorithms, models, datasets, partitioners, selectors and optimizers of ``sfl_sim``).

A spec is either a registered short name (``"tr36814"``) or an import path
``"package.module:Class"`` that is imported on demand, so a researcher can name a class in their
own file straight from YAML.  Third-party packages can also register through the entry-point
group ``sfl_sim.<kind>`` (for example ``sfl_sim.pathloss``).
"""
from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from typing import Any, TypeVar

from sfl_sim.kit.params import params_model, validate_params
from sfl_sim.kit.protocols import check_protocols, describe_members, missing_members

T = TypeVar("T")

__all__ = [
    "Registry",
    "UnknownComponentError",
    "ComponentParameterError",
    "ComponentValueError",
    "check_params",
    "accepted_params",
    "import_submodules",
]


class UnknownComponentError(ValueError):
    """Raised when a spec names no registered component and no importable class."""


class ComponentParameterError(ValueError):
    """A component's constructor does not take the parameters given (the message lists the ones
    it accepts, with a "did you mean" for a misspelt one).

    Attributes
    ----------
    unknown : list of str
        Parameter names the constructor does not take.
    accepted : list of str
        Parameter names it takes (empty when it takes ``**kwargs``).
    """

    def __init__(self, message: str, unknown: Sequence[str] = (), accepted: Sequence[str] = (),
                 detail: str | None = None) -> None:
        super().__init__(message)
        self.unknown = list(unknown)
        self.accepted = list(accepted)
        self.detail = detail


class ComponentValueError(ComponentParameterError):
    """A parameter the constructor takes has a value its parameter model refuses (wrong type, out
    of bounds, not one of the choices); see :mod:`sfl_sim.kit.params`.

    Attributes
    ----------
    detail : str
        ``NAME: got VALUE; allowed: WHAT`` (the parameter, without the component's label).
    """


def _what_is(obj: Any) -> str:
    """A few words naming what ``obj`` is, for "... is a function, not a class"."""
    if inspect.ismodule(obj):
        return "a module"
    if inspect.isroutine(obj):
        return "a function"
    return f"a {type(obj).__name__} object"


def accepted_params(cls: Any) -> list[str] | None:
    """Keyword parameters the constructor of ``cls`` accepts, or None when it takes ``**kwargs``
    (any name) or has no inspectable signature."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return None
    params = sig.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    keyword_kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in params if p.kind in keyword_kinds]


def check_params(
    cls: Any, params: Mapping[str, Any], kind: str, name: str | None = None, *, args: Sequence[Any] = ()
) -> None:
    """Check, without calling it, that ``cls(*args, **params)`` binds to the constructor.

    Parameters
    ----------
    cls : type
        The component class.
    params : mapping of str to object
        Keyword parameters (as given in a scenario).
    kind : str
        Kind of component, for the message (``"pathloss"``, ``"model"``...).
    name : str, optional
        The name the user gave (``"log_distance"``); default the class's name.
    args : sequence, optional
        Positional arguments the caller adds (e.g. a model's input shape).

    Raises
    ------
    ComponentParameterError
        One line, e.g. ``pathloss 'log_distance' rejected parameters: unknown 'exponnt' (did you
        mean 'exponent'?); accepted: exponent, reference_distance_m, ...``.  A constructor with
        ``**kwargs`` accepts any name; one without an inspectable signature is not checked.
    """
    label = f"{kind} {name if name is not None else getattr(cls, '__qualname__', repr(cls))!r}"
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return
    accepted = accepted_params(cls)
    shown = ", ".join(accepted) if accepted else "none"
    retired = getattr(getattr(cls, "Params", None), "retired", {})  # refused by the model, with why
    if accepted is not None:
        unknown = [k for k in params if k not in accepted and k not in retired]
        if unknown:
            parts = []
            for key in unknown:
                close = difflib.get_close_matches(key, accepted, n=1)
                parts.append(f"unknown {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise ComponentParameterError(
                f"{label} rejected parameters: {', '.join(parts)}; accepted: {shown}", unknown, accepted
            )
    try:
        bound = sig.bind_partial(*args, **{k: v for k, v in params.items() if k not in retired})
    except TypeError as exc:
        raise ComponentParameterError(
            f"{label}: {exc}; accepted: {shown}", [], accepted or []
        ) from None
    missing = [
        p.name for p in sig.parameters.values()
        if p.default is inspect.Parameter.empty and p.name not in bound.arguments
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if missing:
        raise ComponentParameterError(
            f"{label}: missing required parameter {', '.join(repr(m) for m in missing)}; "
            f"accepted: {shown}", [], accepted or []
        )


class Registry:
    """A map from short names to classes of one kind of component.

    Parameters
    ----------
    kind : str
        What the registry holds, e.g. ``"pathloss"``; used in error messages and as the suffix of
        the entry-point group ``sfl_sim.<kind>``.
    protocol : type, optional
        The :class:`typing.Protocol` every component of this kind satisfies (see
        :mod:`sfl_sim.channel.protocols` for the channel kinds).  When given, :meth:`get` refuses a class
        that lacks one of its methods and :meth:`build` checks the built instance.
    alternatives : tuple of type, optional
        Other protocols a component of this kind may satisfy instead of ``protocol`` (a fading
        that evolves in time instead of one drawn per block).
    supplied : tuple of str, optional
        Constructor parameters the project passes itself (an algorithm's ``setup``, a model's
        ``input_shape``): never a scenario's, so left out of the parameter model.

    Notes
    -----
    Every entry is a class: :meth:`register` refuses anything else, and :meth:`get` refuses an
    import path or entry point that names a function, a module or any other object (a scenario
    naming ``os:system`` must not run it).
    """

    def __init__(self, kind: str, protocol: type | None = None, supplied: Sequence[str] = (),
                 alternatives: Sequence[type] = ()) -> None:
        self.kind = kind
        self.protocol = protocol
        #: ``protocol`` and its alternatives: a component satisfies one of them
        self.protocols: tuple[type, ...] = () if protocol is None else (protocol, *alternatives)
        self.supplied = tuple(supplied)
        self._entries: dict[str, Any] = {}
        self._entry_points_loaded = False

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering a class under ``name``.

        Raises
        ------
        ValueError
            If ``name`` is already taken by a different object.
        TypeError
            If the decorated object is not a class.
        """

        def decorator(obj: T) -> T:
            if not inspect.isclass(obj):
                raise TypeError(f"{self.kind} {name!r}: only classes can be registered, got {_what_is(obj)} {obj!r}")
            existing = self._entries.get(name)
            if existing is not None and existing is not obj:
                raise ValueError(f"{self.kind} name {name!r} is already registered to {existing!r}")
            self._entries[name] = obj
            return obj

        return decorator

    def names(self) -> list[str]:
        """Sorted list of the registered short names (entry points included)."""
        self._load_entry_points()
        return sorted(self._entries)

    def get(self, spec: str) -> type:
        """Resolve ``spec`` (short name or ``package.module:Class``) to the class it names.

        Raises
        ------
        UnknownComponentError
            With the known names and, when one is close, a "did you mean" hint; or when ``spec``
            names something that is not a class.
        ComponentProtocolError
            When the registry has a protocol and the class lacks one of its methods.
        """
        if not isinstance(spec, str) or not spec:
            raise UnknownComponentError(
                f"{self.kind} must be a name or 'package.module:Class', got {spec!r}; "
                f"known names: {', '.join(self.names())}"
            )
        if spec in self._entries:
            return self._checked(spec, self._entries[spec])
        if ":" in spec:
            return self._checked(spec, _import_object(spec, self.kind))
        self._load_entry_points()
        if spec in self._entries:
            return self._checked(spec, self._entries[spec])
        known = self.names()
        close = difflib.get_close_matches(spec, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownComponentError(
            f"unknown {self.kind} {spec!r}{hint}; known names: {', '.join(known)}; "
            f"or give 'package.module:Class'"
        )

    def build(self, spec: str, *args: Any, **params: Any) -> Any:
        """Resolve ``spec``, check ``params`` against its constructor, build it, check the result.

        Parameters
        ----------
        spec : str
            Short name or ``package.module:Class``.
        *args
            Positional arguments the caller adds (not from the user).
        **params
            Constructor parameters (from the scenario).

        Returns
        -------
        object
            The component.

        Raises
        ------
        UnknownComponentError
            If ``spec`` cannot be resolved to a class.
        ComponentParameterError
            If the constructor does not take ``params`` (names the accepted ones).
        ComponentValueError
            If a parameter's value is refused by the class's parameter model
            (:func:`sfl_sim.kit.params.params_model`); the values a constructor gets are the ones given.
        ComponentProtocolError
            If the built object lacks a member of the registry's protocol.
        ValueError
            Whatever the constructor raises for a value out of range.
        """
        cls = self.get(spec)
        check_params(cls, params, self.kind, spec, args=args)
        self.check_values(spec, cls, params)
        try:
            obj = cls(*args, **params)
        except TypeError as exc:
            # The signature bound, so the TypeError comes from inside the constructor.
            raise ComponentParameterError(
                f"{self.kind} {spec!r} rejected parameters {sorted(params)}: {exc}", [], accepted_params(cls) or []
            ) from exc
        if self.protocols:
            check_protocols(obj, self.protocols, f"{self.kind} {spec!r}")
        return obj

    def check_values(self, spec: str, cls: type, params: Mapping[str, Any]) -> None:
        """Refuse ``params`` that ``cls``'s parameter model refuses (:mod:`sfl_sim.kit.params`).

        Raises
        ------
        ComponentParameterError
            For a name the model does not have (with a "did you mean").
        ComponentValueError
            For a value of the wrong type, out of bounds or not one of the choices.
        """
        label = f"{self.kind} {spec!r}"
        model = params_model(cls, self.supplied)
        if model is None:
            return
        given = {k: v for k, v in params.items() if k not in self.supplied}
        if model.model_config.get("extra") != "allow":  # a **kwargs constructor reaching a closed base
            accepted = list(model.model_fields)
            retired = getattr(model, "retired", {})  # refused below, with why they are gone
            unknown = [k for k in given if k not in accepted and k not in retired]
            if unknown:
                close = difflib.get_close_matches(unknown[0], accepted, n=1)
                raise ComponentParameterError(
                    f"{label} rejected parameters: unknown {unknown[0]!r}"
                    + (f" (did you mean {close[0]!r}?)" if close else "")
                    + f"; accepted: {', '.join(accepted) or 'none'}", unknown, accepted)
        reason = validate_params(cls, given, self.supplied)
        if reason is not None:
            raise ComponentValueError(f"{label}: {reason}", [], list(model.model_fields), detail=reason)

    def create(self, spec: str, **params: Any) -> Any:
        """:meth:`build` with keyword parameters only: the form for a component whose every
        constructor argument comes from the scenario."""
        return self.build(spec, **params)

    def _checked(self, spec: str, obj: Any) -> type:
        if not inspect.isclass(obj):
            needs = f" with {describe_members(self.protocol)}" if self.protocol is not None else ""
            raise UnknownComponentError(
                f"{self.kind} {spec!r} is {_what_is(obj)}, not a class; a {self.kind} component must be "
                f"a class{needs}"
            )
        if self.protocols and all(missing_members(obj, p) for p in self.protocols):
            check_protocols(obj, self.protocols, f"{self.kind} {spec!r}")
        return obj

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        for ep in metadata.entry_points(group=f"sfl_sim.{self.kind}"):
            if ep.name not in self._entries:
                # Not checked here: a bad entry point is refused by get() only when it is asked for.
                self._entries[ep.name] = ep.load()


def _import_object(spec: str, kind: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownComponentError(f"{kind} {spec!r}: cannot import module {module_name!r} ({exc})") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UnknownComponentError(f"{kind} {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def import_submodules(package_name: str) -> None:
    """Import every module of a package so that its ``@REGISTRY.register`` decorators run.

    Built-in components register themselves where they are defined; calling this at the end of
    a package's ``__init__`` means a new module (one algorithm per file) is found without editing
    a list of imports.  Subpackages are walked too; a module or package whose name starts with
    ``_`` (private machinery) is left out.
    """
    import pkgutil

    package = importlib.import_module(package_name)
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")
            if info.ispkg:  # a folder of methods (``algorithms/split``): its modules too
                import_submodules(f"{package_name}.{info.name}")
