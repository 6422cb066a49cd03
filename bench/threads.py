"""Torch threads on a shared machine: SCALA rounds with 1 and with 2 threads while another process
holds a core.

Starts ``--competitors`` processes that spin on a core each (the "other engineer's job"), then
runs rounds of the default scenario through the simulator with ``torch.set_num_threads(1)`` and
``(2)`` alternately, and prints the median round of each and the ratio 2 threads / 1 thread
(> 1: the second thread hurts, as measured on a busy 2-core CPU: 3.58 s against 1.51 s).  It also prints
what :func:`sfl_sim.runs.host.free_cores` sees meanwhile, i.e. the thread count a run would now
default to.  ``--competitors 0`` measures the idle machine (where 2 threads should win).

    python bench/threads.py                      # one competing process
    python bench/threads.py --competitors 0      # idle
    python bench/threads.py --threads 1 2 4 --rounds 8
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from sfl_sim.clients.selection import cohort_size  # noqa: E402
from sfl_sim.config import AlgorithmSpec, load_scenario  # noqa: E402
from sfl_sim.config.scenario_files import resolve_scenario  # noqa: E402
from sfl_sim.engine import Simulator  # noqa: E402
from sfl_sim.runs import runner  # noqa: E402
from sfl_sim.runs.host import free_cores  # noqa: E402


def _spin(stop: multiprocessing.synchronize.Event) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def measure(threads: Sequence[int] = (1, 2), competitors: int = 1, rounds: int = 5,
            scenario: str = "cellular_100clients", algorithm: str = "scala") -> dict[str, object]:
    """Median seconds per round for each thread count, with ``competitors`` spinning processes."""
    cfg = load_scenario(resolve_scenario(scenario), extra={"device": "cpu"})
    run = runner.build_run(cfg, AlgorithmSpec(name=algorithm), threads=max(threads))
    sim = Simulator(run.cell, run.client_flops_per_s, cfg.server.compute_flops_per_s)
    n = cohort_size(cfg.clients.count, cfg.clients.participation)
    rng = np.random.default_rng(0)
    before = torch.get_num_threads()

    def one_round() -> float:
        cohort = run.selector.select(cfg.clients.count, n, rng)
        start = time.perf_counter()
        sim.run_round(lambda ctx: run.algorithm.run_round(ctx, cohort), cohort)
        return time.perf_counter() - start

    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    procs = [ctx.Process(target=_spin, args=(stop,), daemon=True) for _ in range(competitors)]
    for p in procs:
        p.start()
    times: dict[int, list[float]] = {t: [] for t in threads}
    try:
        time.sleep(0.5)
        seen_free = free_cores()
        for t in threads:  # warm-up per count (thread pools, allocator, FLOP metering)
            torch.set_num_threads(t)
            one_round()
        for rep in range(rounds):
            for t in (threads if rep % 2 == 0 else list(reversed(threads))):
                torch.set_num_threads(t)
                times[t].append(one_round())
    finally:
        stop.set()
        for p in procs:
            p.join()
        torch.set_num_threads(before)
    return {"median_s": {t: statistics.median(v) for t, v in times.items()}, "free_cores_seen": seen_free}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--competitors", type=int, default=1, help="processes spinning on a core each")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per thread count")
    parser.add_argument("--scenario", default="cellular_100clients")
    parser.add_argument("--algorithm", default="scala")
    args = parser.parse_args(argv)
    r = measure(args.threads, args.competitors, args.rounds, args.scenario, args.algorithm)
    print(f"{args.algorithm} rounds of {args.scenario} on CPU, {args.competitors} competing process(es); "
          f"free_cores() saw {r['free_cores_seen']} free (a run would default to that many threads); "
          f"medians of {args.rounds}")
    med = r["median_s"]
    for t, s in med.items():
        print(f"  {t} thread(s): {s:.3f} s per round")
    lo, hi = min(med), max(med)
    print(f"ratio {hi} threads / {lo} thread(s): {med[hi] / med[lo]:.2f}  (> 1: more threads are slower here)")


if __name__ == "__main__":
    main()
