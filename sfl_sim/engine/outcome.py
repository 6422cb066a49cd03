"""What a transfer or a client's part of a round comes to: delivered, or lost with a reason.

An upload of :class:`~sfl_sim.engine.RoundContext` (its link process, :mod:`sfl_sim.engine.link`)
resolves to :data:`DELIVERED` or to a :class:`Lost` naming why the payload never arrived; a
client's process returns the same, so the reason travels with the event to whoever waits on it
(the straggler decision records it in ``RoundContext.dropped`` and ``rounds.csv``).  Test with
``isinstance(value, Lost)``: both are plain values, neither is falsy.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

LossReason = Literal["outage", "downlink_outage", "deadline", "over_selection", "round_over", "unavailable",
                     "battery", "handover"]
"""Why a payload or a client left the round: its upload failed after outage (``outage``), a
payload for it had no usable downlink rate after its last attempt (``downlink_outage``), the
straggler policy stopped waiting for it (``deadline``, ``over_selection``), the client went
offline during the round (``unavailable``, :mod:`sfl_sim.clients.availability`), its battery emptied
before its upload was through (``battery``, with ``energy.battery``), a handover's policy dropped
its round (``handover``, with ``server.edge``: :mod:`sfl_sim.engine.edge`), or the round ended while it
was still running (``round_over``, never recorded as a drop)."""


@dataclass(frozen=True)
class Delivered:
    """The payload arrived (the value of every successful upload is :data:`DELIVERED`)."""


DELIVERED = Delivered()


@dataclass(frozen=True)
class Lost:
    """The payload (or the client) is out of the round, and why (test ``isinstance(value, Lost)``).

    Attributes
    ----------
    reason : str
        One of :data:`LossReason`.
    """

    reason: LossReason


Outcome = Delivered | Lost
"""What an upload, or a client's whole round, comes to."""


def is_lost(value: object) -> bool:
    """True when ``value`` (an event's value) says the payload or client is out of the round."""
    return isinstance(value, Lost)
