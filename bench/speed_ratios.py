"""The speed benches' ratios side by side, in one run (quick settings; each bench has flags for more).

1. simulator / bare PyTorch loop at 10, 100 and 1,000 clients per round (``bench/overhead.py``;
   target <= 1.05 at every size);
2. evaluation at the old batch (1000) / at ``eval_batch_size: auto`` (``bench/eval_batch.py``);
3. SCALA rounds with 2 / with 1 torch thread while another process holds a core
   (``bench/threads.py``);
4. loop / vectorised cohort on this device, SCALA and FedAvg (``bench/vectorised.py``);
5. an evaluated / a training-only round of the default FedAvg and SCALA through the runner
   (``bench/eval_round.py``).

Each comparison alternates its sides (or, for 5, compares adjacent rounds of one run) and reports
medians, so a busy machine slows both alike; the script prints the load average before and after,
since that is what the numbers were measured under.

    python bench/speed_ratios.py                 # CPU, about 15-20 minutes on a busy 2-core machine
    python bench/speed_ratios.py --device cuda   # the GPU's ratios (and the CPU-only thread bench)
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import eval_batch  # noqa: E402
import eval_round  # noqa: E402
import overhead  # noqa: E402
import threads  # noqa: E402
import torch  # noqa: E402
import vectorised  # noqa: E402

from sfl_sim.runs.host import load_average  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000], help="overhead: clients per round")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here")
    print(f"load average before: {load_average()}; cores {os.cpu_count()}", flush=True)
    rows = []
    for size in args.sizes:
        r = overhead.measure(size, device=args.device, rounds=3)
        rows.append((f"simulator / bare loop, {r['clients_per_round']} clients/round",
                     f"{r['sim_s']:.3f} s / {r['bare_s']:.3f} s", r["ratio"], "<= 1.05"))
        print(rows[-1], flush=True)
    r = eval_batch.measure(device=args.device, batches=[], repeats=9)
    rows.append((f"evaluation batch {eval_batch.OLD_DEFAULT} / {r['new']} ({r['images']} images)",
                  f"{r['median_s'][eval_batch.OLD_DEFAULT] * 1e3:.0f} ms / {r['median_s'][r['new']] * 1e3:.0f} ms",
                  r["ratio"], "> 1"))
    rows.append((f"evaluation with autograd (batch 1000) / now (batch {r['new']})",
                 f"{r['median_s']['before'] * 1e3:.0f} ms / {r['median_s'][r['new']] * 1e3:.0f} ms",
                 r["ratio_before"], "> 1"))
    print(rows[-2:], flush=True)
    r = threads.measure((1, 2), competitors=1, rounds=3)
    med = r["median_s"]
    rows.append((f"2 / 1 torch threads, 1 competing process (free_cores saw {r['free_cores_seen']})",
                 f"{med[2]:.3f} s / {med[1]:.3f} s", med[2] / med[1], "> 1"))
    print(rows[-1], flush=True)
    for algorithm in ("scala", "fedavg"):
        r = vectorised.measure(algorithm, 10, device=args.device, rounds=2, local_iterations=2)
        rows.append((f"loop / vectorised on {args.device}, {algorithm}, 10 clients/round",
                     f"{r['loop_s']:.3f} s / {r['vectorised_s']:.3f} s", r["ratio"], "> 1: vectorised faster"))
        print(rows[-1], flush=True)
    for algorithm in ("fedavg", "scala"):
        r = eval_round.measure(algorithm, rounds=4, device=args.device)
        rows.append((f"evaluated / training-only round, default {algorithm}",
                     f"{r['evaluated_s']:.3f} s / {r['training_s']:.3f} s", r["ratio"], "<= 2"))
        print(rows[-1], flush=True)
    print(f"load average after: {load_average()}")
    print()
    width = max(len(r[0]) for r in rows)
    print(f"{'comparison':<{width}}  {'medians':>22}  {'ratio':>6}  want")
    for what, medians, ratio, want in rows:
        print(f"{what:<{width}}  {medians:>22}  {ratio:>6.2f}  {want}")


if __name__ == "__main__":
    main()
