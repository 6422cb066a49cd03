"""Every Sphinx cross-reference in sfl_sim's source (``:func:``, ``:mod:``, ``:class:``, ``:meth:``,
``:attr:``, ``:data:``, ``:exc:``, ``:obj:``) names something that exists, so a docstring cannot go
on citing a module or function after it moved or was renamed.

A dotted target is imported (the longest importable module prefix, then attributes); a module
answered only by the import names of the old layout (:mod:`sfl_sim._legacy_imports`: a module
object under another name) does not count.  A bare target resolves in the module that cites it,
in one of its classes, in a module it imports, or among the builtins.
"""
from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import re
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "sfl_sim"
ROLE = re.compile(r":(?:py:)?(func|mod|class|meth|attr|data|exc|obj):`([^`]+)`")
_MISSING = object()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import(name: str) -> ModuleType | None:
    """The module ``name`` under its own name, or None (old-layout names do not count)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - any failure means the name does not resolve
            return None
    return module if module.__name__ == name else None


@functools.cache
def _instance_attribute(cls: type, name: str) -> bool:
    """Whether ``cls`` (or a base) declares ``name``: annotated, a dataclass or model field, or
    assigned to ``self.name`` in its source."""
    for klass in inspect.getmro(cls):
        if name in getattr(klass, "__annotations__", {}) or name in getattr(klass, "model_fields", {}):
            return True
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if re.search(rf"self\.{re.escape(name)}\b[^=\n]*(?<![=!<>])=(?!=)", source):
            return True
    return False


def _attribute(obj: Any, names: list[str]) -> Any:
    for i, name in enumerate(names):
        found = getattr(obj, name, _MISSING)
        if found is _MISSING:
            # an attribute an instance gets (the rest of the path is not followed)
            return True if inspect.isclass(obj) and _instance_attribute(obj, name) and i == len(names) - 1 \
                else _MISSING
        obj = found
    return obj


@functools.cache
def _imported_names(module: ModuleType) -> dict[str, str]:
    """Local name -> full dotted name of every import in the module's source (those under
    ``if TYPE_CHECKING:`` and inside functions too)."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return {}
    names: dict[str, str] = {}
    package = module.__name__ if hasattr(module, "__path__") else module.__name__.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.partition(".")[0]] = alias.name if alias.asname else \
                    alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


@functools.cache
def _dotted(target: str) -> bool:
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        module = _import(".".join(parts[:cut]))
        if module is not None:
            return _attribute(module, parts[cut:]) is not _MISSING
    return False


def _resolves(target: str, module: ModuleType) -> bool:
    target = target.lstrip("~!")
    if "<" in target:  # "title <target>"
        target = target[target.index("<") + 1:target.rindex(">")]
    target = target.removesuffix("()")
    if target.startswith("."):  # relative: a name under one of the packages holding the module
        packages = module.__name__.split(".")
        return any(_dotted(".".join(packages[:cut]) + target) for cut in range(len(packages), 0, -1))
    parts = target.split(".")
    if _attribute(module, parts) is not _MISSING or hasattr(builtins, parts[0]) and _dotted(
            "builtins." + target):
        return True
    # a name of one of the module's classes (a method cited in its class's docstring)
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if getattr(cls, "__module__", None) == module.__name__ and _attribute(cls, parts) is not _MISSING:
            return True
    imported = _imported_names(module).get(parts[0])
    if imported is not None and _dotted(".".join([imported, *parts[1:]])):
        return True
    return _dotted(target)


def _references() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in ROLE.finditer(line):
                found.append((_module_name(path), number, match.group(2)))
    return found


@pytest.mark.slow  # imports every module of the package
def test_every_cross_reference_in_the_source_resolves() -> None:
    unresolved = []
    for module_name, line, target in _references():
        module = _import(module_name)
        assert module is not None, f"{module_name} does not import"
        if not _resolves(target, module):
            unresolved.append(f"{module_name.replace('.', '/')}.py:{line}: {target}")
    assert not unresolved, "cross-references to nothing:\n" + "\n".join(unresolved)


def test_the_resolver_tells_a_moved_name_from_a_present_one() -> None:
    module = _import("sfl_sim.engine.link")
    assert module is not None
    assert _resolves("~sfl_sim.engine.band.base.BandResource.serves", module)
    assert _resolves("Link.send", module) and _resolves("BatteryCheck", module)
    assert not _resolves("sfl_sim.engine.band.base.BandResource.no_such_method", module)
    assert not _resolves("sfl_sim.channel.outage.OutagePolicy", module)  # the old layout's name
    assert not _resolves("no_such_name", module)
