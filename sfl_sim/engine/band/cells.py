"""One scheduled band per cell of a network: each client's transfer in its serving cell's band.

With a ``cell.network`` of more than one cell and a dynamic ``cell.scheduler``, each cell has its
own resource blocks: :class:`CellBands` holds one band per cell (each the form the scheduler asks
for, :func:`~sfl_sim.engine.band.open_band`, on the whole grid of the channel bandwidth) and
offers the engine the one band's interface (:meth:`put`, :meth:`serves`, :meth:`grants`,
:attr:`load`, :attr:`slot_trace`, :meth:`close`).

Which band
----------
A transfer goes to the band of the client's serving cell at the transfer's start (the network's
``attached_cell``: the target during a handover's interruption, cell 0 from a radio link failure
until the re-attachment) and finishes there (our choice: the buffer is not moved mid-transfer).
Its rates are the radio's at each re-reading: the coupling loss to the cell serving the client
then (:meth:`~sfl_sim.channel.network.state.NetworkRadio.losses`) and 0 while the client has no
link (:meth:`~sfl_sim.channel.network.state.NetworkRadio.connected`: a handover's interruption,
a radio link failure until the re-attachment), so a handover during a transfer pauses it.

The bands read a client's rates when its transfer starts and when its fading draw changes; a
handover changes neither, so a watcher walks the network's handovers as the round goes (in chunks
of :data:`CHUNK_S`) and at each change of a client's link (the event's instant; its end,
``time_s + interruption_s``, and then every measurement sample until the client is connected)
tells every band (:meth:`~sfl_sim.engine.band.base.BandResource.link_changed`): a band with a
transfer of that client reads its rates again (the fluid form takes a client without a link off
the air, its bits kept, and re-shares; the slot form's tables give it 0 RBs of need).  The uplink
interference of the other cells' transmissions is read when the rates are (a transfer's start, a
fading draw, a link change), as on the static path.

The policy
----------
One policy object for every cell: a scheduler is pure (the
:class:`~sfl_sim.channel.protocols.Scheduler` protocol), and what it remembers (proportional fair's
averages ``T_k``, round robin's turn) is kept by the band, so each cell's band has its own,
over the clients that cell serves.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import simpy

from sfl_sim.engine.band.base import BandResource, Grants, LinkAt, SlotGrant, Transfer
from sfl_sim.engine.steps import SimSteps, stoppable

__all__ = ["CHUNK_S", "CellBands", "CellRadio"]

#: How far ahead, in simulated seconds, the watcher asks the network for handovers at a time (our
#: choice, as the edge's watcher: the network evaluates them lazily).
CHUNK_S = 1.0


class CellRadio(Protocol):
    """What :class:`CellBands` asks of the network
    (:class:`~sfl_sim.channel.network.state.NetworkRadio` has it)."""

    n_cells: int
    measurement_step_s: float

    def attached_cell(self, client_ids: Any, t_s: Any) -> np.ndarray:
        """The serving cell of each client at ``t_s`` (the target during an interruption)."""

    def connected(self, client_ids: Any, t_s: Any) -> np.ndarray:
        """Whether each client has a link at ``t_s``."""

    def handovers_between(self, t0_s: float, t1_s: float) -> tuple[Any, ...]:
        """The handover events with ``t0_s <= time_s < t1_s``, in time order."""


class CellBands:
    """One band per cell of ``radio`` (see the module docstring).

    Parameters
    ----------
    env : simpy.Environment
    radio : CellRadio
        The network (``n_cells`` > 1).
    link_at : LinkAt
        The round's links (:meth:`Uplink.link_at <sfl_sim.engine.radio.Uplink.link_at>`): the
        serving cell's coupling loss at the clock's time.
    open_one : callable
        ``open_one(link_at) -> BandResource``: one cell's band on these links (called once per cell).
    """

    def __init__(self, env: simpy.Environment, radio: CellRadio, link_at: LinkAt,
                 open_one: Callable[[LinkAt], BandResource]) -> None:
        self._env, self._radio, self._link_at = env, radio, link_at
        self._raw = False  # serves(): the rates as if connected (a transfer waits for its link)
        self.bands = [open_one(self._linked_at) for _ in range(int(radio.n_cells))]
        self._cell_of: dict[int, int] = {}  # client -> the band of its latest transfer
        self._had: dict[int, list[int]] = {}  # client -> the bands it had transfers in, in order
        self._closed = False
        #: The watcher of the clients' link changes (the engine stops it at the round's end).
        self.watcher = env.process(stoppable(self._watch()))

    # -- the links the bands read ----------------------------------------------------------------
    def _linked_at(self, ids: np.ndarray, bandwidth_hz: np.ndarray,
                   fading: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The links of ``ids``, rate and power 0 where the client has no link now."""
        rate, snr_db, power = self._link_at(ids, bandwidth_hz, fading)
        if self._raw:
            return rate, snr_db, power
        on = self._radio.connected(ids, self._env.now)
        if on.all():
            return rate, snr_db, power
        return np.where(on, rate, 0.0), snr_db, np.where(on, power, 0.0)

    def _band_now(self, client: int) -> tuple[int, BandResource]:
        cell = int(self._radio.attached_cell(np.array([client]), self._env.now)[0])
        return cell, self.bands[cell]

    def _connected(self, client: int) -> bool:
        return bool(self._radio.connected(np.array([client]), self._env.now)[0])

    # -- the one band's interface ------------------------------------------------------------------
    def put(self, client: int, bits: float) -> Transfer:
        """Put ``bits`` of ``client`` into its serving cell's band (see the module docstring)."""
        cell, band = self._band_now(client)
        linked = self._connected(client)
        if band.unlinked(client) == linked:  # its link changed while it had no transfer here
            band.link_changed(client, linked)
        self._cell_of[client] = cell
        had = self._had.setdefault(client, [])
        if cell not in had:
            had.append(cell)
        return band.put(client, bits)

    def serves(self, client: int) -> bool:
        """:meth:`BandResource.serves <sfl_sim.engine.band.base.BandResource.serves>` on its serving
        cell's band, judged as if it had a link (a transfer that starts without one waits for it,
        it is not in outage, as on the static path)."""
        _, band = self._band_now(client)
        if self._connected(client):
            return band.serves(client)
        self._raw = True
        try:
            return band.serves(client)
        finally:
            self._raw = False
            band.link_changed(client, False)  # its tables were read as if connected: read them again

    @property
    def resends_blocks(self) -> bool:
        """As :attr:`BandResource.resends_blocks <sfl_sim.engine.band.base.BandResource.resends_blocks>`."""
        return self.bands[0].resends_blocks

    def failed_blocks(self, client: int) -> float:
        """The HARQ retransmissions of ``client``'s last transfer (in the band it went to)."""
        return self.bands[self._cell_of.get(client, 0)].failed_blocks(client)

    def gave_up(self, client: int) -> bool:
        """Whether HARQ gave up on a block of ``client``'s last transfer (in the band it went to)."""
        return self.bands[self._cell_of.get(client, 0)].gave_up(client)

    def grants(self, client: int) -> Grants | None:
        """What the bands granted ``client`` so far, summed over the cells it had transfers in;
        None when it had none."""
        parts = [g for g in (self.bands[c].grants(client) for c in self._had.get(client, [])) if g is not None]
        if not parts:
            return None
        blocks = [g.transport_blocks for g in parts]
        return Grants(sum(g.rb_s for g in parts), sum(g.in_band_s for g in parts), sum(g.granted_s for g in parts),
                      sum(g.bits for g in parts), None if None in blocks else sum(b or 0 for b in blocks),
                      sum(g.sinr_db_s for g in parts))

    @property
    def load(self) -> float:
        """The cells' mean load (:attr:`BandResource.load
        <sfl_sim.engine.band.base.BandResource.load>` of each, every cell counted)."""
        return float(np.mean([band.load for band in self.bands]))

    @property
    def slot_trace(self) -> list[SlotGrant] | None:
        """Every cell's grants slot by slot (slot form with ``trace_slots``), each with its
        ``cell``, in time order (the cells in order within a slot); None otherwise."""
        traces = [band.slot_trace for band in self.bands]
        if traces[0] is None:
            return None
        out = [SlotGrant(g.slot, g.start_s, g.client, g.rbs, g.block_bits, g.failed, cell)
               for cell, trace in enumerate(traces) for g in trace or []]
        out.sort(key=lambda g: (g.slot, g.cell))  # stable: a cell's grants of a slot keep their order
        return out

    def close(self) -> None:
        """The round is over: every band closes (:meth:`BandResource.close
        <sfl_sim.engine.band.base.BandResource.close>`)."""
        self._closed = True
        for band in self.bands:
            band.close()

    # -- the watcher -------------------------------------------------------------------------------
    def _watch(self) -> SimSteps[None]:
        """At each change of a client's link, every band reads that client's rates again."""
        env, radio = self._env, self._radio
        step_s = float(radio.measurement_step_s)
        due: list[tuple[float, int, bool]] = []  # (when, client, whether a return is awaited)
        t_s = env.now
        while not self._closed:
            end_s = t_s + CHUNK_S
            for event in radio.handovers_between(t_s, end_s):
                heapq.heappush(due, (float(event.time_s), int(event.client), False))
                heapq.heappush(due, (float(event.time_s) + float(event.interruption_s), int(event.client), True))
            while due and due[0][0] < end_s:
                when, client, returning = heapq.heappop(due)
                if when > env.now:
                    yield env.timeout(when - env.now)
                if self._closed:
                    return
                linked = self._connected(client)
                for band in self.bands:
                    band.link_changed(client, linked)
                if returning and not linked:  # a failed link re-attaches at a measurement sample
                    heapq.heappush(due, ((math.floor(env.now / step_s + 1e-9) + 1) * step_s, client, True))
            if end_s > env.now:
                yield env.timeout(end_s - env.now)
            t_s = end_s
