"""The generated reference pages (``docs/gen_reference.py``) cover what the program offers."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import ROOT


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_comments_of_a_yaml_file_by_dotted_path() -> None:
    text = ("# header\nname: x\nseed: 0   # root seed\ncell:\n  rate:\n    name: shannon  # b log2(1 + snr)\n"
            "  noise: -174  # thermal\n                # noise PSD\nalgorithms:\n  - name: scala  # skipped\n")
    assert _generator().scenario_comments(text) == {
        "seed": "root seed", "cell.rate.name": "b log2(1 + snr)", "cell.noise": "thermal noise PSD"}


def test_doc_comments_of_module_constants() -> None:
    source = "#: the first\n#: and second line\nA = 1\nB: int = 2\n#: of C\nC = (1,)\n"
    assert _generator().schema_comments(source) == {"A": "the first\nand second line", "C": "of C"}


@pytest.mark.slow
def test_every_field_component_command_and_column_is_on_its_page() -> None:
    from sfl_sim.catalog import KINDS, entries
    from sfl_sim.catalog.component_schema import json_schema
    from sfl_sim.cli import _parser
    from sfl_sim.runs.rundir import schema

    gen = _generator()
    scenario = gen.scenario_page()
    for field in json_schema()["properties"]:
        assert f"| `{field}` |" in scenario, field
    for section, field in (("cell", "uplink_bandwidth_hz"), ("cell.outage", "max_attempts"),
                           ("training", "learning_rate"), ("energy.battery", "capacity_min_j")):
        assert f"`{section}:`" in scenario and f"| `{field}` |" in scenario
    components = gen.components_page()
    for kind in KINDS:
        assert f"## {kind} " in components, kind
        for entry in entries(kind):
            assert f"### `{entry.name}`" in components, (kind, entry.name)
    cli = gen.cli_page()
    for command in ("scenario", "study", "channel", "traces", "plot", "report", "scenarios", "list", "schema"):
        assert f"## `sfl-sim {command}`" in cli, command
    assert _parser().format_usage().split()[1] in cli
    rundir = gen.run_directory_page()
    for column in (*schema.METRICS_COLUMNS, *schema.ROUNDS_COLUMNS, *schema.ENERGY_COLUMNS, *schema.CLIENTS_COLUMNS,
                   *schema.STALENESS_COLUMNS,
                   *schema.CELL_COLUMNS,
                   *schema.CELL_REPORT_COLUMNS):
        assert f"`{column}`" in rundir, column
    for name in (schema.SUMMARY_FILE, schema.RESOLVED_FILE, schema.CHECKPOINT_FILE, schema.CLASSES_FILE,
                 schema.CLIENTS_FILE, schema.STALENESS_FILE):
        assert f"`{name}`" in rundir, name
    pages = gen.pages()
    assert {f"api/{m}.md" for m in gen.API_MODULES} <= set(pages)
    nav = (ROOT / "mkdocs.yml").read_text()
    index = pages["algorithms/index.md"]()
    for path in pages:
        if path.startswith("algorithms/") and path != "algorithms/index.md":
            # one page per algorithm module, reached from the algorithms index (mkdocs.yml's not_in_nav)
            assert "/reference/algorithms/*.md" in nav and f"({Path(path).name})" in index, path
            continue
        assert f"reference/{path}" in nav, f"reference/{path} is not in mkdocs.yml's nav"


def test_every_algorithm_has_a_page_from_its_module_docstring() -> None:
    import importlib

    from sfl_sim.catalog import registries

    gen = _generator()
    pages = gen.algorithm_pages()
    registry = registries()["algorithm"]
    for name in registry.names():
        cls = registry.get(name)
        page = pages[f"algorithms/{gen._algorithm_page(cls)}.md"]
        doc = importlib.import_module(cls.__module__).__doc__
        assert doc and doc.strip().splitlines()[0].rstrip(".") in page, name
        assert f"### `{name}`" in page, name
    assert "Choices where the paper is silent" in pages["algorithms/split.scala.md"]
    assert "```text\n=====" in pages["algorithms/split.scala.md"]  # the audit table, kept as written
    for name in registry.names():
        assert f"]({gen._algorithm_page(registry.get(name))}.md)" in pages["algorithms/index.md"], name


def test_a_rest_docstring_becomes_markdown() -> None:
    text = "Intro ``x`` and :class:`~a.B`.\n\n* one\n  two\n\n===  ===\nA    B\n===  ===\n1    2\n===  ===\nafter"
    assert _generator().docstring_markdown(text) == (
        "Intro `x` and `a.B`.\n\n- one\n  two\n\n\n```text\n===  ===\nA    B\n===  ===\n1    2\n===  ===\n```\n\nafter")
