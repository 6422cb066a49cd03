"""The documentation's own path-loss example (tutorial "A network researcher's cell", section 3) runs as
written and changes the run."""
from __future__ import annotations

import csv
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from sfl_sim.cli import main
from tests.helpers import ROOT, doc_blocks, small_scenario, write_yaml

PAGE, SECTION = "tutorials/network-researcher.md", "3. Bring your own path loss"


def _small_scenario(tmp_path: Path, cell: dict) -> Path:
    data = {**small_scenario(name=None, seed=1, rounds=1, algorithms=["scala"], split_point=None, test=100,
                             batch_size=20, learning_rate=None, clients=10, participation=0.2), "cell": cell}
    return write_yaml(tmp_path, data, f"s{len(list(tmp_path.glob('s*.yaml')))}.yaml")


@pytest.mark.slow
def test_readme_component_loads_from_yaml_passes_conformance_and_changes_the_run(tmp_path: Path, monkeypatch) -> None:
    (python_code,) = doc_blocks(PAGE, "python", SECTION)
    (yaml_text,) = doc_blocks(PAGE, "yaml", SECTION)
    bash_cmd = doc_blocks(PAGE, "bash", SECTION)[0]  # the conformance check
    user_dir = tmp_path / "user"
    user_dir.mkdir()
    (user_dir / "my_channel.py").write_text(python_code)
    monkeypatch.syspath_prepend(str(user_dir))

    # The conformance command of the tutorial, run as a user would.
    out = subprocess.run(bash_cmd.strip(), shell=True, cwd=user_dir, capture_output=True, text=True,
                         env={"PYTHONPATH": str(user_dir), "PATH": str(Path(sys.executable).parent)})
    assert out.returncode == 0, out.stderr
    assert "pathloss" in out.stdout

    custom_cell = yaml.safe_load(yaml_text)["cell"]
    runs = {}
    for name, cell in (("default", {}), ("custom", custom_cell)):
        assert main(["scenario", str(_small_scenario(tmp_path, cell)), "-o", str(tmp_path / name),
                     "--no-progress"]) == 0
        with (tmp_path / name / "scala" / "cell.csv").open() as fh:
            runs[name] = list(csv.DictReader(fh))
        with (tmp_path / name / "scala" / "metrics.csv").open() as fh:
            runs[name + "_metrics"] = list(csv.DictReader(fh))
    assert runs["default"][0]["pathloss_db"] != runs["custom"][0]["pathloss_db"]
    # [0] is round 0, t = 0
    assert runs["default_metrics"][-1]["sim_time_s"] != runs["custom_metrics"][-1]["sim_time_s"]


@pytest.mark.slow
def test_readme_component_in_the_working_directory_loads_without_pythonpath(tmp_path: Path) -> None:
    """`sfl-sim` finds `my_channel.py` in the directory it runs from, as `python -m` would.

    Run the way pip's console script runs: a launcher file outside the working directory (so
    Python puts the launcher's folder, not the working directory, on sys.path), PYTHONPATH naming
    only the repository (the package, not the plug-in).  A probe in the same set-up shows the
    plug-in is not importable on its own; with PYTHONSAFEPATH (Python's opt-out) it stays so.
    """
    (python_code,) = doc_blocks(PAGE, "python", SECTION)
    work, bin_dir = tmp_path / "work", tmp_path / "bin"
    work.mkdir()
    bin_dir.mkdir()
    (work / "my_channel.py").write_text(python_code)
    launcher = bin_dir / "sfl-sim"
    launcher.write_text("import sys\nfrom sfl_sim.cli import main\nsys.exit(main())\n")  # pip's console script
    probe = bin_dir / "probe"
    probe.write_text("import importlib.util\nprint(importlib.util.find_spec('my_channel') is None)\n")
    env = {"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)}

    def run(script: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(script), *args], cwd=work, capture_output=True, text=True,
                              env={**env, **extra_env})

    assert run(probe).stdout.strip() == "True"  # the plug-in folder is not on the path by itself
    args = ("channel", "cellular_100clients", "--set", "clients.count=6", "-o", str(tmp_path / "report"),
            "--set", "cell.pathloss={name: my_channel:TwoSlopePathLoss, breakpoint_m: 120.0}")
    out = run(launcher, *args)
    assert out.returncode == 0, out.stderr
    with (tmp_path / "report" / "cell.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    two_slope = runpy.run_path(str(work / "my_channel.py"))["TwoSlopePathLoss"](breakpoint_m=120.0)
    distance = np.array([float(r["distance_m"]) for r in rows])
    np.testing.assert_allclose([float(r["pathloss_db"]) for r in rows], two_slope.loss_db(distance))
    if sys.version_info >= (3, 11):  # PYTHONSAFEPATH: Python's own "do not add the working directory"
        refused = run(launcher, *args, PYTHONSAFEPATH="1")
        assert refused.returncode == 2 and "cannot import module 'my_channel'" in refused.stderr
