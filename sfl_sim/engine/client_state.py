"""The client state the engine is given: who is online when, and what a battery allows.

Both are objects handed to :class:`~sfl_sim.engine.Simulator` when it is built (the run builds
them from the scenario: ``clients.availability``, ``energy.battery``); the engine asks them
questions and never keeps their state.  The protocols name only what the engine asks.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from sfl_sim.engine.accounting import Busy

__all__ = ["Battery", "Presence", "RoundView", "departures"]


class Presence(Protocol):
    """Who is online when (any :class:`sfl_sim.clients.availability.Availability`, prepared)."""

    def online(self, clients: np.ndarray, t_s: float) -> np.ndarray:
        """A bool per entry of ``clients``: online at simulated time ``t_s``."""
        ...

    def next_change_s(self, client: int, t_s: float) -> float:
        """The first simulated time > ``t_s`` at which ``client``'s state changes; ``inf`` for never."""
        ...


class RoundView(Protocol):
    """A round in progress as a battery sees it (:class:`sfl_sim.engine.RoundContext` is one)."""

    @property
    def start_s(self) -> float:
        """Simulated time the round started."""
        ...

    @property
    def now_s(self) -> float:
        """Simulated time now."""
        ...

    @property
    def busy(self) -> Mapping[int, Sequence[Busy]]:
        """Each client's busy intervals so far."""
        ...

    @property
    def left_s(self) -> Mapping[int, float]:
        """When clients' parts of the round ended (or will: departures)."""
        ...


class Battery(Protocol):
    """What the clients' batteries allow (the energy ledger with ``energy.battery``,
    :meth:`sfl_sim.clients.energy.ledger.EnergyLedger.upload_guard`)."""

    def upload_guard(self, ctx: RoundView, client: int, duration_s: float, tx_power_w: float) -> float | None:
        """Asked before each upload that gets air time: None when ``client``'s charge covers the
        round up to the end of an upload of ``duration_s`` at ``tx_power_w`` starting now
        (``ctx.now_s``), else the simulated time its battery empties (at the latest that end); the
        upload then resolves to ``Lost("battery")`` at that time.

        Parameters
        ----------
        ctx : RoundView
            The round so far (its start, its busy notes, when clients left).
        client : int
        duration_s : float
            Air time of the upload at the client's current rate, s.
        tx_power_w : float
            Its transmit power, W.
        """
        ...


def departures(presence: Presence | None, cohort: np.ndarray, now_s: float) -> dict[int, float]:
    """Each cohort client's offline time in the round starting at ``now_s`` (finite ones only):
    ``now_s`` for one already offline, else its next change.  Empty without a model."""
    if presence is None:
        return {}
    online = presence.online(cohort, now_s)
    out = {}
    for k, up in zip(cohort.tolist(), online.tolist(), strict=True):
        t = float(presence.next_change_s(k, now_s)) if up else now_s
        if math.isfinite(t):
            out[k] = t
    return out
