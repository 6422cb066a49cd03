"""mean ± std (n) and the paired bootstrap CI of a speed-up."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from analysis.stats import SpeedUp, describe, paired_speedup


def test_describe_is_mean_sample_std_and_count():
    df = pd.DataFrame({"g": ["a", "a", "a", "b"], "x": [1.0, 2.0, 4.0, 5.0], "y": [1.0, np.nan, 3.0, np.nan]})
    d = describe(df, ["g"], ["x", "y"])
    assert d.loc["a", "x_mean"] == pytest.approx(7 / 3)
    assert d.loc["a", "x_std"] == pytest.approx(np.std([1, 2, 4], ddof=1))
    assert d.loc["a", "x_n"] == 3 and d.loc["a", "y_n"] == 2
    assert math.isnan(d.loc["b", "x_std"])  # one seed: std undefined with ddof 1
    assert d.loc["b", "y_n"] == 0 and math.isnan(d.loc["b", "y_mean"])


def test_identical_ratio_across_seeds_collapses_the_ci():
    alg = np.array([10.0, 13.0, 7.5, 21.0, 16.0])
    su = paired_speedup(2.5 * alg, alg)
    assert su.ratio == pytest.approx(2.5)
    assert su.low == pytest.approx(2.5) and su.high == pytest.approx(2.5)
    assert su.pairs == 5


def test_hand_checkable_two_pair_case():
    """Two pairs: ref (10, 30), alg (10, 10). Resamples {1,1}: 1, {1,2}/{2,1}: 2, {2,2}: 3 with
    probabilities 1/4, 1/2, 1/4, so the 2.5 % and 97.5 % quantiles are 1 and 3; the statistic on
    the observed pairs is 40/20 = 2."""
    su = paired_speedup([10.0, 30.0], [10.0, 10.0], n_boot=20_000, seed=1)
    assert su == SpeedUp(2.0, 1.0, 3.0, 2)


def test_ci_matches_exact_enumeration_of_resamples():
    """Three pairs: the bootstrap quantiles approach those of the exact resampling distribution."""
    ref, alg = np.array([30.0, 45.0, 60.0]), np.array([10.0, 20.0, 15.0])
    stats, weights = [], []
    for idx in itertools.product(range(3), repeat=3):
        idx = list(idx)
        stats.append(ref[idx].mean() / alg[idx].mean())
        weights.append(1 / 27)
    order = np.argsort(stats)
    cdf = np.cumsum(np.array(weights)[order])
    exact_low = np.array(stats)[order][np.searchsorted(cdf, 0.025)]
    exact_high = np.array(stats)[order][np.searchsorted(cdf, 0.975)]
    su = paired_speedup(ref, alg, n_boot=50_000)
    assert su.ratio == pytest.approx(135 / 45)
    assert su.low == pytest.approx(exact_low, rel=1e-9) and su.high == pytest.approx(exact_high, rel=1e-9)


def test_pairs_where_either_missed_are_dropped():
    su = paired_speedup([10.0, np.nan, 30.0, 40.0], [5.0, 5.0, np.nan, 20.0])
    assert su.pairs == 2 and su.ratio == pytest.approx(50 / 25)


def test_fewer_than_two_pairs_has_no_interval():
    one = paired_speedup([10.0, np.nan], [5.0, 1.0])
    assert one.ratio == 2.0 and one.pairs == 1 and math.isnan(one.low) and math.isnan(one.high)
    none = paired_speedup([np.nan], [1.0])
    assert none.pairs == 0 and math.isnan(none.ratio)


def test_bootstrap_is_reproducible_and_seeded():
    rng = np.random.default_rng(5)
    ref, alg = rng.uniform(50, 100, 8), rng.uniform(20, 60, 8)
    assert paired_speedup(ref, alg) == paired_speedup(ref, alg)
    assert paired_speedup(ref, alg, seed=1) != paired_speedup(ref, alg, seed=2)


def test_lengths_must_match():
    with pytest.raises(ValueError, match="length"):
        paired_speedup([1.0, 2.0], [1.0])
