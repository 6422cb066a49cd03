"""FedNTD (Lee et al., NeurIPS 2022, "Preservation of the Global Knowledge by Not-True
Distillation in Federated Learning"): FedAvg whose local loss is

    L = CE(q_l, y) + beta * tau^2 * KL( q~_g^tau || q~_l^tau )                    (eqs. 4-5)

q~^tau being the temperature-tau softmax over the *not-true* classes (the true label removed) of
the local model (l) and of the global model received this round (g, a frozen copy).

Choices: the global model runs in eval mode (no dropout: a deterministic teacher) on the same
minibatch inside the local step, so its forward pass is metered and timed as client compute.
Same traffic as FedAvg (the client already holds the global model it received).
"""
from __future__ import annotations

from typing import Annotated

import torch
import torch.nn.functional as F

from sfl_sim.algorithms.base import ALGORITHMS
from sfl_sim.algorithms.fl.fedavg import GlobalTeacherFedAvg
from sfl_sim.algorithms.terms.fl import not_true_distillation_loss
from sfl_sim.kit.params import Doc, NonNegative, Positive


@ALGORITHMS.register("fedntd")
class FedNTD(GlobalTeacherFedAvg):
    """FedAvg with not-true distillation.

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(GlobalTeacherFedAvg.Params):
        """FedNTD's parameters (what a scenario sets beside ``name``)."""

        beta: Annotated[NonNegative, Doc("Weight of the distillation term (>= 0; 0 is FedAvg).")] = 1.0
        tau: Annotated[Positive, Doc(
            "Softmax temperature (> 0).  beta = tau = 1 are the authors' released settings.")] = 1.0

    params: Params

    def distilled_loss(self, client: int, logits: torch.Tensor, global_logits: torch.Tensor,
                       y: torch.Tensor) -> torch.Tensor:
        p = self.params
        return F.cross_entropy(logits, y) + p.beta * not_true_distillation_loss(logits, global_logits, y, p.tau)
