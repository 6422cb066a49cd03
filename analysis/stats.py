"""Statistics over seeds: mean ± std (n) and a paired bootstrap CI of a speed-up.

Conventions used by every table of the report:

* ``std`` is the sample standard deviation, ``ddof = 1`` (``nan`` for a single seed);
* ``n`` counts the seeds with a finite value;
* the speed-up of algorithm A over reference R at a target is the ratio of mean times
  ``mean_i T_R,i / mean_i T_A,i`` over the seeds i where *both* reached the target (pairs share
  setting and seed: same cell, partition and initial weights). Its 95 % CI is the percentile
  interval of that same statistic over seeds resampled with replacement (pairs kept together),
  drawn from ``numpy.random.default_rng(seed)`` so a report is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

__all__ = [
    "DDOF",
    "N_BOOT",
    "BOOTSTRAP_SEED",
    "SpeedUp",
    "describe",
    "paired_speedup",
]

#: Degrees of freedom removed in every standard deviation of the report.
DDOF = 1
#: Bootstrap resamples per confidence interval.
N_BOOT = 10_000
#: Seed of the bootstrap generator (fresh for every interval, so intervals do not depend on
#: which other algorithms or settings are in the report).
BOOTSTRAP_SEED = 0


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


@dataclass(frozen=True)
class SpeedUp:
    """Speed-up of an algorithm over a reference, with its bootstrap CI.

    Attributes
    ----------
    ratio : float
        ``mean(T_ref) / mean(T_alg)`` over the paired seeds (``nan`` with no pair).
    low, high : float
        Percentile bootstrap CI bounds (``nan`` with fewer than two pairs).
    pairs : int
        Seeds where both reached the target.
    """

    ratio: float
    low: float
    high: float
    pairs: int


def paired_speedup(
    ref_times_s: Sequence[float],
    alg_times_s: Sequence[float],
    *,
    n_boot: int = N_BOOT,
    confidence: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
) -> SpeedUp:
    """Speed-up ``mean(ref) / mean(alg)`` over paired seeds, with a paired percentile bootstrap CI.

    Parameters
    ----------
    ref_times_s, alg_times_s : sequence of float
        Simulated times to a target (s), element i of both from the same seed; ``nan`` where
        that run did not reach the target. Pairs with a ``nan`` on either side are dropped.
    n_boot : int, optional
        Bootstrap resamples.
    confidence : float, optional
        Two-sided coverage of the interval.
    seed : int, optional
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    SpeedUp
        The statistic on the observed pairs and the ``(1 - confidence) / 2`` and
        ``(1 + confidence) / 2`` quantiles of the statistic over ``n_boot`` resamples of the pairs
        (indices drawn with replacement). With fewer than two pairs the interval is ``nan``.
    """
    ref = np.asarray(ref_times_s, dtype=float)
    alg = np.asarray(alg_times_s, dtype=float)
    if ref.shape != alg.shape:
        raise ValueError(f"paired samples differ in length: {ref.shape} vs {alg.shape}")
    ok = np.isfinite(ref) & np.isfinite(alg)
    ref, alg = ref[ok], alg[ok]
    m = int(ref.size)
    if m == 0:
        return SpeedUp(float("nan"), float("nan"), float("nan"), 0)
    ratio = float(ref.mean() / alg.mean())
    if m < 2:
        return SpeedUp(ratio, float("nan"), float("nan"), m)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, m, size=(n_boot, m))
    boot = ref[idx].mean(axis=1) / alg[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha])
    return SpeedUp(ratio, float(low), float(high), m)
