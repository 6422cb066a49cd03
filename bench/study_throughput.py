"""Study throughput: the same 4 short runs with 1 worker and with more, side by side.

Each configuration runs a study of 4 runs that do identical work (4 seeds of one scenario) into a
fresh directory; configurations alternate over ``--repeats`` rounds and the medians are compared,
so a busy machine slows both alike.  Prints runs per host second for each worker count and the
ratio to one worker.  On a CUDA machine (``--device cuda``) it compares 1, 2 and 4 workers
sharing the GPU and prints the GPU memory each run held at its peak.

    python bench/study_throughput.py                     # 1 vs 2 workers on this CPU
    python bench/study_throughput.py --device cuda --workers 1 2 4
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sfl_sim.study import StudySpec, expand  # noqa: E402
from sfl_sim.study_exec import free_cores, run_study  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "cellular_100clients.yaml"))
    parser.add_argument("--rounds", type=int, default=6, help="rounds per run")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3, help="alternating repetitions (medians are reported)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--algorithm", default="scala")
    args = parser.parse_args()
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: torch sees no CUDA device here")

    spec = StudySpec(base=args.scenario, seeds=[0, 1, 2, 3],
                     set={"rounds": args.rounds, "eval_every_rounds": args.rounds, "device": args.device,
                          "algorithms": [{"name": args.algorithm}]})
    runs = expand(spec, Path(args.scenario))
    cores = free_cores()
    seconds = {w: [] for w in args.workers}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            order = args.workers if rep % 2 == 0 else list(reversed(args.workers))
            for workers in order:
                out = Path(tmp) / f"w{workers}_r{rep}"
                start = time.perf_counter()
                results = run_study(runs, out, workers=workers, progress=False)
                seconds[workers].append(time.perf_counter() - start)
                bad = [r for r in results.values() if r["status"] != "complete"]
                if bad:
                    raise SystemExit(f"a run failed: {bad[0]}")
                peaks = [r["gpu_peak_bytes"] for r in results.values() if "gpu_peak_bytes" in r]
                if peaks:
                    print(f"workers {workers}: peak GPU memory per run {max(peaks) / 2**20:.0f} MiB")
    print(f"{len(runs)} runs of {args.rounds} rounds ({args.algorithm}, {args.device}); free cores {cores}; "
          f"threads per worker = free cores / workers; medians of {args.repeats}")
    base = len(runs) / statistics.median(seconds[args.workers[0]])
    for workers in args.workers:
        throughput = len(runs) / statistics.median(seconds[workers])
        print(f"workers {workers}: {throughput:.3f} runs/s (median {statistics.median(seconds[workers]):.1f} s); "
              f"throughput ratio vs {args.workers[0]} worker(s): {throughput / base:.2f}")


if __name__ == "__main__":
    main()
