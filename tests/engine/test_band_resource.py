"""The band as a SimPy resource (a transfer is a put; cancel withdraws), the one place a scheduler's
form is decided, and the slot form deciding slots ahead without yielding to SimPy each slot, with
the numbers of one SimPy step per slot, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
import simpy
from simpy.resources.base import BaseResource, Put

from sfl_sim.channel import Harq, MaxRate, McsTableRate, ProportionalFair, ResourceGrid, RoundRobin, StaticScheduler
from sfl_sim.engine import DELIVERED
from sfl_sim.engine.band import FluidBand, SlotBand, open_band, scheduling_form

GRID = ResourceGrid(1, 20e6)  # 51 RBs, 0.5 ms slots


def _link(se):
    se = np.asarray(se, dtype=float)

    def link_at(ids, bandwidth_hz, fading):
        rate = se[ids] * np.asarray(bandwidth_hz, dtype=float) * np.asarray(fading, dtype=float)
        return rate, 10.0 * np.log10(1.0 + rate / np.asarray(bandwidth_hz, dtype=float)), np.ones(ids.size)

    return link_at


def test_the_form_is_decided_in_one_place():
    assert scheduling_form(None) == "static" and scheduling_form(StaticScheduler()) == "static"
    assert scheduling_form(RoundRobin()) == "fluid" and scheduling_form(RoundRobin(fidelity="slot")) == "slot"
    env = simpy.Environment()
    ones = lambda ids: np.ones(ids.size)  # noqa: E731
    assert isinstance(open_band(env, RoundRobin(), GRID, _link([1.0]), ones, lambda *a: None), FluidBand)
    assert isinstance(open_band(env, MaxRate(fidelity="slot"), GRID, _link([1.0]), ones, lambda *a: None), SlotBand)
    with pytest.raises(ValueError, match="not dynamic"):
        open_band(env, StaticScheduler(), GRID, _link([1.0]), ones, lambda *a: None)


@pytest.mark.parametrize("fidelity", ["fluid", "slot"])
def test_a_transfer_is_a_put_and_cancel_withdraws_it(fidelity):
    env = simpy.Environment()
    notes = []
    band = open_band(env, RoundRobin(fidelity=fidelity), GRID, _link([1.0, 1.0]), lambda ids: np.ones(ids.size),
                     lambda *a: notes.append(a))
    assert isinstance(band, BaseResource)
    first, second = band.put(0, 40e6), band.put(1, 1e6)
    assert isinstance(first, Put) and not band.put_queue  # admitted at once: the buffers are unbounded
    env.run(until=0.01)
    first.cancel()  # client 0 went offline: served no more, its busy interval ends now
    assert [n[:2] for n in notes] == [(0, 0.0)] and notes[0][2] == pytest.approx(0.01)
    assert env.run(until=second) == DELIVERED and not first.triggered
    with pytest.raises(RuntimeError, match="one at a time"):
        band.put(1, 1.0) and band.put(1, 1.0)


def _slot_run(policy, se, arrivals, *, per_slot, harq=None):
    """Transfers ``(client, start_s, bits)`` through a slot band; finish times, busy notes, grants,
    the trace and the SimPy steps.  ``per_slot``: SimPy's next event always looks near, so the band
    yields every slot (the plain loop the decisions ahead must match)."""
    env = simpy.Environment()
    if per_slot:
        env.peek = lambda: -np.inf  # type: ignore[method-assign]
    notes, finish = [], {}
    rng = (lambda client, slot: np.random.default_rng([client, slot])) if harq is not None else None
    band = open_band(env, policy, GRID, _link(se), lambda ids: np.ones(ids.size), lambda *a: notes.append(a),
                     harq, rng, trace_slots=True)

    def transfer(client, start_s, bits):
        yield env.timeout(start_s)
        yield band.put(client, bits)
        finish[client] = env.now

    for args in arrivals:
        env.process(transfer(*args))
    steps = 0
    while env.peek() < np.inf if not per_slot else env._queue:
        env.step()
        steps += 1
    grants = {k: band.grants(k) for k in range(len(se))}
    return finish, notes, grants, band.slot_trace, band.load, steps


ARRIVALS = [(0, 0.0, 3e6), (1, 0.0123, 2e6), (2, 0.0123, 5e5), (3, 0.05, 4e6)]


@pytest.mark.parametrize("policy", [ProportionalFair(fidelity="slot", time_constant_slots=20),
                                    RoundRobin(fidelity="slot", k2_slots=3), MaxRate(fidelity="slot")])
def test_deciding_slots_ahead_gives_the_numbers_of_one_step_per_slot(policy):
    se = [2.0, 1.0, 0.5, 1.5]
    ahead = _slot_run(policy, se, ARRIVALS, per_slot=False)
    plain = _slot_run(policy, se, ARRIVALS, per_slot=True)
    assert ahead[:5] == plain[:5]  # finish times, energy notes, grants, trace, load: bit for bit
    slots = len({g.slot for g in plain[3]})
    assert slots > 100
    assert ahead[5] < plain[5] / 4  # far fewer SimPy steps than one per slot (3 each)


def test_deciding_ahead_with_harq_gives_the_numbers_of_one_step_per_slot():
    # SINRs of 2-5 dB (10 log10(1 + se)): some blocks fail, their copies come back after 2 ms
    harq = Harq(McsTableRate(mapping="bler"), mode="sampled", max_transmissions=4, harq_rtt_s=2e-3)
    se = [2.0, 1.0, 0.5, 1.5]
    policy = RoundRobin(fidelity="slot")
    ahead = _slot_run(policy, se, ARRIVALS, per_slot=False, harq=harq)
    plain = _slot_run(policy, se, ARRIVALS, per_slot=True, harq=harq)
    assert any(g.failed for g in plain[3])  # HARQ copies were resent
    assert ahead[:5] == plain[:5]
    assert ahead[5] < plain[5] / 4


def test_the_slot_need_read_from_the_best_rate_is_needed_rbs_table():
    # rates that fall and rise with the RB count (an MCS table's steps): the need is the fewest RBs
    # whose rate empties the buffer, read from the table only for buffers its best rate empties
    from sfl_sim.channel.link.scheduling import needed_rbs_table

    rng = np.random.default_rng(5)
    table = rng.uniform(0.0, 2e6, (6, GRID.n_rb))
    table[5] = 0.0  # no rate on any RB count

    def link_at(ids, bandwidth_hz, fading):
        m = np.rint(np.asarray(bandwidth_hz) / GRID.hz_per_rb).astype(int)
        return table[ids, m - 1], np.zeros(ids.size), np.ones(ids.size)

    band = open_band(simpy.Environment(), RoundRobin(fidelity="slot"), GRID, link_at, lambda ids: np.ones(ids.size),
                     lambda *a: None)
    ids = np.arange(6)
    rows = np.array([band._row_of(k) for k in ids])
    band._table(ids, rows, np.ones(6))
    per_slot_max = table.max(axis=1) * GRID.slot_s
    # (every buffer holds bits: the band asks only for those)
    for left in (rng.uniform(1.0, 1.2, 6) * per_slot_max + 1.0, rng.uniform(0.0, 1.0, 6) * per_slot_max + 1.0,
                 per_slot_max + 1.0, np.full(6, 1e-3)):
        assert band._need(rows, left).tolist() == needed_rbs_table(left, band._rates_bps(rows), GRID.slot_s).tolist()
