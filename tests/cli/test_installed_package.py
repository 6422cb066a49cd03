"""A non-editable install, used from a directory outside the repository, has everything a user needs.

Slower integration test (about a minute): builds a fresh virtual environment, installs the torch
build this test suite runs on (from the local wheel cache) and then the repository with a plain
``pip install``, and runs the installed ``sfl-sim`` console script from a temporary directory.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sfl_sim.config.scenario_files import SCENARIO_DIR

ROOT = Path(__file__).resolve().parents[2]
# Not copied into the source tree that is installed: VCS data, environments, build and run outputs
# (run outputs only at the root: ``sfl_sim/runs`` is a package).
_ANYWHERE = shutil.ignore_patterns(".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__",
                                   ".pytest_cache")


def IGNORED(directory: str, names: list[str]) -> set[str]:
    at_root = {"runs", "results", "outputs"} & set(names) if Path(directory) == ROOT else set()
    return set(_ANYWHERE(directory, names)) | at_root

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _run(args: list[str], cwd: Path, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{args} exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(sfl-sim executable, its python, a working directory outside the repository, environment)."""
    tmp = tmp_path_factory.mktemp("installed")
    src = tmp / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=IGNORED)  # the root `scenarios` symlink stays a link
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH", "VIRTUAL_ENV")}
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp, env)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile"]
    _run(pip + [f"torch=={torch.__version__.split('+')[0]}"], tmp, env)  # the build at hand: no CUDA download
    _run(pip + [str(src)], tmp, env)  # not editable: the package is copied into site-packages
    shutil.rmtree(src)  # nothing may come from the source tree any more
    work = tmp / "work"
    work.mkdir()
    return venv / "bin" / "sfl-sim", venv / "bin" / "python", work, env


@pytest.mark.slow
def test_the_package_is_imported_from_site_packages(installed):
    _, python, work, env = installed
    where = _run([str(python), "-c", "import sfl_sim; print(sfl_sim.__file__)"], work, env).stdout.strip()
    assert "site-packages" in where and not where.startswith(str(ROOT))


def test_version_is_the_project_version(installed):
    sfl_sim, python, work, env = installed
    version = re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert _run([str(sfl_sim), "--version"], work, env).stdout.strip() == f"sfl-sim {version}"
    assert _run([str(python), "-m", "sfl_sim", "--version"], work, env).stdout.strip() == f"sfl-sim {version}"
    assert _run([str(python), "-c", "import sfl_sim; print(sfl_sim.__version__)"], work, env).stdout.strip() == version


def test_every_shipped_scenario_is_installed_and_listed(installed):
    sfl_sim, _, work, env = installed
    listed = {line.split()[0] for line in _run([str(sfl_sim), "scenarios"], work, env).stdout.splitlines()[:-1]}
    shipped = {p.relative_to(SCENARIO_DIR).with_suffix("").as_posix() for p in SCENARIO_DIR.rglob("*.yaml")}
    assert listed == shipped


def test_the_default_scenario_checks_by_file_name_from_a_temporary_directory(installed):
    sfl_sim, _, work, env = installed
    out = _run([str(sfl_sim), "scenario", "cellular_100clients.yaml", "--check"], work, env)
    assert re.search(r"valid; 2 run\(s\) build", out.stdout)
    assert list(work.iterdir()) == []  # a check writes nothing


def test_the_console_script_loads_a_plugin_from_the_working_directory(installed, tmp_path):
    sfl_sim, _, work, env = installed
    plugin_dir = tmp_path / "plugin"
    plugin_dir.mkdir()
    (plugin_dir / "flat_loss.py").write_text(
        "import numpy as np\n\n\nclass Flat:\n    \"\"\"Every client 100 dB.\"\"\"\n\n"
        "    def loss_db(self, distance_m):\n        return np.full(np.shape(distance_m), 100.0)\n")
    _run([str(sfl_sim), "channel", "cellular_100clients", "--set", "clients.count=4", "--set",
          "cell.pathloss.name=flat_loss:Flat", "-o", "report"], plugin_dir, env)
    rows = (plugin_dir / "report" / "cell.csv").read_text().splitlines()
    column = rows[0].split(",").index("pathloss_db")
    assert [float(r.split(",")[column]) for r in rows[1:]] == [100.0] * 4
