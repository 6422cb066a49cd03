"""A client that goes offline mid-round leaves through the loss accounting (cause ``unavailable``)
at its offline time: hand calculations on one client with a traced 1000 bit/s uplink."""
from __future__ import annotations

import numpy as np
import pytest

from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.clients.availability import TraceAvailability
from sfl_sim.engine import Lost, Simulator


def _sim(tmp_path, online_until_s: float, **kwargs) -> Simulator:
    """Two clients at 1 FLOP/s, uplink traced at 1000 bit/s; client 0 online [0, online_until_s)
    (the trace's span: so it wraps back on only after the round), client 1 always in it."""
    path = tmp_path / "trace.csv"
    path.write_text(f"client,start_s,end_s\n0,0,{online_until_s}\n1,0,1000\n")
    availability = TraceAvailability(str(path), mapping="order")
    availability.prepare(2, np.random.default_rng(0))
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([100.0, 100.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e6, placement_rng=rng, shadowing_rng=rng)
    return Simulator(cell, np.ones(2), 1.0, availability=availability, uplink_bps=np.array([1000.0, 1000.0]),
                     **kwargs)


def _round(flops: float, nbytes: int, seen: dict):
    def client(ctx, k):
        yield from ctx.compute(k, flops)  # 1 FLOP/s: `flops` seconds
        outcome = yield ctx.upload(k, nbytes, "payload")
        seen[k] = (outcome, ctx.now_s)
        return outcome

    def round_process(ctx):
        kept = yield from ctx.gather({k: ctx.process(client(ctx, k)) for k in ctx.cohort.tolist()})
        seen["kept"] = kept
    return round_process


@pytest.mark.parametrize("coherence", ["per_round", "per_transmission"])
def test_offline_mid_upload_is_lost_at_the_offline_time(tmp_path, coherence) -> None:
    # compute 2 s, then 1000 bytes at 1000 bit/s = 8 s; client 0 leaves at 6 s, 4 s into its upload
    sim = _sim(tmp_path, 6.0, coherence=coherence)
    seen: dict = {}
    duration = sim.run_round(_round(2.0, 1000, seen), [0, 1])
    outcome, at = seen[0]
    assert outcome == Lost("unavailable") and at == 6.0
    assert seen[1][1] == 10.0 and seen["kept"] == [1]  # client 1 delivers at 2 + 8 s
    assert sim.last_round.dropped == {0: "unavailable"} and duration == 10.0
    assert sim.counters.dropped_clients == 1
    assert sim.counters.by_kind["dropped_clients/unavailable"] == 1


def test_offline_mid_compute_stops_it_and_its_upload_is_lost_then(tmp_path) -> None:
    # 10 s of compute; client 0 leaves at 4 s: 4 FLOPs done, its upload lost at 4 s, nothing sent
    sim = _sim(tmp_path, 4.0)
    seen: dict = {}
    sim.run_round(_round(10.0, 100, seen), [0, 1])
    assert seen[0] == (Lost("unavailable"), 4.0)
    assert sim.counters.client_flops == 4.0 + 10.0
    assert sim.counters.uplink_bytes == 100  # client 1's only


def test_a_client_online_through_the_round_is_untouched(tmp_path) -> None:
    # leaves at 10 s, exactly when its upload ends (half-open: delivered by then)
    sim = _sim(tmp_path, 10.0)
    seen: dict = {}
    sim.run_round(_round(2.0, 1000, seen), [0, 1])
    assert seen[0][1] == 10.0 and not isinstance(seen[0][0], Lost)
    assert sim.last_round.dropped == {} and "dropped_clients/unavailable" not in sim.counters.by_kind


def test_wait_until_moves_the_clock(tmp_path) -> None:
    sim = _sim(tmp_path, 6.0)
    assert sim.wait_until(3.5) == 3.5 and sim.now_s == 3.5
    assert sim.wait_until(1.0) == 0.0 and sim.now_s == 3.5


@pytest.mark.parametrize("policy, extra, dropped, end_s", [
    # client 0 leaves at 6 s, before the 7 s deadline; client 1 would deliver at 10 s: late
    ("deadline", {"deadline_s": 7.0}, {0: "unavailable", 1: "deadline"}, 7.0),
    # keep one of two: client 0 leaves, client 1 is the first (and only) to deliver
    ("over_selection", {"keep_clients": 1}, {0: "unavailable"}, 10.0),
])
def test_departures_combine_with_the_straggler_policies(tmp_path, policy, extra, dropped, end_s) -> None:
    sim = _sim(tmp_path, 6.0, straggler_policy=policy, **extra)
    seen: dict = {}
    duration = sim.run_round(_round(2.0, 1000, seen), [0, 1])
    assert sim.last_round.dropped == dropped and duration == end_s
    assert sim.counters.dropped_clients == len(dropped)
