"""Generate the reference pages of the documentation from the code, never by hand.

Run by the MkDocs build (the ``gen-files`` plugin, ``mkdocs.yml``), which adds the pages to the site
without writing them to ``docs/``; ``python docs/gen_reference.py OUT`` writes them to ``OUT`` instead
(the tests read them that way).  Each page comes from the one source the program itself uses:

- ``reference/scenario.md``: :func:`sfl_sim.catalog.component_schema.json_schema` (what ``sfl-sim
  schema`` prints), with each field's default from :class:`sfl_sim.config.Scenario`, the allowed
  values its error message names, and the comment beside it in the default scenario file;
- ``reference/components.md``: every registry of :func:`sfl_sim.catalog.registries` (what ``sfl-sim
  list`` prints), each component's parameters from :func:`sfl_sim.kit.params.params_schema`;
- ``reference/algorithms/*.md``: one page per algorithm module, from its module docstring, with
  the parameters of every algorithm registered from it;
- ``reference/cli.md``: the ``argparse`` parser of :mod:`sfl_sim.cli`;
- ``reference/run-directory.md``: the names, headers and ``#:`` comments of
  :mod:`sfl_sim.runs.rundir.schema`;
- ``reference/api/*.md``: one mkdocstrings page per public module (:data:`API_MODULES`).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: The modules whose docstrings make the Python API reference, with the page title of each.
API_MODULES: dict[str, str] = {
    "sfl_sim.api": "Running from Python (sfl_sim.api)",
    "sfl_sim.errors": "Errors (sfl_sim.errors)",
    "sfl_sim.kit.component": "Components (sfl_sim.kit.component)",
    "sfl_sim.kit.params": "Component parameters (sfl_sim.kit.params)",
    "sfl_sim.kit.registry": "Registries (sfl_sim.kit.registry)",
    "sfl_sim.channel.protocols": "Channel protocols (sfl_sim.channel.protocols)",
    "sfl_sim.channel.conformance": "Channel conformance (sfl_sim.channel.conformance)",
    "sfl_sim.algorithms.base": "Algorithm base (sfl_sim.algorithms.base)",
    "sfl_sim.algorithms.split.base": "Split-learning round (sfl_sim.algorithms.split.base)",
    "sfl_sim.algorithms.conformance": "Algorithm conformance (sfl_sim.algorithms.conformance)",
    "sfl_sim.clients.protocols": "Client protocols (sfl_sim.clients.protocols)",
    "sfl_sim.compression": "Compressors (sfl_sim.compression)",
    "sfl_sim.analysis": "Analysis (sfl_sim.analysis)",
    "sfl_sim.runs.rundir.schema": "Run-directory schema (sfl_sim.runs.rundir.schema)",
}

#: The scenario file whose comments describe the fields (every field has one, see its header).
DEFAULT_SCENARIO = "cellular_100clients"

#: Where the generated pages go in the site.
REFERENCE = "reference"


# --- helpers ---------------------------------------------------------------------------------------

def _cell(value: Any) -> str:
    """A value as a Markdown table cell: code, with ``|`` escaped and no line break."""
    if value is None or value == "":
        return ""
    text = value if isinstance(value, str) else json.dumps(value)
    return "`" + text.replace("|", "\\|").replace("\n", " ") + "`"


def _prose(text: str | None) -> str:
    """Docstring or comment text for a table cell: one line, ``|`` escaped, reST ``code`` as Markdown."""
    if not text:
        return ""
    text = re.sub(r"``([^`]+)``", r"`\1`", " ".join(text.split()))
    text = re.sub(r":(?:class|func|mod|data|meth|attr):`~?([^`]+)`", r"`\1`", text)
    return text.replace("|", "\\|")


def _number(value: Any) -> str:
    if isinstance(value, float) and value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
        return f"{value:g}"
    return json.dumps(value)


def _range(prop: dict[str, Any]) -> str:
    """The bounds and choices of a JSON Schema property, as ``[low, high]`` or ``one of ...``."""
    if "enum" in prop:
        return "one of " + ", ".join(f"`{v}`" for v in prop["enum"])
    if "const" in prop:
        return f"`{prop['const']}`"
    low = ("[", prop["minimum"]) if "minimum" in prop else ("(", prop["exclusiveMinimum"]) \
        if "exclusiveMinimum" in prop else None
    high = (prop["maximum"], "]") if "maximum" in prop else (prop["exclusiveMaximum"], ")") \
        if "exclusiveMaximum" in prop else None
    if low and high:
        return f"{low[0]}{_number(low[1])}, {_number(high[0])}{high[1]}"
    if low:
        return (">= " if low[0] == "[" else "> ") + _number(low[1])
    if high:
        return ("<= " if high[1] == "]" else "< ") + _number(high[0])
    for key in ("anyOf", "oneOf"):
        parts = [_range(p) for p in prop.get(key, ()) if p.get("type") != "null"]
        parts = [p for p in parts if p]
        if any(p.get("pattern") == "^[^:]+:[^:]+$" for p in prop.get(key, ())):
            parts.append("a class of your own, `package.module:Class`")
        if parts:
            return "; ".join(parts)
    return ""


def _type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """A short type name of a JSON Schema property."""
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "enum" in prop:
        return "choice"
    if "const" in prop:
        return "constant"
    for key in ("anyOf", "oneOf"):
        if key in prop:
            return " or ".join(dict.fromkeys(_type(p, defs) for p in prop[key]))
    kind = prop.get("type")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}), defs)}" if prop.get("items") else "list"
    if kind == "object":
        return "mapping"
    return str(kind) if kind else "any"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-")


# --- the scenario schema -----------------------------------------------------------------------------

def scenario_comments(text: str) -> dict[str, str]:
    """The comment beside each key of a block-style YAML file, by dotted path.

    A comment that continues on the next lines (lines holding only a comment, indented past the
    key) is joined to it.  List items are skipped: their fields have no single path.
    """
    comments: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    last: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or line.startswith("#"):
            last = None if not stripped else last
            continue
        indent = len(line) - len(line.lstrip())
        if stripped.startswith("#"):
            if last is not None:
                comments[last] += " " + stripped.lstrip("#").strip()
            continue
        match = re.match(r"([A-Za-z_][\w]*):(.*)$", stripped)
        if not match:
            last = None
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [match.group(1)])
        stack.append((indent, match.group(1)))
        rest = match.group(2)
        last = None
        if " #" in rest or rest.strip().startswith("#"):
            comments[path] = rest.split("#", 1)[1].strip()
            last = path
    return comments


def _model_classes() -> dict[str, Any]:
    """Every pydantic model the scenario is made of, by class name (the schema's ``$defs`` keys)."""
    import typing

    from pydantic import BaseModel

    from sfl_sim.config import Scenario

    found: dict[str, Any] = {}

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp.__name__ in found:
                return
            found[tp.__name__] = tp
            for info in tp.model_fields.values():
                visit(info.annotation)
            return
        for arg in typing.get_args(tp):
            visit(arg)

    visit(Scenario)
    return found


def _allowed(model: Any, name: str) -> str:
    """The text a field's error message gives as allowed (:class:`sfl_sim.config.fields.Allowed`)."""
    from sfl_sim.config.fields import Allowed

    info = model.model_fields.get(name) if model is not None else None
    for meta in getattr(info, "metadata", ()):
        if isinstance(meta, Allowed):
            return meta.text
    return ""


_MISSING = object()


def _dig(obj: Any, path: str) -> Any:
    """The attribute at dotted ``path`` of a scenario object (``_MISSING`` past a null section)."""
    for key in path.split("."):
        if obj is None or not hasattr(obj, key):
            return _MISSING
        obj = getattr(obj, key)
    return obj


def _default_text(value: Any) -> str:
    """A default as a table cell: a component as its name (and parameters), a float as in YAML."""
    from pydantic import BaseModel

    from sfl_sim.config.models import ComponentSpec

    if value is _MISSING:
        return ""
    if value is None:
        return "`null`"
    if isinstance(value, ComponentSpec):
        return _cell({"name": value.name, **value.params} if value.params else value.name)
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if isinstance(value, list):
        value = [v.model_dump() if isinstance(v, BaseModel) else v for v in value]
    if isinstance(value, float):
        return _cell(_number(value))
    return _cell(value)


def scenario_page() -> str:
    """The scenario reference: every section and field of the scenario files' JSON Schema."""
    from sfl_sim.catalog import KINDS
    from sfl_sim.catalog.component_schema import json_schema
    from sfl_sim.config import Scenario
    from sfl_sim.config.scenario_files import shipped_scenarios

    schema = json_schema()
    defs = schema["$defs"]
    models = _model_classes()
    defaults = Scenario()
    comments = scenario_comments(shipped_scenarios()[DEFAULT_SCENARIO].read_text())
    kind_of_spec = {f"{kind.capitalize()}Spec": kind for kind in KINDS}
    kind_of_spec.update({"DatasetSpec": "dataset", "PartitionerSpec": "partitioner", "SelectorSpec": "selector",
                         "AvailabilitySpec": "availability", "EnergySpec": "energy",
                         "Power_controlSpec": "power_control", "HarqSpec": "harq",
                         "CompressorSpec": "compressor", "AlgorithmSpec": "algorithm"})

    out = ["# Scenario schema", "",
           "Every field a scenario file may hold, generated from the JSON Schema that `sfl-sim schema` "
           "prints (`sfl_sim.catalog.component_schema.json_schema`). *Default* is the value a field takes "
           "when a scenario leaves it out (`sfl_sim.config.Scenario`); *allowed* is what its error "
           "message names; *in the default scenario* is the comment beside the field in the shipped "
           f"`{DEFAULT_SCENARIO}.yaml`, which may set another value than the default. A component field "
           "(a `name` with its parameters beside it) links to its kind in the "
           "[component reference](components.md).", "",
           "Point an editor at the schema for completion and checks: "
           "`sfl-sim schema > sfl-sim.schema.json`.", ""]
    sections: list[tuple[str, dict[str, Any], Any]] = [("", schema, Scenario)]
    while sections:
        path, node, model = sections.pop(0)
        title = f"`{path}:` {{ #{_anchor(path)} }}" if path else "Top level"
        out += [f"## {title}", ""]
        if node.get("description") and path:
            out += [_prose(para) + "\n" for para in node["description"].split("\n\n")]
        rows = []
        for name, prop in node.get("properties", {}).items():
            field = f"{path}.{name}" if path else name
            target = prop
            ref = prop.get("$ref") or next((p["$ref"] for p in prop.get("anyOf", ()) if "$ref" in p), None)
            if ref:
                target = defs[ref.rsplit("/", 1)[-1]]
            ref_name = ref.rsplit("/", 1)[-1] if ref else ""
            sub_model = models.get(ref_name)
            if target.get("properties") and ref_name not in kind_of_spec:
                sections.append((field, target, sub_model))
                kind = f"section, see [`{field}:`](#{_anchor(field)})"
            elif ref_name in kind_of_spec:
                kind = f"component: [{kind_of_spec[ref_name]}](components.md#{_anchor(kind_of_spec[ref_name])})"
            elif prop.get("type") == "array" and "$ref" in prop.get("items", {}):
                item = prop["items"]["$ref"].rsplit("/", 1)[-1]
                kind = (f"list of component: [{kind_of_spec[item]}](components.md#{_anchor(kind_of_spec[item])})"
                        if item in kind_of_spec else f"list of {item}")
            else:
                kind = _type(target, defs)
            if "null" in json.dumps(prop.get("anyOf", [])) and "or null" not in kind:
                kind += " or null"
            default = "" if kind.startswith("section") else _default_text(_dig(defaults, field))
            rows.append((f"`{name}`", kind, default, _prose(_allowed(model, name) or _range(target)),
                         _prose(comments.get(field) or comments.get(f"{field}.name", ""))))
        out += [_table(("field", "type", "default", "allowed", "in the default scenario"), rows), ""]
        if path == "training":
            for field, spec in (("training.optimizer", "OptimizerSpec"), ("training.lr_schedule", "LrScheduleSpec")):
                out += _shapes_section(field, defs[spec], defs)
    return "\n".join(out) + "\n"


def _shapes_section(field: str, spec: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    """The built-in choices of a named-spec field (``training.optimizer``), each with its parameters."""
    out = [f"### `{field}` choices", "", _prose(spec.get("description", "")), ""]
    for shape in spec.get("anyOf", ()):
        name = shape.get("properties", {}).get("name", {}).get("const")
        if shape.get("type") != "object" or name is None:
            continue
        out += [f"**`{name}`** {_prose(shape.get('description', ''))}", ""]
        rows = [(f"`{n}`", _type(p, defs), _default_text(p.get("default")), _prose(_range(p)),
                 _prose(p.get("description", ""))) for n, p in shape.get("properties", {}).items() if n != "name"]
        out += [_table(("parameter", "type", "default", "allowed", "description"), rows) if rows
                else "No parameters.", ""]
    return out


# --- the components ------------------------------------------------------------------------------------

def components_page() -> str:
    """Every component kind, each registered component and its parameters (``sfl-sim list``'s source)."""
    from sfl_sim.catalog import KINDS, registries

    regs = registries()
    out = ["# Components", "",
           "Every swappable part of a run, by kind, generated from the registries that `sfl-sim list` "
           "prints (`sfl_sim.catalog`); each parameter's type, default, allowed range and description "
           "come from the component's parameter model (`sfl_sim.kit.params.params_schema`), as in "
           "`sfl-sim schema`. A scenario names a component by its short name, or a class of your own as "
           "`package.module:Class`, with its parameters beside `name` "
           "(see [Swapping components](../guides/components.md)).", ""]
    out += ["| kind | scenario field | components |", "|---|---|---|"]
    for kind, field in KINDS.items():
        out.append(f"| [{kind}](#{_anchor(kind)}) | `{field}` | {len(regs[kind].names())} |")
    out.append("")
    for kind, field in KINDS.items():
        registry = regs[kind]
        out += [f"## {kind} {{ #{_anchor(kind)} }}", "",
                f"Scenario field: `{field}`. `sfl-sim list {kind}` prints the same.", ""]
        for name in registry.names():
            out += component_section(kind, name, link_algorithm=kind == "algorithm")
    return "\n".join(out) + "\n"


def component_section(kind: str, name: str, link_algorithm: bool = False, level: str = "###") -> list[str]:
    """One registered component: its summary, class and parameter table (and, for an algorithm on the
    components page, a link to its page)."""
    from sfl_sim.catalog import entries, registries
    from sfl_sim.kit.params import params_schema

    registry = registries()[kind]
    cls = registry.get(name)
    schema = params_schema(cls, registry.supplied)
    defs = schema.get("$defs", {})
    summary = next((e.summary for e in entries(kind) if e.name == name), None)
    out = [f"{level} `{name}`", "", _prose(summary) or "(no description)", "",
           f"Class: `{getattr(cls, '__module__', '?')}:{getattr(cls, '__qualname__', name)}`", ""]
    if link_algorithm:
        out += [f"What the paper says, what the code does and where the paper is silent: "
                f"[{name}](algorithms/{_algorithm_page(cls)}.md).", ""]
    required = set(schema.get("required", ()))
    rows = [(f"`{n}`", _type(p, defs), "required" if n in required else _default_text(p.get("default")),
             _prose(_range(p)), _prose(p.get("description", "")))
            for n, p in schema.get("properties", {}).items()]
    if rows:
        out += [_table(("parameter", "type", "default", "allowed", "description"), rows), ""]
    else:
        out += ["No parameters." if not schema.get("additionalProperties") else
                "Parameters not modelled: any keyword the constructor takes.", ""]
    return out


# --- the algorithms --------------------------------------------------------------------------------------

def _algorithm_page(cls: Any) -> str:
    """The page of an algorithm class: its module's last two names (``split.scala``)."""
    return ".".join(cls.__module__.split(".")[-2:])


_REST_TABLE_RULE = re.compile(r"^=+( +=+)+ *$")


def docstring_markdown(text: str) -> str:
    """A module docstring as Markdown: reST code and roles as code spans, ``*`` bullets as ``-``, a
    reST simple table (``===  ===`` rules) kept as it is written, in a text block."""
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    text = re.sub(r":(?:class|func|mod|data|meth|attr|obj):`~?([^`]+)`", r"`\1`", text)
    out: list[str] = []
    rules = 0
    for line in text.splitlines():
        if _REST_TABLE_RULE.match(line):
            if rules == 0:
                out += ["", "```text"]
            rules += 1
            out.append(line)
            if rules == 3:
                out += ["```", ""]
                rules = 0
            continue
        if rules:
            out.append(line)
            continue
        out.append(re.sub(r"^(\s*)\* ", r"\1- ", line))
    return "\n".join(out)


def algorithm_pages() -> dict[str, str]:
    """One page per algorithm module: its docstring (what the paper says, what the code does, where
    the paper is silent) and every algorithm registered from it with its parameters; and an index."""
    import importlib

    from sfl_sim.catalog import registries

    registry = registries()["algorithm"]
    by_page: dict[str, list[str]] = {}
    modules: dict[str, str] = {}
    for name in registry.names():
        cls = registry.get(name)
        page = _algorithm_page(cls)
        by_page.setdefault(page, []).append(name)
        modules[page] = cls.__module__
    pages: dict[str, str] = {}
    index = ["# Algorithms", "",
             "One page per algorithm module, generated from its docstring: the paper it follows, what the "
             "code does step by step, and the choices it makes where the paper is silent; then each "
             "algorithm registered from it with its parameters (as on the [component reference]"
             "(../components.md#algorithm)).", "",
             "| page | algorithms | module |", "|---|---|---|"]
    for page, names in sorted(by_page.items()):
        doc = importlib.import_module(modules[page]).__doc__ or "(no module docstring)"
        title = doc.strip().splitlines()[0].rstrip(".")
        body = docstring_markdown(doc.strip().split("\n", 1)[1] if "\n" in doc.strip() else "")
        text = [f"# {title}", "", f"Module `{modules[page]}`; registered as " +
                ", ".join(f"`{n}`" for n in names) + ".", "", body.strip(), "", "## Registered algorithms", ""]
        for name in names:
            text += component_section("algorithm", name, level="###")
        pages[f"algorithms/{page}.md"] = "\n".join(text) + "\n"
        index.append(f"| [{title}]({page}.md) | {', '.join(f'`{n}`' for n in names)} | `{modules[page]}` |")
    pages["algorithms/index.md"] = "\n".join(index) + "\n"
    return pages


# --- the command line --------------------------------------------------------------------------------

def _subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def cli_page() -> str:
    """The command line: ``sfl-sim --help`` and every subcommand's help, from its parser."""
    from sfl_sim.cli import _parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal; the page should not depend on it
    parser = _parser()
    out = ["# Command line", "", "Generated from the `argparse` parser of `sfl_sim/cli.py`: what "
           "`sfl-sim --help` and `sfl-sim COMMAND --help` print. Every command is also a function of "
           "the [Python API](api/sfl_sim.api.md); `python -m sfl_sim ARGS` is `sfl-sim ARGS`.", "",
           "```text", parser.format_help().rstrip(), "```", ""]
    for name, help_text, sub in _subparsers(parser):
        out += [f"## `sfl-sim {name}`", "", _prose(help_text), "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(out) + "\n"


# --- the run directory ---------------------------------------------------------------------------------

def schema_comments(source: str) -> dict[str, str]:
    """The ``#:`` comment block above each module-level assignment of ``source``, by name."""
    lines = source.splitlines()
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names:
            continue
        block: list[str] = []
        i = node.lineno - 2
        while i >= 0 and lines[i].startswith("#:"):
            block.insert(0, lines[i][3:] if lines[i].startswith("#: ") else lines[i][2:])
            i -= 1
        if block:
            found[names[0]] = "\n".join(block).strip()
    return found


def _block(text: str | None) -> str:
    """A ``#:`` comment as Markdown: its lines and bullet lists kept, reST code and roles as code spans."""
    if not text:
        return ""
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    text = re.sub(r":(?:class|func|mod|data|meth|attr):`~?([^`]+)`", r"`\1`", text)
    lines: list[str] = []
    for line in text.splitlines():
        aligned = re.match(r"(`\w+`)\s{2,}(.*)", line)  # a column-aligned table of names: a list
        if aligned is None and lines and lines[-1].startswith("- `"):  # its widest name has one space
            aligned = re.match(r"(`\w+`)\s+(.*)", line)
        if aligned:
            lines.append(f"- {aligned[1]}: {aligned[2]}")
        elif lines and lines[-1].startswith("- `") and re.match(r"\s{8,}\S", line):
            lines[-1] += " " + line.strip()
        else:
            lines.append(re.sub(r"^\* ", "- ", line))
    return "\n".join(lines)


#: Further column notes of :mod:`sfl_sim.runs.rundir.schema` shown under a file's columns.
_COLUMN_NOTES: dict[str, tuple[str, ...]] = {
    "ENERGY_FILE": ("ENERGY_BATTERY_COLUMN",),
    "CLASSES_FILE": ("VACANT_ACCURACY_COLUMN", "CLASS_ACCURACY_COLUMN"),
    "CLIENTS_FILE": ("CLIENT_SPAN_COLUMN", "CLIENT_TIME_COLUMNS"),
}


def run_directory_page() -> str:
    """The run directory's files and their columns, from :mod:`sfl_sim.runs.rundir.schema`."""
    from sfl_sim.runs.rundir import schema as s

    notes = schema_comments(Path(s.__file__).read_text())
    files: list[tuple[str, tuple[str, ...], str]] = []
    for const in s.__all__:  # every file the schema names, in its order; a new one appears by itself
        if not const.endswith("_FILE"):
            continue
        columns_const = const[: -len("_FILE")] + "_COLUMNS"
        columns: tuple[str, ...] = getattr(s, columns_const, ())
        if const == "ENERGY_FILE":
            columns = (*columns, f"({s.ENERGY_BATTERY_COLUMN})")
        elif const == "CLASSES_FILE":
            columns_const = "CLASSES_LEADING_COLUMNS"
            columns = (*s.CLASSES_LEADING_COLUMNS, s.CLASS_ACCURACY_COLUMN.format("<n>") + " ...")
        files.append((const, columns, columns_const if columns else ""))
    out = ["# Run-directory files", "",
           f"Schema version {s.SCHEMA_VERSION}. Generated from `sfl_sim/runs/rundir/schema.py`, where every "
           "file name and CSV header is defined once (the writer and `sfl_sim.analysis` both import it). "
           "What the files mean and how to read them: [The run directory](../guides/run-directory.md).", "",
           _table(("file", "constant", "what"), [(f"`{getattr(s, c)}`", f"`{c}`", _prose(notes.get(c, "")))
                                                 for c, _, _ in files]), ""]
    for const, columns, columns_const in files:
        if not columns:
            continue
        out += [f"## `{getattr(s, const)}`", "", _block(notes.get(columns_const, "")), ""]
        for extra in _COLUMN_NOTES.get(const, ()):
            name = getattr(s, extra) if isinstance(getattr(s, extra), str) else extra
            out += [f"**`{name}`**: " + _block(notes.get(extra, "")), ""]
        out += ["Columns, in order: " + ", ".join(f"`{c}`" for c in columns), ""]
    out += ["## The cell report's `cell.csv`", "", _block(notes.get("CELL_REPORT_COLUMNS", "")), "",
            "Columns, in order: " + ", ".join(f"`{c}`" for c in s.CELL_REPORT_COLUMNS), "",
            "## Statuses and host-only fields", "", _prose(notes.get("RunStatus", "")), "",
            "Statuses: " + ", ".join(f"`{x}`" for x in s.RUN_STATUSES), "",
            _prose(notes.get("HOST_ONLY_FIELDS", "")), "",
            "Host-only fields: " + ", ".join(f"`{x}`" for x in s.HOST_ONLY_FIELDS), "",
            "## Best accuracy", "", f"`best_test_accuracy` in `{s.SUMMARY_FILE}`: {s.BEST_ACCURACY_DEFINITION}.", ""]
    return "\n".join(out) + "\n"


# --- the Python API --------------------------------------------------------------------------------------

def _api_directives(module: str) -> str:
    """The mkdocstrings directives of one module's page.

    A package that exports its names lazily (a PEP 562 ``__getattr__`` over an ``_EXPORTS`` table,
    as :mod:`sfl_sim.analysis` does) shows no members to a static reader: its page documents each
    exported function and class from the module that defines it (constants stay on their own page).
    """
    import importlib
    import inspect

    package = importlib.import_module(module)
    exports = getattr(package, "_EXPORTS", None)
    if not isinstance(exports, dict):
        return f"::: {module}\n"
    lines = [f"::: {module}", "    options:", "      members: false", ""]
    for name, where in exports.items():
        defining = where if "." in where else f"{module}.{where}"
        if inspect.isfunction(obj := getattr(package, name)) or inspect.isclass(obj):
            lines += [f"::: {defining}.{name}", ""]
    return "\n".join(lines)


def api_pages() -> dict[str, str]:
    """One mkdocstrings page per module of :data:`API_MODULES`, and an index of them."""
    pages = {f"api/{module}.md": f"# {title}\n\n{_api_directives(module)}" for module, title in API_MODULES.items()}
    index = ["# Python API", "", "Generated from the docstrings (numpy style) by mkdocstrings. "
             "`import sfl_sim` gives the functions of `sfl_sim.api` and the errors at the top level "
             "(`sfl_sim.run`, `sfl_sim.ConfigError`...).", ""]
    index += [f"- [{title}]({module}.md)" for module, title in API_MODULES.items()]
    pages["api/index.md"] = "\n".join(index) + "\n"
    return pages


# --- writing -----------------------------------------------------------------------------------------

def pages() -> dict[str, Callable[[], str]]:
    """Every generated page by its path under ``reference/``, as a function that writes it."""
    found: dict[str, Callable[[], str]] = {
        "scenario.md": scenario_page, "components.md": components_page, "cli.md": cli_page,
        "run-directory.md": run_directory_page}
    for path, text in {**api_pages(), **algorithm_pages()}.items():
        found[path] = (lambda t=text: t)
    return found


def write(open_file: Callable[[str], Any]) -> None:
    """Write every page through ``open_file(path)`` (``mkdocs_gen_files.open`` or a local open)."""
    for path, make in pages().items():
        with open_file(f"{REFERENCE}/{path}") as fh:
            fh.write(make())


def _local_open(root: Path) -> Callable[[str], Any]:
    def opener(path: str) -> Any:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        return target.open("w")
    return opener


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python docs/gen_reference.py OUT_DIR")
    write(_local_open(Path(sys.argv[1])))
elif __name__ == "<run_path>":  # run by mkdocs-gen-files (runpy.run_path); a test imports it instead
    import mkdocs_gen_files

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    write(lambda path: mkdocs_gen_files.open(path, "w"))
