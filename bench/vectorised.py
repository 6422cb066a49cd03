"""Loop versus vectorised cohort, per device: the same rounds with ``execution`` loop and vectorised.

For each algorithm (``--algorithms``: SCALA, whose client side is stacked, and FedAvg, whose
whole local step is) and cohort size (``--sizes``, clients per round with 10 % participation),
rounds of the default scenario's data and model (dropout 0, which the vectorised path needs for
FedAvg's whole model) run through the simulator with both executions, alternately; prints the
median round of each and the ratio loop / vectorised (> 1: vectorised is faster).  This is the
measurement behind :data:`sfl_sim.runs.host.VECTORISED_BY_DEFAULT` (``execution: auto``).

    python bench/vectorised.py                           # CPU, 10 and 100 clients per round
    python bench/vectorised.py --device cuda --sizes 10 100 1000
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

import numpy as np  # noqa: E402
import torch  # noqa: E402

from sfl_sim.clients.selection import cohort_size  # noqa: E402
from sfl_sim.config import load_scenario_raw, validate  # noqa: E402
from sfl_sim.config.scenario_files import resolve_scenario  # noqa: E402
from sfl_sim.engine import Simulator  # noqa: E402
from sfl_sim.runs import runner  # noqa: E402


def measure(algorithm: str, size: int, device: str = "cpu", rounds: int = 3, scenario: str = "cellular_100clients",
            samples_per_client: int = 32, local_iterations: int = 5) -> dict[str, float]:
    """Median seconds per round with the loop and vectorised at ``size`` clients per round."""
    raw = load_scenario_raw(resolve_scenario(scenario))
    raw.update(device=device, eval_samples=100, algorithms=[{"name": algorithm}])
    raw.setdefault("clients", {}).update(count=10 * size, participation=0.1)
    raw.setdefault("training", {}).update(batch_size=samples_per_client * size, local_iterations=local_iterations)
    raw.setdefault("model", {}).setdefault("params", {})["dropout"] = 0.0
    runs = {}
    for execution in ("loop", "vectorised"):
        cfg = validate({**raw, "execution": execution})
        run = runner.build_run(cfg, cfg.algorithms[0])
        runs[execution] = (run, Simulator(run.cell, run.client_flops_per_s, cfg.server.compute_flops_per_s))
    n = cohort_size(10 * size, 0.1)
    rng = np.random.default_rng(0)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def one_round(execution: str, cohort: np.ndarray) -> float:
        run, sim = runs[execution]
        sync()
        start = time.perf_counter()
        sim.run_round(lambda ctx: run.algorithm.run_round(ctx, cohort), cohort)
        sync()
        return time.perf_counter() - start

    times: dict[str, list[float]] = {"loop": [], "vectorised": []}
    for i in range(rounds + 1):  # the first pair warms up and is dropped
        cohort = runs["loop"][0].selector.select(10 * size, n, rng)
        for execution in (("loop", "vectorised") if i % 2 == 0 else ("vectorised", "loop")):
            t = one_round(execution, cohort)
            if i > 0:
                times[execution].append(t)
    loop, vec = statistics.median(times["loop"]), statistics.median(times["vectorised"])
    return {"loop_s": loop, "vectorised_s": vec, "ratio": loop / vec}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithms", nargs="+", default=["scala", "fedavg"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100], help="clients per round")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples-per-client", type=int, default=32, help="B_k (the scenario: 32)")
    parser.add_argument("--local-iterations", type=int, default=2, help="T (the scenario: 5)")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here")
    print(f"device {args.device}, torch threads {torch.get_num_threads()}, B_k = {args.samples_per_client}, "
          f"T = {args.local_iterations}, medians of {args.rounds} rounds")
    print(f"{'algorithm':>10} {'clients/round':>13}  {'loop s':>8}  {'vectorised s':>12}  {'loop/vectorised':>15}")
    for algorithm in args.algorithms:
        for size in args.sizes:
            r = measure(algorithm, size, args.device, args.rounds, samples_per_client=args.samples_per_client,
                        local_iterations=args.local_iterations)
            print(f"{algorithm:>10} {size:>13}  {r['loop_s']:>8.3f}  {r['vectorised_s']:>12.3f}  {r['ratio']:>15.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
