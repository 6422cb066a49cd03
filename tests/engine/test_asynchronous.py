"""The asynchronous driver against hand calculations (:mod:`sfl_sim.engine.asynchronous`).

Three clients with traced uplink rates and compute budgets chosen so every time is a short
decimal: client k computes 4 MFLOP at [1, 2, 4] MFLOP/s (4, 2, 1 s) and uploads 1 MB = 8 Mbit at
[8, 3.2, 8] Mbit/s (1, 2.5, 1 s), so a client's turn takes 5, 4.5 and 2 s; the downlink is ideal.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest
import simpy

from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.engine import Lost, Simulator
from sfl_sim.engine.asynchronous import Aggregation, Arrival, AsyncDriver, AsyncPolicy, Dispatch
from sfl_sim.engine.simulator import RoundContext
from sfl_sim.engine.steps import SimSteps

FLOPS = 4e6
NBYTES = 1_000_000


def _sim() -> Simulator:
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([50.0, 100.0, 150.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=3, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e6, placement_rng=rng, shadowing_rng=rng)
    return Simulator(cell, np.array([1e6, 2e6, 4e6]), 1e8, uplink_bps=np.array([8e6, 3.2e6, 8e6]))


class Cyclic:
    """Picks the next clients in id order after the last one picked, skipping those in flight."""

    def __init__(self, n: int, driver_now: list) -> None:
        self.n, self.next, self.calls, self.now = n, 0, [], driver_now

    def __call__(self, free: int, busy: frozenset[int]) -> np.ndarray:
        picked = []
        while len(picked) < min(free, self.n - len(busy)):
            k, self.next = self.next, (self.next + 1) % self.n
            if k not in busy and k not in picked:
                picked.append(k)
        self.calls.append((self.now[0].now_s, free, sorted(busy), picked))
        return np.array(picked, dtype=np.int64)


class Recorder:
    """A fake algorithm: compute, then upload; it records what the server knew when it aggregated."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.dispatched: list[tuple[float, int, int]] = []  # (time, client, version)
        self.aggregated: list[tuple[float, list[int]]] = []

    def dispatch(self, ctx: RoundContext, group: Sequence[Dispatch],
                 in_flight: Sequence[int]) -> SimSteps[Mapping[int, simpy.Event]]:
        jobs = {}
        for d in group:
            self.dispatched.append((ctx.now_s, d.client, d.version))
            jobs[d.sequence] = ctx.process(self._client(ctx, d.client))
        return jobs
        yield  # a generator

    def _client(self, ctx: RoundContext, k: int) -> SimSteps[object]:
        yield from ctx.compute(k, FLOPS)
        return (yield ctx.upload(k, NBYTES, "model"))

    def aggregate_updates(self, used: Sequence[Arrival], staleness: Sequence[int]) -> None:
        assert all(a.arrived_s <= self.env.now for a in used)  # only what has arrived
        self.aggregated.append((self.env.now, [a.client for a in used]))

    def discard(self, arrival: Arrival) -> None:
        pass


def _run(policy: AsyncPolicy, n: int) -> tuple[list[Aggregation], Recorder, Cyclic]:
    sim = _sim()
    training = Recorder(sim.env)
    select = Cyclic(3, [sim])
    driver = AsyncDriver(sim, policy, training, select)
    return [driver.advance() for _ in range(n)], training, select


def _table(aggs: list[Aggregation]) -> list[tuple[int, float, list[int], list[int]]]:
    return [(a.version, a.time_s, [u.client for u in a.used], a.staleness) for a in aggs]


def test_fedasync_events_and_staleness_equal_the_hand_calculation():
    aggs, training, select = _run(AsyncPolicy(concurrency=2, buffer_size=1), 6)
    # t=0: 0 and 1 start (v0).  1 arrives at 4.5 -> v1, 2 starts; 0 at 5 -> v2 (staleness 1), 0 restarts;
    # 2 at 6.5 -> v3 (started v1: 1); 1 starts; 0 at 10 -> v4 (started v2: 1); 2 starts; 1 at 11 -> v5;
    # 2 at 12 -> v6.
    assert _table(aggs) == [(1, 4.5, [1], [0]), (2, 5.0, [0], [1]), (3, 6.5, [2], [1]), (4, 10.0, [0], [1]),
                            (5, 11.0, [1], [1]), (6, 12.0, [2], [1])]
    assert training.dispatched == [(0.0, 0, 0), (0.0, 1, 0), (4.5, 2, 1), (5.0, 0, 2), (6.5, 1, 3), (10.0, 2, 4),
                                   (11.0, 0, 5)]
    # every refill asked for the slots the server had freed, excluding those still in flight
    assert [(t, free, busy) for t, free, busy, _ in select.calls][:4] == [
        (0.0, 2, []), (4.5, 1, [0]), (5.0, 1, [2]), (6.5, 1, [0])]


def test_fedbuff_on_use_frees_slots_at_the_flush():
    aggs, training, _ = _run(AsyncPolicy(concurrency=3, buffer_size=2), 3)
    # t=0: 0, 1, 2 (v0).  2 at 2, 1 at 4.5 -> v1 from [1, 2]; 1, 2 restart (v1): 2 at 6.5, 1 at 9.
    # 0 at 5 waits; 2 at 6.5 -> v2 from [0 (v0: 1), 2 (v1: 0)]; 0, 2 restart (v2): 2 at 8.5, 0 at 11.5.
    # 2 at 8.5 waits; 1 at 9 -> v3 from [1 (v1: 1), 2 (v2: 0)].
    assert _table(aggs) == [(1, 4.5, [1, 2], [0, 0]), (2, 6.5, [0, 2], [1, 0]), (3, 9.0, [1, 2], [1, 0])]
    assert training.dispatched == [(0.0, 0, 0), (0.0, 1, 0), (0.0, 2, 0), (4.5, 1, 1), (4.5, 2, 1),
                                   (6.5, 0, 2), (6.5, 2, 2)]  # 1, 2 restart at 9 once the clock moves on


def test_fedbuff_on_arrival_frees_slots_when_updates_arrive():
    aggs, training, _ = _run(AsyncPolicy(concurrency=3, buffer_size=2, refill="on_arrival"), 2)
    # t=0: 0, 1, 2.  2 at 2 (buffer [2]) frees its slot: 2 again (v0), at 4 -> v1 from [2, 2].
    # 2 again at 4 (v1) -> 6; 1 at 4.5 (buffer [1]), 1 again (v1) -> 9; 0 at 5 -> v2 from [0, 1].
    assert _table(aggs) == [(1, 4.0, [2, 2], [0, 0]), (2, 5.0, [0, 1], [1, 1])]
    assert [t for t, _, _ in training.dispatched] == [0.0, 0.0, 0.0, 2.0, 4.0, 4.5]


def test_period_rule_aggregates_what_has_arrived():
    aggs, _, _ = _run(AsyncPolicy(concurrency=3, buffer_size=1, period_s=3.0), 2)
    # ticks at 3, 6: at 3 only 2 has arrived (at 2) -> v1, and 2 restarts (v1, arrives at 5);
    # at 6: 1 (4.5), 0 (5) and 2 (5)
    assert _table(aggs) == [(1, 3.0, [2], [0]), (2, 6.0, [0, 1, 2], [1, 1, 0])]


def test_advance_stops_at_a_grid_time_without_changing_what_happens():
    sim = _sim()
    driver = AsyncDriver(sim, AsyncPolicy(concurrency=2, buffer_size=1), Recorder(sim.env), Cyclic(3, [sim]))
    assert driver.advance(until_s=1.0) is None and sim.now_s == 1.0
    assert driver.advance(until_s=4.5).version == 1  # an aggregation at the grid time itself happens first
    assert driver.advance(until_s=4.75) is None
    assert driver.advance().time_s == 5.0


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"concurrency": 0}, "concurrency=0"),
    ({"concurrency": 2, "buffer_size": 3}, "buffer_size=3"),
    ({"concurrency": 2, "period_s": 0.0}, "period_s=0.0"),
    ({"concurrency": 2, "period_s": 1e-300}, "period_s=1e-300"),  # below the clock's resolution: never ended
    ({"concurrency": 2, "period_s": 9e-4}, "period_s=0.0009"),
    ({"concurrency": 2, "refill": "later"}, "refill='later'"),
])
def test_bad_policy_is_one_line(kwargs, field):
    with pytest.raises(ValueError, match="allowed") as info:
        AsyncPolicy(**kwargs)
    assert str(info.value).startswith(field) and "\n" not in str(info.value)


class LosesClientOne(Recorder):
    """Client 1's upload is lost (its link process returns Lost at the end of its compute)."""

    def _client(self, ctx: RoundContext, k: int) -> SimSteps[object]:
        yield from ctx.compute(k, FLOPS)
        if k == 1 and not self.lost_once:
            self.lost_once = True
            return Lost("outage")
        return (yield ctx.upload(k, NBYTES, "model"))

    lost_once = False


def test_a_lost_upload_frees_its_slot_at_once():
    sim = _sim()
    training = LosesClientOne(sim.env)
    select = Cyclic(3, [sim])
    driver = AsyncDriver(sim, AsyncPolicy(concurrency=2, buffer_size=1), training, select)
    first = driver.advance()
    # 1 is lost at 2 (its compute ends): its slot goes to 2 at once (v0), which arrives at 4; 0 at 5
    assert (first.version, first.time_s, [a.client for a in first.used]) == (1, 4.0, [2])
    assert [(a.client, a.arrived_s, a.outcome) for a in first.lost] == [(1, 2.0, Lost("outage"))]
    assert training.dispatched[:3] == [(0.0, 0, 0), (0.0, 1, 0), (2.0, 2, 0)]
    assert sim.counters.dropped_clients == 1
