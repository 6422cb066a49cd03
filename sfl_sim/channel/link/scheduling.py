"""MAC scheduling policies: which clients get how many resource blocks now.

A scheduler (kind ``scheduler``, :data:`SCHEDULERS`, protocol
:class:`sfl_sim.channel.protocols.Scheduler`) is a pure function of what the engine tells it; the
engine (:mod:`sfl_sim.engine.band`) owns the band, the buffers and the clock, and asks it in
one of two forms:

- :meth:`~sfl_sim.channel.protocols.Scheduler.fluid_rbs`: the processor-sharing split of the
  ``n_rb`` resource blocks among the clients that have data (real numbers of RBs), asked whenever a
  transfer starts or ends (fidelity ``fluid``);
- :meth:`~sfl_sim.channel.protocols.Scheduler.grant_rbs`: one slot's integer grants, given each
  client's need (the RBs that would empty its buffer, 0 for an empty buffer), its rate per RB and
  its averaged throughput (fidelity ``slot``).

Two optional inputs, passed by the band only to a method that declares them (:func:`declares`;
the :class:`~sfl_sim.channel.protocols.Scheduler` protocol): ``rates_bps`` (k, n_rb), each client's
rate on ``1 .. n_rb`` RBs at its channel now, made concave (:func:`concave_rates`), and
``headroom_rb`` (k,), its power headroom in RBs (TS 38.213 clause 7.7.1: the most RBs it can send
on at its nominal power, :meth:`~sfl_sim.channel.link.power_control.OpenLoopPowerControl.headroom_rbs`;
``n_rb`` under fixed power, which has no nominal power per RB).

Every policy here is work-conserving: no RB goes to a client with nothing to send, and no RB is
left idle while a client with data could use it.  Slot grants are capped at the client's need
and its headroom, and the RBs a capped client leaves go to the next clients in the policy's
order (OFDMA within a slot); RBs that every client's headroom leaves over go on beyond the
headroom (the client then sends at ``P_CMAX``, its power per RB falling) by the policy's rule:
round robin to the lowest totals, max rate to the best rate, proportional fair by its metric.
Our reading: a 5G scheduler holds a UE to its power headroom while another UE can use the RBs,
and would not leave the band idle to do it.

- ``static``: :class:`StaticScheduler`, today's per-round split of ``cell.allocation``; the engine
  asks it nothing (the band is split once per round, whoever is sending).
- ``round_robin``: :class:`RoundRobin`, equal RBs to every client with data.
- ``proportional_fair``: :class:`ProportionalFair`, each RB to the best marginal metric
  ``(r_k(m + 1) - r_k(m)) / T_k`` (rates on the client's RBs over its exponentially averaged
  throughput): the band to the best ``r_k / T_k`` when rates are linear in the RBs, split when
  they are concave (a fixed power spread over more RBs).
- ``max_rate``: :class:`MaxRate`, the whole band to the best rate per RB.

Fluid forms.  Round-robin's fluid form is exact processor sharing (``n_rb / n`` RBs each, clipped
by the headroom).  Max-rate's is the whole band to the best rate per RB (exact on a flat
channel).  Proportional fair's fluid form is its long-run share on a channel that does not change
within a transfer: the split maximising ``sum_k log r_k(x_k)`` over ``sum_k x_k = n_rb`` on the
same concave rates and headroom (:func:`proportional_fair_split`), the equal split when rates are
linear in the RBs; it leaves out the averaging transient (the slot form serves one client at a
time until the averages settle).  On the two-client case of ``tests/engine/test_scheduler.py``
(rates linear in the RBs, one client alone for 0.2 s, then both; 0.8 and 1.0 s in the fluid
form) the slot form ends the first client 3, 34 and 142 ms later for ``t_c`` = 10, 100 and 1000
slots (the newcomer, with ``T = 0``, holds the band until its average catches up) and the last
one within a slot of the fluid form.  Four clients uploading 1 MB together on a flat channel
(``tests/engine/test_scheduler_headroom.py``: no fading, Shannon rate, 20 MHz, clients at 100,
200, 300 and 400 m; fixed power): round robin 215.0 ms in both forms, proportional fair 217.0 ms
slot against 216.5 ms fluid (before the marginal rule the slot form was TDMA, 274.5 ms, +28 %);
all four at 250 m, 196.5 against 196.0 ms for both.  Open-loop power control (``P0`` -90 dBm,
``alpha`` 1, headrooms 51, 6, 1 and 1 RBs at those distances): round robin 228.5 against 228.3 ms,
proportional fair 229.5 against 229.5 ms (the headroom holds the far clients to a few RBs while
the near one sends; without it both forms were 222 ms, and the slot form of proportional fair
277.5 ms).  Both forms see the same fading, the round link's by ``cell.coherence``
(:mod:`sfl_sim.engine.band`).

The resource grid: :class:`ResourceGrid` (numerology ``mu``: subcarrier spacing ``15 * 2^mu``
kHz, TS 38.211 clause 4.2 Table 4.2-1; slot ``1 ms / 2^mu``, TS 38.211 clause 4.3.2; the
number of RBs of a channel from TS 38.101-1 Table 5.3.2-1, :func:`~.resource_grid.n_rb`).
"""
from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import numpy as np

from sfl_sim.channel.link.resource_grid import (
    N_RB_FR1,
    SUBCARRIERS_PER_RB,
    n_rb,
    slot_duration_s,
    subcarrier_spacing_hz,
)
from sfl_sim.channel.protocols import Scheduler
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, Field, ParamsModel
from sfl_sim.kit.registry import Registry

__all__ = ["SCHEDULERS", "NUMEROLOGIES", "Fidelity", "ResourceGrid", "StaticScheduler", "RoundRobin",
           "ProportionalFair", "MaxRate", "MAX_LATENCY_SLOTS", "MAX_TIME_CONSTANT_SLOTS", "check_numerology",
           "concave_rates", "declares", "equal_rbs", "is_dynamic", "linear_rates", "needed_rbs", "needed_rbs_table",
           "proportional_fair_split"]

SCHEDULERS = Registry("scheduler", protocol=Scheduler)

#: The numerologies ``mu`` whose subcarrier spacing ``15 * 2^mu`` kHz TS 38.101-1 Table 5.3.2-1
#: (FR1) gives resource-block counts for (15, 30 and 60 kHz).
NUMEROLOGIES: tuple[int, ...] = tuple(int(round(np.log2(scs / 15e3))) for scs in N_RB_FR1)

#: The most slots any one grant latency (scheduling request, buffer status report, K2) may be: our
#: choice, 640 slots (640 ms at 15 kHz, 160 ms at 60 kHz), far beyond any latency a cell is set up
#: with; it keeps a typo such as 1e12 (a 1.5e9 s round) from being taken as a physical delay.
MAX_LATENCY_SLOTS = 640

#: The longest throughput-averaging time constant of proportional fair: our choice, 1e6 slots (1000 s
#: at 15 kHz, longer than any run's transfers), so ``1/t_c`` stays a positive weight (``.inf`` would
#: make it 0: an average that never moves).
MAX_TIME_CONSTANT_SLOTS = 1e6

Fidelity = Literal["fluid", "slot"]
"""When the engine asks a scheduler: whenever a transfer starts or ends (``fluid``), or every slot."""


def check_numerology(mu: object) -> int:
    """``mu`` as an int, or ``ValueError`` with one line naming it and the allowed values."""
    if isinstance(mu, bool) or not isinstance(mu, (int, np.integer)) or int(mu) not in NUMEROLOGIES:
        raise ValueError(f"cell.numerology: got {mu!r}; allowed: {', '.join(map(str, NUMEROLOGIES))} (subcarrier "
                         f"spacing 15 * 2^mu kHz with a TS 38.101-1 Table 5.3.2-1 column, FR1)")
    return int(mu)


@dataclass(frozen=True)
class ResourceGrid:
    """The resource grid of one direction's channel.

    Parameters
    ----------
    numerology : int
        ``mu`` (0, 1 or 2).
    bandwidth_hz : float
        Channel bandwidth, one of TS 38.101-1 Table 5.3.2-1's at that spacing.

    Raises
    ------
    ValueError
        One line for an unknown numerology or a bandwidth with no row.
    """

    numerology: int
    bandwidth_hz: float

    def __post_init__(self) -> None:
        check_numerology(self.numerology)
        n_rb(self.bandwidth_hz, self.scs_hz)  # refuses a bandwidth the table lacks

    @property
    def scs_hz(self) -> float:
        """Subcarrier spacing ``15 kHz * 2^mu`` (TS 38.211 Table 4.2-1), Hz."""
        return subcarrier_spacing_hz(self.numerology)

    @property
    def slot_s(self) -> float:
        """Slot ``1 ms / 2^mu`` (TS 38.211 clause 4.3.2: 2^mu slots per 1 ms subframe), s."""
        return slot_duration_s(self.numerology)

    @property
    def n_rb(self) -> int:
        """Resource blocks of the channel (TS 38.101-1 Table 5.3.2-1)."""
        return n_rb(self.bandwidth_hz, self.scs_hz)

    @property
    def rb_hz(self) -> float:
        """Bandwidth one resource block occupies, ``12 * SCS`` (TS 38.211 clause 4.4.4.1), Hz."""
        return SUBCARRIERS_PER_RB * self.scs_hz

    @property
    def hz_per_rb(self) -> float:
        """The channel's bandwidth per resource block, ``B / N_RB``, Hz: ``m`` RBs are the share
        ``m B / N_RB`` of the channel, the guard bands spread over the RBs as they are over
        ``cell.allocation``'s shares of ``B`` (so round-robin with the whole cohort sending is the
        equal split, to rounding); the link budget rates that share on its ``m 12 SCS`` Hz of
        resource blocks (:mod:`sfl_sim.channel.link.budget`, TS 38.306 clause 4.1.2), and open-loop
        power control counts it back as ``m`` RBs
        (:func:`~sfl_sim.channel.link.resource_grid.share_resource_blocks`)."""
        return self.bandwidth_hz / self.n_rb


def needed_rbs(buffer_bits: np.ndarray, rate_per_rb_bps: np.ndarray, slot_s: float) -> np.ndarray:
    """RBs that would empty each buffer in one slot, ``ceil(bits / (r_rb * slot))`` (0 for an empty
    buffer; a client with rate 0 needs none: it cannot use any)."""
    bits = np.asarray(buffer_bits, dtype=float)
    per_rb = np.asarray(rate_per_rb_bps, dtype=float) * slot_s
    need = np.zeros(bits.shape, dtype=np.int64)
    live = (bits > 0) & (per_rb > 0)
    need[live] = np.ceil(bits[live] / per_rb[live] * (1.0 - 1e-12)).astype(np.int64)
    return np.maximum(need, live.astype(np.int64))


def equal_rbs(n_rb: int, rate_per_rb_bps: np.ndarray) -> np.ndarray:
    """``n_rb / n`` resource blocks to each of the ``n`` clients of ``rate_per_rb_bps`` (fractional:
    the fluid form's equal split)."""
    n = np.asarray(rate_per_rb_bps).size
    return np.full(n, n_rb / n) if n else np.zeros(0)


def _fill_in_order(n_rb: int, need_rb: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Grants in ``order``: each client up to its need while RBs are left (the greedy fill)."""
    grant = np.zeros(need_rb.shape, dtype=np.int64)
    left = int(n_rb)
    for k in order.tolist():
        if left <= 0:
            break
        g = min(int(need_rb[k]), left)
        grant[k] = g
        left -= g
    return grant


def declares(method: object, name: str) -> bool:
    """True when ``method`` (a scheduler's ``grant_rbs`` or ``fluid_rbs``) declares a parameter
    ``name`` (``rates_bps``, ``headroom_rb``): the band passes those inputs only to a method that
    takes them, so a scheduler written before them runs unchanged."""
    function = getattr(method, "__func__", method)  # a method's signature is its class's: asked once
    try:
        return _declares(function, name)
    except TypeError:  # an unhashable callable: asked each time
        return _declares.__wrapped__(function, name)


@functools.lru_cache(maxsize=256)
def _declares(function: Any, name: str) -> bool:
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def linear_rates(n_rb: int, rate_per_rb_bps: np.ndarray) -> np.ndarray:
    """The rate table of rates linear in the RBs: ``rate_per_rb * (m + 1)`` on ``m + 1`` RBs,
    shape (k, n_rb) (what a policy assumes when the band gives no table)."""
    per_rb = np.asarray(rate_per_rb_bps, dtype=float).reshape(-1, 1)
    return per_rb * np.arange(1, int(n_rb) + 1, dtype=float)


def concave_rates(rates_bps: np.ndarray) -> np.ndarray:
    """The least concave majorant of each row of ``rates_bps`` (the rate on ``m + 1`` RBs, shape
    (k, n_rb)) over ``m = 0 .. n_rb`` with ``r(0) = 0``, at ``m = 1 .. n_rb``.

    Time-sharing two grant sizes over slots reaches any point of the chord between them, so the
    majorant is the rate a client reaches on average on ``m`` RBs; it is the table itself where the
    table is concave already (Shannon's rate at a fixed power: the power spread over more RBs), and
    lifts the dips an MCS table's steps make (its SINR falls below a step as the power spreads).
    Rows already concave are left as they are (one vectorised check); the others go through the
    monotone chain (Andrew's algorithm), a loop per such row: called once per fading draw.
    """
    rates = np.array(rates_bps, dtype=float, ndmin=2)
    k, n = rates.shape
    if n == 0 or k == 0:
        return rates
    gain = np.diff(rates, axis=1, prepend=0.0)
    # a concave row has non-increasing gains (tolerance: the rounding of a linear table)
    bent = np.flatnonzero((np.diff(gain, axis=1) > 1e-9 * np.abs(gain[:, 1:]).clip(min=1.0)).any(axis=1))
    xs = np.arange(n + 1, dtype=float)
    for row in bent.tolist():
        ys = np.concatenate(([0.0], rates[row]))
        hull = [0]
        for i in range(1, n + 1):
            while len(hull) >= 2:
                i0, i1 = hull[-2], hull[-1]
                # drop i1 when it lies on or below the chord from i0 to i
                if (ys[i1] - ys[i0]) * (i - i0) <= (ys[i] - ys[i0]) * (i1 - i0):
                    hull.pop()
                else:
                    break
            hull.append(i)
        rates[row] = np.interp(xs[1:], xs[hull], ys[hull])
    return rates


def needed_rbs_table(buffer_bits: np.ndarray, rates_bps: np.ndarray, slot_s: float) -> np.ndarray:
    """RBs that would empty each buffer in one slot by the rate table ``rates_bps`` (the rate on
    ``m + 1`` RBs, shape (k, n_rb)): the fewest ``m`` with ``r(m) * slot >= bits``, ``n_rb`` when
    none does (0 for an empty buffer or a client with no rate on any RB count)."""
    bits = np.asarray(buffer_bits, dtype=float)
    per_slot = np.asarray(rates_bps, dtype=float) * slot_s
    enough = per_slot >= (bits * (1.0 - 1e-12))[:, None]
    need = np.where(enough.any(axis=1), enough.argmax(axis=1) + 1, per_slot.shape[1]).astype(np.int64)
    return np.where((bits > 0) & (per_slot > 0).any(axis=1), need, 0)


def _take_best(metric: np.ndarray, lo: np.ndarray, hi: np.ndarray, count: int) -> np.ndarray:
    """Per row, how many of its entries ``m`` in ``[lo, hi)`` are among the ``count`` best of
    ``metric`` (k, n); each row's metric is non-increasing in ``m`` over its range, so a row's
    best are a prefix of it.  Ties: the lower ``m`` first, then the lower row (a level filled
    row by row before the next).  A handful of vectorised operations.

    The best usually lie in the first few columns (``k`` clients sharing ``n`` RBs a few each):
    once the entries of the first ``w`` columns that beat every entry beyond them number
    ``count``, the count-th best is above everything beyond, ties included, and the search runs
    on those ``w`` columns alone (the same answer, whatever the order within a row); ``w``
    doubles from 2 until it holds.
    """
    if count <= 0:
        return np.zeros(lo.shape, dtype=np.int64)
    room = np.maximum(hi - lo, 0)
    if int(room.sum()) <= count:
        return room.astype(np.int64)
    cols = np.arange(metric.shape[1])
    allowed = cols < hi[:, None]
    if lo.any():
        allowed &= cols >= lo[:, None]
    values = np.where(allowed, metric, -np.inf)
    width = 2
    while width < cols.size:
        head = values[:, :width]
        if int(np.count_nonzero(head > values[:, width:].max())) >= count:
            return _best_of(head, count)
        width *= 2
    return _best_of(values, count)


def _best_of(values: np.ndarray, count: int) -> np.ndarray:
    """Per row, how many of ``values`` (k, w; ``-inf`` where not allowed, each row non-increasing
    where allowed, at least ``count`` allowed in all) are among the ``count`` best; ties at the
    count-th best: the lower column first, then the lower row."""
    flat = values.ravel()
    threshold = np.partition(flat, flat.size - count)[flat.size - count]  # the count-th best
    at_least = values >= threshold
    take = at_least.sum(axis=1)
    if int(take.sum()) == count:  # no tie at the threshold to break (the usual case)
        return take.astype(np.int64)
    # the ties at the threshold, lower m first then lower row: column-major order
    take = (values > threshold).sum(axis=1)
    tie = (values == threshold).T
    first = np.cumsum(tie.ravel()).reshape(tie.shape) <= count - int(take.sum())
    return (take + (tie & first).sum(axis=0)).astype(np.int64)


def _water_fill(offset: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_rb: float) -> np.ndarray:
    """The real split ``x_k = lo_k + sum_{lo_k <= m < hi_k} clip(mu - offset[k, m], 0, 1)`` with
    ``sum_k x_k = n_rb``, solved exactly for the level ``mu`` (``offset`` non-decreasing along
    each row by at least 1 a step; ``sum lo <= n_rb <= sum hi``).

    With ``offset[k, m] = r_k(m) / (r_k(m + 1) - r_k(m))`` it is the proportional-fair optimum on
    the piecewise-linear rates (see :func:`proportional_fair_split`); with ``offset[k, m] = m``
    the equal split clipped to ``[lo, hi]`` (round robin's)."""
    cols = np.arange(offset.shape[1])
    free = (cols >= lo[:, None]) & (cols < hi[:, None])
    want = float(n_rb) - float(lo.sum())
    if want <= 0 or not free.any():
        return lo.astype(float)
    # only segments starting below U = (the ceil(want)-th smallest offset) + 1 can be in use: at
    # mu = U those ceil(want) segments are full, so X(U) >= want and mu <= U
    a = offset[free]
    j = min(math.ceil(want - 1e-9), a.size)
    a = np.sort(a[a < np.partition(a, j - 1)[j - 1] + 1.0])
    up = a + 1.0
    # X(mu) = sum_i clip(mu - a_i, 0, 1), piecewise linear and non-decreasing: evaluate it at
    # every breakpoint (the a_i and a_i + 1, merged) and interpolate in the one interval where it
    # crosses ``want``.  At a breakpoint p, X(p) = sum_{a_i <= p} (p - a_i) - sum_{a_i + 1 <= p} (p - a_i - 1);
    # the merge counts each side's breakpoints up to p (a tie counted in part adds p - a_i = 0)
    both = np.concatenate((a, up))
    order = np.argsort(both, kind="stable")
    points = both[order]
    below = np.cumsum(order < a.size)
    below_up = np.arange(1, points.size + 1) - below
    sums, sums_up = np.concatenate(([0.0], np.cumsum(a))), np.concatenate(([0.0], np.cumsum(up)))
    level = (below * points - sums[below]) - (below_up * points - sums_up[below_up])
    j = int(np.searchsorted(level, want - 1e-12 * max(want, 1.0), side="left"))
    if j >= points.size:
        mu = float(points[-1])
    elif j == 0 or level[j] <= level[j - 1]:
        mu = float(points[j])
    else:
        mu = float(points[j - 1] + (want - level[j - 1]) * (points[j] - points[j - 1]) / (level[j] - level[j - 1]))
    part = np.where(free, np.clip(mu - offset, 0.0, 1.0), 0.0).sum(axis=1)
    total = part.sum()
    return lo + (part * (want / total) if total > 0 else part)


def _caps(n_rb: int, size: int, headroom_rb: np.ndarray | None) -> np.ndarray:
    """Each client's headroom in RBs within ``[1, n_rb]`` (``n_rb`` where none is given)."""
    if headroom_rb is None:
        return np.full(size, int(n_rb), dtype=np.int64)
    return np.clip(np.asarray(headroom_rb, dtype=np.int64), 1, int(n_rb))


def _tiered_grant(n_rb: int, metric: np.ndarray, usable: np.ndarray, need: np.ndarray,
                  cap: np.ndarray | None) -> np.ndarray:
    """One slot's grants by ``metric`` (k, n_rb; non-increasing along each row where it is used) in
    three tiers (our reading of headroom-limited scheduling, TS 38.213 clause 7.7): the RBs within
    each client's need, power headroom and useful RBs (``usable``: a positive marginal rate) go
    first, best metric first; what they leave goes on by the metric beyond the headroom (the
    client then sends at ``P_CMAX``, its power spread thinner); what is still left (RBs that add no
    rate) to the lowest totals, so no RB lies idle while a client has data (work-conserving).
    ``cap`` None: no headroom below ``n_rb``."""
    n = metric.shape[1]
    need = np.minimum(need, n)
    within = np.minimum(need, usable) if cap is None else np.minimum(np.minimum(need, cap), usable)
    grant = _take_best(metric, np.zeros_like(need), within, n_rb)
    left = int(n_rb) - int(grant.sum())
    if left > 0:
        grant = grant + _take_best(metric, grant, np.maximum(np.minimum(need, usable), grant), left)
        left = int(n_rb) - int(grant.sum())
    if left > 0:
        grant = grant + _take_best(np.broadcast_to(-np.arange(n, dtype=float), metric.shape), grant, need, left)
    return grant


def _tiered_split(n_rb: int, offset: np.ndarray, usable: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """The fluid form of :func:`_tiered_grant`: the real split of :func:`_water_fill` within each
    client's headroom and useful RBs while they hold the band, beyond the headroom when they do
    not, and the RBs of no use to the lowest totals."""
    hi = np.minimum(cap, usable)
    if hi.sum() >= n_rb:
        return _water_fill(offset, np.zeros_like(hi), hi, n_rb)
    if usable.sum() >= n_rb:
        return _water_fill(offset, hi, usable, n_rb)
    n = offset.shape[1]
    return _water_fill(np.broadcast_to(np.arange(n, dtype=float), offset.shape), usable,
                       np.full_like(usable, n), n_rb)


def _marginal(rates_bps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The marginal rate of each RB, ``r(m + 1) - r(m)`` (k, n_rb), and each row's count of
    positive ones (the RBs that add rate: a prefix of the row, the rates being concave)."""
    rates = np.asarray(rates_bps, dtype=float)
    gain = np.empty(rates.shape)  # np.diff with prepend 0, the same numbers in two operations
    if rates.shape[1]:
        gain[:, 0] = rates[:, 0]
        np.subtract(rates[:, 1:], rates[:, :-1], out=gain[:, 1:])
    return gain, np.count_nonzero(gain > 0, axis=1)


def proportional_fair_split(n_rb: int, rates_bps: np.ndarray, headroom_rb: np.ndarray | None = None) -> np.ndarray:
    """The proportional-fair optimum: ``x`` maximising ``sum_k log r_k(x_k)`` over ``sum_k x_k = n_rb``
    (real RBs, ``r_k`` piecewise linear between the table's RB counts), within the headroom tiers
    of :func:`_tiered_split`.

    ``rates_bps`` (k, n_rb) is each client's rate on ``m + 1`` RBs, concave in ``m``
    (:func:`concave_rates`).  On the segment from ``m`` to ``m + 1`` RBs the KKT condition
    ``r'_k(x) / r_k(x) = lambda`` gives ``x = m + 1/lambda - r_k(m) / g_km`` (``g_km`` the segment's
    slope), so ``x_k = sum_m clip(mu - r_k(m) / g_km, 0, 1)`` with ``mu = 1 / lambda``, solved for
    ``mu`` exactly (:func:`_water_fill`).  Rates linear in the RBs give ``n_rb / n`` each."""
    rates = np.asarray(rates_bps, dtype=float)
    gain, usable = _marginal(rates)
    before = np.concatenate((np.zeros((rates.shape[0], 1)), rates[:, :-1]), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        offset = np.where(gain > 0, before / np.where(gain > 0, gain, 1.0), np.inf)
    return _tiered_split(n_rb, offset, usable, _caps(n_rb, rates.shape[0], headroom_rb))


def is_dynamic(scheduler: object) -> bool:
    """Whether ``scheduler`` (a built scheduler or its class) hands out the band itself: its class
    attribute ``dynamic`` (:class:`~sfl_sim.channel.protocols.Scheduler`).  The one place the
    question is answered; a class that lacks the attribute counts as dynamic here (the band's
    checks apply to it) and is refused when the run is built."""
    cls = scheduler if isinstance(scheduler, type) else type(scheduler)
    return bool(getattr(cls, "dynamic", True))


class _Dynamic(Component):
    """Shared by the dynamic schedulers: the fidelity, the grant latency and the (unused)
    throughput average."""

    #: False: the engine keeps ``cell.allocation``'s per-round split and asks nothing.
    dynamic: ClassVar[bool] = True
    #: True where the fluid split is ``n_rb / n`` each whatever the rates (the band need not ask).
    fluid_equal_shares: ClassVar[bool] = False

    class Params(ParamsModel):
        """What every dynamic scheduler takes: the engine's fidelity and the uplink grant latency."""

        fidelity: Annotated[Fidelity, Doc(
            "fluid: shares change when a transfer starts or ends (processor sharing); slot: a decision "
            "every slot, transport blocks and HARQ copies")] = "fluid"
        scheduling_request_slots: Annotated[int, Field(ge=0, le=MAX_LATENCY_SLOTS), Doc(
            "Slots from a transfer's first bit in the buffer to its scheduling request at the base station, "
            "in [0, 640] (the three latencies are waited once, in sum, before a transfer's first grant)")] = 0
        buffer_status_report_slots: Annotated[int, Field(ge=0, le=MAX_LATENCY_SLOTS), Doc(
            "Slots for the buffer status report the scheduler sizes the grants by, in [0, 640]")] = 0
        k2_slots: Annotated[int, Field(ge=0, le=MAX_LATENCY_SLOTS), Doc(
            "K2: slots from the uplink grant (DCI) to the PUSCH it schedules (TS 38.214 clause 6.1.2.1), "
            "in [0, 640]")] = 0

        retired: ClassVar[Mapping[str, str]] = {"fading_per_slot": (
            "the setting is gone: an i.i.d. fading draw every slot is a Doppler no client has, e.g. 250 km/h at "
            "3.5 GHz with 0.5 ms slots; every fidelity now sees the fading of cell.coherence, the static split's")}

    params: Params

    @property
    def fidelity(self) -> Fidelity:
        """When the engine asks: ``fluid`` or ``slot`` (the ``fidelity`` parameter)."""
        return self.params.fidelity

    def grant_latency_slots(self) -> int:
        """Slots a new transfer waits before its first grant (SR + BSR + K2)."""
        p = self.params
        return p.scheduling_request_slots + p.buffer_status_report_slots + p.k2_slots

    def average_bps(self, average_bps: np.ndarray, served_bps: np.ndarray) -> np.ndarray:
        """The averaged throughputs after one slot serving ``served_bps`` (unchanged: only
        proportional fair keeps an average)."""
        return np.asarray(average_bps, dtype=float)


@SCHEDULERS.register("static")
class StaticScheduler(Component):
    """Today's per-round split (``cell.allocation``), fixed for the whole round: the default.

    The engine asks it nothing: each client keeps its ``cell.allocation`` share while it sends and
    the share lies idle while it does not.  Its policy methods give the same picture in RBs (an
    equal integer share of the band to every client named, held whether it sends or not), which
    is not work-conserving: that is the point of the other schedulers.
    """

    dynamic: ClassVar[bool] = False
    #: Never asked (the engine keeps the per-round split); stated for the protocol.
    fidelity: ClassVar[Fidelity] = "fluid"
    fluid_equal_shares: ClassVar[bool] = True

    def grant_latency_slots(self) -> int:
        """0: never asked (the per-round split waits for no grant)."""
        return 0

    def fluid_rbs(self, n_rb: int, rate_per_rb_bps: np.ndarray) -> np.ndarray:
        """``n_rb / n`` to each of the ``n`` clients named."""
        return equal_rbs(n_rb, rate_per_rb_bps)

    def grant_rbs(self, n_rb: int, need_rb: np.ndarray, rate_per_rb_bps: np.ndarray,
                  average_bps: np.ndarray, turn: int) -> np.ndarray:
        """``floor(n_rb / n)`` to each client with data, ``n`` the clients named."""
        need = np.asarray(need_rb, dtype=np.int64)
        share = int(n_rb) // max(need.size, 1)
        return np.where(need > 0, share, 0).astype(np.int64)

    def average_bps(self, average_bps: np.ndarray, served_bps: np.ndarray) -> np.ndarray:
        """Unchanged: no average is kept."""
        return np.asarray(average_bps, dtype=float)


@SCHEDULERS.register("round_robin")
class RoundRobin(_Dynamic):
    """Equal resource blocks to every client with data (processor sharing in the fluid form).

    Slot grants: ``floor(n_rb / n)`` each, capped at the client's need and its power headroom
    (what a capped client leaves is split again among the others); the remainder, one RB each,
    goes to the clients in turn starting at position ``turn mod n`` of the clients with data, so
    over ``n`` slots each is first once.  With more clients than RBs, the ``n_rb`` clients from that
    position get one each.  RBs every client's headroom leaves over go on to the lowest totals
    (beyond the headroom: the band is never idle while a client has data).  The fluid form is the
    same rule on real RBs: ``n_rb / n`` each, or ``min(headroom_k, level)`` where a headroom binds
    (``max(headroom_k, level)`` when every client is held at its headroom).
    """

    #: The fluid split is ``n_rb / n`` each whatever the rates, where no headroom is below it.
    fluid_equal_shares: ClassVar[bool] = True

    def fluid_rbs(self, n_rb: int, rate_per_rb_bps: np.ndarray, *,
                  headroom_rb: np.ndarray | None = None) -> np.ndarray:
        """``n_rb / n`` to each of the ``n`` clients (all have data), clipped by the headroom."""
        n = np.asarray(rate_per_rb_bps).size
        cap = _caps(n_rb, n, headroom_rb)
        if headroom_rb is None or n == 0 or cap.min() * n >= n_rb:
            return equal_rbs(n_rb, rate_per_rb_bps)
        offset = np.broadcast_to(np.arange(int(n_rb), dtype=float), (n, int(n_rb)))
        return _tiered_split(n_rb, offset, np.full(n, int(n_rb), dtype=np.int64), cap)

    def grant_rbs(self, n_rb: int, need_rb: np.ndarray, rate_per_rb_bps: np.ndarray,
                  average_bps: np.ndarray, turn: int, *, headroom_rb: np.ndarray | None = None) -> np.ndarray:
        """One slot's equal integer split with the rotating remainder (see the class)."""
        need = np.asarray(need_rb, dtype=np.int64)
        if headroom_rb is None:
            return _round_robin_fill(n_rb, need, turn)
        grant = _round_robin_fill(n_rb, np.minimum(need, _caps(n_rb, need.size, headroom_rb)), turn)
        left = int(n_rb) - int(grant.sum())
        live = np.flatnonzero(need > grant)
        if left > 0 and live.size:  # every client held at its headroom: the rest to the lowest totals
            order = np.roll(live, -(int(turn) % live.size))
            level = np.broadcast_to(-np.arange(int(n_rb), dtype=float), (order.size, int(n_rb)))
            grant[order] += _take_best(level, grant[order], np.minimum(need[order], int(n_rb)), left)
        return grant


def _round_robin_fill(n_rb: int, need: np.ndarray, turn: int) -> np.ndarray:
    """Round robin's equal integer split of ``n_rb`` capped at ``need``, the remainder in turn."""
    grant = np.zeros(need.shape, dtype=np.int64)
    live = np.flatnonzero(need > 0)
    if live.size == 0:
        return grant
    order = np.roll(live, -(int(turn) % live.size))
    left = int(n_rb)
    while left > 0:
        wanting = order[grant[order] < need[order]]
        if wanting.size == 0:
            break
        share = left // wanting.size
        if share == 0:  # fewer RBs than clients: one each, in turn
            grant[wanting[:left]] += 1
            break
        add = np.minimum(share, need[wanting] - grant[wanting])
        grant[wanting] += add
        left -= int(add.sum())
    return grant


@SCHEDULERS.register("max_rate")
class MaxRate(_Dynamic):
    """The band to the client with the best rate per resource block (ties: the lower index).

    Slot grants: in decreasing rate per RB, each client up to its need and its power headroom
    while RBs are left; RBs every client's headroom leaves over go on in the same order beyond
    the headroom.  The fluid form: the best client's headroom, then the next's, ..., the rest to
    the best.
    """

    def fluid_rbs(self, n_rb: int, rate_per_rb_bps: np.ndarray, *,
                  headroom_rb: np.ndarray | None = None) -> np.ndarray:
        """All ``n_rb`` to the best rate per RB (filled by headroom in rate order, see the class)."""
        rates = np.asarray(rate_per_rb_bps, dtype=float)
        out = np.zeros(rates.size)
        if rates.size:
            order = np.argsort(-rates, kind="stable")
            if headroom_rb is not None:
                out[:] = _fill_in_order(n_rb, _caps(n_rb, rates.size, headroom_rb), order)
            out[order[0]] += float(n_rb) - out.sum()
        return out

    def grant_rbs(self, n_rb: int, need_rb: np.ndarray, rate_per_rb_bps: np.ndarray,
                  average_bps: np.ndarray, turn: int, *, headroom_rb: np.ndarray | None = None) -> np.ndarray:
        """Greedy fill in decreasing rate per RB (within the headroom first)."""
        rates = np.asarray(rate_per_rb_bps, dtype=float)
        order = np.argsort(-rates, kind="stable")
        need = np.asarray(need_rb, dtype=np.int64)
        if headroom_rb is None:
            return _fill_in_order(n_rb, need, order)
        grant = _fill_in_order(n_rb, np.minimum(need, _caps(n_rb, need.size, headroom_rb)), order)
        return grant + _fill_in_order(int(n_rb) - int(grant.sum()), need - grant, order)


@SCHEDULERS.register("proportional_fair")
class ProportionalFair(_Dynamic):
    """Proportional fair by the marginal (gradient) rule: each RB to the best
    ``(r_k(m + 1) - r_k(m)) / T_k``, ``T_k`` the averaged throughput.

    ``r_k(m)`` is the client's rate on ``m`` RBs in the slot (its channel now; the band's
    ``rates_bps`` table, concave in ``m``), ``T_k`` its exponentially averaged served throughput
    (time constant ``time_constant_slots``, updated every slot in which the client has data; a
    client that has not been served yet has ``T_k = 0`` and goes first).  Slot grants: the
    ``n_rb`` best marginal metrics (ties: the lower RB count, then the lower index), each client
    within its need and power headroom (:func:`_tiered_grant`); this is the gradient scheduler
    of Kushner & Whiting (IEEE Trans. Wireless Commun. 3(4), 2004), whose averages approach the
    maximum of ``sum_k log T_k``.  With rates linear in the RBs every RB of a client has the
    same metric and the band goes to the best ``r_k / T_k`` (the single-carrier rule); with
    concave rates (a fixed power spread over more RBs) the band is split.

    The fluid form is that maximum on a channel that does not change within a transfer: the
    split maximising ``sum_k log r_k(x_k)`` over ``sum_k x_k = n_rb``
    (:func:`proportional_fair_split`, on the same table and headroom), ``n_rb / n`` each for
    rates linear in the RBs; it leaves out the averaging transient (see the module docstring).
    """

    class Params(_Dynamic.Params):
        time_constant_slots: Annotated[float, Field(ge=1, le=MAX_TIME_CONSTANT_SLOTS, allow_inf_nan=False), Doc(
            "t_c of the throughput average T_k, in slots, in [1, 1e6] (1: no memory): "
            "T_k <- (1 - 1/t_c) T_k + r_k / t_c each slot a client has data "
            "(a modelling choice; 100 slots by default)")] = 100.0

    params: Params

    #: The fluid split depends on the rates when they are not linear in the RBs (the band asks).
    fluid_equal_shares: ClassVar[bool] = False

    def fluid_rbs(self, n_rb: int, rate_per_rb_bps: np.ndarray, *, rates_bps: np.ndarray | None = None,
                  headroom_rb: np.ndarray | None = None) -> np.ndarray:
        """The proportional-fair optimum on ``rates_bps`` (:func:`proportional_fair_split`);
        ``n_rb / n`` each without a table (rates linear in the RBs)."""
        if rates_bps is None and headroom_rb is None:
            return equal_rbs(n_rb, rate_per_rb_bps)
        rates = linear_rates(n_rb, rate_per_rb_bps) if rates_bps is None else np.asarray(rates_bps, dtype=float)
        if rates.shape[0] == 0:
            return np.zeros(0)
        return proportional_fair_split(n_rb, rates, headroom_rb)

    def grant_rbs(self, n_rb: int, need_rb: np.ndarray, rate_per_rb_bps: np.ndarray,
                  average_bps: np.ndarray, turn: int, *, rates_bps: np.ndarray | None = None,
                  headroom_rb: np.ndarray | None = None) -> np.ndarray:
        """The marginal rule (see the class); rates linear in the RBs without a table."""
        need = np.asarray(need_rb, dtype=np.int64)
        rates = linear_rates(n_rb, rate_per_rb_bps) if rates_bps is None else np.asarray(rates_bps, dtype=float)
        gain, usable = _marginal(rates)
        average = np.asarray(average_bps, dtype=float)
        if average.all():  # no T = 0: nothing to silence (the same numbers, without errstate's cost)
            metric = gain * (1.0 / average)[:, None]
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                # T = 0: inf on the RBs that add rate (the others are not granted by the metric)
                metric = gain * (1.0 / average)[:, None]
        cap = None if headroom_rb is None else _caps(n_rb, need.size, headroom_rb)
        return _tiered_grant(n_rb, metric, usable, need, cap)

    def average_bps(self, average_bps: np.ndarray, served_bps: np.ndarray) -> np.ndarray:
        """``T <- (1 - 1/t_c) T + r / t_c`` (one slot's exponential average)."""
        w = 1.0 / self.params.time_constant_slots
        return (1.0 - w) * np.asarray(average_bps, dtype=float) + w * np.asarray(served_bps, dtype=float)
