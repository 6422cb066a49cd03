"""The asynchronous driver: clients train concurrently, the server aggregates when its rule says.

The synchronous engine (:meth:`sfl_sim.engine.Simulator.run_round`) runs one round at a time and
waits for its cohort.  Here the clock runs on: ``concurrency`` (C) clients are in flight at any
time, each started by a *dispatch* (the server sends it the model of that moment and it trains and
uploads, with the same primitives, link processes, counters and busy notes as a synchronous
round: each dispatch group is one :class:`~sfl_sim.engine.RoundContext`), and the server
aggregates by its rule:

* ``buffer_size: K`` — every K arrivals (FedBuff's buffer; FedAsync is K = 1);
* ``period_s`` — every ``period_s`` simulated seconds, with whatever has arrived (nothing: no
  aggregation).

**The server knows only what has arrived.**  A client's process ends with its upload (delivered
or lost); its end puts an :class:`Arrival` into a :class:`simpy.Store`, and the server's process
takes arrivals from that queue one at a time, at the time they happen.  Every decision —
aggregating, freeing a slot, selecting the next clients — is taken in the server's process from
the arrivals it has taken, never from a completion time it could not know.  (FedScale's
asynchronous mode was found to order events by completion times computed in advance; here no
completion time exists before its event fires.)

**Slots.**  With ``refill: on_use`` (the default, our reading) a client's slot is released when
the server has *used* its update: at the aggregation that consumes it (FedAsync, K = 1: at once).
So with K = C every slot frees at the flush and the next C clients start from the new model, as
the next round of FedAvg does — what makes FedBuff with K = C, server learning rate 1 and no
staleness scaling reproduce FedAvg exactly.  With ``refill: on_arrival`` a slot frees when the
update arrives, as in FedBuff's Algorithm 1 (the client starts again while its update waits in the
buffer).  A lost upload frees its slot at once, whatever the rule.  Freed slots are refilled at
once, by one call of the selector for all of them (``select(n, busy)``, among the clients online
and not in flight), and the clients drawn together form one dispatch group.

**Versions and staleness.**  The model's version is the number of aggregations so far; a client
records the version it started from, and an update aggregated at version ``v`` (producing
``v + 1``) from a client that started at ``u`` has staleness ``v - u``.

**The uplink band** of a dispatch group is allocated as for a cohort of every client in flight
after the refill (the group and those still training): with equal allocation each of C clients
in flight holds ``B / C``, as in a synchronous round of C clients; a payload-aware allocator sees
the group's payloads (and the same for the others).

The driver is run by the caller one step at a time (:meth:`AsyncDriver.advance`): until the
next aggregation or a given simulated time (an evaluation grid), so a runner can evaluate between
steps without changing what happens.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, cast

import numpy as np
import simpy

from sfl_sim.channel.limits import SIMULATED_INTERVAL_S
from sfl_sim.engine.outcome import Lost, Outcome
from sfl_sim.engine.simulator import RoundContext, Simulator
from sfl_sim.engine.steps import SimSteps

__all__ = ["REFILL_RULES", "Aggregation", "Arrival", "AsyncDriver", "AsyncPolicy", "AsyncTraining", "Dispatch",
           "RefillRule", "Select"]

RefillRule = Literal["on_use", "on_arrival"]
REFILL_RULES: tuple[RefillRule, ...] = ("on_use", "on_arrival")


@dataclass(frozen=True)
class AsyncPolicy:
    """How many clients train at once and when the server aggregates.

    Attributes
    ----------
    concurrency : int
        C, clients in flight at any time (>= 1).
    buffer_size : int
        K, arrivals per aggregation (1 <= K <= C); ignored with ``period_s``.
    period_s : float or None
        Aggregate every ``period_s`` simulated seconds instead (>= 1 ms:
        :data:`sfl_sim.channel.limits.SIMULATED_INTERVAL_S`).
    refill : {"on_use", "on_arrival"}
        When a delivered client's slot frees (module docstring).

    Raises
    ------
    ValueError
        One line naming the field, its value and what is allowed.
    """

    concurrency: int
    buffer_size: int = 1
    period_s: float | None = None
    refill: RefillRule = "on_use"

    def __post_init__(self) -> None:
        if not (isinstance(self.concurrency, int) and self.concurrency >= 1):
            raise ValueError(f"concurrency={self.concurrency!r}; allowed: an integer >= 1")
        if not (isinstance(self.buffer_size, int) and 1 <= self.buffer_size <= (
                self.concurrency if self.period_s is None else self.buffer_size)):
            raise ValueError(f"buffer_size={self.buffer_size!r}; allowed: an integer in [1, concurrency="
                             f"{self.concurrency}] (K arrivals need K clients in flight)")
        if self.period_s is not None and not SIMULATED_INTERVAL_S.contains(self.period_s):
            raise ValueError(f"period_s={self.period_s!r}; allowed: a number of seconds in {SIMULATED_INTERVAL_S}, "
                             f"or null (every K arrivals): {SIMULATED_INTERVAL_S.reason}")
        if self.refill not in REFILL_RULES:
            raise ValueError(f"refill={self.refill!r}; allowed: {', '.join(REFILL_RULES)}")


@dataclass(frozen=True)
class Dispatch:
    """One client's start: who, in which order, from which model version, when."""

    client: int
    sequence: int  # 0, 1, ... in the order clients were dispatched (within a group: the selector's)
    version: int
    start_s: float


@dataclass(frozen=True)
class Arrival:
    """What the server has received: a client's upload delivered, or its loss."""

    dispatch: Dispatch
    arrived_s: float
    outcome: Outcome

    @property
    def client(self) -> int:
        return self.dispatch.client

    @property
    def lost(self) -> bool:
        return isinstance(self.outcome, Lost)


@dataclass(frozen=True)
class Aggregation:
    """One aggregation of the server.

    Attributes
    ----------
    version : int
        The model version it produced (1, 2, ...).
    time_s : float
    used : list of Arrival
        The delivered updates it used, in dispatch order.
    staleness : list of int
        Per entry of ``used``: ``version - 1 - its start version``.
    lost : list of Arrival
        Uploads lost since the previous aggregation.
    """

    version: int
    time_s: float
    used: list[Arrival]
    staleness: list[int]
    lost: list[Arrival] = field(default_factory=list)


class AsyncTraining(Protocol):
    """What the driver asks of an asynchronous algorithm (it does the torch work; the driver times)."""

    def dispatch(self, ctx: RoundContext, group: Sequence[Dispatch],
                 in_flight: Sequence[int]) -> SimSteps[Mapping[int, simpy.Event]]:
        """Send the current model to the ``group`` (its clients are ``ctx.cohort``) and start their
        processes; return each dispatch's ``sequence`` -> its process, whose value is the upload's
        outcome.  The model a client trains from is the one at the call (take it before any
        ``yield``).  Key what is kept per client by ``sequence``: with ``refill: on_arrival`` a
        client may be dispatched again while its earlier update waits in the buffer.

        Parameters
        ----------
        ctx : RoundContext
            The group's primitives (its uplink shared as by ``in_flight`` clients).
        group : sequence of Dispatch
            In the selector's order.
        in_flight : sequence of int
            Every client in flight once this group has started, in dispatch order (the group last;
            for eq. (3) batch sizes).
        """
        ...

    def aggregate_updates(self, used: Sequence[Arrival], staleness: Sequence[int]) -> None:
        """Update the server's model from the delivered updates ``used`` (dispatch order); takes no
        simulated time."""
        ...

    def discard(self, arrival: Arrival) -> None:
        """Forget what the server kept for a client whose upload was lost."""
        ...


#: ``select(n, busy)``: up to ``n`` clients to dispatch now, none of ``busy`` (in flight).
Select = Callable[[int, frozenset[int]], np.ndarray]


class AsyncDriver:
    """Asynchronous training on ``sim``'s clock (module docstring).

    Parameters
    ----------
    sim : Simulator
    policy : AsyncPolicy
    training : AsyncTraining
    select : Select

    Attributes
    ----------
    version : int
        Aggregations so far.
    in_flight : dict of int to Dispatch
        Clients holding a slot (training, uploading, or — with ``on_use`` — delivered and waiting
        for their update to be used).
    groups : list of RoundContext
        Dispatch groups started since :meth:`take_groups` (their notes, for the energy ledger).
    """

    def __init__(self, sim: Simulator, policy: AsyncPolicy, training: AsyncTraining, select: Select) -> None:
        self.sim, self.policy, self.training, self.select = sim, policy, training, select
        self.env = sim.env
        self.version = 0
        self.in_flight: dict[int, Dispatch] = {}
        self.groups: list[RoundContext] = []
        self._queue: simpy.Store = simpy.Store(self.env)
        self._buffer: list[Arrival] = []
        self._lost: list[Arrival] = []
        self._done: list[Aggregation] = []
        self._sequence = 0
        self._server: simpy.Process | None = None

    # -- the caller's side -------------------------------------------------------------------------
    def advance(self, until_s: float | None = None) -> Aggregation | None:
        """Run the clock to the next aggregation (returned) or, first, to ``until_s`` (None returned:
        every event at or before ``until_s`` has happened and the clock stands at ``until_s``).

        Raises
        ------
        RuntimeError
            Nothing is in flight and no client can be dispatched (the clock would stand still).
        """
        if self._server is None:
            self._server = self.env.process(self._serve())
        while not self._done:
            next_s = self.env.peek()
            if until_s is not None and next_s > until_s:
                if until_s > self.env.now:
                    self.env.run(until=until_s)
                return None
            if next_s == math.inf:
                raise RuntimeError(f"asynchronous training stalled at {self.env.now:.6g} s: no client in flight "
                                   f"and none could be selected")
            self.env.step()
        return self._done.pop(0)

    def take_groups(self) -> list[RoundContext]:
        """The dispatch groups started since the last call (their busy notes and drops)."""
        groups, self.groups = self.groups, []
        return groups

    # -- the server's process ----------------------------------------------------------------------
    def _serve(self) -> SimSteps[None]:
        self._refill()
        policy = self.policy
        period_s = policy.period_s
        get = self._queue.get()
        tick = None if period_s is None else self.env.timeout(period_s)
        while True:
            yield get if tick is None else simpy.AnyOf(self.env, [get, tick])
            if get.triggered:
                self._receive(cast(Arrival, get.value))
                get = self._queue.get()
                if tick is None and len(self._buffer) >= policy.buffer_size:
                    self._aggregate()
            if tick is not None and tick.processed:
                if self._buffer:
                    self._aggregate()
                assert period_s is not None  # a tick exists only with a period
                tick = self.env.timeout(period_s)
            self._refill()

    def _receive(self, arrival: Arrival) -> None:
        """An arrival taken from the queue: a loss frees its slot; an update joins the buffer."""
        if arrival.lost:
            self.in_flight.pop(arrival.client)
            self._lost.append(arrival)
            self.training.discard(arrival)
            return
        self._buffer.append(arrival)
        if self.policy.refill == "on_arrival":
            self.in_flight.pop(arrival.client)

    def _aggregate(self) -> None:
        used = sorted(self._buffer, key=lambda a: a.dispatch.sequence)
        staleness = [self.version - a.dispatch.version for a in used]
        self.training.aggregate_updates(used, staleness)
        self.version += 1
        self._buffer = []
        if self.policy.refill == "on_use":
            for arrival in used:
                self.in_flight.pop(arrival.client)
        self._done.append(Aggregation(self.version, float(self.env.now), used, staleness, self._lost))
        self._lost = []

    def _refill(self) -> None:
        """Fill the free slots: one selector call for all of them, one dispatch group."""
        free = self.policy.concurrency - len(self.in_flight)
        if free <= 0:
            return
        picked = np.asarray(self.select(free, frozenset(self.in_flight)), dtype=np.int64)
        if picked.size == 0:
            return
        now = float(self.env.now)
        for k in picked.tolist():
            self.in_flight[k] = Dispatch(k, self._sequence, self.version, now)
            self._sequence += 1
        sharing = np.asarray(sorted(self.in_flight, key=lambda k: self.in_flight[k].sequence), dtype=np.int64)
        ctx = RoundContext(self.sim, picked, sharing=sharing)
        self.groups.append(ctx)
        self.env.process(self._group(ctx, picked, sharing.tolist()))

    def _group(self, ctx: RoundContext, clients: np.ndarray, in_flight: list[int]) -> SimSteps[None]:
        """Start a group (the algorithm's download and client processes); each process's end is an
        arrival in the server's queue."""
        group = [self.in_flight[k] for k in clients.tolist()]
        jobs = yield from self.training.dispatch(ctx, group, in_flight)
        for dispatch in group:
            self.env.process(self._report(ctx, dispatch, jobs[dispatch.sequence]))

    def _report(self, ctx: RoundContext, dispatch: Dispatch, job: simpy.Event) -> SimSteps[None]:
        outcome = yield job
        if isinstance(outcome, Lost):
            ctx.note_dropped(dispatch.client, outcome)
            self.sim.counters.dropped_clients += 1
        ctx.notes.note_left(dispatch.client, float(self.env.now))  # its part ends with its upload
        yield self._queue.put(Arrival(dispatch, float(self.env.now), outcome))
