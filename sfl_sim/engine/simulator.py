"""The SimPy engine: it owns the simulated clock and times and counts every step.

Algorithms describe one round as a SimPy generator written with the primitives of
:class:`RoundContext` (``compute``, ``upload``, ``download``, ``broadcast``, ``gather``).
Computations and downloads are timeouts whose length comes from the compute budgets and the
cell; every upload is one link process (:mod:`sfl_sim.engine.link`) whose value is delivered or
lost; each adds to the run's counters what crossed the air or was computed
(:mod:`sfl_sim.engine.accounting`).  The real torch work runs in the algorithm's generator between
the yields, i.e. when its event fires.

The modules, one job each: this one (the clock, the run's settings, and a round's primitives),
:mod:`~sfl_sim.engine.link` (the link process), :mod:`~sfl_sim.engine.radio` (a round's shares and
rates), :mod:`~sfl_sim.engine.stragglers` (the straggler policies and their pure decision),
:mod:`~sfl_sim.engine.accounting` (counters and busy notes), :mod:`~sfl_sim.engine.client_state`
(what the engine asks of availability and batteries), :mod:`~sfl_sim.engine.outcome` (delivered
or lost).

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
* on a radio in time (a time-varying fading, a timed mobility: :mod:`sfl_sim.engine.radio`) each
  of these transfers' bits, up and down, are integrated over the channel as it changes from the
  transfer's start instead of ``8 N / r`` at one rate (a broadcast at the slowest receiver's rate
  at each step).

Small-scale fading and outage
-----------------------------
The band shares of a round are allocated once per round from the large-scale gains, the round's
fading draw and the payloads the algorithm declares (``RoundContext.allocate_uplink``: a
split algorithm declares each client's activations, an FL algorithm its model).  Uplink fading is
redrawn per *coherence block*, a scenario choice:
``per_round`` (one draw per client per round), ``per_iteration`` (a new draw when a client's
transfer names a new ``block``, the local iteration index algorithms pass) or
``per_transmission`` (a new draw for every upload).  Downlink fading is drawn once per round.
With an active :class:`sfl_sim.channel.OutagePolicy`, an upload whose rate (or SNR) falls below the
threshold fails: the failed attempt occupies the link for ``bits / max(rate, min_rate_bps)``
(the transmitter pushes at least the threshold rate and the receiver cannot decode), then it is
retransmitted after a fresh fading draw while attempts remain, else dropped.  ``upload`` processes
resolve to :data:`~sfl_sim.engine.outcome.DELIVERED` or to ``Lost("outage")``
(:mod:`sfl_sim.engine.outcome`); the counters record retransmissions and drops, and bytes of every
attempt are counted (they were on the air).

HARQ
----
With a HARQ model (``cell.harq``, any :class:`sfl_sim.channel.protocols.HarqModel`, e.g. :class:`sfl_sim.channel.Harq`),
an upload that is not in outage asks it for the time
its transport blocks take, copies resent included, at the link's rate and SINR (sampled mode draws
from the run's ``harq`` stream); the copies beyond the first go to
``Counters.harq_retransmissions`` (the payload's bytes are counted once per attempt, as above).  A
payload with a block still failing after the last copy is an outage, and the outage policy decides
what follows, as for a rate below the threshold.

Busy time (for the energy ledger)
---------------------------------
Every client-side primitive also notes, in ``RoundContext.busy``, the interval it keeps a
client busy, as a :class:`~sfl_sim.engine.accounting.Busy` (kind ``compute``, ``uplink`` — each
attempt, failed ones too, with the transmit power used — or ``downlink``; a broadcast notes one per
cohort member), from when it starts to when it would end; ``RoundContext.left_s`` notes when a
client's part of the round ended: its payload lost after outage, its battery empty, or its
departure (a HARQ upload notes its air time only: the round trips between copies are waiting).
These notes (:class:`~sfl_sim.engine.accounting.RoundNotes`) are read after the round
(:mod:`sfl_sim.clients.energy.ledger`) and change nothing the engine times or counts.

Lost payloads and stragglers
----------------------------
Failure is the value of an event, not a separate flag: a client's process returns
:data:`~sfl_sim.engine.outcome.DELIVERED` or a :class:`~sfl_sim.engine.outcome.Lost` carrying its
reason, and ``RoundContext.gather`` records that reason (or the straggler policy's own,
:mod:`sfl_sim.engine.stragglers`) in ``RoundContext.dropped``, which becomes the ``dropped``
column of ``rounds.csv``.

Batteries
---------
With a battery (``battery``, :class:`~sfl_sim.engine.client_state.Battery`: the energy ledger with
``energy.battery``), each upload that gets air time first asks it whether the client's charge sees
it through; if not, the client is on the air until its battery empties, the upload resolves to
``Lost("battery")`` then and the client leaves the round (no byte is counted).

Clients leaving mid-round
-------------------------
With an availability model (``availability``), each cohort client's offline time in the round is
asked once at the round's start (``next_change_s``; the runner selects only clients online
then).  A client that leaves stops where it is: a computation running at its offline time ends
then (only the FLOPs done count); an upload in flight resolves to ``Lost("unavailable")`` at that
moment (its bytes count, as a failed attempt's do); a later upload is ``Lost("unavailable")`` at
once and a download to it takes no time, counts nothing and is ``Lost("unavailable")``.  So a
client that leaves while it waits for the server is lost when it next has to send.  Without a model (``always``) nothing
changes.

MAC scheduling
--------------
With a dynamic scheduler (``cell.scheduler``: ``round_robin``, ``proportional_fair``,
``max_rate``), the round's uplink is a band of resource blocks (``cell.numerology``'s grid of
``cell.uplink_bandwidth_hz``) that :func:`~sfl_sim.engine.band.open_band`'s band hands to the clients with
data, fluid (shares change when a transfer starts or ends) or slot by slot; an upload lasts until
its last bit is through instead of ``bits / r_k`` on a share fixed for the round.  The outage rule
still judges each attempt by the round's share.  With ``unicast`` downlink, the replies and the
per-client model copies go through a band of the downlink grid the same way (the server's power
spread flat over the band; one fading draw per round; no HARQ).  ``static`` (the default) is the
per-round split.

Edge servers and handovers
--------------------------
With an edge (``edge``, :class:`~sfl_sim.engine.edge.EdgeServers`: ``server.edge``) each cell of the
radio has its own server, a SimPy resource of capacity 1 at the edge's FLOP/s, and
``compute(SERVER, flops, client=k)`` runs on the edge of the cell holding client k's server-side
state: its serving cell at the round's start, then the target of each handover the round sees
(``client`` None, or work on many clients' data at once: the cloud server, ``server_flops_per_s``).
A watcher process per round walks the radio's handovers (:meth:`CellNetwork.handovers_between`, in
chunks of :data:`HANDOVER_CHUNK_S` as the round goes) and, at each one of a cohort client still in
the round, asks the policy: ``migrate`` moves the state to the new edge over the backhaul
(``8 N / backhaul_bps + backhaul_latency_s``, :meth:`~sfl_sim.engine.edge.EdgeServers.backhaul_s`),
and the client's next server step waits until it has arrived; ``drop`` ends the client's round
(``Lost("handover")``: its later transfers are lost at once and a gather does not keep it).  This
holds while the client's round is in progress: once the server has kept its update
(:meth:`RoundContext.keep`: a gather keeping a client whose arrival was its process's end, or the
algorithm's own final word, e.g. the concatenated server's) a handover of it moves, drops and
counts nothing; its update waits at the edge it reached for the aggregation.  Every
handover of a cohort client still at work counts ``handovers`` and adds its interruption (and a migration's time)
to ``handover_lost_s``; ``migrations``, ``handover_drops`` and the bytes ``backhaul/migration`` are
counted (:attr:`Counters.by_kind <sfl_sim.engine.accounting.Counters.by_kind>`).  Server work on
many clients' data at once (a concatenated step) runs on the cloud: the payloads it takes and
gives cross the backhaul between the client's cell and the cloud (:meth:`RoundContext.backhaul`,
``backhaul/<kind>`` bytes; the split algorithms call it for their cloud steps).  State shared by
many clients' steps moves edge -> edge on its own (:meth:`RoundContext.move_between_edges`, charged
like a migration, ``backhaul/<kind>``: the sequential split server's one w_s before a step of a
client at another edge, ``backhaul/server_model``).  At the round's
end each cell with a kept client sends its aggregate (the algorithm's ``aggregate_bytes``) to the
cloud and gets the global model back, the cells in parallel: the round's clock gains
``2 (8 N / backhaul_bps + backhaul_latency_s)``, and ``backhaul/aggregation`` counts ``2 N`` per
such cell.  Without an edge none of this exists: one server, as above.

Device traces
-------------
``uplink_bps`` / ``downlink_bps`` (per client, NaN where none) replace the cell's uplink rate and
the downlink unicast rate of those clients (a broadcast goes at the slowest of the channel's
rate and the cohort's traced rates); a traced uplink rate has no fading redraw.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import simpy

from sfl_sim.channel.cell import Cell
from sfl_sim.channel.link.outage import OutagePolicy
from sfl_sim.channel.link.scheduling import ResourceGrid
from sfl_sim.channel.network.protocols import NO_CELL, HandoverEvent
from sfl_sim.channel.protocols import HarqModel, Scheduler
from sfl_sim.config.choices import Coherence, DownlinkMode, OnOutage, StragglerPolicy, check_choice
from sfl_sim.engine.accounting import Busy, Counters, RoundNotes
from sfl_sim.engine.band import BandResource, CellBands, Grants, LinkAt, SlotGrant, open_band, scheduling_form
from sfl_sim.engine.client_state import Battery, Presence, departures
from sfl_sim.engine.edge import HANDOVER_ACTIONS, CellNetwork, EdgeServers, cell_network
from sfl_sim.engine.link import Link
from sfl_sim.engine.outcome import DELIVERED, LossReason, Lost
from sfl_sim.engine.radio import Downlink, Uplink
from sfl_sim.engine.steps import SimSteps, stoppable
from sfl_sim.engine.stragglers import straggler_rule
from sfl_sim.kit.seeding import keyed_stream

__all__ = ["SERVER", "HANDOVER_CHUNK_S", "RoundContext", "Simulator"]

SERVER = -1
"""``who`` value of :meth:`RoundContext.compute` for the server."""

#: How far ahead, in simulated seconds, a round's handover watcher asks the radio for handovers at
#: a time (our choice: the radio evaluates them lazily, so a round asks only for the time it lasts,
#: in steps long against a handover's time-to-trigger yet few per round).
HANDOVER_CHUNK_S = 1.0


class RoundContext:
    """What an algorithm's round may do on the simulated clock: one round of ``sim`` with ``cohort``
    (built by :meth:`Simulator.run_round`).

    ``compute`` is ``yield from``-ed; ``upload`` (a link process), ``download`` and ``broadcast``
    (timeouts) are ``yield``-ed; ``gather`` (``yield from``) waits under the straggler policy.

    Attributes
    ----------
    cohort : ndarray of int
        The round's clients.
    start_s : float
        Simulated time the round started.
    notes : RoundNotes
        What the round records for its readers (busy intervals, who left when and why).
    sharing : ndarray of int, optional
        The clients the uplink band is allocated among (a superset of the cohort; default the
        cohort): an asynchronous dispatch group shares the band with every client in flight
        (:mod:`sfl_sim.engine.asynchronous`).
    """

    def __init__(self, sim: Simulator, cohort: np.ndarray, sharing: np.ndarray | None = None) -> None:
        self._sim = sim
        self.cohort = cohort
        self._offline_s = departures(sim.availability, cohort, sim.now_s)  # client -> when it leaves
        self._sharing = cohort if sharing is None else sharing
        self._uplink = Uplink(sim.cell, self._sharing, sim.coherence, sim.fading_rng, sim.traced_uplink_bps,
                              clock=sim.clock)
        self._processes: list[simpy.Process] = []
        self.start_s = sim.now_s
        # each client's serving cell at the start (clients.csv's cell), read now: a network keeps no
        # past of its serving cells once the clock has moved on
        radio = sim.cell.radio
        self.start_cells: np.ndarray = (np.zeros(cohort.shape, dtype=int) if getattr(radio, "network", None) is None
                                        else np.asarray(radio.serving_cell(cohort, self.start_s), dtype=int))
        self.notes = RoundNotes(self.start_s, left_s=self._offline_s)
        self._downlink = Downlink(sim.cell, cohort, sim.downlink_mode, sim.fading_rng, sim.traced_downlink_bps,
                                  sim.outage, clock=sim.clock)
        self._band = None if sim.uplink_grid is None else self._scheduled_band(sim, sim.uplink_grid)
        self._downlink_band = None if sim.downlink_grid is None else self._downlink_scheduled(sim, sim.downlink_grid)
        self._link = Link(sim.env, self._uplink, sim.counters, self.notes, sim.outage, sim.harq, sim.harq_rng,
                          None if sim.battery is None else self._battery_empties_at, self._offline_s, self._band)
        self._handover_dropped: set[int] = set()  # a handover's drops, counted as dropped clients when dropped
        if sim.edge is not None:
            self._start_edge(sim)

    # -- edge servers and handovers (module docstring: "Edge servers and handovers") ---------------
    def _start_edge(self, sim: Simulator) -> None:
        """Where each cohort client's server-side state is at the round's start, and the watcher."""
        assert sim.network is not None  # made with the edge
        cells = sim.network.serving_cell(self.cohort, self.start_s)
        # a client with no cell at the start (re-establishing) is taken to be in cell 0 (our choice)
        self._home: dict[int, int] = {int(k): int(c) if c != NO_CELL else 0
                                      for k, c in zip(self.cohort.tolist(), np.asarray(cells).tolist(), strict=True)}
        self._ready_s: dict[int, float] = {}  # client -> when its migrated state is at its new edge
        self._done: set[int] = set()  # clients whose update the server has kept (:meth:`keep`)
        watcher = self.env.process(stoppable(self._watch_handovers(sim.network)))
        self._processes.append(watcher)  # stopped at the round's end (not an algorithm's process: not recorded)

    def _watch_handovers(self, network: CellNetwork) -> SimSteps[None]:
        """At each handover of a cohort client, the policy's answer (:meth:`_handover`)."""
        env, sim = self.env, self._sim
        cohort = set(self.cohort.tolist())
        t_s = self.start_s
        while True:
            end_s = t_s + HANDOVER_CHUNK_S
            for event in network.handovers_between(t_s, end_s):
                if event.client not in cohort or event in sim.handled_handovers:
                    continue
                if event.time_s > env.now:
                    yield env.timeout(event.time_s - env.now)
                sim.handled_handovers.add(event)
                self._handover(event)
            if end_s > env.now:
                yield env.timeout(end_s - env.now)
            t_s = end_s

    def _handover(self, event: HandoverEvent) -> None:
        """One handover of cohort client ``event.client``, now (see "Edge servers and handovers")."""
        sim, k = self._sim, event.client
        edge, counters, now = sim.edge, sim.counters, self.now_s
        assert edge is not None
        if k in self.notes.dropped or self._offline_s.get(k, math.inf) <= now or k in self._done:
            return  # already out of the round, or its part of it is over (its update kept: :meth:`keep`)
        counters.add("handovers", 1)
        counters.add("handover_lost_s", event.interruption_s)
        if event.target_cell == NO_CELL or event.target_cell == self._home[k]:
            return  # no new cell (a failed link not re-established, or back on the same one): nothing moves
        migration_s = edge.backhaul_s(edge.state_bytes)
        action = edge.policy.decide(event, edge.state_bytes, migration_s)
        if action not in HANDOVER_ACTIONS:
            raise ValueError(f"server.edge.on_handover: {type(edge.policy).__name__}.decide returned {action!r}; "
                             f"allowed: {', '.join(HANDOVER_ACTIONS)}")
        if action == "drop":
            counters.add("handover_drops", 1)
            # counted now: a client that delivers nothing more may never reach a gather or keep
            counters.dropped_clients += 1
            self._handover_dropped.add(k)
            self.notes.note_dropped(k, "handover")
            self.notes.note_left(k, now)
            self._offline_s[k] = now  # its later transfers and steps find it gone
            return
        # the migration starts now, or after one already under way (our choice: one at a time per client)
        self._ready_s[k] = max(self._ready_s.get(k, now), now) + migration_s
        self._home[k] = event.target_cell
        counters.add("migrations", 1)
        counters.add("handover_lost_s", migration_s)
        counters.add("backhaul/migration", edge.state_bytes)

    def backhaul(self, client: int, payload: Mapping[str, int], *, to_cloud: bool) -> SimSteps[None]:
        """A payload of ``client``'s between its cell's edge and the cloud; ``yield from`` it.

        With an edge, server work on many clients' data at once runs on the cloud (``compute`` with
        ``client`` None: a concatenated step): what the client uploaded for it reaches the cloud
        from the edge of the client's cell (``to_cloud``) and the cloud's answer goes back to that
        edge (not ``to_cloud``) before it goes on the air.  The cell is the one holding the
        client's state (:meth:`edge_of`: its cell at the round's start, then each handover's target
        cell).  Each cell has one link each way (the cells' links in parallel; our choice): the
        payload takes it for ``8 N / backhaul_bps``, after the payloads before it, then arrives
        ``backhaul_latency_s`` later, so on an idle link ``8 N / backhaul_bps + backhaul_latency_s``
        (:meth:`EdgeServers.backhaul_s <sfl_sim.engine.edge.EdgeServers.backhaul_s>`).  Each kind's
        bytes count under ``backhaul/<kind>``.  Nothing for a client that has left the round, and
        nothing at all (no event) without an edge.

        Parameters
        ----------
        client : int
        payload : dict of kind -> bytes
            What crosses together, by kind (e.g. ``activations`` and ``labels``).
        to_cloud : bool
            Edge to cloud (True) or cloud to edge (False).
        """
        sim = self._sim
        edge = sim.edge
        nbytes = sum(int(n) for n in payload.values())
        if edge is None or nbytes <= 0 or self._offline_s.get(client, math.inf) <= self.now_s:
            return
        for what, n in payload.items():
            sim.counters.add(f"backhaul/{what}", int(n))
        with sim.backhaul_links[(self._home[client], to_cloud)].request() as link:
            yield link
            yield self.env.timeout(8.0 * nbytes / edge.backhaul_bps)
        yield self.env.timeout(edge.backhaul_latency_s)

    def move_between_edges(self, source_cell: int, target_cell: int, nbytes: int, what: str) -> SimSteps[None]:
        """``nbytes`` of server-side state from the edge of ``source_cell`` to that of
        ``target_cell`` over the backhaul; ``yield from`` it.

        It takes ``8 N / backhaul_bps + backhaul_latency_s``
        (:meth:`EdgeServers.backhaul_s <sfl_sim.engine.edge.EdgeServers.backhaul_s>`), charged on
        its own like a migration (not queued on the cells' cloud links), and counts ``nbytes`` under
        ``backhaul/<what>`` (e.g. the sequential server's one w_s following its clients:
        ``backhaul/server_model``).  Nothing at all (no event) without an edge or when the cells
        are the same."""
        edge = self._sim.edge
        if edge is None or source_cell == target_cell:
            return
        self._sim.counters.add(f"backhaul/{what}", int(nbytes))
        yield self.env.timeout(edge.backhaul_s(int(nbytes)))

    def edge_of(self, client: int) -> int:
        """The cell whose edge holds ``client``'s server-side state now (with an edge); 0 without
        an edge (the one server holds every client's)."""
        if self._sim.edge is None:
            return 0
        return self._home[client]

    def aggregate_over_backhaul(self) -> float:
        """The round's hierarchical aggregation (with an edge): each cell holding a kept client's
        state sends ``aggregate_bytes`` to the cloud and gets the global model back, the cells in
        parallel; counts the bytes and returns the time it takes (0 when no cell has a kept client
        or the algorithm aggregates nothing)."""
        edge = self._sim.edge
        assert edge is not None
        cells = {self._home[k] for k in self.cohort.tolist() if k not in self.notes.dropped}
        if not cells or edge.aggregate_bytes <= 0:
            return 0.0
        self._sim.counters.add("backhaul/aggregation", 2 * len(cells) * edge.aggregate_bytes)
        return 2.0 * edge.backhaul_s(edge.aggregate_bytes)  # up, then the global model down

    def _scheduled_band(self, sim: Simulator, grid: ResourceGrid) -> BandResource | CellBands:
        """The round's uplink band under the run's dynamic scheduler (:mod:`sfl_sim.engine.band`)."""
        assert sim.scheduler is not None

        def note(client: int, start_s: float, duration_s: float, tx_power_w: float) -> None:
            self.notes.note_busy(client, "uplink", start_s, duration_s, tx_power_w=tx_power_w)

        round_index = sim.round_index

        def block_rng(client: int, slot: int) -> np.random.Generator:
            # the slot form's draws (HARQ block errors): a stream of their own per (round, client,
            # slot), so they shift no shared stream and a run of another form sees the same channel
            return keyed_stream(sim.seed, "harq_slot", round_index, client, slot)

        def one(link_at: LinkAt) -> BandResource:
            return open_band(sim.env, scheduler, grid, link_at, self._uplink.fading_of, note, sim.harq, block_rng,
                             ladder=len(self.cohort), trace_slots=sim.slot_trace,
                             headroom=self._uplink.headroom_rbs, refresh_s=self._uplink.refresh_s())

        scheduler = sim.scheduler
        return self._per_cell(sim, self._uplink.link_at, one)

    def _downlink_scheduled(self, sim: Simulator, grid: ResourceGrid) -> BandResource | CellBands:
        """The round's unicast downlink band under the run's dynamic scheduler (no HARQ: the
        downlink has no block error model here)."""
        assert sim.scheduler is not None

        def note(client: int, start_s: float, duration_s: float, tx_power_w: float) -> None:
            self.notes.note_busy(client, "downlink", start_s, duration_s)

        def one(link_at: LinkAt) -> BandResource:
            return open_band(sim.env, scheduler, grid, link_at, self._downlink.fading_of, note,
                             ladder=len(self.cohort), refresh_s=self._downlink.refresh_s())

        scheduler = sim.scheduler
        return self._per_cell(sim, self._downlink.link_at, one)

    def _per_cell(self, sim: Simulator, link_at: LinkAt,
                  one: Callable[[LinkAt], BandResource]) -> BandResource | CellBands:
        """The band ``one`` opens on ``link_at``; on a network of more than one cell, one per cell
        (:class:`~sfl_sim.engine.band.cells.CellBands`: each transfer in its serving cell's band)."""
        network = sim.cell.radio.network
        if network is None or network.n_cells <= 1:
            return one(link_at)
        bands = CellBands(sim.env, network, link_at, one)
        self._processes.append(bands.watcher)  # stopped at the round's end with the round's processes
        return bands

    def _battery_empties_at(self, client: int, duration_s: float, tx_power_w: float) -> float | None:
        """The run's battery asked about an upload of ``client`` starting now (:class:`Battery`)."""
        assert self._sim.battery is not None  # asked only when the run has one
        return self._sim.battery.upload_guard(self, client, duration_s, tx_power_w)

    # -- the round's records (read by the energy ledger, the runner and the algorithms) ------------
    def uplink_load(self) -> float:
        """The fraction of the uplink's resource-block time with a transmission on it, from the
        round's start to now, in [0, 1].

        With a dynamic scheduler: the RBs it granted (:attr:`BandResource.load
        <sfl_sim.engine.band.base.BandResource.load>`).  With the static split: each uplink busy
        interval (attempts, HARQ copies, up to now) times its client's share of the band, over the
        band times the elapsed time; a share held while its client computes or waits carries nothing.
        The cell's neighbours follow it with ``interference: {name: first_tier, rb_load: own_cell}``.
        """
        if self._band is not None:
            return self._band.load
        now, bandwidth_hz = self._sim.now_s, self._sim.cell.uplink_bandwidth_hz
        elapsed_s = now - self.start_s
        if elapsed_s <= 0 or bandwidth_hz <= 0:
            return 0.0
        used_hz_s = sum(self._uplink.share_hz(k) * (min(b.end_s, now) - b.start_s)
                        for k, intervals in self.notes.busy.items() for b in intervals if b.kind == "uplink")
        return min(1.0, used_hz_s / (bandwidth_hz * elapsed_s))

    @property
    def busy(self) -> dict[int, list[Busy]]:
        """Client -> its busy intervals this round (:attr:`RoundNotes.busy`)."""
        return self.notes.busy

    @property
    def left_s(self) -> dict[int, float]:
        """Client -> when its part of the round ended (:attr:`RoundNotes.left_s`)."""
        return self.notes.left_s

    @property
    def dropped(self) -> dict[int, LossReason]:
        """Client -> why it left the round (:attr:`RoundNotes.dropped`; ``rounds.csv``'s ``dropped``)."""
        return self.notes.dropped

    def note_dropped(self, client: int, lost: Lost) -> None:
        """Record why ``client`` left the round (the first reason recorded stands)."""
        self.notes.note_dropped(client, lost.reason)

    # -- the clock and the links -------------------------------------------------------------------
    @property
    def env(self) -> simpy.Environment:
        return self._sim.env

    @property
    def now_s(self) -> float:
        return self._sim.now_s

    def allocate_uplink(self, payload_bits: Mapping[int, float] | None) -> None:
        """(Re)allocate the uplink band of the round among the cohort.

        Called with None at the start of the round; an algorithm calls it again with each
        client's main payload of the round (activations per iteration, or its model) so that
        payload-aware allocators (``proportional_payload``, ``equal_finish_time``) see it.

        Parameters
        ----------
        payload_bits : dict of client -> bits, or None
            Per cohort client; a client sharing the band outside the cohort is taken to send the
            largest of them.
        """
        if payload_bits is not None and len(self._sharing) > len(self.cohort):
            largest = max(payload_bits.values(), default=0.0)
            payload_bits = {k: payload_bits.get(k, largest) for k in self._sharing.tolist()}
        self._uplink.allocate(payload_bits)

    def uplink_share_hz(self, client: int) -> float:
        """Uplink bandwidth allocated to ``client`` in this round, Hz."""
        return self._uplink.share_hz(client)

    def uplink_grants(self, client: int) -> Grants | None:
        """What the round's dynamic scheduler granted ``client`` on the uplink
        (:meth:`BandResource.grants <sfl_sim.engine.band.base.BandResource.grants>`); None with the
        static split, or when it sent nothing through the band."""
        return None if self._band is None else self._band.grants(client)

    @property
    def uplink_scheduled(self) -> bool:
        """True when a dynamic scheduler hands out the round's uplink (a band of resource blocks)."""
        return self._band is not None

    @property
    def uplink_slot_trace(self) -> list[SlotGrant] | None:
        """The uplink band's grants slot by slot (slot form with ``metrics.slot_trace``); None otherwise."""
        return None if self._band is None else self._band.slot_trace

    def uplink_rate_bps(self, client: int) -> float:
        """Uplink rate of ``client`` now (after its latest fading draw), bit/s."""
        return self._uplink.rate_bps(client)

    def uplink_snr_db(self, client: int) -> float:
        """Uplink SNR of ``client`` now, dB."""
        return self._uplink.snr_db(client)

    def uplink_tx_power_w(self, client: int) -> float:
        """Uplink transmit power of ``client`` on its share in this round, W (the cell's power
        control: ``cell.client_tx_power_w`` with ``fixed``)."""
        return self._uplink.tx_power_w(client)

    def uplink_fading_gain(self, client: int) -> float:
        """The fading power gain ``client``'s uplink rate was last computed with (linear)."""
        return self._uplink.fading_gain(client)

    def downlink_rate_bps(self, client: int) -> float | None:
        """Unicast downlink rate of ``client`` in this round, bit/s; None with the ``ideal`` downlink."""
        return self._downlink.unicast_bps.get(client)

    # -- the primitives ----------------------------------------------------------------------------
    def compute(self, who: int, flops: float, what: str = "compute", *, client: int | None = None) -> SimSteps[None]:
        """Spend ``flops`` on client ``who`` (or :data:`SERVER`); use as ``yield from``.

        ``client``: with ``who`` :data:`SERVER`, the client whose server-side work this is; with an
        edge it runs on the edge holding that client's state, once a migration of it has arrived
        (see "Edge servers and handovers"); None, or without an edge: the one server."""
        sim = self._sim
        if who == SERVER:
            sim.counters.count_flops(True, flops, what)
            server, flops_per_s = sim.server, sim.server_flops_per_s
            if sim.edge is not None and client is not None:
                wait_s = self._ready_s.get(client, -math.inf) - self.now_s
                if wait_s > 0:  # its state is still on its way to the new edge
                    yield self.env.timeout(wait_s)
                server, flops_per_s = sim.edge_servers[self._home[client]], sim.edge.compute_flops_per_s
            with server.request() as slot:
                yield slot
                self.notes.note_server_busy(self.now_s, flops / flops_per_s)
                yield self.env.timeout(flops / flops_per_s)
        else:
            duration_s = flops / sim.client_flops_per_s[who]
            left_s = self._offline_s.get(who, math.inf) - self.now_s
            if left_s < duration_s:  # it leaves before the step ends: the part done, then nothing
                done = max(0.0, left_s)
                flops = float(round(flops * done / duration_s))  # whole FLOPs: the counters stay integral
                duration_s = done
            sim.counters.count_flops(False, flops, what)
            self.notes.note_busy(who, "compute", self.now_s, float(duration_s), flops=flops)
            yield self.env.timeout(duration_s)

    def upload(self, client: int, nbytes: int, what: str, block: Hashable = None) -> simpy.Process:
        """Client → server transfer of ``nbytes``: its link process; ``yield`` it.

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
        simpy.Process
            Its value is :data:`~sfl_sim.engine.outcome.DELIVERED`, or a
            :class:`~sfl_sim.engine.outcome.Lost`: ``outage`` (dropped after its last attempt),
            ``unavailable`` (the client went offline) or ``battery`` (its battery emptied).
        """
        proc = self._link.send(client, nbytes, what, block)
        self._processes.append(proc)  # stopped at the round's end like every process of the round
        return proc

    def download(self, client: int, nbytes: int, what: str) -> simpy.Event:
        """Server → client unicast of ``nbytes``; ``yield`` it.  Its value is ``DELIVERED``, or
        ``Lost("unavailable")`` at once for a client that has left (nothing is sent), or
        ``Lost("downlink_outage")`` at once for a client in downlink outage (it leaves the round)."""
        if self._offline_s.get(client, math.inf) <= self.now_s:
            return self.env.timeout(0.0, value=Lost("unavailable"))
        self._sim.counters.count_download(nbytes, what)
        self.notes.note_download(client, nbytes)
        if self._sim.downlink_mode == "ideal":
            return self.env.timeout(0.0, value=DELIVERED)
        if client in self._downlink.outage:
            return self.env.timeout(0.0, value=self._lost_downlink(client, what))
        if self._downlink_band is not None:
            return self._downlink_band.put(client, 8.0 * nbytes)
        duration_s = self._downlink.air_time_s(client, 8.0 * nbytes)  # bits / rate, or over a radio in time
        self.notes.note_busy(client, "downlink", self.now_s, duration_s)
        return self.env.timeout(duration_s, value=DELIVERED)

    def broadcast(self, nbytes: int, what: str) -> simpy.Event:
        """Server → whole cohort transfer of the same ``nbytes``; ``yield`` it (``unicast``: one copy
        per client).  Its value is ``DELIVERED``; a client in downlink outage leaves the round
        (``downlink_outage``) and the others receive at the rate of the slowest that can decode."""
        self._sim.counters.count_download(nbytes * len(self.cohort), what)
        for client in self.cohort.tolist():
            self.notes.note_download(client, nbytes)
        mode, downlink = self._sim.downlink_mode, self._downlink
        if mode == "ideal":
            return self.env.timeout(0.0, value=DELIVERED)
        now = self.now_s
        receivers = [k for k in self.cohort.tolist() if k not in downlink.outage]
        for client in self.cohort.tolist():
            if client in downlink.outage:
                self._lost_downlink(client, what)
        if not receivers:
            return self.env.timeout(0.0, value=DELIVERED)
        if mode == "unicast" and self._downlink_band is not None:
            band = self._downlink_band  # a client in downlink outage gets no copy through the band either
            delivered = self.env.event()
            copies = simpy.AllOf(self.env, [band.put(k, 8.0 * nbytes) for k in receivers])

            def all_delivered(_copies: simpy.Event) -> None:
                delivered.succeed(DELIVERED)

            copies.callbacks.append(all_delivered)
            return delivered
        if mode == "unicast":
            # One copy per client on its own share, sent at once: done when the slowest copy is.
            copy_s = {k: downlink.air_time_s(k, 8.0 * nbytes) for k in receivers}
            for client, duration_s in copy_s.items():
                self.notes.note_busy(client, "downlink", now, duration_s)
            return self.env.timeout(max(copy_s.values()), value=DELIVERED)
        duration_s = downlink.broadcast_time_s(receivers, 8.0 * nbytes)
        for client in receivers:
            self.notes.note_busy(client, "downlink", now, duration_s)
        return self.env.timeout(duration_s, value=DELIVERED)

    def _lost_downlink(self, client: int, what: str) -> Lost:
        """A payload for ``client``, in downlink outage after its last attempt, is dropped: the
        client leaves the round now (its later transfers find it gone), ``downlink_outage``."""
        lost = Lost("downlink_outage")
        if self._offline_s.get(client, math.inf) > self.now_s:
            self._sim.counters.count_dropped_transmission(what)
            self.notes.note_dropped_transmission(client)
            self.notes.note_dropped(client, lost.reason)
            self.notes.note_left(client, self.now_s)
            self._offline_s[client] = self.now_s
        return lost

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
        """
        pending = dict(arrivals)
        decision = yield from self._sim.stragglers.wait(self.env, pending, local_iterations)
        for client, reason in decision.dropped.items():
            self.notes.note_dropped(client, reason)
        self._sim.counters.dropped_clients += sum(1 for k in decision.dropped if k not in self._handover_dropped)
        if self._sim.edge is not None:
            kept = self._less_handed_over(decision.kept)
            # a client whose arrival was its process's end has nothing left to do in the round
            self._done.update(k for k in kept if _ended_process(arrivals[k]))
            return kept
        return decision.kept

    def _less_handed_over(self, clients: list[int]) -> list[int]:
        """``clients`` less those a handover's drop policy discarded the state of while their
        payload was still on its way or waiting (counted as dropped clients when dropped)."""
        return [k for k in clients if k not in self._handover_dropped]

    def keep(self, clients: Iterable[int]) -> list[int]:
        """The server's final word on ``clients``: their updates go into the round's aggregate.

        With an edge, a client that a handover's drop policy dropped before this (its state at the
        edge discarded while its payload was still on its way or waiting) is left out and counted
        as a dropped client; the others' part of the round is over: a later handover of one neither
        migrates nor drops it, nor counts (its update is kept: "Edge servers and handovers").
        :meth:`gather` calls it for the clients it keeps whose arrival was their process's end; an
        algorithm that decides its round's cohort otherwise (the concatenated server keeps whoever
        delivered) calls it with that cohort.  Without an edge: ``clients``, as they are.

        Returns
        -------
        list of int
            ``clients`` less those a handover dropped, in their order.
        """
        clients = list(clients)
        if self._sim.edge is None:
            return clients
        kept = self._less_handed_over([k for k in clients if k not in self._done])
        self._done.update(kept)
        return [k for k in clients if k in self._done]

    def start(self, round_process: Callable[[RoundContext], SimSteps[Any]]) -> simpy.Process:
        """Start the round's own process, ``round_process(self)`` (:meth:`Simulator.run_round`; a
        recording context, :mod:`sfl_sim.engine.record`, follows it from here)."""
        return self.env.process(round_process(self))

    def process(self, generator: SimSteps[Any]) -> simpy.Process:
        """Start a concurrent process (e.g. one per client).

        Processes still running when the round ends (a client dropped by the straggler policy
        and still computing or sending) are stopped then, so nothing of one round runs in the
        next; so are the link processes of the round's uploads (:meth:`upload`): an upload still
        retransmitting when the round ends counts what it sent until then and draws no more.
        """
        proc = self.env.process(stoppable(generator))
        self._processes.append(proc)
        return proc

    def stop_stragglers(self) -> None:
        """Stop this round's processes that are still running (called by the engine at round end)."""
        for band in (self._band, self._downlink_band):
            if band is not None:
                band.close()
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
        How the server waits for clients (:mod:`sfl_sim.engine.stragglers`).
    deadline_s : float, optional
        With ``deadline``: how long the server waits per local iteration, in simulated seconds.
    keep_clients : int, optional
        With ``over_selection``: how many of the (over-)selected clients are kept.
    harq : sfl_sim.channel.protocols.HarqModel, optional
        HARQ of uplink transport blocks (default: none, a payload takes ``bits / rate``).
    harq_rng : numpy.random.Generator, optional
        The ``harq`` stream, drawn from in HARQ's ``sampled`` mode (default: a fixed-seed stream).
    availability : sfl_sim.engine.client_state.Presence, optional
        Who is online when (a prepared :class:`sfl_sim.clients.availability.Availability`); a cohort
        client leaves the round at its next change (see "Clients leaving mid-round").  None: every
        client stays.
    battery : sfl_sim.engine.client_state.Battery, optional
        What the clients' batteries allow (see "Batteries").  None: no battery runs out.
    uplink_bps, downlink_bps : ndarray, shape (n_clients,), optional
        Traced link throughputs, bit/s, NaN where the channel's rate stands (see "Device traces").
    scheduler : sfl_sim.channel.protocols.Scheduler, optional
        The MAC scheduler (``cell.scheduler``); None or a static one (``dynamic`` false): each
        upload on its share of the round (see "MAC scheduling").
    numerology : int
        ``mu`` of the resource grid a dynamic scheduler hands out (``cell.numerology``).
    slot_trace : bool
        Keep the uplink's grants slot by slot (slot form; ``metrics.slot_trace``): only a record.
    seed : int
        The run's root seed: the slot form's keyed streams (``harq_slot``, by round, client and
        slot: :func:`sfl_sim.kit.seeding.keyed_stream`) derive from it.
    edge : sfl_sim.engine.edge.EdgeServers, optional
        Edge servers per cell, their backhaul and handover policy (see "Edge servers and
        handovers"); None: the one server.
    network : sfl_sim.engine.edge.CellNetwork, optional
        The cells and handovers the edge follows (default: the cell's radio, through
        :func:`~sfl_sim.engine.edge.cell_network`).

    Attributes
    ----------
    stragglers : sfl_sim.engine.stragglers.StragglerRule
        The straggler policy object built from ``straggler_policy``.
    last_round : RoundContext
        The latest round run (its notes are read after it: energy, ``rounds.csv``).
    """

    def __init__(self, cell: Cell, client_flops_per_s: np.ndarray, server_flops_per_s: float,
                 downlink_mode: DownlinkMode = "ideal", start_time_s: float = 0.0,
                 counters: Counters | None = None, fading_rng: np.random.Generator | None = None,
                 coherence: Coherence = "per_round", outage: OutagePolicy | None = None,
                 straggler_policy: StragglerPolicy = "wait_all", deadline_s: float | None = None,
                 keep_clients: int | None = None, harq: HarqModel | None = None,
                 harq_rng: np.random.Generator | None = None,
                 availability: Presence | None = None, battery: Battery | None = None,
                 uplink_bps: np.ndarray | None = None, downlink_bps: np.ndarray | None = None,
                 scheduler: Scheduler | None = None, numerology: int = 1, slot_trace: bool = False,
                 seed: int = 0, edge: EdgeServers | None = None, network: CellNetwork | None = None) -> None:
        check_choice("downlink_mode", downlink_mode, DownlinkMode)
        check_choice("coherence", coherence, Coherence)
        if outage is not None:
            check_choice("outage.on_outage", outage.on_outage, OnOutage)
        self.stragglers = straggler_rule(straggler_policy, deadline_s, keep_clients)
        self.fading_rng = fading_rng if fading_rng is not None else np.random.default_rng(0)
        self.coherence = coherence
        self.outage = outage
        self.harq = harq
        self.harq_rng = harq_rng if harq_rng is not None else np.random.default_rng(0)
        self.seed = int(seed)
        #: The index of the round running (or last run): :meth:`run_round`'s ``round_index``.
        self.round_index = -1
        self.cell = cell
        self.client_flops_per_s = np.asarray(client_flops_per_s, dtype=float)
        self.server_flops_per_s = float(server_flops_per_s)
        self.downlink_mode = downlink_mode
        self.env = simpy.Environment(initial_time=start_time_s)
        self.server = simpy.Resource(self.env, capacity=1)
        #: The edge servers and backhaul (``server.edge``); None: the one server.
        self.edge = edge
        #: The radio's cells (with an edge): the radio itself, or single-cell answers without a network.
        self.network = None if edge is None else (cell_network(cell.radio) if network is None else network)
        #: One server per cell (with an edge), each of capacity 1 like :attr:`server`.
        self.edge_servers = [] if self.network is None else \
            [simpy.Resource(self.env, capacity=1) for _ in range(int(self.network.n_cells))]
        #: Each cell's backhaul link to the cloud and from it (with an edge; :meth:`RoundContext.backhaul`),
        #: one payload at a time each.
        self.backhaul_links = {(cell, to_cloud): simpy.Resource(self.env, capacity=1)
                               for cell in range(len(self.edge_servers)) for to_cloud in (True, False)}
        #: The handovers a round's watcher has handled (a round's end may fall between two at one instant).
        self.handled_handovers: set[HandoverEvent] = set()
        self.counters = counters if counters is not None else Counters()
        self.availability = availability
        self.battery = battery
        self.traced_uplink_bps = _traced(uplink_bps)
        self.traced_downlink_bps = _traced(downlink_bps)
        dynamic = scheduling_form(scheduler) != "static"
        self.scheduler = scheduler if dynamic else None
        self.slot_trace = slot_trace
        #: The uplink's resource grid under a dynamic scheduler; None: the per-round shares.
        self.uplink_grid = ResourceGrid(numerology, cell.uplink_bandwidth_hz) if dynamic else None
        #: The unicast downlink's grid under a dynamic scheduler (``unicast`` mode); None: the per-round shares.
        self.downlink_grid = (ResourceGrid(numerology, cell.downlink_bandwidth_hz)
                              if dynamic and downlink_mode == "unicast" and cell.downlink_bandwidth_hz is not None
                              else None)

    @property
    def now_s(self) -> float:
        """Current simulated time in seconds."""
        return float(self.env.now)

    def clock(self) -> float:
        """Current simulated time in seconds (what the radio asks: :mod:`sfl_sim.engine.radio`)."""
        return float(self.env.now)

    def wait_until(self, t_s: float) -> float:
        """Advance the clock to ``t_s`` with nothing happening (nobody online); the seconds waited."""
        start = self.now_s
        if t_s > start:
            self.env.run(until=t_s)
        return self.now_s - start

    def run_round(self, round_process: Callable[[RoundContext], SimSteps[Any]],
                  cohort: Sequence[int] | np.ndarray,
                  context: Callable[[Simulator, np.ndarray], RoundContext] = RoundContext,
                  round_index: int | None = None) -> float:
        """Run one round to completion on the simulated clock.

        Parameters
        ----------
        round_process : callable
            ``round_process(ctx) -> generator``, the algorithm's round.
        cohort : sequence of int or numpy.ndarray
            Clients taking part in the round.
        context : callable, optional
            ``context(sim, cohort)``, the round's :class:`RoundContext` (default: the plain one;
            :class:`sfl_sim.engine.record.Recorder` gives one that records what the clock needed).
        round_index : int, optional
            The run's index of this round (the keys of the slot form's streams; a resumed run
            passes the round it resumes at); None: the one after the last round run here.

        Returns
        -------
        float
            Simulated duration of the round in seconds.
        """
        start = self.now_s
        self.round_index = self.round_index + 1 if round_index is None else int(round_index)
        ctx = context(self, np.asarray(cohort, dtype=np.int64))
        self.last_round = ctx
        self.env.run(until=ctx.start(round_process))
        ctx.stop_stragglers()
        if self.edge is not None:
            # only those the next round may be asked for again (at the instant this one ended)
            self.handled_handovers = {e for e in self.handled_handovers if e.time_s >= self.now_s}
            backhaul_s = ctx.aggregate_over_backhaul()
            if backhaul_s > 0:
                self.env.run(until=self.env.timeout(backhaul_s))
        gone = sum(1 for why in ctx.dropped.values() if why == "unavailable")
        if gone:  # by_kind only: the counters of runs without departures stay as they were
            self.counters.add("dropped_clients/unavailable", gone)
        return self.now_s - start


def _ended_process(event: simpy.Event) -> bool:
    """``event`` is a process that has returned (a client's whole part of the round)."""
    return isinstance(event, simpy.Process) and not event.is_alive


def _traced(rates_bps: np.ndarray | None) -> dict[int, float]:
    """client -> traced rate, for the finite entries of ``rates_bps`` (NaN: the channel's)."""
    if rates_bps is None:
        return {}
    rates = np.asarray(rates_bps, dtype=float)
    return {int(k): float(rates[k]) for k in np.flatnonzero(np.isfinite(rates))}
