"""What the engine records, apart from how it schedules: the run's counters and each round's notes.

:class:`Counters` add up, over the whole run, the bytes that crossed the air and the FLOPs
computed (by kind, e.g. ``uplink/activations``), the retransmissions and drops; they are
checkpointed with the run and differenced per round into ``rounds.csv``.  :class:`RoundNotes`
hold what one round leaves for the readers after it: each client's busy intervals
(:class:`Busy`, for the energy ledger, :mod:`sfl_sim.clients.energy.ledger`), its HARQ waits and
the server's computing intervals (for the per-client record, :mod:`sfl_sim.engine.client_rounds`),
what each client sent and received (:class:`ClientTraffic`: the round's counters, per client), when
a client's part of the round ended, and why a client left it.  Nothing here reads the clock or
schedules an event: the round's processes (:class:`sfl_sim.engine.RoundContext`,
:mod:`sfl_sim.engine.link`) call these with the times they computed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sfl_sim.clients.energy.ledger import BusyKind
from sfl_sim.engine.outcome import LossReason

__all__ = ["Busy", "BusyKind", "ClientTraffic", "Counters", "Interval", "RoundNotes"]

#: A stretch of simulated time, ``(start_s, end_s)``.
Interval = tuple[float, float]


@dataclass(frozen=True)
class Busy:
    """One interval a client is busy in a round (see "Busy time" in :mod:`sfl_sim.engine.simulator`).

    Attributes
    ----------
    kind : {"compute", "uplink", "downlink"}
        :data:`~sfl_sim.clients.energy.ledger.BusyKind`, the term of the energy model it is charged to.
    start_s, end_s : float
        Simulated start and (scheduled) end; an interval cut short by the round's end runs past it.
    flops : float
        FLOPs of a ``compute`` interval (0 otherwise).
    tx_power_w : float
        Transmit power of an ``uplink`` interval, W (0 otherwise).
    """

    kind: BusyKind
    start_s: float
    end_s: float
    flops: float = 0.0
    tx_power_w: float = 0.0


@dataclass
class Counters:
    """Cumulative traffic and computation since the start of the run.

    Attributes
    ----------
    uplink_bytes, downlink_bytes : int
        Bytes delivered over each direction (downlink per receiving client; every uplink attempt's,
        failed ones too: they were on the air).
    client_flops, server_flops : float
        FLOPs computed by all clients together and by the server.
    by_kind : dict
        Bytes per ``"uplink/<what>"`` / ``"downlink/<what>"``, FLOPs per ``"client/<what>"`` /
        ``"server/<what>"``, and counts per ``"retransmissions/<what>"``, ``"dropped/<what>"``,
        ``"harq_retransmissions/<what>"`` and ``"dropped_clients/unavailable"``.
    retransmissions : int
        Uplink attempts repeated after an outage.
    dropped_transmissions : int
        Uplink payloads dropped after their last attempt.
    dropped_clients : int
        Clients the straggler decisions left out (:mod:`sfl_sim.engine.stragglers`).
    harq_retransmissions : float
        HARQ copies of transport blocks beyond the first (expected, a real number, in ``expected`` mode).
    """

    uplink_bytes: int = 0
    downlink_bytes: int = 0
    client_flops: float = 0.0
    server_flops: float = 0.0
    by_kind: dict[str, float] = field(default_factory=dict)
    retransmissions: int = 0
    dropped_transmissions: int = 0
    dropped_clients: int = 0
    harq_retransmissions: float = 0.0

    def add(self, key: str, amount: float) -> None:
        """Add ``amount`` to :attr:`by_kind` ``[key]``."""
        self.by_kind[key] = self.by_kind.get(key, 0) + amount

    def count_upload(self, nbytes: int, what: str) -> None:
        """One uplink attempt of ``nbytes`` of kind ``what``."""
        self.uplink_bytes += nbytes
        self.add(f"uplink/{what}", nbytes)

    def count_download(self, nbytes: int, what: str) -> None:
        """``nbytes`` of kind ``what`` sent down (already summed over the receiving clients)."""
        self.downlink_bytes += nbytes
        self.add(f"downlink/{what}", nbytes)

    def count_flops(self, on_server: bool, flops: float, what: str) -> None:
        """``flops`` of kind ``what`` computed by the server or by a client."""
        if on_server:
            self.server_flops += flops
            self.add(f"server/{what}", flops)
        else:
            self.client_flops += flops
            self.add(f"client/{what}", flops)

    def count_harq(self, copies: float, what: str) -> None:
        """``copies`` HARQ retransmissions of a payload of kind ``what``."""
        self.harq_retransmissions += copies
        self.add(f"harq_retransmissions/{what}", copies)

    def count_retransmission(self, what: str) -> None:
        """An uplink payload of kind ``what`` is sent again after an outage."""
        self.retransmissions += 1
        self.add(f"retransmissions/{what}", 1)

    def count_dropped_transmission(self, what: str) -> None:
        """An uplink payload of kind ``what`` is dropped after its last attempt."""
        self.dropped_transmissions += 1
        self.add(f"dropped/{what}", 1)

    def as_dict(self) -> dict[str, Any]:
        """Every counter as plain data (the checkpoint's and the golden records' form)."""
        return {"uplink_bytes": self.uplink_bytes, "downlink_bytes": self.downlink_bytes,
                "client_flops": self.client_flops, "server_flops": self.server_flops,
                "by_kind": dict(self.by_kind), "retransmissions": self.retransmissions,
                "dropped_transmissions": self.dropped_transmissions, "dropped_clients": self.dropped_clients,
                "harq_retransmissions": self.harq_retransmissions}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Counters:
        """Counters from :meth:`as_dict`'s data, every counter present (a checkpoint's counters in
        today's layout: :func:`sfl_sim.runs.rundir.upgrade.checkpoint` gives an older one's missing
        counters as 0).

        Raises
        ------
        KeyError
            For a counter the data lacks.
        """
        return cls(int(data["uplink_bytes"]), int(data["downlink_bytes"]), float(data["client_flops"]),
                   float(data["server_flops"]), dict(data["by_kind"]),
                   int(data["retransmissions"]), int(data["dropped_transmissions"]),
                   int(data["dropped_clients"]), float(data["harq_retransmissions"]))


@dataclass
class ClientTraffic:
    """What one client sent and received in one round, counted as :class:`Counters` counts it (so
    each field summed over the round's clients is the round's difference of that counter).

    Attributes
    ----------
    uplink_attempts : int
        Uplink transmissions started (every attempt of every payload; not a :class:`Counters` field).
    retransmissions, dropped_transmissions : int
        Attempts repeated after an outage, and payloads dropped after their last attempt.
    harq_retransmissions : float
        HARQ copies beyond the first (expected, a real number, in ``expected`` mode).
    uplink_bytes, downlink_bytes : int
        Bytes of every uplink attempt, and bytes sent down to this client.
    """

    uplink_attempts: int = 0
    retransmissions: int = 0
    dropped_transmissions: int = 0
    harq_retransmissions: float = 0.0
    uplink_bytes: int = 0
    downlink_bytes: int = 0


class RoundNotes:
    """What one round leaves for its readers: busy intervals, when clients left, and why.

    Parameters
    ----------
    start_s : float
        Simulated time the round started.
    left_s : dict of int to float, optional
        Clients known at the start to leave the round, and when (their offline times).

    Attributes
    ----------
    start_s : float
    busy : dict of int to list of Busy
        Each client's busy intervals this round, in the order they started.
    left_s : dict of int to float
        When a client's part of the round ended: its payload lost after outage, its battery empty,
        or its departure (``unavailable``); the earliest counts.
    dropped : dict of int to str
        Why a client left the round (a :data:`~sfl_sim.engine.outcome.LossReason`); the first
        reason recorded stands.  It becomes the ``dropped`` column of ``rounds.csv``.
    harq_waits : dict of int to list of Interval
        Each client's waits for HARQ feedback between the copies of its transport blocks (the
        transfer's time less its air time, noted after the air time as the engine times it).
    server_busy : list of Interval
        When the server computed, in the order the jobs started (one at a time: it is one device).
    traffic : dict of int to ClientTraffic
        What each client sent and received (clients that did neither are absent).
    """

    def __init__(self, start_s: float, left_s: dict[int, float] | None = None) -> None:
        self.start_s = start_s
        self.busy: dict[int, list[Busy]] = {}
        self.left_s: dict[int, float] = dict(left_s or {})
        self.dropped: dict[int, LossReason] = {}
        self.harq_waits: dict[int, list[Interval]] = {}
        self.server_busy: list[Interval] = []
        self.traffic: dict[int, ClientTraffic] = {}

    def note_busy(self, client: int, kind: BusyKind, start_s: float, duration_s: float, flops: float = 0.0,
                  tx_power_w: float = 0.0) -> None:
        """``client`` is busy with ``kind`` from ``start_s`` for ``duration_s``."""
        self.busy.setdefault(client, []).append(Busy(kind, start_s, start_s + duration_s, flops, tx_power_w))

    def note_left(self, client: int, when_s: float) -> None:
        """``client``'s part of the round ended at ``when_s`` (the earliest such time stands)."""
        self.left_s[client] = min(when_s, self.left_s.get(client, math.inf))

    def note_dropped(self, client: int, reason: LossReason) -> None:
        """``client`` left the round for ``reason`` (the first reason recorded stands)."""
        self.dropped.setdefault(client, reason)

    def note_harq_wait(self, client: int, start_s: float, end_s: float) -> None:
        """``client`` waits for HARQ feedback from ``start_s`` to ``end_s`` (nothing when it does not)."""
        if end_s > start_s:
            self.harq_waits.setdefault(client, []).append((start_s, end_s))

    def note_server_busy(self, start_s: float, duration_s: float) -> None:
        """The server computes from ``start_s`` for ``duration_s``."""
        self.server_busy.append((start_s, start_s + duration_s))

    def _traffic(self, client: int) -> ClientTraffic:
        tally = self.traffic.get(client)
        if tally is None:
            tally = self.traffic[client] = ClientTraffic()
        return tally

    def note_attempt(self, client: int, nbytes: int) -> None:
        """``client`` starts an uplink attempt of ``nbytes`` (:meth:`Counters.count_upload`)."""
        tally = self._traffic(client)
        tally.uplink_attempts += 1
        tally.uplink_bytes += nbytes

    def note_harq(self, client: int, copies: float) -> None:
        """``copies`` HARQ copies beyond the first of a payload of ``client`` (:meth:`Counters.count_harq`)."""
        self._traffic(client).harq_retransmissions += copies

    def note_retransmission(self, client: int) -> None:
        """An attempt of ``client`` is repeated after an outage (:meth:`Counters.count_retransmission`)."""
        self._traffic(client).retransmissions += 1

    def note_dropped_transmission(self, client: int) -> None:
        """A payload of ``client`` is dropped after its last attempt
        (:meth:`Counters.count_dropped_transmission`)."""
        self._traffic(client).dropped_transmissions += 1

    def note_download(self, client: int, nbytes: int) -> None:
        """``nbytes`` are sent down to ``client`` (its share of :meth:`Counters.count_download`)."""
        self._traffic(client).downlink_bytes += nbytes

    def uplink_attempts(self) -> int:
        """Uplink attempts of every client this round (``rounds.csv``'s ``uplink_attempts``)."""
        return sum(t.uplink_attempts for t in self.traffic.values())
