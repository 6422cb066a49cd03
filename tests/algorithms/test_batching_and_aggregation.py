"""Eq. (3) minibatch sizes and eq. (10) weighted aggregation."""
from __future__ import annotations

import pytest
import torch

from sfl_sim.algorithms import proportional_batch_sizes, weighted_average


def test_batch_sizes_proportional_and_sum_to_b() -> None:
    sizes = proportional_batch_sizes([600, 600, 1200, 600], 320)
    assert sizes.tolist() == [64, 64, 128, 64]


def test_batch_sizes_round_by_largest_remainder() -> None:
    sizes = proportional_batch_sizes([1, 1, 1], 10)
    assert sizes.sum() == 10 and sorted(sizes.tolist()) == [3, 3, 4]


def test_every_client_gets_at_least_one_sample() -> None:
    sizes = proportional_batch_sizes([10000, 1, 1], 20)
    assert sizes.sum() == 20 and sizes.min() >= 1


def test_batch_smaller_than_cohort_is_rejected() -> None:
    with pytest.raises(ValueError, match="total_batch"):
        proportional_batch_sizes([5, 5, 5], 2)


def test_weighted_average_by_data_size() -> None:
    a = {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor(3)}
    b = {"w": torch.tensor([3.0, 6.0]), "n": torch.tensor(3)}
    out = weighted_average([a, b], [1.0, 3.0])
    torch.testing.assert_close(out["w"], torch.tensor([2.5, 5.0]))
    assert out["n"].item() == 3
