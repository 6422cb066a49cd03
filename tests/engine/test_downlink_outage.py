"""A downlink with no usable rate is a downlink outage the outage policy handles (issue 36, item 4):
the payload is dropped after its last attempt, the client leaves the round (``downlink_outage``),
and the run goes on; the others receive at the slowest decodable rate."""
from __future__ import annotations

import numpy as np
import pytest

from sfl_sim.channel import (
    Cell,
    EqualAllocation,
    FixedDistancePlacement,
    McsTableRate,
    NoShadowing,
    OutagePolicy,
    RayleighFading,
    TR36814Macro,
)
from sfl_sim.engine import DELIVERED, Lost, Simulator
from sfl_sim.engine.radio import Downlink

NBYTES = 10_000
COHORT = np.array([0, 1])


def _cell(server_tx_power_w: float, fading=None) -> Cell:
    # mcs_table (gap mapping): no rate below CQI 1.  At 100 uW on 20 MHz the full-band SNRs are
    # +0.5 dB (100 m) and -24 dB (450 m: rate 0).
    rng = np.random.default_rng(0)
    return Cell(FixedDistancePlacement([100.0, 450.0]), TR36814Macro(), NoShadowing(), McsTableRate(),
                EqualAllocation(), n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e6, downlink_bandwidth_hz=20e6, server_tx_power_w=server_tx_power_w,
                placement_rng=rng, shadowing_rng=rng, fading=fading)


@pytest.mark.parametrize("mode", ["broadcast", "unicast"])
def test_a_client_without_downlink_rate_leaves_the_round_and_the_run_goes_on(mode) -> None:
    cell = _cell(1e-4)
    whole = cell.broadcast_link(COHORT).rate_bps
    share = cell.downlink_link(COHORT).rate_bps
    assert whole[0] > 0 and whole[1] == 0.0 and share[1] == 0.0
    sim = Simulator(cell, np.ones(2), 1.0, downlink_mode=mode)
    seen = {}

    def round_process(ctx):
        start = ctx.now_s
        seen["broadcast"] = yield ctx.broadcast(NBYTES, "model")
        seen["broadcast_s"] = ctx.now_s - start
        seen["download"] = yield ctx.download(1, NBYTES, "gradients")
        seen["upload"] = yield ctx.upload(1, NBYTES, "update")  # the client has left: nothing is sent
        seen["dropped"] = dict(ctx.dropped)

    sim.run_round(round_process, COHORT)
    expected_bps = whole[0] if mode == "broadcast" else share[0]
    assert seen["broadcast"] == DELIVERED
    assert seen["broadcast_s"] == pytest.approx(8 * NBYTES / expected_bps)
    assert seen["download"] == Lost("unavailable")  # it left at the broadcast
    assert seen["upload"] == Lost("unavailable")
    assert seen["dropped"] == {1: "downlink_outage"}
    assert sim.counters.dropped_transmissions == 1 and sim.counters.uplink_bytes == 0


def test_a_unicast_download_in_outage_is_lost_with_its_cause() -> None:
    sim = Simulator(_cell(1e-4), np.ones(2), 1.0, downlink_mode="unicast")
    seen = {}

    def round_process(ctx):
        seen["0"] = yield ctx.download(0, NBYTES, "gradients")
        seen["1"] = yield ctx.download(1, NBYTES, "gradients")
        seen["dropped"] = dict(ctx.dropped)

    sim.run_round(round_process, COHORT)
    assert seen["0"] == DELIVERED and seen["1"] == Lost("downlink_outage")
    assert seen["dropped"] == {1: "downlink_outage"}


def test_no_downlink_rate_at_all_drops_every_client_and_takes_no_time() -> None:
    sim = Simulator(_cell(1e-6), np.ones(2), 1.0, downlink_mode="broadcast")
    seen = {}

    def round_process(ctx):
        yield ctx.broadcast(NBYTES, "model")
        seen["now"] = ctx.now_s
        seen["dropped"] = dict(ctx.dropped)

    sim.run_round(round_process, COHORT)
    assert seen["now"] == 0.0 and seen["dropped"] == {0: "downlink_outage", 1: "downlink_outage"}


@pytest.mark.parametrize("mode", ["broadcast", "unicast"])
def test_retransmit_gives_the_client_fresh_fading_draws_up_to_max_attempts(mode) -> None:
    # Without fading a redraw changes nothing: every attempt fails, max_attempts in all.
    policy = OutagePolicy(max_attempts=4, on_outage="retransmit")
    down = Downlink(_cell(1e-4), COHORT, mode, np.random.default_rng(1), {}, policy)
    assert down.outage == {1} and down.attempts == {0: 1, 1: 4}
    # Rayleigh fading at 10 mW: client 1's SNR is -4 dB (on the whole band or on its half, which
    # carries half the power), CQI 1 needs -2.1 dB (gap 7.4 dB at BER 5e-5; efficiency 0.1523): a
    # draw above 1.6 (P = e^-1.6 = 0.2) brings it in.
    cell = _cell(1e-2, RayleighFading())
    assert cell.broadcast_link(COHORT).snr_db[1] == pytest.approx(-4.07, abs=0.01)
    rng = np.random.default_rng(3)
    down = Downlink(cell, COHORT, mode, rng, {}, OutagePolicy(max_attempts=50, on_outage="retransmit"))
    assert down.outage == set() and 1 < down.attempts[1] < 50
    rates = [down.broadcast_bps] if mode == "broadcast" else [down.unicast_bps[0], down.unicast_bps[1]]
    assert all(r > 0 for r in rates)
    # drop: one attempt
    down = Downlink(_cell(1e-4), COHORT, mode, np.random.default_rng(1), {}, OutagePolicy())
    assert down.outage == {1} and down.attempts[1] == 1


def test_a_client_in_downlink_outage_gets_no_copy_through_a_scheduled_band() -> None:
    # Unicast copies through a round-robin downlink band: client 1 (no usable rate) is dropped at
    # once and client 0 has the whole grid to itself, so its copy takes bits / (its whole-band rate).
    from sfl_sim.channel import RoundRobin

    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([100.0, 450.0]), TR36814Macro(), NoShadowing(), McsTableRate(),
                EqualAllocation(), n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=5e6, downlink_bandwidth_hz=20e6, server_tx_power_w=1e-4,
                placement_rng=rng, shadowing_rng=rng)
    sim = Simulator(cell, np.ones(2), 1.0, downlink_mode="unicast", scheduler=RoundRobin())
    seen = {}

    def round_process(ctx):
        start = ctx.now_s
        seen["broadcast"] = yield ctx.broadcast(NBYTES, "model")
        seen["broadcast_s"] = ctx.now_s - start
        seen["download"] = yield ctx.download(1, NBYTES, "gradients")
        seen["dropped"] = dict(ctx.dropped)

    sim.run_round(round_process, COHORT)
    whole_bps = cell.downlink_link_at_bandwidth([0], [20e6]).rate_bps[0]
    assert seen["broadcast"] == DELIVERED and seen["dropped"] == {1: "downlink_outage"}
    assert seen["broadcast_s"] == pytest.approx(8 * NBYTES / whole_bps, rel=1e-12)
    assert seen["download"] == Lost("unavailable")
    assert sim.counters.dropped_transmissions == 1
