"""RunState is checkpoint.pt's layout; RunDir writes and reads it, and the meter restores through its own method."""
from __future__ import annotations

import numpy as np
import torch

from sfl_sim.algorithms._exec.flop_meter import FlopMeter
from sfl_sim.runs import checkpoint
from sfl_sim.runs.checkpoint import RunState
from sfl_sim.runs.rundir.files import RunDir


def _state() -> RunState:
    return RunState(round=3, sim_time_s=12.5, host_time_s=0.25, counters={"uplink_bytes": 10},
                    algorithm={"model": {"w": torch.arange(4.0)}}, rng={"selection": {"state": 1}},
                    cell={"positions_m": np.arange(6.0).reshape(3, 2)}, flops_per_sample={"client_forward": 2.5},
                    selector={})


def test_run_state_round_trips_through_the_run_directory(tmp_path):
    files = RunDir(tmp_path / "run")
    files.path.mkdir()
    files.save_checkpoint(_state())
    raw = torch.load(files.checkpoint_path, weights_only=True)
    assert list(raw) == list(checkpoint.KEYS) and raw["format"] == checkpoint.FORMAT
    assert files.load_checkpoint()["round"] == 3  # as read, in the layout it was saved in
    back = checkpoint.load(files.checkpoint_path)
    assert back.round == 3 and back.sim_time_s == 12.5 and back.flops_per_sample == {"client_forward": 2.5}
    assert torch.equal(back.algorithm["model"]["w"], torch.arange(4.0))
    np.testing.assert_array_equal(back.cell["positions_m"], np.arange(6.0).reshape(3, 2))
    assert tuple(back.to_checkpoint()) == checkpoint.KEYS[1:]
    assert RunState.from_checkpoint(back.to_checkpoint()).counters == {"uplink_bytes": 10}


def test_flop_meter_restores_its_measurements():
    meter = FlopMeter()
    meter.load_state_dict({"client_forward": 4.0})
    _, flops = meter.run("client_forward", 8, lambda: None)  # measured before: not measured again
    assert flops == 32.0 and meter.state_dict() == {"client_forward": 4.0}
    assert meter.state_dict() is not meter.flops_per_sample
