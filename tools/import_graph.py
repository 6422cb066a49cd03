"""The import graph of the project's packages, checked against its layers.

Prints the package-level graph (who imports whom, how many import statements) and exits 1,
printing one line per breach, when

- a package imports one it may not (:data:`MAY_IMPORT`: ``simkit`` <- ``channel`` <- ``sfl_sim``;
  ``analysis`` imports only ``simkit``, itself and no torch or engine);
- a package imports a third-party library outside its list (:data:`LIBRARIES`);
- modules import each other in a cycle.

Every import statement counts, wherever it is: at module level, inside a function and under
``if TYPE_CHECKING:``.  Reads the sources with :mod:`ast` and imports nothing of the project.

Usage: ``python tools/import_graph.py [REPO_ROOT]``.
"""
from __future__ import annotations

import ast
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

#: The project's packages, lowest layer first.
PACKAGES = ("simkit", "channel", "analysis", "sfl_sim")

#: Project packages each package may import (itself included).
MAY_IMPORT: Dict[str, Set[str]] = {
    "simkit": {"simkit"},
    "channel": {"simkit", "channel"},
    "analysis": {"simkit", "analysis"},
    "sfl_sim": {"simkit", "channel", "analysis", "sfl_sim"},
}

#: Third-party libraries each package may import (None: any); the standard library is always allowed.
LIBRARIES: Dict[str, Optional[Set[str]]] = {
    # pydantic: the components' typed parameters (simkit.params), which the registry of every
    # kind validates and the scenario schema shows, channel's kinds included.
    "simkit": {"numpy", "pydantic"},
    "channel": {"numpy", "scipy"},
    "analysis": {"numpy", "scipy", "pandas", "matplotlib", "yaml"},
    "sfl_sim": None,
}


def modules(root: Path) -> Dict[str, Path]:
    """Every module of the project packages: dotted name -> file."""
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _imports(tree: ast.AST, name: str, is_package: bool) -> Iterator[Tuple[str, List[str], int]]:
    """(module, imported names, line) for every import statement, relative ones made absolute."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module, [a.name for a in node.names], node.lineno


def module_graph(root: Path) -> Tuple[Dict[str, Set[str]], List[Tuple[str, str, int]]]:
    """Edges between project modules, and every (module, imported root, line) for the layer check.

    ``from pkg import sub`` where ``pkg.sub`` is a module counts as an import of ``pkg.sub``, like
    ``import pkg.sub`` (``pkg/__init__`` runs first either way, as for any module of ``pkg``)."""
    mods = modules(root)
    edges: Dict[str, Set[str]] = defaultdict(set)
    uses: List[Tuple[str, str, int]] = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for module, names, line in _imports(tree, name, path.name == "__init__.py"):
            uses.append((name, module.split(".")[0], line))
            submodules = [f"{module}.{n}" for n in names if f"{module}.{n}" in mods]
            plain = len(submodules) < len(names) or not names
            for target in submodules + ([module] if plain else []):
                if target in mods and target != name:
                    edges[name].add(target)
    return edges, uses


def cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    out: List[List[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return out


def check(root: Path) -> Tuple[str, List[str]]:
    """The printed package graph and the list of breaches (empty when the layers hold)."""
    edges, uses = module_graph(root)
    mods = modules(root)
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    package_edges: Counter = Counter()
    breaches = []
    for name, imported, line in uses:
        package = name.split(".")[0]
        where = f"{mods[name].relative_to(root)}:{line}"
        if imported in PACKAGES:
            package_edges[(package, imported)] += 1
            if imported not in MAY_IMPORT[package]:
                allowed_here = ", ".join(sorted(MAY_IMPORT[package]))
                breaches.append(f"{where}: {package} imports {imported} (allowed: {allowed_here})")
        elif imported not in stdlib:
            package_edges[(package, imported)] += 1
            allowed = LIBRARIES[package]
            if allowed is not None and imported not in allowed:
                libraries = ", ".join(sorted(allowed))
                breaches.append(f"{where}: {package} imports {imported} (libraries allowed: {libraries})")
    for component in cycles(edges):
        breaches.append("import cycle: " + " <-> ".join(component))
    lines = []
    for package in PACKAGES:
        own = [f"{dep} ({n})" for (src, dep), n in sorted(package_edges.items()) if src == package and dep in PACKAGES
               and dep != package]
        libs = [f"{dep} ({n})" for (src, dep), n in sorted(package_edges.items())
                if src == package and dep not in PACKAGES]
        lines.append(f"{package:<9} -> {', '.join(own) or '-'};  libraries: {', '.join(libs) or '-'}")
    return "\n".join(lines), breaches


def main(argv: List[str]) -> int:
    root = Path(argv[0] if argv else Path(__file__).resolve().parent.parent)
    graph, breaches = check(root)
    print(graph)
    for breach in breaches:
        print(breach)
    print(f"{len(breaches)} breaches" if breaches else "layers hold: no upward import, no cycle")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
