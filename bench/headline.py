"""The headline study's table beside the SCALA paper's Table 4 (``studies/paper_headline.yaml``).

Reads each run directory of a study (``resolved.yaml`` for its algorithm, ``scenario.yaml`` for its
seed, ``metrics.csv``
for its evaluations, through :class:`sfl_sim.runs.rundir.reader.RunFiles`) and prints, per
algorithm, the mean +- sample standard deviation over seeds of the final accuracy, the best
accuracy and the mean of the last 10 evaluations, beside the paper's value (scala-icml.md,
Appendix F, Table 4, Fashion-MNIST, alpha = 2; the paper does not say which of the three it
reports).  Runs that stopped early count with the rounds they reached (the table says how many).

    python bench/headline.py runs/studies/paper_headline
"""
from __future__ import annotations

import argparse
import csv
import io
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from sfl_sim.runs.rundir.reader import RunFiles  # noqa: E402
from sfl_sim.runs.rundir.schema import METRICS_FILE, RESOLVED_FILE, SCENARIO_FILE  # noqa: E402

#: scala-icml.md Table 4, Fashion-MNIST, alpha = 2: mean and std over 3 seeds (%).
PAPER_TABLE4 = {"fedavg": (81.72, 2.82), "fedprox": (85.09, 1.15), "feddyn": (85.53, 1.29), "scala": (90.70, 0.23)}
#: Evaluations averaged for the "last 10" column.
LAST = 10


def run_accuracies(run_dir: Path) -> tuple[str, int, list[tuple[int, float]]]:
    """(algorithm, seed, [(round, test accuracy)]) of one run directory: the evaluations of trained
    rounds (round >= 1; the initial model's is left out, as in ``best_test_accuracy``)."""
    files = RunFiles(run_dir)
    seed = int(yaml.safe_load(files.text(SCENARIO_FILE))["seed"])
    algorithm = yaml.safe_load(files.text(RESOLVED_FILE))["components"]["algorithm"]["name"]
    rows = csv.DictReader(io.StringIO(files.text(METRICS_FILE)))
    evals = [(int(float(r["round"])), float(r["test_accuracy"])) for r in rows if r.get("test_accuracy")]
    return algorithm, seed, [(n, a) for n, a in evals if n >= 1]


def summarise(evals: Sequence[tuple[int, float]], last: int = LAST) -> dict[str, float]:
    """Final, best and the mean of the last ``last`` evaluations of one run (fractions), and its last round."""
    if not evals:
        raise ValueError("evals: got none; allowed: a run with at least one evaluation")
    acc = [a for _, a in evals]
    return {"final": acc[-1], "best": max(acc), "last_mean": statistics.fmean(acc[-last:]), "round": evals[-1][0]}


def _mean_std(values: Sequence[float]) -> str:
    pct = [100 * v for v in values]
    std = statistics.stdev(pct) if len(pct) > 1 else 0.0
    return f"{statistics.fmean(pct):6.2f} +- {std:4.2f}"


def table(study_dir: Path) -> str:
    """The side-by-side table of every run under ``study_dir`` (a run: a folder with metrics.csv)."""
    per_algorithm: dict[str, list[dict[str, float]]] = {}
    for metrics in sorted(study_dir.rglob(METRICS_FILE)):
        if not all((metrics.parent / name).is_file() for name in (SCENARIO_FILE, RESOLVED_FILE)):
            continue
        name, _seed, evals = run_accuracies(metrics.parent)
        if evals:
            per_algorithm.setdefault(name, []).append(summarise(evals))
    if not per_algorithm:
        raise SystemExit(f"{study_dir}: no run with an evaluation (metrics.csv beside scenario.yaml) under it")
    lines = [f"{'algorithm':<9}  {'seeds':>5}  {'rounds':>9}  {'final %':>14}  {'best %':>14}  "
             f"{f'last {LAST} evals %':>17}  {'paper Table 4 %':>15}"]
    order = [a for a in PAPER_TABLE4 if a in per_algorithm][::-1] + sorted(set(per_algorithm) - set(PAPER_TABLE4))
    for name in order:
        runs = per_algorithm[name]
        rounds = sorted({int(r["round"]) for r in runs})
        paper = PAPER_TABLE4.get(name)
        lines.append(f"{name:<9}  {len(runs):>5}  {'/'.join(map(str, rounds)):>9}  "
                     f"{_mean_std([r['final'] for r in runs]):>14}  {_mean_std([r['best'] for r in runs]):>14}  "
                     f"{_mean_std([r['last_mean'] for r in runs]):>17}  "
                     f"{'-' if paper is None else f'{paper[0]:6.2f} +- {paper[1]:4.2f}':>15}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study_dir", type=Path)
    args = parser.parse_args(argv)
    print(table(args.study_dir))


if __name__ == "__main__":
    main()
