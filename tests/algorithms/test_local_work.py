"""A round's local work drawn ahead (``draw_in_iteration_order``): the same batches whatever order
the iterations then run in, drawn in lockstep order, one permutation per epoch."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch

from sfl_sim.algorithms.local_work import EpochWork, IterationWork, draw_in_iteration_order


def _setup(seed: int = 0) -> SimpleNamespace:
    """Two clients of 7 and 5 samples; x holds each sample's own index."""
    x = torch.arange(12, dtype=torch.float32).unsqueeze(1)
    return SimpleNamespace(train_x=x, train_y=torch.zeros(12, dtype=torch.int64),
                           client_indices=[torch.arange(0, 7), torch.arange(7, 12)],
                           minibatch_rng=np.random.default_rng(seed))


def _samples(work, t):
    return work.batch(t)[0].squeeze(1).tolist()


def test_drawn_ahead_the_batches_do_not_depend_on_the_order_the_iterations_run() -> None:
    setup = _setup()
    work = {0: IterationWork(setup, 0, 3, 4), 1: IterationWork(setup, 1, 2, 3)}
    draw_in_iteration_order(work, [0, 1])
    # client 1 runs both its iterations before client 0 runs any: the batches are the drawn ones
    late = {1: [_samples(work[1], 0), _samples(work[1], 1)], 0: [_samples(work[0], t) for t in range(3)]}
    # the lockstep order by hand: (0, t0), (1, t0), (0, t1), (1, t1), (0, t2)
    rng = np.random.default_rng(0)
    expect: dict[int, list] = {0: [], 1: []}
    for client, n, size in ((0, 7, 4), (1, 5, 3), (0, 7, 4), (1, 5, 3), (0, 7, 4)):
        expect[client].append((rng.choice(n, size=size, replace=False) + (7 if client else 0)).tolist())
    assert late == expect


def test_an_epoch_draws_its_permutation_ahead_once() -> None:
    setup = _setup()
    work = EpochWork(setup, 0, epochs=2, batch_size=3)  # 7 samples: 3 batches an epoch
    draw_in_iteration_order({0: work}, [0])
    rng = np.random.default_rng(0)
    first, second = rng.permutation(7).tolist(), rng.permutation(7).tolist()
    assert setup.minibatch_rng.bit_generator.state == rng.bit_generator.state  # both drawn, nothing more
    got = [_samples(work, t) for t in range(work.iterations)]
    assert sum(got[:3], []) == first and sum(got[3:], []) == second
