"""The import graph of the ``sfl_sim`` package, checked against its layers.

The package's folders are its layers (:data:`LAYERS`, lowest first).  Prints the graph between
rooms (a room is a subpackage of ``sfl_sim``, or one of its root modules; how many import
statements) and exits 1, printing one line per breach, when

- a room imports a room of a higher layer, or a peer of its own layer that :data:`PEERS` does
  not list;
- a room imports a module :data:`ONLY` fences off (``analysis`` reads run directories through
  their schema, :mod:`sfl_sim.runs.rundir`, and imports nothing else of ``runs``);
- a room imports a third-party library outside its list (:data:`LIBRARIES`: the radio layer only
  numpy and scipy, the engine no torch, the analysis no torch);
- modules import each other in a cycle;
- anything imports a top-level package the project no longer has (``channel``, ``simkit``,
  ``analysis``: their old names answer only through :mod:`sfl_sim._legacy_imports`).

Every import statement counts, wherever it is: at module level, inside a function and under
``if TYPE_CHECKING:``.  Reads the sources with :mod:`ast` and imports nothing of the project.

Usage: ``python tools/import_graph.py [REPO_ROOT]``.
"""
from __future__ import annotations

import ast
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "sfl_sim"

#: The rooms, lowest layer first; a room may import its own layer's rooms only where
#: :data:`PEERS` says so, and any room of a lower layer.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "kit", "_legacy_imports"),  # one-line errors; registry, parameter models, checks
    ("channel",),  # the radio: numpy and scipy only
    ("clients", "data", "models", "compression", "privacy"),  # the domain's parts
    ("config",),  # the scenario: typed sections, defaults, validation
    ("optim",),  # optimizers and schedules from the training settings
    ("engine",),  # the SimPy clock: times and counts every step (no torch)
    ("algorithms",),  # the methods
    ("catalog",),  # every registry of the installation, and the scenario schema
    ("runs",),  # one run's life and its directory
    ("study", "reports"),  # many runs; reports of the parts without training
    ("analysis",),  # reads run directories (no torch, no engine)
    ("api",),  # the Python API
    ("cli", "__main__", "__init__"),  # the command line, and the package's lazy exports
)

#: Rooms of one layer that may import each other's modules.
PEERS: dict[str, set[str]] = {"__main__": {"cli"}}

#: A room that may import only these modules of another room (``room -> {other room: modules}``).
ONLY: dict[str, dict[str, tuple[str, ...]]] = {
    "analysis": {"runs": ("sfl_sim.runs.rundir",)},
}

#: Third-party libraries each room may import (None: any); the standard library is always allowed.
LIBRARIES: dict[str, set[str] | None] = {
    # pydantic: the components' typed parameters (kit.params), which the registry of every kind
    # validates and the scenario schema shows, the channel's kinds included.
    "kit": {"numpy", "pydantic"},
    "errors": set(),
    "_legacy_imports": set(),
    "channel": {"numpy", "scipy", "numba"},  # numba: a smooth fading's compiled transfer integration
    "engine": {"numpy", "simpy", "numba"},  # numba: the slot form's compiled decisions (engine.band.compiled)
    "analysis": {"numpy", "scipy", "pandas", "matplotlib", "yaml"},
}

#: The top-level packages of the old layout.
OLD_TOP_LEVEL = ("channel", "simkit", "analysis")


def _layer_of() -> dict[str, int]:
    return {room: i for i, rooms in enumerate(LAYERS) for room in rooms}


def room(module: str) -> str | None:
    """The room of a dotted ``sfl_sim`` module name (None outside the package)."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package: dotted name -> file (the shipped scenario data left out)."""
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if "scenarios" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(tree: ast.AST, name: str, is_package: bool) -> Iterator[tuple[str, list[str], int]]:
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


def module_graph(root: Path) -> tuple[dict[str, set[str]], list[tuple[str, str, int]]]:
    """Edges between project modules, and every (module, imported module, line) for the checks.

    ``from pkg import sub`` where ``pkg.sub`` is a module counts as an import of ``pkg.sub``, like
    ``import pkg.sub`` (``pkg/__init__`` runs first either way, as for any module of ``pkg``)."""
    mods = modules(root)
    edges: dict[str, set[str]] = defaultdict(set)
    uses: list[tuple[str, str, int]] = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for module, names, line in _imports(tree, name, path.name == "__init__.py"):
            submodules = [f"{module}.{n}" for n in names if f"{module}.{n}" in mods]
            plain = len(submodules) < len(names) or not names
            for target in submodules + ([module] if plain else []):
                uses.append((name, target, line))
                if target in mods and target != name:
                    edges[name].add(target)
    return edges, uses


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
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


def _breach(src_room: str, target: str, layer_of: dict[str, int]) -> str | None:
    """Why ``src_room`` may not import the ``sfl_sim`` module ``target`` (None: it may)."""
    dst_room = room(target)
    if dst_room is None or dst_room == src_room:
        return None
    if dst_room not in layer_of:
        return f"{dst_room} is in no layer (tools/import_graph.py LAYERS)"
    fence = ONLY.get(src_room, {}).get(dst_room)
    if fence is not None and not any(target == m or target.startswith(m + ".") for m in fence):
        return f"{src_room} may import only {', '.join(fence)} of {dst_room}"
    ours, theirs = layer_of[src_room], layer_of[dst_room]
    if theirs > ours:
        return f"{src_room} imports the higher layer {dst_room}"
    if theirs == ours and dst_room not in PEERS.get(src_room, set()):
        return f"{src_room} imports its peer {dst_room}"
    return None


def check(root: Path) -> tuple[str, list[str]]:
    """The printed room graph and the list of breaches (empty when the layers hold)."""
    edges, uses = module_graph(root)
    mods = modules(root)
    layer_of = _layer_of()
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    room_edges: Counter = Counter()
    breaches = []
    for rm in sorted({room(m) for m in mods} - set(layer_of) - {None}):
        breaches.append(f"{PACKAGE}/{rm}: a room in no layer (tools/import_graph.py LAYERS)")
    for name, imported, line in uses:
        src_room = room(name)
        assert src_room is not None
        where = f"{mods[name].relative_to(root)}:{line}"
        top = imported.split(".")[0]
        if top == PACKAGE:
            dst_room = room(imported)
            if dst_room != src_room:
                room_edges[(src_room, dst_room)] += 1
            why = _breach(src_room, imported, layer_of) if src_room in layer_of else None
            if why is not None:
                breaches.append(f"{where}: {why} ({imported})")
        elif top in OLD_TOP_LEVEL:
            breaches.append(f"{where}: {src_room} imports the old top-level package {top} (now {PACKAGE}.*)")
        elif top not in stdlib:
            room_edges[(src_room, top)] += 1
            allowed = LIBRARIES.get(src_room)
            if allowed is not None and top not in allowed:
                libraries = ", ".join(sorted(allowed)) or "none"
                breaches.append(f"{where}: {src_room} imports {top} (libraries allowed: {libraries})")
    for component in cycles(edges):
        breaches.append("import cycle: " + " <-> ".join(component))
    lines = []
    rooms_here = {room(m) for m in mods}
    for layer in LAYERS:
        for rm in layer:
            if rm not in rooms_here:
                continue
            own = [f"{dst} ({n})" for (src, dst), n in sorted(room_edges.items())
                   if src == rm and dst in layer_of]
            libs = [f"{dst} ({n})" for (src, dst), n in sorted(room_edges.items())
                    if src == rm and dst not in layer_of]
            lines.append(f"{rm:<16} -> {', '.join(own) or '-'};  libraries: {', '.join(libs) or '-'}")
    return "\n".join(lines), breaches


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else Path(__file__).resolve().parent.parent)
    graph, breaches = check(root)
    print(graph)
    for breach in breaches:
        print(breach)
    print(f"{len(breaches)} breaches" if breaches else "layers hold: no upward import, no cycle")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
