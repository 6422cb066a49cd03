"""Host-sync-free helpers of the GPU path, checked on the CPU."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import base
from sfl_sim.algorithms.base import to_device, weighted_average, weighted_average_stacked
from sfl_sim.algorithms.terms.logit_adjustment import label_distribution


def _states(n: int, seed: int = 0) -> list:
    gen = torch.Generator().manual_seed(seed)
    return [{"w": torch.randn(7, 3, generator=gen), "b": torch.randn(3, generator=gen),
             "count": torch.tensor(5 + k)} for k in range(n)]


@pytest.mark.parametrize("n", [1, 3, 40])
def test_the_stacked_average_equals_the_sequential_one_within_float64_rounding(n, monkeypatch):
    monkeypatch.setattr(base, "STACK_CHUNK", 16)  # several chunks at n = 40
    states = _states(n)
    weights = np.arange(1, n + 1, dtype=float)
    want, got = weighted_average(states, weights), weighted_average_stacked(states, weights)
    assert got.keys() == want.keys()
    for key in ("w", "b"):
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape
        torch.testing.assert_close(got[key], want[key], rtol=1e-6, atol=1e-7)
    assert torch.equal(got["count"], states[0]["count"])  # integer buffers are not averaged


def test_to_device_on_cpu_is_the_array():
    arr = np.array([3, 1, 2], dtype=np.int64)
    t = to_device(arr, torch.device("cpu"))
    assert t.dtype == torch.int64 and t.tolist() == [3, 1, 2]


def test_label_distribution_without_a_branch_gives_the_same_numbers():
    labels = torch.tensor([0, 2, 2, 3, 3, 3])
    counts = torch.bincount(labels, minlength=5).float()
    assert torch.equal(label_distribution(labels, 5), counts / counts.sum())
    assert torch.equal(label_distribution(torch.zeros(0, dtype=torch.int64), 4), torch.zeros(4))
