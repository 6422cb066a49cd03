"""The FL baselines' loss terms and update rules against their written formulas, on hand-made cases."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from sfl_sim.algorithms.terms.fl import (
    ConcatenatedModel,
    FeatureExtractor,
    averaged_concat_head,
    classifier_layer,
    decorrelation_loss,
    features_and_logits,
    feddyn_client_state,
    feddyn_regularizer,
    feddyn_server_model,
    feddyn_server_state,
    kmeans_label_clusters,
    logit_calibrated_cross_entropy,
    not_true_distillation_loss,
    not_true_logits,
    proximal_term,
)
from tests.helpers import tiny_model


def test_proximal_term_by_hand() -> None:
    w = [torch.tensor([1.0, 2.0]), torch.tensor([[3.0]])]
    g = [torch.tensor([0.0, 0.0]), torch.tensor([[1.0]])]
    # mu/2 * (1 + 4 + 4) with mu = 0.1
    assert proximal_term(w, g, 0.1).item() == pytest.approx(0.05 * 9)


def test_proximal_gradient_is_mu_times_drift() -> None:
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    proximal_term([w], [torch.tensor([0.5, 0.5])], 0.2).backward()
    torch.testing.assert_close(w.grad, 0.2 * torch.tensor([0.5, -2.5]))


def test_feddyn_regularizer_by_hand() -> None:
    theta = [torch.tensor([1.0, 2.0]), torch.tensor([3.0])]
    glob = [torch.tensor([0.0, 1.0]), torch.tensor([1.0])]
    grad_state = torch.tensor([0.5, -1.0, 2.0])
    alpha = 0.1
    # -<g, theta> + alpha/2 ||theta - theta_g||^2 = -(0.5 - 2 + 6) + 0.05 (1 + 1 + 4)
    expected = -(0.5 - 2.0 + 6.0) + 0.05 * 6.0
    assert feddyn_regularizer(theta, glob, grad_state, alpha).item() == pytest.approx(expected)


def test_feddyn_state_updates_by_hand() -> None:
    g_k = torch.tensor([1.0, 1.0])
    theta_k, theta_g = torch.tensor([2.0, 0.0]), torch.tensor([1.0, 1.0])
    torch.testing.assert_close(feddyn_client_state(g_k, theta_k, theta_g, 0.5), torch.tensor([0.5, 1.5]))
    h = torch.tensor([0.0, 1.0])
    locals_ = [torch.tensor([2.0, 0.0]), torch.tensor([1.0, 3.0])]
    # h - alpha/m * sum (theta_k - theta_g) = [0, 1] - 0.5/4 * [1, 1]
    h_new = feddyn_server_state(h, locals_, theta_g, 0.5, n_clients=4)
    torch.testing.assert_close(h_new, torch.tensor([-0.125, 0.875]))
    # mean(theta_k) - h / alpha = [1.5, 1.5] - [-0.25, 1.75]
    torch.testing.assert_close(feddyn_server_model(locals_, h_new, 0.5), torch.tensor([1.75, -0.25]))


def test_decorrelation_loss_by_hand() -> None:
    # Two perfectly correlated dimensions: K = [[1, 1], [1, 1]], ||K||_F^2 / d^2 = 4 / 4 = 1.
    f = torch.tensor([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    assert decorrelation_loss(f, eps=0.0).item() == pytest.approx(1.0, rel=1e-6)
    # Uncorrelated (orthogonal centred columns): K = I, loss = 2 / 4.
    g = torch.tensor([[1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]])
    assert decorrelation_loss(g, eps=0.0).item() == pytest.approx(0.5, rel=1e-6)


def test_decorrelation_loss_matches_numpy_corrcoef() -> None:
    f = torch.randn(16, 5, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    k = np.corrcoef(f.numpy(), rowvar=False)
    assert decorrelation_loss(f, eps=0.0).item() == pytest.approx((k ** 2).sum() / 25, rel=1e-9)
    assert decorrelation_loss(f[:1]).item() == 0.0


def test_logit_calibrated_loss_by_hand() -> None:
    logits = torch.tensor([[1.0, 0.0, 2.0]])
    counts = torch.tensor([16.0, 1.0, 0.0])  # class 2 absent
    tau = 0.5
    s = [1.0 - tau * 16 ** -0.25, 0.0 - tau * 1.0]  # class 2 -> -inf
    expected = -math.log(math.exp(s[0]) / (math.exp(s[0]) + math.exp(s[1])))
    loss = logit_calibrated_cross_entropy(logits, torch.tensor([0]), counts, tau)
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    plain = torch.nn.functional.cross_entropy(logits, torch.tensor([0]))
    assert logit_calibrated_cross_entropy(logits, torch.tensor([0]), counts, 0.0).item() == pytest.approx(plain.item())


def test_not_true_logits_drop_the_label() -> None:
    z = torch.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    assert not_true_logits(z, torch.tensor([1, 2])).tolist() == [[0.0, 2.0], [3.0, 4.0]]


def test_not_true_distillation_by_hand() -> None:
    local = torch.tensor([[2.0, 0.0, 1.0]])
    glob = torch.tensor([[0.0, 1.0, 3.0]])
    tau = 2.0
    # label 0 removed: local (0, 1)/2, global (1, 3)/2
    def sm(v):
        e = [math.exp(x) for x in v]
        return [x / sum(e) for x in e]
    ql, qg = sm([0.0, 0.5]), sm([0.5, 1.5])
    expected = tau ** 2 * sum(g * math.log(g / q) for g, q in zip(qg, ql, strict=True))
    got = not_true_distillation_loss(local, glob, torch.tensor([0]), tau)
    assert got.item() == pytest.approx(expected, rel=1e-5)
    # equal not-true predictions -> 0, whatever the true-class logit
    assert not_true_distillation_loss(torch.tensor([[9.0, 1.0, 2.0]]), torch.tensor([[-3.0, 1.0, 2.0]]),
                                      torch.tensor([0]), 1.0).item() == pytest.approx(0.0, abs=1e-7)


def test_features_are_the_input_of_the_last_linear() -> None:
    model = tiny_model()
    x = torch.randn(4, 1, 5, 5, generator=torch.Generator().manual_seed(0))
    feats, logits = features_and_logits(model, x)
    assert feats.shape == (4, 18)
    torch.testing.assert_close(logits, model(x))
    torch.testing.assert_close(classifier_layer(model)(feats), logits)
    torch.testing.assert_close(FeatureExtractor(model)(x), feats)


def test_model_without_final_linear_is_rejected() -> None:
    model = tiny_model()
    model.blocks[-1] = nn.Sequential(nn.Flatten(), nn.Linear(18, 3), nn.ReLU())
    with pytest.raises(ValueError, match="last block"):
        classifier_layer(model)


def test_averaged_concat_head_is_the_mean_of_logits() -> None:
    a, b = tiny_model(), tiny_model()
    with torch.no_grad():
        for p in b.parameters():
            p.mul_(-0.5)
    concat = ConcatenatedModel([FeatureExtractor(a), FeatureExtractor(b)],
                               averaged_concat_head([classifier_layer(a), classifier_layer(b)]))
    x = torch.randn(3, 1, 5, 5, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(concat(x), (a(x) + b(x)) / 2)
    concat.train()
    assert not concat.encoders.training and concat.head.training


def test_kmeans_separates_label_groups() -> None:
    dist = np.array([[0.5, 0.5, 0, 0], [0.4, 0.6, 0, 0], [0, 0, 0.5, 0.5], [0, 0, 0.6, 0.4], [0.5, 0.5, 0, 0]])
    assign = kmeans_label_clusters(dist, 2)
    assert assign[0] == assign[1] == assign[4] and assign[2] == assign[3] and assign[0] != assign[2]
    assert np.array_equal(assign, kmeans_label_clusters(dist, 2))  # deterministic
    with pytest.raises(ValueError, match="n_clusters"):
        kmeans_label_clusters(dist, 6)
