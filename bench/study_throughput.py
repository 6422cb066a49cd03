"""Study throughput: the same 4 short runs with workers x torch threads configurations, side by side.

Each configuration ``WxT`` (W workers, T torch threads each) runs a study of 4 runs that do
identical work (4 seeds of one scenario) into a fresh directory; configurations alternate over
``--repeats`` rounds and the medians are compared, so a busy machine slows all alike.  Prints runs
per host second for each configuration and the ratio to the first, the baseline ``1x1`` (one
worker, one thread: one core's throughput).  W workers on C cores can at best reach min(W, C)
times that: on the project's 2-core CPU, 2x1 against 1x1 is the number to hold to >= 1.8 (the
physical limit 2).  ``/proc/loadavg`` before and after is printed with the result, since other
jobs on the machine take cores from it.  On a CUDA machine (``--device cuda``) it prints the GPU
memory each run held at its peak.

    python bench/study_throughput.py                              # 1x1, 1x2, 2x1 on this CPU
    python bench/study_throughput.py --configs 1x1 2x1 4x1 --device cuda
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sfl_sim.runs.host import load_average  # noqa: E402
from sfl_sim.study.execute import run_study  # noqa: E402
from sfl_sim.study.plan import StudySpec, expand  # noqa: E402


def parse_config(text: str) -> tuple[int, int]:
    """``"2x1"`` -> (2 workers, 1 thread each)."""
    workers, sep, threads = text.partition("x")
    if not sep or not workers.isdigit() or not threads.isdigit() or int(workers) < 1 or int(threads) < 1:
        raise argparse.ArgumentTypeError(f"--configs: got {text!r}; allowed: WORKERSxTHREADS, e.g. 2x1")
    return int(workers), int(threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "cellular_100clients.yaml"))
    parser.add_argument("--rounds", type=int, default=6, help="rounds per run")
    parser.add_argument("--configs", type=parse_config, nargs="+", default=[(1, 1), (1, 2), (2, 1)],
                        help="WORKERSxTHREADS each; the first is the baseline (default 1x1 1x2 2x1)")
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
    configs: list[tuple[int, int]] = list(dict.fromkeys(args.configs))
    cores = os.cpu_count() or 1
    load_before = load_average()
    seconds: dict[tuple[int, int], list[float]] = {c: [] for c in configs}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            for workers, threads in (configs if rep % 2 == 0 else list(reversed(configs))):
                out = Path(tmp) / f"w{workers}t{threads}_r{rep}"
                start = time.perf_counter()
                results = run_study(runs, out, workers=workers, threads_per_worker=threads, progress=False)
                seconds[(workers, threads)].append(time.perf_counter() - start)
                bad = [r for r in results.values() if r["status"] != "complete"]
                if bad:
                    raise SystemExit(f"a run failed: {bad[0]}")
                peaks = [r["gpu_peak_bytes"] for r in results.values() if "gpu_peak_bytes" in r]
                if peaks:
                    print(f"{workers}x{threads}: peak GPU memory per run {max(peaks) / 2**20:.0f} MiB")
    print(f"{len(runs)} runs of {args.rounds} rounds ({args.algorithm}, {args.device}); {cores} cores; "
          f"medians of {args.repeats}")
    print(f"load average before: {load_before}; after: {load_average()}")
    base_w, base_t = configs[0]
    base = len(runs) / statistics.median(seconds[configs[0]])
    for workers, threads in configs:
        median_s = statistics.median(seconds[(workers, threads)])
        throughput = len(runs) / median_s
        limit = min(workers * threads, cores) / min(base_w * base_t, cores)
        print(f"{workers} worker(s) x {threads} thread(s): {throughput:.4f} runs/s (median {median_s:.1f} s); "
              f"ratio vs {base_w}x{base_t}: {throughput / base:.2f} (physical limit {limit:g})")


if __name__ == "__main__":
    main()
