"""SFLLocalLoss: no gradients go down; bytes and FLOPs of a round worked out by hand."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from sfl_sim.algorithms.local_work import random_batch
from sfl_sim.algorithms.split.sfl_local_loss import SFLLocalLoss
from tests.algorithms.split.split_protocol_helpers import (
    ACT_BYTES_PER_SAMPLE,
    CLIENT_MODEL_BYTES,
    CONV_BWD,
    CONV_FWD,
    LABEL_BYTES_PER_SAMPLE,
    LIN,
    LINEAR_18_3_BYTES,
    round_counts,
    simulator,
)
from tests.helpers import tiny_setup

B_K, T, N_CLIENTS = 4, 2, 2
SAMPLES = N_CLIENTS * T * B_K
# Client step per sample: conv forward, aux Linear(18, 3) forward, aux weight and input
# gradients, conv weight gradient.
CLIENT_STEP = CONV_FWD + LIN + 2 * LIN + CONV_BWD  # 972
# Server step per sample: forward and weight gradient only; no activation gradient is computed.
SERVER_STEP = 2 * LIN  # 216


@pytest.mark.parametrize("server_mode", ["per_client", "sequential"])
def test_round_counts_by_hand(server_mode: str) -> None:
    algo = SFLLocalLoss(tiny_setup(local_iterations=T), server_mode=server_mode)
    got = round_counts(simulator(), algo, [0, 1])
    assert got["by_kind"] == {
        "uplink/activations": SAMPLES * ACT_BYTES_PER_SAMPLE,
        "uplink/labels": SAMPLES * LABEL_BYTES_PER_SAMPLE,
        "uplink/client_model": N_CLIENTS * CLIENT_MODEL_BYTES,
        "uplink/aux_head": N_CLIENTS * LINEAR_18_3_BYTES,
        "downlink/client_model": N_CLIENTS * CLIENT_MODEL_BYTES,
        "downlink/aux_head": N_CLIENTS * LINEAR_18_3_BYTES,
        "client/client_step": pytest.approx(SAMPLES * CLIENT_STEP),
        "server/server_step": pytest.approx(SAMPLES * SERVER_STEP)}
    assert got["downlink_bytes"] == N_CLIENTS * (CLIENT_MODEL_BYTES + LINEAR_18_3_BYTES)
    assert not any("gradient" in k for k in got["by_kind"])


def test_client_update_is_the_local_loss_step() -> None:
    """One client, one iteration: its model moves exactly by the auxiliary loss's gradient."""
    setup = tiny_setup(local_iterations=1)
    algo = SFLLocalLoss(setup)
    body, aux = copy.deepcopy(algo.client_model), copy.deepcopy(algo.aux_head)
    rng_state = setup.minibatch_rng.bit_generator.state
    round_counts(simulator(), algo, [0])
    # Replay: same minibatch (same rng state), eq. (3) gives B_0 = B = 8.
    setup.minibatch_rng.bit_generator.state = rng_state
    x, y = random_batch(setup, 0, 8)
    loss = F.cross_entropy(aux(body(x)), y)
    loss.backward()
    with torch.no_grad():
        for p in list(body.parameters()) + list(aux.parameters()):
            p -= setup.learning_rate * p.grad
    for p, q in zip(body.parameters(), algo.client_model.parameters(), strict=True):
        torch.testing.assert_close(p, q)
    for p, q in zip(aux.parameters(), algo.aux_head.parameters(), strict=True):
        torch.testing.assert_close(p, q)


def test_global_model_is_client_part_then_server_part() -> None:
    algo = SFLLocalLoss(tiny_setup(local_iterations=T))
    round_counts(simulator(), algo, [0, 1])
    x = torch.randn(3, 1, 5, 5)
    torch.testing.assert_close(algo.global_model()(x), algo.server_model(algo.client_model(x)))
    assert algo.global_model()(x).shape == (3, 3)


def test_aux_hidden_and_state_round_trip() -> None:
    algo = SFLLocalLoss(tiny_setup(), aux_hidden=5)
    assert [m.out_features for m in algo.aux_head if isinstance(m, torch.nn.Linear)] == [5, 3]
    round_counts(simulator(), algo, [0, 1])
    other = SFLLocalLoss(tiny_setup(), aux_hidden=5)
    other.load_state_dict(algo.state_dict())
    for p, q in zip(algo.aux_head.parameters(), other.aux_head.parameters(), strict=True):
        assert torch.equal(p, q)
    with pytest.raises(ValueError, match="aux_hidden"):
        SFLLocalLoss(tiny_setup(), aux_hidden=-1)
    with pytest.raises(ValueError, match="server_mode"):
        SFLLocalLoss(tiny_setup(), server_mode="concatenated")
