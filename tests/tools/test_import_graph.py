
"""tools/import_graph.py: the layers hold in this repository, and a breach of each kind is caught."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "import_graph.py"


def _run(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True)


@pytest.mark.slow
def test_the_repository_has_no_upward_import_and_no_cycle():
    result = _run(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("errors ")
    assert "layers hold" in result.stdout


def _tree(tmp_path: Path, files: dict) -> Path:
    for package in ("sfl_sim", "sfl_sim/channel", "sfl_sim/kit", "sfl_sim/analysis", "sfl_sim/runs",
                    "sfl_sim/runs/rundir", "sfl_sim/engine", "sfl_sim/clients", "sfl_sim/data"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def test_upward_imports_peers_fences_and_forbidden_libraries_are_breaches(tmp_path):
    root = _tree(tmp_path, {
        "sfl_sim/channel/cell.py": "from sfl_sim.runs import runner\n",
        "sfl_sim/kit/checks.py": "def f():\n    import channel\n",
        "sfl_sim/analysis/tables.py": "import torch\nfrom sfl_sim.runs.rundir import schema\n",
        "sfl_sim/analysis/runs.py": "from sfl_sim.runs import runner\n",
        "sfl_sim/engine/simulator.py": "import torch\n",
        "sfl_sim/clients/selection.py": "from sfl_sim.data import partition\n",
        "sfl_sim/data/partition.py": "X = 1\n",
        "sfl_sim/runs/rundir/schema.py": "X = 1\n",
        "sfl_sim/runs/runner.py": ("import torch\nfrom sfl_sim.channel import cell\n"
                                   "from sfl_sim.engine import simulator\n"),
    })
    result = _run(root)
    assert result.returncode == 1
    out = result.stdout
    assert "sfl_sim/channel/cell.py:1: channel imports the higher layer runs (sfl_sim.runs.runner)" in out
    assert "sfl_sim/kit/checks.py:2: kit imports the old top-level package channel" in out
    assert "sfl_sim/analysis/tables.py:1: analysis imports torch" in out
    assert "sfl_sim/analysis/tables.py:2" not in out  # the run directory's schema is allowed
    assert "sfl_sim/analysis/runs.py:1: analysis may import only sfl_sim.runs.rundir of runs" in out
    assert "sfl_sim/engine/simulator.py:1: engine imports torch" in out
    assert "sfl_sim/clients/selection.py:1: clients imports its peer data" in out
    assert "sfl_sim/runs/runner.py:1" not in out and "sfl_sim/runs/runner.py:3" not in out
    assert "import cycle: sfl_sim.channel.cell <-> sfl_sim.runs.runner" in out  # the runner imports the cell back
    assert "7 breaches" in out, out


def test_a_cycle_under_type_checking_is_a_breach(tmp_path):
    root = _tree(tmp_path, {
        "sfl_sim/channel/a.py": "from .b import B\n",
        "sfl_sim/channel/b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                 "    from sfl_sim.channel.a import A\nB = 1\n"),
    })
    result = _run(root)
    assert result.returncode == 1
    assert "import cycle: sfl_sim.channel.a <-> sfl_sim.channel.b" in result.stdout
