"""Per-client server copies draw their dropout from the client's own generator
(:mod:`sfl_sim.algorithms.streams`) and every minibatch of a round is drawn at its start
(:func:`~sfl_sim.algorithms.local_work.draw_in_iteration_order`), so what the algorithms with one
server copy per client learn does not depend on the order in which the link delivers the
activations (issue 39)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.conformance import conformance_setup
from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.engine import Simulator

#: The algorithms whose server keeps one copy of w_s per client.
PER_CLIENT = ["splitfed_v1", "cs_sfl", "splitfed_v3", "lla_sfl", "sfl_local_loss", "besplit_a", "besplit_g"]


def _trained(name: str, distances_m: list[float]) -> tuple[dict[str, torch.Tensor], list[int]]:
    """One round of ``name`` over clients 0-2 at ``distances_m``, two local iterations; the final
    state and the order the server stepped the clients' copies."""
    torch.manual_seed(3)
    setup = conformance_setup(11, init_seed=1, minibatch_seed=5)
    setup.local_iterations = 2
    algo = ALGORITHMS.build(name, setup)
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement(distances_m), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=4, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0, uplink_bandwidth_hz=2e5,
                placement_rng=rng, shadowing_rng=rng)
    sim = Simulator(cell, np.full(4, 1e5), 1e7)
    order: list[int] = []
    stream = algo.copy_stream

    def noted(client):  # type: ignore[no-untyped-def]
        order.append(client)
        return stream(client)

    algo.copy_stream = noted
    cohort = np.array([0, 1, 2])
    torch.manual_seed(7)  # the run's own stream (the runner's "dropout" seed)
    sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    return {k: v.clone() for k, v in algo.global_model().state_dict().items()}, order


@pytest.mark.slow
@pytest.mark.parametrize("name", PER_CLIENT)
def test_the_arrival_order_changes_when_the_copies_step_never_what_they_learn(name: str) -> None:
    fast_first, order_a = _trained(name, [60.0, 200.0, 470.0, 380.0])
    slow_first, order_b = _trained(name, [470.0, 200.0, 60.0, 380.0])
    assert order_a[:3] != order_b[:3]  # the server met the clients in another order
    assert fast_first.keys() == slow_first.keys()
    assert all(torch.equal(fast_first[k], slow_first[k]) for k in fast_first)


@pytest.mark.slow
def test_the_clients_generators_resume_with_the_run() -> None:
    algo = ALGORITHMS.build("splitfed_v1", conformance_setup(11, init_seed=1, minibatch_seed=5))
    assert algo.copy_streams is not None
    with algo.copy_streams.of(2):
        torch.rand(3)
    other = ALGORITHMS.build("splitfed_v1", conformance_setup(11, init_seed=1, minibatch_seed=5))
    other.load_state_dict(algo.state_dict())
    with algo.copy_streams.of(2):
        a = torch.rand(3)
    with other.copy_streams.of(2):  # type: ignore[union-attr]
        b = torch.rand(3)
    assert torch.equal(a, b)  # the client's stream went on where the checkpoint left it


def test_only_per_client_copies_have_own_streams() -> None:
    setup = conformance_setup(11, init_seed=1, minibatch_seed=5)
    assert ALGORITHMS.build("scala", setup).copy_streams is None  # one server model: the run's stream
    assert ALGORITHMS.build("splitfed_v2", setup).copy_streams is None
