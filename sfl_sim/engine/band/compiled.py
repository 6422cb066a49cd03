"""The built-in policies' slot decisions and the slot loop, compiled (numba): the slot form's fast path.

The slot form (:mod:`sfl_sim.engine.band.slot`) decides every slot; in numpy each decision is
about 40 array operations and the policy's call, tens of microseconds a slot whatever it computes
(``bench/scheduler.py``'s docstring).  For the built-in policies
(:class:`~sfl_sim.channel.link.scheduling.ProportionalFair`,
:class:`~sfl_sim.channel.link.scheduling.RoundRobin`, :class:`~sfl_sim.channel.link.scheduling.MaxRate`,
exactly those classes: a subclass may override a method) the decisions are compiled here with
numba over all clients in arrays, and :func:`run_slots` decides slot after slot in one call while
nothing else can happen (the slot form's "decided ahead" run: no SimPy event before the next
decision, no transfer ending).  A scheduler of the user's own, or a band with HARQ or a slot
trace, keeps the numpy path (with HARQ or a trace the policy's grants are still compiled,
:func:`grant_slot`; the HARQ draws stay numpy Generator calls of the keyed streams).

The numbers are the numpy path's bit for bit (our choice: a fast path must not move a result).
Every float is computed by the same IEEE operations in the same order (numba without
``fastmath``, so no reassociation and no fused multiply-add; ``error_model="numpy"`` so ``1 / 0``
is ``inf`` as numpy's); the integer rules (round robin's fill, the greedy fills, the counts of
the best marginal metrics and their tie-breaks) are the same rules written as loops, and the
``n`` best of a set are found by a heap merge instead of numpy's partition (the same set, so the
same threshold and counts).  ``tests/engine/test_band_compiled.py`` runs both paths on the same
scenarios and compares every grant and clock exactly.  Where the compiled rule would need an
assumption the data breaks (a NaN or ``-inf`` metric among the candidates, a client in the
buffers without bits), it says so (:data:`FALLBACK`) and that slot is decided by the numpy path.

The functions are compiled on first use (``cache=True``: numba keeps the machine code next to
this module, so a later process loads it instead of compiling); :func:`warm_up` compiles them
once per process, before the first round is timed.  Without numba (:data:`AVAILABLE` False) the
slot form runs the numpy path.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

numba: Any
try:  # numba is a declared dependency; without it the slot form keeps the numpy path
    import numba
except ImportError:  # pragma: no cover - an installation without numba
    numba = None

__all__ = ["AVAILABLE", "FALLBACK", "FINISH", "MAX_RATE", "PROPORTIONAL_FAIR", "ROUND_ROBIN", "YIELD", "enabled",
           "any_stale", "end_slot", "grant_slot", "note_fading", "policy_code", "run_slots", "scratch", "warm_up"]

#: Whether numba could be imported.
AVAILABLE = numba is not None

#: The policy codes the compiled functions take.
PROPORTIONAL_FAIR, ROUND_ROBIN, MAX_RATE = 0, 1, 2

#: :func:`run_slots`'s outcomes: the last slot it decided is over and rows finish at its end
#: (``FINISH``); SimPy has an event before the next decision, so the last slot's blocks leave the
#: buffers after a yield (``YIELD``); the next slot needs the numpy path (``FALLBACK``, nothing
#: decided for it); the slot cap of one call was reached, the run goes on (``MORE``).
FINISH, YIELD, FALLBACK, MORE = 0, 1, 2, 3

#: The most slots one :func:`run_slots` call decides (our choice: a round of 1,000 s at 0.5 ms
#: slots is 2e6 slots; the cap only hands control back to Python now and then, e.g. for an
#: interrupt, where no transfer can end because no client has a usable rate).
MAX_SLOTS_PER_CALL = 1 << 16

#: The factor of the buffers ``_need`` compares with (the numpy path's ``1.0 - 1e-12``).
NEED_FACTOR = 1.0 - 1e-12


def enabled() -> bool:
    """Whether the compiled path is used: numba is importable and ``SFL_SIM_SLOT_NUMPY`` is not
    set to 1 (a switch for the tests that compare both paths, and for debugging)."""
    return AVAILABLE and os.environ.get("SFL_SIM_SLOT_NUMPY", "") != "1"


def policy_code(policy: object) -> int | None:
    """The compiled code of a built-in policy (exactly its class), None for any other scheduler."""
    from sfl_sim.channel.link.scheduling import MaxRate, ProportionalFair, RoundRobin

    codes: dict[type, int] = {ProportionalFair: PROPORTIONAL_FAIR, RoundRobin: ROUND_ROBIN, MaxRate: MAX_RATE}
    return codes.get(type(policy))


def _njit(function: Any) -> Any:
    if numba is None:  # pragma: no cover
        return function
    return numba.njit(cache=True, error_model="numpy", nogil=True)(function)


# -- the n best of a set of rows (scheduling._take_best) -------------------------------------------

@_njit
def _value(kind: int, gain: np.ndarray, grow: np.ndarray, inv: np.ndarray, k: int, m: int) -> float:
    # kind 0: the marginal metric gain * (1 / T) (proportional fair); kind 1: the level -m
    if kind == 0:
        return gain[grow[k], m] * inv[k]
    return -float(m)


@_njit
def _sift_down(hv: np.ndarray, hk: np.ndarray, size: int, i: int) -> None:
    while True:
        left = 2 * i + 1
        if left >= size:
            return
        best = left
        right = left + 1
        if right < size and hv[right] > hv[left]:
            best = right
        if hv[best] > hv[i]:
            hv[i], hv[best] = hv[best], hv[i]
            hk[i], hk[best] = hk[best], hk[i]
            i = best
        else:
            return


@_njit
def _take_best(kind: int, gain: np.ndarray, grow: np.ndarray, inv: np.ndarray, mono: np.ndarray, lo: np.ndarray,
               hi: np.ndarray, count: int, out: np.ndarray, hv: np.ndarray, hk: np.ndarray,
               pos: np.ndarray) -> bool:
    """``scheduling._take_best``: per row ``k``, how many of its entries ``m`` in ``[lo_k, hi_k)``
    are among the ``count`` best values (ties: the lower ``m`` first, then the lower row), into
    ``out``.  The count-th best is found by a heap merge of the rows (each row's candidates in
    decreasing order: a row marked ``mono`` is non-increasing on its range, another is sorted by
    a scan for its largest remaining entry); the counts and the ties are then numpy's rule.
    False where a candidate is NaN or ``-inf`` (numpy's partition orders those otherwise)."""
    k_n = lo.size
    total = 0
    for k in range(k_n):
        r = hi[k] - lo[k]
        total += r if r > 0 else 0
    if count <= 0:
        for k in range(k_n):
            out[k] = 0
        return True
    if total <= count:
        for k in range(k_n):
            r = hi[k] - lo[k]
            out[k] = r if r > 0 else 0
        return True
    # candidates: any NaN or -inf refuses (numpy would rank it otherwise); a non-mono row is
    # checked in full, a mono row at both ends of its range
    for k in range(k_n):
        if hi[k] <= lo[k]:
            continue
        if mono[k]:
            a = _value(kind, gain, grow, inv, k, lo[k])
            b = _value(kind, gain, grow, inv, k, hi[k] - 1)
            if a != a or b != b or b == -np.inf:
                return False
        else:
            for m in range(lo[k], hi[k]):
                v = _value(kind, gain, grow, inv, k, m)
                if v != v or v == -np.inf:
                    return False
    # heap merge: hv/hk the heads (value, row); pos[k] the row's next entry (mono rows), or, for
    # a non-mono row, the count taken so far (its next head is its largest untaken entry)
    size = 0
    for k in range(k_n):
        if hi[k] > lo[k]:
            pos[k] = lo[k]
            if mono[k]:
                hv[size] = _value(kind, gain, grow, inv, k, lo[k])
            else:
                pos[k] = 0
                hv[size] = _nth_largest(kind, gain, grow, inv, k, lo[k], hi[k], 0)
            hk[size] = k
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(hv, hk, size, i)
    threshold = 0.0
    for _ in range(count):
        threshold = hv[0]
        k = hk[0]
        if mono[k]:
            pos[k] += 1
            more = pos[k] < hi[k]
            if more:
                hv[0] = _value(kind, gain, grow, inv, k, pos[k])
        else:
            pos[k] += 1
            more = pos[k] < hi[k] - lo[k]
            if more:
                hv[0] = _nth_largest(kind, gain, grow, inv, k, lo[k], hi[k], pos[k])
        if not more:
            size -= 1
            hv[0] = hv[size]
            hk[0] = hk[size]
        _sift_down(hv, hk, size, 0)
    # numpy's rule: every entry >= the threshold; where that is more than count, the entries
    # above it and the ties in column-major order (the lower m first, then the lower row)
    taken = 0
    for k in range(k_n):
        c = 0
        if mono[k]:
            m = lo[k]
            while m < hi[k] and _value(kind, gain, grow, inv, k, m) >= threshold:
                c += 1
                m += 1
        else:
            for m in range(lo[k], hi[k]):
                if _value(kind, gain, grow, inv, k, m) >= threshold:
                    c += 1
        out[k] = c
        taken += c
    if taken == count:
        return True
    taken = 0
    first, last = 1 << 62, 0
    for k in range(k_n):
        c = 0
        for m in range(lo[k], hi[k]):
            v = _value(kind, gain, grow, inv, k, m)
            if v > threshold:
                c += 1
            elif v == threshold:
                if m < first:
                    first = m
                if m + 1 > last:
                    last = m + 1
        out[k] = c
        taken += c
    rest = count - taken
    for m in range(first, last):
        for k in range(k_n):
            if rest <= 0:
                return True
            if lo[k] <= m < hi[k] and _value(kind, gain, grow, inv, k, m) == threshold:
                out[k] += 1
                rest -= 1
    return True


@_njit
def _nth_largest(kind: int, gain: np.ndarray, grow: np.ndarray, inv: np.ndarray, k: int, lo: int, hi: int,
                 nth: int) -> float:
    """The ``nth`` (from 0) largest of row ``k``'s values on ``[lo, hi)`` (a row not known to be
    non-increasing: a plain sort of a copy, rare)."""
    vals = np.empty(hi - lo)
    for m in range(lo, hi):
        vals[m - lo] = _value(kind, gain, grow, inv, k, m)
    vals.sort()
    return vals[vals.size - 1 - nth]


# -- the policies' grants (scheduling.py's grant_rbs) ----------------------------------------------

@_njit
def _round_robin_fill(n_rb: int, need: np.ndarray, turn: int, grant: np.ndarray, order: np.ndarray) -> None:
    """``scheduling._round_robin_fill`` into ``grant`` (``order`` scratch)."""
    k_n = need.size
    live = 0
    for k in range(k_n):
        grant[k] = 0
        if need[k] > 0:
            order[live] = k
            live += 1
    if live == 0:
        return
    shift = turn % live
    rolled = np.empty(live, dtype=np.int64)
    for i in range(live):
        rolled[i] = order[(i + shift) % live]
    left = n_rb
    while left > 0:
        wanting = 0
        for i in range(live):
            if grant[rolled[i]] < need[rolled[i]]:
                wanting += 1
        if wanting == 0:
            break
        share = left // wanting
        if share == 0:
            given = 0
            for i in range(live):
                k = rolled[i]
                if given >= left:
                    break
                if grant[k] < need[k]:
                    grant[k] += 1
                    given += 1
            break
        added = 0
        for i in range(live):
            k = rolled[i]
            if grant[k] < need[k]:
                add = need[k] - grant[k]
                if share < add:
                    add = share
                grant[k] += add
                added += add
        left -= added


@_njit
def _fill_in_order(n_rb: int, need: np.ndarray, order: np.ndarray, grant: np.ndarray) -> None:
    """``scheduling._fill_in_order`` into ``grant``."""
    for k in range(need.size):
        grant[k] = 0
    left = n_rb
    for i in range(order.size):
        if left <= 0:
            break
        k = order[i]
        g = need[k] if need[k] < left else left
        grant[k] = g
        left -= g


@_njit
def _grant(code: int, n_rb: int, need: np.ndarray, per_rb: np.ndarray, inv: np.ndarray, turn: int,
           gain: np.ndarray, grow: np.ndarray, usable: np.ndarray, mono: np.ndarray, has_cap: bool,
           caps: np.ndarray, grant: np.ndarray, s: Any) -> bool:
    """One slot's grants of policy ``code`` to the ``k`` clients with data (``need``, ``per_rb``,
    ``1 / T``, the hull's marginal rates ``gain[grow[k]]`` with their counts ``usable`` and
    ``mono``; ``caps`` the headroom where ``has_cap``), into ``grant``; ``s`` the scratch arrays.
    False: this slot needs the numpy path (see :func:`_take_best`)."""
    k_n = need.size
    lo, hi, add, pos, hv, hk, order, cap, ones, level_mono = s
    if code == PROPORTIONAL_FAIR:  # ProportionalFair.grant_rbs -> _tiered_grant
        for k in range(k_n):
            nk = need[k] if need[k] < n_rb else n_rb
            w = nk if nk < usable[k] else usable[k]
            if has_cap:
                c = caps[k]
                c = 1 if c < 1 else (n_rb if c > n_rb else c)
                w = min(nk, c)
                w = w if w < usable[k] else usable[k]
            lo[k] = 0
            hi[k] = w
        if not _take_best(0, gain, grow, inv, mono, lo[:k_n], hi[:k_n], n_rb, grant, hv, hk, pos):
            return False
        left = n_rb
        for k in range(k_n):
            left -= grant[k]
        if left > 0:
            for k in range(k_n):
                nk = need[k] if need[k] < n_rb else n_rb
                u = nk if nk < usable[k] else usable[k]
                lo[k] = grant[k]
                hi[k] = u if u > grant[k] else grant[k]
            if not _take_best(0, gain, grow, inv, mono, lo[:k_n], hi[:k_n], left, add, hv, hk, pos):
                return False
            left = n_rb
            for k in range(k_n):
                grant[k] += add[k]
                left -= grant[k]
        if left > 0:
            for k in range(k_n):
                nk = need[k] if need[k] < n_rb else n_rb
                lo[k] = grant[k]
                hi[k] = nk
            if not _take_best(1, gain, grow, inv, level_mono, lo[:k_n], hi[:k_n], left, add, hv, hk, pos):
                return False
            for k in range(k_n):
                grant[k] += add[k]
        return True
    if code == ROUND_ROBIN:  # RoundRobin.grant_rbs
        if not has_cap:
            _round_robin_fill(n_rb, need, turn, grant, order)
            return True
        for k in range(k_n):
            c = caps[k]
            c = 1 if c < 1 else (n_rb if c > n_rb else c)
            cap[k] = need[k] if need[k] < c else c
        _round_robin_fill(n_rb, cap[:k_n], turn, grant, order)
        left = n_rb
        live = 0
        for k in range(k_n):
            left -= grant[k]
            if need[k] > grant[k]:
                order[live] = k
                live += 1
        if left > 0 and live > 0:
            shift = turn % live
            rolled = np.empty(live, dtype=np.int64)
            for i in range(live):
                rolled[i] = order[(i + shift) % live]
            for i in range(live):
                k = rolled[i]
                lo[i] = grant[k]
                hi[i] = need[k] if need[k] < n_rb else n_rb
            if not _take_best(1, gain, grow, inv, level_mono, lo[:live], hi[:live], left, add, hv, hk, pos):
                return False
            for i in range(live):
                grant[rolled[i]] += add[i]
        return True
    # MaxRate.grant_rbs: greedy fill in decreasing rate per RB (a stable sort, ties the lower index)
    rank = np.argsort(-per_rb, kind="mergesort")
    if not has_cap:
        _fill_in_order(n_rb, need, rank, grant)
        return True
    for k in range(k_n):
        c = caps[k]
        c = 1 if c < 1 else (n_rb if c > n_rb else c)
        cap[k] = need[k] if need[k] < c else c
    _fill_in_order(n_rb, cap[:k_n], rank, grant)
    left = n_rb
    for k in range(k_n):
        left -= grant[k]
        cap[k] = need[k] - grant[k]
    _fill_in_order(left, cap[:k_n], rank, add)
    for k in range(k_n):
        grant[k] += add[k]
    return True


@_njit
def _marginal_row(hull: np.ndarray, r: int, gain: np.ndarray, k: int, usable: np.ndarray, mono: np.ndarray) -> None:
    """``scheduling._marginal`` of hull row ``r`` into ``gain[k]`` (gain ``r(m + 1) - r(m)``),
    ``usable[k]`` (the count of positive ones) and ``mono[k]`` (whether they are positive and
    non-increasing on the first ``usable``)."""
    n = hull.shape[1]
    u = 0
    for m in range(n):
        g = hull[r, 0] if m == 0 else hull[r, m] - hull[r, m - 1]
        gain[k, m] = g
        if g > 0:
            u += 1
    usable[k] = u
    ok = True
    for m in range(u):
        if not gain[k, m] > 0 or (m > 0 and gain[k, m] > gain[k, m - 1]):
            ok = False
            break
    mono[k] = ok


@_njit
def _marginals(hull: np.ndarray, rows: np.ndarray, gain: np.ndarray, usable: np.ndarray, mono: np.ndarray) -> None:
    """:func:`_marginal_row` of the hull rows ``rows``, into position ``k`` of each."""
    for k in range(rows.size):
        _marginal_row(hull, rows[k], gain, k, usable, mono)


def _scratch(k: int, n_rb: int) -> tuple[np.ndarray, ...]:
    size = max(k, 1)
    return (np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64),
            np.zeros(size, dtype=np.int64), np.zeros(size), np.zeros(size, dtype=np.int64),
            np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64), np.ones(size, dtype=np.int64),
            np.ones(size, dtype=np.bool_))


@_njit
def _grant_slot(code: int, n_rb: int, need: np.ndarray, per_rb: np.ndarray, average: np.ndarray, turn: int,
                hull: np.ndarray, hull_rows: np.ndarray, has_cap: bool, caps: np.ndarray, s: Any) -> np.ndarray:
    k_n = need.size
    grant = np.zeros(k_n, dtype=np.int64)
    inv = np.empty(k_n)
    for k in range(k_n):
        inv[k] = 1.0 / average[k]
    gain = np.zeros((k_n, n_rb))
    usable = np.zeros(k_n, dtype=np.int64)
    mono = np.ones(k_n, dtype=np.bool_)
    if code == PROPORTIONAL_FAIR:
        _marginals(hull, hull_rows, gain, usable, mono)
    grow = np.arange(k_n)
    if not _grant(code, n_rb, need, per_rb, inv, turn, gain, grow, usable, mono, has_cap, caps, grant, s):
        return grant[:0]
    return grant


def grant_slot(code: int, n_rb: int, need: np.ndarray, per_rb: np.ndarray, average: np.ndarray, turn: int,
               hull: np.ndarray, hull_rows: np.ndarray, caps: np.ndarray | None) -> np.ndarray | None:
    """The grants of one slot by the built-in policy ``code`` (as its ``grant_rbs``, bit for
    bit): ``need``, ``per_rb`` and ``average`` of the ``k`` clients with data; ``hull[hull_rows]``
    their concave rates (proportional fair); ``caps`` their headroom in RBs or None.  None where
    the slot needs the numpy path."""
    k = need.size
    has_cap = caps is not None
    got = _grant_slot(code, int(n_rb), np.ascontiguousarray(need, dtype=np.int64),
                      np.ascontiguousarray(per_rb, dtype=float), np.ascontiguousarray(average, dtype=float),
                      int(turn), hull, np.ascontiguousarray(hull_rows, dtype=np.int64), has_cap,
                      np.ascontiguousarray(caps if has_cap else np.zeros(0, dtype=np.int64), dtype=np.int64),
                      _scratch(k, n_rb))
    return None if got.size != k else got


# -- the slot loop while nothing else can happen (slot.SlotBand._slots / _decide / _end_slot) --------

@_njit
def _run_slots(code: int, n_rb: int, slot_s: float, j: int, peek: float, used_rb_s: float, w: float,
               rows: np.ndarray, left: np.ndarray, average: np.ndarray, energy: np.ndarray, book: np.ndarray,
               n_held: np.ndarray, top_bps: np.ndarray, tab: np.ndarray, tab_snr: np.ndarray, hull: np.ndarray,
               has_cap: bool, caps: np.ndarray, need_factor: float, max_slots: int,
               sent_rows: np.ndarray, sent_bits: np.ndarray, finishing: np.ndarray, s: Any, out_i: np.ndarray,
               out_f: np.ndarray, marg: Any) -> None:
    outcome, last, used_rb_s, n_sent, granted, n_fin = _run_loop(
        code, n_rb, slot_s, j, peek, used_rb_s, w, rows, left, average, energy, book, n_held, top_bps, tab,
        tab_snr, hull, has_cap, caps, need_factor, max_slots, sent_rows, sent_bits, finishing, s, marg)
    out_i[0] = outcome
    out_i[1] = last
    out_i[2] = n_sent
    out_i[3] = n_fin
    out_f[0] = used_rb_s
    out_f[1] = granted


@_njit
def _run_loop(code: int, n_rb: int, slot_s: float, j: int, peek: float, used_rb_s: float, w: float,
              rows: np.ndarray, left: np.ndarray, average: np.ndarray, energy: np.ndarray, book: np.ndarray,
              n_held: np.ndarray, top_bps: np.ndarray, tab: np.ndarray, tab_snr: np.ndarray, hull: np.ndarray,
              has_cap: bool, caps: np.ndarray, need_factor: float, max_slots: int,
              sent_rows: np.ndarray, sent_bits: np.ndarray, finishing: np.ndarray, s: Any, marg: Any) -> Any:
    k_n = rows.size
    need = np.zeros(k_n, dtype=np.int64)
    per_rb = np.zeros(k_n)
    inv = np.empty(k_n)
    grant = np.zeros(k_n, dtype=np.int64)
    gain, usable_of, mono_of, gain_gen, hull_gen = marg
    usable = np.zeros(k_n, dtype=np.int64)
    mono = np.ones(k_n, dtype=np.bool_)
    grow = rows  # the marginal rates are kept by row
    if code == PROPORTIONAL_FAIR:  # each row's, taken again where its hull was (the hulls do not change within a run)
        for k in range(k_n):
            r = rows[k]
            if gain_gen[r] != hull_gen[r]:
                _marginal_row(hull, r, gain, r, usable_of, mono_of)
                gain_gen[r] = hull_gen[r]
            usable[k] = usable_of[r]
            mono[k] = mono_of[r]
    if code == MAX_RATE:  # the rate per RB on the whole grid (the tables do not change within a run)
        for k in range(k_n):
            per_rb[k] = tab[n_rb - 1, 0, rows[k]] / n_rb
    decided = 0
    while True:
        for k in range(k_n):
            if not left[rows[k]] > 0:
                return FALLBACK, j, used_rb_s, 0, 0.0, 0
        if decided >= max_slots:
            return MORE, j, used_rb_s, 0, 0.0, 0
        # the need: the fewest RBs whose tabled rate empties the buffer (SlotBand._need)
        for k in range(k_n):
            r = rows[k]
            bits = left[r] * need_factor
            top = top_bps[r] * slot_s
            nk = n_rb if top > 0 else 0
            if top >= bits:
                for m in range(n_rb):
                    if tab[m, 0, r] * slot_s >= bits:
                        nk = m + 1
                        break
            need[k] = nk
            inv[k] = 1.0 / average[r]
        if not _grant(code, n_rb, need, per_rb, inv, j, gain, grow, usable, mono, has_cap, caps, grant, s):
            return FALLBACK, j, used_rb_s, 0, 0.0, 0
        # the grants' blocks, energy, record and averages (SlotBand._decide)
        n_sent = 0
        granted = 0
        for k in range(k_n):
            r = rows[k]
            g = grant[k]
            granted += g
            served = 0.0
            if g > 0:
                m = g - 1
                rate = tab[m, 0, r]
                block = rate * slot_s
                if left[r] < block:  # np.minimum(rate * slot_s, left)
                    block = left[r]
                energy[r] += tab[m, 1, r] * slot_s
                served = block / slot_s
                book[0, r] += g * slot_s
                book[1, r] += slot_s
                book[2, r] += block
                book[3, r] += 1.0
                book[4, r] += tab_snr[m, r] * slot_s
                sent_rows[n_sent] = r
                sent_bits[n_sent] = block
                n_sent += 1
            if code == PROPORTIONAL_FAIR:
                average[r] = (1.0 - w) * average[r] + w * served
        start = j * slot_s
        end = start + slot_s
        after = (j + 1) * slot_s
        next_decision = after if after > end else end
        decided += 1
        if not peek > next_decision:
            return YIELD, j, used_rb_s, n_sent, float(granted), 0
        # the slot is over before anything else happens (SlotBand._end_slot)
        used_rb_s += float(granted) * slot_s
        for i in range(n_sent):
            left[sent_rows[i]] -= sent_bits[i]
        n_fin = 0
        for k in range(k_n):
            r = rows[k]
            if left[r] <= 1e-9 and n_held[r] == 0:
                finishing[n_fin] = r
                n_fin += 1
        j += 1
        if n_fin:
            return FINISH, j - 1, used_rb_s, n_sent, float(granted), n_fin


def scratch(k: int, n_rb: int) -> tuple[np.ndarray, ...]:
    """The work arrays of :func:`run_slots` for up to ``k`` clients with data (kept by the band
    between calls: allocating them each call costs more than a slot's decision)."""
    size = max(k, 1)
    return (np.empty(size, dtype=np.int64), np.empty(size), np.empty(size, dtype=np.int64),
            np.zeros(6, dtype=np.int64), np.zeros(2)) + _scratch(k, n_rb)


def run_slots(code: int, n_rb: int, slot_s: float, j: int, peek: float, used_rb_s: float, w: float,
              rows: np.ndarray, left: np.ndarray, average: np.ndarray, energy: np.ndarray, book: np.ndarray,
              n_held: np.ndarray, top_bps: np.ndarray, tab: np.ndarray, tab_snr: np.ndarray, hull: np.ndarray,
              caps: np.ndarray | None, work: tuple[np.ndarray, ...] | None = None,
              marginals: tuple[np.ndarray, ...] | None = None,
              ) -> tuple[int, int, float, np.ndarray, np.ndarray, float, np.ndarray]:
    """Decide slots ``j, j + 1, ...`` of the clients of ``rows`` (every one with data) by policy
    ``code`` while SimPy's next event (``peek``) lies after the next decision and no transfer ends,
    updating the band's arrays in place (``left``, ``average``, ``energy``, ``book``) as
    :meth:`~sfl_sim.engine.band.slot.SlotBand._decide` and ``_end_slot`` do, slot by slot;
    ``work``: :func:`scratch` for at least ``rows.size`` clients (made here when None);
    ``marginals``: the band's per-row ``(gain, usable, mono, gain_gen, hull_gen)``, the hull's
    marginal rates kept between calls and taken again for a row whose ``hull_gen`` moved (made
    here, for this call only, when None).

    Returns ``(outcome, last slot, RB-seconds so far, its blocks' rows, their bits, its RBs
    granted, the rows that finish)``: ``FINISH`` (the last slot is over, its rows finish at its
    end), ``YIELD`` (the last slot's blocks leave the buffers after SimPy's events),
    ``FALLBACK`` (slot ``last`` not decided: the numpy path decides it), ``MORE`` (the cap of
    slots per call, slot ``last`` not decided yet)."""
    if work is None or work[0].size < rows.size:
        work = scratch(rows.size, n_rb)
    sent_rows, sent_bits, finishing, out_i, out_f = work[:5]
    if marginals is None:
        size = left.size
        marginals = (np.zeros((size, n_rb)), np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.bool_),
                     np.full(size, -1, dtype=np.int64), np.zeros(size, dtype=np.int64))
    has_cap = caps is not None
    _run_slots(code, n_rb, slot_s, j, peek, used_rb_s, w, rows, left, average, energy, book, n_held, top_bps,
               tab, tab_snr, hull, has_cap, caps if has_cap else _NO_CAPS, NEED_FACTOR, MAX_SLOTS_PER_CALL,
               sent_rows, sent_bits, finishing, work[5:], out_i, out_f, marginals)
    outcome, last, n_sent, n_fin = out_i[:4].tolist()
    used, granted = out_f.tolist()
    return outcome, last, used, sent_rows[:n_sent].copy(), sent_bits[:n_sent].copy(), granted, finishing[:n_fin]


_NO_CAPS = np.zeros(0, dtype=np.int64)


@_njit
def note_fading(rows: np.ndarray, fading: np.ndarray, seen: np.ndarray) -> bool:
    """Whether ``fading`` (the rows' draws now) differs from ``seen[rows]`` (NaN counts as
    different, as for ``numpy.array_equal``); where it does, ``seen[rows] = fading``."""
    changed = False
    for i in range(rows.size):
        if fading[i] != seen[rows[i]]:  # NaN differs from all
            changed = True
            break
    if changed:
        for i in range(rows.size):
            seen[rows[i]] = fading[i]
    return changed


@_njit
def any_stale(rows: np.ndarray, fading: np.ndarray, tab_fading: np.ndarray, hull_fading: np.ndarray,
              caps: np.ndarray, hulls: bool, headroom: bool) -> bool:
    """Whether some row's table (or hull, with ``hulls``; or headroom, with ``headroom``) is not of
    its fading now: the band's ``_table`` and ``_policy_inputs`` have work (NaN: never done)."""
    for r in rows:
        f = fading[r]
        if tab_fading[r] != f or (hulls and hull_fading[r] != f) or (headroom and caps[r] < 0):
            return True
    return False


@_njit
def end_slot(rows: np.ndarray, sent_rows: np.ndarray, sent_bits: np.ndarray, left: np.ndarray, in_: np.ndarray,
             n_held: np.ndarray) -> np.ndarray:
    """:meth:`~sfl_sim.engine.band.slot.SlotBand._end_slot`'s arrays: the blocks of the rows still
    in the buffers leave them; the rows (of ``rows``, in order) whose buffers are empty and no
    HARQ copy on its way back."""
    for i in range(sent_rows.size):
        if in_[sent_rows[i]]:
            left[sent_rows[i]] -= sent_bits[i]
    done = np.empty(rows.size, dtype=np.int64)
    n = 0
    for k in range(rows.size):
        r = rows[k]
        if left[r] <= 1e-9 and n_held[r] == 0:
            done[n] = r
            n += 1
    return done[:n]


_warm = False


def warm_up() -> None:
    """Compile (or load from numba's cache) every compiled function once per process, on a tiny
    band of each policy, so no round pays for it."""
    global _warm
    if _warm or not AVAILABLE:
        return
    _warm = True
    n_rb, k = 3, 2
    tab = np.ones((n_rb, 2, k)) * np.arange(1, n_rb + 1, dtype=float)[:, None, None]
    hull = np.ones((k, n_rb)) * np.arange(1, n_rb + 1, dtype=float)
    rows = np.arange(k, dtype=np.int64)
    for code in (PROPORTIONAL_FAIR, ROUND_ROBIN, MAX_RATE):
        for caps in (None, np.full(k, 2, dtype=np.int64)):
            grant_slot(code, n_rb, np.full(k, 2, dtype=np.int64), np.ones(k), np.ones(k), 0, hull, rows, caps)
            run_slots(code, n_rb, 1e-3, 0, 0.0, 0.0, 0.01, rows, np.full(k, 1e3), np.ones(k), np.zeros(k),
                      np.zeros((5, k)), np.zeros(k, dtype=np.int64), np.full(k, 3.0), tab, np.zeros((n_rb, k)),
                      hull, caps)
    end_slot(rows, rows[:1], np.ones(1), np.full(k, 1e3), np.ones(k, dtype=np.bool_), np.zeros(k, dtype=np.int64))
    note_fading(rows, np.ones(k), np.zeros(k))
    any_stale(rows, np.ones(k), np.ones(k), np.ones(k), np.ones(k, dtype=np.int64), True, True)
