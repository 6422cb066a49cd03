"""The shape of everything that runs on the simulated clock: a generator of SimPy events."""
from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

import simpy

__all__ = ["SimSteps"]

_T = TypeVar("_T")
SimSteps = Generator[simpy.Event, Any, _T]
"""A generator run on the simulated clock: it yields SimPy events and returns a ``_T``
(``yield from`` it inside a round, or start it with :meth:`sfl_sim.engine.RoundContext.process`)."""
