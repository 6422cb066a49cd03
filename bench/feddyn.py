"""FedDyn / FedAvg host time per round, side by side: what FedDyn's extra state costs.

FedDyn (``sfl_sim/algorithms/fl/feddyn.py``) trains exactly as FedAvg plus a regulariser on the
local loss and a per-client and server state; its rounds should cost little more than FedAvg's
(our target: within 1.3x).  Rounds of a shipped scenario run through the simulator for both
algorithms, alternately (FedAvg first on even rounds, FedDyn first on odd ones), on the same
cohorts; prints the median round of each and the ratio FedDyn / FedAvg.  ``--profile FILE``
also writes a cProfile of FedDyn's timed rounds (read it with ``python -m pstats FILE``).

    python bench/feddyn.py                                 # CPU, default scenario, T = 2
    python bench/feddyn.py --device cuda --scenario cellular_100clients_paper --local-iterations 5
"""
from __future__ import annotations

import argparse
import cProfile
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
from sfl_sim.config import load_scenario_raw, validate  # noqa: E402
from sfl_sim.config.scenario_files import resolve_scenario  # noqa: E402
from sfl_sim.engine import Simulator  # noqa: E402
from sfl_sim.runs import runner  # noqa: E402
from sfl_sim.runs.host import load_average  # noqa: E402

ALGORITHMS = ("fedavg", "feddyn")


def measure(scenario: str = "cellular_100clients", device: str = "cpu", rounds: int = 3, local_iterations: int = 2,
            profile: Path | None = None) -> dict[str, float]:
    """Median seconds per round of FedAvg and FedDyn (same scenario, seed and cohorts), interleaved."""
    raw = load_scenario_raw(resolve_scenario(scenario))
    raw.update(device=device, eval_samples=100)
    raw.setdefault("training", {}).update(local_iterations=local_iterations)
    runs = {}
    for name in ALGORITHMS:
        cfg = validate({**raw, "algorithms": [{"name": name}]})
        run = runner.build_run(cfg, cfg.algorithms[0])
        runs[name] = (run, Simulator(run.cell, run.client_flops_per_s, cfg.server.compute_flops_per_s))
    count = cfg.clients.count
    n = cohort_size(count, cfg.clients.participation)
    rng = np.random.default_rng(0)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    profiler = cProfile.Profile() if profile is not None else None

    def one_round(name: str, cohort: np.ndarray, profiled: bool) -> float:
        run, sim = runs[name]
        sync()
        start = time.perf_counter()
        if profiled and profiler is not None:
            profiler.enable()
        sim.run_round(lambda ctx: run.algorithm.run_round(ctx, cohort), cohort)
        sync()
        if profiled and profiler is not None:
            profiler.disable()
        return time.perf_counter() - start

    times: dict[str, list[float]] = {name: [] for name in ALGORITHMS}
    for i in range(rounds + 1):  # the first pair warms up (FLOP metering, copies) and is dropped
        cohort = runs["fedavg"][0].selector.select(count, n, rng)
        for name in (ALGORITHMS if i % 2 == 0 else ALGORITHMS[::-1]):
            t = one_round(name, cohort, profiled=i > 0 and name == "feddyn")
            if i > 0:
                times[name].append(t)
    if profiler is not None and profile is not None:
        profiler.dump_stats(str(profile))
    fedavg, feddyn = statistics.median(times["fedavg"]), statistics.median(times["feddyn"])
    return {"fedavg_s": fedavg, "feddyn_s": feddyn, "ratio": feddyn / fedavg, "cohort": n}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="cellular_100clients")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per algorithm (after one warm-up)")
    parser.add_argument("--local-iterations", type=int, default=2, help="T (the scenarios: 5)")
    parser.add_argument("--profile", type=Path, default=None, help="write a cProfile of FedDyn's timed rounds here")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here")
    print(f"load average before: {load_average()}; device {args.device}, torch threads {torch.get_num_threads()}, "
          f"{args.scenario}, T = {args.local_iterations}, medians of {args.rounds} interleaved rounds", flush=True)
    r = measure(args.scenario, args.device, args.rounds, args.local_iterations, args.profile)
    print(f"load average after: {load_average()}")
    print(f"{'clients/round':>13}  {'FedAvg s':>9}  {'FedDyn s':>9}  {'FedDyn/FedAvg':>13}  want")
    print(f"{r['cohort']:>13}  {r['fedavg_s']:>9.3f}  {r['feddyn_s']:>9.3f}  {r['ratio']:>13.2f}  <= 1.3")


if __name__ == "__main__":
    main()
