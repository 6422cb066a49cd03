"""Per-class test accuracy and the accuracy of local models on their vacant classes, against hand
computations on tiny cases."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from sfl_sim.models.evaluation import Scores, VacantClassProbe, class_accuracy_of, evaluate


def fixed_classifier() -> nn.Module:
    """Predicts class argmax(x): logits = x (3 features, 3 classes)."""
    model = nn.Linear(3, 3, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.eye(3))
    return model


def test_per_class_accuracy_equals_a_hand_count() -> None:
    # labels:      0  0  0  1  1  2       (class 2 once, class 0 three times)
    # predictions: 0  1  0  1  2  2       -> class 0: 2/3, class 1: 1/2, class 2: 1/1; overall 4/6
    y = torch.tensor([0, 0, 0, 1, 1, 2])
    pred = torch.tensor([0, 1, 0, 1, 2, 2])
    x = torch.nn.functional.one_hot(pred, 3).float()
    for batch in (1, 4, 6):  # the batch size changes nothing
        scores = evaluate(fixed_classifier(), x, y, batch)
        acc, loss = scores
        assert acc == pytest.approx(4 / 6)
        assert scores.class_accuracy.tolist() == pytest.approx([2 / 3, 1 / 2, 1.0])
        assert scores.class_correct.tolist() == [2, 1, 1] and scores.class_total.tolist() == [3, 2, 1]
        logits = x  # the model is the identity
        assert loss == pytest.approx(float(torch.nn.functional.cross_entropy(logits, y)))


def test_a_class_without_test_samples_is_nan() -> None:
    y = torch.tensor([0, 1])
    scores = evaluate(fixed_classifier(), torch.eye(3)[:2], y, 8)
    assert scores.class_accuracy[:2].tolist() == [1.0, 1.0] and math.isnan(scores.class_accuracy[2])


def test_class_accuracy_of_a_plain_pair_is_unknown() -> None:
    assert np.isnan(class_accuracy_of((0.5, 1.0), 3)).all()
    assert class_accuracy_of(Scores(0.5, 1.0, np.array([0.1, 0.2])), 3)[:2].tolist() == [0.1, 0.2]


def test_vacant_class_accuracy_is_the_mean_over_clients_of_their_vacant_class_accuracy() -> None:
    """Client 0 holds classes 0, 1 (vacant: 2); client 1 holds class 0 (vacant: 1, 2); client 2
    holds all three (no vacant class: left out of the mean)."""
    counts = np.array([[5, 3, 0], [4, 0, 0], [1, 1, 1]])
    y = torch.tensor([0, 1, 1, 2, 2, 2, 2])
    x = torch.nn.functional.one_hot(y, 3).float()
    right = fixed_classifier()  # always right
    wrong_on_2 = fixed_classifier()
    with torch.no_grad():
        wrong_on_2.weight[2] = torch.tensor([1.0, 0.0, 0.0])  # class-2 images score 0 on class 2: predicted 0
        wrong_on_2.weight[0] = torch.tensor([1.0, 0.0, 0.5])
    probe = VacantClassProbe(x, y, counts, batch_size=3)
    assert probe.vacant_classes(0) == [2] and probe.vacant_classes(1) == [1, 2] and probe.vacant_classes(2) == []
    probe.observe({0: wrong_on_2, 1: wrong_on_2, 2: right})
    # client 0: class 2 -> 0.0; client 1: mean(class 1 -> 1.0, class 2 -> 0.0) = 0.5; client 2 skipped
    assert probe.take() == pytest.approx((0.0 + 0.5) / 2)
    assert math.isnan(probe.take())  # observations are forgotten once taken
    probe.observe({0: right})
    assert probe.take() == 1.0


def test_the_probe_leaves_the_model_as_it_was() -> None:
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    probe = VacantClassProbe(torch.eye(3), torch.tensor([0, 1, 2]), np.array([[1, 0, 0]]), 2)
    probe.observe({0: model})
    assert model.training and all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert torch.equal(rng, torch.get_rng_state())  # no random draw: training streams are untouched
