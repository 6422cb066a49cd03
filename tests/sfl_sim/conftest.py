"""Shared fixtures for sfl_sim tests: a tiny split model and a hand-made training setup."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from sfl_sim.algorithms import TrainingSetup
from sfl_sim.models import SplittableModel


def tiny_model(num_classes: int = 3) -> SplittableModel:
    """Client: Conv2d(1, 2, 3) on 1x5x5 -> 2x3x3; server: Flatten + Linear(18, num_classes)."""
    torch.manual_seed(0)
    return SplittableModel(
        [nn.Conv2d(1, 2, kernel_size=3), nn.Sequential(nn.Flatten(), nn.Linear(18, num_classes))],
        {"S1": 1}, "S1", name="tiny", input_shape=(1, 5, 5))


def tiny_setup(n_clients: int = 2, samples_per_client: int = 8, batch_size: int = 8,
               local_iterations: int = 1, num_classes: int = 3, seed: int = 0) -> TrainingSetup:
    """Clients with equal data; client k holds labels {k % C, (k+1) % C}."""
    gen = torch.Generator().manual_seed(seed)
    n = n_clients * samples_per_client
    x = torch.randn(n, 1, 5, 5, generator=gen)
    y = torch.empty(n, dtype=torch.int64)
    indices = []
    for k in range(n_clients):
        rows = torch.arange(k * samples_per_client, (k + 1) * samples_per_client)
        y[rows] = torch.tensor([(k + i % 2) % num_classes for i in range(samples_per_client)])
        indices.append(rows)
    return TrainingSetup(model=tiny_model(num_classes), split_point="S1", train_x=x, train_y=y,
                         client_indices=indices, num_classes=num_classes, batch_size=batch_size,
                         local_iterations=local_iterations, learning_rate=0.1, device=torch.device("cpu"),
                         minibatch_rng=np.random.default_rng(seed))


@pytest.fixture
def setup2() -> TrainingSetup:
    return tiny_setup()
