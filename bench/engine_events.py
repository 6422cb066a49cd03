"""The engine's own cost per event, at 100 and 1,000 clients per round (no torch work at all).

A stand-in algorithm with SCALA's event pattern — per local iteration every client computes,
uploads activations and labels, the server gathers the cohort, computes once and answers every
client, each client downloads and computes again; then every client uploads its model — runs
through the real :class:`~sfl_sim.engine.Simulator` on the default scenario's cell.  Prints host
microseconds per SimPy event per cohort size (measured on a 2-core CPU: 13 us at 100 and 31 us at 1,000
clients per round, garbage collection included): flat is the goal.

    python bench/engine_events.py [--sizes 100 1000] [--rounds 5]
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

from sfl_sim.config import load_scenario  # noqa: E402
from sfl_sim.config.scenario_files import resolve_scenario  # noqa: E402
from sfl_sim.engine import SERVER, Simulator  # noqa: E402
from sfl_sim.runs.build import build_cell  # noqa: E402
from sfl_sim.runs.host import LongLivedObjects  # noqa: E402


def round_process(ctx, cohort, iterations=5):
    clients = cohort.tolist()
    yield ctx.broadcast(100_000, "client_model")
    replies = {}

    def client(k):
        for t in range(iterations):
            yield from ctx.compute(k, 1e6, "client_forward")
            yield ctx.upload(k, 40_000, "activations", block=t)
            yield ctx.upload(k, 256, "labels", block=t)
            arrived[t][k].succeed()
            yield replies[t][k]
            yield ctx.download(k, 40_000, "activation_gradients")
            yield from ctx.compute(k, 2e6, "client_backward")
        return (yield ctx.upload(k, 100_000, "client_model"))

    arrived = [{k: ctx.event() for k in clients} for _ in range(iterations)]
    replies = [{k: ctx.event() for k in clients} for _ in range(iterations)]

    def server():
        for t in range(iterations):
            kept = yield from ctx.gather(arrived[t])
            yield from ctx.compute(SERVER, 1e9, "server_step")
            for k in kept:
                replies[t][k].succeed()

    jobs = {k: ctx.process(client(k)) for k in clients}
    ctx.process(server())
    yield from ctx.gather(jobs)


def measure(size: int, rounds: int = 5) -> float:
    """Median host microseconds per SimPy event at ``size`` clients per round."""
    cfg = load_scenario(resolve_scenario("cellular_100clients"),
                        extra={"clients": {"count": 10 * size, "participation": 0.1}})
    sim = Simulator(build_cell(cfg), np.full(10 * size, 5e9), 1e12)
    rng = np.random.default_rng(0)
    per_event = []
    count = [0]
    schedule = sim.env.schedule

    def counted(*a, **kw):  # every event passes through schedule once
        count[0] += 1
        return schedule(*a, **kw)

    sim.env.schedule = counted
    long_lived = LongLivedObjects()
    try:
        for i in range(rounds + 1):
            cohort = np.sort(rng.choice(10 * size, size, replace=False))
            before = count[0]
            start = time.perf_counter()
            sim.run_round(lambda ctx, ids=cohort: round_process(ctx, ids), cohort)
            elapsed = time.perf_counter() - start
            if i == 0:
                long_lived.after_round()
            else:
                per_event.append(elapsed / (count[0] - before) * 1e6)
    finally:
        long_lived.end()
    return statistics.median(per_event)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    for size in args.sizes:
        print(f"{size:>5} clients/round: {measure(size, args.rounds):6.1f} us per event", flush=True)


if __name__ == "__main__":
    main()
