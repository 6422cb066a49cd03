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

Every policy here is work-conserving: no RB goes to a client with nothing to send, and no RB is
left idle while a client with data could use it (a slot grant is capped at the client's need and
the rest goes on to the next client).

- ``static``: :class:`StaticScheduler`, today's per-round split of ``cell.allocation``; the engine
  asks it nothing (the band is split once per round, whoever is sending).
- ``round_robin``: :class:`RoundRobin`, equal RBs to every client with data.
- ``proportional_fair``: :class:`ProportionalFair`, the whole band in a slot to the best
  ``r_k / T_k`` (rate per RB over the exponentially averaged throughput).
- ``max_rate``: :class:`MaxRate`, the whole band to the best rate per RB.

Fluid forms.  Round-robin's fluid form is exact processor sharing (``n_rb / n`` RBs each).
Max-rate's is the whole band to the best rate per RB (exact on a flat channel).  Proportional
fair's fluid form is its long-run share on a channel that does not change within a transfer: the
split maximising ``sum_k log(x_k r_k)`` over ``sum_k x_k = n_rb`` is ``x_k = n_rb / n`` (rates
linear in the RBs), i.e. round-robin's; it leaves out the averaging transient (the slot form serves
one client at a time and the others catch up).  On the two-client case of
``tests/engine/test_scheduler.py`` (flat channel, one client alone for 0.2 s, then both; 0.8 and
1.0 s in the fluid form) the slot form ends the first client 3, 34 and 142 ms later for ``t_c`` =
10, 100 and 1000 slots (the newcomer, with ``T = 0``, holds the band until its average catches up)
and the last one within a slot of the fluid form.  Both forms see the same fading, the round
link's by ``cell.coherence`` (:mod:`sfl_sim.engine.band`).

The resource grid: :class:`ResourceGrid` (numerology ``mu``: subcarrier spacing ``15 * 2^mu``
kHz, TS 38.211 clause 4.2 Table 4.2-1; slot ``1 ms / 2^mu``, TS 38.211 clause 4.3.2; the
number of RBs of a channel from TS 38.101-1 Table 5.3.2-1, :func:`~.resource_grid.n_rb`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

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
           "equal_rbs", "is_dynamic", "needed_rbs"]

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

    Slot grants: ``floor(n_rb / n)`` each, capped at the client's need (what a capped client
    leaves is split again among the others); the remainder, one RB each, goes to the clients in
    turn starting at position ``turn mod n`` of the clients with data, so over ``n`` slots each is
    first once.  With more clients than RBs, the ``n_rb`` clients from that position get one each.
    """

    #: The fluid split is ``n_rb / n`` each, whatever the rates (the engine's band need not ask).
    fluid_equal_shares: ClassVar[bool] = True

    def fluid_rbs(self, n_rb: int, rate_per_rb_bps: np.ndarray) -> np.ndarray:
        """``n_rb / n`` to each of the ``n`` clients (all have data)."""
        return equal_rbs(n_rb, rate_per_rb_bps)

    def grant_rbs(self, n_rb: int, need_rb: np.ndarray, rate_per_rb_bps: np.ndarray,
                  average_bps: np.ndarray, turn: int) -> np.ndarray:
        """One slot's equal integer split with the rotating remainder (see the class)."""
        need = np.asarray(need_rb, dtype=np.int64)
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

    Slot grants: in decreasing rate per RB, each client up to its need while RBs are left.
    """

    def fluid_rbs(self, n_rb: int, rate_per_rb_bps: np.ndarray) -> np.ndarray:
        """All ``n_rb`` to the best rate per RB."""
        rates = np.asarray(rate_per_rb_bps, dtype=float)
        out = np.zeros(rates.size)
        if rates.size:
            out[int(np.argmax(rates))] = float(n_rb)
        return out

    def grant_rbs(self, n_rb: int, need_rb: np.ndarray, rate_per_rb_bps: np.ndarray,
                  average_bps: np.ndarray, turn: int) -> np.ndarray:
        """Greedy fill in decreasing rate per RB."""
        rates = np.asarray(rate_per_rb_bps, dtype=float)
        order = np.argsort(-rates, kind="stable")
        return _fill_in_order(n_rb, np.asarray(need_rb, dtype=np.int64), order)


@SCHEDULERS.register("proportional_fair")
class ProportionalFair(_Dynamic):
    """Proportional fair: the band to the best ``r_k / T_k``, ``T_k`` the averaged throughput.

    ``r_k`` is the client's rate per RB in the slot (its channel now), ``T_k`` its exponentially
    averaged served throughput (time constant ``time_constant_slots``, updated every slot in which
    the client has data; a client that has not been served yet has ``T_k = 0`` and goes first).
    Slot grants: in decreasing metric (ties: the lower index), each client up to its need.  The
    fluid form is the long-run share, equal RBs (see the module docstring).
    """

    class Params(_Dynamic.Params):
        time_constant_slots: Annotated[float, Field(ge=1, le=MAX_TIME_CONSTANT_SLOTS, allow_inf_nan=False), Doc(
            "t_c of the throughput average T_k, in slots, in [1, 1e6] (1: no memory): "
            "T_k <- (1 - 1/t_c) T_k + r_k / t_c each slot a client has data "
            "(a modelling choice; 100 slots by default)")] = 100.0

    params: Params

    #: The fluid split is ``n_rb / n`` each, whatever the rates (the engine's band need not ask).
    fluid_equal_shares: ClassVar[bool] = True

    def fluid_rbs(self, n_rb: int, rate_per_rb_bps: np.ndarray) -> np.ndarray:
        """``n_rb / n`` each: the proportional-fair optimum for rates linear in the RBs."""
        return equal_rbs(n_rb, rate_per_rb_bps)

    def grant_rbs(self, n_rb: int, need_rb: np.ndarray, rate_per_rb_bps: np.ndarray,
                  average_bps: np.ndarray, turn: int) -> np.ndarray:
        """Greedy fill in decreasing ``r_k / T_k``."""
        rates = np.asarray(rate_per_rb_bps, dtype=float)
        average = np.asarray(average_bps, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            metric = np.where(average > 0, rates / np.where(average > 0, average, 1.0), np.inf)
        metric = np.where(rates > 0, metric, -np.inf)
        order = np.argsort(-metric, kind="stable")
        return _fill_in_order(n_rb, np.asarray(need_rb, dtype=np.int64), order)

    def average_bps(self, average_bps: np.ndarray, served_bps: np.ndarray) -> np.ndarray:
        """``T <- (1 - 1/t_c) T + r / t_c`` (one slot's exponential average)."""
        w = 1.0 / self.params.time_constant_slots
        return (1.0 - w) * np.asarray(average_bps, dtype=float) + w * np.asarray(served_bps, dtype=float)
