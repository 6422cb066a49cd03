"""Host time per round of a network of cells against today's single cell, at 100 clients per
round (no torch work at all).

The stand-in round of :mod:`bench.engine_events` (SCALA's event pattern) runs through the real
:class:`~sfl_sim.engine.Simulator` on the ``cellular_100clients`` scenario's cell, as built
(``cell.network`` null: today's cell), and on the same scenario with ``cell.network`` a 1-site
network, a 7-site network (``sectors_per_site: 1``, ISD 500 m) and the 7-site network with the
clients moving within the round (``cell.mobility: {name: gauss_markov, mean_speed_m_per_s:
30 km/h}``, so that handovers happen).  The kinds of round are interleaved in one process (the
order rotated each round) so machine noise hits all alike; prints the median host milliseconds
per round of each, its ratio to the 1-site network's round (the target: a 7-site round at most
1.5 times a 1-site one) and to today's cell, and the handovers the moving network made.

    python bench/network.py [--size 100] [--rounds 12] [--speed-kmh 30] [--profile KIND]

Measured on the shared 2-core CPU (load 4.9-5.8), ``--rounds 8``, ms per round (ratio to the
1-site network's round), the code before (86126fe, this bench copied into it) and after the fast
paths of :mod:`sfl_sim.channel.network.state` (the coupling losses and gains of every (client,
cell) kept per (epoch, position grid index) and read by a gather; one time's serving cells one
column of the evaluated samples; the RSRP of a chunk's samples computed per epoch at once; the
wrap-around distances without the (n, 7, sites, 2) offsets; ``connected`` looking only at the
interruptions that overlap the times asked; no interference sum on one cell; a step mobility's
moves seen by the snapshot's identity):

==================  ==============  ==============
round               before          after
==================  ==============  ==============
today (no network)    62.3            82.8
1-site              2195  (1.00)    1333  (1.00)
7-site              2176  (0.99)    1869  (1.40)
7-site, 30 km/h     3075  (1.40)    2325  (1.74)
==================  ==============  ==============

(The same 248 A3 handovers over the 17.6 s simulated in the moving network before and after.)
The target, a 7-site round at most 1.5 x a 1-site round, holds for the static clients (1.40);
with the clients moving the in-round positions, losses and A3 evaluation cost more (1.74); the
1-site round got cheaper than the 7-site one (no interference on one cell), so the ratios rose
while every time fell.  A network round is still 16-28 x today's: a network makes the radio
"in time", so every transfer is integrated in steps (:meth:`RadioState.transfer_ends_s`) with the
link budget evaluated at each, where today's static round divides the bits by one rate.

Since then a network whose channel does not change in time (no timed mobility, no time-varying
fading) ends a transfer without a handover or link loss in it at ``t0 + bits / rate`` (its rate is
constant: the steps summed the same rate), ``--rounds 4``, idle (load 0.5-2.0), ms per round:
today 30.7, 1-site 484 (15.8 x today), 7-site 500 (1.03 x 1-site), 7-site moving at 30 km/h 823
(1.70 x; 84 A3 handovers over 9.4 s).  What is left of a network round's cost is the link budget of
each transfer's start, checked, one client at a time (``Uplink._evaluate``: about 0.4 ms a call),
where today's round evaluates every link once per round; and with moving clients, the steps.
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
