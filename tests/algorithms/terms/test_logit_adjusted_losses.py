"""Logit-adjusted cross-entropy (SCALA eqs. 14, 15) against the written formula."""
from __future__ import annotations

import math

import pytest
import torch

from sfl_sim.algorithms.terms.logit_adjustment import label_distribution, logit_adjusted_cross_entropy


def test_label_distribution_counts() -> None:
    p = label_distribution(torch.tensor([0, 2, 2, 2]), 3)
    assert p.tolist() == [0.25, 0.0, 0.75]


def test_adjusted_loss_equals_formula_by_hand() -> None:
    logits = torch.tensor([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
    labels = torch.tensor([0, 2])
    prior = torch.tensor([0.5, 0.2, 0.3])
    # g = -log( e^{s_y + log P(y)} / sum_y' e^{s_y' + log P(y')} ) = -log( P(y) e^{s_y} / sum P(y') e^{s_y'} )
    per_sample = []
    for s, y in zip(logits.tolist(), labels.tolist(), strict=True):
        num = prior[y].item() * math.exp(s[y])
        den = sum(prior[j].item() * math.exp(s[j]) for j in range(3))
        per_sample.append(-math.log(num / den))
    expected = sum(per_sample) / 2
    assert logit_adjusted_cross_entropy(logits, labels, prior).item() == pytest.approx(expected, rel=1e-6)


def test_uniform_prior_is_plain_cross_entropy() -> None:
    logits = torch.randn(5, 4, generator=torch.Generator().manual_seed(1))
    labels = torch.tensor([0, 1, 2, 3, 0])
    uniform = torch.full((4,), 0.25)
    plain = torch.nn.functional.cross_entropy(logits, labels)
    assert logit_adjusted_cross_entropy(logits, labels, uniform).item() == pytest.approx(plain.item(), rel=1e-6)


def test_absent_class_gets_no_gradient_and_no_nan() -> None:
    logits = torch.tensor([[0.3, 1.0, -0.2]], requires_grad=True)
    prior = torch.tensor([0.6, 0.4, 0.0])  # class 2 absent: log 0 = -inf
    loss = logit_adjusted_cross_entropy(logits, torch.tensor([0]), prior)
    loss.backward()
    assert torch.isfinite(loss)
    assert torch.isfinite(logits.grad).all()
    assert logits.grad[0, 2].item() == 0.0
