"""Student-t intervals for a small study: time to target per setting, and effects paired by seed.

The report (``sfl-sim report``) gives a bootstrap interval for a speed-up from 5 seed pairs on and
only the per-seed range below that.  A study of 3 seeds whose settings share their training (a
re-timed grid: the same seed's runs differ only in timing) still supports an interval of the
effect of a setting paired by seed; this tool computes it under the normal model (our choice):

* the mean time to each target per setting and algorithm, with its 95 % Student-t interval
  ``mean +- t(0.975, k-1) s / sqrt(k)`` over the k seeds that reached it;
* per algorithm, the effect of each setting against a reference setting: the geometric mean over
  seeds of ``time(reference setting) / time(setting)`` (same algorithm and seed), its interval the
  t interval of the log ratios taken back by ``exp``;
* with ``--reference-algorithm``, each algorithm's speed-up over it per setting (the geometric mean
  of the per-seed ratios ``time(reference algorithm) / time(algorithm)``) and how that speed-up
  changes against the reference setting (per seed, the ratio of the two speed-ups), both with the
  same log-t interval.

The time to a target is the report's: the first evaluation with ``test_accuracy >= target``
(:func:`sfl_sim.analysis.tta.first_reaching`); a pair where either run did not reach it is left
out, and the counts say how many pairs were used.

Usage::

    python tools/paired_intervals.py STUDY_DIR --reference-setting scheduler=static \\
        [--reference-algorithm fedavg] [--targets 0.6,0.7] [--confidence 0.95]
"""
from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from sfl_sim.analysis import StudyData, load_study
from sfl_sim.analysis.report import parse_targets
from sfl_sim.analysis.tta import first_reaching


@dataclass(frozen=True)
class Interval:
    """A point estimate with its two-sided interval, from ``n`` values (NaN bounds below 2)."""

    estimate: float
    low: float
    high: float
    n: int

    def text(self, fmt: str = "{:.3g}", suffix: str = "") -> str:
        if self.n == 0:
            return "–"
        if self.n < 2:
            return f"{fmt.format(self.estimate)}{suffix} (1)"
        return (f"{fmt.format(self.estimate)}{suffix} [{fmt.format(self.low)}, {fmt.format(self.high)}] "
                f"({self.n})")


def mean_interval(values: Iterable[float], confidence: float = 0.95) -> Interval:
    """Mean and Student-t interval ``mean +- t((1 + c) / 2, n - 1) s / sqrt(n)`` (s with ddof = 1)."""
    x = np.asarray([float(v) for v in values if math.isfinite(v)], dtype=float)
    if x.size == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    mean = float(x.mean())
    if x.size < 2:
        return Interval(mean, math.nan, math.nan, 1)
    half = float(stats.t.ppf((1.0 + confidence) / 2.0, x.size - 1)) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return Interval(mean, mean - half, mean + half, int(x.size))


def ratio_interval(ratios: Iterable[float], confidence: float = 0.95) -> Interval:
    """Geometric mean of positive ratios, with the Student-t interval of their logs taken back by exp."""
    logs = mean_interval([math.log(r) for r in ratios if math.isfinite(r) and r > 0], confidence)
    back = [math.exp(v) if math.isfinite(v) else math.nan for v in (logs.estimate, logs.low, logs.high)]
    return Interval(back[0], back[1], back[2], logs.n)


def times_to_target(study: StudyData, target: float) -> pd.DataFrame:
    """One row per run: ``setting``, ``algorithm``, ``seed``, ``tta_s`` (NaN: did not reach ``target``)."""
    out = study.runs[["run_id", "setting", "algorithm", "seed"]].copy()
    out["tta_s"] = out["run_id"].map(first_reaching(study.metrics, target)["sim_time_s"]).astype(float)
    return out


def report(times: pd.DataFrame, reference_setting: str, reference_algorithm: str | None = None,
           confidence: float = 0.95) -> list[str]:
    """The tool's lines for one target's ``times`` (:func:`times_to_target`)."""
    settings = list(dict.fromkeys(times["setting"]))
    algorithms = sorted(times["algorithm"].unique())
    if reference_setting not in settings:
        raise SystemExit(f"--reference-setting: {reference_setting!r} is not a setting of the study; "
                         f"allowed: {', '.join(settings)}")
    if reference_algorithm is not None and reference_algorithm not in algorithms:
        raise SystemExit(f"--reference-algorithm: {reference_algorithm!r} is not an algorithm of the study; "
                         f"allowed: {', '.join(algorithms)}")
    t = times.set_index(["setting", "algorithm", "seed"])["tta_s"]
    seeds = sorted(times["seed"].unique())
    pct = f"{confidence:.0%}"

    def at(setting: str, algorithm: str) -> np.ndarray:
        return np.array([t.get((setting, algorithm, s), math.nan) for s in seeds], dtype=float)

    lines = [f"  mean time (s) [{pct} t interval] (seeds reached):"]
    for a in algorithms:
        lines.append(f"    {a}: " + "; ".join(f"{s} {mean_interval(at(s, a), confidence).text()}" for s in settings))
    lines.append(f"  effect against {reference_setting}, paired by seed (time there / time here; geometric "
                 f"mean [{pct} t interval on logs] (pairs)):")
    for a in algorithms:
        base = at(reference_setting, a)
        lines.append(f"    {a}: " + "; ".join(f"{s} {ratio_interval(base / at(s, a), confidence).text(suffix='x')}"
                                             for s in settings if s != reference_setting))
    if reference_algorithm is not None:
        ref = {s: at(s, reference_algorithm) for s in settings}
        lines.append(f"  speed-up over {reference_algorithm} ({reference_algorithm}'s time / the algorithm's, "
                     f"per seed; geometric mean [{pct} t interval on logs] (pairs)), and its change against "
                     f"{reference_setting}:")
        for a in (a for a in algorithms if a != reference_algorithm):
            up = {s: ref[s] / at(s, a) for s in settings}
            lines.append(f"    {a}: " + "; ".join(f"{s} {ratio_interval(up[s], confidence).text(suffix='x')}"
                                                 for s in settings))
            lines.append(f"    {a} change: " + "; ".join(
                f"{s} {ratio_interval(up[s] / up[reference_setting], confidence).text(suffix='x')}"
                for s in settings if s != reference_setting))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study_dir")
    parser.add_argument("--reference-setting", required=True, help="a setting label, e.g. scheduler=static")
    parser.add_argument("--reference-algorithm", default=None)
    parser.add_argument("--targets", default="0.6,0.7", help="fractions, comma-separated (default 0.6,0.7)")
    parser.add_argument("--confidence", type=float, default=0.95)
    args = parser.parse_args(argv)
    if not 0.0 < args.confidence < 1.0:
        raise SystemExit(f"--confidence: {args.confidence} is not allowed; a fraction in (0, 1)")
    try:
        targets = parse_targets(args.targets)
    except ValueError as exc:
        raise SystemExit(f"--targets: {exc}") from None
    study = load_study(args.study_dir)
    for target in targets:
        print(f"time to {target:.0%}:")
        print("\n".join(report(times_to_target(study, target), args.reference_setting,
                               args.reference_algorithm, args.confidence)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
