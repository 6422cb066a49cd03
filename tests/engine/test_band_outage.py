"""A client with no usable rate on the whole band is in outage under a dynamic scheduler (issue 50,
item 11): the outage policy handles it as a zero rate on the static share, in both forms of the
band; before, the slot form never ended and the fluid form failed with a RuntimeError."""
from __future__ import annotations

import signal
from collections.abc import Iterator

import numpy as np
import pytest

from sfl_sim.channel import FixedDistancePlacement, McsTableRate, OutagePolicy, ProportionalFair, RoundRobin
from sfl_sim.channel.link.uplink_outage import uplink_outage
from sfl_sim.engine import DELIVERED, Lost, Simulator
from tests.channel.helpers import small_cell

FULL_HZ = 20e6
# mcs_table at 0.2 W: the client at 1000 m has a rate on half the band (1.5 Mbit/s) and none on
# all of it (its power spread over 20 MHz is below CQI 1); the one at 150 m has both.
FAR_M = 1000.0


def _cell():
    return small_cell(FixedDistancePlacement([150.0, FAR_M]), rate=McsTableRate(), n_clients=2,
                      uplink_bandwidth_hz=FULL_HZ)


@pytest.fixture
def time_limit() -> Iterator[None]:
    """Fail (instead of hanging) a round that does not end within 20 s of host time."""
    def stop(_signum, _frame):
        raise TimeoutError("the round did not end within 20 s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _round(scheduler, outage=None):
    sim = Simulator(_cell(), np.ones(2), 1.0, scheduler=scheduler, numerology=1, outage=outage)
    out = {}

    def round_process(ctx):
        def one(client, nbytes):
            value = yield ctx.upload(client, nbytes, "payload")
            out[client] = (value, ctx.now_s)

        yield ctx.all_of([ctx.process(one(0, 10_000)), ctx.process(one(1, 100_000))])

    sim.run_round(round_process, np.array([0, 1]))
    return out, sim


def test_the_cell_has_the_case():
    cell = _cell()
    assert cell.uplink_link_at_bandwidth([1], [FULL_HZ / 2]).rate_bps[0] > 0
    assert cell.uplink_link_at_bandwidth([1], [FULL_HZ]).rate_bps[0] == 0


@pytest.mark.parametrize("fidelity", ["fluid", "slot"])
@pytest.mark.parametrize("policy", [RoundRobin, ProportionalFair])
def test_no_rate_on_the_band_is_an_outage_the_policy_drops(time_limit, policy, fidelity):
    out, sim = _round(policy(fidelity=fidelity))
    assert out[1] == (Lost("outage"), 0.0)  # at once: no grant can carry a bit (no air time)
    assert out[0][0] == DELIVERED
    ctx = sim.last_round
    assert sim.counters.dropped_transmissions == 1
    assert ctx.notes.traffic[1].uplink_attempts == 1
    assert not ctx.busy.get(1)  # no air time


@pytest.mark.parametrize("fidelity", ["fluid", "slot"])
def test_retransmit_tries_again_then_drops(time_limit, fidelity):
    out, sim = _round(RoundRobin(fidelity=fidelity), OutagePolicy(on_outage="retransmit", max_attempts=3))
    assert out[1] == (Lost("outage"), 0.0)
    assert sim.counters.retransmissions == 2 and sim.counters.dropped_transmissions == 1
    assert sim.last_round.notes.traffic[1].uplink_attempts == 3


def test_check_counts_the_clients_in_outage_on_the_band():
    scheduled = uplink_outage(_cell(), receivers=2, scheduled=True)
    assert scheduled.clients.tolist() == [1]
    assert scheduled.line("round_robin").startswith("uplink (round_robin): 1 of 2 clients in uplink outage")
    # the static split judges the equal share only: the far client has a rate on half the band
    static = uplink_outage(_cell(), receivers=2, scheduled=False)
    assert static.clients.size == 0
    assert static.line("static").startswith("uplink (static): 0 of 2 clients in uplink outage")
