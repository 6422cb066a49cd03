"""Host time per round of a network of cells against today's single cell, at 100 clients per
round (no torch work at all).

The stand-in round of :mod:`bench.engine_events` (SCALA's event pattern) runs through the real
:class:`~sfl_sim.engine.Simulator` on the ``cellular_100clients`` scenario's cell, as built
(``cell.network`` null: today's cell), and on the same scenario with ``cell.network`` a 1-site
network and a 7-site network (``sectors_per_site: 1``, ISD 500 m); each with the clients static
and with them moving within the round (``cell.mobility: {name: gauss_markov, mean_speed_m_per_s:
30 km/h}``, so that the 7-site network hands over).  The kinds of round are interleaved in one
process (the order rotated each round) so machine noise hits all alike; prints the median host
milliseconds per round of each and its ratio to the 1-site network's round with the same mobility
(the target: a 7-site round at most 1.5 times a 1-site one) and to today's cell with the same
mobility, and the handovers the moving network made.

    python bench/network.py [--size 100] [--rounds 12] [--speed-kmh 30] [--profile KIND]

What a network round costs, and what was done about it: a network's radio is "in time" (the
serving cell, its interference and its handovers depend on when a transfer starts), so every
transfer's start evaluates its link (today's static round evaluates every link once per round)
and its end walks the rate over time.  Since the first measurement (1-site 484 ms, 7-site 500,
7-site moving at 30 km/h 823, today 30.7; idle, ``--rounds 4``):

* a transfer's start link is one unchecked evaluation (:meth:`RadioState.uplink_of`, the numbers
  of :meth:`RadioState.links`, tested equal) whose rate the end reuses; the built-in rate models'
  unchecked methods on that path (a subclass overriding ``rate_bps`` keeps its own);
* without a time-varying fading a transfer is walked piece by piece (the position grid's steps
  and the client's changes of cell or link; :meth:`RadioState._piecewise_end`): one rate per
  piece instead of held steps of 10 ms, and exact;
* one link's uplink noise rise from its cell's column of the interference only, the links at one
  time from the short list of clients without one.

Measured idle at the stop (``--rounds 10``, load 0.8, three runs of the command one after
another), ms per round (ratio to the 1-site network with the same mobility; to today's cell with
it), the first run's:

====================  =============================
round                 now
====================  =============================
today                    28.7
1-site                  154.8  (1.00; 5.4 x today)
7-site                  194.4  (1.26; 6.8 x today)
today, moving           211.4
1-site, moving          242.8  (1.00; 1.15 x today moving)
7-site, moving          351.0  (1.45; 1.66 x today moving)
====================  =============================

and the 7-site ratios of the three runs: static 1.26 / 1.46 / 1.18, moving 1.45 / 1.65 / 1.46 (the
spread is the machine's and the rounds': a moving network's rounds differ in their handovers, 285
A3 handovers over 21.7 s).  The static target holds in every run; the moving one in two of three.

What a moving 7-site round pays beyond a moving 1-site one (timing wrappers, one process, ms per
round, 1 / 7 sites; the wrappers nest, so the parts overlap: the interference's own link-presence
calls are in both): the interference at each link's start and piece 24 / 131, the link presence
37 / 98, the handover rule with its RSRP 12 / 41, every client's losses per position step 9 / 34,
the changes of cell looked up per transfer 23 / 48.  A network round is still 5-7 x today's static one:
each transfer's start and pieces are single-link numpy calls (~50 us each), where today's round
computes every link once.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.engine_events import round_process  # noqa: E402


def cell(size: int, network: dict[str, Any] | None, speed_kmh: float | None = None) -> Any:
    """The scenario's cell with ``10 * size`` clients (10 % per round): as built (``network``
    None), or on ``cell.network: network`` (the scenario's placement left out, the network drops
    the clients), its clients moving at ``speed_kmh`` (Gauss-Markov) when given."""
    from sfl_sim.config import validate
    from sfl_sim.config.loading import load_scenario_raw
    from sfl_sim.config.scenario_files import resolve_scenario
    from sfl_sim.runs.build import build_cell

    raw = copy.deepcopy(load_scenario_raw(resolve_scenario("cellular_100clients")))
    raw["clients"].update(count=10 * size, participation=0.1)
    if network is not None:
        raw["cell"].pop("placement", None)
        raw["cell"]["network"] = network
    if speed_kmh is not None:
        raw["cell"]["mobility"] = {"name": "gauss_markov", "mean_speed_m_per_s": speed_kmh / 3.6}
    return build_cell(validate(raw))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--speed-kmh", type=float, default=30.0)
    parser.add_argument("--profile", choices=["1-site", "7-site", "today moving", "1-site moving", "7-site moving"],
                        default=None,
                        help="cProfile the rounds of this kind only (the top functions by cumulative time)")
    args = parser.parse_args(argv)
    from sfl_sim.engine import SERVER, Simulator

    one = {"name": "hexgrid", "n_sites": 1, "isd_m": 500.0, "sectors_per_site": 1}
    seven = {"name": "hexgrid", "n_sites": 7, "isd_m": 500.0, "sectors_per_site": 1}
    kinds: dict[str, tuple[dict[str, Any] | None, float | None]] = {
        "today": (None, None), "1-site": (one, None), "7-site": (seven, None),
        "today moving": (None, args.speed_kmh), "1-site moving": (one, args.speed_kmh),
        "7-site moving": (seven, args.speed_kmh)}
    if args.profile is not None:
        kinds = {args.profile: kinds[args.profile]}
    sims = {name: Simulator(cell(args.size, *spec), np.full(10 * args.size, 5e9), 1e12) for name, spec in kinds.items()}
    rngs = {name: np.random.default_rng(0) for name in kinds}  # the same cohorts for every kind
    ms: dict[str, list[float]] = {name: [] for name in kinds}
    names = list(kinds)
    profiler = None
    if args.profile is not None:
        import cProfile

        profiler = cProfile.Profile()
    for i in range(args.rounds + 1):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            sim, rng = sims[name], rngs[name]
            cohort = np.sort(rng.choice(10 * args.size, args.size, replace=False))
            if profiler is not None and i > 0:
                profiler.enable()
            start = time.perf_counter()
            duration_s = sim.run_round(lambda ctx, ids=cohort: round_process(ctx, ids, SERVER), cohort)
            elapsed = time.perf_counter() - start
            if profiler is not None:
                profiler.disable()
            sim.cell.move(duration_s, rng)
            if i > 0:  # the first round warms up
                ms[name].append(elapsed * 1e3)
    if profiler is not None:
        import pstats

        pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)
    med = {name: statistics.median(v) for name, v in ms.items()}
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    print(f"{args.size} clients per round, medians of {args.rounds} interleaved rounds each (load {' '.join(load)})")
    print(f"{'round':<34} {'ms/round':>9} {'/1-site':>8} {'/today':>7}   (the moving rounds against the moving ones)")
    for name in kinds:
        moving = name.endswith("moving")
        base = med.get("1-site moving" if moving else "1-site")
        today = med.get("today moving" if moving else "today")
        ratio = f"{med[name] / base:>8.3f}" if base else f"{'':>8}"
        against = f"{med[name] / today:>7.3f}" if today else ""
        print(f"{name:<34} {med[name]:>9.1f} {ratio} {against}")
    for name, sim in sims.items():
        events = sim.cell.radio.handover_events()
        if events:
            counts = Counter(e.cause for e in events)
            print(f"{name}: handovers {dict(counts)} over {sim.cell.radio.t_s:.1f} s simulated")
    print("target: a 7-site round <= 1.5 x a 1-site round (clients static, and clients moving in both)")


if __name__ == "__main__":
    main()
