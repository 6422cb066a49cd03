"""Every registered algorithm runs one round over a two-client cell and changes the global model."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.asynchronous import is_asynchronous
from tests.helpers import tiny_setup, two_client_simulator


@pytest.mark.parametrize("name", [n for n in ALGORITHMS.names() if not is_asynchronous(ALGORITHMS.get(n))])
def test_one_round(name: str) -> None:
    algo = ALGORITHMS.get(name)(tiny_setup(local_iterations=2))
    before = [p.detach().clone() for p in algo.global_model().parameters()]
    sim = two_client_simulator()
    cohort = np.array([0, 1])
    duration = sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    assert duration > 0
    assert sim.counters.uplink_bytes > 0 and sim.counters.client_flops > 0
    after = list(algo.global_model().parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_lla_sfl_server_jobs_queue_on_one_server() -> None:
    """Without concatenation the server runs one job per client and iteration, one at a time."""
    algo = ALGORITHMS.get("lla_sfl")(tiny_setup(local_iterations=2))
    sim = two_client_simulator()
    cohort = np.array([0, 1])
    sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    per_sample = algo.meter.flops_per_sample["server_step"]
    assert sim.counters.server_flops == pytest.approx(per_sample * 8 * 2)  # B = 8 per iteration, T = 2


def test_scala_with_local_data_prior_runs() -> None:
    algo = ALGORITHMS.get("scala")(tiny_setup(), label_prior="local_data")
    sim = two_client_simulator()
    cohort = np.array([0, 1])
    assert sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort) > 0
