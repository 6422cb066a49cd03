"""SplitFed V1/V2/V3: bytes, FLOPs and simulated time of a round, worked out from the protocol by hand."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS, weighted_average
from sfl_sim.algorithms.split.splitfed import SplitFedV1, SplitFedV2, SplitFedV3
from sfl_sim.channel import (
    Cell,
    EqualAllocation,
    FixedDistancePlacement,
    NoShadowing,
    OutagePolicy,
    ShannonRate,
    TR36814Macro,
)
from sfl_sim.engine import Simulator
from tests.algorithms.split.split_protocol_helpers import (
    ACT_BYTES_PER_SAMPLE,
    CLIENT_FLOPS_PER_S,
    CLIENT_MODEL_BYTES,
    CONV_BWD,
    CONV_FWD,
    DISTANCES_M,
    LABEL_BYTES_PER_SAMPLE,
    LIN,
    SERVER_FLOPS_PER_S,
    hand_rate_bps,
    round_counts,
    simulator,
)
from tests.helpers import tiny_setup

B_K = 4  # eq. (3): two clients with equal data, B = 8
T = 2
N_CLIENTS = 2
ACTS = N_CLIENTS * T * B_K * ACT_BYTES_PER_SAMPLE  # activations up, and their gradients down
LABELS = N_CLIENTS * T * B_K * LABEL_BYTES_PER_SAMPLE
MODELS = N_CLIENTS * CLIENT_MODEL_BYTES
CLIENT_FLOPS = N_CLIENTS * T * B_K * (CONV_FWD + CONV_BWD)
# Server step per sample: forward, weight gradient and activation gradient of Linear(18, 3).
SERVER_STEP = 3 * LIN
SERVER_FLOPS = N_CLIENTS * T * B_K * SERVER_STEP


@pytest.mark.parametrize("name", ["splitfed_v1", "splitfed_v2", "cs_sfl"])
def test_v1_v2_round_counts(name: str) -> None:
    algo = ALGORITHMS.get(name)(tiny_setup(local_iterations=T))
    got = round_counts(simulator(), algo, [0, 1])
    assert got["by_kind"] == {
        "uplink/activations": ACTS, "uplink/labels": LABELS, "uplink/client_model": MODELS,
        "downlink/client_model": MODELS, "downlink/activation_gradients": ACTS,
        "client/client_forward": pytest.approx(N_CLIENTS * T * B_K * CONV_FWD),
        "client/client_backward": pytest.approx(N_CLIENTS * T * B_K * CONV_BWD),
        "server/server_step": pytest.approx(SERVER_FLOPS)}
    assert got["uplink_bytes"] == ACTS + LABELS + MODELS
    assert got["downlink_bytes"] == MODELS + ACTS
    assert got["client_flops"] == pytest.approx(CLIENT_FLOPS)
    assert got["server_flops"] == pytest.approx(SERVER_FLOPS)


def _client_times():
    rates = [hand_rate_bps(d) for d in DISTANCES_M]
    fwd = [B_K * CONV_FWD / f for f in CLIENT_FLOPS_PER_S]
    up = [8 * B_K * (ACT_BYTES_PER_SAMPLE + LABEL_BYTES_PER_SAMPLE) / r for r in rates]
    bwd = [B_K * CONV_BWD / f for f in CLIENT_FLOPS_PER_S]
    model_up = [8 * CLIENT_MODEL_BYTES / r for r in rates]
    return fwd, up, bwd, model_up, B_K * SERVER_STEP / SERVER_FLOPS_PER_S


def test_v1_round_time_by_hand() -> None:
    """T = 1: the per-client server jobs run first come, first served on the one server."""
    fwd, up, bwd, model_up, server_s = _client_times()
    arrival = [f + u for f, u in zip(fwd, up, strict=True)]
    end, free = [0.0, 0.0], 0.0
    for k in np.argsort(arrival):
        free = max(free, arrival[k]) + server_s
        end[k] = free
    expected = max(end[k] + bwd[k] + model_up[k] for k in range(2))
    got = round_counts(simulator(), SplitFedV1(tiny_setup(local_iterations=1)), [0, 1])
    assert got["duration_s"] == pytest.approx(expected, rel=1e-9)


def test_v2_round_time_by_hand_clients_take_turns() -> None:
    """T = 1, sequential clients: client 1 starts after client 0's backward; client 0's model
    upload overlaps client 1's turn."""
    fwd, up, bwd, model_up, server_s = _client_times()
    turn = [fwd[k] + up[k] + server_s + bwd[k] for k in range(2)]
    expected = max(turn[0] + model_up[0], turn[0] + turn[1] + model_up[1])
    got = round_counts(simulator(), SplitFedV2(tiny_setup(local_iterations=1)), [0, 1])
    assert got["duration_s"] == pytest.approx(expected, rel=1e-9)


def test_v2_round_longer_than_v1() -> None:
    v1 = round_counts(simulator(), SplitFedV1(tiny_setup(local_iterations=T)), [0, 1])["duration_s"]
    v2 = round_counts(simulator(), SplitFedV2(tiny_setup(local_iterations=T)), [0, 1])["duration_s"]
    assert v2 > 1.5 * v1
    # Parallel clients: the fixed server order can only add waiting (here the slow client 0 is
    # the bottleneck either way, so the round is as long as V1's).
    v2_parallel = round_counts(simulator(), SplitFedV2(tiny_setup(local_iterations=T), sequential_clients=False),
                               [0, 1])["duration_s"]
    assert v2 > v2_parallel >= v1


class _Recording(SplitFedV2):
    """SplitFedV2 that logs when each server step starts and ends on the simulated clock."""

    log: list

    def server_on_client(self, ctx, server, upload, want_reply):
        start = ctx.now_s
        reply = yield from super().server_on_client(ctx, server, upload, want_reply)
        self.log.append((upload.client, start, ctx.now_s))
        return reply


@pytest.mark.parametrize("sequential_clients,expected_order", [(True, [0, 0, 1, 1]), (False, [0, 1, 0, 1])])
def test_v2_server_steps_one_client_after_another(sequential_clients: bool, expected_order: list) -> None:
    algo = _Recording(tiny_setup(local_iterations=T), sequential_clients=sequential_clients)
    algo.log = []
    round_counts(simulator(), algo, [0, 1])
    assert [k for k, _, _ in algo.log] == expected_order
    for (_, _, end), (_, start, _) in zip(algo.log, algo.log[1:], strict=False):
        assert start >= end


def test_v2_trains_one_server_model_without_averaging() -> None:
    """V2's server model after the round is the result of 4 sequential SGD steps, no copies."""
    algo = SplitFedV2(tiny_setup(local_iterations=T))
    assert algo.server_mode.name == "sequential"
    round_counts(simulator(), algo, [0, 1])
    assert algo.meter.flops_per_sample["server_step"] == pytest.approx(SERVER_STEP)


def test_v3_round_counts_and_no_model_traffic_after_first_round() -> None:
    algo = SplitFedV3(tiny_setup(local_iterations=T))
    sim = simulator()
    first = round_counts(sim, algo, [0, 1])
    # Round 1: each newcomer downloads the initial client model once; no broadcast, no model upload.
    assert first["by_kind"] == {
        "uplink/activations": ACTS, "uplink/labels": LABELS,
        "downlink/client_model": MODELS, "downlink/activation_gradients": ACTS,
        "client/client_forward": pytest.approx(N_CLIENTS * T * B_K * CONV_FWD),
        "client/client_backward": pytest.approx(N_CLIENTS * T * B_K * CONV_BWD),
        "server/server_step": pytest.approx(SERVER_FLOPS)}
    second = round_counts(sim, algo, [0, 1])
    assert second["uplink_bytes"] == ACTS + LABELS
    assert second["downlink_bytes"] == ACTS  # gradients only
    assert second["client_flops"] == pytest.approx(CLIENT_FLOPS)
    assert second["server_flops"] == pytest.approx(SERVER_FLOPS)


def test_v3_keeps_distinct_client_models_across_rounds() -> None:
    algo = SplitFedV3(tiny_setup(local_iterations=T))
    sim = simulator()
    round_counts(sim, algo, [0, 1])
    after_first = {k: {n: t.clone() for n, t in m.state_dict().items()} for k, m in algo.client_models.items()}
    assert not torch.equal(after_first[0]["0.weight"], after_first[1]["0.weight"])
    # Client 0 alone in round 2: it continues from its own model; client 1's model is untouched.
    round_counts(sim, algo, [0])
    assert all(torch.equal(after_first[1][n], t) for n, t in algo.client_models[1].state_dict().items())
    assert not torch.equal(after_first[0]["0.weight"], algo.client_models[0].state_dict()["0.weight"])
    assert not torch.equal(algo.client_models[0].state_dict()["0.weight"],
                           algo.client_models[1].state_dict()["0.weight"])
    # The evaluated model's client part is their |D_k|-weighted average (for evaluation only).
    expected = weighted_average([algo.client_models[k].state_dict() for k in (0, 1)], [8.0, 8.0])
    got = algo.global_model().state_dict()
    torch.testing.assert_close(got["blocks.0.weight"], expected["0.weight"])
    assert not torch.equal(algo.client_models[0].state_dict()["0.weight"], expected["0.weight"])


def test_v3_state_round_trips() -> None:
    algo = SplitFedV3(tiny_setup(local_iterations=1))
    round_counts(simulator(), algo, [0, 1])
    other = SplitFedV3(tiny_setup(local_iterations=1))
    other.load_state_dict(algo.state_dict())
    for k in (0, 1):
        for n, t in algo.client_models[k].state_dict().items():
            assert torch.equal(other.client_models[k].state_dict()[n], t)
    for n, t in algo.global_model().state_dict().items():
        assert torch.equal(other.global_model().state_dict()[n], t)


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(ValueError, match="sequential_clients"):
        SplitFedV2(tiny_setup(), sequential_clients="yes")
    with pytest.raises(ValueError, match="eval_client_model"):
        SplitFedV3(tiny_setup(), eval_client_model="best")


def test_v2_parallel_server_moves_on_past_a_client_whose_upload_is_lost() -> None:
    """Client 0 (far, first in the server's order) loses its first upload: the sequential server
    must not wait for its later iterations, or client 1 would wait for its reply forever (the
    engine then found no event left and the round failed)."""
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([300.0, 100.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e6, placement_rng=rng, shadowing_rng=rng)
    rates = cell.uplink_rates_bps([0, 1])
    outage = OutagePolicy(min_rate_bps=float(rates[0] + rates[1]) / 2, max_attempts=1, on_outage="drop")
    sim = Simulator(cell, CLIENT_FLOPS_PER_S, SERVER_FLOPS_PER_S, outage=outage)
    algo = SplitFedV2(tiny_setup(local_iterations=T), sequential_clients=False)
    round_counts(sim, algo, [0, 1])
    assert sim.last_round.dropped == {0: "outage"}
    assert sim.counters.by_kind["uplink/client_model"] == CLIENT_MODEL_BYTES  # client 1 finished
