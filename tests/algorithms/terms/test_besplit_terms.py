"""BESplit's pure terms against formulas computed independently (numpy + scipy.special)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import digamma, gammaln

from sfl_sim.algorithms.terms import besplit as bt

ALPHA = np.array([[1.5, 2.0, 7.0], [1.0, 1.0, 1.0], [30.0, 1.2, 4.0]])
LABELS = np.array([2, 0, 1])


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def test_uncertainties_match_scipy() -> None:
    s = ALPHA.sum(axis=1, keepdims=True)
    ale = (ALPHA / s * (digamma(s + 1) - digamma(ALPHA + 1))).sum(axis=1)
    # Differential entropy of Dir(alpha): log B(alpha) + (S - N) psi(S) - sum (alpha_i - 1) psi(alpha_i).
    n = ALPHA.shape[1]
    log_b = gammaln(ALPHA).sum(axis=1) - gammaln(s[:, 0])
    epi = log_b + (s[:, 0] - n) * digamma(s[:, 0]) - ((ALPHA - 1) * digamma(ALPHA)).sum(axis=1)
    np.testing.assert_allclose(bt.aleatoric_uncertainty(_t(ALPHA)).numpy(), ale, rtol=1e-10)
    np.testing.assert_allclose(bt.epistemic_uncertainty(_t(ALPHA)).numpy(), epi, rtol=1e-10)
    # Uniform Dir(1) on 3 classes: entropy = -log(2) (the simplex has area 1/2); aleatoric = H_3 - 1.
    assert bt.epistemic_uncertainty(_t([[1.0, 1.0, 1.0]])).item() == pytest.approx(-np.log(2.0))
    assert bt.aleatoric_uncertainty(_t([[1.0, 1.0, 1.0]])).item() == pytest.approx(1 / 2 + 1 / 3)


def test_epistemic_measures() -> None:
    n = ALPHA.shape[1]
    s = ALPHA.sum(axis=1)
    entropy = (gammaln(ALPHA).sum(axis=1) - gammaln(s) + (s - n) * digamma(s)
               - ((ALPHA - 1) * digamma(ALPHA)).sum(axis=1))
    np.testing.assert_allclose(bt.epistemic_measure(_t(ALPHA), "entropy").numpy(), entropy, rtol=1e-10)
    # exp(H - H_max) with H_max = H[Dir(1)] = -log Gamma(N): 1 for Dir(1), in (0, 1), same order as H.
    relative = np.exp(entropy + gammaln(n))
    got = bt.epistemic_measure(_t(ALPHA), "relative_entropy").numpy()
    np.testing.assert_allclose(got, relative, rtol=1e-10)
    assert got[1] == pytest.approx(1.0) and np.all(got > 0) and np.all(got <= 1 + 1e-12)
    assert np.array_equal(np.argsort(got), np.argsort(entropy))
    with pytest.raises(ValueError, match="epistemic"):
        bt.epistemic_measure(_t(ALPHA), "mutual_information")


def test_ea_weights_penalise_the_more_uncertain_client_with_relative_entropy() -> None:
    # Two clients with the same labels; the server is confident on client 0 and not on client 1.
    confident, vague = _t([[40.0, 1.0, 1.0]] * 4), _t([[1.5, 1.2, 1.1]] * 4)
    labels = torch.zeros(4, dtype=torch.int64)
    records = {}
    for kind in bt.EPISTEMIC_MEASURES:
        r0, r1 = bt.StateRecord.empty(3), bt.StateRecord.empty(3)
        r0.accumulate(confident, labels, kind)
        r1.accumulate(vague, labels, kind)
        records[kind] = (r0, r1)
    w = bt.ea_weights(records["relative_entropy"], use_evidence=False, use_aleatoric=False)
    assert w[0] > w[1]
    # Eq. (4)'s signed entropy inverts the penalty (module docstring of besplit_terms).
    w = bt.ea_weights(records["entropy"], use_evidence=False, use_aleatoric=False)
    assert w[0] < w[1]


@pytest.mark.parametrize("kl_weight", [0.0, 0.3, 1.0])
def test_evidential_loss_matches_scipy(kl_weight: float) -> None:
    n = ALPHA.shape[1]
    y = np.eye(n)[LABELS]
    s = ALPHA.sum(axis=1)
    nll = (y * (digamma(s)[:, None] - digamma(ALPHA))).sum(axis=1)
    at = y + (1 - y) * ALPHA
    st = at.sum(axis=1)
    kl = (gammaln(st) - gammaln(n) - gammaln(at).sum(axis=1)
          + ((at - 1) * (digamma(at) - digamma(st)[:, None])).sum(axis=1))
    expected = np.mean(nll + kl_weight * kl)
    got = bt.evidential_loss(_t(ALPHA), torch.tensor(LABELS), kl_weight).item()
    assert got == pytest.approx(expected, rel=1e-10)


def test_annealing_and_evidence() -> None:
    assert bt.annealing(3, 10) == pytest.approx(0.3)
    assert bt.annealing(12, 10) == 1.0
    logits = torch.tensor([[-1.0, 0.0, 2.0]])
    torch.testing.assert_close(bt.evidence(logits, "relu"), torch.tensor([[0.0, 0.0, 2.0]]))
    torch.testing.assert_close(bt.evidence(logits, "softplus"), torch.log1p(torch.exp(logits)))
    with pytest.raises(ValueError, match="evidence"):
        bt.evidence(logits, "sigmoid")


def _record(evidence, counts, u_ale, u_epi, last_round=0):
    return bt.StateRecord(np.asarray(evidence, float), np.asarray(counts, float), np.asarray(u_ale, float),
                          np.asarray(u_epi, float), last_round)


def test_record_accumulates_by_true_label() -> None:
    r = bt.StateRecord.empty(3)
    r.accumulate(_t(ALPHA), torch.tensor(LABELS))
    np.testing.assert_allclose(r.counts, [1, 1, 1])
    np.testing.assert_allclose(r.evidence[2], ALPHA[0] - 1)  # row 0 has label 2
    np.testing.assert_allclose(r.u_ale[0], bt.aleatoric_uncertainty(_t(ALPHA[1:2])).item())


def test_staleness_aware_ema() -> None:
    old = _record(np.ones((2, 2)), [2, 2], [1, 1], [4, 4], last_round=3)
    new = _record(3 * np.ones((2, 2)), [4, 0], [3, 3], [0, 0])
    assert bt.ema_update(None, new, 0.5, 4).counts.tolist() == [4, 0]
    r = bt.ema_update(old, new, 0.5, 4)  # t_c - t_k = 1: beta_dec = 0.5
    np.testing.assert_allclose(r.counts, [3, 1])
    np.testing.assert_allclose(r.u_epi, [2, 2])
    assert r.last_round == 4
    r = bt.ema_update(old, new, 0.5, 6)  # staleness 3: beta_dec = 0.125
    np.testing.assert_allclose(r.counts, [0.125 * 2 + 0.875 * 4, 0.25])
    r = bt.ema_update(old, new, 0.5, 3)  # same round: max(1, 0) = 1
    np.testing.assert_allclose(r.counts, [3, 1])


def test_ea_weights_by_hand() -> None:
    # Client a: per-class evidence means [[3, 1], [1, 1]] -> q = [3/4, 1/2], Q = 5/8;
    #   U_ale means [1, 1] (sum 2), U_epi means [2, 2] (sum 4).
    # Client b: one class seen, E row [4, 0] -> Q = 1; U_ale mean 3 (sum 3), U_epi mean 1 (sum 1).
    a = _record([[6, 2], [3, 3]], [2, 3], [2, 3], [4, 6])
    b = _record([[8, 0], [0, 0]], [2, 0], [6, 0], [2, 0])
    eps = 0.0
    s_a = 5 / 8 * (5 / 2) * (5 / 4)
    s_b = 1.0 * (5 / 3) * (5 / 1)
    np.testing.assert_allclose(bt.ea_weights([a, b], eps=eps), [s_a / (s_a + s_b), s_b / (s_a + s_b)])
    # "mean": uncertainty sums divided by the seen classes: a -> 1 and 2, b -> 3 and 1.
    m_a = 5 / 8 * (4 / 1) * (3 / 2)
    m_b = 1.0 * (4 / 3) * (3 / 1)
    np.testing.assert_allclose(bt.ea_weights([a, b], eps=eps, uncertainty_reduce="mean"),
                               [m_a / (m_a + m_b), m_b / (m_a + m_b)])
    # Nothing to tell them apart (no evidence at all): uniform.
    z = bt.StateRecord.empty(2)
    np.testing.assert_allclose(bt.ea_weights([z, z]), [0.5, 0.5])


def test_js_divergence() -> None:
    assert bt.js_divergence([1, 0], [0, 1]) == pytest.approx(np.log(2))
    assert bt.js_divergence([0.3, 0.7], [0.3, 0.7]) == pytest.approx(0.0)
    p, q = np.array([0.2, 0.8]), np.array([0.6, 0.4])
    m = (p + q) / 2
    expected = 0.5 * np.sum(p * np.log(p / m)) + 0.5 * np.sum(q * np.log(q / m))
    assert bt.js_divergence(p, q) == pytest.approx(expected)


def test_largest_gap_threshold() -> None:
    # Sorted 0.01, 0.02, 0.5, 0.6: largest gap after 0.02 -> clients above 0.02 are biased.
    assert bt.biased_clients({7: 0.5, 1: 0.01, 3: 0.6, 4: 0.02}) == [3, 7]
    assert bt.biased_clients({1: 0.2, 2: 0.2}) == []
    assert bt.biased_clients({1: 0.2}) == []


def test_bcc_pairing_on_hand_made_distributions() -> None:
    p_g = np.full(4, 0.25)
    dists = {0: np.array([0.5, 0.5, 0, 0]), 1: np.array([0, 0, 0.5, 0.5]), 2: np.array([0.5, 0, 0.5, 0]),
             3: np.array([0.25, 0.25, 0.25, 0.25])}
    # eq. (33): 0-1 fully complementary (1 + 1 - 0 = 2); 0-2 and 1-2: 1 + 1 - 1 = 1; 3 has no deviation: 0.
    assert bt.edge_weight(dists[0], dists[1], p_g) == pytest.approx(2.0)
    assert bt.edge_weight(dists[0], dists[2], p_g) == pytest.approx(1.0)
    assert bt.edge_weight(dists[1], dists[2], p_g) == pytest.approx(1.0)
    assert bt.edge_weight(dists[0], dists[0], p_g) == pytest.approx(0.0)
    assert bt.edge_weight(dists[2], dists[3], p_g) == pytest.approx(0.0)
    assert bt.greedy_matching([0, 1, 2, 3], dists, p_g) == [(0, 1)]
    # Without client 1, client 0 pairs with 2; 3 never pairs (zero weight).
    assert bt.greedy_matching([0, 2, 3], dists, p_g) == [(0, 2)]
    assert bt.overrepresented_classes(dists[0], dists[2]).tolist() == [1]
    assert bt.overrepresented_classes(dists[2], dists[0]).tolist() == [2]


def test_transfer_ratio_cases() -> None:
    p_i, p_j, p_g = 0.5, 0.1, 0.2
    assert bt.transfer_ratio(p_i, p_j, p_g, w_i=0.6, w_j=0.4) == pytest.approx((0.5 - 0.2) / 0.5)  # eq. 31
    assert bt.transfer_ratio(p_i, p_j, p_g, w_i=0.4, w_j=0.6) == pytest.approx((0.2 - 0.1) / 0.5)  # eq. 32
    assert bt.transfer_ratio(p_i, p_j, p_g, w_i=0.5, w_j=0.5) == pytest.approx(0.4)  # midpoint of [0.2, 0.6]
    assert bt.transfer_ratio(0.5, 0.1, 0.7, w_i=0.6, w_j=0.4) == 0.0  # negative: nothing to transfer
    assert bt.transfer_ratio(0.5, 0.1, 0.2, w_i=0.6, w_j=0.4, rho_max=0.3) == pytest.approx(0.3)
    assert bt.transfer_ratio(0.0, 0.0, 0.2, w_i=0.6, w_j=0.4) == 0.0


def test_dtd_loss_by_formula() -> None:
    gen = torch.Generator().manual_seed(0)
    b, n, tau = 4, 3, 5.0
    aux_logits = torch.randn(b, n, generator=gen, dtype=torch.float64)
    glob = torch.randn(b, n, generator=gen, dtype=torch.float64)
    z_c = torch.randn(b, 2, 3, generator=gen, dtype=torch.float64)
    z_a = torch.randn(b, 2, 3, generator=gen, dtype=torch.float64)
    y = torch.tensor([0, 2, 1, 1])

    def softmax(v):
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    pa, pg = softmax(aux_logits.numpy() / tau), softmax(glob.numpy() / tau)
    kd_g = tau ** 2 * np.mean((pg * (np.log(pg) - np.log(pa))).sum(axis=1))
    fc, fa = z_c.numpy().reshape(b, -1), z_a.numpy().reshape(b, -1)
    m_c = ((fc[:, None] - fc[None]) ** 2).sum(-1)
    m_a = ((fa[:, None] - fa[None]) ** 2).sum(-1)
    p_c, p_a = softmax(m_c / tau), softmax(m_a / tau)
    kd_c = tau ** 2 * (p_a * (np.log(p_a) - np.log(p_c))).sum() / b
    assert bt.kd_g_loss(aux_logits, glob, tau).item() == pytest.approx(kd_g, rel=1e-9)
    assert bt.kd_c_loss(z_c, z_a, tau).item() == pytest.approx(kd_c, rel=1e-9)
    alpha = torch.nn.functional.softplus(aux_logits) + 1
    expected = bt.evidential_loss(alpha, y, 0.5).item() + 0.2 * kd_c + 0.3 * kd_g
    got = bt.dtd_loss(aux_logits, y, z_c, z_a, glob, tau, 0.2, 0.3, 0.5, "softplus").item()
    assert got == pytest.approx(expected, rel=1e-9)
    np.testing.assert_allclose(bt.relational_matrix(z_c).numpy(), m_c)


def test_kd_c_normalised_is_scale_free() -> None:
    gen = torch.Generator().manual_seed(1)
    z_c, z_a = torch.randn(5, 4, generator=gen), torch.randn(5, 4, generator=gen)
    a = bt.kd_c_loss(z_c, z_a, 5.0, normalise=True)
    b = bt.kd_c_loss(30 * z_c, 30 * z_a, 5.0, normalise=True)
    assert a.item() == pytest.approx(b.item(), rel=1e-4)
