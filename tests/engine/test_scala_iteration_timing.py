"""One SCALA iteration over two clients at fixed distances: simulated time worked out by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.algorithms.split.scala import SCALA
from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.engine import Simulator
from tests.helpers import tiny_setup

BANDWIDTH_HZ = 1.0e6
TX_POWER_W = 0.2
NOISE_DBM_PER_HZ = -174.0
DISTANCES_M = [100.0, 300.0]
CLIENT_FLOPS_PER_S = np.array([1.0e5, 2.0e5])
SERVER_FLOPS_PER_S = 1.0e7


def _cell() -> Cell:
    rng = np.random.default_rng(0)
    return Cell(FixedDistancePlacement(DISTANCES_M), TR36814Macro(), NoShadowing(), ShannonRate(), EqualAllocation(),
                n_clients=2, tx_power_w=TX_POWER_W, noise_psd_dbm_per_hz=NOISE_DBM_PER_HZ,
                uplink_bandwidth_hz=BANDWIDTH_HZ, placement_rng=rng, shadowing_rng=rng)


def _hand_rate_bps(distance_m: float) -> float:
    # Each of the 2 clients gets half the band; PL = 128.1 + 37.6 log10(d_km).
    b = BANDWIDTH_HZ / 2
    gain = 10 ** (-(128.1 + 37.6 * math.log10(distance_m / 1000)) / 10)
    noise_w = 10 ** ((NOISE_DBM_PER_HZ - 30) / 10) * b
    return b * math.log2(1 + TX_POWER_W * gain / noise_w)


def test_one_scala_iteration_matches_hand_computation() -> None:
    setup = tiny_setup(n_clients=2, samples_per_client=8, batch_size=8, local_iterations=1)
    sim = Simulator(_cell(), CLIENT_FLOPS_PER_S, SERVER_FLOPS_PER_S, downlink_mode="ideal")
    algo = SCALA(setup)
    cohort = np.array([0, 1])
    duration_s = sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)

    b_k = 4  # eq. (3): equal data, B = 8 -> 4 each
    # Client conv 1->2 channels, 3x3 kernel, 3x3 output: 2 * (2*3*3) * (1*3*3) = 324 FLOPs/sample.
    conv_fwd = 2 * 2 * 3 * 3 * 1 * 3 * 3
    conv_bwd = conv_fwd  # weight gradient only: the input image needs no gradient
    # Server Linear(18, 3): forward 2*18*3; the server step also takes the weight gradient of the
    # P_s-adjusted loss and the activation gradient of the P_k-adjusted loss: 2*18*3 each.
    lin = 2 * 18 * 3
    server_step = 3 * lin
    act_bytes = b_k * 18 * 4 + b_k * 8  # float32 activations + int64 labels
    model_bytes = (2 * 1 * 3 * 3 + 2) * 4  # conv weight + bias, float32

    rates = [_hand_rate_bps(d) for d in DISTANCES_M]
    up_activations = [b_k * conv_fwd / f + 8 * act_bytes / r for f, r in zip(CLIENT_FLOPS_PER_S, rates, strict=True)]
    server_s = 2 * b_k * server_step / SERVER_FLOPS_PER_S
    finish = [b_k * conv_bwd / f + 8 * model_bytes / r for f, r in zip(CLIENT_FLOPS_PER_S, rates, strict=True)]
    expected_s = max(up_activations) + server_s + max(finish)  # ideal downlink: broadcast and G_k take 0 s

    assert duration_s == pytest.approx(expected_s, rel=1e-9)
    c = sim.counters
    assert c.uplink_bytes == 2 * act_bytes + 2 * model_bytes
    assert c.client_flops == pytest.approx(2 * b_k * (conv_fwd + conv_bwd))
    assert c.server_flops == pytest.approx(2 * b_k * server_step)
    # Downlink: the client model to both clients and each client's gradient (float32, like A_k).
    assert c.downlink_bytes == 2 * model_bytes + 2 * b_k * 18 * 4


def test_broadcast_downlink_adds_time() -> None:
    cohort = np.array([0, 1])
    durations = []
    for mode in ("ideal", "broadcast"):
        setup = tiny_setup()
        cell = Cell(FixedDistancePlacement(DISTANCES_M), TR36814Macro(), NoShadowing(), ShannonRate(),
                    EqualAllocation(), n_clients=2, tx_power_w=TX_POWER_W, noise_psd_dbm_per_hz=NOISE_DBM_PER_HZ,
                    uplink_bandwidth_hz=BANDWIDTH_HZ, downlink_bandwidth_hz=BANDWIDTH_HZ, server_tx_power_w=1.0,
                    placement_rng=np.random.default_rng(0), shadowing_rng=np.random.default_rng(0))
        sim = Simulator(cell, CLIENT_FLOPS_PER_S, SERVER_FLOPS_PER_S, downlink_mode=mode)
        algo = SCALA(setup)
        durations.append(sim.run_round(lambda ctx, algo=algo: algo.run_round(ctx, cohort), cohort))
    assert durations[1] > durations[0]
