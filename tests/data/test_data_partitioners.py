"""IID, quantity-based and Dirichlet label-skew partitioners."""
from __future__ import annotations

import numpy as np
import pytest

from sfl_sim.data import (
    PARTITIONERS,
    DirichletLabelSkew,
    IIDPartitioner,
    QuantityLabelSkew,
    label_histogram,
)


def _labels(per_class: int = 200, num_classes: int = 10, seed: int = 0) -> np.ndarray:
    labels = np.repeat(np.arange(num_classes), per_class)
    return np.random.default_rng(seed).permutation(labels)


def _check_valid(parts, labels, n_clients, num_classes):
    assert len(parts) == n_clients
    for p in parts:
        assert p.dtype == np.int64 and p.size > 0
        assert np.all(np.diff(p) > 0)  # sorted, no duplicates
    allidx = np.concatenate(parts)
    assert allidx.size == labels.size and np.array_equal(np.sort(allidx), np.arange(labels.size))
    hist = label_histogram(labels, parts, num_classes)
    assert hist.shape == (n_clients, num_classes)
    np.testing.assert_array_equal(hist.sum(axis=0), np.bincount(labels, minlength=num_classes))
    return hist


def test_iid():
    labels = _labels(per_class=101)
    parts = IIDPartitioner().split(labels, 7, 10, np.random.default_rng(1))
    _check_valid(parts, labels, 7, 10)
    sizes = [p.size for p in parts]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("k,alpha", [(100, 2), (7, 3), (10, 10), (13, 1)])
def test_quantity_skew_exact_classes(k, alpha):
    labels = _labels(per_class=300)
    parts = QuantityLabelSkew(alpha).split(labels, k, 10, np.random.default_rng(3))
    hist = _check_valid(parts, labels, k, 10)
    assert np.all((hist > 0).sum(axis=1) == alpha)
    holders = (hist > 0).sum(axis=0)
    assert holders.sum() == k * alpha
    assert holders.max() - holders.min() <= 1
    assert set(holders) <= {k * alpha // 10, -(-k * alpha // 10)}
    if k * alpha % 10 == 0:
        assert np.all(holders == k * alpha // 10)
    # portions of one class are near-equal
    for c in range(10):
        counts = hist[hist[:, c] > 0, c]
        assert counts.max() - counts.min() <= 1


@pytest.mark.slow
def test_quantity_assignment_always_succeeds_and_is_random():
    skew = QuantityLabelSkew(3)
    for seed in range(200):
        rng = np.random.default_rng(seed)
        k = int(rng.integers(1, 40))
        a = skew.assign_classes(k, 7, rng)
        assert a.shape == (k, 3)
        assert all(len(set(row)) == 3 for row in a)
        usage = np.bincount(a.ravel(), minlength=7)
        assert usage.max() - usage.min() <= 1
    first = [skew.assign_classes(20, 10, np.random.default_rng(s)).tobytes() for s in range(5)]
    assert len(set(first)) > 1


def test_quantity_invalid_alpha():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="alpha"):
            QuantityLabelSkew(bad)
    with pytest.raises(ValueError, match="alpha must be between 1 and num_classes=10, got 11"):
        QuantityLabelSkew(11).split(_labels(), 5, 10, np.random.default_rng(0))


def test_quantity_too_few_samples_or_clients():
    labels = _labels(per_class=3)
    with pytest.raises(ValueError, match="class .* has 3 samples"):
        QuantityLabelSkew(2).split(labels, 29, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="smaller than num_classes"):
        QuantityLabelSkew(2).split(labels, 3, 10, np.random.default_rng(0))


def test_dirichlet_skew_depends_on_beta():
    labels = _labels(per_class=500)
    k = 20
    skewed = DirichletLabelSkew(0.05).split(labels, k, 10, np.random.default_rng(4))
    flat = DirichletLabelSkew(100.0).split(labels, k, 10, np.random.default_rng(4))
    h_skewed = _check_valid(skewed, labels, k, 10)
    h_flat = _check_valid(flat, labels, k, 10)
    classes_skewed = (h_skewed > 0).sum(axis=1).mean()
    classes_flat = (h_flat > 0).sum(axis=1).mean()
    assert classes_flat > 9.5
    assert classes_skewed < 4
    assert min(p.size for p in skewed) >= 10


def test_dirichlet_min_size_respected():
    labels = _labels(per_class=100)
    parts = DirichletLabelSkew(0.3, min_samples_per_client=30).split(labels, 15, 10, np.random.default_rng(5))
    _check_valid(parts, labels, 15, 10)
    assert min(p.size for p in parts) >= 30


def test_dirichlet_gives_up():
    labels = _labels(per_class=10)
    with pytest.raises(ValueError, match="max_attempts=3"):
        DirichletLabelSkew(0.01, min_samples_per_client=9, max_attempts=3).split(
            labels, 10, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="exceeds"):
        DirichletLabelSkew(1.0, min_samples_per_client=20).split(labels, 10, 10, np.random.default_rng(0))


def test_dirichlet_invalid_beta():
    for bad in (0, -1.0, float("nan"), float("inf"), "x"):
        with pytest.raises(ValueError, match="beta"):
            DirichletLabelSkew(bad)
    with pytest.raises(ValueError, match="min_samples_per_client"):
        DirichletLabelSkew(1.0, min_samples_per_client=0)


@pytest.mark.parametrize("part", [IIDPartitioner(), QuantityLabelSkew(2), DirichletLabelSkew(0.5)])
def test_same_seed_same_partition(part):
    labels = _labels()
    a = part.split(labels, 12, 10, np.random.default_rng(42))
    b = part.split(labels, 12, 10, np.random.default_rng(42))
    c = part.split(labels, 12, 10, np.random.default_rng(43))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


def test_input_validation():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n_clients"):
        IIDPartitioner().split(_labels(), 0, 10, rng)
    with pytest.raises(ValueError, match="n_clients"):
        IIDPartitioner().split(np.array([0, 1]), 3, 10, rng)
    with pytest.raises(ValueError, match="labels must lie"):
        IIDPartitioner().split(np.array([0, 10]), 2, 10, rng)
    with pytest.raises(ValueError, match="rng"):
        IIDPartitioner().split(_labels(), 2, 10, 0)


def test_registry():
    assert {"iid", "quantity", "dirichlet"} <= set(PARTITIONERS.names())
    assert isinstance(PARTITIONERS.create("iid"), IIDPartitioner)
    assert PARTITIONERS.create("quantity", alpha=2).params.alpha == 2
    assert PARTITIONERS.create("dirichlet", beta=0.1).params.beta == 0.1
    assert PARTITIONERS.get("sfl_sim.data.partition:DirichletLabelSkew") is DirichletLabelSkew


# -- dirichlet_over_clients (NIID-Bench / FedVLS / BESplit) --------------------------------------------
def _labels(per_class: int = 600, classes: int = 10) -> np.ndarray:
    return np.repeat(np.arange(classes), per_class)


@pytest.mark.parametrize("cap", [True, False])
def test_dirichlet_over_clients_is_a_partition_with_the_minimum_size(cap) -> None:
    from sfl_sim.data.partition import DirichletOverClients

    labels = _labels()
    parts = DirichletOverClients(beta=0.1, cap_at_mean=cap).split(labels, 10, 10, np.random.default_rng(0))
    allidx = np.concatenate(parts)
    assert len(allidx) == len(labels) and len(np.unique(allidx)) == len(labels)
    assert min(len(p) for p in parts) >= 10
    assert all(np.all(np.diff(p) > 0) for p in parts)


def test_dirichlet_over_clients_splits_each_class_over_few_clients() -> None:
    """Small beta: most of each class goes to one client (a draw per class over the clients)."""
    from sfl_sim.data.partition import DirichletOverClients, label_histogram

    labels = _labels()
    parts = DirichletOverClients(beta=0.05).split(labels, 10, 10, np.random.default_rng(1))
    hist = label_histogram(labels, parts, 10)
    top_share = hist.max(axis=0) / hist.sum(axis=0)  # per class: the largest client's share
    assert np.median(top_share) > 0.6
    assert (hist == 0).sum() > 30  # many vacant (client, class) pairs


def test_dirichlet_over_clients_cap_stops_a_full_client_taking_more() -> None:
    """With the cap, a client holding N/K samples or more gets nothing of the classes split after."""
    from sfl_sim.data.partition import DirichletOverClients, label_histogram

    labels = _labels()
    rng = np.random.default_rng(3)
    parts = DirichletOverClients(beta=0.5, cap_at_mean=True).split(labels, 10, 10, rng)
    hist = label_histogram(labels, parts, 10)
    mean = len(labels) / 10
    for k in range(10):
        held = np.cumsum(hist[k])  # samples client k held after each class was split
        full = np.flatnonzero(held >= mean)
        if full.size:
            assert hist[k, full[0] + 1:].sum() == 0


def test_dirichlet_over_clients_same_seed_same_split_and_bad_parameters() -> None:
    from sfl_sim.data.partition import DirichletOverClients

    labels = _labels(100)
    a = DirichletOverClients(0.3).split(labels, 5, 10, np.random.default_rng(7))
    b = DirichletOverClients(0.3).split(labels, 5, 10, np.random.default_rng(7))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    for bad in ({"beta": 0}, {"beta": 0.1, "cap_at_mean": "yes"}, {"beta": 0.1, "min_samples_per_client": 0}):
        with pytest.raises(ValueError):
            DirichletOverClients(**bad)


def test_quantity_skew_portions_dealt_at_random():
    """distinct_classes=False: the K*alpha portions are dealt at random (scala-icml.md §5.1 read
    literally), so each client still gets alpha portions but may hold fewer than alpha classes."""
    labels = _labels(per_class=300)
    k, alpha = 100, 2
    single = []
    for seed in range(20):
        parts = QuantityLabelSkew(alpha, distinct_classes=False).split(labels, k, 10, np.random.default_rng(seed))
        hist = _check_valid(parts, labels, k, 10)
        # every class cut into K*alpha/N = 20 portions of 300/20 = 15 samples; every client gets 2 portions
        assert np.all(hist.sum(axis=1) == alpha * 15)
        assert set(np.unique(hist)) <= {0, 15, 30}
        classes = (hist > 0).sum(axis=1)
        assert set(classes) <= {1, 2}
        single.append(int((classes == 1).sum()))
    # P(a client's two portions are of one class) = 19/199 for 200 portions, 20 per class: 9.5 clients
    # of 100 on average; over 20 seeds the mean lies within 3 standard errors of it.
    assert abs(np.mean(single) - 100 * 19 / 199) < 3 * np.std(single) / np.sqrt(20) + 0.5
    # the default (distinct classes) is unchanged by the new parameter
    same = QuantityLabelSkew(alpha).split(labels, k, 10, np.random.default_rng(3))
    explicit = QuantityLabelSkew(alpha, distinct_classes=True).split(labels, k, 10, np.random.default_rng(3))
    assert all(np.array_equal(a, b) for a, b in zip(same, explicit, strict=True))
