"""What both forms of the scheduled band share: the record, the rate tables and the resource's shape.

A band is a SimPy resource in :class:`simpy.resources.base.BaseResource`'s shape: a transfer is a
*put* of a client's bits (:meth:`BandResource.put`, a :class:`Transfer` event), and that event
fires (value :data:`~sfl_sim.engine.outcome.DELIVERED`) when the last bit is through;
:meth:`Transfer.cancel` withdraws a transfer whose client went offline.  Nothing is ever *got*
out of a band (the bits leave through the air).  The put queue holds a put only while
:meth:`BandResource._do_put` admits it: the buffers are unbounded, so a put is admitted at once and
waits in the form's own arrays, not in SimPy's queue (whose every new put re-scans the queue).

The record of what a band granted (:class:`Grants`, :class:`SlotGrant`) and the rate tables
(each client's rate, power and SINR on the RB counts it is likely to get, per fading draw) are
here; the forms (:mod:`~sfl_sim.engine.band.fluid`, :mod:`~sfl_sim.engine.band.slot`) are the
subclasses, picked by :func:`~sfl_sim.engine.band.open_band`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy
from simpy.resources.base import BaseResource, Get, Put

from sfl_sim.channel.link.scheduling import ResourceGrid, concave_rates, declares
from sfl_sim.channel.protocols import Scheduler
from sfl_sim.engine.outcome import DELIVERED

__all__ = ["BandResource", "FadingOf", "Grants", "HeadroomOf", "LinkAt", "NoteBusy", "SlotGrant", "Transfer"]

#: ``link_at(client_ids (k,), bandwidth_hz (k,), fading_gain (k,)) -> (rate_bps, snr_db, tx_power_w)``,
#: each shape (k,): the cell's link of these clients on these bandwidths.
LinkAt = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
#: ``note(client, start_s, duration_s, tx_power_w)``: a transfer's busy interval for the energy ledger.
NoteBusy = Callable[[int, float, float, float], None]
#: ``fading(client_ids (k,)) -> fading_gain (k,)``: the clients' fading now (the round's link's).
FadingOf = Callable[[np.ndarray], np.ndarray]
#: ``headroom(client_ids (k,)) -> RBs (k,) or None``: each client's power headroom in resource
#: blocks (its power control's ``headroom_rbs``), None where the power control sets no limit.
HeadroomOf = Callable[[np.ndarray], "np.ndarray | None"]


@dataclass(frozen=True)
class Grants:
    """What a band granted one client over its life (a round), for the record only.

    Attributes
    ----------
    rb_s : float
        Resource-block seconds granted (RBs times the time they were held).
    in_band_s : float
        The client's time in the band: its transfers' first bit to last, grant latency and waits
        for a grant included (the busy intervals the band noted).
    granted_s : float
        Seconds it held at least one RB.
    bits : float
        Bits it sent on its grants (failed HARQ blocks included: they were on the air).
    transport_blocks : int or None
        Transport blocks it was granted (slot form); None in the fluid form (no blocks).
    sinr_db_s : float
        The SINR of its grants in dB, integrated over ``granted_s`` (a mean of dB values, weighted
        by time: divide by ``granted_s``).
    """

    rb_s: float
    in_band_s: float
    granted_s: float
    bits: float
    transport_blocks: int | None
    sinr_db_s: float


@dataclass(frozen=True)
class SlotGrant:
    """One grant of one slot (slot form, ``metrics.slot_trace``): the slot's index on the grid and
    start, the client, its RBs, the transport block's bits, whether the block failed (HARQ) and
    the cell whose band granted it (0 with one cell; :mod:`~sfl_sim.engine.band.cells`)."""

    slot: int
    start_s: float
    client: int
    rbs: int
    block_bits: float
    failed: bool
    cell: int = 0


class Transfer(Put):
    """A put of ``bits`` of ``client`` into a band: fires (``DELIVERED``) when the last bit is
    through; :meth:`cancel` stops serving it (the client went offline: the event never fires)."""

    def __init__(self, band: BandResource, client: int, bits: float) -> None:
        self.client, self.bits = int(client), float(bits)
        super().__init__(band)

    def cancel(self) -> None:
        """Withdraw the transfer (its busy interval ends now); a no-op once it fired."""
        if not self.triggered:
            band: BandResource = self.resource
            band.withdraw(self.client)


class BandResource(BaseResource[Transfer, Get]):
    """The resource blocks of one direction in one round, shared by ``policy`` (the forms'
    base: what the link process asks, the record, the rate tables).

    Parameters
    ----------
    env : simpy.Environment
    policy : Scheduler
        A dynamic scheduler.
    grid : ResourceGrid
    link_at : LinkAt
    fading : FadingOf
    note_busy : NoteBusy
    latency_s : float
        The grant latency a new transfer waits (:func:`~sfl_sim.engine.band.open_band` reads it
        off the policy).
    steps : numpy.ndarray
        The RB counts tabled per client and fading draw.
    headroom : HeadroomOf or None
        Each client's power headroom in RBs, given to a policy method that declares ``headroom_rb``
        (None: no limit).  A policy method that declares ``rates_bps`` is given each client's
        rates on ``1 .. n_rb`` RBs, made concave
        (:func:`~sfl_sim.channel.link.scheduling.concave_rates`), tabled once per fading draw.
    """

    def __init__(self, env: simpy.Environment, policy: Scheduler, grid: ResourceGrid, link_at: LinkAt,
                 fading: FadingOf, note_busy: NoteBusy, latency_s: float, steps: np.ndarray,
                 headroom: HeadroomOf | None = None) -> None:
        super().__init__(env, capacity=float("inf"))
        self._policy, self._grid = policy, grid
        self._link_at, self._fading, self._note_busy = link_at, fading, note_busy
        self._latency_s = float(latency_s)
        self._n_rb = grid.n_rb
        self._steps = np.asarray(steps, dtype=float)
        self._step_order = np.argsort(self._steps, kind="stable")
        self._sorted_steps = self._steps[self._step_order]
        # the column of the whole grid (n_rb RBs) in the tables, as _links finds it; -1: not tabled
        self._full_col = -1
        if self._steps.size:
            at = min(int(np.searchsorted(self._sorted_steps, self._n_rb)), self._steps.size - 1)
            full = int(self._step_order[at])
            self._full_col = full if self._steps[full] == self._n_rb else -1
        self._row: dict[int, int] = {}  # client -> its row of the tables (and of the form's arrays)
        self._client: list[int] = []  # row -> client
        self._rows = 0  # rows allocated
        # per RB count (the steps) and row: [rate (bit/s), power (W)], and 1 / rate (inf where the
        # rate is 0); a step's block is contiguous, as the fluid re-share reads it
        self._tab = np.zeros((self._steps.size, 2, 0))
        self._tab_inv = np.zeros((self._steps.size, 0))
        self._tab_fading = np.full(0, np.nan)  # the fading draw each row was tabled at
        self._tab_snr = np.zeros((self._steps.size, 0))  # per RB count and row: the SINR (dB), for the record
        # the policy's optional inputs (the Scheduler protocol), passed to the methods that declare them
        self._headroom_of = headroom
        self._grant_kw = [n for n in ("rates_bps", "headroom_rb") if declares(policy.grant_rbs, n)]
        self._fluid_kw = [n for n in ("rates_bps", "headroom_rb") if declares(policy.fluid_rbs, n)]
        self._hull = np.zeros((0, self._n_rb))  # per row: its concave rates on 1 .. n_rb RBs
        self._hull_fading = np.zeros(0)  # the fading draw each row's hull is of (NaN: none)
        self._hull_gen = np.zeros(0, dtype=np.int64)  # per row: how often its hull was taken (derived data follows it)
        self._caps = np.zeros(0, dtype=np.int64)  # per row: its headroom in RBs (-1: not asked yet)
        self._in_band_s: dict[int, float] = {}  # per client: the seconds its finished transfers spent in the band
        self._start_s: dict[int, float] = {}
        self._done: dict[int, Transfer] = {}
        self._failed_blocks: dict[int, float] = {}
        self._gave_up: set[int] = set()
        self._unlinked: set[int] = set()  # clients without a link now (a network: link_changed)
        self._opened_s = env.now
        self._used_rb_s = 0.0  # RB-seconds granted so far (the round's load)
        self._closed = False

    # -- what the link process asks ----------------------------------------------------------------
    def put(self, client: int, bits: float) -> Transfer:  # type: ignore[override]
        """Put ``bits`` of ``client`` into the band; the event fires (``DELIVERED``) when the last
        bit is through.  One transfer per client at a time."""
        return Transfer(self, client, bits)

    @property
    def resends_blocks(self) -> bool:
        """True where the band resends failed transport blocks itself (slot form with HARQ)."""
        return False

    @property
    def slot_trace(self) -> list[SlotGrant] | None:
        """Every grant of every slot, in order (slot form with ``trace_slots``; None otherwise)."""
        return None

    @property
    def load(self) -> float:
        """Resource blocks granted over the band's life so far, as a fraction of all its RB-time
        (``n_rb`` times the time since it opened), in [0, 1]: the cell's uplink load for the
        neighbours' interference (:class:`~sfl_sim.channel.link.interference.FirstTierInterference`,
        ``rb_load: own_cell``).  Fluid: every RB while anyone has data (the shares are
        work-conserving) or what the policy granted; slot: the grants of each slot that is over
        (a slot the round's end cuts is not counted)."""
        elapsed_s = self._env.now - self._opened_s
        return min(1.0, self._rb_s_so_far() / (self._n_rb * elapsed_s)) if elapsed_s > 0 else 0.0

    def serves(self, client: int) -> bool:
        """False when ``client`` has no usable rate on the whole band (all ``n_rb`` RBs, what a
        client alone with data is granted) at its fading now: below the lowest MCS, so the band
        could never carry its bits.  Such a transfer is in outage (the link process asks before
        :meth:`put`; the outage policy decides what follows).  A rate that is positive on the
        whole band is positive on fewer RBs (the power per RB only grows as the grant shrinks), so
        every transfer the band takes ends."""
        ids = np.array([client], dtype=np.int64)
        fading = self._fading(ids)
        row = self._row.get(client)
        if row is not None and self._full_col >= 0 and self._tab_fading[row] == fading[0]:
            # tabled at this fading: the number _links reads off the table, without its array work
            return bool(self._tab[self._full_col, 0, row] > 0.0)
        rate, _ = self._links(ids, np.array([float(self._n_rb)]), fading)
        return bool(rate[0] > 0.0)

    def failed_blocks(self, client: int) -> float:
        """The HARQ retransmissions of ``client``'s last transfer (slot form with HARQ; 0
        otherwise; a real number in HARQ's ``expected`` mode, as on the static path), read once
        the transfer is over and reset by the next :meth:`put`."""
        return self._failed_blocks.get(client, 0)

    def gave_up(self, client: int) -> bool:
        """Whether HARQ gave up on a transport block of ``client``'s last transfer (slot form): its
        payload did not arrive, although its last bit went (an outage for the outage policy)."""
        return client in self._gave_up

    def grants(self, client: int) -> Grants | None:
        """What the band granted ``client`` so far (its transfers in the band, a still running
        one up to now); None when it never had a transfer here.  Only a record: reading it
        changes nothing."""
        if client not in self._in_band_s and client not in self._start_s:
            return None
        now = self._env.now
        in_band_s = self._in_band_s.get(client, 0.0) + (now - self._start_s[client] if client in self._start_s else 0.0)
        return self._granted(client, in_band_s)

    def unlinked(self, client: int) -> bool:
        """Whether the band was last told that ``client`` has no link (:meth:`link_changed`)."""
        return client in self._unlinked

    def link_changed(self, client: int, linked: bool) -> None:
        """``client``'s link changed (a network: a handover, its link lost or back; ``linked``:
        whether it has one now): its rates are read again from the links now (its tables are
        forgotten), and a transfer of it in the band follows (the forms' :meth:`_relinked`)."""
        if linked:
            self._unlinked.discard(client)
        else:
            self._unlinked.add(client)
        row = self._row.get(client)
        if row is None:
            return
        self._tab_fading[row] = np.nan
        self._hull_fading[row] = np.nan
        self._relinked(client, row)

    def withdraw(self, client: int) -> None:
        """Stop serving ``client`` (it went offline): its busy interval ends now, its event never fires."""
        if client not in self._done:
            return
        self._drop(client)
        self._close_transfer(client)
        self._done.pop(client)
        self._changed()

    def close(self) -> None:
        """The round is over: nothing more is served; a transfer still on the air gets its busy
        interval up to now (its event never fires)."""
        if self._closed:
            return
        self._stop()
        for client in list(self._done):
            self._close_transfer(client)
        self._done.clear()
        self._closed = True

    # -- SimPy's resource shape --------------------------------------------------------------------
    def _do_put(self, event: Transfer) -> bool:
        """Admit a transfer: its bits wait the grant latency, then join the buffers (the event
        waits in the form's arrays, not in the put queue: see the module docstring)."""
        client, bits = event.client, event.bits
        if client in self._done:
            self.put_queue.remove(event)
            raise RuntimeError(f"client {client} has a transfer in the band already; one at a time per client "
                               f"and direction")
        self._done[client] = event
        self._failed_blocks.pop(client, None)
        self._gave_up.discard(client)
        self._start_s[client] = self._env.now
        self._opened(client)
        if bits <= 0:
            self._finish(client)  # fired now: the base class takes it off the queue
            return True
        self.put_queue.remove(event)
        if self._latency_s > 0:
            self._env.timeout(self._latency_s).callbacks.append(lambda _e: self._arrive(client, bits))
        else:
            self._arrive(client, bits)
        return True

    def _do_get(self, event: Get) -> bool:
        raise TypeError("a band is only put into: its bits leave through the air")

    # -- what the forms implement ------------------------------------------------------------------
    def _rb_s_so_far(self) -> float:
        """RB-seconds granted so far (for :attr:`load`), read without changing anything."""
        return self._used_rb_s

    def _granted(self, client: int, in_band_s: float) -> Grants:
        raise NotImplementedError

    def _opened(self, client: int) -> None:
        """A transfer of ``client`` starts (before its grant latency)."""

    def _arrive(self, client: int, bits: float) -> None:
        raise NotImplementedError

    def _drop(self, client: int) -> None:
        """Forget ``client``'s buffer (it was withdrawn)."""

    def _changed(self) -> None:
        """The clients with data changed (a withdrawal)."""

    def _relinked(self, client: int, row: int) -> None:
        """``client``'s link changed and its tables were forgotten (:meth:`link_changed`)."""

    def _stop(self) -> None:
        """The round is over: stop serving (before the open transfers are closed)."""

    def _energy_j(self, client: int) -> float:
        """The energy ``client``'s transfer sent with so far; forgets the transfer."""
        raise NotImplementedError

    # -- both forms --------------------------------------------------------------------------------
    def _close_transfer(self, client: int) -> None:
        start = self._start_s.pop(client)
        duration = self._env.now - start
        self._in_band_s[client] = self._in_band_s.get(client, 0.0) + duration
        energy = self._energy_j(client)
        self._note_busy(client, start, duration, energy / duration if duration > 0 else 0.0)

    def _finish(self, client: int) -> None:
        self._drop(client)
        self._close_transfer(client)
        self._done.pop(client).succeed(DELIVERED)

    def _row_of(self, client: int) -> int:
        row = self._row.get(client)
        if row is None:
            row = self._row[client] = len(self._client)
            self._client.append(client)
            if row >= self._rows:
                self._grow(max(2 * row, 1))
        return row

    def _grow(self, rows: int) -> None:
        """Room for ``rows`` clients in the tables and the form's arrays (new rows empty)."""
        extra = rows - self._rows
        if extra <= 0:
            return
        steps = self._steps.size
        self._tab = np.concatenate((self._tab, np.zeros((steps, 2, extra))), axis=2)
        self._tab_inv = np.concatenate((self._tab_inv, np.full((steps, extra), np.inf)), axis=1)
        self._tab_fading = np.concatenate((self._tab_fading, np.full(extra, np.nan)))
        self._tab_snr = np.concatenate((self._tab_snr, np.zeros((steps, extra))), axis=1)
        self._hull = np.concatenate((self._hull, np.zeros((extra, self._n_rb))))
        self._hull_fading = np.concatenate((self._hull_fading, np.full(extra, np.nan)))
        self._hull_gen = np.concatenate((self._hull_gen, np.zeros(extra, dtype=np.int64)))
        self._caps = np.concatenate((self._caps, np.full(extra, -1, dtype=np.int64)))
        self._grow_rows(extra)
        self._rows = rows

    def _grow_rows(self, extra: int) -> None:
        """The form's per-row arrays, ``extra`` rows longer."""

    def _table(self, ids: np.ndarray, rows: np.ndarray, fading: np.ndarray) -> None:
        """Table the rates and powers of the clients whose fading draw is new, in one call."""
        stale = np.flatnonzero(self._tab_fading[rows] != fading)  # NaN: never tabled
        if stale.size:
            steps = self._steps
            rate, snr_db, power = self._link_at(np.repeat(ids[stale], steps.size),
                                                np.tile(steps, stale.size) * self._grid.hz_per_rb,
                                                np.repeat(fading[stale], steps.size))
            rate = np.asarray(rate, dtype=float).reshape(stale.size, steps.size).T
            self._tab[:, 0, rows[stale]] = rate
            self._tab[:, 1, rows[stale]] = np.asarray(power, dtype=float).reshape(stale.size, steps.size).T
            with np.errstate(divide="ignore"):
                self._tab_inv[:, rows[stale]] = 1.0 / rate
            self._tab_fading[rows[stale]] = fading[stale]
            self._tab_snr[:, rows[stale]] = np.asarray(snr_db, dtype=float).reshape(stale.size, steps.size).T
            self._tabled(rows[stale])

    def _tabled(self, rows: np.ndarray) -> None:
        """The rows whose tables were just filled (for what a form derives from them)."""

    def _links(self, ids: np.ndarray, rbs: np.ndarray, fading: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rate (bit/s) and power (W) of each client on ``rbs`` resource blocks with ``fading``.

        The cell's link of a client depends only on its fading and its bandwidth, so each client
        keeps a table per fading draw of the RB counts it is likely to get (the form's steps),
        filled in one call for every client whose draw is new; an RB count outside the table is
        asked for directly.  The numbers are the cell's, bit for bit; the table only saves calls.
        """
        rows = np.fromiter((self._row_of(k) for k in ids.tolist()), dtype=np.int64, count=ids.size)
        self._table(ids, rows, fading)
        # the column of each RB count in the table, where it is one of the steps
        at = np.minimum(np.searchsorted(self._sorted_steps, rbs), self._steps.size - 1)
        col = self._step_order[at]
        hit = self._steps[col] == rbs
        rates = np.where(hit, self._tab[col, 0, rows], 0.0)
        powers = np.where(hit, self._tab[col, 1, rows], 0.0)
        missing = np.flatnonzero(~hit & (rbs > 0))
        if missing.size:
            rate, snr_db, power = self._link_at(ids[missing], rbs[missing] * self._grid.hz_per_rb, fading[missing])
            rates[missing], powers[missing] = rate, power
            self._remember(ids[missing], rbs[missing], fading[missing], snr_db)
        return rates, powers

    def _remember(self, ids: np.ndarray, rbs: np.ndarray, fading: np.ndarray, snr_db: np.ndarray) -> None:
        """An untabled link call's SINRs (the fluid form keeps the last ones for its record)."""

    # -- the policy's optional inputs (rates on 1 .. n_rb RBs, power headroom) ----------------------
    def _policy_inputs(self, names: list[str], ids: np.ndarray, rows: np.ndarray,
                       fading: np.ndarray) -> dict[str, np.ndarray]:
        """The optional inputs a policy method declares (``names``), for these clients."""
        out: dict[str, np.ndarray] = {}
        if "headroom_rb" in names:
            caps = self._headroom(ids, rows)
            if caps is not None:
                out["headroom_rb"] = caps
        if "rates_bps" in names:
            out["rates_bps"] = self._concave_rates(ids, rows, fading)
        return out

    def _every_count(self, ids: np.ndarray, rows: np.ndarray, fading: np.ndarray) -> np.ndarray:
        """The clients' rates on ``1 .. n_rb`` RBs at ``fading``, shape (k, n_rb): one link call
        (the slot form has them tabled)."""
        counts = np.arange(1, self._n_rb + 1, dtype=float)
        rate, _, _ = self._link_at(np.repeat(ids, counts.size), np.tile(counts, ids.size) * self._grid.hz_per_rb,
                                   np.repeat(fading, counts.size))
        return np.asarray(rate, dtype=float).reshape(ids.size, counts.size)

    def _concave_rates(self, ids: np.ndarray, rows: np.ndarray, fading: np.ndarray) -> np.ndarray:
        """Each client's rates on ``1 .. n_rb`` RBs at ``fading``, made concave, shape (k, n_rb),
        the hull taken once per fading draw."""
        stale = np.flatnonzero(self._hull_fading[rows] != fading)  # NaN: never
        if stale.size:
            self._hull[rows[stale]] = concave_rates(self._every_count(ids[stale], rows[stale], fading[stale]))
            self._hull_gen[rows[stale]] += 1
            self._hull_fading[rows[stale]] = fading[stale]
        return self._hull[rows]

    def _headroom(self, ids: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """Each client's power headroom in RBs, in ``[1, n_rb]`` (asked once per client and band),
        or None when the power control sets no limit."""
        if self._headroom_of is None:
            return None
        new = np.flatnonzero(self._caps[rows] < 0)
        if new.size:
            caps = self._headroom_of(ids[new])
            if caps is None:
                self._headroom_of = None
                return None
            self._caps[rows[new]] = np.clip(np.asarray(caps, dtype=np.int64), 1, self._n_rb)
        return self._caps[rows]
