"""Scoring models on the test set: accuracy, loss, per-class accuracy, and local models on their
vacant classes.

* :func:`evaluate` scores one model and returns an :class:`Evaluation` — the ``(accuracy, loss)``
  pair every algorithm's ``evaluate`` hook works with, carrying the per-class counts behind the
  accuracy, so ``classes.csv`` costs no second pass over the test set; an algorithm reporting a
  mean over several models returns :class:`Scores` with the mean per-class accuracy.
* :class:`VacantClassProbe` measures FedVLS's "accuracy of local models on their vacant classes":
  for each client whose locally trained model of the round is aggregated (before aggregation), the
  mean over its *vacant classes* — classes with no sample in its local data D_k that the test set
  holds — of the model's accuracy on that class's test images; the value of the round is the
  unweighted mean over those clients that have at least one vacant class (NaN when none has).
  Only these per-client numbers are kept, never the models.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import cast

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["Evaluation", "Scores", "VacantClassProbe", "class_accuracy_of", "evaluate"]


class Scores(tuple):
    """``(accuracy, loss)`` with the per-class test accuracy behind them.

    A tuple of two floats (it unpacks and converts like one); :attr:`class_accuracy` adds the
    detail ``classes.csv`` records.  Return one from an algorithm's ``evaluate`` hook when the
    reported score is not a single model's :func:`evaluate` (e.g. a mean over several models).

    Attributes
    ----------
    class_accuracy : ndarray, shape (N,)
        Accuracy on each class's test samples (NaN where unknown).
    """

    _class_accuracy: np.ndarray | None

    def __new__(cls, accuracy: float, loss: float, class_accuracy: np.ndarray | None = None) -> Scores:
        obj = super().__new__(cls, (accuracy, loss))
        obj._class_accuracy = None if class_accuracy is None else np.asarray(class_accuracy, dtype=float)
        return obj

    @property
    def class_accuracy(self) -> np.ndarray | None:
        return self._class_accuracy


class Evaluation(Scores):
    """:class:`Scores` of one model on a test set, from the per-class counts.

    Attributes
    ----------
    class_correct, class_total : ndarray of int64, shape (N,)
        Correct predictions and test samples of each class.
    """

    class_correct: np.ndarray
    class_total: np.ndarray

    def __new__(cls, accuracy: float, loss: float, class_correct: np.ndarray, class_total: np.ndarray) -> Evaluation:
        correct = np.asarray(class_correct, dtype=np.int64)
        total = np.asarray(class_total, dtype=np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_class = np.where(total > 0, correct / np.maximum(total, 1), np.nan)
        obj = cast(Evaluation, super().__new__(cls, accuracy, loss, per_class))
        obj.class_correct, obj.class_total = correct, total
        return obj


@torch.no_grad()
def evaluate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int) -> Evaluation:
    """Test accuracy (fraction), mean cross-entropy and per-class counts of ``model`` on ``(x, y)``.

    Without autograd, and with one device sync at the end: the sums and per-class counts stay on
    the device between batches (counted with ``index_add_``, not ``bincount``, which reads a
    number back from a GPU), and the loss is summed in float64 as a Python float sum would be.

    Parameters
    ----------
    model : nn.Module
        Put in eval mode for the pass and back in its previous mode after.
    x : Tensor, shape (n, ...)
    y : LongTensor, shape (n,)
    batch_size : int
        Test-time batch (memory only; the accuracy does not depend on it, the loss only in its
        float summation order).
    """
    was_training = model.training
    model.eval()
    correct = torch.zeros((), dtype=torch.int64, device=y.device)
    loss_sum = torch.zeros((), dtype=torch.float64, device=y.device)
    class_correct: torch.Tensor | None = None
    class_total: torch.Tensor | None = None
    for start in range(0, len(y), batch_size):
        logits = model(x[start:start + batch_size])
        target = y[start:start + batch_size]
        loss_sum += F.cross_entropy(logits, target, reduction="sum").double()
        hit = (logits.argmax(dim=1) == target).to(torch.int64)
        correct += hit.sum()
        if class_correct is None:
            class_correct = torch.zeros(logits.shape[1], dtype=torch.int64, device=y.device)
            class_total = torch.zeros(logits.shape[1], dtype=torch.int64, device=y.device)
        assert class_total is not None  # made with class_correct
        class_correct.index_add_(0, target, hit)
        class_total.index_add_(0, target, torch.ones_like(target))
    model.train(was_training)
    n = 0 if class_correct is None else len(class_correct)
    counts = [] if class_correct is None else [class_correct.double(), cast(torch.Tensor, class_total).double()]
    # The one sync: every number comes back in one copy (counts below 2**53 are exact in float64).
    back = torch.cat([loss_sum.view(1), correct.double().view(1), *counts]).cpu().numpy()
    return Evaluation(int(back[1]) / len(y), float(back[0]) / len(y),
                      back[2:2 + n].astype(np.int64), back[2 + n:].astype(np.int64))


def class_accuracy_of(scores: object, num_classes: int) -> np.ndarray:
    """The per-class accuracy an algorithm's ``evaluate`` returned, shape (``num_classes``,): the
    :class:`Evaluation`'s (or anything with a ``class_accuracy``), else all NaN (an algorithm
    whose reported score is not one model's on the test set and that gives none)."""
    acc = getattr(scores, "class_accuracy", None)
    out = np.full(num_classes, np.nan)
    if acc is not None:
        acc = np.asarray(acc, dtype=float).reshape(-1)[:num_classes]
        out[:len(acc)] = acc
    return out


class VacantClassProbe:
    """Accuracy of the round's local models on their vacant classes (module docstring).

    Parameters
    ----------
    x, y : Tensor
        The test set the run evaluates on.
    client_label_counts : ndarray, shape (K, N)
        Label counts of every client's local data (zero: a vacant class).
    batch_size : int
        Test-time batch.
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor, client_label_counts: np.ndarray, batch_size: int) -> None:
        self.x, self.y, self.batch_size = x, y, int(batch_size)
        self.counts = np.asarray(client_label_counts)
        self.tested = set(torch.unique(y).cpu().tolist())
        self._scores: dict[int, float] = {}

    def vacant_classes(self, client: int) -> list[int]:
        """Classes client ``client`` holds no sample of and the test set has."""
        return [n for n in range(self.counts.shape[1]) if self.counts[client, n] == 0 and n in self.tested]

    @torch.no_grad()
    def observe(self, models: Mapping[int, torch.nn.Module]) -> None:
        """Score each client's local model on its vacant classes (clients without any are skipped)."""
        for k, model in models.items():
            vacant = self.vacant_classes(k)
            if not vacant:
                continue
            mask = torch.isin(self.y, torch.as_tensor(vacant, device=self.y.device))
            scores = evaluate(model, self.x[mask], self.y[mask], self.batch_size)
            class_accuracy = scores.class_accuracy
            assert class_accuracy is not None  # an Evaluation always has it
            self._scores[int(k)] = float(np.nanmean(class_accuracy[vacant]))

    def take(self) -> float:
        """The round's value — the mean over the observed clients with vacant classes, NaN if
        none — and forget the observations."""
        scores, self._scores = self._scores, {}
        return float(np.mean(list(scores.values()))) if scores else math.nan
