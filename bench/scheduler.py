"""Host time of the scheduled uplink against today's static shares, at 10 / 100 / 1,000 clients per round.

The stand-in round of ``bench/engine_events.py`` (SCALA's event pattern, no torch work: per local
iteration every client computes, uploads activations and labels, the server answers, the client
downloads and computes; then every client uploads its model) runs through the real
:class:`~sfl_sim.engine.Simulator` on the default scenario's cell (20 MHz uplink: 51 RBs at
``cell.numerology`` 1) under three schedulers: ``static`` (the per-round split, the default),
``round_robin`` fluid and ``proportional_fair`` slot.  The three alternate round by round in one
process (static, floor, fluid, slot, static, ...; a fresh simulator each, so each round starts alike), so
machine noise hits them alike; the medians of the host milliseconds per round and their ratios to
static are printed, with the simulated seconds per round.

    python bench/scheduler.py [--sizes 10 100 1000] [--rounds 5] [--slot-rounds 2]

``--slot-rounds`` caps the slot rounds at the larger sizes (a slot round does work every 0.5 ms of
simulated time; 0 leaves the slot form out).

Measured with the band split into its two forms (``sfl_sim/engine/band``: the slot form's state in
arrays over the clients, slots decided ahead without a SimPy step while nothing else can happen),
against the tree before, three interleaved pairs of ``--sizes 10 100 --rounds 3 --slot-rounds 1`` on
the shared 2-core machine under load (static 72-76 ms a round at 100 clients, 41 ms idle); medians
of the three runs' ratios to static (each run's own static):

=============  ==============  ==============
clients/round  pf_slot before  pf_slot after
=============  ==============  ==============
10             51.2 x          25.1 x
100            78.1 x          34.7 x
=============  ==============  ==============

(ms/round at 100: 5,672 before, 2,545 after; ``rr_fluid`` 6.6 x and 4.6 x, the fluid form's code
unchanged: noise.)  The same results bit for bit.  What is left of the slot form's cost is one
policy call per slot with data (9,000 of the 9,700 slots at 100 clients): ``grant_rbs`` and
``average_bps`` alone are about 23 us of numpy a call for 72 clients with data, about 210 ms a
round, five times the static round idle by themselves; a slot form within 5 x static needs the
policy's decisions over several slots in one call (an interface change of the Scheduler protocol).

Since then proportional fair grants by the marginal rule on each client's concave rates, capped by
the power headroom (a slot is shared: 48 of 51 RBs go to different clients at 100 clients per
round, 1.58 simulated s a round), and the slot form was made faster with the same numbers bit for
bit (the n_rb best marginal metrics searched on the first few columns, the need read from each
row's best tabled rate, tables and hulls not re-checked while no fading draw changes).  Three
interleaved pairs of ``--sizes 10 100 --rounds 3 --slot-rounds 2`` on the shared 2-core machine
under heavy load (static 23-62 ms a round at 100 clients), medians of the runs' ratios:

=============  ==============  ==============
clients/round  pf_slot before  pf_slot after
=============  ==============  ==============
10             38.4 x          25.5 x
100            55.1 x          27.4 x
=============  ==============  ==============

(ms/round at 100: 1,584 before, 1,240 after; CPU seconds of the process per round, six rounds
each, alternating: 1.10 before, 0.82 after, static 0.035.)  Not within 5 x static: the policy call
is about 70 us a slot (from about 236 us; 3,062 slots with data a round), and the rest of a
slot's decision (about 40 array operations on the rows with data: the need, the grants' rates,
energy, record and averages) costs as much again; one policy call per slot in numpy stays above
5 x static whatever it computes.

So the built-in policies' decisions and the decided-ahead slot loop are now compiled with numba
(``sfl_sim/engine/band/compiled.py``: all clients in arrays, slot after slot in one call until
SimPy's next event or a transfer's end; the numpy path kept for a scheduler of one's own and as
the reference, ``SFL_SIM_SLOT_NUMPY=1``; the same numbers bit for bit,
``tests/engine/test_band_compiled.py``), a decision's fading and stale-table tests compiled,
``serves`` reading the tabled rate, and the zero wait at a slot's start left out when nothing
else is due.  Before (the tree without it, ``ce8763a``) and after, interleaved, three pairs of
``--sizes 10 100 --rounds 3 --slot-rounds 2`` on the shared 2-core machine under heavy load
(load average 4-5; static 28-79 ms a round at 100 clients, moving with the load), each run's
ratio to its own static, and the median:

=============  ======================  ======================
clients/round  pf_slot before          pf_slot after
=============  ======================  ======================
10             31.2, 65.3, 28.5: 31 x  3.6, 4.3, 4.0: 4.0 x
100            32.5, 27.8, 34.7: 33 x  3.1, 3.7, 5.0: 3.7 x
=============  ======================  ======================

(two more runs after, at 100: 4.7 x and 3.8 x; ms/round at 100: 976-1,459 before, 214-333
after.)  Where the rest goes (CPU time of a round at 100 clients, measured by wrapping the
parts, about 210 ms with the wrappers against about 35 ms static): the compiled loop about 33
ms (835 calls, about 9 us each to enter with its 30 arguments, 3-5 us a slot), the link calls
that fill each client's rate table once per fading draw about 20-30 ms (``link_at``, one call
per client, the radio's own cost), the slot process's SimPy steps and Python between the calls
(the fading read, the timeouts; 1,541 resumptions a round) about 50 ms, and the transfers'
band bookkeeping (put, serves, finish) about 40 ms, which the fluid form pays as well.  numba
compiles the functions once (about 37 s wall, 18 s CPU, on this loaded machine) and keeps them
in ``sfl_sim/engine/band/__pycache__``; a later process loads them in about 2.4 s (numba's
import included), once per process, when the first slot band of a built-in policy opens
(``compiled.warm_up``): the bench's first round, which it does not count.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from engine_events import round_process  # noqa: E402  (the stand-in round, defined once)

SCHEDULERS = (("static", "static", {}), ("floor", "static", {}), ("rr_fluid", "round_robin", {}),
              ("pf_slot", "proportional_fair", {"fidelity": "slot"}))


@contextlib.contextmanager
def one_more_event_per_transfer() -> Iterator[None]:
    """The ``floor`` row: the static path's upload and unicast download timeouts each relayed
    through a plain event (one more SimPy event per transfer, nothing else changed)."""
    import simpy

    from sfl_sim.engine.link import Link
    from sfl_sim.engine.simulator import RoundContext

    air, download = Link._air, RoundContext.download

    def relay(env: simpy.Environment, timer: simpy.Event) -> simpy.Event:
        if not isinstance(timer, simpy.Timeout):
            return timer
        done = env.event()
        timer.callbacks.append(lambda t: done.succeed(t.value))
        return done

    def relayed_air(self: Any, duration_s: float, leaving: Any) -> simpy.Event:
        return relay(self._env, air(self, duration_s, leaving))

    def relayed_download(self: Any, client: int, nbytes: int, what: str) -> simpy.Event:
        return relay(self.env, download(self, client, nbytes, what))

    Link._air, RoundContext.download = relayed_air, relayed_download  # type: ignore[method-assign]
    try:
        yield
    finally:
        Link._air, RoundContext.download = air, download  # type: ignore[method-assign]


def measure(size: int, rounds: int, slot_rounds: int) -> dict[str, dict[str, float]]:
    """Medians over ``rounds`` rounds (``slot_rounds`` for the slot form) at ``size`` clients per
    round: host ms per round and simulated s per round, per scheduler."""
    import numpy as np

    from sfl_sim.channel import SCHEDULERS as REGISTRY
    from sfl_sim.config import load_scenario
    from sfl_sim.config.scenario_files import resolve_scenario
    from sfl_sim.engine import SERVER, Simulator
    from sfl_sim.runs.build import build_cell

    cfg = load_scenario(resolve_scenario("cellular_100clients"),
                        extra={"clients": {"count": 10 * size, "participation": 0.1}})
    cell = build_cell(cfg)
    rng = np.random.default_rng(0)
    host: dict[str, list[float]] = {label: [] for label, _, _ in SCHEDULERS}
    simulated: dict[str, list[float]] = {label: [] for label, _, _ in SCHEDULERS}
    for i in range(rounds + 1):
        cohort = np.sort(rng.choice(10 * size, size, replace=False))
        for label, name, params in SCHEDULERS:
            if label == "pf_slot" and (i > slot_rounds or slot_rounds == 0):
                continue
            sim = Simulator(cell, np.full(10 * size, 5e9), 1e12, scheduler=REGISTRY.create(name, **params),
                            numerology=cfg.cell.numerology, fading_rng=np.random.default_rng(i))
            with one_more_event_per_transfer() if label == "floor" else contextlib.nullcontext():
                start = time.perf_counter()
                duration_s = sim.run_round(lambda ctx, ids=cohort: round_process(ctx, ids, SERVER), cohort)
                elapsed = time.perf_counter() - start
            if i > 0:  # the first round warms caches and imports
                host[label].append(elapsed * 1e3)
                simulated[label].append(duration_s)
    return {label: {"ms_per_round": statistics.median(host[label]),
                    "simulated_s": statistics.median(simulated[label])} for label in host if host[label]}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--slot-rounds", type=int, default=2)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    print(f"{'clients/round':>13}  {'scheduler':>9}  {'ms/round':>9}  {'x static':>8}  {'sim s/round':>11}")
    for size in args.sizes:
        m: dict[str, Any] = measure(size, args.rounds, args.slot_rounds if size > 10 else args.rounds)
        base = m["static"]["ms_per_round"]
        for label, row in m.items():  # a size whose slot form was left out has no pf_slot row
            print(f"{size:>13}  {label:>9}  {row['ms_per_round']:>9.1f}  {row['ms_per_round'] / base:>8.2f}  "
                  f"{row['simulated_s']:>11.3f}", flush=True)


if __name__ == "__main__":
    main()
