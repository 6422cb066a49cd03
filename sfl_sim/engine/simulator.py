"""The SimPy engine: it owns the simulated clock and times and counts every step.

Algorithms describe one round as a SimPy generator written with the primitives of
:class:`RoundContext` (``compute``, ``upload``, ``download``, ``broadcast``).  Each primitive is
a timeout whose length comes from the cell and the compute budgets, and it adds to the run's
counters what crossed the air or was computed.  The real torch work runs in the algorithm's
generator between the yields, i.e. when its event fires.

Time model
----------
* compute on client k: ``flops / client_flops_per_s[k]``; clients never share a device.
* compute on the server: ``flops / server_flops_per_s``; the server is one device, so concurrent
  server jobs queue (a SimPy resource of capacity 1) and run one after another at full speed.
* upload by client k: ``8 * nbytes / r_k``, with ``r_k`` the uplink rate of client k when the
  uplink band is shared by the round's cohort (they transmit in the same phases).
* downlink: ``ideal`` (zero time), ``broadcast`` or ``unicast``.  In both timed modes a payload for
  one client (an activation gradient, a model for one client) goes at client k's own rate on its
  share of the downlink band, the band split among the round's cohort by the allocator (like the
  uplink: the cohort is who receives in the round's downlink phases, and a share fixed per round
  keeps every client's reply time independent of when the others' replies happen to overlap).
  A model sent to the whole cohort goes out, with ``broadcast``, once at the rate of the worst
  receiver on the whole band; with ``unicast``, as one copy per client, each at that client's
  rate on its share, all at once: the transfer ends when the slowest copy does,
  ``max_k 8 N / r_k``.
* bytes are counted per receiving client, whatever the downlink mode, so byte columns compare
  across modes: a broadcast of N bytes to 10 clients adds 10 N downlink bytes.

Small-scale fading and outage
-----------------------------
The band shares of a round are allocated once per round from the large-scale gains, the round's
fading draw and the payloads the algorithm declares (:meth:`RoundContext.allocate_uplink`: a
split algorithm declares each client's activations, an FL algorithm its model).  Uplink fading is
redrawn per *coherence block*, a scenario choice:
``per_round`` (one draw per client per round), ``per_iteration`` (a new draw when a client's
transfer names a new ``block``, the local iteration index algorithms pass) or
``per_transmission`` (a new draw for every upload).  Downlink fading is drawn once per round.
With an active :class:`channel.OutagePolicy`, an upload whose rate (or SNR) falls below the
threshold fails: the failed attempt occupies the link for ``bits / max(rate, min_rate_bps)``
(the transmitter pushes at least the threshold rate and the receiver cannot decode), then it is
retransmitted after a fresh fading draw while attempts remain, else dropped.  ``upload`` events
resolve to :data:`~sfl_sim.engine.outcome.DELIVERED` or to ``Lost("outage")``
(:mod:`sfl_sim.engine.outcome`); the counters record retransmissions and drops, and bytes of every
attempt are counted (they were on the air).

HARQ
----
With a HARQ model (``cell.harq``, any :class:`sfl_sim.channel.protocols.HarqModel`, e.g. :class:`channel.Harq`),
an upload that is not in outage asks it for the time
its transport blocks take, copies resent included, at the link's rate and SINR (sampled mode draws
from the run's ``harq`` stream); the copies beyond the first go to
``Counters.harq_retransmissions`` (the payload's bytes are counted once per attempt, as above).  A
payload with a block still failing after the last copy is an outage, and the outage policy decides
what follows, as for a rate below the threshold.

Busy time (for the energy ledger)
---------------------------------
Every client-side primitive also notes, in :attr:`RoundContext.busy`, the interval it keeps a
client busy, as a :class:`Busy` (kind ``compute``, ``uplink`` — each attempt, failed ones too, with
the transmit power used — or ``downlink``; a broadcast notes one per cohort member), from when it
starts to when it would end; :attr:`RoundContext.left_s` notes when a client's part of the round
ended: its payload lost after outage, its battery empty, or its departure (a HARQ upload notes its
air time only: the round trips between copies are waiting).  These notes are read after the round
(:mod:`sfl_sim.clients.energy.ledger`) and change nothing the engine times or counts.

Lost payloads and stragglers
----------------------------
Failure is the value of an event, not a separate flag: a client's process returns
:data:`~sfl_sim.engine.outcome.DELIVERED` or a :class:`~sfl_sim.engine.outcome.Lost` carrying its
reason, and :meth:`RoundContext.gather` records that reason (or the straggler policy's own) in
:attr:`RoundContext.dropped`, which becomes the ``dropped`` column of ``rounds.csv``.

Clients leaving mid-round
-------------------------
With an availability model (``availability``), each cohort client's offline time in the round is
asked once at the round's start (``next_change_s``; the runner selects only clients online
then).  A client that leaves stops where it is: a computation running at its offline time ends
then (only the FLOPs done count); an upload in flight resolves to ``Lost("unavailable")`` at that
moment (its bytes count, as a failed attempt's do); a later upload is ``Lost("unavailable")`` at
once and a download to it takes no time and counts nothing.  So a client that leaves while it
waits for the server is lost when it next has to send.  Without a model (``always``) nothing
changes.

Device traces
-------------
``uplink_bps`` / ``downlink_bps`` (per client, NaN where none) replace the cell's uplink rate and
the downlink unicast rate of those clients (a broadcast goes at the slowest of the channel's
rate and the cohort's traced rates); a traced uplink rate has no fading redraw.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Generator, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    TypeVar,
    cast,
)

import numpy as np
import simpy

from sfl_sim.channel.cell import Cell
from sfl_sim.channel.link.outage import OutagePolicy
from sfl_sim.channel.protocols import HarqModel
from sfl_sim.config.choices import Coherence, DownlinkMode, OnOutage, StragglerPolicy, check_choice
from sfl_sim.engine.outcome import DELIVERED, LossReason, Lost, Outcome

if TYPE_CHECKING:  # the engine needs only the protocol's methods
    from sfl_sim.clients.availability.base import Availability

_T = TypeVar("_T")
SimSteps = Generator[simpy.Event, Any, _T]
"""A generator run on the simulated clock: it yields SimPy events and returns a ``_T``
(``yield from`` it inside a round, or start it with :meth:`RoundContext.process`)."""

SERVER = -1
"""``who`` value of :meth:`RoundContext.compute` for the server."""


@dataclass(frozen=True)
class Busy:
    """One interval a client is busy in a round (see "Busy time" in the module docstring).

    Attributes
    ----------
    kind : {"compute", "uplink", "downlink"}
    start_s, end_s : float
        Simulated start and (scheduled) end; an interval cut short by the round's end runs past it.
    flops : float
        FLOPs of a ``compute`` interval (0 otherwise).
    tx_power_w : float
        Transmit power of an ``uplink`` interval, W (0 otherwise).
    """

    kind: str
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
        Bytes delivered over each direction (downlink per receiving client).
    client_flops, server_flops : float
        FLOPs computed by all clients together and by the server.
    by_kind : dict
        Bytes per ``"uplink/<what>"`` / ``"downlink/<what>"`` and FLOPs per ``"client"``/``"server"``
        with the step kind, e.g. ``"uplink/activations"``.
    """

    uplink_bytes: int = 0
    downlink_bytes: int = 0
    client_flops: float = 0.0
    server_flops: float = 0.0
    by_kind: dict[str, float] = field(default_factory=dict)
    retransmissions: int = 0
    dropped_transmissions: int = 0
    dropped_clients: int = 0
    #: HARQ copies of transport blocks beyond the first (expected, a real number, in ``expected`` mode).
    harq_retransmissions: float = 0.0

    def add(self, key: str, amount: float) -> None:
        self.by_kind[key] = self.by_kind.get(key, 0) + amount

    def as_dict(self) -> dict[str, Any]:
        """The counters as plain data; ``harq_retransmissions`` only once HARQ has counted one, so the
        record of a run without HARQ is what it was before HARQ existed."""
        data = {"uplink_bytes": self.uplink_bytes, "downlink_bytes": self.downlink_bytes,
                "client_flops": self.client_flops, "server_flops": self.server_flops,
                "by_kind": dict(self.by_kind), "retransmissions": self.retransmissions,
                "dropped_transmissions": self.dropped_transmissions, "dropped_clients": self.dropped_clients}
        if self.harq_retransmissions:
            data["harq_retransmissions"] = self.harq_retransmissions
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Counters:
        return cls(int(data["uplink_bytes"]), int(data["downlink_bytes"]), float(data["client_flops"]),
                   float(data["server_flops"]), dict(data.get("by_kind", {})),
                   int(data.get("retransmissions", 0)), int(data.get("dropped_transmissions", 0)),
                   int(data.get("dropped_clients", 0)), float(data.get("harq_retransmissions", 0.0)))


class Simulator:
    """Simulated clock, cell and compute budgets of one run.

    Parameters
    ----------
    cell : channel.Cell
        Large-scale channel state; gives uplink, downlink and broadcast rates in bit/s.
    client_flops_per_s : ndarray, shape (n_clients,)
        Compute budget of each client in FLOP/s.
    server_flops_per_s : float
        Compute budget of the server in FLOP/s.
    downlink_mode : {"ideal", "broadcast", "unicast"}
    start_time_s : float
        Initial simulated time (non-zero when a run resumes).
    counters : Counters, optional
        Counters to continue from (resume).
    fading_rng : numpy.random.Generator, optional
        Stream of the small-scale fading draws (default: a fixed-seed stream).
    coherence : {"per_round", "per_iteration", "per_transmission"}
        Coherence block of the uplink fading.
    outage : channel.OutagePolicy, optional
        Outage rule of uplink transmissions (default: no outage).
    straggler_policy : {"wait_all", "deadline", "over_selection"}
        How the server waits for clients (see :meth:`RoundContext.gather`).
    deadline_s : float, optional
        With ``deadline``: how long the server waits per local iteration, in simulated seconds.
    keep_clients : int, optional
        With ``over_selection``: how many of the (over-)selected clients are kept.
    harq : sfl_sim.channel.protocols.HarqModel, optional
        HARQ of uplink transport blocks (default: none, a payload takes ``bits / rate``).
    harq_rng : numpy.random.Generator, optional
        The ``harq`` stream, drawn from in HARQ's ``sampled`` mode (default: a fixed-seed stream).
    availability : sfl_sim.clients.availability.Availability, optional
        Who is online when (prepared); a cohort client leaves the round at its next change
        (see "Clients leaving mid-round").  None: every client stays.
    uplink_bps, downlink_bps : ndarray, shape (n_clients,), optional
        Traced link throughputs, bit/s, NaN where the channel's rate stands (see "Device traces").
    """

    def __init__(self, cell: Cell, client_flops_per_s: np.ndarray, server_flops_per_s: float,
                 downlink_mode: DownlinkMode = "ideal", start_time_s: float = 0.0,
                 counters: Counters | None = None, fading_rng: np.random.Generator | None = None,
                 coherence: Coherence = "per_round", outage: OutagePolicy | None = None,
                 straggler_policy: StragglerPolicy = "wait_all", deadline_s: float | None = None,
                 keep_clients: int | None = None, harq: HarqModel | None = None,
                 harq_rng: np.random.Generator | None = None,
                 availability: Availability | None = None,
                 uplink_bps: np.ndarray | None = None, downlink_bps: np.ndarray | None = None) -> None:
        check_choice("downlink_mode", downlink_mode, DownlinkMode)
        check_choice("coherence", coherence, Coherence)
        check_choice("straggler_policy", straggler_policy, StragglerPolicy)
        if outage is not None:
            check_choice("outage.on_outage", outage.on_outage, OnOutage)
        if straggler_policy == "deadline" and not (deadline_s and deadline_s > 0):
            raise ValueError(f"deadline_s={deadline_s!r}; allowed: a number > 0 with straggler_policy=deadline")
        if straggler_policy == "over_selection" and not (keep_clients and keep_clients >= 1):
            raise ValueError(f"keep_clients={keep_clients!r}; allowed: an integer >= 1 with over_selection")
        self.straggler_policy, self.deadline_s, self.keep_clients = straggler_policy, deadline_s, keep_clients
        self.fading_rng = fading_rng if fading_rng is not None else np.random.default_rng(0)
        self.coherence = coherence
        self.outage = outage
        self.harq = harq
        self.harq_rng = harq_rng if harq_rng is not None else np.random.default_rng(0)
        self.cell = cell
        self.client_flops_per_s = np.asarray(client_flops_per_s, dtype=float)
        self.server_flops_per_s = float(server_flops_per_s)
        self.downlink_mode = downlink_mode
        self.env = simpy.Environment(initial_time=start_time_s)
        self.server = simpy.Resource(self.env, capacity=1)
        self.counters = counters if counters is not None else Counters()
        self.availability = availability
        self.traced_uplink_bps = _traced(uplink_bps)
        self.traced_downlink_bps = _traced(downlink_bps)
        #: With batteries (:mod:`sfl_sim.clients.energy.battery`): ``guard(ctx, client, duration_s, tx_power_w)``
        #: is asked before each upload; None lets it go, a time says when the client's battery empties
        #: (at the latest the upload's end), and the upload resolves to ``Lost("battery")`` then.
        self.upload_guard: Callable[[RoundContext, int, float, float], float | None] | None = None

    @property
    def now_s(self) -> float:
        """Current simulated time in seconds."""
        return float(self.env.now)

    def wait_until(self, t_s: float) -> float:
        """Advance the clock to ``t_s`` with nothing happening (nobody online); the seconds waited."""
        start = self.now_s
        if t_s > start:
            self.env.run(until=t_s)
        return self.now_s - start

    def offline_times(self, cohort: np.ndarray) -> dict[int, float]:
        """Each cohort client's offline time in the round starting now (finite ones only): now for
        one already offline, else its next change."""
        if self.availability is None:
            return {}
        now = self.now_s
        online = self.availability.online(cohort, now)
        out = {}
        for k, up in zip(cohort.tolist(), online.tolist(), strict=True):
            t = float(self.availability.next_change_s(k, now)) if up else now
            if math.isfinite(t):
                out[k] = t
        return out

    def run_round(self, round_process: Callable[[RoundContext], SimSteps[Any]],
                  cohort: Sequence[int] | np.ndarray) -> float:
        """Run one round to completion on the simulated clock.

        Parameters
        ----------
        round_process : callable
            ``round_process(ctx) -> generator``, the algorithm's round.
        cohort : sequence of int or numpy.ndarray
            Clients taking part in the round.

        Returns
        -------
        float
            Simulated duration of the round in seconds.
        """
        start = self.now_s
        ctx = RoundContext(self, np.asarray(cohort, dtype=np.int64))
        self.last_round = ctx
        self.env.run(until=self.env.process(round_process(ctx)))
        ctx.stop_stragglers()
        gone = sum(1 for why in ctx.dropped.values() if why == "unavailable")
        if gone:  # by_kind only: the counters of runs without departures stay as they were
            self.counters.add("dropped_clients/unavailable", gone)
        return self.now_s - start


class RoundContext:
    """What an algorithm's round may do on the simulated clock (see module docstring)."""

    def __init__(self, sim: Simulator, cohort: np.ndarray) -> None:
        self._sim = sim
        self.cohort = cohort
        cell, rng = sim.cell, sim.fading_rng
        ids = cohort.tolist()
        self._offline_at = sim.offline_times(cohort)  # client -> when it leaves (finite only)
        self._round_fading = cell.sample_fading(cohort, rng)
        self.allocate_uplink(None)
        self._block: dict[int, Hashable] = {}  # per_iteration: the block each client's rate belongs to
        self.dropped: dict[int, LossReason] = {}  # client -> why it left the round (a LossReason)
        self._processes: list[simpy.Process] = []
        self.start_s = sim.now_s
        self.busy: dict[int, list[Busy]] = {}  # client -> its busy intervals this round
        # client -> when its part of the round ended: its payload lost after outage, its battery
        # empty, or its departure (``unavailable``); the earliest counts
        self.left_s: dict[int, float] = dict(self._offline_at)
        if sim.downlink_mode != "ideal":
            down_fading = cell.sample_fading(cohort, rng)
            self._downlink_bps = dict(zip(ids, cell.downlink_rates_bps(cohort, fading_gain=down_fading).tolist(),
                                          strict=True))
            if sim.downlink_mode == "broadcast":
                self._broadcast_bps = float(cell.broadcast_rate_bps(cohort, fading_gain=down_fading))
            if sim.traced_downlink_bps:
                traced = {k: sim.traced_downlink_bps[k] for k in ids if k in sim.traced_downlink_bps}
                self._downlink_bps.update(traced)
                if sim.downlink_mode == "broadcast":
                    self._broadcast_bps = min([self._broadcast_bps, *traced.values()])

    def allocate_uplink(self, payload_bits: dict[int, float] | None) -> None:
        """(Re)allocate the uplink band of the round among the cohort.

        Called with None at the start of the round; an algorithm calls it again with each
        client's main payload of the round (activations per iteration, or its model) so that
        payload-aware allocators (``proportional_payload``, ``equal_finish_time``) see it.

        Parameters
        ----------
        payload_bits : dict of client -> bits, or None
        """
        ids = self.cohort.tolist()
        payload = None if payload_bits is None else np.array([float(payload_bits[k]) for k in ids])
        link = self._sim.cell.uplink_link(self.cohort, payload_bits=payload, fading_gain=self._round_fading)
        self._share_hz = dict(zip(ids, link.bandwidth_hz.tolist(), strict=True))
        self._uplink_bps = dict(zip(ids, link.rate_bps.tolist(), strict=True))
        self._uplink_snr_db = dict(zip(ids, link.snr_db.tolist(), strict=True))
        self._uplink_tx_power_w = dict(zip(ids, link.tx_power_w.tolist(), strict=True))
        for k in ids:
            if k in self._sim.traced_uplink_bps:
                self._uplink_bps[k] = self._sim.traced_uplink_bps[k]

    @property
    def env(self) -> simpy.Environment:
        return self._sim.env

    @property
    def now_s(self) -> float:
        return self._sim.now_s

    def uplink_share_hz(self, client: int) -> float:
        """Uplink bandwidth allocated to ``client`` in this round, Hz."""
        return self._share_hz[client]

    def uplink_rate_bps(self, client: int) -> float:
        """Uplink rate of ``client`` in this round, bit/s."""
        return self._uplink_bps[client]

    def uplink_tx_power_w(self, client: int) -> float:
        """Uplink transmit power of ``client`` on its share in this round, W (the cell's power
        control: ``cell.client_tx_power_w`` with ``fixed``)."""
        return self._uplink_tx_power_w[client]

    def note_left(self, client: int, when_s: float) -> None:
        """Record that ``client``'s part of the round ended at ``when_s`` (the earliest such time stands)."""
        self.left_s[client] = min(when_s, self.left_s.get(client, math.inf))

    def _note_busy(self, client: int, kind: str, duration_s: float, flops: float = 0.0,
                   tx_power_w: float = 0.0) -> None:
        now = self.now_s
        self.busy.setdefault(client, []).append(Busy(kind, now, now + duration_s, flops, tx_power_w))

    def compute(self, who: int, flops: float, what: str = "compute") -> SimSteps[None]:
        """Spend ``flops`` on client ``who`` (or :data:`SERVER`); use as ``yield from``."""
        counters = self._sim.counters
        if who == SERVER:
            counters.server_flops += flops
            counters.add(f"server/{what}", flops)
            with self._sim.server.request() as slot:
                yield slot
                yield self.env.timeout(flops / self._sim.server_flops_per_s)
        else:
            duration_s = flops / self._sim.client_flops_per_s[who]
            left_s = self._offline_at.get(who, math.inf) - self.now_s
            if left_s < duration_s:  # it leaves before the step ends: the part done, then nothing
                done = max(0.0, left_s)
                flops = float(round(flops * done / duration_s))  # whole FLOPs: the counters stay integral
                duration_s = done
            counters.client_flops += flops
            counters.add(f"client/{what}", flops)
            self._note_busy(who, "compute", float(duration_s), flops=flops)
            yield self.env.timeout(duration_s)

    def upload(self, client: int, nbytes: int, what: str, block: Hashable = None) -> simpy.Event:
        """Client → server transfer of ``nbytes``; ``yield`` it.

        Parameters
        ----------
        client : int
        nbytes : int
            Payload size in bytes (from the real tensors).
        what : str
            Kind of payload, for the counters (``"activations"``, ``"client_model"``...).
        block : hashable, optional
            Coherence block of this transfer (the local iteration index); used when the fading
            coherence is ``per_iteration``.

        Returns
        -------
        simpy.Event
            Fires when the payload is delivered (value :data:`~sfl_sim.engine.outcome.DELIVERED`)
            or dropped after outage (value ``Lost("outage")``) or departure (``Lost("unavailable")``).
        """
        if client in self._offline_at:
            return self.env.process(self._upload_or_leave(client, nbytes, what, block))
        return self._upload(client, nbytes, what, block)

    def _upload_or_leave(self, client: int, nbytes: int, what: str, block: Hashable) -> SimSteps[Outcome]:
        """The upload raced against the client's departure (see "Clients leaving mid-round")."""
        left_s = self._offline_at[client] - self.now_s
        if left_s <= 0:
            return Lost("unavailable")
        sending = self._upload(client, nbytes, what, block)
        leaving = self.env.timeout(left_s)
        yield sending | leaving
        # delivered by its offline time (ties included: online until then): a timeout that has
        # fired, or a process that has returned (its event may still wait in the queue)
        if sending.processed or (isinstance(sending, simpy.Process) and sending.triggered):
            return cast(Outcome, sending.value)
        if isinstance(sending, simpy.Process) and sending.is_alive:
            sending.defused = True  # stopped here on purpose: its Interrupt is not an error
            sending.interrupt("unavailable")
        return Lost("unavailable")

    def _upload(self, client: int, nbytes: int, what: str, block: Hashable) -> simpy.Event:
        policy = self._sim.outage
        if self._sim.upload_guard is not None and self._uplink_bps[client] > 0:
            empty_s = self._sim.upload_guard(self, client, 8.0 * nbytes / self._uplink_bps[client],
                                             self._uplink_tx_power_w[client])
            if empty_s is not None:
                return self._battery_empty(client, empty_s)
        if self._sim.coherence == "per_round" and (policy is None or not policy.active) \
                and self._uplink_bps[client] > 0 and self._sim.harq is None:
            self._count_upload(nbytes, what)  # the common case: one timeout, no process
            duration_s = 8.0 * nbytes / self._uplink_bps[client]
            self._note_busy(client, "uplink", duration_s, tx_power_w=self._uplink_tx_power_w[client])
            return self.env.timeout(duration_s, value=DELIVERED)
        return self.env.process(self._upload_with_fading(client, nbytes, what, block))

    def _battery_empty(self, client: int, empty_s: float) -> simpy.Event:
        """The upload of a client whose battery empties at ``empty_s``: on the air until then (no
        byte counted as delivered or sent whole), then ``Lost("battery")``; the client leaves."""
        now = self.now_s
        if empty_s > now:
            self._note_busy(client, "uplink", empty_s - now, tx_power_w=self._uplink_tx_power_w[client])
        self.note_left(client, max(empty_s, now))
        return self.env.timeout(max(0.0, empty_s - now), value=Lost("battery"))

    def _count_upload(self, nbytes: int, what: str) -> None:
        counters = self._sim.counters
        counters.uplink_bytes += nbytes
        counters.add(f"uplink/{what}", nbytes)

    def _redraw(self, client: int) -> None:
        """New fading draw for ``client`` on the share it holds this round (none for a traced rate)."""
        if client in self._sim.traced_uplink_bps:
            return
        cell = self._sim.cell
        fading = cell.sample_fading([client], self._sim.fading_rng)
        link = cell.uplink_link_at_bandwidth([client], [self._share_hz[client]], fading_gain=fading)
        self._uplink_bps[client] = float(link.rate_bps[0])
        self._uplink_snr_db[client] = float(link.snr_db[0])

    def _upload_with_fading(self, client: int, nbytes: int, what: str, block: Hashable) -> SimSteps[Outcome]:
        coherence = self._sim.coherence
        if coherence == "per_transmission" or (
                coherence == "per_iteration" and block is not None and self._block.get(client, block) != block):
            self._redraw(client)
        if block is not None:
            self._block[client] = block
        policy = self._sim.outage
        harq = self._sim.harq
        counters = self._sim.counters
        attempt = 1
        while True:
            self._count_upload(nbytes, what)
            rate = self._uplink_bps[client]
            # A zero rate (a link abstraction found no usable MCS: out of range) delivers nothing,
            # whatever the policy's thresholds; the policy still decides what follows.
            failed = rate <= 0.0 or (policy is not None and policy.active and bool(
                policy.is_outage(np.array([rate]), np.array([self._uplink_snr_db[client]]))[0]))
            if not failed and harq is None:
                self._note_busy(client, "uplink", 8.0 * nbytes / rate, tx_power_w=self._uplink_tx_power_w[client])
                yield self.env.timeout(8.0 * nbytes / rate)
                return DELIVERED
            if policy is None:
                policy = OutagePolicy()  # no policy: one attempt, then the payload is dropped
            if not failed:
                # HARQ: transport blocks resent while they fail; one still failing is an outage.
                assert harq is not None
                sent = harq.send(8.0 * nbytes, rate, self._uplink_snr_db[client], self._sim.harq_rng)
                counters.harq_retransmissions += sent.retransmissions
                counters.add(f"harq_retransmissions/{what}", sent.retransmissions)
                # on the air for its copies (sum of N_i blocks of B / n bits); the round trips between
                # copies are waiting, which the energy ledger counts as idle
                air_s = (sent.blocks + sent.retransmissions) * 8.0 * nbytes / (sent.blocks * rate)
                self._note_busy(client, "uplink", air_s, tx_power_w=self._uplink_tx_power_w[client])
                yield self.env.timeout(sent.time_s)
                if sent.delivered:
                    return DELIVERED
            else:
                # A failed attempt occupies the air for the payload at its rate (or the threshold
                # rate); at rate 0 with no threshold nothing is granted, so it takes no time.
                attempt_rate = max(rate, policy.min_rate_bps)
                attempt_s = 8.0 * nbytes / attempt_rate if attempt_rate > 0 else 0.0
                self._note_busy(client, "uplink", attempt_s, tx_power_w=self._uplink_tx_power_w[client])
                yield self.env.timeout(attempt_s)
            action: OnOutage = policy.next_action(np.array([True]), attempt)[0]
            if action == "drop":
                counters.dropped_transmissions += 1
                counters.add(f"dropped/{what}", 1)
                self.note_left(client, self.now_s)
                return Lost("outage")
            counters.retransmissions += 1
            counters.add(f"retransmissions/{what}", 1)
            attempt += 1
            self._redraw(client)  # a retransmission sees a fresh fading draw

    def download(self, client: int, nbytes: int, what: str) -> simpy.Timeout:
        """Server → client unicast of ``nbytes``; ``yield`` it."""
        if self._offline_at.get(client, math.inf) <= self.now_s:
            return self.env.timeout(0.0)  # it has left: nothing is sent
        counters = self._sim.counters
        counters.downlink_bytes += nbytes
        counters.add(f"downlink/{what}", nbytes)
        if self._sim.downlink_mode == "ideal":
            return self.env.timeout(0.0)
        duration_s = 8.0 * nbytes / self._downlink_rate("download to client", client, self._downlink_bps[client])
        self._note_busy(client, "downlink", duration_s)
        return self.env.timeout(duration_s)

    def broadcast(self, nbytes: int, what: str) -> simpy.Timeout:
        """Server → whole cohort transfer of the same ``nbytes``; ``yield`` it (``unicast``: one copy
        per client)."""
        counters = self._sim.counters
        total = nbytes * len(self.cohort)
        counters.downlink_bytes += total
        counters.add(f"downlink/{what}", total)
        if self._sim.downlink_mode == "ideal":
            return self.env.timeout(0.0)
        if self._sim.downlink_mode == "unicast":
            # One copy per client on its own share, sent at once: done when the slowest copy is.
            copy_s = {k: 8.0 * nbytes / self._downlink_rate("copy to client", k, self._downlink_bps[k])
                      for k in self.cohort.tolist()}
            for client, duration_s in copy_s.items():
                self._note_busy(client, "downlink", duration_s)
            return self.env.timeout(max(copy_s.values()))
        duration_s = 8.0 * nbytes / self._downlink_rate("broadcast to the cohort of", len(self.cohort),
                                                        self._broadcast_bps)
        for client in self.cohort.tolist():
            self._note_busy(client, "downlink", duration_s)
        return self.env.timeout(duration_s)

    def _downlink_rate(self, what: str, who: int, rate_bps: float) -> float:
        """``rate_bps``, or a clear error where a link abstraction gives the downlink no usable MCS
        (there is no downlink outage rule to apply)."""
        if rate_bps <= 0.0:
            raise ValueError(
                f"cell.downlink: the {what} {who} has rate 0 (rate model {self._sim.cell.rate!r} finds no usable "
                f"MCS at its SINR) and a downlink outage is not modelled; use cell.downlink.mode: ideal, a larger "
                f"cell.downlink.server_tx_power_w, or a rate model without an SINR floor"
            )
        return rate_bps

    def gather(self, arrivals: Mapping[int, simpy.Event], local_iterations: int = 1) -> SimSteps[list[int]]:
        """Wait for clients' deliveries under the straggler policy; ``yield from`` it.

        Parameters
        ----------
        arrivals : dict of client -> event
            One event per client still in the round; a value that is a
            :class:`~sfl_sim.engine.outcome.Lost` means the client's payload never arrived (its
            reason is recorded), any other value that it did.
        local_iterations : int
            How many local iterations the awaited payload took: the deadline scales with it
            (one iteration of a split algorithm; T for a whole-model upload of FL).

        Returns
        -------
        list of int
            The clients whose payloads the server uses, in the order of ``arrivals``.  Clients
            left out are recorded in :attr:`dropped` (reason ``deadline``, ``over_selection``, or
            the :class:`~sfl_sim.engine.outcome.Lost` reason their event carried) and must not be
            waited for again this round.

        Notes
        -----
        ``wait_all`` waits for every event; ``deadline`` waits at most ``deadline_s x
        local_iterations`` from the call; ``over_selection`` keeps the first ``keep_clients``
        clients to deliver in the round (later ones are dropped).
        """
        sim = self._sim
        pending = dict(arrivals)
        if sim.straggler_policy == "wait_all":
            yield self.all_of(pending.values())
        elif sim.straggler_policy == "deadline":
            assert sim.deadline_s is not None  # the Simulator requires it with this policy
            yield simpy.AnyOf(self.env, [self.all_of(pending.values()),
                                         self.env.timeout(sim.deadline_s * local_iterations)])
        else:
            assert sim.keep_clients is not None  # the Simulator requires it with this policy
            want = min(sim.keep_clients, len(pending))
            while sum(1 for e in pending.values() if _arrived(e)) < want and \
                    not all(e.triggered for e in pending.values()):
                yield simpy.AnyOf(self.env, [e for e in pending.values() if not e.triggered])
        late = Lost("deadline" if sim.straggler_policy == "deadline" else "over_selection")
        kept = []
        for client, event in pending.items():
            if _arrived(event):
                kept.append(client)
            else:
                # not arrived but fired: its value is the Lost saying why
                self.note_dropped(client, cast(Lost, event.value) if event.triggered else late)
        if sim.straggler_policy == "over_selection":
            keep = sim.keep_clients
            assert keep is not None  # the Simulator requires it with this policy
            if len(kept) > keep:
                for client in kept[keep:]:
                    self.dropped[client] = "over_selection"
                kept = kept[:keep]
        self._sim.counters.dropped_clients += len(pending) - len(kept)  # kept: distinct clients of pending
        return kept

    def note_dropped(self, client: int, lost: Lost) -> None:
        """Record why ``client`` left the round (the first reason recorded stands)."""
        self.dropped.setdefault(client, lost.reason)

    def process(self, generator: SimSteps[Any]) -> simpy.Process:
        """Start a concurrent process (e.g. one per client).

        Processes still running when the round ends (a client dropped by the straggler policy
        and still computing or sending) are stopped then, so nothing of one round runs in the
        next.
        """
        proc = self.env.process(self._stoppable(generator))
        self._processes.append(proc)
        return proc

    @staticmethod
    def _stoppable(generator: SimSteps[_T]) -> SimSteps[_T | Lost]:
        try:
            return (yield from generator)
        except simpy.Interrupt:
            return Lost("round_over")

    def stop_stragglers(self) -> None:
        """Stop this round's processes that are still running (called by the engine at round end)."""
        alive = [p for p in self._processes if p.is_alive]
        for proc in alive:
            proc.interrupt("round over")
        while alive and any(p.is_alive for p in alive):
            self.env.step()

    def all_of(self, events: Iterable[simpy.Event]) -> simpy.Event:
        """Event that fires when all ``events`` have fired."""
        return simpy.AllOf(self.env, list(events))

    def event(self) -> simpy.Event:
        """A fresh event an algorithm triggers itself (e.g. 'gradient ready for client k')."""
        return self.env.event()


def _traced(rates_bps: np.ndarray | None) -> dict[int, float]:
    """client -> traced rate, for the finite entries of ``rates_bps`` (NaN: the channel's)."""
    if rates_bps is None:
        return {}
    rates = np.asarray(rates_bps, dtype=float)
    return {int(k): float(rates[k]) for k in np.flatnonzero(np.isfinite(rates))}


def _arrived(event: simpy.Event) -> bool:
    """The event has fired with a payload (anything but a :class:`Lost`)."""
    return event.triggered and not isinstance(event.value, Lost)
