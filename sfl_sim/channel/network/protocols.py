"""What a handover rule must offer, and what it returns.

A handover rule (kind ``handover``, registry :data:`sfl_sim.channel.network.association.HANDOVER`)
turns the received powers of every (client, cell) over time into the serving cell of each client
at each time and the events that changed it:

=========  ========================  ==================================================================
kind       protocol                  method
=========  ========================  ==================================================================
handover   :class:`HandoverRule`     ``evaluate(times_s, rsrp_dbm, sinr_db=None, initial_cell=None)``
                                     ``-> HandoverTrace``
=========  ========================  ==================================================================

The A3 rule of TS 38.331 is :class:`~sfl_sim.channel.network.association.A3Handover`; a conditional
handover or a learned policy is another class with the same method.
:func:`sfl_sim.channel.network.conformance.check_handover` checks one.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["NetworkLayout", "HandoverRule", "HandoverEvent", "HandoverTrace", "CAUSES", "NO_CELL",
           "event_counts", "event_rows"]

#: Causes of a change of serving cell: an A3 event (a handover) or a radio link failure (and the
#: re-establishment that follows it).  A rule of one's own may add causes of its own.
CAUSES = ("a3", "rlf")
#: The serving cell of a client that has none (during a re-establishment).
NO_CELL = -1


@dataclass(frozen=True)
class HandoverEvent:
    """One change of serving cell: a row of ``handovers.csv``.

    Attributes
    ----------
    time_s : float
        When it happened (the sample at which the rule decided), seconds.
    client : int
        The client's index.
    source_cell : int
        The cell it left (the failed one for a radio link failure).
    target_cell : int
        The cell it joined.
    cause : str
        ``"a3"``, ``"rlf"``, or a rule's own cause.
    interruption_s : float
        How long the client had no link from ``time_s`` on (the handover interruption, or the
        re-establishment time after a radio link failure), seconds.
    """

    time_s: float
    client: int
    source_cell: int
    target_cell: int
    cause: str
    interruption_s: float


@dataclass(frozen=True)
class HandoverTrace:
    """What a handover rule returns for one set of RSRP series.

    Attributes
    ----------
    events : tuple of HandoverEvent
        In time order (ties by client).
    serving_cell : numpy.ndarray, shape (n_clients, n_times), int
        The serving cell at each sample; :data:`NO_CELL` while a client has none.
    connected : numpy.ndarray, shape (n_clients, n_times), bool
        Whether the client has a usable link at each sample (False during an interruption).
    """

    events: tuple[HandoverEvent, ...]
    serving_cell: np.ndarray
    connected: np.ndarray

    def counts(self) -> dict[str, int]:
        """Events per cause (:func:`event_counts`)."""
        return event_counts(self.events)

    def rows(self) -> list[dict[str, float | int | str]]:
        """The events as ``handovers.csv`` rows (:func:`event_rows`)."""
        return event_rows(self.events)


def event_counts(events: Iterable[HandoverEvent]) -> dict[str, int]:
    """Events per cause (every cause of :data:`CAUSES` present, 0 when none): the summary's counts."""
    out = dict.fromkeys(CAUSES, 0)
    for event in events:
        out[event.cause] = out.get(event.cause, 0) + 1
    return out


def event_rows(events: Iterable[HandoverEvent]) -> list[dict[str, float | int | str]]:
    """The events as ``handovers.csv`` rows (``time_s, client, source_cell, target_cell, cause,
    interruption_s``)."""
    return [{"time_s": e.time_s, "client": e.client, "source_cell": e.source_cell,
             "target_cell": e.target_cell, "cause": e.cause, "interruption_s": e.interruption_s}
            for e in events]


@runtime_checkable
class HandoverRule(Protocol):
    """Initial association and handovers of clients among cells, from their received powers."""

    def evaluate(self, times_s: np.ndarray, rsrp_dbm: np.ndarray, sinr_db: np.ndarray | None = None,
                 initial_cell: np.ndarray | None = None) -> HandoverTrace:
        """Serving cells and handover events over time.

        Parameters
        ----------
        times_s : array_like, shape (n_times,)
            Strictly increasing sample times, seconds.
        rsrp_dbm : array_like, shape (n_clients, n_cells, n_times)
            RSRP of every cell at every client (after any layer-3 filtering), dBm.
        sinr_db : array_like, shape (n_clients, n_cells, n_times), optional
            SINR of the link to every cell, dB (for radio link monitoring); None: no radio link failure.
        initial_cell : array_like of int, shape (n_clients,), optional
            Serving cells at ``times_s[0]``; None: the strongest RSRP there.
        """
        ...


@runtime_checkable
class NetworkLayout(Protocol):
    """A layout of cell sites (kind ``network``): where they are, the wrap-around distances to
    them and how clients are dropped over it (:class:`~sfl_sim.channel.network.hexgrid.HexGrid`)."""

    @property
    def n_sites(self) -> int:
        """Number of sites."""
        ...

    @property
    def n_cells(self) -> int:
        """Number of cells."""
        ...

    def wraparound_distances_m(self, points_m: np.ndarray) -> np.ndarray:
        """2-D distance from each point to the nearest image of each site, shape (n, n_sites), m."""
        ...

    def drop_uniform(self, n_clients: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Positions (n, 2) and the site each client was dropped in."""
        ...
