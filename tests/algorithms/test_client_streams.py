"""Each client's own work draws its torch randomness (dropout masks...) from its own stream
(:mod:`sfl_sim.algorithms.streams`), seeded from (run seed, round, client) and kept in the
checkpoint, so the order in which the clients' events fire never changes what they learn (issue 57)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.asynchronous import is_asynchronous
from sfl_sim.algorithms.conformance import conformance_setup
from sfl_sim.algorithms.fl.fedavg import FedAvg
from sfl_sim.algorithms.split.messages import ClientStep
from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.engine import Simulator

#: End-to-end runs of the real training (each takes a second or more): the inner loop leaves them out.
pytestmark = pytest.mark.slow

#: The synchronous FL algorithms: each client trains the whole model, dropout included.
FL = sorted(n for n in ALGORITHMS.names()
            if issubclass(ALGORITHMS.get(n), FedAvg) and not is_asynchronous(ALGORITHMS.get(n)))


def _build(name: str) -> Any:
    torch.manual_seed(3)  # the seed the streams derive from (the run's model_init)
    return ALGORITHMS.build(name, conformance_setup(11, init_seed=1, minibatch_seed=5))


def _round(algo: Any, client_flops_per_s: list[float]) -> None:
    """One round of ``algo`` over clients 0-2 with these compute budgets, three local iterations."""
    algo.setup.local_iterations = 3
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([100.0, 150.0, 200.0, 250.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=4, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0, uplink_bandwidth_hz=2e6,
                placement_rng=rng, shadowing_rng=rng)
    sim = Simulator(cell, np.asarray(client_flops_per_s), 1e9)
    cohort = np.array([0, 1, 2])
    sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)


def _state(algo: Any) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in algo.global_model().state_dict().items()}


def test_the_fl_family_is_found() -> None:
    assert {"fedavg", "fedprox", "fedvls"} <= set(FL)


@pytest.mark.parametrize("name", FL)
def test_a_round_draws_nothing_from_the_runs_stream(name: str) -> None:
    algo = _build(name)
    assert algo.setup.model.dropout > 0  # the clients' model draws dropout masks
    torch.manual_seed(7)  # the run's own stream (the runner's "dropout" seed)
    before = torch.get_rng_state()
    _round(algo, [1e5, 2e5, 3e5, 4e5])
    assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.parametrize("name", ["fedavg", "fedprox", "fedntd"])
def test_the_order_the_clients_steps_end_in_changes_nothing_they_learn(name: str) -> None:
    # client 0 fastest then slowest: its steps end before, then after, the others'
    trained = []
    for budgets in ([1e6, 2e5, 1.5e5, 1e5], [1e4, 2e5, 1.5e5, 1e5]):
        algo = _build(name)
        torch.manual_seed(7)
        _round(algo, budgets)
        trained.append(_state(algo))
    assert all(torch.equal(trained[0][k], trained[1][k]) for k in trained[0])


def test_a_stream_is_the_rounds_and_the_clients_and_resumes_with_the_checkpoint() -> None:
    algo = _build("fedavg")
    _round(algo, [1e5, 2e5, 3e5, 4e5])
    _round(algo, [1e5, 2e5, 3e5, 4e5])
    state = algo.state_dict()
    assert state["client_work"]["rounds_run"] == 2
    with algo.client_stream(1):
        torch.rand(2)  # round 2's stream of client 1 has drawn: the checkpoint keeps where it is
    other = _build("fedavg")
    other.load_state_dict(algo.state_dict())
    with algo.client_stream(1):
        a = torch.rand(3)
    with other.client_stream(1):
        b = torch.rand(3)
    assert torch.equal(a, b)
    with algo.client_stream(2):
        c = torch.rand(3)
    fresh = _build("fedavg")  # round 0
    with fresh.client_stream(1):
        d = torch.rand(3)
    assert not torch.equal(c, b) and not torch.equal(d, b)  # every client and round its own stream


class _Clock:
    """The one primitive :meth:`SplitFedBase.client_compute` uses, taking no time."""

    def compute(self, who: int, flops: float, kind: str) -> Iterator[None]:
        yield from ()


def test_a_split_clients_work_draws_from_its_own_stream() -> None:
    algo = _build("splitfed_v1")
    x = torch.zeros(4, 1, 8, 8)
    step = ClientStep(2, 0, algo.client_side(), x, torch.zeros(4, dtype=torch.int64))
    torch.manual_seed(7)
    before = torch.get_rng_state()
    work = algo.client_compute(_Clock(), step, "client_forward", lambda: torch.rand(3))
    with pytest.raises(StopIteration) as done:
        next(work)
    assert torch.equal(torch.get_rng_state(), before)  # nothing from the run's stream
    with _build("splitfed_v1").client_stream(2):
        assert torch.equal(done.value.value, torch.rand(3))  # client 2's stream of round 0
