"""Fed-CBS class-balanced selection: QCID, balance against uniform selection, seeding, state."""
from __future__ import annotations

import numpy as np
import pytest

from sfl_sim.clients.selection import SELECTORS, ClassBalancedSelection, UniformSelection, qcid


def _skewed_counts(n_clients: int = 100, n_classes: int = 10, seed: int = 0) -> np.ndarray:
    """Quantity skew with alpha = 2, and a popular pair of classes held by 40 % of the clients."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_clients, n_classes))
    for k in range(n_clients):
        pair = [0, 1] if k < 40 else rng.choice(n_classes, size=2, replace=False)
        counts[k, pair] = rng.integers(200, 400, size=2)
    return counts


def test_qcid_by_hand() -> None:
    assert qcid(np.array([5, 5, 5, 5])) == pytest.approx(0.0)
    assert qcid(np.array([10, 0, 0, 0])) == pytest.approx(0.75)  # (1 - 1/4)^2 + 3 (1/4)^2
    assert qcid(np.array([[3, 1], [1, 3]])) == pytest.approx(0.0)  # grouped counts


def test_class_balanced_cohorts_are_more_balanced_than_uniform() -> None:
    counts = _skewed_counts()
    cbs = SELECTORS.get("class_balanced")()
    cbs.prepare(counts)
    uniform = UniformSelection()
    rng_c, rng_u = np.random.default_rng(1), np.random.default_rng(1)
    q_cbs, q_uni, kl_cbs, kl_uni = [], [], [], []
    for _ in range(200):
        for sel, rng, q, kl in ((cbs, rng_c, q_cbs, kl_cbs), (uniform, rng_u, q_uni, kl_uni)):
            cohort = sel.select(100, 10, rng)
            assert len(set(cohort.tolist())) == 10 and np.all(np.diff(cohort) > 0)
            p = counts[cohort].sum(axis=0) / counts[cohort].sum()
            q.append(qcid(counts[cohort]))
            kl.append(float(np.sum(np.where(p > 0, p * np.log(np.maximum(p, 1e-12) * 10), 0.0))))
    assert np.mean(q_cbs) < 0.5 * np.mean(q_uni)
    assert np.mean(kl_cbs) < np.mean(kl_uni)


def test_exploration_spreads_selection_over_clients() -> None:
    counts = _skewed_counts()
    sel = ClassBalancedSelection()
    sel.prepare(counts)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(100):
        seen.update(sel.select(100, 10, rng).tolist())
    assert len(seen) > 60


def test_same_rng_same_cohorts_and_state_resumes() -> None:
    counts = _skewed_counts()
    a, b = ClassBalancedSelection(), ClassBalancedSelection()
    a.prepare(counts)
    b.prepare(counts)
    ra, rb = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(3):
        assert np.array_equal(a.select(100, 10, ra), b.select(100, 10, rb))
    c = ClassBalancedSelection()
    c.prepare(counts)
    c.load_state_dict(a.state_dict())
    rc = np.random.default_rng()
    rc.bit_generator.state = ra.bit_generator.state
    assert np.array_equal(a.select(100, 10, ra), c.select(100, 10, rc))


@pytest.mark.parametrize("params,match", [({"beta_first": 0}, "beta_first: got 0"), ({"beta_last": -1.0}, "beta_last"),
                                          ({"exploration": -0.5}, "exploration"), ({"qcid_floor": 0.0}, "qcid_floor")])
def test_invalid_parameters_are_named(params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ClassBalancedSelection(**params)


def test_select_before_prepare_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="prepare"):
        ClassBalancedSelection().select(10, 2, np.random.default_rng(0))
