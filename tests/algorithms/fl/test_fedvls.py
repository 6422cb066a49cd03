"""FedVLS's loss terms (eqs. 2-6) against their written formulas on hand-made cases, and the algorithm."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.terms.fl import (
    fedvls_objective,
    logit_suppression_loss,
    logit_suppression_loss_released,
    logit_suppression_per_class,
    prior_calibrated_cross_entropy,
    vacant_class_distillation_loss,
)
from sfl_sim.algorithms.terms.logit_adjustment import logit_adjusted_cross_entropy
from tests.helpers import tiny_setup, two_client_simulator

# Four classes; the client holds classes 0 and 1 (prior 3/4, 1/4), classes 2 and 3 are vacant.
PRIOR = torch.tensor([0.75, 0.25, 0.0, 0.0], dtype=torch.float64)
VACANT = PRIOR == 0
LOGITS = torch.tensor([[1.0, 0.5, -1.0, 2.0],
                       [0.0, 2.0, 1.0, 0.0],
                       [3.0, -1.0, 0.5, -0.5]], dtype=torch.float64)
GLOBAL = torch.tensor([[0.0, 1.0, 1.0, 0.0],
                       [1.0, 0.0, -1.0, 1.0],
                       [0.5, 0.5, 2.0, 0.0]], dtype=torch.float64)
LABELS = torch.tensor([0, 1, 0])


def _kl_by_hand(local: torch.Tensor, glob: torch.Tensor, classes: list) -> float:
    total = 0.0
    for i in range(local.shape[0]):
        zl = sum(math.exp(local[i, c]) for c in classes)
        zg = sum(math.exp(glob[i, c]) for c in classes)
        for c in classes:
            q, qg = math.exp(local[i, c]) / zl, math.exp(glob[i, c]) / zg
            total += qg * math.log(qg / q)
    return total / local.shape[0]


def _suppression_by_hand(logits: torch.Tensor, labels: torch.Tensor, prior: torch.Tensor) -> float:
    n, c_all = logits.shape
    total = 0.0
    for c in range(c_all):
        s = sum(math.exp(logits[i, c]) for i in range(n) if labels[i] != c)
        if prior[c] > 0 and s > 0:
            total += float(prior[c]) * math.log(s / n)
    return total


# -- eq. 2 -----------------------------------------------------------------------------------------
def test_prior_calibrated_cross_entropy_by_hand() -> None:
    expected = 0.0
    for i in range(3):
        num = PRIOR[LABELS[i]] * math.exp(LOGITS[i, LABELS[i]])
        den = sum(PRIOR[c] * math.exp(LOGITS[i, c]) for c in range(4))
        expected -= math.log(num / den)
    loss = prior_calibrated_cross_entropy(LOGITS, LABELS, PRIOR)
    assert loss.item() == pytest.approx(expected / 3, rel=1e-12)
    # It is log-prior adjustment (FedLogit's loss), not FedLC's n^{-1/4} shift.
    assert loss.item() == pytest.approx(logit_adjusted_cross_entropy(LOGITS, LABELS, PRIOR).item(), rel=1e-12)


def test_prior_calibration_ignores_vacant_logits_and_uniform_prior_is_plain_ce() -> None:
    moved = LOGITS.clone()
    moved[:, 2:] += torch.tensor([5.0, -3.0], dtype=torch.float64)
    assert prior_calibrated_cross_entropy(moved, LABELS, PRIOR).item() == pytest.approx(
        prior_calibrated_cross_entropy(LOGITS, LABELS, PRIOR).item(), rel=1e-12)
    uniform = torch.full((4,), 0.25, dtype=torch.float64)
    plain = torch.nn.functional.cross_entropy(LOGITS, LABELS)
    assert prior_calibrated_cross_entropy(LOGITS, LABELS, uniform).item() == pytest.approx(plain.item(), rel=1e-12)


# -- eq. 3 -----------------------------------------------------------------------------------------
def test_vacant_class_distillation_by_hand() -> None:
    loss = vacant_class_distillation_loss(LOGITS, GLOBAL, VACANT)
    assert loss.item() == pytest.approx(_kl_by_hand(LOGITS, GLOBAL, [2, 3]), rel=1e-12)
    assert loss.item() > 0  # the KL itself, not eq. 3's printed negative


def test_vacant_class_distillation_ignores_present_classes() -> None:
    moved = LOGITS.clone()
    moved[:, :2] += torch.tensor([[4.0, -2.0], [-7.0, 1.0], [0.3, 9.0]], dtype=torch.float64)
    moved_g = GLOBAL.clone()
    moved_g[:, :2] -= 3.0
    base = vacant_class_distillation_loss(LOGITS, GLOBAL, VACANT).item()
    assert vacant_class_distillation_loss(moved, moved_g, VACANT).item() == pytest.approx(base, rel=1e-12)
    # ... and the gradient reaches only the vacant logits, never the teacher.
    local = LOGITS.clone().requires_grad_(True)
    glob = GLOBAL.clone().requires_grad_(True)
    vacant_class_distillation_loss(local, glob, VACANT).backward()
    assert torch.all(local.grad[:, :2] == 0) and torch.any(local.grad[:, 2:] != 0)
    assert glob.grad is None


def test_vacant_class_distillation_degenerate_cases() -> None:
    # Same vacant-class logits up to a per-row constant: same softmax, zero KL.
    shifted = GLOBAL.clone()
    shifted[:, 2:] = LOGITS[:, 2:] + torch.tensor([[1.0], [-2.0], [0.5]], dtype=torch.float64)
    assert vacant_class_distillation_loss(LOGITS, shifted, VACANT).item() == pytest.approx(0.0, abs=1e-12)
    # No vacant class, or a single one: nothing to distil.
    assert vacant_class_distillation_loss(LOGITS, GLOBAL, torch.zeros(4, dtype=torch.bool)).item() == 0.0
    one = torch.tensor([False, False, True, False])
    assert vacant_class_distillation_loss(LOGITS, GLOBAL, one).item() == 0.0


# -- eqs. 4-5 --------------------------------------------------------------------------------------
def test_logit_suppression_per_class_by_hand() -> None:
    per_class = logit_suppression_per_class(LOGITS, LABELS)
    # class 0: samples 0 and 2 are of class 0, only sample 1 counts: log(e^0 / 3)
    assert per_class[0].item() == pytest.approx(math.log(1.0 / 3), rel=1e-12)
    # class 1: samples 0 and 2: log((e^0.5 + e^-1) / 3)
    assert per_class[1].item() == pytest.approx(math.log((math.exp(0.5) + math.exp(-1.0)) / 3), rel=1e-12)
    # class 3 (no sample of it): all three: log((e^2 + e^0 + e^-0.5) / 3)
    assert per_class[3].item() == pytest.approx(math.log((math.exp(2.0) + 1.0 + math.exp(-0.5)) / 3), rel=1e-12)


def test_logit_suppression_loss_by_hand() -> None:
    loss = logit_suppression_loss(LOGITS, LABELS, PRIOR)
    expected = 0.75 * math.log(1.0 / 3) + 0.25 * math.log((math.exp(0.5) + math.exp(-1.0)) / 3)
    assert loss.item() == pytest.approx(expected, rel=1e-12)
    assert loss.item() == pytest.approx(_suppression_by_hand(LOGITS, LABELS, PRIOR), rel=1e-12)


def test_logit_suppression_leaves_label_logits_and_vacant_classes_alone() -> None:
    local = LOGITS.clone().requires_grad_(True)
    logit_suppression_loss(local, LABELS, PRIOR).backward()
    g = local.grad
    assert torch.all(g[torch.arange(3), LABELS] == 0)  # a sample's own label logit is not suppressed
    assert torch.all(g[:, 2:] == 0)  # p(c) = 0: vacant classes carry no weight
    assert torch.all(g[0, 1:2] > 0) and g[1, 0] > 0  # non-label logits of held classes pushed down


def test_logit_suppression_skips_a_class_every_sample_carries() -> None:
    labels = torch.tensor([0, 0, 0])
    per_class = logit_suppression_per_class(LOGITS, labels)
    assert per_class[0].item() == -math.inf
    local = LOGITS.clone().requires_grad_(True)
    loss = logit_suppression_loss(local, labels, PRIOR)
    loss.backward()
    assert torch.isfinite(loss) and torch.all(torch.isfinite(local.grad))
    assert loss.item() == pytest.approx(_suppression_by_hand(LOGITS, labels, PRIOR), rel=1e-12)
    expected = 0.25 * math.log((math.exp(0.5) + math.exp(2.0) + math.exp(-1.0)) / 3)
    assert loss.item() == pytest.approx(expected, rel=1e-12)


def _released_by_hand(logits: torch.Tensor, labels: torch.Tensor, prior: torch.Tensor) -> float:
    """The authors' new_LADEloss, written out: debiased logits, label entries set to 0 (not dropped)."""
    n, c = logits.shape
    total = 0.0
    for k in range(c):
        s = [0.0 if int(labels[i]) == k else float(logits[i, k]) - math.log(float(prior[k]) + 1e-9) + math.log(1 / c)
             for i in range(n)]
        total += float(prior[k]) * (math.log(sum(math.exp(v) for v in s)) - math.log(n))
    return total


def test_released_suppression_matches_the_authors_formula() -> None:
    for labels in (LABELS, torch.tensor([0, 0, 0])):
        got = logit_suppression_loss_released(LOGITS, labels, PRIOR).item()
        assert got == pytest.approx(_released_by_hand(LOGITS, labels, PRIOR), rel=1e-12)


def test_released_suppression_is_bounded_below_where_the_printed_one_is_not() -> None:
    """Pushing every non-label logit down without limit: eqs. 4-5 go to -inf, the released code stops."""
    down = torch.zeros_like(LOGITS)
    down[torch.arange(3), LABELS] = 1.0
    pushed = LOGITS * down + (-1e3) * (1 - down)
    assert logit_suppression_loss(pushed, LABELS, PRIOR).item() < -700
    bound = sum(float(PRIOR[k]) * math.log(float((k == LABELS).sum()) / 3) for k in range(4) if PRIOR[k] > 0)
    assert logit_suppression_loss_released(pushed, LABELS, PRIOR).item() == pytest.approx(bound, abs=1e-9)
    local = pushed.clone().requires_grad_(True)
    logit_suppression_loss_released(local, LABELS, PRIOR).backward()
    assert torch.all(torch.isfinite(local.grad))


def test_objective_takes_either_suppression_form() -> None:
    cal = prior_calibrated_cross_entropy(LOGITS, LABELS, PRIOR).item()
    got = fedvls_objective(LOGITS, LOGITS, LABELS, PRIOR, 0.1, 0.005, "released").item()
    assert got == pytest.approx(cal + 0.005 * _released_by_hand(LOGITS, LABELS, PRIOR), rel=1e-12)
    with pytest.raises(ValueError, match="suppression_form: got 'eq5'; allowed: one of paper, released"):
        fedvls_objective(LOGITS, LOGITS, LABELS, PRIOR, 0.1, 0.005, "eq5")


# -- eq. 6 -----------------------------------------------------------------------------------------
def test_objective_is_the_sum_of_the_terms() -> None:
    lam = 0.1
    total = fedvls_objective(LOGITS, GLOBAL, LABELS, PRIOR, lam)
    expected = (prior_calibrated_cross_entropy(LOGITS, LABELS, PRIOR) + lam * _kl_by_hand(LOGITS, GLOBAL, [2, 3])
                + _suppression_by_hand(LOGITS, LABELS, PRIOR))
    assert total.item() == pytest.approx(expected.item(), rel=1e-12)
    weighted = fedvls_objective(LOGITS, GLOBAL, LABELS, PRIOR, lam, suppression_weight=0.005)
    assert weighted.item() == pytest.approx((expected - 0.995 * _suppression_by_hand(LOGITS, LABELS, PRIOR)).item(),
                                            rel=1e-12)


def test_objective_degenerate_weights() -> None:
    cal = prior_calibrated_cross_entropy(LOGITS, LABELS, PRIOR).item()
    sup = logit_suppression_loss(LOGITS, LABELS, PRIOR).item()
    # lambda = 0: the teacher does not matter.
    a = fedvls_objective(LOGITS, GLOBAL, LABELS, PRIOR, 0.0).item()
    b = fedvls_objective(LOGITS, -3 * GLOBAL, LABELS, PRIOR, 0.0).item()
    assert a == b == pytest.approx(cal + sup, rel=1e-12)
    # Both weights 0: only L_cal.
    assert fedvls_objective(LOGITS, GLOBAL, LABELS, PRIOR, 0.0, 0.0).item() == pytest.approx(cal, rel=1e-12)
    # Teacher equal to the student: L_dis = 0, whatever lambda.
    assert fedvls_objective(LOGITS, LOGITS, LABELS, PRIOR, 5.0).item() == pytest.approx(cal + sup, rel=1e-12)


# -- the algorithm ---------------------------------------------------------------------------------
@pytest.mark.parametrize("params,name", [({"lam": -0.1}, "lam"), ({"lam": float("nan")}, "lam"),
                                         ({"lam": "0.1"}, "lam"), ({"lam": True}, "lam"),
                                         ({"suppression_weight": -1.0}, "suppression_weight"),
                                         ({"suppression_form": "eq5"}, "suppression_form")])
def test_invalid_parameters_raise_naming_them(params: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        ALGORITHMS.get("fedvls")(tiny_setup(), **params)


def test_defaults_are_the_papers() -> None:
    algo = ALGORITHMS.get("fedvls")(tiny_setup())
    assert algo.params.lam == 0.1 and algo.params.suppression_weight == 0.005  # lambda: paper; 0.005: authors' code
    assert algo.params.suppression_form == "released"  # L_logit as the authors' code (eqs. 4-5 collapse, see fedvls.py)


def test_teacher_forward_is_metered_and_traffic_is_fedavgs() -> None:
    """Same bytes as FedAvg; the local step costs more FLOPs (the global model's forward pass)."""
    counters = {}
    for name in ("fedavg", "fedvls"):
        algo = ALGORITHMS.get(name)(tiny_setup(num_classes=4, local_iterations=2))
        sim = two_client_simulator()
        cohort = np.array([0, 1])
        sim.run_round(lambda ctx, algo=algo, cohort=cohort: algo.run_round(ctx, cohort), cohort)
        counters[name] = sim.counters
    assert counters["fedvls"].uplink_bytes == counters["fedavg"].uplink_bytes
    assert counters["fedvls"].client_flops > counters["fedavg"].client_flops


def test_teacher_is_the_round_start_global_model() -> None:
    algo = ALGORITHMS.get("fedvls")(tiny_setup(num_classes=4))
    sim = two_client_simulator()
    cohort = np.array([0, 1])
    sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    teacher = algo._teacher
    assert not teacher.training and all(not p.requires_grad for p in teacher.parameters())
    # The teacher stayed the broadcast model while the global model moved on.
    assert any(not torch.equal(a, b) for a, b in zip(teacher.parameters(), algo.global_model().parameters(),
                                                     strict=True))
