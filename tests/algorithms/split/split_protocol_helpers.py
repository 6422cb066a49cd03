"""Shared pieces of the split-learning protocol tests: a two-client cell and the tiny model's sizes.

Tiny model (tests/conftest.py): client Conv2d(1, 2, 3) on 1x5x5 -> 2x3x3 activations
(18 floats per sample); server Flatten + Linear(18, 3).  Per-sample FLOPs (only matmul/conv
count, as torch's flop registry does):

* conv forward 2*Cout*Hout*Wout*Cin*k^2 = 2*2*3*3*1*3*3 = 324; its backward computes the weight
  gradient only (the image needs no gradient): 324;
* Linear(18, 3): 2*18*3 = 108 for the forward, the weight gradient and the input gradient each.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from sfl_sim.algorithms.split.messages import ClientActivations
from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.engine import Simulator

BANDWIDTH_HZ = 1.0e6
TX_POWER_W = 0.2
NOISE_DBM_PER_HZ = -174.0
DISTANCES_M = [100.0, 300.0]
CLIENT_FLOPS_PER_S = np.array([1.0e5, 2.0e5])
SERVER_FLOPS_PER_S = 1.0e7

CONV_FWD = 2 * 2 * 3 * 3 * 1 * 3 * 3  # 324
CONV_BWD = CONV_FWD
LIN = 2 * 18 * 3  # 108
ACT_BYTES_PER_SAMPLE = 18 * 4  # float32
LABEL_BYTES_PER_SAMPLE = 8  # int64
CLIENT_MODEL_BYTES = (2 * 1 * 3 * 3 + 2) * 4  # conv weight + bias = 80
LINEAR_18_3_BYTES = (18 * 3 + 3) * 4  # 228 (server part, and the SFLLocalLoss auxiliary head)


def simulator(downlink_mode: str = "ideal") -> Simulator:
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement(DISTANCES_M), TR36814Macro(), NoShadowing(), ShannonRate(), EqualAllocation(),
                n_clients=2, tx_power_w=TX_POWER_W, noise_psd_dbm_per_hz=NOISE_DBM_PER_HZ,
                uplink_bandwidth_hz=BANDWIDTH_HZ, downlink_bandwidth_hz=BANDWIDTH_HZ, server_tx_power_w=1.0,
                placement_rng=rng, shadowing_rng=rng)
    return Simulator(cell, CLIENT_FLOPS_PER_S, SERVER_FLOPS_PER_S, downlink_mode=downlink_mode)


def hand_rate_bps(distance_m: float) -> float:
    """Uplink rate with the band split equally between the 2 clients, PL = 128.1 + 37.6 log10(d_km)."""
    b = BANDWIDTH_HZ / 2
    gain = 10 ** (-(128.1 + 37.6 * math.log10(distance_m / 1000)) / 10)
    noise_w = 10 ** ((NOISE_DBM_PER_HZ - 30) / 10) * b
    return b * math.log2(1 + TX_POWER_W * gain / noise_w)


def concatenation_grads(algo, parts) -> list[torch.Tensor]:
    """G_k of each part from ``algo.server_on_concatenation``; part k is client k's (A_k, Y_k)."""
    replies = algo.server_on_concatenation([ClientActivations(k, a, y) for k, (a, y) in enumerate(parts)])
    return [reply.activation_grad for reply in replies]


def run_round(sim: Simulator, algo, cohort) -> float:
    cohort = np.asarray(cohort, dtype=np.int64)
    return sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)


def round_counts(sim: Simulator, algo, cohort) -> dict:
    """Run one round; return its duration and the counters it added."""
    before = sim.counters.as_dict()
    duration = run_round(sim, algo, cohort)
    after = sim.counters.as_dict()
    kinds = {k: after["by_kind"][k] - before["by_kind"].get(k, 0) for k in after["by_kind"]}
    out = {k: after[k] - before[k] for k in ("uplink_bytes", "downlink_bytes", "client_flops", "server_flops")}
    out["by_kind"] = {k: v for k, v in kinds.items() if v}
    out["duration_s"] = duration
    return out
