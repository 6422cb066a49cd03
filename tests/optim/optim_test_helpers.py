"""A one-client setup and a round driver for the optimizer tests of tests/optim."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from sfl_sim.algorithms import TrainingSetup
from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.engine import Simulator
from sfl_sim.models import SplittableModel
from sfl_sim.optim import TrainingSettings

CLIENT_FLOPS_PER_S = 1.0e5
BANDWIDTH_HZ = 1.0e6


def tiny_model(num_classes: int = 3) -> SplittableModel:
    """Client Conv2d(1, 2, 3) on 1x5x5; server Flatten + Linear(18, num_classes)."""
    torch.manual_seed(0)
    return SplittableModel(
        [nn.Conv2d(1, 2, kernel_size=3), nn.Sequential(nn.Flatten(), nn.Linear(18, num_classes))],
        {"S1": 1}, "S1", name="tiny", input_shape=(1, 5, 5))


def setup_with(sizes: Sequence[int], batch_size: int, local_iterations: int | None, lr: float,
               settings: TrainingSettings | None = None, index_images: bool = False) -> TrainingSetup:
    """Clients of the given sizes, labels cycling over 3 classes; ``index_images``: every pixel of
    sample i is i (so a batch tells which samples it holds)."""
    gen = torch.Generator().manual_seed(3)
    n = int(sum(sizes))
    x = torch.arange(n, dtype=torch.float32).view(n, 1, 1, 1).expand(n, 1, 5, 5).contiguous() if index_images \
        else torch.randn(n, 1, 5, 5, generator=gen)
    y = torch.arange(n) % 3
    indices, start = [], 0
    for size in sizes:
        indices.append(torch.arange(start, start + size))
        start += size
    return TrainingSetup(model=tiny_model(), split_point="S1", train_x=x, train_y=y, client_indices=indices,
                         num_classes=3, batch_size=batch_size, local_iterations=local_iterations, learning_rate=lr,
                         device=torch.device("cpu"), minibatch_rng=np.random.default_rng(0),
                         training=settings or TrainingSettings())


def one_client_setup(local_iterations: int, lr: float, settings: TrainingSettings | None = None) -> TrainingSetup:
    """One client of 8 samples, B = 8 (eq. 3 gives it the whole batch)."""
    return setup_with([8], 8, local_iterations, lr, settings)


def simulator(n_clients: int = 1, client_flops_per_s: float = CLIENT_FLOPS_PER_S) -> Simulator:
    """Clients 100 m, 200 m ... from the server, ideal downlink, wait for all."""
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([100.0 * (k + 1) for k in range(n_clients)]), TR36814Macro(), NoShadowing(),
                ShannonRate(), EqualAllocation(), n_clients=n_clients, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=BANDWIDTH_HZ, placement_rng=rng, shadowing_rng=rng)
    return Simulator(cell, np.full(n_clients, client_flops_per_s), 1.0e7)


def run_rounds(algo, rounds: int, cohort: Sequence[int] = (0,), sim: Simulator | None = None) -> Simulator:
    """``rounds`` rounds of ``cohort`` through the engine's entry (:meth:`Algorithm.run_round`)."""
    sim = sim or simulator(len(algo.setup.client_indices))
    ids = np.asarray(cohort, dtype=np.int64)
    for _ in range(rounds):
        sim.run_round(lambda ctx: algo.run_round(ctx, ids), ids)
    return sim
