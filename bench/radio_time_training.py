"""Host time per training round with a radio in time (a time-varying fading and in-round mobility)
against the same run's static radio, at 100 clients per round, through the whole runner.

:mod:`bench.radio_time` measures the radio's own cost on a stand-in round with no torch work (its
strictest reading); this one measures what a user running ``sfl-sim scenario`` waits for: the
``cellular_100clients`` scenario with 1000 clients and participation 0.1 (100 per round), each
algorithm (``--algorithms``, default SCALA and FedAvg) trained for ``--rounds`` rounds as
``sfl-sim scenario`` trains them (the rows, the checkpoint, one evaluation, after the last round),
on the scenario's static cell and on the same cell with ``cell.fading: {name: jakes,
speed_m_per_s: v}`` and ``cell.mobility: {name: gauss_markov, mean_speed_m_per_s: v}`` at each
``--speeds-kmh``.  Each round's host time is read from ``rounds.csv`` (``round_host_time_s``);
a run's round time is the median of its rounds 2 .. rounds-1 (round 1 warms up, the last is
evaluated).  The runs are interleaved (static, then each speed, ``--repeats`` times, the order
rotated each repeat) so machine noise hits all alike; printed per algorithm: the median over the
repeats of each kind's round time and its ratio to the static one (the target: at most 1.3).
The build of a run (the data, the cell, its conformance checks) is not a round's and is not counted.

    python bench/radio_time_training.py [--rounds 6] [--repeats 2] [--speeds-kmh 3 30 120]

Measured (``--rounds 8 --repeats 3``, load 1.6 before, 2.0 after; a run's rounds vary by
+-15 % on this shared 2-core CPU, hence the medians over interleaved runs)::

    seconds a round (ratio)   static    3 km/h         30 km/h        120 km/h
    SCALA                     2.228     2.424 (1.09)   2.401 (1.08)   2.576 (1.16)
    FedAvg                    4.575     4.509 (0.99)   4.585 (1.00)   5.701 (1.25)

FedAvg's uploads are whole models (a round of about 14 s of simulated time; an upload of
seconds walks tens of thousands of Gauss-Legendre panels of 0.22 ms and hundreds of position grid
times of 15 ms at 120 km/h): its 120 km/h round is the radio's heaviest here.  It was 2.2x
(11.8 s against 5.4 s, ``--rounds 6 --repeats 2``) while the radio state kept only 64 grid
times' positions (every transfer recomputed every client's positions along its span);
:data:`sfl_sim.channel.radio_state.KEPT_NUMBERS` keeps them.
:mod:`bench.radio_time` gives the radio's own cost without the torch work.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sfl_sim.config import load_scenario  # noqa: E402
from sfl_sim.config.scenario_files import resolve_scenario  # noqa: E402
from sfl_sim.errors import ConfigError  # noqa: E402
from sfl_sim.runs import runner  # noqa: E402
from sfl_sim.runs.host import load_average  # noqa: E402
from sfl_sim.runs.rundir.schema import ROUNDS_FILE  # noqa: E402


def round_seconds(algorithm: str, speed_kmh: float | None, rounds: int, threads: int) -> float:
    """The median host seconds of rounds 2 .. rounds-1 of one run (``speed_kmh`` None: the static cell)."""
    extra: dict[str, Any] = {"clients": {"count": 1000, "participation": 0.1}, "device": "cpu"}
    if speed_kmh is not None:
        v = speed_kmh / 3.6
        extra["cell"] = {"fading": {"name": "jakes", "speed_m_per_s": v},
                         "mobility": {"name": "gauss_markov", "mean_speed_m_per_s": v}}
    with tempfile.TemporaryDirectory() as out:
        extra["output_dir"] = out
        cfg = load_scenario(resolve_scenario("cellular_100clients"), overrides=[
            f"algorithms=[{{name: {algorithm}}}]", f"rounds={rounds}", f"eval_every_rounds={rounds}",
            f"training.torch_threads={threads}"], extra=extra)
        runner.run_scenario(cfg, progress=False)
        with (Path(out) / algorithm / ROUNDS_FILE).open(newline="") as fh:
            host_s = [float(r["round_host_time_s"]) for r in csv.DictReader(fh)]
    return statistics.median(host_s[1:-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithms", nargs="+", default=["scala", "fedavg"])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--speeds-kmh", type=float, nargs="*", default=[3.0, 30.0, 120.0])
    parser.add_argument("--threads", type=int, default=2, help="training.torch_threads")
    args = parser.parse_args(argv)
    if args.rounds < 3:
        parser.error(f"--rounds: got {args.rounds}; allowed: an integer >= 3 (round 1 warms up, the last is evaluated)")
    kinds: dict[str, float | None] = {"static": None, **{f"{v:g} km/h": v for v in args.speeds_kmh}}
    names = list(kinds)
    print(f"load before: {load_average()}")
    for algorithm in args.algorithms:
        seconds: dict[str, list[float]] = {name: [] for name in kinds}
        for i in range(args.repeats):
            shift = i % len(names)
            for name in names[shift:] + names[:shift]:
                try:
                    seconds[name].append(round_seconds(algorithm, kinds[name], args.rounds, args.threads))
                except ConfigError as exc:  # an unknown algorithm, a speed out of range: one line
                    parser.error(str(exc))
        med = {name: statistics.median(v) for name, v in seconds.items()}
        print(f"{algorithm}: 100 clients per round, median round (rounds 2..{args.rounds - 1}) over {args.repeats} "
              f"interleaved runs each")
        for name, v in kinds.items():
            label = "static today" if v is None else f"jakes + gauss_markov at {name}"
            runs = " ".join(f"{s:.3f}" for s in seconds[name])
            print(f"  {label:<40} {med[name]:>7.3f} s  ratio {med[name] / med['static']:.3f}  (runs: {runs})")
    print(f"load after: {load_average()}")
    print("target: ratio <= 1.3")


if __name__ == "__main__":
    main()
