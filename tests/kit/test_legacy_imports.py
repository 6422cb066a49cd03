"""The import names of the old layout answer for one release, with a warning, and only after
``sfl_sim`` is imported; a user's own module of an old top-level name wins."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sfl_sim._legacy_imports import OLD_NAMES


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "always::FutureWarning", "-c", code], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_a_fresh_interpreter_has_no_old_top_level_package(tmp_path) -> None:
    for name in ("channel", "simkit", "analysis"):
        result = _python(f"import {name}", tmp_path)
        assert result.returncode == 1 and "ModuleNotFoundError" in result.stderr, (name, result.stderr)


@pytest.mark.slow
def test_old_names_give_the_same_objects_with_one_warning_each(tmp_path) -> None:
    code = "\n".join([
        "import sfl_sim",
        "from sfl_sim.algorithms.splitfed import SplitFedV1",
        "from sfl_sim.algorithms.split.splitfed import SplitFedV1 as New",
        "assert SplitFedV1 is New",
        "import channel.cell",
        "from sfl_sim.channel.cell import Cell",
        "assert channel.cell.Cell is Cell",
        "from channel.conformance import check_component",
        "from simkit.params import ParamsModel",
        "from sfl_sim.kit.params import ParamsModel as P2",
        "assert ParamsModel is P2",
        "from sfl_sim.protocols import BatteryObserver, LocalModelObserver, DatasetLoader",
        "from sfl_sim.channel import PATHLOSS",
        "print(PATHLOSS.get('channel.pathloss:TR36814Macro').__module__)",
    ])
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "sfl_sim.channel.large_scale.pathloss"
    warned = [line for line in result.stderr.splitlines() if "FutureWarning" in line]
    assert any("sfl_sim.algorithms.splitfed is an old import name of sfl_sim.algorithms.split.splitfed" in w
               for w in warned), result.stderr
    assert any("channel.pathloss is an old import name" in w for w in warned), result.stderr


def test_a_users_own_module_of_an_old_name_wins(tmp_path) -> None:
    (tmp_path / "channel.py").write_text("MINE = True\n")
    result = _python("import sfl_sim\nimport channel\nprint(channel.MINE)", tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "True", result.stderr
    assert "FutureWarning" not in result.stderr


@pytest.mark.slow
def test_every_old_name_resolves(tmp_path) -> None:
    names = sorted(OLD_NAMES)
    code = "import importlib, sfl_sim\n" + "".join(f"importlib.import_module({n!r})\n" for n in names)
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr
