"""The shape of everything that runs on the simulated clock: a generator of SimPy events."""
from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any, TypeVar

import simpy

if TYPE_CHECKING:
    from sfl_sim.engine.outcome import Lost

__all__ = ["SimSteps", "stoppable"]

_T = TypeVar("_T")
SimSteps = Generator[simpy.Event, Any, _T]
"""A generator run on the simulated clock: it yields SimPy events and returns a ``_T``
(``yield from`` it inside a round, or start it with :meth:`sfl_sim.engine.RoundContext.process`)."""


def stoppable(generator: SimSteps[_T]) -> SimSteps[_T | Lost]:
    """``generator``, ended with ``Lost("round_over")`` when the round's end interrupts it
    (:meth:`sfl_sim.engine.RoundContext.stop_stragglers`): what it did up to then stays counted."""
    from sfl_sim.engine.outcome import Lost

    try:
        return (yield from generator)
    except simpy.Interrupt:
        return Lost("round_over")
