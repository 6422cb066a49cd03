"""Statistics over seeds: mean ± std (n) and a paired speed-up with its interval.

Conventions used by every table of the report:

* ``std`` is the sample standard deviation, ``ddof = 1`` (``nan`` for a single seed);
* ``n`` counts the seeds with a finite value;
* the speed-up of algorithm A over reference R at a target is the ratio of mean times
  ``mean_i T_R,i / mean_i T_A,i`` over the seeds i where *both* reached the target (pairs share
  setting and seed: same cell, partition and initial weights). A time of 0 is a target met by
  the initial model (a round-0 evaluation), so the ratio has edges, defined by :func:`time_ratio`:
  both means 0 is a speed-up of 1 ("both at start": neither is faster), only the algorithm's
  mean 0 is ``inf``, only the reference's mean 0 is 0.
* with at least :data:`MIN_PAIRS_FOR_CI` pairs, the 95 % CI is the percentile interval of that
  same statistic over seeds resampled with replacement (pairs kept together), drawn from
  ``numpy.random.default_rng(seed)`` so a report is reproducible. Every resample counts: its
  statistic follows the same edge rule (a resample of only "both at start" seeds is 1), so none
  is undefined or dropped; how many resamples took an edge value is reported
  (:attr:`SpeedUp.boot_edge`). The bounds are order statistics of the resampled values
  (numpy's ``inverted_cdf``), so an infinite resample gives an infinite bound, never ``nan``.
* with fewer pairs the percentile bootstrap is not a 95 % interval: with m pairs each of the m
  resamples that repeat one seed has probability m^-m (1/4 for m = 2, 1/27 for m = 3, both
  above 2.5 %), so the interval is exactly the range of the per-seed ratios, and for m = 4 it
  still covers far less than 95 %. Below :data:`MIN_PAIRS_FOR_CI` pairs no CI is given; the
  range of the per-seed ratios ``T_R,i / T_A,i`` is reported instead and labelled as not a CI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "DDOF",
    "N_BOOT",
    "BOOTSTRAP_SEED",
    "MIN_PAIRS_FOR_CI",
    "MIN_SEEDS_FOR_CI",
    "SpeedUp",
    "bootstrap_mean_ci",
    "jain_index",
    "km_median",
    "describe",
    "time_ratio",
    "paired_speedup",
]

#: Degrees of freedom removed in every standard deviation of the report.
DDOF = 1
#: Bootstrap resamples per confidence interval.
N_BOOT = 10_000
#: Seed of the bootstrap generator (fresh for every interval, so intervals do not depend on
#: which other algorithms or settings are in the report).
BOOTSTRAP_SEED = 0
#: Fewest pairs for which a bootstrap CI is given (below it: the per-seed ratios' range).
MIN_PAIRS_FOR_CI = 5
#: Fewest seeds for which a bootstrap CI of a mean is given: the same small-sample rule as the
#: speed-up's (with m seeds, each resample that repeats one seed has probability m^-m).
MIN_SEEDS_FOR_CI = MIN_PAIRS_FOR_CI

#: :attr:`SpeedUp.case` values.
CASE_RATIO = "ratio"
CASE_BOTH_AT_START = "both_at_start"
CASE_ALG_AT_START = "algorithm_at_start"
CASE_REF_AT_START = "reference_at_start"
CASE_NO_PAIRS = "no_pairs"

#: :attr:`SpeedUp.interval` values.
INTERVAL_BOOTSTRAP = "bootstrap"
INTERVAL_SEED_RANGE = "seed_range"
INTERVAL_NONE = "none"


def describe(frame: pd.DataFrame, by: Sequence[str], columns: Sequence[str]) -> pd.DataFrame:
    """Mean, sample std (ddof 1) and count of finite values of columns, per group.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per run (seed).
    by : sequence of str
        Grouping columns, e.g. ``["setting", "algorithm"]``.
    columns : sequence of str
        Numeric columns to describe.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``by``; columns ``<col>_mean``, ``<col>_std``, ``<col>_n`` for each column.
    """
    g = frame.groupby(list(by), sort=False, dropna=False)[list(columns)]
    mean, std, n = g.mean(), g.std(ddof=DDOF), g.count()
    out = pd.concat(
        {f"{c}_{stat}": part[c] for c in columns for stat, part in (("mean", mean), ("std", std), ("n", n))},
        axis=1,
    )
    return out


def time_ratio(ref_s: np.ndarray | float, alg_s: np.ndarray | float) -> np.ndarray:
    """``ref / alg`` of non-negative times with its edges defined (no numpy warning).

    Parameters
    ----------
    ref_s, alg_s : array_like of float
        Times (s), broadcastable, finite and >= 0.

    Returns
    -------
    numpy.ndarray
        ``ref / alg``; 1 where both are 0 (both met the target at the start: neither is
        faster); ``inf`` where only ``alg`` is 0; 0 where only ``ref`` is 0.
    """
    ref, alg = np.broadcast_arrays(np.asarray(ref_s, dtype=float), np.asarray(alg_s, dtype=float))
    out = np.ones(ref.shape)
    only_alg = (alg == 0) & (ref != 0)
    out[only_alg] = np.inf
    regular = alg != 0
    np.divide(ref, alg, out=out, where=regular)
    return out


@dataclass(frozen=True)
class SpeedUp:
    """Speed-up of an algorithm over a reference, with its interval.

    Attributes
    ----------
    ratio : float
        ``mean(T_ref) / mean(T_alg)`` over the paired seeds with the edges of :func:`time_ratio`
        (``nan`` with no pair).
    low, high : float
        Percentile bootstrap 95 % CI bounds; ``nan`` below :data:`MIN_PAIRS_FOR_CI` pairs.
    pairs : int
        Seeds where both reached the target.
    seed_min, seed_max : float
        Range of the per-seed ratios ``T_ref,i / T_alg,i`` (edges as :func:`time_ratio`);
        ``nan`` with no pair.
    case : str
        How ``ratio`` was obtained: ``"ratio"``, ``"both_at_start"`` (both means 0: 1),
        ``"algorithm_at_start"`` (``inf``), ``"reference_at_start"`` (0) or ``"no_pairs"``.
    interval : str
        ``"bootstrap"`` (``low``/``high`` are the CI), ``"seed_range"`` (fewer than
        :data:`MIN_PAIRS_FOR_CI` pairs: only ``seed_min``/``seed_max``) or ``"none"`` (< 2 pairs).
    boot_edge : int
        Bootstrap resamples whose statistic took an edge value (a mean time of 0 on either side);
        they are part of the interval, not dropped.
    """

    ratio: float
    low: float
    high: float
    pairs: int
    seed_min: float = float("nan")
    seed_max: float = float("nan")
    case: str = CASE_NO_PAIRS
    interval: str = INTERVAL_NONE
    boot_edge: int = 0


def _case(ref_mean: float, alg_mean: float) -> str:
    if ref_mean == 0 and alg_mean == 0:
        return CASE_BOTH_AT_START
    if alg_mean == 0:
        return CASE_ALG_AT_START
    if ref_mean == 0:
        return CASE_REF_AT_START
    return CASE_RATIO


def paired_speedup(
    ref_times_s: Sequence[float],
    alg_times_s: Sequence[float],
    *,
    n_boot: int = N_BOOT,
    confidence: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    min_pairs: int = MIN_PAIRS_FOR_CI,
) -> SpeedUp:
    """Speed-up ``mean(ref) / mean(alg)`` over paired seeds, with a paired percentile bootstrap CI.

    Parameters
    ----------
    ref_times_s, alg_times_s : sequence of float
        Simulated times to a target (s, >= 0), element i of both from the same seed; ``nan``
        where that run did not reach the target. Pairs with a ``nan`` on either side are dropped.
    n_boot : int, optional
        Bootstrap resamples.
    confidence : float, optional
        Two-sided coverage of the interval.
    seed : int, optional
        Seed of ``numpy.random.default_rng``.
    min_pairs : int, optional
        Fewest pairs for a CI (at least 2); below it only the per-seed ratios' range is given.

    Returns
    -------
    SpeedUp
        The statistic on the observed pairs (edges as :func:`time_ratio`), the per-seed ratios'
        range, and with ``min_pairs`` or more pairs the ``(1 - confidence) / 2`` and
        ``(1 + confidence) / 2`` quantiles (``inverted_cdf``: order statistics) of the statistic
        over ``n_boot`` resamples of the pairs (indices drawn with replacement), every resample
        counted with the same edge rule.

    Raises
    ------
    ValueError
        If the two samples differ in length, a time is negative, or ``min_pairs < 2``.
    """
    ref = np.asarray(ref_times_s, dtype=float)
    alg = np.asarray(alg_times_s, dtype=float)
    if ref.shape != alg.shape:
        raise ValueError(f"paired samples differ in length: {ref.shape} vs {alg.shape}")
    if min_pairs < 2:
        raise ValueError(f"min_pairs must be at least 2, got {min_pairs}")
    ok = np.isfinite(ref) & np.isfinite(alg)
    ref, alg = ref[ok], alg[ok]
    if (ref < 0).any() or (alg < 0).any():
        raise ValueError("times to a target must be >= 0")
    m = int(ref.size)
    if m == 0:
        return SpeedUp(float("nan"), float("nan"), float("nan"), 0)
    ref_mean, alg_mean = float(ref.mean()), float(alg.mean())
    ratio = float(time_ratio(ref_mean, alg_mean))
    per_seed = time_ratio(ref, alg)
    seed_min, seed_max, case = float(per_seed.min()), float(per_seed.max()), _case(ref_mean, alg_mean)
    if m < min_pairs:
        interval = INTERVAL_SEED_RANGE if m >= 2 else INTERVAL_NONE
        return SpeedUp(ratio, float("nan"), float("nan"), m, seed_min, seed_max, case, interval)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, m, size=(n_boot, m))
    ref_b, alg_b = ref[idx].mean(axis=1), alg[idx].mean(axis=1)
    boot = time_ratio(ref_b, alg_b)
    edge = int(np.count_nonzero((ref_b == 0) | (alg_b == 0)))
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha], method="inverted_cdf")
    return SpeedUp(ratio, float(low), float(high), m, seed_min, seed_max, case, INTERVAL_BOOTSTRAP, edge)


def bootstrap_mean_ci(values: np.ndarray, *, n_boot: int = N_BOOT, confidence: float = 0.95,
                      seed: int = BOOTSTRAP_SEED, min_seeds: int = MIN_SEEDS_FOR_CI) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap CI of the mean over seeds, at every point of a curve at once.

    Parameters
    ----------
    values : numpy.ndarray, shape (m, g)
        One row per seed, one column per point (e.g. a grid of simulated times), all finite.
    n_boot, confidence, seed
        As :func:`paired_speedup`: resamples, two-sided coverage, seed of ``numpy.random.default_rng``.
    min_seeds : int, optional
        Fewest seeds for an interval (default :data:`MIN_SEEDS_FOR_CI`); below it both bounds are ``nan``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray), each shape (g,)
        The ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles (``inverted_cdf``: resampled
        values) of the mean over ``n_boot`` resamples of the seeds drawn with replacement; the same
        resampled seeds at every point, so the band is the interval of one curve, point by point.
    """
    v = np.atleast_2d(np.asarray(values, dtype=float))
    m, g = v.shape
    if m < max(min_seeds, 2):
        nan = np.full(g, np.nan)
        return nan, nan.copy()
    rng = np.random.default_rng(seed)
    # each resample as counts of the seeds it drew: its mean is counts @ values / m
    counts = rng.multinomial(m, np.full(m, 1.0 / m), size=n_boot).astype(float)
    means = counts @ v / m
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha], axis=0, method="inverted_cdf")
    return low, high


def jain_index(values: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)`` of non-negative amounts (R. Jain, D. Chiu and
    W. Hawe, "A quantitative measure of fairness and discrimination for resource allocation in shared
    computer systems", DEC-TR-301, 1984, eq. 1).

    Parameters
    ----------
    values : sequence of float
        One amount per user, >= 0 (e.g. the joules each client spent).

    Returns
    -------
    float
        From ``1 / n`` (one user has everything) to 1 (all equal); ``nan`` without users or when
        every amount is 0.

    Raises
    ------
    ValueError
        If an amount is negative or not finite.
    """
    x = np.asarray(values, dtype=float)
    if x.size and (not np.all(np.isfinite(x)) or (x < 0).any()):
        raise ValueError("Jain's index needs finite amounts >= 0")
    total, squares = float(x.sum()), float((x ** 2).sum())
    if x.size == 0 or squares == 0.0:
        return float("nan")
    return total ** 2 / (x.size * squares)


def km_median(reached_s: Sequence[float] | np.ndarray, censored_s: Sequence[float] | np.ndarray) -> float:
    """Kaplan–Meier median time to an event over seeds, the seeds without it counted as censored.

    The survival function is :func:`scipy.stats.ecdf` of right-censored data (the Kaplan–Meier
    product-limit estimate, E. L. Kaplan and P. Meier, JASA 53(282), 1958); its median is the
    earliest time at which the estimated survival is 0.5 or less.

    Parameters
    ----------
    reached_s : sequence of float
        The times of the seeds that reached the event (e.g. a target accuracy), s.
    censored_s : sequence of float
        For each seed that did not, the last time it was observed (its last evaluation), s.

    Returns
    -------
    float
        The median, s; ``nan`` when the survival never falls to 0.5 (fewer than half of the seeds
        reached it before the censoring left too few at risk) or there are no seeds.
    """
    from scipy.stats import CensoredData, ecdf

    done = np.asarray(reached_s, dtype=float)
    cens = np.asarray(censored_s, dtype=float)
    if done.size == 0:
        return float("nan")
    sf = ecdf(CensoredData(uncensored=done, right=cens)).sf
    below = np.flatnonzero(sf.probabilities <= 0.5)
    return float(sf.quantiles[below[0]]) if below.size else float("nan")
