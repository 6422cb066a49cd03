"""Loss functions with logit adjustment (SCALA, scala-icml.md eqs. 11-15).

Pure functions on tensors, tested alone against the written formulas.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def label_distribution(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Empirical label distribution P(y) of a label set.

    Parameters
    ----------
    labels : LongTensor, shape (n,)
    num_classes : int

    Returns
    -------
    Tensor, shape (num_classes,), float32, sums to 1 (all zeros for an empty set).
    """
    # Counted with index_add_ and divided by max(total, 1), not bincount and a branch on the total:
    # both of those read a number back from the device (a host sync per call on a GPU); the
    # values are the same.
    counts = torch.zeros(num_classes, dtype=torch.int64, device=labels.device)
    counts = counts.index_add_(0, labels, torch.ones_like(labels)).to(torch.float32)
    return counts / counts.sum().clamp_min(1.0)


def logit_adjusted_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
    """Mean softmax cross-entropy of logits shifted by ``log prior`` (eqs. 14 and 15).

    ``g(y, s) = -log( exp(s_y + log P(y)) / sum_y' exp(s_y' + log P(y')) )``, averaged over the batch.
    A class with ``P(y) = 0`` gets ``log 0 = -inf``: its adjusted probability is exactly zero, so it
    receives no gradient (the behaviour the paper's Lemma 4.3 describes for absent classes). The
    labels present always have ``P > 0``, so the loss stays finite.

    Parameters
    ----------
    logits : Tensor, shape (n, num_classes)
    labels : LongTensor, shape (n,)
    prior : Tensor, shape (num_classes,)
        Label distribution used for the adjustment (P_s on the server, P_k for client k).
    """
    return F.cross_entropy(logits + torch.log(prior).to(logits.dtype), labels)
