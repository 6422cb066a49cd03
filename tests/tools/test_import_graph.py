"""tools/import_graph.py: the layers hold in this repository, and a breach of each kind is caught."""
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "import_graph.py"


def _run(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True)


def test_the_repository_has_no_upward_import_and_no_cycle():
    result = _run(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("simkit ")
    assert "layers hold" in result.stdout


def _tree(tmp_path: Path, files: dict) -> Path:
    for package in ("simkit", "channel", "analysis", "sfl_sim"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def test_upward_imports_and_forbidden_libraries_are_breaches(tmp_path):
    root = _tree(tmp_path, {
        "channel/cell.py": "from sfl_sim import runner\n",
        "simkit/checks.py": "def f():\n    import channel\n",
        "analysis/tables.py": "import torch\n",
        "sfl_sim/runner.py": "import torch\nfrom channel import cell\nfrom analysis import tables\n",
    })
    result = _run(root)
    assert result.returncode == 1
    assert "channel/cell.py:1: channel imports sfl_sim" in result.stdout
    assert "simkit/checks.py:2: simkit imports channel" in result.stdout
    assert "analysis/tables.py:1: analysis imports torch" in result.stdout
    assert "sfl_sim/runner.py" not in result.stdout
    assert "import cycle: channel.cell <-> sfl_sim.runner" in result.stdout  # the runner imports the cell back
    assert "4 breaches" in result.stdout


def test_a_cycle_under_type_checking_is_a_breach(tmp_path):
    root = _tree(tmp_path, {
        "channel/a.py": "from .b import B\n",
        "channel/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from channel.a import A\nB = 1\n",
    })
    result = _run(root)
    assert result.returncode == 1
    assert "import cycle: channel.a <-> channel.b" in result.stdout
