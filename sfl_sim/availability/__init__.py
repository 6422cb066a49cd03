"""Client availability: who is online at a simulated time, and when that next changes.

A kind of swappable component (registry :data:`AVAILABILITY`, ``sfl-sim list availability``).
Every model has the methods of :class:`Availability`: ``prepare(n_clients, rng)`` once, then
``online(clients, t_s)`` (a bool per client) and ``next_change_s(client, t_s)`` (the simulated
time at which that client's state next flips, so an engine can take a client off exactly when it
leaves).  Intervals are half-open: a client online over ``[start_s, end_s)`` is online at
``start_s`` and offline at ``end_s``.

Built-ins: ``always`` (every client online at every time), ``trace`` (replays a CSV, FLASH or
FedScale availability trace, see :mod:`sfl_sim.availability.readers`) and ``markov`` (a seeded
two-state on/off chain per client, optionally with a 24 h cycle).  Selection and the engine do
not consult these models yet.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from simkit.registry import Registry

__all__ = ["AVAILABILITY", "Availability", "AlwaysAvailable", "TraceAvailability", "MarkovAvailability",
           "TraceError", "TraceEndedError", "check_availability"]


@runtime_checkable
class Availability(Protocol):
    """What every availability model offers."""

    def prepare(self, n_clients: int, rng: np.random.Generator) -> None:
        """Fix the model for ``n_clients`` simulated clients; every random draw comes from ``rng``."""

    def online(self, clients: np.ndarray, t_s: float) -> np.ndarray:
        """A bool per entry of ``clients`` (client indices): online at simulated time ``t_s``."""

    def next_change_s(self, client: int, t_s: float) -> float:
        """The first simulated time > ``t_s`` at which ``client``'s state differs from its state at
        ``t_s``; ``inf`` when it never changes."""


AVAILABILITY = Registry("availability", protocol=Availability)

from .readers import TraceEndedError, TraceError  # noqa: E402  (the registry exists before the models register)
from .models import AlwaysAvailable, MarkovAvailability, TraceAvailability  # noqa: E402
from .conformance import check_availability  # noqa: E402
