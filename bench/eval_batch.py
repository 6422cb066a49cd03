"""Evaluation time versus the test batch, per device: the old default (1000) against ``auto``.

Scores the default scenario's initial global model on its test subset (2,000 images) with every
batch size in ``--batches``, interleaved over ``--repeats`` passes so a busy machine slows all of
them alike, and prints the median time of each, the ratio old / new (> 1: the new default is
faster) and how far accuracy and loss moved (they may differ only by float summation order).
``--scenario cellular_100clients_paper`` times the papers' full-width AlexNet on the whole test set.

    python bench/eval_batch.py                       # CPU, default scenario
    python bench/eval_batch.py --device cuda --batches 250 500 1000 2000 5000
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from sfl_sim.config import AlgorithmSpec, load_scenario  # noqa: E402
from sfl_sim.config.scenario_files import resolve_scenario  # noqa: E402
from sfl_sim.runs.build import build_run  # noqa: E402
from sfl_sim.runs.host import EVAL_BATCH_SIZE, eval_batch_size  # noqa: E402
from sfl_sim.runs.runner import evaluate  # noqa: E402

OLD_DEFAULT = 1000


def evaluate_before(model, x, y, batch_size):
    """The naive evaluation loop (autograd on, two host syncs per batch): the reference the
    evaluation path is measured against."""
    import warnings

    import torch.nn.functional as F

    warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")
    was_training = model.training
    model.eval()
    correct, loss_sum = 0, 0.0
    for start in range(0, len(y), batch_size):
        logits = model(x[start:start + batch_size])
        target = y[start:start + batch_size]
        loss_sum += float(F.cross_entropy(logits, target, reduction="sum"))
        correct += int((logits.argmax(dim=1) == target).sum())
    model.train(was_training)
    return correct / len(y), loss_sum / len(y)


def measure(scenario: str = "cellular_100clients", device: str = "cpu",
            batches: Sequence[int] = (100, 250, 500, 1000, 2000), repeats: int = 7) -> dict[str, object]:
    """Median seconds of an evaluation per batch size, the scores, and the old and new batch."""
    cfg = load_scenario(resolve_scenario(scenario), extra={"device": device})
    run = build_run(cfg, AlgorithmSpec(name="fedavg"))
    model, x, y = run.algorithm.global_model(), run.test_x, run.test_y
    new = eval_batch_size("auto", run.device)
    batches = sorted(set(batches) | {OLD_DEFAULT, new})
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    cases = [(b, evaluate) for b in batches] + [("before", None)]
    times: dict[object, list[float]] = {b: [] for b, _ in cases}
    scores = {}

    def call(b):
        return evaluate_before(model, x, y, OLD_DEFAULT) if b == "before" else evaluate(model, x, y, b)

    for b, _ in cases:  # warm-up pass (allocator, kernel choice), not timed
        scores[b] = call(b)
    for rep in range(repeats):
        for b, _ in (cases if rep % 2 == 0 else list(reversed(cases))):
            sync()
            start = time.perf_counter()
            call(b)
            sync()
            times[b].append(time.perf_counter() - start)
    median = {b: statistics.median(v) for b, v in times.items()}
    return {"name": cfg.name, "images": len(y), "device": run.device.type, "new": new, "median_s": median,
            "scores": scores, "ratio": median[OLD_DEFAULT] / median[new],
            "ratio_before": median["before"] / median[new]}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="cellular_100clients", help="scenario file or shipped name")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--batches", type=int, nargs="+", default=[100, 250, 500, 1000, 2000])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here")
    r = measure(args.scenario, args.device, args.batches, args.repeats)
    print(f"{r['name']} on {r['device']}: {r['images']} test images, torch threads {torch.get_num_threads()}, "
          f"medians of {args.repeats}; auto = {r['new']} on {r['device']} (table: {EVAL_BATCH_SIZE})")
    ref_acc, ref_loss = r["scores"][OLD_DEFAULT]
    for b, t in r["median_s"].items():
        acc, loss = r["scores"][b]
        what = (f"batch {b:>5}" if b != "before"
                else f"naive loop, batch {OLD_DEFAULT} (autograd on, 2 syncs per batch)")
        print(f"  {what}: {t * 1e3:8.1f} ms   accuracy {acc:.4f} "
              f"(diff {acc - ref_acc:+.1e})  loss {loss:.7f} (rel. diff {(loss - ref_loss) / ref_loss:+.1e})")
    print(f"evaluation ratio batch {OLD_DEFAULT} / auto ({r['new']}): {r['ratio']:.2f}; naive loop / now: "
          f"{r['ratio_before']:.2f}  (> 1: now is faster)")


if __name__ == "__main__":
    main()
