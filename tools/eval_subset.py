"""Score the final global model of run directories on the whole test set and on a fixed subset.

Issue 42 asks whether the default scenario's 2,000-image evaluation subset (``eval_samples: 2000``,
drawn once per seed from the named stream ``eval_subset``, :func:`sfl_sim.runs.build.build_run`)
moves the measured accuracies.  This tool answers it without retraining: it rebuilds each run from
its own ``scenario.yaml``, loads the weights of its ``checkpoint.pt`` (the last evaluated round), and
scores that one model on the whole test set and on the subset a run with ``eval_samples: N`` would
have drawn for the same seed.

Usage::

    python tools/eval_subset.py RUN_DIR [RUN_DIR ...] [--samples 2000]

Prints one row per run: label, round, accuracy on the whole set, on the subset, and the difference
(percentage points).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from sfl_sim.config.loading import validate
from sfl_sim.kit.seeding import stream
from sfl_sim.models.evaluation import evaluate
from sfl_sim.runs import checkpoint as ckpt
from sfl_sim.runs.build import build_run
from sfl_sim.runs.rundir.files import RunDir
from sfl_sim.runs.rundir.schema import CHECKPOINT_FILE


def score(run_dir: Path, samples: int) -> tuple[str, int, float, float]:
    """(label, round, accuracy on the whole test set, accuracy on the ``samples`` subset)."""
    # scenario.yaml records the run's one algorithm as ``algorithm`` (runner.resolved_scenario) and what
    # the host used; back to a scenario's shape, read through the compatibility module like a resume.
    raw = RunDir(run_dir).read_scenario()
    raw["algorithms"] = [raw.pop("algorithm")]
    for key in ("device_used", "torch_threads_used"):
        raw.pop(key, None)
    raw["eval_samples"] = None
    cfg = validate(raw)
    spec = cfg.algorithms[0]
    run = build_run(cfg, spec, threads=1)
    state = ckpt.load(run_dir / CHECKPOINT_FILE)
    run.algorithm.load_state_dict(state.algorithm)
    model = run.algorithm.global_model()
    model.eval()
    pick = np.sort(stream(cfg.seed, "eval_subset").choice(len(run.test_y), samples, replace=False))
    rows = torch.from_numpy(pick)
    with torch.no_grad():
        whole = evaluate(model, run.test_x, run.test_y, 250)[0]
        subset = evaluate(model, run.test_x[rows], run.test_y[rows], 250)[0]
    return spec.label, state.round, float(whole), float(subset)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args(argv)
    print("run,label,round,accuracy_whole,accuracy_subset,subset_minus_whole_pp")
    for run_dir in args.run_dirs:
        label, rnd, whole, subset = score(run_dir, args.samples)
        print(f"{run_dir.name},{label},{rnd},{whole:.4f},{subset:.4f},{100 * (subset - whole):+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
