"""The shipped conformance checks run on every component a run builds (issue 36, item 8): a
physically impossible one is refused in one line at ``--check`` (and so at a run's start, which
builds the same way), and ``--check`` validates the scenario and components before it looks at
the output directory."""
from __future__ import annotations

from pathlib import Path

import pytest

from sfl_sim.channel import RayleighFading, TR36814Macro
from sfl_sim.channel.conformance import conformance_problem
from sfl_sim.cli import main
from sfl_sim.runs.rundir.schema import CHECKPOINT_FILE
from tests.cli.plugins_unphysical import FlippedSignPathLoss, RicianMeanKPlusOne
from tests.helpers import small_scenario, write_yaml

PLUGINS = "tests.cli.plugins_unphysical"


def test_the_conformance_check_names_what_is_impossible() -> None:
    assert conformance_problem("pathloss", TR36814Macro(), 10) is None
    assert conformance_problem("fading", RayleighFading(), 10) is None
    flipped = conformance_problem("pathloss", FlippedSignPathLoss(), 10)
    assert flipped is not None and "positive" in flipped and "\n" not in flipped
    rician = conformance_problem("fading", RicianMeanKPlusOne(), 10)
    assert rician is not None and "mean power gain 1" in rician and "mean 5.0" in rician


def _refused(tmp_path: Path, capsys, cell: dict) -> str:
    data = {**small_scenario(algorithms=["fedavg"], rounds=1, clients=6, participation=1.0), "cell": cell}
    out = tmp_path / "out"
    (out / "fedavg").mkdir(parents=True)
    # a leftover run directory ("already holds a run") must not hide the mistake
    (out / "fedavg" / CHECKPOINT_FILE).write_bytes(b"")
    assert main(["scenario", str(write_yaml(tmp_path, data)), "-o", str(out), "--check"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    return err[0]


@pytest.mark.slow
def test_check_refuses_a_flipped_path_loss_in_one_line(tmp_path: Path, capsys) -> None:
    line = _refused(tmp_path, capsys, {"pathloss": {"name": f"{PLUGINS}:FlippedSignPathLoss"}})
    assert "cell.pathloss: not physically possible" in line and "positive" in line


@pytest.mark.slow
def test_check_refuses_a_fading_whose_mean_power_is_k_plus_1(tmp_path: Path, capsys) -> None:
    line = _refused(tmp_path, capsys, {"fading": {"name": f"{PLUGINS}:RicianMeanKPlusOne"}})
    assert "cell.fading: not physically possible" in line and "mean power gain 1" in line
