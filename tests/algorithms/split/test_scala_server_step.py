"""SCALA's server step: w_s is updated with P_s (eq. 14), G_k is computed with P_k (eqs. 8, 15)."""
from __future__ import annotations

import copy

import torch

from sfl_sim.algorithms.split.scala import CASFL, SCALA
from sfl_sim.algorithms.terms.logit_adjustment import label_distribution, logit_adjusted_cross_entropy
from tests.algorithms.split.split_protocol_helpers import concatenation_grads
from tests.helpers import tiny_setup


def _parts():
    gen = torch.Generator().manual_seed(3)
    a0, a1 = torch.randn(3, 2, 3, 3, generator=gen), torch.randn(2, 2, 3, 3, generator=gen)
    y0, y1 = torch.tensor([0, 0, 1]), torch.tensor([2, 2])
    return [(a0, y0), (a1, y1)]


def _reference(server: torch.nn.Module, parts, lr: float):
    """Independent computation of the formulas: G_k with P_k, w_s update with P_s."""
    grads = []
    for a, y in parts:
        a = a.clone().requires_grad_(True)
        loss = logit_adjusted_cross_entropy(server(a), y, label_distribution(y, 3))
        grads.append(torch.autograd.grad(loss, a)[0])
    acts = torch.cat([a for a, _ in parts])
    labels = torch.cat([y for _, y in parts])
    ref = copy.deepcopy(server)
    loss = logit_adjusted_cross_entropy(ref(acts), labels, label_distribution(labels, 3))
    loss.backward()
    with torch.no_grad():
        for p in ref.parameters():
            p -= lr * p.grad
    return grads, ref


def test_gradient_to_client_k_uses_its_own_label_distribution() -> None:
    algo = SCALA(tiny_setup())
    parts = _parts()
    expected_grads, expected_server = _reference(copy.deepcopy(algo.server_model), parts, algo.setup.learning_rate)
    got = concatenation_grads(algo, parts)
    for g, e in zip(got, expected_grads, strict=True):
        torch.testing.assert_close(g, e)
    for p, e in zip(algo.server_model.parameters(), expected_server.parameters(), strict=True):
        torch.testing.assert_close(p, e)


def test_gradient_differs_from_one_adjusted_by_concatenated_distribution() -> None:
    algo = SCALA(tiny_setup())
    parts = _parts()
    server = copy.deepcopy(algo.server_model)
    labels = torch.cat([y for _, y in parts])
    a0 = parts[0][0].clone().requires_grad_(True)
    with_p_s = torch.autograd.grad(
        logit_adjusted_cross_entropy(server(a0), parts[0][1], label_distribution(labels, 3)), a0)[0]
    got = concatenation_grads(algo, parts)[0]
    assert not torch.allclose(got, with_p_s)


def test_ca_sfl_uses_plain_cross_entropy() -> None:
    algo = CASFL(tiny_setup())
    parts = _parts()
    server = copy.deepcopy(algo.server_model)
    a1 = parts[1][0].clone().requires_grad_(True)
    plain = torch.autograd.grad(torch.nn.functional.cross_entropy(server(a1), parts[1][1]), a1)[0]
    torch.testing.assert_close(concatenation_grads(algo, parts)[1], plain)
