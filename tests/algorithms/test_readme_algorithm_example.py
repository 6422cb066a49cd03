"""The documentation's algorithm example (tutorial "Writing an algorithm") runs as written, from a directory
outside the package."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from sfl_sim.cli import main
from tests.helpers import ROOT, doc_blocks, small_scenario, write_yaml

PAGE = "tutorials/writing-an-algorithm.md"


def _scenario(tmp_path: Path, algorithms: list) -> Path:
    data = small_scenario(name=None, seed=1, rounds=1, algorithms=algorithms, split_point=None, test=100,
                          batch_size=20, local_iterations=3, learning_rate=None,  # T > 1: the term acts
                          clients=10, participation=0.2)
    return write_yaml(tmp_path, data, "scenario.yaml")


@pytest.mark.slow
def test_readme_algorithm_passes_conformance_and_trains_beside_splitfed(tmp_path: Path, monkeypatch) -> None:
    (python_code,) = doc_blocks(PAGE, "python")
    bash_cmd = doc_blocks(PAGE, "bash")[0]  # the conformance check
    (yaml_text,) = doc_blocks(PAGE, "yaml")
    user_dir = tmp_path / "user"
    user_dir.mkdir()
    (user_dir / "my_algorithm.py").write_text(python_code)
    monkeypatch.syspath_prepend(str(user_dir))

    # The conformance command of the tutorial, run as a user would (the project root on the path
    # too, so the subprocess imports this checkout rather than wherever the venv points).
    env = {"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)}  # the user's file: found in cwd
    out = subprocess.run(bash_cmd.strip(), shell=True, cwd=user_dir, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "'restores'" in out.stdout and "'lost payloads'" in out.stdout

    algorithms = yaml.safe_load(yaml_text)["set"]["algorithms"]  # the study's algorithms
    assert main(["scenario", str(_scenario(tmp_path, algorithms)), "-o", str(tmp_path / "runs"), "--no-progress"]) == 0
    rows = {}
    for label in ("splitfed_v1", "splitfed_prox"):
        with (tmp_path / "runs" / label / "metrics.csv").open() as fh:
            rows[label] = list(csv.DictReader(fh))[-1]
    # Same protocol, same traffic and time; the proximal term changes what the clients learn.
    for column in ("sim_time_s", "uplink_bytes", "client_flops"):
        assert rows["splitfed_v1"][column] == rows["splitfed_prox"][column]
    weights = {label: torch.load(tmp_path / "runs" / label / "checkpoint.pt", weights_only=True)["algorithm"]["model"]
               for label in rows}
    assert any(not torch.equal(w, weights["splitfed_prox"][key]) for key, w in weights["splitfed_v1"].items())
