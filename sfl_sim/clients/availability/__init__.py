"""Client availability: who is online at a simulated time, and when that next changes.

A kind of swappable component (registry :data:`AVAILABILITY`, ``sfl-sim list availability``).
Every model has the methods of :class:`Availability`: ``prepare(n_clients, rng)`` once, then
``online(clients, t_s)`` (a bool per client) and ``next_change_s(client, t_s)`` (the simulated
time at which that client's state next flips, so an engine can take a client off exactly when it
leaves).  Intervals are half-open: a client online over ``[start_s, end_s)`` is online at
``start_s`` and offline at ``end_s``.

Built-ins: ``always`` (every client online at every time), ``trace`` (replays a CSV, FLASH or
FedScale availability trace, see :mod:`sfl_sim.clients.availability.readers`) and ``markov`` (a seeded
two-state on/off chain per client, optionally with a 24 h cycle).  A scenario names one in
``clients.availability``: a client is selectable only while online
(:func:`sfl_sim.clients.selection.select_online`), a round with nobody online waits for the first client
to come online (:func:`round_start`), and a client that leaves mid-round is dropped with cause
``unavailable`` by the engine.  Device capability traces (compute speed, link throughput) are
read by :mod:`sfl_sim.clients.availability.capability`.
"""
from __future__ import annotations

from sfl_sim.clients.availability.base import AVAILABILITY, Availability
from sfl_sim.clients.availability.conformance import check_availability
from sfl_sim.clients.availability.models import AlwaysAvailable, MarkovAvailability, TraceAvailability
from sfl_sim.clients.availability.readers import TraceEndedError, TraceError
from sfl_sim.clients.availability.schedule import NobodyOnlineError, round_start

__all__ = ["AVAILABILITY", "Availability", "AlwaysAvailable", "TraceAvailability", "MarkovAvailability",
           "TraceError", "TraceEndedError", "check_availability", "NobodyOnlineError", "round_start"]
