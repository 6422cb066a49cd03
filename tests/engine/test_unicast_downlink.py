"""Unicast downlink and the uplink power the engine exposes, timed by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.channel import (
    Cell,
    EqualAllocation,
    FixedDistancePlacement,
    NoShadowing,
    OpenLoopPowerControl,
    ShannonRate,
    TR36814Macro,
)
from sfl_sim.engine import Simulator

DISTANCES_M = [100.0, 300.0, 500.0]
DOWN_HZ = 20e6
SERVER_W = 1.0
N0_W_PER_HZ = 10 ** ((-174.0 - 30.0) / 10)
NBYTES = 250_000


def _gain(d: float) -> float:
    return 10 ** (-(128.1 + 37.6 * math.log10(d / 1000.0)) / 10)


def _cell(**extra) -> Cell:
    return Cell(FixedDistancePlacement(DISTANCES_M), TR36814Macro(), NoShadowing(), ShannonRate(), EqualAllocation(),
                n_clients=3, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0, uplink_bandwidth_hz=3e6,
                downlink_bandwidth_hz=DOWN_HZ, server_tx_power_w=SERVER_W, placement_rng=np.random.default_rng(0),
                shadowing_rng=np.random.default_rng(1), **extra)


def _share_rate_bps(d: float, k: int) -> float:
    # Client's share b = B / k carries the server's power P b / B (one amplifier, flat PSD).
    b = DOWN_HZ / k
    return b * math.log2(1 + SERVER_W * b / DOWN_HZ * _gain(d) / (b * N0_W_PER_HZ))


def _run(mode: str, body, cohort=(0, 1, 2), cell=None) -> float:
    sim = Simulator(cell or _cell(), np.ones(3), 1.0, downlink_mode=mode)
    return sim.run_round(body, np.array(cohort))


def test_a_gradient_download_takes_the_clients_rate_on_its_cohort_share() -> None:
    def body(ctx):
        yield ctx.download(2, NBYTES, "gradients")

    expect = 8 * NBYTES / _share_rate_bps(500.0, 3)
    assert _run("unicast", body) == pytest.approx(expect, rel=1e-12)
    # The share is the cohort's: with two clients in the round the band is halved, not thirded.
    assert _run("unicast", body, cohort=(1, 2)) == pytest.approx(8 * NBYTES / _share_rate_bps(500.0, 2), rel=1e-12)
    assert _run("ideal", body) == 0.0


def test_a_model_for_the_cohort_goes_as_one_copy_per_client() -> None:
    def body(ctx):
        yield ctx.broadcast(NBYTES, "model")

    unicast = max(8 * NBYTES / _share_rate_bps(d, 3) for d in DISTANCES_M)
    assert _run("unicast", body) == pytest.approx(unicast, rel=1e-12)
    full_band_worst = DOWN_HZ * math.log2(1 + SERVER_W * _gain(500.0) / (DOWN_HZ * N0_W_PER_HZ))
    assert _run("broadcast", body) == pytest.approx(8 * NBYTES / full_band_worst, rel=1e-12)
    # One copy per client on a third of the band is slower than one broadcast on all of it.
    assert _run("unicast", body) > _run("broadcast", body)


def test_bytes_are_counted_per_receiving_client_in_every_mode() -> None:
    for mode in ("ideal", "broadcast", "unicast"):
        sim = Simulator(_cell(), np.ones(3), 1.0, downlink_mode=mode)

        def body(ctx):
            yield ctx.broadcast(NBYTES, "model")
            yield ctx.download(0, 100, "gradients")

        sim.run_round(body, np.array([0, 1, 2]))
        assert sim.counters.downlink_bytes == 3 * NBYTES + 100


def test_round_context_gives_the_uplink_power_of_the_power_control() -> None:
    seen = {}

    def body(ctx):
        seen.update({k: ctx.uplink_tx_power_w(k) for k in (0, 1, 2)})
        yield ctx.env.timeout(0.0)

    _run("ideal", body)
    assert seen == {0: 0.2, 1: 0.2, 2: 0.2}
    pc = OpenLoopPowerControl(p0_dbm=-100.0, alpha=0.7, p_max_dbm=23.0, subcarrier_spacing_hz=15e3)
    _run("ideal", body, cell=_cell(power_control=pc))
    for k, d in enumerate(DISTANCES_M):  # 1 MHz each: 6 RBs of 180 kHz
        pl = 128.1 + 37.6 * math.log10(d / 1000.0)
        assert seen[k] == pytest.approx(10 ** ((min(23.0, -100.0 + 10 * math.log10(6) + 0.7 * pl) - 30) / 10),
                                        rel=1e-12)
