"""CS-SFL: the label-aware selector (seeded, class-balanced) and the algorithm that uses it."""
from __future__ import annotations

import numpy as np
import pytest

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.split.cs_sfl import CSSFL, LabelAwareSelection
from sfl_sim.clients.selection import SELECTORS, UniformSelection

K, N, COHORT = 100, 10, 10


def _quantity_skew_counts(seed: int = 0) -> np.ndarray:
    """Each client holds exactly 2 classes (quantity-based skew, alpha = 2), 300 samples of each."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((K, N), dtype=np.int64)
    for k in range(K):
        counts[k, rng.choice(N, size=2, replace=False)] = 300
    return counts


def _draws(selector, seed: int, rounds: int) -> list:
    rng = np.random.default_rng(seed)
    return [selector.select(K, COHORT, rng) for _ in range(rounds)]


def test_registered_and_default_of_cs_sfl() -> None:
    assert SELECTORS.get("label_aware") is LabelAwareSelection
    assert ALGORITHMS.get("cs_sfl") is CSSFL
    assert CSSFL.default_selection["name"] == "label_aware"


def test_draws_are_seeded_and_valid() -> None:
    selector = LabelAwareSelection()
    selector.prepare(_quantity_skew_counts())
    a, b, c = _draws(selector, 7, 20), _draws(selector, 7, 20), _draws(selector, 8, 20)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert any(not np.array_equal(x, y) for x, y in zip(a, c, strict=True))
    for cohort in a:
        assert cohort.dtype == np.int64 and len(cohort) == COHORT
        assert len(np.unique(cohort)) == COHORT and np.all(np.diff(cohort) > 0)
        assert cohort.min() >= 0 and cohort.max() < K


@pytest.mark.parametrize("temperature", [0.0, 0.01, 0.02])
def test_more_class_coverage_and_balance_than_uniform(temperature: float) -> None:
    counts = _quantity_skew_counts()
    aware = LabelAwareSelection(temperature=temperature)
    aware.prepare(counts)
    uniform = UniformSelection()

    def stats(cohorts):
        covered = [np.count_nonzero(counts[c].sum(axis=0)) for c in cohorts]
        distance = aware.distance(np.stack([counts[c].sum(axis=0) for c in cohorts]))
        return float(np.mean(covered)), float(np.mean(distance))

    cov_u, dist_u = stats(_draws(uniform, 1, 300))
    cohorts = _draws(aware, 1, 300)
    cov_a, dist_a = stats(cohorts)
    assert cov_a >= cov_u + 0.5  # uniform covers about 9 of 10 classes here
    assert cov_a >= 9.8
    assert dist_a < 0.6 * dist_u
    # Still a sampler, not a fixed cohort: most clients take part over 300 rounds.
    assert len(np.unique(np.concatenate(cohorts))) >= 80


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="temperature"):
        LabelAwareSelection(temperature=-1)
    with pytest.raises(ValueError, match="target"):
        LabelAwareSelection(target="cohort")
    with pytest.raises(ValueError, match="prepare"):
        LabelAwareSelection().select(K, COHORT, np.random.default_rng(0))
    selector = LabelAwareSelection()
    selector.prepare(_quantity_skew_counts())
    with pytest.raises(ValueError, match="n_selected"):
        selector.select(K, K + 1, np.random.default_rng(0))
