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

import torch
import torch.nn.functional as F

from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup
from sfl_sim.algorithms.fl.fedavg import GlobalTeacherFedAvg
from sfl_sim.algorithms.terms.fl import not_true_distillation_loss
from sfl_sim.kit.params import NonNegative, ParamsModel, Positive


@ALGORITHMS.register("fedntd")
class FedNTD(GlobalTeacherFedAvg):
    """FedAvg with not-true distillation.

    Parameters
    ----------
    setup : TrainingSetup
    beta : float, default 1.0
        Weight of the distillation term (>= 0; 0 is FedAvg).
    tau : float, default 1.0
        Softmax temperature (> 0).  beta = tau = 1 are the authors' released settings.
    """

    class Params(ParamsModel):
        """FedNTD's parameters (what a scenario sets beside ``name``)."""

        beta: NonNegative = 1.0
        tau: Positive = 1.0

    def __init__(self, setup: TrainingSetup, beta: float = 1.0, tau: float = 1.0) -> None:
        super().__init__(setup)
        params = FedNTD.Params.check(beta=beta, tau=tau)
        self.beta, self.tau = params.beta, params.tau

    def distilled_loss(self, client: int, logits: torch.Tensor, global_logits: torch.Tensor,
                       y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, y) + self.beta * not_true_distillation_loss(logits, global_logits, y, self.tau)
