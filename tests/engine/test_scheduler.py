"""The scheduled band: hand calculations of round-robin fluid and slot, a proportional-fair case
small enough to enumerate, max-rate, grant latency, departures, and the engine's uplink through it."""
from __future__ import annotations

import numpy as np
import pytest
import simpy

from sfl_sim.channel import FixedDistancePlacement, MaxRate, ProportionalFair, ResourceGrid, RoundRobin
from sfl_sim.engine import DELIVERED, Lost, Simulator
from sfl_sim.engine.band import open_band
from tests.channel.helpers import small_cell
from tests.helpers import timed_uploads

GRID = ResourceGrid(1, 20e6)  # 51 RBs, 0.5 ms slots; m RBs are worth m x 20 MHz / 51 to the rate
FULL_HZ = GRID.n_rb * GRID.hz_per_rb  # 20 MHz


def _linear_link(se_bps_per_hz):
    """A flat channel, rate linear in the bandwidth: client k sends se[k] bit/s per Hz at 1 W."""
    se = np.asarray(se_bps_per_hz, dtype=float)

    def link_at(ids, bandwidth_hz, fading):
        rate = se[ids] * np.asarray(bandwidth_hz, dtype=float) * np.asarray(fading, dtype=float)
        return rate, np.zeros(ids.size), np.ones(ids.size)

    return link_at


def _run(policy, se, arrivals, *, fading=None, harq=None, block_rng=None):
    """Transfers ``(client, start_s, bits)`` through one band; client -> finish time, and the busy notes."""
    env = simpy.Environment()
    notes = []
    gains = fading if fading is not None else (lambda ids: np.ones(ids.size))
    band = open_band(env, policy, GRID, _linear_link(se), gains, lambda *a: notes.append(a), harq, block_rng)
    finish = {}

    def transfer(client, start_s, bits):
        yield env.timeout(start_s)
        value = yield band.put(client, bits)
        assert value == DELIVERED
        finish[client] = env.now

    for args in arrivals:
        env.process(transfer(*args))
    env.run()
    return finish, notes


# Client 0 (2 bit/s/Hz) sends alone from 0; client 1 (1 bit/s/Hz) starts at 0.2 s.  Whole band:
# 40 Mbit/s for client 0; half each: 20 and 10 Mbit/s.
#   client 0: 0.5 s of whole band = 20 Mbit; by 0.2 s, 8 Mbit sent, 12 left at 20 Mbit/s -> ends 0.8 s
#   client 1: 10 Mbit; by 0.8 s, 0.6 s x 10 = 6 sent, 4 left alone at 20 Mbit/s -> ends 1.0 s
SE = [2.0, 1.0]
CASE = [(0, 0.0, 20e6), (1, 0.2, 10e6)]


def test_round_robin_fluid_matches_the_hand_calculation():
    finish, notes = _run(RoundRobin(), SE, CASE)
    assert finish[0] == pytest.approx(0.8, rel=1e-12)
    assert finish[1] == pytest.approx(1.0, rel=1e-12)
    # one busy note per transfer, start to end, at the power it sent with (1 W whenever it had RBs)
    assert sorted((c, round(s, 12), round(d, 12), p) for c, s, d, p in notes) == [(0, 0.0, 0.8, 1.0),
                                                                                 (1, 0.2, 0.8, 1.0)]


@pytest.mark.slow  # 2000 slots (about 1 s idle)
def test_round_robin_slot_agrees_with_fluid_within_one_slot_on_the_two_client_case():
    finish, _ = _run(RoundRobin(fidelity="slot"), SE, CASE)
    assert abs(finish[0] - 0.8) <= GRID.slot_s + 1e-12
    assert abs(finish[1] - 1.0) <= GRID.slot_s + 1e-12
    # on the slot grid
    for t in finish.values():
        assert t / GRID.slot_s == pytest.approx(round(t / GRID.slot_s), abs=1e-6)


def _slot_minus_fluid_slots(se, arrivals):
    """Per client, round robin's slot-form finish minus its fluid finish, in slots (flat channel)."""
    fluid, _ = _run(RoundRobin(), se, arrivals)
    slot, _ = _run(RoundRobin(fidelity="slot"), se, arrivals)
    return np.array([(slot[k] - fluid[k]) / GRID.slot_s for k in fluid])


def test_round_robin_slot_lags_fluid_by_under_two_slots_for_a_transfer_alone():
    # A transfer alone on the band: the slot form's first grant is at the next slot boundary (a
    # wait in [0, 1) slot), then it sends the fluid's rate (all n_rb RBs) slot by slot and ends at
    # the end of the slot that empties its buffer (a last block in (0, 1] slot: the rest of that
    # slot, [0, 1) slot, is rounding).  So slot - fluid is in [0, 2) slots, and both parts are
    # approached with random starts and sizes: the bound is the tight one (a wrong 1 slot fails).
    rng = np.random.default_rng(11)
    per_slot_bits = GRID.n_rb * GRID.hz_per_rb * GRID.slot_s * 2.0  # 2 bit/s/Hz on the whole band
    lags = np.concatenate([_slot_minus_fluid_slots([2.0], [(0, float(rng.uniform(0.0, 5.0)) * GRID.slot_s,
                                                            float(rng.uniform(0.5, 6.0)) * per_slot_bits)])
                           for _ in range(60)])
    assert lags.min() >= -1e-9
    assert lags.max() < 2.0
    assert lags.max() > 1.7  # approached: a claim of "within one slot" would be false


def test_round_robin_slot_and_fluid_drift_further_apart_when_transfers_share_the_band():
    # Sharing, the other transfers' starts and ends move to slot boundaries too and the split is in
    # whole RBs, so the two-slot bound of a transfer alone does not hold: two clients with random
    # starts and sizes on a flat channel differ by more than 2 slots (measured 2.1; with 4 clients
    # 3.4, with 8 about 4), in both directions.
    rng = np.random.default_rng(1)
    worst = []
    for _ in range(40):
        se = rng.uniform(0.5, 3.0, 2)
        arrivals = [(k, float(rng.uniform(0, 0.02)), float(rng.uniform(1e4, 3e5))) for k in range(2)]
        worst.append(np.abs(_slot_minus_fluid_slots(se, arrivals)).max())
    assert 2.0 < max(worst) < 3.0


def test_round_robin_slot_hand_calculation_of_a_short_case():
    # 51 RBs, two clients with data: 26 and 25 RBs, the odd one to the client at position turn mod 2.
    # Client 0 needs 3 slots' worth at 25 RBs: 3 x 25 x (20 MHz / 51) x 0.5 ms x 2 bit/Hz.
    per_rb_slot = GRID.hz_per_rb * GRID.slot_s  # bits per RB per slot at 1 bit/s/Hz
    bits0 = 3 * 25 * per_rb_slot * 2.0
    bits1 = 10 * 51 * per_rb_slot * 1.0
    finish, _ = _run(RoundRobin(fidelity="slot"), SE, [(0, 0.0, bits0), (1, 0.0, bits1)])
    # slots 0, 1, 2: client 0 gets 26, 25, 26 RBs (77 >= 75 RB-slots) and ends after slot 2
    assert finish[0] == pytest.approx(3 * GRID.slot_s)
    # client 1: 25 + 26 + 25 = 76 RB-slots in slots 0-2, then 51 a slot: 510 - 76 = 434 = 8 x 51 + 26
    assert finish[1] == pytest.approx((3 + 9) * GRID.slot_s)


def test_max_rate_serves_the_best_channel_first():
    finish, _ = _run(MaxRate(), SE, [(0, 0.0, 20e6), (1, 0.0, 10e6)])
    assert finish[0] == pytest.approx(0.5, rel=1e-12)  # alone at 40 Mbit/s
    assert finish[1] == pytest.approx(1.0, rel=1e-12)  # then 0.5 s alone at 20 Mbit/s


def test_proportional_fair_slot_enumerated_by_hand():
    # t_c = 2 slots: T <- T/2 + r/2.  Rates linear in the RBs (per RB: r0 = 40/51, r1 = 20/51 Mbit/s),
    # so every RB of a client has the metric (r/51) / T.  Buffers of two slots' worth each: client 0
    # 2 x 51 RB-slots at 2 bit/Hz, client 1 2 x 51 at 1 bit/Hz.
    # Slot 0: both T = 0 (metric inf), a tie on every RB: the lower RB count first, then the lower
    #   index, so the band is dealt out one RB each: client 0 gets 26, client 1 25.  Served
    #   40 x 26/51 = 20.39 and 20 x 25/51 = 9.80 Mbit/s: T0 = 10.196, T1 = 4.902.  Left: 76 and 77 RB-slots.
    # Slot 1: metrics 0.784/10.196 = 0.077 < 0.392/4.902 = 0.080: client 1, all 51 (its need is 77).
    #   T0 = 5.098, T1 = 2.451 + 10 = 12.451; client 1 has 26 left.
    # Slot 2: 0.784/5.098 = 0.154 > 0.392/12.451 = 0.031: client 0, 51 RBs (25 left).  T0 = 22.549, T1 = 6.225.
    # Slot 3: 0.784/22.549 = 0.035 < 0.392/6.225 = 0.063: client 1 its need, 26; the other 25 to client 0,
    #   its need: both end after slot 3.  (Before the marginal rule the tie in slot 0 went whole to
    #   client 0, and client 0 ended a slot earlier.)
    per_rb_slot = GRID.hz_per_rb * GRID.slot_s
    bits0, bits1 = 2 * 51 * per_rb_slot * 2.0, 2 * 51 * per_rb_slot * 1.0
    band = _grants(ProportionalFair(fidelity="slot", time_constant_slots=2.0), SE, [(0, 0.0, bits0), (1, 0.0, bits1)],
                   trace_slots=True)
    assert [(t.slot, t.client, t.rbs) for t in band.slot_trace] == [
        (0, 0, 26), (0, 1, 25), (1, 1, 51), (2, 0, 51), (3, 0, 25), (3, 1, 26)]
    assert band.grants(0).in_band_s == pytest.approx(4 * GRID.slot_s)
    assert band.grants(1).in_band_s == pytest.approx(4 * GRID.slot_s)
    # the fluid form (equal shares) ends the pair at the same times to within a slot here
    fluid, _ = _run(ProportionalFair(), SE, [(0, 0.0, bits0), (1, 0.0, bits1)])
    assert fluid[0] == pytest.approx(4 * GRID.slot_s) and fluid[1] == pytest.approx(4 * GRID.slot_s)


@pytest.mark.slow  # 2000 slots per case (about 1 s idle)
@pytest.mark.parametrize(("time_constant_slots", "first_end_s"), [(10.0, 0.803), (100.0, 0.834), (1000.0, 0.942)])
def test_proportional_fair_fluid_against_slot_on_the_two_client_case(time_constant_slots, first_end_s):
    # The fluid form (equal shares: the long-run PF split) is round-robin's: 0.8 and 1.0 s.  The
    # slot form's averaging transient: client 1 arrives with T = 0 and gets the band to itself
    # until its average catches up, which delays client 0 by 3, 34 and 142 ms for t_c = 10, 100
    # and 1000 slots (5, 50, 500 ms); the last transfer ends at the same time (the work is the
    # same and the band is never idle).
    slot, _ = _run(ProportionalFair(fidelity="slot", time_constant_slots=time_constant_slots), SE, CASE)
    fluid, _ = _run(ProportionalFair(), SE, CASE)
    assert fluid[0] == pytest.approx(0.8, rel=1e-12) and fluid[1] == pytest.approx(1.0, rel=1e-12)
    assert slot[0] == pytest.approx(first_end_s, abs=1e-9)
    assert abs(slot[1] - fluid[1]) <= GRID.slot_s


def test_grant_latency_delays_a_transfer_by_its_slots():
    finish, _ = _run(RoundRobin(scheduling_request_slots=2, buffer_status_report_slots=1, k2_slots=1), SE,
                     [(0, 0.0, 20e6)])
    assert finish[0] == pytest.approx(0.5 + 4 * GRID.slot_s, rel=1e-12)


class _StubHarq:
    """HARQ stub with the protocol's ``send``: one transport block, ``copies(rng)`` transmissions
    of it, 8 ms round trips, given up when ``lost`` (a drawn or fixed fate)."""

    def __init__(self, copies, lost=False):
        self.copies, self.lost = copies, lost

    def send(self, payload_bits, rate_bps, sinr_db, rng=None):
        from sfl_sim.channel.protocols import HarqSend

        n = self.copies(rng)
        return HarqSend(n * payload_bits / rate_bps + (n - 1) * 8e-3, float(n - 1), not self.lost, 1)

    def slot_block(self, rate_bps, sinr_db):
        return np.zeros(np.size(rate_bps)), np.ones(np.size(rate_bps))


def test_slot_harq_resends_failed_blocks_after_the_round_trip():
    bits = 10 * 51 * GRID.hz_per_rb * GRID.slot_s * 2.0  # 10 slots alone
    clean, _ = _run(RoundRobin(fidelity="slot"), SE, [(0, 0.0, bits)])
    lossy, _ = _run(RoundRobin(fidelity="slot"), SE, [(0, 0.0, bits)],
                    harq=_StubHarq(lambda rng: 1 + int(rng.random() < 0.5)),
                    block_rng=lambda k, j: np.random.default_rng([1, k, j]))
    assert clean[0] == pytest.approx(10 * GRID.slot_s)
    assert lossy[0] >= clean[0] + 8e-3  # at least one copy waited its round trip


def test_slot_harq_counts_the_failed_blocks_of_a_transfer():
    calls = []

    def first_block_twice(rng):
        calls.append(1)
        return 2 if len(calls) == 1 else 1

    env = simpy.Environment()
    band = open_band(env, RoundRobin(fidelity="slot"), GRID, _linear_link(SE), lambda ids: np.ones(ids.size),
                lambda *a: None, _StubHarq(first_block_twice), lambda k, j: np.random.default_rng([0, k, j]))
    done = band.put(0, 3 * 51 * GRID.hz_per_rb * GRID.slot_s * 2.0)  # 3 slots' worth alone
    env.run(done)
    assert band.failed_blocks(0) == 1 and not band.gave_up(0)
    assert env.now == pytest.approx(8e-3 + 2 * GRID.slot_s)  # the failed block waits its round trip, then a slot


@pytest.mark.parametrize("mode", ["expected", "sampled"])
@pytest.mark.parametrize("chase_combining", [False, True])
def test_slot_harq_is_the_static_paths_model_a_hopeless_block_goes_max_transmissions_times(mode, chase_combining):
    """The band asks the cell's own HARQ model.  Hand calculation: at -30 dB (below CQI 1: every
    copy fails, combined or not, q_m = 1) a one-slot block (the whole grid, 1 bit/s/Hz) goes
    max_transmissions = 4 times, 8 ms apart, and is given up: 3 retransmissions, and the transfer
    ends after its 4th copy's slot, 4 x 0.5 ms + 3 x 8 ms = 26 ms (the static path's HARQ time
    M x copy + (M - 1) x rtt with one block).  Before: copies without limit (it never ended)."""
    from sfl_sim.channel import Harq, McsTableRate

    harq = Harq(McsTableRate(mapping="bler"), mode=mode, max_transmissions=4, harq_rtt_s=8e-3,
                chase_combining=chase_combining)

    def hopeless(ids, bandwidth_hz, fading):
        return np.asarray(bandwidth_hz, dtype=float), np.full(ids.size, -30.0), np.ones(ids.size)

    env = simpy.Environment()
    band = open_band(env, RoundRobin(fidelity="slot"), GRID, hopeless, lambda ids: np.ones(ids.size), lambda *a: None,
                harq, lambda k, j: np.random.default_rng([0, k, j]))
    done = band.put(0, 51 * GRID.hz_per_rb * GRID.slot_s)  # one slot of the whole grid
    env.run(done)
    assert band.gave_up(0) and band.failed_blocks(0) == 3
    assert env.now == pytest.approx(4 * GRID.slot_s + 3 * 8e-3, rel=1e-9)
    # the static path's answer for the same block: the same copies, fate and time
    want = harq.send(51 * GRID.hz_per_rb * GRID.slot_s, 20e6, -30.0, np.random.default_rng(0))
    assert not want.delivered and want.retransmissions == 3 and want.time_s == pytest.approx(env.now, rel=1e-9)


def _sim(scheduler):
    cell = small_cell(FixedDistancePlacement([150.0, 350.0]), n_clients=2, uplink_bandwidth_hz=20e6)
    return Simulator(cell, np.ones(2), 1.0, scheduler=scheduler, numerology=1)


def test_the_engine_uplink_goes_through_the_band():
    sim = _sim(RoundRobin())
    cell = sim.cell
    out, ctx = timed_uploads(sim, [(0, 0.0, 1_000_000), (1, 0.0, 10_000)])
    # client 1 shares half the grid until it ends, then client 0 has the whole grid
    ids = np.array([0, 1])
    half = cell.uplink_link_at_bandwidth(ids, np.full(2, FULL_HZ / 2)).rate_bps
    whole0 = cell.uplink_link_at_bandwidth([0], [FULL_HZ]).rate_bps[0]
    t1 = 8 * 10_000 / half[1]
    t0 = t1 + (8 * 1_000_000 - half[0] * t1) / whole0
    assert out[1] == (DELIVERED, pytest.approx(t1, rel=1e-12))
    assert out[0] == (DELIVERED, pytest.approx(t0, rel=1e-12))
    assert [b.end_s - b.start_s for b in ctx.busy[1]] == [pytest.approx(t1, rel=1e-12)]
    assert sim.counters.uplink_bytes == 1_010_000
    # each client's record counts its attempt, as without a scheduler (clients.csv, rounds.csv)
    assert [(ctx.notes.traffic[k].uplink_attempts, ctx.notes.traffic[k].uplink_bytes) for k in (0, 1)] == [
        (1, 1_000_000), (1, 10_000)]
    assert ctx.notes.uplink_attempts() == 2


def _processor_sharing(arrivals, rate_of):
    """Finish times of ``(client, start_s, bits)`` under exact processor sharing, computed apart
    from the band (no SimPy, no tables): between two changes each of the n clients with data sends
    at ``rate_of(client, n)``; the next change is the next arrival or the earliest finish."""
    pending = sorted(arrivals, key=lambda a: a[1])
    left, finish, now = {}, {}, 0.0
    while pending or left:
        n = len(left)
        ends = {k: now + b / rate_of(k, n) for k, b in left.items()}
        first_end = min(ends.values(), default=float("inf"))
        next_arrival = pending[0][1] if pending else float("inf")
        step = min(first_end, next_arrival)
        for k in left:
            left[k] -= rate_of(k, n) * (step - now)
        now = step
        for k in [k for k, t in ends.items() if t == first_end and step == first_end]:
            finish[k] = now
            del left[k]
        while pending and pending[0][1] == now:
            k, _, bits = pending.pop(0)
            left[k] = bits
    return finish


def test_a_round_of_computing_then_uploading_under_round_robin_matches_processor_sharing():
    """Three clients compute 1 GFLOP (at 1, 1.1 and 1.25 GFLOP/s: they start uploading at 1, 0.909
    and 0.8 s) and upload 8 MB each through round robin's fluid band, their uploads overlapping;
    the round ends when the last upload does."""
    cell = small_cell(FixedDistancePlacement([100.0, 250.0, 400.0]), n_clients=3, uplink_bandwidth_hz=20e6)
    flops = np.array([1e9, 1.1e9, 1.25e9])
    sim = Simulator(cell, flops, 1.0, downlink_mode="ideal", scheduler=RoundRobin(), numerology=1)
    nbytes, work = 8_000_000, 1e9
    ends = {}

    def round_process(ctx):
        def client(k):
            yield from ctx.compute(k, work, "client_step")
            value = yield ctx.upload(k, nbytes, "client_model")
            ends[k] = (value, ctx.now_s)

        yield ctx.all_of([ctx.process(client(k)) for k in range(3)])

    duration_s = sim.run_round(round_process, np.arange(3))
    # each client's rate on n_rb / n RBs, from the cell (power control sees the n_rb / n RBs)
    rates = {(k, n): float(cell.uplink_link_at_bandwidth([k], [FULL_HZ / n]).rate_bps[0])
             for k in range(3) for n in (1, 2, 3)}
    want = _processor_sharing([(k, work / flops[k], 8.0 * nbytes) for k in range(3)], lambda k, n: rates[k, n])
    alone = {k: work / flops[k] + 8.0 * nbytes / rates[k, 1] for k in range(3)}
    assert all(want[k] > alone[k] + 0.1 for k in range(3))  # every upload shared the band a while
    for k in range(3):
        assert ends[k] == (DELIVERED, pytest.approx(want[k], rel=1e-9))
    assert duration_s == pytest.approx(max(want.values()), rel=1e-9)


def test_static_keeps_the_round_share():
    from sfl_sim.channel import StaticScheduler

    plain, _ = timed_uploads(_sim(None), [(0, 0.0, 100_000), (1, 0.0, 10_000)])
    static, _ = timed_uploads(_sim(StaticScheduler()), [(0, 0.0, 100_000), (1, 0.0, 10_000)])
    assert plain == static


def test_a_client_leaving_mid_transfer_is_withdrawn_from_the_band():
    class LeavesAt:
        """Client 1 goes offline 1 ms into the round."""

        def online(self, clients, now_s):
            return np.ones(np.size(clients), dtype=bool)

        def next_change_s(self, client, now_s):
            return now_s + 1e-3 if client == 1 else np.inf

    cell = small_cell(FixedDistancePlacement([150.0, 350.0]), n_clients=2, uplink_bandwidth_hz=20e6)
    sim = Simulator(cell, np.ones(2), 1.0, scheduler=RoundRobin(), availability=LeavesAt())
    out, ctx = timed_uploads(sim, [(0, 0.0, 1_000_000), (1, 0.0, 1_000_000)])
    assert out[1] == (Lost("unavailable"), pytest.approx(1e-3))
    whole0 = cell.uplink_link_at_bandwidth([0], [FULL_HZ]).rate_bps[0]
    half0 = cell.uplink_link_at_bandwidth(np.array([0, 1]), np.full(2, FULL_HZ / 2)).rate_bps[0]
    assert out[0][1] == pytest.approx(1e-3 + (8e6 - half0 * 1e-3) / whole0, rel=1e-9)


def test_unicast_downlink_copies_share_the_downlink_grid():
    cell = small_cell(FixedDistancePlacement([150.0, 350.0]), n_clients=2, uplink_bandwidth_hz=20e6,
                      downlink_bandwidth_hz=20e6)
    sim = Simulator(cell, np.ones(2), 1.0, downlink_mode="unicast", scheduler=RoundRobin())
    out = {}

    def round_process(ctx):
        start = ctx.now_s
        out["value"] = yield ctx.broadcast(100_000, "global_model")
        out["duration"] = ctx.now_s - start

    sim.run_round(round_process, np.array([0, 1]))
    ids = np.array([0, 1])
    gains = cell.gain_linear[ids]

    def rates(bandwidth_hz):
        b = np.full(2, bandwidth_hz)
        return cell.link_budget.link(ids, b, 1.0 * b / 20e6, gains, cell.noise_psd_w_per_hz).rate_bps

    half, whole = rates(FULL_HZ / 2), rates(FULL_HZ)
    first = 8e5 / half.max()  # the nearer client's copy ends first; the other then has the whole grid
    slow = int(np.argmin(half))
    want = first + (8e5 - half[slow] * first) / whole[slow]
    assert out["value"] is not None and out["duration"] == pytest.approx(want, rel=1e-12)
    assert sim.counters.downlink_bytes == 200_000


@pytest.mark.slow
@pytest.mark.parametrize("scheduler", [{"name": "round_robin"}, {"name": "proportional_fair", "fidelity": "slot"}])
def test_a_scheduled_scenario_runs_end_to_end(tmp_path, scheduler):
    import csv

    import yaml

    from sfl_sim.cli import main
    from tests.runs.test_end_to_end import SMALL

    cell = {**SMALL.get("cell", {}), "scheduler": scheduler, "uplink_bandwidth_hz": 5e6, "fading": "rayleigh"}
    data = {**SMALL, "rounds": 2, "algorithms": [{"name": "fedavg"}], "cell": cell}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["scenario", str(path), "-o", str(tmp_path / "o"), "--no-progress"]) == 0
    with (tmp_path / "o" / "fedavg" / "rounds.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2


@pytest.mark.slow
@pytest.mark.parametrize("override, words", [
    ("cell.scheduler={name: proportional_fair, time_constant_slots: 0}",
     ["cell.scheduler.time_constant_slots", "0"]),
    ("cell.scheduler={name: round_robin, k2_slots: -1}", ["cell.scheduler.k2_slots", "-1"]),
    ("cell.numerology=4", ["cell.numerology", "4"]),
    ("cell.scheduler={name: proportional_fair, fidelity: slot, fading_per_slot: true}",
     ["cell.scheduler.fading_per_slot: got True; allowed: nothing (the setting is gone", "Doppler"]),
    ("cell.scheduler=roundrobin", ["cell.scheduler", "roundrobin", "round_robin"]),
])
def test_bad_scheduler_input_is_one_line(tmp_path, capsys, override, words):
    from sfl_sim.cli import main
    from tests.catalog.test_component_params import BASE

    code = main(["scenario", str(BASE), "--check", "--no-progress", "-o", str(tmp_path / "out"), "--set", override])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)


def test_closing_the_band_notes_the_transfers_still_on_the_air():
    env = simpy.Environment()
    notes = []
    band = open_band(env, RoundRobin(), GRID, _linear_link(SE), lambda ids: np.ones(ids.size),
                lambda *a: notes.append(a))
    done = band.put(0, 40e6)  # 1 s alone
    env.run(until=0.25)
    band.close()
    env.run(until=2.0)
    assert not done.triggered and notes == [(0, 0.0, 0.25, 1.0)]


def _snr_link(se_bps_per_hz):
    """:func:`_linear_link` whose SINR grows as the grant shrinks: 10 log10(51 / m) dB on m RBs
    (1 W spread over fewer RBs), so the record's SINR says which grants it came from."""
    rate_of = _linear_link(se_bps_per_hz)

    def link_at(ids, bandwidth_hz, fading):
        rate, _, power = rate_of(ids, bandwidth_hz, fading)
        return rate, 10.0 * np.log10(FULL_HZ / np.asarray(bandwidth_hz, dtype=float)), power

    return link_at


def _grants(policy, se, arrivals, trace_slots=False):
    env = simpy.Environment()
    band = open_band(env, policy, GRID, _snr_link(se), lambda ids: np.ones(ids.size), lambda *a: None,
                trace_slots=trace_slots)

    def transfer(client, start_s, bits):
        yield env.timeout(start_s)
        yield band.put(client, bits)

    for args in arrivals:
        env.process(transfer(*args))
    env.run()
    return band


def test_the_fluid_band_records_its_grants_by_the_hand_calculation():
    band = _grants(RoundRobin(), SE, CASE)
    # client 0: 0.2 s of 51 RBs, then 0.6 s of 25.5; client 1: 0.6 s of 25.5, then 0.2 s of 51
    for k, bits in ((0, 20e6), (1, 10e6)):
        g = band.grants(k)
        assert g.rb_s == pytest.approx(51 * 0.2 + 25.5 * 0.6, rel=1e-12)
        assert g.in_band_s == pytest.approx(0.8, rel=1e-12) and g.granted_s == pytest.approx(0.8, rel=1e-12)
        assert g.bits == pytest.approx(bits, rel=1e-9) and g.transport_blocks is None
        # SINR 0 dB alone, 10 log10(2) on half the band: 0.6 of the 0.8 s
        assert g.sinr_db_s / g.granted_s == pytest.approx(0.75 * 10 * np.log10(2.0), rel=1e-9)
    assert band.grants(7) is None and band.slot_trace is None


def test_the_slot_band_records_its_transport_blocks_and_the_trace():
    per_rb_slot = GRID.hz_per_rb * GRID.slot_s
    bits0, bits1 = 3 * 25 * per_rb_slot * 2.0, 10 * 51 * per_rb_slot * 1.0  # the short hand case above
    band = _grants(RoundRobin(fidelity="slot"), SE, [(0, 0.0, bits0), (1, 0.0, bits1)], trace_slots=True)
    g0, g1 = band.grants(0), band.grants(1)
    assert g0.transport_blocks == 3 and g1.transport_blocks == 12
    # client 0: 26 + 25 + 24 RBs (its need in slot 2); client 1: 25 + 26 + 27, 8 x 51, then 24
    assert g0.rb_s == pytest.approx(75 * GRID.slot_s) and g1.rb_s == pytest.approx(510 * GRID.slot_s)
    assert g0.bits == pytest.approx(bits0) and g1.bits == pytest.approx(bits1)
    assert g1.in_band_s == pytest.approx(12 * GRID.slot_s) and g1.granted_s == pytest.approx(12 * GRID.slot_s)
    trace = band.slot_trace
    assert [(t.slot, t.client, t.rbs) for t in trace[:4]] == [(0, 0, 26), (0, 1, 25), (1, 0, 25), (1, 1, 26)]
    assert len(trace) == 15 and not any(t.failed for t in trace)
    assert sum(t.block_bits for t in trace if t.client == 1) == pytest.approx(bits1)
    # the SINR of client 1's grants: 3 slots at about half the band, 9 at the whole (0 dB)
    sinr = [10 * np.log10(51 / t.rbs) for t in trace if t.client == 1]
    assert g1.sinr_db_s / g1.granted_s == pytest.approx(np.mean(sinr), rel=1e-9)
