"""FedDecorr (Shi et al., ICLR 2023, "Towards Understanding and Mitigating Dimensional Collapse in
Heterogeneous Federated Learning"): FedAvg whose local loss adds the decorrelation regulariser

    L = CE(s, y) + beta * ||K||_F^2 / d^2                                            (eq. 5)

K being the correlation matrix of the batch's standardised d-dimensional representations.

Representation (our decision, the paper uses "the representation before the classifier"): the
input of the model's last ``nn.Linear`` (:func:`sfl_sim.algorithms.terms.fl.features_and_logits`):
the model runs once, all blocks but the last, then the last block without its final Linear; the
logits come from that same pass, so the regulariser adds only the d x d correlation to the metered
``local_step``.  For AlexNet this is the 256-d (paper-scale: 1024-d) output of the second hidden
fully-connected layer after its ReLU.  Same traffic as FedAvg.
"""
from __future__ import annotations

from typing import Annotated, Any

import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup
from sfl_sim.algorithms.fl.fedavg import FedAvg
from sfl_sim.algorithms.terms.fl import classifier_layer, decorrelation_loss, features_and_logits
from sfl_sim.kit.params import Doc, NonNegative


@ALGORITHMS.register("feddecorr")
class FedDecorr(FedAvg):
    """FedAvg with the FedDecorr regulariser.

    Parameters
    ----------
    setup : TrainingSetup

    Raises
    ------
    ValueError
        If ``beta`` is negative, or the model's last block does not end with an ``nn.Linear``.
    """

    class Params(FedAvg.Params):
        """FedDecorr's parameters (what a scenario sets beside ``name``)."""

        beta: Annotated[NonNegative, Doc(
            "Regulariser coefficient (>= 0; 0 is FedAvg); 0.1 is the paper's default for CIFAR.")] = 0.1

    params: Params

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        classifier_layer(self.model)  # fail at build time when the model has no final Linear

    def local_objective(self, client: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        feats, logits = features_and_logits(model, x)
        return F.cross_entropy(logits, y) + self.params.beta * decorrelation_loss(feats)
