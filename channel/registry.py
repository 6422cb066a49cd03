"""Name → class registries with ``package.module:Class`` ids and entry points.

One mechanism serves every swappable part of the project (channel components here; algorithms,
models, datasets and partitioners in ``sfl_sim``).  It lives in ``channel`` because ``channel`` may
import nothing of ``sfl_sim``, while ``sfl_sim`` may import ``channel``.

A spec is either a registered short name (``"tr36814"``) or an import path
``"package.module:Class"`` that is imported on demand, so a researcher can name a class in their
own file straight from YAML.  Third-party packages can also register through the entry-point
group ``sfl_sim.<kind>`` (for example ``sfl_sim.pathloss``).
"""
from __future__ import annotations

import difflib
import importlib
from importlib import metadata
from typing import Any, Callable, Dict, List, TypeVar

T = TypeVar("T")


class UnknownComponentError(ValueError):
    """Raised when a spec names no registered component and no importable class."""


class Registry:
    """A map from short names to classes (or factories) of one kind of component.

    Parameters
    ----------
    kind : str
        What the registry holds, e.g. ``"pathloss"``; used in error messages and as the suffix of
        the entry-point group ``sfl_sim.<kind>``.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: Dict[str, Callable[..., Any]] = {}
        self._entry_points_loaded = False

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering a class (or factory) under ``name``.

        Raises
        ------
        ValueError
            If ``name`` is already taken by a different object.
        """

        def decorator(obj: T) -> T:
            existing = self._entries.get(name)
            if existing is not None and existing is not obj:
                raise ValueError(f"{self.kind} name {name!r} is already registered to {existing!r}")
            self._entries[name] = obj  # type: ignore[assignment]
            return obj

        return decorator

    def names(self) -> List[str]:
        """Sorted list of the registered short names (entry points included)."""
        self._load_entry_points()
        return sorted(self._entries)

    def get(self, spec: str) -> Callable[..., Any]:
        """Resolve ``spec`` (short name or ``package.module:Class``) to the class it names.

        Raises
        ------
        UnknownComponentError
            With the known names and, when one is close, a "did you mean" hint.
        """
        if not isinstance(spec, str) or not spec:
            raise UnknownComponentError(
                f"{self.kind} must be a name or 'package.module:Class', got {spec!r}; "
                f"known names: {', '.join(self.names())}"
            )
        if spec in self._entries:
            return self._entries[spec]
        if ":" in spec:
            return _import_object(spec, self.kind)
        self._load_entry_points()
        if spec in self._entries:
            return self._entries[spec]
        known = self.names()
        close = difflib.get_close_matches(spec, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownComponentError(
            f"unknown {self.kind} {spec!r}{hint}; known names: {', '.join(known)}; "
            f"or give 'package.module:Class'"
        )

    def create(self, spec: str, **params: Any) -> Any:
        """Resolve ``spec`` and call it with ``params``.

        Raises
        ------
        UnknownComponentError
            If ``spec`` cannot be resolved.
        ValueError
            If the class rejects ``params`` (the message names the parameters it accepts).
        """
        factory = self.get(spec)
        try:
            return factory(**params)
        except TypeError as exc:
            raise ValueError(f"{self.kind} {spec!r} rejected parameters {sorted(params)}: {exc}") from exc

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        for ep in metadata.entry_points(group=f"sfl_sim.{self.kind}"):
            if ep.name not in self._entries:
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
    a list of imports.
    """
    import pkgutil

    package = importlib.import_module(package_name)
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")
