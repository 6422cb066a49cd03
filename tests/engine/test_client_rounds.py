"""The per-client record of a round (sfl_sim.engine.client_rounds): the time split by hand, and
on a round the engine ran, the parts add up to each client's span and the longest span is the
round's duration; the traffic per client adds up to the round's counters."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.engine import SERVER, Busy, Counters
from sfl_sim.engine.client_rounds import TIME_PARTS, client_rounds, time_split
from tests.helpers import two_client_simulator


def _split(busy, harq=(), server=(), start=0.0, end=10.0):
    return time_split(list(busy), list(harq), list(server), start, end)


def test_each_instant_counts_once_for_the_first_part_that_applies():
    busy = [Busy("compute", 0.0, 2.0), Busy("uplink", 1.0, 4.0), Busy("downlink", 8.0, 9.0)]
    # compute 0-2, air 2-4 (1-2 is computing), HARQ wait 4-5, server busy 5-7 and 9.5-12, downlink 8-9
    parts = _split(busy, harq=[(4.0, 5.0)], server=[(5.0, 6.0), (5.5, 7.0), (9.5, 12.0)])
    assert parts == {"compute_s": 2.0, "uplink_air_s": 2.0, "harq_wait_s": 1.0, "downlink_s": 1.0,
                     "wait_server_s": 2.5, "wait_others_s": 1.5}
    assert math.fsum(parts.values()) == 10.0


def test_intervals_are_cut_at_the_span_ends():
    parts = _split([Busy("uplink", 1.0, 5.0)], server=[(0.0, 2.0)], start=2.0, end=4.0)
    assert parts["uplink_air_s"] == 2.0 and sum(parts.values()) == 2.0
    assert _split([], start=3.0, end=3.0) == dict.fromkeys(TIME_PARTS[:-1], 0.0)


def _round(sim, lose_client_1: bool = False):
    """Both clients compute, upload, the server computes for each, and sends a gradient down."""
    def client(ctx, k):
        yield from ctx.compute(k, 2e5)
        got = yield ctx.upload(k, 40_000 if k == 0 else 400_000, "uplink/activations")
        yield from ctx.compute(SERVER, 5e7)
        yield ctx.download(k, 10_000, "downlink/gradients")
        return got

    def body(ctx):
        procs = [ctx.process(client(ctx, k)) for k in (0, 1)]
        yield ctx.all_of(procs)

    return sim.run_round(body, np.array([0, 1]))


def test_a_round_the_engine_ran_adds_up_per_client_and_to_the_round():
    sim = two_client_simulator()
    before = sim.counters.as_dict()
    duration_s = _round(sim)
    rows = client_rounds(sim)
    assert [r.client for r in rows] == [0, 1] and all(r.dropped is None for r in rows)
    for r in rows:
        assert math.fsum(r.parts_s.values()) == pytest.approx(r.span_s, rel=1e-12, abs=0.0)
        assert r.parts_s["compute_s"] == pytest.approx(0.2, rel=1e-12)
        assert r.uplink_rate_bps > 0 and r.spectral_efficiency_bps_per_hz > 0
    assert max(r.span_s for r in rows) == duration_s
    # the far client uploads ten times the bytes at a lower rate: the near one waits for the server
    # computing the far one's request, or for the far client's upload
    near = rows[0].parts_s
    assert near["wait_server_s"] > 0 and near["wait_others_s"] > 0
    after = sim.counters.as_dict()
    for key in ("uplink_bytes", "downlink_bytes", "retransmissions", "dropped_transmissions",
                "harq_retransmissions"):
        assert sum(getattr(r.traffic, key) for r in rows) == after[key] - before[key]
    assert sum(r.client_flops for r in rows) == after["client_flops"] - before["client_flops"]
    assert [r.traffic.uplink_attempts for r in rows] == [1, 1]


def test_a_client_that_left_early_spans_until_it_left():
    sim = two_client_simulator()

    def body(ctx):
        yield from ctx.compute(0, 1e6)  # 1 s
        ctx.notes.note_left(1, ctx.now_s)
        ctx.notes.note_dropped(1, "outage")
        yield from ctx.compute(0, 1e6)

    duration_s = sim.run_round(body, np.array([0, 1]))
    rows = client_rounds(sim, waited_s=0.5)
    assert rows[1].dropped == "outage" and rows[1].span_s == pytest.approx(1.5, rel=1e-12)
    assert rows[1].parts_s["wait_others_s"] == pytest.approx(1.0) and rows[1].parts_s["availability_wait_s"] == 0.5
    assert rows[0].span_s == pytest.approx(duration_s + 0.5, rel=1e-12)
    assert rows[0].parts_s["compute_s"] == pytest.approx(2.0, rel=1e-12)
    assert Counters().as_dict().keys() == sim.counters.as_dict().keys()  # the record adds no counter
