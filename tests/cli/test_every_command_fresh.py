"""Every ``sfl-sim`` subcommand runs in a fresh process, as a user runs it, on real input at a tiny size.

In-process tests import modules in their own order, which can hide an import-order accident
(``sfl-sim traces`` once failed on every file, because the package's lazy export of the function
``trace_report`` shadowed the submodule, and the tests had imported the submodule first).  Here
each command is a subprocess of its own: nothing is imported before it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sfl_sim.cli import _parser
from tests.helpers import ROOT, small_scenario, write_yaml

pytestmark = pytest.mark.slow  # each command starts a Python (and most import torch): seconds each


def sfl_sim(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``sfl-sim ARGS`` in a fresh interpreter running this checkout's code."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "sfl_sim.cli", *args], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, f"sfl-sim {' '.join(args)} exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
    assert "Traceback" not in out.stderr, out.stderr
    return out


def subcommands() -> set[str]:
    """The subcommands ``sfl-sim --help`` lists."""
    actions = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return set(actions[0].choices)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A folder with a tiny scenario (one round, FedAvg) already run once, and a study of it."""
    root = tmp_path_factory.mktemp("fresh")
    write_yaml(root, small_scenario(name="tiny", rounds=1, train=120, test=40, eval_samples=40),
               "tiny.yaml")
    write_yaml(root, {"base": "tiny.yaml", "seeds": [0], "output_dir": str(root / "study"),
                      "grid": {"training.learning_rate": [0.01]}}, "study.yaml")
    (root / "trace.csv").write_text("client,start_s,end_s\n0,0,3600\n1,1800,7200\n")
    return root


COVERED: dict[str, list[str]] = {
    "scenario": ["scenario", "tiny.yaml", "-o", "run", "--no-progress"],
    "study": ["study", "study.yaml", "--no-progress"],
    "channel": ["channel", "tiny.yaml", "-o", "cell"],
    "traces": ["traces", "trace.csv", "-o", "traces"],
    "plot": ["plot", "run", "-o", "plots"],
    "retime": ["retime", "run/fedavg", "--set", "cell.uplink_bandwidth_hz=5e6", "-o", "retimed", "--no-progress"],
    "report": ["report", "study", "-o", "report"],
    "scenarios": ["scenarios"],
    "list": ["list", "algorithms"],
    "schema": ["schema"],
}


def test_every_subcommand_has_a_smoke_test() -> None:
    assert subcommands() == set(COVERED)


@pytest.mark.parametrize("command", list(COVERED))
def test_the_subcommand_runs_in_a_fresh_process(work, command) -> None:
    if command in ("plot", "retime") and not (work / "run").exists():
        sfl_sim(*COVERED["scenario"], cwd=work)
    if command == "report" and not (work / "study").exists():
        sfl_sim(*COVERED["study"], cwd=work)
    out = sfl_sim(*COVERED[command], cwd=work)
    if command == "schema":
        assert json.loads(out.stdout)["type"] == "object"
    elif command == "traces":
        assert "2 devices" in out.stdout and (work / "traces" / "traces.png").stat().st_size > 0
    elif command == "scenarios":
        assert "cellular_100clients" in out.stdout
    elif command == "list":
        assert "fedavg" in out.stdout
    elif command == "retime":
        assert (work / "retimed" / "metrics.csv").stat().st_size > 0


def test_version_in_a_fresh_process(work) -> None:
    assert sfl_sim("--version", cwd=work).stdout.strip()
