"""mean ± std (n) and the paired bootstrap CI of a speed-up."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from sfl_sim.analysis.stats import (
    MIN_PAIRS_FOR_CI,
    bootstrap_mean_ci,
    describe,
    jain_index,
    km_median,
    paired_speedup,
    time_ratio,
)


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
    assert su.pairs == 5 and su.interval == "bootstrap" and su.case == "ratio" and su.boot_edge == 0


def test_hand_checkable_two_pair_case_gives_the_range_not_a_ci():
    """Two pairs: ref (10, 30), alg (10, 10). The percentile bootstrap would give exactly [1, 3], the
    per-seed ratios' range (resamples {1,1}: 1, {2,2}: 3 each have probability 1/4 > 2.5 %); below
    MIN_PAIRS_FOR_CI pairs that range is reported as such and there is no CI."""
    su = paired_speedup([10.0, 30.0], [10.0, 10.0], n_boot=20_000, seed=1)
    assert (su.ratio, su.pairs, su.seed_min, su.seed_max, su.interval) == (2.0, 2, 1.0, 3.0, "seed_range")
    assert math.isnan(su.low) and math.isnan(su.high)
    assert MIN_PAIRS_FOR_CI == 5
    # the bootstrap that would have been given is the range itself: a 100 %, not a 95 %, interval
    forced = paired_speedup([10.0, 30.0], [10.0, 10.0], n_boot=20_000, seed=1, min_pairs=2)
    assert (forced.low, forced.high) == (1.0, 3.0)


def test_three_pairs_percentile_interval_is_the_range():
    """The issue's known case: with 3 pairs each single-seed resample has probability 1/27 > 2.5 %, so
    the 2.5 % and 97.5 % quantiles are the smallest and largest per-seed ratio."""
    ref, alg = np.array([30.0, 45.0, 60.0]), np.array([10.0, 20.0, 15.0])
    forced = paired_speedup(ref, alg, min_pairs=2)
    assert (forced.low, forced.high) == pytest.approx((2.25, 4.0))
    su = paired_speedup(ref, alg)
    assert su.interval == "seed_range" and (su.seed_min, su.seed_max) == pytest.approx((2.25, 4.0))
    assert math.isnan(su.low) and math.isnan(su.high)


def _exact_quantiles(ref, alg, q):
    """Quantiles (inverted cdf) of the ratio of means over every equally likely resample."""
    m = len(ref)
    idx = np.array(list(itertools.product(range(m), repeat=m)))
    stats = np.sort(ref[idx].mean(axis=1) / alg[idx].mean(axis=1))
    cdf = np.arange(1, len(stats) + 1) / len(stats)
    return [stats[np.searchsorted(cdf, p - 1e-12)] for p in q]


def test_ci_matches_exact_enumeration_of_resamples():
    """Five pairs (5^5 = 3125 equally likely resamples): the bootstrap bounds approach the exact
    quantiles of the resampling distribution."""
    ref, alg = np.array([30.0, 45.0, 60.0, 52.0, 38.0]), np.array([10.0, 20.0, 15.0, 18.0, 19.0])
    exact_low, exact_high = _exact_quantiles(ref, alg, [0.025, 0.975])
    su = paired_speedup(ref, alg, n_boot=200_000)
    assert su.ratio == pytest.approx(ref.sum() / alg.sum())
    assert su.low == pytest.approx(exact_low, rel=5e-3) and su.high == pytest.approx(exact_high, rel=5e-3)
    assert su.seed_min < su.low < su.ratio < su.high < su.seed_max


def test_pairs_where_either_missed_are_dropped():
    su = paired_speedup([10.0, np.nan, 30.0, 40.0], [5.0, 5.0, np.nan, 20.0])
    assert su.pairs == 2 and su.ratio == pytest.approx(50 / 25)


def test_fewer_than_two_pairs_has_no_interval():
    one = paired_speedup([10.0, np.nan], [5.0, 1.0])
    assert one.ratio == 2.0 and one.pairs == 1 and math.isnan(one.low) and math.isnan(one.high)
    assert one.interval == "none" and one.seed_min == one.seed_max == 2.0
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


# ----------------------------------------------------------------------------- edges (t = 0)


def test_time_ratio_edges_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = time_ratio([0.0, 3.0, 0.0, 6.0], [0.0, 0.0, 2.0, 3.0])
    assert list(r) == [1.0, np.inf, 0.0, 2.0]


@pytest.mark.parametrize(
    "ref, alg, ratio, case",
    [
        ([0.0] * 5, [0.0] * 5, 1.0, "both_at_start"),        # both sides at t = 0 on every seed
        ([10.0, 20.0, 15.0, 12.0, 11.0], [0.0] * 5, np.inf, "algorithm_at_start"),
        ([0.0] * 5, [10.0, 20.0, 15.0, 12.0, 11.0], 0.0, "reference_at_start"),
        ([1.0, 2.0], [0.0, 0.0], np.inf, "algorithm_at_start"),  # the paired_speedup([1, 2], [0, 0])
    ],
)
def test_edges_at_t0_are_defined_and_warning_free(ref, alg, ratio, case):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        su = paired_speedup(ref, alg)
    assert su.ratio == ratio and su.case == case and su.pairs == len(ref)
    if su.interval == "bootstrap":  # every resample is the same edge: a point interval, all counted
        assert su.low == su.high == ratio and su.boot_edge == 10_000


def test_some_seeds_at_t0_counts_every_resample():
    """3 of 5 seeds met the target at t = 0 on both sides: (3/5)^5 of the resamples (774 of 10 000
    here) are 0/0; they count as 1 (both at start) — the CI is defined and they are reported."""
    ref, alg = [0.0, 5.0, 7.0, 0.0, 0.0], [0.0, 2.0, 3.0, 0.0, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        su = paired_speedup(ref, alg)
    assert su.ratio == pytest.approx(12 / 5) and su.case == "ratio"
    assert su.boot_edge == 774
    assert su.low == 1.0 and su.high == 2.5  # both bounds are resampled statistics
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 5, size=(10_000, 5))
    both_zero = (np.array(ref)[idx].sum(axis=1) == 0) & (np.array(alg)[idx].sum(axis=1) == 0)
    assert int(both_zero.sum()) == su.boot_edge


def test_an_infinite_resample_gives_an_infinite_bound_not_nan():
    ref, alg = [2.0, 3.0, 4.0, 5.0, 6.0], [0.0, 0.0, 0.0, 1.0, 1.0]
    su = paired_speedup(ref, alg)
    assert su.ratio == pytest.approx(20 / 2) and su.high == np.inf and math.isfinite(su.low)
    assert su.seed_max == np.inf and su.boot_edge > 0


def test_negative_times_are_refused():
    with pytest.raises(ValueError, match=">= 0"):
        paired_speedup([1.0, -1.0], [1.0, 1.0])


def test_km_median_counts_unreached_seeds_as_censored():
    assert km_median([10.0, 20.0, 30.0], []) == 20.0  # no censoring: the middle time
    # the seed censored at 15 leaves one at risk at 20, which then reaches it: survival 2/3 -> 0
    assert km_median([10.0, 20.0], [15.0]) == 20.0
    assert km_median([10.0], [5.0, 30.0]) == 10.0  # two at risk at 10: survival 0.5 there
    assert math.isnan(km_median([10.0], [30.0, 30.0]))  # one of three reached it: no median
    assert math.isnan(km_median([], [30.0]))


def test_jain_index_from_one_over_n_to_one():
    assert jain_index([2.0, 2.0, 2.0]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert jain_index([1.0, 3.0]) == pytest.approx(16 / (2 * 10))
    assert math.isnan(jain_index([])) and math.isnan(jain_index([0.0, 0.0]))
    with pytest.raises(ValueError, match="finite amounts >= 0"):
        jain_index([1.0, -1.0])


def test_bootstrap_mean_ci_is_seeded_and_needs_enough_seeds():
    v = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 2.0], [4.0, 2.0], [5.0, 2.0]])
    low, high = bootstrap_mean_ci(v, n_boot=2000, seed=1)
    assert low[0] < 3.0 < high[0] and low[1] == high[1] == 2.0
    assert all((a == b).all() for a, b in zip(bootstrap_mean_ci(v, n_boot=2000, seed=1), (low, high), strict=True))
    assert np.isnan(bootstrap_mean_ci(v[:3], n_boot=100)[0]).all()
