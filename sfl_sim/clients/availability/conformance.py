"""Conformance check: does a component behave like an availability model?

:func:`check_availability` checks that the component has the methods of
:class:`~sfl_sim.clients.availability.Availability`, then, for several client counts and a fixed seed
twice: ``online`` gives one bool per client asked; the same seed gives the same answers;
``next_change_s`` is later than the time asked, the state holds until just before it and differs
at it; a fresh copy asked about the times in reverse order answers the same (what a resumed run,
which prepares the model afresh, relies on).  It raises ``AssertionError`` naming the component,
the check and the values, or returns the names of the checks that passed.
"""
from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sfl_sim.clients.availability.base import Availability
from sfl_sim.clients.availability.readers import TraceEndedError
from sfl_sim.kit.protocols import missing_members

__all__ = ["check_availability"]


def _fail(component: Any, name: str, detail: str) -> AssertionError:
    return AssertionError(f"availability component {component!r} fails check '{name}': {detail}")


def check_availability(component: Any, counts: Sequence[int] = (1, 4, 13), seed: int = 0,
                       times_s: Sequence[float] = (0.0, 1.5, 600.0, 7_200.0, 90_000.0)) -> list[str]:
    """Run the checks (on deep copies, so ``component`` is left as it was).

    Parameters
    ----------
    component : object
        The availability model.
    counts : sequence of int
        Client counts to prepare it for.
    seed : int
        Seed of the prepare generator.
    times_s : sequence of float
        Simulated times to ask about.

    Returns
    -------
    list of str
        The checks that passed.
    """

    missing = missing_members(component, Availability)
    if missing:
        raise _fail(component, "protocol", f"missing {', '.join(missing)}")
    passed = ["protocol"]
    for n in counts:
        first, second = copy.deepcopy(component), copy.deepcopy(component)
        first.prepare(n, np.random.default_rng(seed))
        second.prepare(n, np.random.default_rng(seed))
        clients = np.arange(n)
        for t_s in times_s:
            state = np.asarray(first.online(clients, t_s))
            if state.shape != (n,) or state.dtype != bool:
                raise _fail(component, "online shape", f"n={n}, t={t_s}: got {state.dtype} {state.shape}")
            again = np.asarray(second.online(clients[::-1], t_s))[::-1]
            if not np.array_equal(state, again):
                raise _fail(component, "same seed, same states", f"n={n}, t={t_s}: {state} vs {again}")
            for c in clients:
                change = float(first.next_change_s(int(c), t_s))
                if not change > t_s:
                    raise _fail(component, "next change later", f"client {c}, t={t_s}: got {change}")
                if math.isinf(change):
                    continue
                before = change - min(1e-6 * max(1.0, abs(change)), (change - t_s) / 2)
                if bool(first.online([c], before)[0]) != bool(state[c]):
                    raise _fail(component, "state holds until the change", f"client {c}: t={t_s}, change={change}")
                try:
                    after = bool(first.online([c], change)[0])
                except TraceEndedError:  # a trace read with on_end 'stop' ends here: no state after it
                    continue
                if after == bool(state[c]):
                    raise _fail(component, "state flips at the change", f"client {c}: t={t_s}, change={change}")
        fresh = copy.deepcopy(component)
        fresh.prepare(n, np.random.default_rng(seed))
        for t_s in reversed(times_s):
            try:
                late, early = np.asarray(fresh.online(clients, t_s)), np.asarray(first.online(clients, t_s))
            except TraceEndedError:
                continue
            if not np.array_equal(late, early):
                raise _fail(component, "answers independent of earlier questions",
                            f"n={n}, t={t_s}: {late} asked first, {early} after earlier times")
        passed += [f"n={n}"]
    return passed + ["online shape", "same seed, same states", "next change later", "state flips at the change",
                     "answers independent of earlier questions"]
