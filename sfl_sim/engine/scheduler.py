"""The scheduled band: one direction's resource blocks in one round, handed out by a scheduler.

With a dynamic ``cell.scheduler`` (:mod:`sfl_sim.channel.link.scheduling`), the link process
(:mod:`sfl_sim.engine.link`) does not wait ``bits / rate`` on a share fixed for the round: it puts
its bits into the band's buffer for the client (:meth:`Band.carry`) and waits for the event that
fires when the last bit is through.  The band owns the ``n_rb`` resource blocks of the grid and
the clients' buffers, asks the policy for RBs, and gets each client's rate on its RBs from the
cell (``link_at``: the rate model with the client's power control on the granted bandwidth
``m B / N_RB`` — the channel's bandwidth per RB, :attr:`ResourceGrid.hz_per_rb`, so open-loop
power control counts ``m`` RBs — and its fading now).

Two fidelities (the policy's ``fidelity``, a member of the
:class:`~sfl_sim.channel.protocols.Scheduler` protocol):

``fluid``
    Processor sharing: the shares change only when a transfer starts or ends.  At each change the
    band takes the bits sent since the last one off each buffer, asks
    :meth:`~sfl_sim.channel.protocols.Scheduler.fluid_rbs`, and schedules one wake-up at the next
    finish time ``min_k left_k / r_k``; the transfers finishing then (ties within 1e-12 relative)
    end there exactly, so finish times are the piecewise sums of a hand calculation.  The changes
    of one instant (a cohort starting its uploads together, a finish and the next upload) are
    re-shared once, after the instant's other events; the buffers, rates and powers are arrays
    with a row per client, and each client's rates on ``n_rb / n`` RBs (``n = 1 ..`` the cohort
    size) are tabled once per fading draw, so a change costs a few array operations.
``slot``
    A decision every slot ``1 ms / 2^mu`` on the slot grid ``t = j * slot_s`` (a transfer that
    starts at a slot's start is in its decision, one that starts later waits for the next slot's):
    each client's need
    (the RBs that would empty its buffer), :meth:`~sfl_sim.channel.protocols.Scheduler.grant_rbs`,
    a transport block of ``r(m) * slot_s`` bits per grant.  With a HARQ model a block's fate is the
    static path's model, asked the same way: :meth:`~sfl_sim.channel.protocols.HarqModel.send` of
    the block's new bits at its rate and SINR (up to ``max_transmissions`` copies, chase
    combining's SINR gain per copy, the block given up after the last; ``mode`` as set), its one
    draw from a stream of its own keyed by the round, the client and the slot (so the slot form
    shifts no shared stream).  The block's copies (``retransmissions`` of it) come back to the
    buffer in its HARQ round trips (``ceil(retransmissions / blocks)`` of them, the waiting
    ``send`` times, ``time_s`` less the copies' air time, split evenly), each round one rtt after
    the previous copy went, and a grant sends copies before new bits (our reading: NR serves a
    pending retransmission first).  A block given up fails the transfer once its last bit is
    through (:meth:`Band.gave_up`), an outage as on the static path.  A transfer ends at the end of
    the slot that empties its buffer.

Both forms see the fading of the round's link (:class:`~sfl_sim.engine.radio.Uplink`: one draw per
coherence block of ``cell.coherence``, the draw the static split sees), never a draw of their own:
the fading's time scale is the channel's, not the fidelity's.  (An i.i.d. draw every slot, the
former ``fading_per_slot``, is a Doppler no client has: 250 km/h at 3.5 GHz for 0.5 ms slots.)

What the band granted each client (:meth:`Band.grants`: RB-seconds, seconds with a grant, bits
sent, transport blocks, the SINR of the grants) is only recorded: ``clients.csv``'s grant columns
and, with ``metrics.slot_trace``, one row per slot form grant (:attr:`Band.slot_trace`).

A new transfer waits the grant latency (scheduling request + buffer status report + K2 slots)
before it can be granted.  The energy ledger gets one busy interval per transfer, from its start
to its end, at the mean power it sent with (energy over duration), so the energy is exact.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

from sfl_sim.channel.link.scheduling import ResourceGrid, concave_rates, declares, needed_rbs_table
from sfl_sim.channel.protocols import HarqModel, Scheduler
from sfl_sim.engine.outcome import DELIVERED
from sfl_sim.engine.steps import SimSteps

__all__ = ["Band", "Grants", "LinkAt", "NoteBusy", "SlotGrant"]

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

# Finish times within this relative distance of the earliest end together (fluid).
_TIE_RTOL = 1e-12
# SimPy's priority of the fluid re-share: after every ordinary event of the same instant.
_LATE = simpy.events.EventPriority(simpy.events.NORMAL + 1)


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
    start, the client, its RBs, the transport block's bits and whether the block failed (HARQ)."""

    slot: int
    start_s: float
    client: int
    rbs: int
    block_bits: float
    failed: bool


class _AfterTheInstant(simpy.Event):
    """An event processed after every other event of the current simulated instant (an ordinary
    event has priority NORMAL; this one, already triggered, is scheduled at ``_LATE``), so that
    the fluid band re-shares once for all the changes of an instant."""

    def __init__(self, env: simpy.Environment, callback: Callable[[simpy.Event], None]) -> None:
        super().__init__(env)
        self._ok, self._value = True, None  # triggered as SimPy's own Timeout is, then scheduled
        self.callbacks.append(callback)
        env.schedule(self, _LATE)


class Band:
    """The resource blocks of one direction in one round, shared by ``policy``.

    Parameters
    ----------
    env : simpy.Environment
    policy : Scheduler
        A dynamic scheduler (its ``fidelity``, ``grant_latency_slots()`` and ``fluid_equal_shares``
        are read here).
    grid : ResourceGrid
    link_at : LinkAt
    fading : FadingOf
    note_busy : NoteBusy
    harq : HarqModel or None
        Slot fidelity: each transport block's fate is its ``send`` (see the module docstring).
    block_rng : callable or None
        ``block_rng(client, slot) -> numpy.random.Generator``: the stream of a client's draws in a
        slot (slot fidelity with HARQ), keyed by the round, the client and the slot, never the run's
        shared streams.
    ladder : int
        Fluid: the RB counts ``n_rb / n``, ``n = 1 .. ladder``, tabled per fading draw (the cohort size).
    trace_slots : bool
        Slot form: keep every grant of every slot in :attr:`slot_trace` (``metrics.slot_trace``).
    headroom : HeadroomOf or None
        Each client's power headroom in RBs, given to a policy method that declares ``headroom_rb``
        (None: no limit).  A policy method that declares ``rates_bps`` is given each client's
        rates on ``1 .. n_rb`` RBs, made concave (:func:`~sfl_sim.channel.link.scheduling.concave_rates`),
        tabled once per fading draw.
    """

    def __init__(self, env: simpy.Environment, policy: Scheduler, grid: ResourceGrid, link_at: LinkAt,
                 fading: FadingOf, note_busy: NoteBusy, harq: HarqModel | None = None,
                 block_rng: Callable[[int, int], np.random.Generator] | None = None, ladder: int = 1,
                 trace_slots: bool = False, headroom: HeadroomOf | None = None) -> None:
        self._env, self._policy, self._grid = env, policy, grid
        self._link_at, self._fading, self._note_busy = link_at, fading, note_busy
        self._harq, self._block_rng = harq, block_rng
        # what the band reads of the policy is the Scheduler protocol's, checked when the run is built
        self._slot = policy.fidelity == "slot"
        self._latency_s = policy.grant_latency_slots() * grid.slot_s
        self._n_rb = grid.n_rb
        # the RB counts tabled per client and fading draw (see _links)
        self._steps = (np.arange(1, self._n_rb + 1, dtype=float) if self._slot
                       else self._n_rb / np.arange(1, max(int(ladder), 1) + 1, dtype=float))
        self._step_order = np.argsort(self._steps, kind="stable")
        self._sorted_steps = self._steps[self._step_order]
        self._row: dict[int, int] = {}  # client -> its row of the tables (and of the fluid arrays)
        self._client: list[int] = []  # row -> client
        # per RB count (the steps) and row: [rate (bit/s), power (W)], and 1 / rate (inf where the
        # rate is 0); a step's block is contiguous, as the fluid re-share reads it
        self._tab = np.zeros((self._steps.size, 2, 0))
        self._tab_inv = np.zeros((self._steps.size, 0))
        self._tab_fading = np.full(0, np.nan)  # the fading draw each row was tabled at
        self._tab_snr = np.zeros((self._steps.size, 0))  # per RB count and row: the SINR (dB), for the record
        # the record of the grants (Band.grants), never read by the scheduling: fluid, per row,
        # [RB-s, granted s, bits, SINR dB x s] and their rates of change; slot, per client, the same
        # and the transport blocks; per client, the seconds its finished transfers spent in the band
        self._f_book = np.zeros((4, 0))
        self._f_book_speed = np.zeros((4, 0))
        self._s_book: dict[int, list[float]] = {}
        self._in_band_s: dict[int, float] = {}
        self._seen: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # recent untabled links
        #: Slot form with ``trace_slots``: every grant of every slot, in order (None otherwise).
        self.slot_trace: list[SlotGrant] | None = [] if trace_slots and self._slot else None
        # fluid, per row: [bits left (inf off the air), energy so far (J)], their rates of change
        # [-rate, power] (0 off the air), and [-1, 1] on the air ([0, 0] off it)
        self._f_state = np.zeros((2, 0))
        self._f_speed = np.zeros((2, 0))
        self._f_on = np.zeros((2, 0))
        self._f_scratch = np.zeros((2, 0))
        self._f_finish = np.zeros(0)
        self._n_on = 0
        # a policy whose fluid split is always n_rb / n: its rates are a column of the tables
        self._equal_shares = bool(policy.fluid_equal_shares)
        self._fresh: list[int] = []  # clients on the air since the last re-share (their fading to table)
        # the policy's optional inputs (the Scheduler protocol), passed to the methods that declare them
        self._headroom_of = headroom
        self._grant_kw = [n for n in ("rates_bps", "headroom_rb") if declares(policy.grant_rbs, n)]
        self._fluid_kw = [n for n in ("rates_bps", "headroom_rb") if declares(policy.fluid_rbs, n)]
        self._hull = np.zeros((0, self._n_rb))  # per row: its concave rates on 1 .. n_rb RBs
        self._hull_fading = np.zeros(0)  # the fading draw each row's hull is of (NaN: none)
        self._caps = np.zeros(0, dtype=np.int64)  # per row: its headroom in RBs (-1: not asked yet)
        self._grow(max(int(ladder), 1))
        self._resharing: simpy.Event | None = None
        # slot, per transfer on the air: bits left, energy so far
        self._left: dict[int, float] = {}
        self._energy_j: dict[int, float] = {}
        self._start_s: dict[int, float] = {}
        self._done: dict[int, simpy.Event] = {}
        self._average: dict[int, float] = {}  # proportional fair's T_k (slot)
        # slot with HARQ, per client: copies waiting their round trip, (due_s, bits, rounds after it,
        # the wait before each of those); copies in the buffer, sent before new bits, [bits left,
        # bits, rounds after it, wait]; the transfer's retransmissions; whether a block was given up
        self._held: dict[int, list[tuple[float, float, int, float]]] = {}
        self._copies: dict[int, list[list[float]]] = {}
        self._failed_blocks: dict[int, float] = {}
        self._gave_up: set[int] = set()
        self._since_s = self._opened_s = env.now
        self._rbs_on_air = 0.0  # fluid: the RBs granted since the last re-share
        self._used_rb_s = 0.0  # RB-seconds granted so far (the round's load)
        self._wake: simpy.Event | None = None
        self._finishing: list[int] = []
        self._ticking = False
        self._closed = False

    # -- what the link process asks ----------------------------------------------------------------
    @property
    def resends_blocks(self) -> bool:
        """True in the slot form with a HARQ model: the band resends failed transport blocks itself."""
        return self._slot and self._harq is not None

    @property
    def load(self) -> float:
        """Resource blocks granted over the band's life so far, as a fraction of all its RB-time
        (``n_rb`` times the time since it opened), in [0, 1]: the cell's uplink load for the
        neighbours' interference (:class:`~sfl_sim.channel.link.interference.FirstTierInterference`,
        ``rb_load: own_cell``).  Fluid: every RB while anyone has data (the shares are
        work-conserving) or what the policy granted; slot: the grants of each slot that is over
        (a slot the round's end cuts is not counted)."""
        # read without advancing the buffers: a reading mid-round leaves the arithmetic untouched
        used_rb_s = self._used_rb_s + (0.0 if self._slot else self._rbs_on_air * (self._env.now - self._since_s))
        elapsed_s = self._env.now - self._opened_s
        return min(1.0, used_rb_s / (self._n_rb * elapsed_s)) if elapsed_s > 0 else 0.0

    def carry(self, client: int, bits: float) -> simpy.Event:
        """Put ``bits`` of ``client`` into the band; the event fires (``DELIVERED``) when the last
        bit is through.  One transfer per client at a time."""
        if client in self._done:
            raise RuntimeError(f"client {client} has a transfer in the band already; one at a time per client "
                               f"and direction")
        done = self._env.event()
        self._done[client] = done
        self._failed_blocks.pop(client, None)
        self._gave_up.discard(client)
        self._start_s[client] = self._env.now
        if self._slot:
            self._energy_j[client] = 0.0
        if bits <= 0:
            self._finish(client)
        elif self._latency_s > 0:
            self._env.timeout(self._latency_s).callbacks.append(lambda _e: self._arrive(client, bits))
        else:
            self._arrive(client, bits)
        return done

    def serves(self, client: int) -> bool:
        """False when ``client`` has no usable rate on the whole band (all ``n_rb`` RBs, what a
        client alone with data is granted) at its fading now: below the lowest MCS, so the band
        could never carry its bits.  Such a transfer is in outage (the link process asks before
        :meth:`carry`; the outage policy decides what follows).  A rate that is positive on the
        whole band is positive on fewer RBs (the power per RB only grows as the grant shrinks), so
        every transfer the band takes ends."""
        ids = np.array([client], dtype=np.int64)
        rate, _ = self._links(ids, np.array([float(self._n_rb)]), self._fading(ids))
        return bool(rate[0] > 0.0)

    def failed_blocks(self, client: int) -> float:
        """The HARQ retransmissions of ``client``'s last transfer (slot form with HARQ; 0
        otherwise; a real number in HARQ's ``expected`` mode, as on the static path), read once
        the transfer is over and reset by the next :meth:`carry`."""
        return self._failed_blocks.get(client, 0)

    def grants(self, client: int) -> Grants | None:
        """What the band granted ``client`` so far (its transfers in the band, a still running
        one up to now); None when it never had a transfer here.  Only a record: reading it
        changes nothing."""
        if client not in self._in_band_s and client not in self._start_s:
            return None
        now = self._env.now
        in_band_s = self._in_band_s.get(client, 0.0) + (now - self._start_s[client] if client in self._start_s else 0.0)
        if self._slot:
            rb_s, granted_s, bits, blocks, sinr_db_s = self._s_book.get(client, [0.0] * 5)
            return Grants(rb_s, in_band_s, granted_s, bits, int(blocks), sinr_db_s)
        row = self._row.get(client)
        if row is None:
            return Grants(0.0, in_band_s, 0.0, 0.0, None, 0.0)
        book = self._f_book[:, row] + self._f_book_speed[:, row] * (now - self._since_s)
        return Grants(float(book[0]), in_band_s, float(book[1]), float(book[2]), None, float(book[3]))

    def gave_up(self, client: int) -> bool:
        """Whether HARQ gave up on a transport block of ``client``'s last transfer (slot form): its
        payload did not arrive, although its last bit went (an outage for the outage policy)."""
        return client in self._gave_up

    def withdraw(self, client: int) -> None:
        """Stop serving ``client`` (it went offline): its busy interval ends now, its event never fires."""
        if client not in self._done:
            return
        self._advance()
        self._left.pop(client, None)
        self._held.pop(client, None)
        self._copies.pop(client, None)
        self._close_transfer(client)
        self._done.pop(client)
        if not self._slot:
            self._reshare_soon()

    def close(self) -> None:
        """The round is over: nothing more is served (a slot loop stops at its next slot); a
        transfer still on the air gets its busy interval up to now (its event never fires)."""
        if self._closed:
            return
        self._advance()
        for client in list(self._done):
            self._close_transfer(client)
        self._done.clear()
        self._left.clear()
        self._held.clear()
        self._copies.clear()
        self._fresh.clear()
        self._closed = True
        self._rbs_on_air = 0.0
        self._wake = None

    # -- both fidelities ---------------------------------------------------------------------------
    def _arrive(self, client: int, bits: float) -> None:
        if self._closed or client not in self._done:
            return
        self._advance()
        if self._slot:
            self._left[client] = float(bits)
            self._average.setdefault(client, 0.0)
            if not self._ticking:
                self._ticking = True
                self._env.process(self._slots())
            return
        row = self._row_of(client)
        self._f_state[0, row] = float(bits)
        self._f_on[0, row], self._f_on[1, row] = -1.0, 1.0
        self._n_on += 1
        self._fresh.append(client)
        self._reshare_soon()

    def _close_transfer(self, client: int) -> None:
        start = self._start_s.pop(client)
        duration = self._env.now - start
        self._in_band_s[client] = self._in_band_s.get(client, 0.0) + duration
        if self._slot:
            energy = self._energy_j.pop(client)
        else:
            row = self._row.get(client)
            energy = 0.0
            if row is not None:
                energy = float(self._f_state[1, row])
                if self._f_on[1, row]:
                    self._n_on -= 1
                self._f_state[0, row], self._f_state[1, row] = np.inf, 0.0
                self._f_on[:, row] = self._f_speed[:, row] = 0.0
                self._f_book_speed[:, row] = 0.0
        self._note_busy(client, start, duration, energy / duration if duration > 0 else 0.0)

    def _finish(self, client: int) -> None:
        self._left.pop(client, None)
        self._held.pop(client, None)
        self._copies.pop(client, None)
        self._close_transfer(client)
        self._done.pop(client).succeed(DELIVERED)

    def _row_of(self, client: int) -> int:
        row = self._row.get(client)
        if row is None:
            row = self._row[client] = len(self._client)
            self._client.append(client)
            if row >= self._f_finish.size:
                self._grow(2 * row)
        return row

    def _grow(self, rows: int) -> None:
        """Room for ``rows`` clients in the tables and the fluid arrays (new rows empty)."""
        extra = rows - self._f_finish.size
        if extra <= 0:
            return
        steps = self._steps.size
        self._tab = np.concatenate((self._tab, np.zeros((steps, 2, extra))), axis=2)
        self._tab_inv = np.concatenate((self._tab_inv, np.full((steps, extra), np.inf)), axis=1)
        self._tab_fading = np.concatenate((self._tab_fading, np.full(extra, np.nan)))
        self._tab_snr = np.concatenate((self._tab_snr, np.zeros((steps, extra))), axis=1)
        self._f_book = np.concatenate((self._f_book, np.zeros((4, extra))), axis=1)
        self._f_book_speed = np.concatenate((self._f_book_speed, np.zeros((4, extra))), axis=1)
        self._f_state = np.concatenate((self._f_state, np.vstack((np.full(extra, np.inf), np.zeros(extra)))), axis=1)
        for name in ("_f_speed", "_f_on", "_f_scratch"):
            setattr(self, name, np.concatenate((getattr(self, name), np.zeros((2, extra))), axis=1))
        self._f_finish = np.concatenate((self._f_finish, np.zeros(extra)))

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

    def _links(self, ids: np.ndarray, rbs: np.ndarray, fading: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rate (bit/s) and power (W) of each client on ``rbs`` resource blocks with ``fading``.

        The cell's link of a client depends only on its fading and its bandwidth, so each client
        keeps a table per fading draw of the RB counts it is likely to get — ``n_rb / n`` for
        ``n = 1 .. ladder`` clients with data (fluid) or ``1 .. n_rb`` (slot) — filled in one call
        for every client whose draw is new; an RB count outside the table is asked for directly.
        The numbers are the cell's, bit for bit; the table only saves calls.
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

    def _spare_rows(self, rows: np.ndarray) -> None:
        """Room in the hull and headroom arrays for ``rows``."""
        extra = int(rows.max(initial=-1)) + 1 - self._caps.size
        if extra > 0:
            extra = max(extra, self._caps.size)
            self._hull = np.concatenate((self._hull, np.zeros((extra, self._n_rb))))
            self._hull_fading = np.concatenate((self._hull_fading, np.full(extra, np.nan)))
            self._caps = np.concatenate((self._caps, np.full(extra, -1, dtype=np.int64)))

    def _concave_rates(self, ids: np.ndarray, rows: np.ndarray, fading: np.ndarray) -> np.ndarray:
        """Each client's rates on ``1 .. n_rb`` RBs at ``fading``, made concave, shape (k, n_rb):
        from the slot form's tables (or one link call for the clients whose draw is new, fluid),
        the hull taken once per fading draw."""
        self._spare_rows(rows)
        stale = np.flatnonzero(self._hull_fading[rows] != fading)  # NaN: never
        if stale.size:
            if self._slot:  # the tables hold 1 .. n_rb RBs at the fading now (tabled before)
                rates = self._tab[:, 0, rows[stale]].T
            else:
                counts = np.arange(1, self._n_rb + 1, dtype=float)
                rate, _, _ = self._link_at(np.repeat(ids[stale], counts.size),
                                           np.tile(counts, stale.size) * self._grid.hz_per_rb,
                                           np.repeat(fading[stale], counts.size))
                rates = np.asarray(rate, dtype=float).reshape(stale.size, counts.size)
            self._hull[rows[stale]] = concave_rates(rates)
            self._hull_fading[rows[stale]] = fading[stale]
        return self._hull[rows]

    def _headroom(self, ids: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """Each client's power headroom in RBs, in ``[1, n_rb]`` (asked once per client and band),
        or None when the power control sets no limit."""
        if self._headroom_of is None:
            return None
        self._spare_rows(rows)
        new = np.flatnonzero(self._caps[rows] < 0)
        if new.size:
            caps = self._headroom_of(ids[new])
            if caps is None:
                self._headroom_of = None
                return None
            self._caps[rows[new]] = np.clip(np.asarray(caps, dtype=np.int64), 1, self._n_rb)
        return self._caps[rows]

    def _headroom_binds(self, n: int) -> bool:
        """Fluid: whether a client on the air has less headroom than its equal share ``n_rb / n``
        (then the equal-shares policy is asked for its split)."""
        if self._headroom_of is None or "headroom_rb" not in self._fluid_kw:
            return False
        rows = np.flatnonzero(self._f_on[1])
        caps = self._headroom(np.array([self._client[r] for r in rows.tolist()], dtype=np.int64), rows)
        return caps is not None and int(caps.min()) * n < self._n_rb

    # -- the record of the grants (read by Band.grants, never by the scheduling) -------------------
    def _remember(self, ids: np.ndarray, rbs: np.ndarray, fading: np.ndarray, snr_db: np.ndarray) -> None:
        """Keep the SINRs of the last two untabled link calls (a slot's whole-band and grant calls),
        so that the record reads them rather than asking the cell again."""
        self._seen.append((ids, np.asarray(rbs, dtype=float), np.asarray(fading, dtype=float),
                           np.asarray(snr_db, dtype=float)))
        del self._seen[:-2]

    def _sinr_db(self, ids: np.ndarray, rbs: np.ndarray, fading: np.ndarray) -> np.ndarray:
        """The SINR (dB) of each client on ``rbs`` RBs at ``fading``: from the tables, a recent
        link call, or the cell (the same number each way)."""
        out = np.full(ids.size, np.nan)
        if ids.size:
            rows = np.array([self._row[k] for k in ids.tolist()], dtype=np.int64)
            col = self._step_order[np.minimum(np.searchsorted(self._sorted_steps, rbs), self._steps.size - 1)]
            hit = (self._steps[col] == rbs) & (self._tab_fading[rows] == fading)
            out[hit] = self._tab_snr[col[hit], rows[hit]]
        for seen_ids, seen_rbs, seen_fading, seen_snr in reversed(self._seen):
            todo = np.flatnonzero(np.isnan(out)).tolist()
            if not todo:
                break
            where = {k: i for i, k in enumerate(seen_ids.tolist())}
            for i in todo:
                p = where.get(int(ids[i]))
                if p is not None and seen_rbs[p] == rbs[i] and seen_fading[p] == fading[i]:
                    out[i] = seen_snr[p]
        todo_at = np.flatnonzero(np.isnan(out))
        if todo_at.size:
            _, snr_db, _ = self._link_at(ids[todo_at], rbs[todo_at] * self._grid.hz_per_rb, fading[todo_at])
            out[todo_at] = snr_db
        return out

    def _book_slot(self, slot: int, start_s: float, ids: np.ndarray, grant: np.ndarray, fading: np.ndarray,
                   block_bits: np.ndarray, ok: np.ndarray) -> None:
        """Record one slot's grants (slot form): RB-s, a slot of grant, the block's bits, its SINR."""
        slot_s = self._grid.slot_s
        sinr_db = self._sinr_db(ids, grant.astype(float), fading)
        for i, k in enumerate(ids.tolist()):
            book = self._s_book.setdefault(k, [0.0] * 5)
            book[0] += float(grant[i]) * slot_s
            book[1] += slot_s
            book[2] += float(block_bits[i])
            book[3] += 1
            book[4] += float(sinr_db[i]) * slot_s
            if self.slot_trace is not None:
                self.slot_trace.append(SlotGrant(slot, start_s, k, int(grant[i]), float(block_bits[i]),
                                                 not bool(ok[i])))

    # -- fluid -------------------------------------------------------------------------------------
    def _advance(self) -> None:
        """Take the bits sent since the last change off each buffer (fluid; a no-op in slot mode)."""
        dt = self._env.now - self._since_s
        self._since_s = self._env.now
        if self._slot or dt <= 0:
            return
        self._used_rb_s += self._rbs_on_air * dt
        self._f_book += self._f_book_speed * dt
        # bits left -= rate dt and energy += power dt, in two operations (rows off the air stand still)
        np.add(self._f_state, np.multiply(self._f_speed, dt, out=self._f_scratch), out=self._f_state)

    def _reshare_soon(self) -> None:
        """Re-share once the instant's other events are done (one re-share for all its changes)."""
        self._wake = None
        if self._resharing is None and not self._closed:
            self._resharing = _AfterTheInstant(self._env, self._reshare)

    def _reshare(self, _event: simpy.Event | None = None) -> None:
        """New shares for the clients with data, and the wake-up at the next finish."""
        self._resharing = None
        self._wake = None
        if self._n_on == 0 or self._closed:
            self._rbs_on_air = 0.0
            return
        if self._fresh:  # table the newcomers' rates for their fading draws, in one call
            fresh = np.array(list(dict.fromkeys(self._fresh)), dtype=np.int64)
            self._fresh.clear()
            self._table(fresh, np.array([self._row[k] for k in fresh.tolist()], dtype=np.int64),
                        self._fading(fresh))
        n, finish_s = self._n_on, self._f_finish
        if self._equal_shares and n <= self._steps.size and not self._headroom_binds(n):
            # n_rb / n each: column n - 1 of the tables; a row off the air has inf bits left
            np.multiply(self._tab[n - 1], self._f_on, out=self._f_speed)
            np.multiply(self._f_state[0], self._tab_inv[n - 1], out=finish_s)
            self._rbs_on_air = float(self._n_rb)  # n_rb / n to each of the n with data
            on = self._f_on[1] > 0
            self._f_book_speed[0] = np.where(on, self._n_rb / n, 0.0)
            self._f_book_speed[1] = on
            self._f_book_speed[2] = np.where(on, self._tab[n - 1, 0], 0.0)
            self._f_book_speed[3] = np.where(on, self._tab_snr[n - 1], 0.0)
        else:
            rows = np.flatnonzero(self._f_on[1])
            ids = np.array([self._client[r] for r in rows.tolist()], dtype=np.int64)
            extra = self._policy_inputs(self._fluid_kw, ids, rows, self._tab_fading[rows])
            rbs = np.asarray(self._policy.fluid_rbs(self._n_rb, self._tab[0, 0, rows] / self._n_rb, **extra),
                             dtype=float)
            rate, power = self._links(ids, rbs, self._tab_fading[rows])
            self._rbs_on_air = float(rbs.sum())
            self._f_speed.fill(0.0)
            self._f_speed[0, rows], self._f_speed[1, rows] = -rate, power
            live = rbs > 0
            self._f_book_speed.fill(0.0)
            self._f_book_speed[0, rows], self._f_book_speed[1, rows], self._f_book_speed[2, rows] = rbs, live, rate
            self._f_book_speed[3, rows] = np.where(live, self._sinr_db(ids, rbs, self._tab_fading[rows]), 0.0)
            finish_s.fill(np.inf)
            with np.errstate(divide="ignore"):
                finish_s[rows] = self._f_state[0, rows] / rate
        first = float(finish_s[finish_s.argmin()])
        if not math.isfinite(first):
            stuck = [self._client[r] for r in np.flatnonzero(self._f_on[1]).tolist()]
            raise RuntimeError(f"scheduler {self._policy!r}: clients {stuck} have data and rate 0 on their resource "
                               f"blocks; no transfer can end")
        ties = (finish_s <= first * (1.0 + _TIE_RTOL)).nonzero()[0]
        self._finishing = [self._client[r] for r in ties.tolist()]
        wake = self._env.timeout(first)
        self._wake = wake
        wake.callbacks.append(self._woken)

    def _woken(self, event: simpy.Event) -> None:
        if event is not self._wake:  # a later change re-planned
            return
        self._advance()
        for k in self._finishing:  # the ties end together, and the rest is re-shared at once
            self._finish(k)
        self._reshare()

    # -- slot --------------------------------------------------------------------------------------
    def _slots(self) -> SimSteps[None]:
        """The slot loop: runs while some client has data (or HARQ bits on their round trip)."""
        env, slot_s, policy = self._env, self._grid.slot_s, self._policy
        j = math.ceil(env.now / slot_s - 1e-9)
        while (self._left or self._held) and not self._closed:
            start = j * slot_s
            if start > env.now:
                yield env.timeout(start - env.now)
            # the decision comes after the events already due at the slot's start (a transfer
            # starting then is in it)
            yield env.timeout(0.0)
            if self._closed:
                break
            for k in list(self._held):  # HARQ copies whose round trip is over go back to the buffer
                due = [h for h in self._held[k] if h[0] <= env.now + 1e-12]
                if due:
                    self._left[k] = self._left.get(k, 0.0) + sum(h[1] for h in due)
                    self._copies.setdefault(k, []).extend([h[1], h[1], h[2], h[3]] for h in due)
                    self._held[k] = [h for h in self._held[k] if h[0] > env.now + 1e-12]
                    if not self._held[k]:
                        del self._held[k]
            ids = np.fromiter((k for k in self._left if self._left[k] > 0), dtype=np.int64)
            sent: dict[int, float] = {}
            granted_rbs = 0.0
            if ids.size:
                fading = self._fading(ids)
                # each client's link on the whole grid: the policy ranks by its rate per RB, and a
                # grant of the whole grid (the usual one to the best) sends at it
                whole_bps, whole_w = self._links(ids, np.full(ids.size, float(self._n_rb)), fading)
                per_rb = whole_bps / self._n_rb
                left = np.array([self._left[k] for k in ids.tolist()])
                average = np.array([self._average[k] for k in ids.tolist()])
                rows = np.array([self._row[k] for k in ids.tolist()], dtype=np.int64)
                # the fewest RBs that empty each buffer, by the rates tabled on 1 .. n_rb RBs
                need = needed_rbs_table(left, self._tab[:, 0, rows].T, slot_s)
                grant = np.asarray(policy.grant_rbs(self._n_rb, need, per_rb, average, j,
                                                    **self._policy_inputs(self._grant_kw, ids, rows, fading)),
                                   dtype=np.int64)
                granted_rbs = float(grant.sum())
                g = grant > 0
                served = np.zeros(ids.size)
                if g.any():
                    if self._harq is not None:  # its error rate needs the SNR
                        rate, snr_db, power = self._link_at(ids[g], grant[g] * self._grid.hz_per_rb, fading[g])
                    elif (grant[g] == self._n_rb).all():
                        rate, power = whole_bps[g], whole_w[g]
                    else:
                        rate, power = self._links(ids[g], grant[g].astype(float), fading[g])
                    block = np.minimum(np.asarray(rate, dtype=float) * slot_s, left[g])
                    delivered = block.copy()
                    ok = np.ones(block.size, dtype=bool)  # the block's first copy got through (the record)
                    for i, k in enumerate(ids[g].tolist()):
                        sent[k] = float(block[i])
                        self._energy_j[k] += float(power[i]) * slot_s
                        if self._harq is not None:
                            before = self._failed_blocks.get(k, 0)
                            delivered[i] = self._harq_block(k, j, float(block[i]), float(rate[i]),
                                                            float(snr_db[i]), start + slot_s)
                            ok[i] = self._failed_blocks.get(k, 0) == before
                    served[g] = delivered / slot_s
                    self._book_slot(j, start, ids[g], grant[g], fading[g], block, ok)
                new_average = policy.average_bps(average, served)
                for i, k in enumerate(ids.tolist()):
                    self._average[k] = float(new_average[i])
            yield env.timeout(start + slot_s - env.now)
            self._used_rb_s += granted_rbs * slot_s  # the slot's grants, counted once it is over
            j += 1
            for k, bits in sent.items():
                if k in self._left:
                    self._left[k] -= bits
            for k in [k for k in self._left if self._left[k] <= 1e-9 and k not in self._held]:
                self._finish(k)
        self._ticking = False

    def _harq_block(self, client: int, slot: int, bits: float, rate_bps: float, snr_db: float,
                    end_s: float) -> float:
        """HARQ of one grant of ``bits`` ending at ``end_s``: the copies in the buffer go first (one
        whose last bit goes starts its next round trip, if any); the rest is a new transport block,
        whose fate the HARQ model gives (see the module docstring).  Returns the new bits sent."""
        copies = self._copies.get(client, [])
        while copies and bits > 1e-9:
            entry = copies[0]
            took = min(bits, entry[0])
            entry[0] -= took
            bits -= took
            if entry[0] <= 1e-9:
                copies.pop(0)
                _, per_round, rounds_after, wait_s = entry
                if rounds_after > 0:
                    self._hold(client, end_s + wait_s, per_round, int(rounds_after) - 1, wait_s)
        if bits <= 1e-9:
            return 0.0
        assert self._harq is not None and self._block_rng is not None
        sent = self._harq.send(bits, rate_bps, snr_db, self._block_rng(client, slot))
        if not sent.delivered:
            self._gave_up.add(client)
        if sent.retransmissions > 0:
            self._failed_blocks[client] = self._failed_blocks.get(client, 0) + sent.retransmissions
            rounds = math.ceil(sent.retransmissions / sent.blocks - 1e-9)
            air_s = (sent.blocks + sent.retransmissions) * bits / (sent.blocks * rate_bps)
            wait_s = max(0.0, sent.time_s - air_s) / rounds
            per_round = sent.retransmissions * bits / (sent.blocks * rounds)
            self._hold(client, end_s + wait_s, per_round, rounds - 1, wait_s)
        return bits

    def _hold(self, client: int, due_s: float, bits: float, rounds_after: int, wait_s: float) -> None:
        """A HARQ copy of ``bits`` back in the buffer at ``due_s``, ``rounds_after`` more after it."""
        self._held.setdefault(client, []).append((due_s, bits, rounds_after, wait_s))
