"""The engine's own cost per event, at 100 and 1,000 clients per round (no torch work at all).

A stand-in algorithm with SCALA's event pattern — per local iteration every client computes,
uploads activations and labels, the server gathers the cohort, computes once and answers every
client, each client downloads and computes again; then every client uploads its model — runs
through the real :class:`~sfl_sim.engine.Simulator` on the default scenario's cell.  Prints, per
cohort size, the median host microseconds per SimPy event (garbage collection included; every
event passes through ``env.schedule`` once), the events per round and the host milliseconds per
round: flat is the goal.  Each upload is one link process, two events more than the bare timeout it
was before (the process's start and its end): on the shared 2-core CPU, loaded, side by side with
the code before that change, the cost per event stayed within noise (ratios 0.78-1.07 at 100 and
0.91-1.00 at 1,000 clients per round, 11-19 us per event), the events per round rose 1.58 x and
the host time per round of this torch-free stand-in 1.2-1.7 x (SCALA's real rounds,
``bench/overhead.py``, do not see it above their noise).

    python bench/engine_events.py [--sizes 100 1000] [--rounds 5]

Side by side with another checkout (e.g. ``git archive main | tar -x -C /tmp/base``): each side
runs in its own process, the pairs interleaved (this tree, the other, the other, this tree...) so
machine noise hits both alike; the medians over the pairs and their ratios are printed.

    python bench/engine_events.py --baseline /tmp/base [--pairs 6] [--sizes 100 1000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def round_process(ctx: Any, cohort: Any, server: int, iterations: int = 5) -> Any:
    clients = cohort.tolist()
    yield ctx.broadcast(100_000, "client_model")

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

    def server_process():
        for t in range(iterations):
            kept = yield from ctx.gather(arrived[t])
            yield from ctx.compute(server, 1e9, "server_step")
            for k in kept:
                replies[t][k].succeed()

    jobs = {k: ctx.process(client(k)) for k in clients}
    ctx.process(server_process())
    yield from ctx.gather(jobs)


def measure(size: int, rounds: int = 5) -> dict[str, float]:
    """Medians over ``rounds`` rounds at ``size`` clients per round: host microseconds per SimPy
    event, events per round and host milliseconds per round."""
    import numpy as np

    from sfl_sim.config import load_scenario
    from sfl_sim.config.scenario_files import resolve_scenario
    from sfl_sim.engine import SERVER, Simulator
    from sfl_sim.runs.build import build_cell
    from sfl_sim.runs.host import LongLivedObjects

    cfg = load_scenario(resolve_scenario("cellular_100clients"),
                        extra={"clients": {"count": 10 * size, "participation": 0.1}})
    sim = Simulator(build_cell(cfg), np.full(10 * size, 5e9), 1e12)
    rng = np.random.default_rng(0)
    per_event, events, per_round = [], [], []
    count = [0]
    schedule = sim.env.schedule

    def counted(*a, **kw):  # every event passes through schedule once
        count[0] += 1
        return schedule(*a, **kw)

    sim.env.schedule = counted  # type: ignore[method-assign]
    long_lived = LongLivedObjects()
    try:
        for i in range(rounds + 1):
            cohort = np.sort(rng.choice(10 * size, size, replace=False))
            before = count[0]
            start = time.perf_counter()
            sim.run_round(lambda ctx, ids=cohort: round_process(ctx, ids, SERVER), cohort)
            elapsed = time.perf_counter() - start
            if i == 0:
                long_lived.after_round()
            else:
                per_event.append(elapsed / (count[0] - before) * 1e6)
                events.append(count[0] - before)
                per_round.append(elapsed * 1e3)
    finally:
        long_lived.end()
    return {"us_per_event": statistics.median(per_event), "events_per_round": statistics.median(events),
            "ms_per_round": statistics.median(per_round)}


def _in_process(root: Path, sizes: Sequence[int], rounds: int) -> dict[str, Any]:
    """:func:`measure` of the code under ``root``, in a fresh process."""
    out = subprocess.run([sys.executable, __file__, "--root", str(root), "--rounds", str(rounds), "--json",
                          "--sizes", *map(str, sizes)], check=True, capture_output=True, text=True)
    return dict(json.loads(out.stdout))


def side_by_side(baseline: Path, sizes: Sequence[int], rounds: int, pairs: int) -> None:
    """Print this tree's medians next to ``baseline``'s, interleaved over ``pairs`` pairs of processes."""
    runs: dict[str, list[dict[str, Any]]] = {"this": [], "baseline": []}
    for i in range(pairs):
        order = (("this", ROOT), ("baseline", baseline)) if i % 2 == 0 else (("baseline", baseline), ("this", ROOT))
        for side, root in order:
            runs[side].append(_in_process(root, sizes, rounds))
    print(f"this tree {ROOT} ({runs['this'][0]['package']}) vs baseline {baseline} "
          f"({runs['baseline'][0]['package']}); medians of {pairs} processes per side, {rounds} rounds each")
    print(f"{'clients/round':>13}  {'':>8}  {'us/event':>8}  {'events/round':>12}  {'ms/round':>9}")
    for size in sizes:
        key = str(size)
        med = {side: {m: statistics.median(r[key][m] for r in runs[side])
                      for m in ("us_per_event", "events_per_round", "ms_per_round")} for side in runs}
        for side in ("baseline", "this"):
            m = med[side]
            print(f"{size:>13}  {side:>8}  {m['us_per_event']:>8.2f}  {m['events_per_round']:>12.0f}  "
                  f"{m['ms_per_round']:>9.1f}")
        ratio = {name: med["this"][name] / med["baseline"][name] for name in med["this"]}
        print(f"{size:>13}  {'ratio':>8}  {ratio['us_per_event']:>8.3f}  {ratio['events_per_round']:>12.3f}  "
              f"{ratio['ms_per_round']:>9.3f}", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another checkout to measure side by side with this one")
    parser.add_argument("--pairs", type=int, default=6, help="with --baseline: processes per side")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)  # whose sfl_sim is measured
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one process's medians, for --baseline
    args = parser.parse_args(argv)
    if args.baseline is not None:
        side_by_side(args.baseline.resolve(), args.sizes, args.rounds, args.pairs)
        return
    sys.path.insert(0, str(args.root))  # ahead of PYTHONPATH and installed copies
    if args.json:
        import sfl_sim

        out: dict[str, Any] = {str(size): measure(size, args.rounds) for size in args.sizes}
        print(json.dumps({**out, "package": str(Path(sfl_sim.__file__).parent)}))
        return
    for size in args.sizes:
        m = measure(size, args.rounds)
        print(f"{size:>5} clients/round: {m['us_per_event']:6.1f} us per event, {m['events_per_round']:8.0f} events, "
              f"{m['ms_per_round']:8.1f} ms per round", flush=True)


if __name__ == "__main__":
    main()
