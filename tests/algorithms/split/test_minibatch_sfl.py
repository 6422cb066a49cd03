"""Minibatch-SFL: one server step on the whole cohort weighted by |D_k|, G_k of each client's own loss."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from sfl_sim.algorithms.split.minibatch_sfl import MinibatchSFL
from tests.algorithms.split.split_protocol_helpers import (
    ACT_BYTES_PER_SAMPLE,
    CLIENT_MODEL_BYTES,
    CONV_BWD,
    CONV_FWD,
    LABEL_BYTES_PER_SAMPLE,
    LIN,
    concatenation_grads,
    round_counts,
    simulator,
)
from tests.helpers import tiny_setup

B_K, T, N_CLIENTS = 4, 2, 2
SAMPLES = N_CLIENTS * T * B_K


def test_round_counts_by_hand() -> None:
    algo = MinibatchSFL(tiny_setup(local_iterations=T))
    got = round_counts(simulator(), algo, [0, 1])
    assert got["by_kind"] == {
        "uplink/activations": SAMPLES * ACT_BYTES_PER_SAMPLE,
        "uplink/labels": SAMPLES * LABEL_BYTES_PER_SAMPLE,
        "uplink/client_model": N_CLIENTS * CLIENT_MODEL_BYTES,
        "downlink/client_model": N_CLIENTS * CLIENT_MODEL_BYTES,
        "downlink/activation_gradients": SAMPLES * ACT_BYTES_PER_SAMPLE,
        "client/client_forward": pytest.approx(SAMPLES * CONV_FWD),
        "client/client_backward": pytest.approx(SAMPLES * CONV_BWD),
        # one forward and one backward (weight and input gradients) of Linear(18, 3) per sample
        "server/server_step": pytest.approx(SAMPLES * 3 * LIN)}


def _parts():
    gen = torch.Generator().manual_seed(3)
    a0, a1 = torch.randn(3, 2, 3, 3, generator=gen), torch.randn(2, 2, 3, 3, generator=gen)
    return [(a0, torch.tensor([0, 0, 1])), (a1, torch.tensor([2, 1]))]


@pytest.mark.parametrize("weighting", ["data_size", "samples"])
def test_server_step_matches_formulas(weighting: str) -> None:
    setup = tiny_setup()
    setup.client_indices[1] = setup.client_indices[1][:4]  # |D_0| = 8, |D_1| = 4
    algo = MinibatchSFL(setup, server_weighting=weighting)
    parts = _parts()
    a = [8 / 12, 4 / 12] if weighting == "data_size" else [3 / 5, 2 / 5]
    ref = copy.deepcopy(algo.server_model)
    expected_grads = []
    for acts, y in parts:
        acts = acts.clone().requires_grad_(True)
        expected_grads.append(torch.autograd.grad(F.cross_entropy(ref(acts), y), acts)[0])
    loss = sum(w * F.cross_entropy(ref(acts), y) for w, (acts, y) in zip(a, parts, strict=True))
    loss.backward()
    with torch.no_grad():
        for p in ref.parameters():
            p -= setup.learning_rate * p.grad
    got = concatenation_grads(algo, parts)
    for g, e in zip(got, expected_grads, strict=True):
        torch.testing.assert_close(g, e)
    for p, e in zip(algo.server_model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, e)


def test_bad_weighting_rejected() -> None:
    with pytest.raises(ValueError, match="server_weighting"):
        MinibatchSFL(tiny_setup(), server_weighting="uniform")
