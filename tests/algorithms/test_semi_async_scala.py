"""Semi-asynchronous SCALA (``trigger_clients`` / ``window_s``, :mod:`sfl_sim.algorithms.split.triggered_server`)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.conformance import conformance_setup
from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.engine import Simulator

COHORTS = [[0, 1, 2], [1, 2, 3]]


def _train(**params):
    setup = conformance_setup(3)
    algo = ALGORITHMS.get("scala")(setup, **params)
    sizes = []
    step = algo.server_on_concatenation

    def spy(uploads):
        sizes.append(sorted(u.client for u in uploads))
        return step(uploads)

    algo.server_on_concatenation = spy
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([60.0, 200.0, 380.0, 470.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=4, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=2.0e5, placement_rng=rng, shadowing_rng=rng)
    sim = Simulator(cell, np.array([2.0e4, 2.0e5, 2.0e5, 1.0e5]), 1e8)
    for cohort in COHORTS:
        c = np.array(cohort, dtype=np.int64)
        sim.run_round(lambda ctx, c=c: algo.run_round(ctx, c), c)
    return algo.state_dict()["model"], sim, sizes


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow
@pytest.mark.parametrize("params", [{"trigger_clients": 3}, {"window_s": 1e9}])
def test_a_trigger_of_the_whole_cohort_is_scala(params):
    want, sim_want, sizes_want = _train()
    got, sim_got, sizes_got = _train(**params)
    assert _same(want, got) and sim_got.now_s == sim_want.now_s
    assert sim_got.counters.as_dict() == sim_want.counters.as_dict()
    assert sizes_got == sizes_want == [[0, 1, 2]] * 2 + [[1, 2, 3]] * 2  # T = 2 steps of the cohort


@pytest.mark.slow
def test_one_client_trigger_steps_on_what_has_arrived():
    want, sim_want, _ = _train()
    got, sim_got, sizes = _train(trigger_clients=1)
    assert not _same(want, got)
    assert len(sizes) > 4 and all(len(s) >= 1 for s in sizes)
    assert sum(len(s) for s in sizes) == 12  # 2 rounds x 3 clients x 2 iterations, each used once
    assert sim_got.now_s < sim_want.now_s  # the fast clients no longer wait for the slow one (client 0)


@pytest.mark.slow
def test_a_short_window_splits_the_concatenation():
    _, _, sizes = _train(window_s=1e-3)
    assert sum(len(s) for s in sizes) == 12 and any(len(s) < 3 for s in sizes)


@pytest.mark.parametrize(("params", "field"), [({"trigger_clients": 0}, "trigger_clients"),
                                                ({"window_s": -1.0}, "window_s"),
                                                ({"trigger_clients": 2, "concatenate": False,
                                                  "server_adjustment": False}, "trigger_clients")])
def test_bad_trigger_is_one_line(params, field):
    with pytest.raises(ValueError) as info:
        ALGORITHMS.build("scala", conformance_setup(3), **params)
    assert field in str(info.value) and "\n" not in str(info.value)
