"""The slot form of the scheduled band: a decision every slot, transport blocks and HARQ copies.

A decision every slot ``1 ms / 2^mu`` on the slot grid ``t = j * slot_s`` (a transfer that starts
at a slot's start is in its decision, one that starts later waits for the next slot's): each
client's need (the RBs that would empty its buffer), the policy's
:meth:`~sfl_sim.channel.protocols.Scheduler.grant_rbs` (:meth:`SlotBand._grant`), a transport
block of ``r(m) * slot_s`` bits per grant.  With a HARQ model a block's fate is the static path's
model, asked the same way: :meth:`~sfl_sim.channel.protocols.HarqModel.send` of the block's new
bits at its rate and SINR (up to ``max_transmissions`` copies, chase combining's SINR gain per
copy, the block given up after the last; ``mode`` as set), its one draw from a stream of its own
keyed by the round, the client and the slot (so the slot form shifts no shared stream).  The
block's copies (``retransmissions`` of it) come back to the buffer in its HARQ round trips
(``ceil(retransmissions / blocks)`` of them, the waiting ``send`` times, ``time_s`` less the
copies' air time, split evenly), each round one rtt after the previous copy went, and a grant
sends copies before new bits (our reading: NR serves a pending retransmission first).  A block
given up fails the transfer once its last bit is through (:meth:`SlotBand.gave_up`), an outage as
on the static path.  A transfer ends at the end of the slot that empties its buffer.

How it runs (our choice, for speed; the numbers are those of one SimPy step per slot, bit for bit):
the buffers, averages, energies and the record are arrays with a row per client, each client's
rate, power and SINR on ``1 .. n_rb`` RBs are tabled once per fading draw, and a slot is a few
array operations and the policy's call, with no Python per client (but HARQ's per block).  The
slot process yields to SimPy only where something can happen: a slot's decision depends only on
the band's state, which nothing outside the band changes without an event, so while SimPy's next
event (:meth:`simpy.Environment.peek`) lies after the next slot's decision and no transfer ends at
the slot's end, the next slot is decided at once; the process sleeps until the end of the last
slot so decided (the same float time one step per slot reaches).

For the built-in policies (proportional fair, round robin, max rate) the decisions are compiled
(:mod:`sfl_sim.engine.band.compiled`, numba): without HARQ and without a slot trace the slots
decided ahead run in one compiled call each, until SimPy's next event or a transfer's end; with
HARQ or a trace each slot's grants are compiled and the rest (the keyed HARQ draws, the trace)
stays here.  The numbers are this module's numpy path's, bit for bit; a scheduler of one's own
runs the numpy path (``SFL_SIM_SLOT_NUMPY=1`` forces it for every scheduler).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import simpy

from sfl_sim.channel.link.scheduling import ResourceGrid
from sfl_sim.channel.protocols import HarqModel, Scheduler
from sfl_sim.engine.band import compiled
from sfl_sim.engine.band.base import BandResource, FadingOf, Grants, HeadroomOf, LinkAt, NoteBusy, SlotGrant
from sfl_sim.engine.steps import SimSteps

__all__ = ["SlotBand"]


def _delay_to(now: float, at_s: float) -> float:
    """The delay ``d`` with ``now + d == at_s`` in floating point (SimPy schedules at ``now +
    delay``), so a slot's end is the same float however far ahead it was decided."""
    d = at_s - now
    for _ in range(8):
        if now + d < at_s:
            d = float(np.nextafter(d, np.inf))
        elif now + d > at_s:
            d = float(np.nextafter(d, -np.inf))
        else:
            break
    return d


class SlotBand(BandResource):
    """The slot form (see the module docstring).

    Parameters
    ----------
    env, policy, grid, link_at, fading, note_busy, latency_s
        As :class:`~sfl_sim.engine.band.base.BandResource`.
    harq : HarqModel or None
        Each transport block's fate is its ``send`` (see the module docstring).
    block_rng : callable or None
        ``block_rng(client, slot) -> numpy.random.Generator``: the stream of a client's draws in a
        slot (with HARQ), keyed by the round, the client and the slot, never the run's shared streams.
    trace_slots : bool
        Keep every grant of every slot in :attr:`slot_trace` (``metrics.slot_trace``).
    headroom : HeadroomOf or None
        As :class:`~sfl_sim.engine.band.base.BandResource`.
    """

    def __init__(self, env: simpy.Environment, policy: Scheduler, grid: ResourceGrid, link_at: LinkAt,
                 fading: FadingOf, note_busy: NoteBusy, latency_s: float, harq: HarqModel | None = None,
                 block_rng: Callable[[int, int], np.random.Generator] | None = None,
                 trace_slots: bool = False, headroom: HeadroomOf | None = None) -> None:
        super().__init__(env, policy, grid, link_at, fading, note_busy, latency_s,
                         np.arange(1, grid.n_rb + 1, dtype=float), headroom)
        self._harq, self._block_rng = harq, block_rng
        self._trace: list[SlotGrant] | None = [] if trace_slots else None
        # per row: bits left, proportional fair's T_k, the transfer's energy so far (J), the
        # fading draw of the last decision that yielded to SimPy, the client, whether it is in the
        # buffers, the HARQ copies on their round trip; the record [RB-s, granted s, bits, transport
        # blocks, SINR dB x s]
        self._left = np.zeros(0)
        self._average = np.zeros(0)
        self._energy = np.zeros(0)
        self._fad = np.zeros(0)
        self._ids = np.zeros(0, dtype=np.int64)
        self._in = np.zeros(0, dtype=bool)
        self._n_held = np.zeros(0, dtype=np.int64)
        self._book = np.zeros((5, 0))
        self._top_bps = np.zeros(0)  # per row: its best rate in the table (on any RB count)
        # False while every row in the buffers has data, its fading unread since its tables and hull
        # were checked: the next decision need not check them again
        self._unchecked = True
        # the rows in the buffers, in the order they came (the order the policy sees them in)
        self._order: dict[int, None] = {}
        self._order_rows: np.ndarray | None = None
        # HARQ, per client: copies waiting their round trip, (due_s, bits, rounds after it, the wait
        # before each of those); copies in the buffer, sent before new bits, [bits left, bits,
        # rounds after it, wait]
        self._held: dict[int, list[tuple[float, float, int, float]]] = {}
        self._copies: dict[int, list[list[float]]] = {}
        self._ticking = False
        # a built-in policy's decisions compiled (compiled.py); the whole slot loop while nothing
        # else can happen where no HARQ draw and no trace is needed
        self._code = compiled.policy_code(policy) if compiled.enabled() else None
        if self._code is not None:
            compiled.warm_up()
        self._run_compiled = self._code is not None and harq is None and not trace_slots
        self._work: tuple[np.ndarray, ...] | None = None  # the compiled loop's work arrays (compiled.scratch)
        # per row, for the compiled loop: the marginal rates of its hull, their positive count,
        # whether they fall, and the hull they are of (its _hull_gen; -1: none yet)
        self._gain = np.zeros((0, self._n_rb))
        self._usable = np.zeros(0, dtype=np.int64)
        self._mono = np.zeros(0, dtype=bool)
        self._gain_gen = np.zeros(0, dtype=np.int64)
        # proportional fair's 1 / t_c, as its average_bps computes it
        self._pf_weight = (1.0 / policy.params.time_constant_slots  # type: ignore[attr-defined]
                           if self._code == compiled.PROPORTIONAL_FAIR else 0.0)

    # -- the policy's call (one place) -------------------------------------------------------------
    def _grant(self, rows: np.ndarray, need: np.ndarray, per_rb: np.ndarray, average: np.ndarray,
               turn: int, check: bool = True) -> np.ndarray:
        """The policy's grants of slot ``turn`` to the clients of ``rows`` (those with data, in
        order): their needs, rates per RB on the whole band and averaged throughputs; their rates
        on ``1 .. n_rb`` RBs are :meth:`_rates_bps` ``(rows)``, shape (k, n_rb); the optional inputs
        the policy declares (``rates_bps`` made concave, ``headroom_rb``) are passed (``check``:
        whether a row's fading may have changed since its hull was taken)."""
        extra = {}
        if self._grant_kw:
            if check:
                extra = self._policy_inputs(self._grant_kw, self._ids[rows], rows, self._fad[rows])
            else:  # every row's hull and headroom are at hand
                if "headroom_rb" in self._grant_kw and self._headroom_of is not None:
                    extra["headroom_rb"] = self._caps[rows]
                if "rates_bps" in self._grant_kw:
                    extra["rates_bps"] = self._hull[rows]
        if self._code is not None:  # a built-in policy: its compiled grants, the same numbers
            grant = compiled.grant_slot(self._code, self._n_rb, need, per_rb, average, turn, self._hull, rows,
                                        extra.get("headroom_rb"))
            if grant is not None:
                return grant
        return np.asarray(self._policy.grant_rbs(self._n_rb, need, per_rb, average, turn, **extra), dtype=np.int64)

    def _run_ahead(self, j: int) -> tuple[int, int, np.ndarray, np.ndarray, float, np.ndarray] | None:
        """Slots ``j, j + 1, ...`` decided by the compiled loop (:func:`compiled.run_slots`) while
        nothing else can happen, or None where slot ``j`` needs :meth:`_decide` (a client in the
        buffers without bits).  The tables, hulls and headrooms are brought up to date first, as
        :meth:`_decide` does for a slot whose rows may have changed."""
        everyone = self._rows_in()
        if not everyone.size:
            return None
        if self._unchecked:
            if not self._left[everyone].min() > 0:
                return None
            # the tables, hulls and headrooms of rows whose fading is new (none: the calls would
            # find nothing to do, so they are left out)
            if compiled.any_stale(everyone, self._fad, self._tab_fading, self._hull_fading, self._caps,
                                  "rates_bps" in self._grant_kw,
                                  "headroom_rb" in self._grant_kw and self._headroom_of is not None):
                ids, fad = self._ids[everyone], self._fad[everyone]
                self._table(ids, everyone, fad)
                if self._grant_kw:
                    self._policy_inputs(self._grant_kw, ids, everyone, fad)
            self._unchecked = False
        if self._work is None or self._work[0].size < everyone.size:
            self._work = compiled.scratch(max(everyone.size, 2 * (0 if self._work is None else self._work[0].size)),
                                          self._n_rb)
        caps = self._caps[everyone] if "headroom_rb" in self._grant_kw and self._headroom_of is not None else None
        assert self._code is not None
        outcome, last, self._used_rb_s, sent_rows, sent_bits, granted, finishing = compiled.run_slots(
            self._code, self._n_rb, self._grid.slot_s, j, self._env.peek(), self._used_rb_s, self._pf_weight,
            everyone, self._left, self._average, self._energy, self._book, self._n_held, self._top_bps, self._tab,
            self._tab_snr, self._hull, caps, self._work,
            (self._gain, self._usable, self._mono, self._gain_gen, self._hull_gen))
        return outcome, last, sent_rows, sent_bits, granted, finishing

    def _rates_bps(self, rows: np.ndarray) -> np.ndarray:
        """The rates (bit/s) of the clients of ``rows`` on ``1 .. n_rb`` RBs at their fading now, (k, n_rb)."""
        return self._tab[:, 0, rows].T

    def _need(self, rows: np.ndarray, left: np.ndarray) -> np.ndarray:
        """The fewest RBs that empty each buffer (all hold bits) by the rates tabled on ``1 ..
        n_rb`` RBs: :func:`~sfl_sim.channel.link.scheduling.needed_rbs_table`, the same numbers,
        with the table read only for the buffers the best rate in it would empty (the others
        need ``n_rb``, or 0 without any rate)."""
        slot_s = self._grid.slot_s
        bits = left * (1.0 - 1e-12)
        top = self._top_bps[rows] * slot_s  # the table's best rate x slot_s, as the table's own products
        need = np.where(top > 0, self._n_rb, 0)
        short = np.flatnonzero(top >= bits)
        if short.size:
            enough = self._tab[:, 0, rows[short]].T * slot_s >= bits[short, None]
            need[short] = enough.argmax(axis=1) + 1
        return need

    def _every_count(self, ids: np.ndarray, rows: np.ndarray, fading: np.ndarray) -> np.ndarray:
        # the tables hold 1 .. n_rb RBs at the fading now (tabled before the policy is asked)
        return self._rates_bps(rows)

    # -- the base's hooks --------------------------------------------------------------------------
    @property
    def resends_blocks(self) -> bool:
        """True with a HARQ model: the band resends failed transport blocks itself."""
        return self._harq is not None

    @property
    def slot_trace(self) -> list[SlotGrant] | None:
        """With ``trace_slots``: every grant of every slot, in order (None otherwise)."""
        return self._trace

    def _granted(self, client: int, in_band_s: float) -> Grants:
        row = self._row.get(client)
        if row is None:
            return Grants(0.0, in_band_s, 0.0, 0.0, 0, 0.0)
        rb_s, granted_s, bits, blocks, sinr_db_s = self._book[:, row].tolist()
        return Grants(rb_s, in_band_s, granted_s, bits, int(blocks), sinr_db_s)

    def _opened(self, client: int) -> None:
        row = self._row_of(client)  # first: it may grow the arrays
        self._energy[row] = 0.0

    def _arrive(self, client: int, bits: float) -> None:
        if self._closed or client not in self._done:
            return
        row = self._row_of(client)
        if row not in self._order:
            self._order[row] = None
            self._order_rows = None
            self._unchecked = True
        self._left[row] = float(bits)
        self._in[row] = True
        if not self._ticking:
            self._ticking = True
            self._env.process(self._slots())

    def _drop(self, client: int) -> None:
        row = self._row.get(client)
        if row is not None and row in self._order:
            del self._order[row]
            self._order_rows = None
            self._unchecked = True
            self._in[row] = False
            self._left[row] = 0.0
            self._n_held[row] = 0
        self._held.pop(client, None)
        self._copies.pop(client, None)

    def _stop(self) -> None:
        for row in self._order:
            self._in[row] = False
            self._n_held[row] = 0
        self._order.clear()
        self._order_rows = None
        self._unchecked = True
        self._held.clear()
        self._copies.clear()

    def _energy_j(self, client: int) -> float:
        row = self._row[client]
        energy = float(self._energy[row])
        self._energy[row] = 0.0
        return energy

    def _grow_rows(self, extra: int) -> None:
        self._left = np.concatenate((self._left, np.zeros(extra)))
        self._average = np.concatenate((self._average, np.zeros(extra)))
        self._energy = np.concatenate((self._energy, np.zeros(extra)))
        self._fad = np.concatenate((self._fad, np.full(extra, np.nan)))
        self._ids = np.concatenate((self._ids, np.zeros(extra, dtype=np.int64)))
        self._in = np.concatenate((self._in, np.zeros(extra, dtype=bool)))
        self._n_held = np.concatenate((self._n_held, np.zeros(extra, dtype=np.int64)))
        self._book = np.concatenate((self._book, np.zeros((5, extra))), axis=1)
        self._top_bps = np.concatenate((self._top_bps, np.zeros(extra)))
        self._gain = np.concatenate((self._gain, np.zeros((extra, self._n_rb))))
        self._usable = np.concatenate((self._usable, np.zeros(extra, dtype=np.int64)))
        self._mono = np.concatenate((self._mono, np.zeros(extra, dtype=bool)))
        self._gain_gen = np.concatenate((self._gain_gen, np.full(extra, -1, dtype=np.int64)))

    def _relinked(self, client: int, row: int) -> None:
        # a network: the next decision reads the client's fading as new, so its tables (0 without
        # a link: no need, no grant) and hull are read again
        self._fad[row] = np.nan
        self._unchecked = True

    def _tabled(self, rows: np.ndarray) -> None:
        self._top_bps[rows] = self._tab[:, 0, rows].max(axis=0)

    def _row_of(self, client: int) -> int:
        row = super()._row_of(client)
        self._ids[row] = client
        return row

    # -- the slots ---------------------------------------------------------------------------------
    def _rows_in(self) -> np.ndarray:
        """The rows in the buffers, in order (cached until they change)."""
        if self._order_rows is None:
            self._order_rows = np.fromiter(self._order, dtype=np.int64, count=len(self._order))
        return self._order_rows

    def _slots(self) -> SimSteps[None]:
        """The slot loop: runs while some client has data (or HARQ bits on their round trip)."""
        env, slot_s = self._env, self._grid.slot_s
        j = math.ceil(env.now / slot_s - 1e-9)
        ahead, now = False, env.now  # ahead: deciding without yielding (see the module docstring)
        while self._order and not self._closed:
            start = j * slot_s
            if not ahead:
                if start > env.now:
                    yield env.timeout(start - env.now)
                # the decision comes after the events already due at the slot's start (a transfer
                # starting then is in it); with none due (SimPy's next event later), the zero wait
                # would be the very next step: no one could see it, so it is left out
                if env.peek() <= env.now:
                    yield env.timeout(0.0)
                if self._closed:
                    break
                now = env.now
                rows = self._rows_in()
                fad = self._fading(self._ids[rows])  # changed only by events: read once per step
                if self._code is not None:  # the same test and update, compiled
                    if compiled.note_fading(rows, fad, self._fad):
                        self._unchecked = True
                elif not np.array_equal(fad, self._fad[rows]):  # a new draw (or NaN: a row never read)
                    self._fad[rows] = fad
                    self._unchecked = True
            if self._run_compiled and not self._held:
                run = self._run_ahead(j)
                if run is not None:
                    outcome, last, sent_rows, sent_bits, granted_rbs, done = run
                    if outcome == compiled.MORE:  # decided ahead up to slot ``last``, not yet it
                        j, ahead, now = last, True, last * slot_s
                        continue
                    if outcome != compiled.FALLBACK:
                        end = last * slot_s + slot_s
                        j = last + 1
                        yield env.timeout(_delay_to(env.now, end))
                        if outcome == compiled.YIELD:
                            finishing = self._end_slot(granted_rbs, sent_rows, sent_bits)
                        else:
                            finishing = done.tolist()
                        ahead = False
                        for row in finishing:
                            self._finish(int(self._ids[row]))
                        continue
                    j, start = last, last * slot_s  # slot ``last`` by the numpy path
            granted_rbs, sent_rows, sent_bits = self._decide(j, start, now)
            end = start + slot_s
            after = (j + 1) * slot_s
            next_decision = after if after > end else end  # where one step per slot decides the next slot
            if env.peek() > next_decision:  # nothing happens before the next decision: no one can see the wait
                finishing = self._end_slot(granted_rbs, sent_rows, sent_bits)
                j += 1
                if not finishing:
                    ahead, now = True, next_decision
                    continue
                yield env.timeout(_delay_to(env.now, end))
            else:
                yield env.timeout(_delay_to(env.now, end))
                finishing = self._end_slot(granted_rbs, sent_rows, sent_bits)
                j += 1
            ahead = False
            for row in finishing:
                self._finish(int(self._ids[row]))
        self._ticking = False

    def _end_slot(self, granted_rbs: float, sent_rows: np.ndarray, sent_bits: np.ndarray) -> list[int]:
        """A slot is over: its grants count to the load, its blocks leave the buffers; the rows
        whose buffers are empty (and no HARQ copy on its way back) finish, in order."""
        self._used_rb_s += granted_rbs * self._grid.slot_s  # the slot's grants, counted once it is over
        if self._code is not None:  # the same array operations, compiled
            return compiled.end_slot(self._rows_in(), sent_rows, sent_bits, self._left, self._in,
                                     self._n_held).tolist()
        if sent_rows.size:
            still = self._in[sent_rows]  # a client withdrawn during the slot is gone
            self._left[sent_rows[still]] -= sent_bits[still]
        rows = self._rows_in()
        if not rows.size:
            return []
        done = (self._left[rows] <= 1e-9) & (self._n_held[rows] == 0)
        return rows[done].tolist() if done.any() else []

    def _decide(self, j: int, start: float, now: float) -> tuple[float, np.ndarray, np.ndarray]:
        """Slot ``j``'s decision at ``now``: the grants, their energy, the averages and the record.
        Returns the RBs granted and the rows and bits of the transport blocks."""
        slot_s, n_rb = self._grid.slot_s, self._n_rb
        if self._held:
            self._return_copies(now)
        everyone = self._rows_in()
        has = self._left[everyone] > 0
        rows = everyone if has.all() else everyone[has]
        if not rows.size:
            return 0.0, rows, np.zeros(0)
        ids = self._ids[rows]
        check = self._unchecked or rows is not everyone
        if check:
            self._table(ids, rows, self._fad[rows])
        # each client's link on the whole grid: the policy ranks by its rate per RB, and a grant
        # of the whole grid (the usual one to the best) sends at it
        per_rb = self._tab[n_rb - 1, 0, rows] / n_rb
        left = self._left[rows]
        average = self._average[rows]
        need = self._need(rows, left)
        grant = self._grant(rows, need, per_rb, average, j, check)
        self._unchecked = rows is not everyone
        g = np.flatnonzero(grant > 0)
        served = np.zeros(rows.size)
        if g.size:
            got, at = rows[g], grant[g] - 1  # the granted rows and their columns of the tables
            rate, power = self._tab[at, 0, got], self._tab[at, 1, got]
            sinr_db = self._tab_snr[at, got]
            block = np.minimum(rate * slot_s, left[g])
            self._energy[got] += power * slot_s
            delivered, ok = block, None
            if self._harq is not None:
                delivered, ok = block.copy(), np.ones(g.size, dtype=bool)  # ok: the block's first copy got through
                end_s = start + slot_s
                for i, (k, row) in enumerate(zip(ids[g].tolist(), got.tolist(), strict=True)):
                    before = self._failed_blocks.get(k, 0)
                    delivered[i] = self._harq_block(k, row, j, float(block[i]), float(rate[i]),
                                                    float(sinr_db[i]), end_s)
                    ok[i] = self._failed_blocks.get(k, 0) == before
            served[g] = delivered / slot_s
            add = np.empty((5, g.size))  # the record's five columns in one update
            np.multiply(grant[g], slot_s, out=add[0])
            add[1] = slot_s
            add[2] = block
            add[3] = 1.0
            np.multiply(sinr_db, slot_s, out=add[4])
            self._book[:, got] += add
            if self._trace is not None:
                fails = ok.tolist() if ok is not None else [True] * g.size
                self._trace.extend(SlotGrant(j, start, k, m, b, not f) for k, m, b, f in zip(
                    ids[g].tolist(), grant[g].tolist(), block.tolist(), fails, strict=True))
        else:
            got, block = g, np.zeros(0)
        self._average[rows] = self._policy.average_bps(average, served)
        return float(grant.sum()), got, block

    # -- HARQ --------------------------------------------------------------------------------------
    def _return_copies(self, now: float) -> None:
        """HARQ copies whose round trip is over go back to the buffer."""
        for k in list(self._held):
            due = [h for h in self._held[k] if h[0] <= now + 1e-12]
            if due:
                row = self._row[k]
                self._left[row] = self._left[row] + sum(h[1] for h in due)
                self._copies.setdefault(k, []).extend([h[1], h[1], h[2], h[3]] for h in due)
                self._held[k] = [h for h in self._held[k] if h[0] > now + 1e-12]
                self._n_held[row] = len(self._held[k])
                if not self._held[k]:
                    del self._held[k]

    def _harq_block(self, client: int, row: int, slot: int, bits: float, rate_bps: float, snr_db: float,
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
                    self._hold(client, row, end_s + wait_s, per_round, int(rounds_after) - 1, wait_s)
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
            self._hold(client, row, end_s + wait_s, per_round, rounds - 1, wait_s)
        return bits

    def _hold(self, client: int, row: int, due_s: float, bits: float, rounds_after: int, wait_s: float) -> None:
        """A HARQ copy of ``bits`` back in the buffer at ``due_s``, ``rounds_after`` more after it."""
        self._held.setdefault(client, []).append((due_s, bits, rounds_after, wait_s))
        self._n_held[row] += 1

