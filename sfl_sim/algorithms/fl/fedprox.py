"""FedProx (Li et al., MLSys 2020): FedAvg whose local loss adds the proximal term of eq. (2),

    h_k(w; w^t) = F_k(w) + mu/2 ||w - w^t||^2,

w^t being the global model broadcast this round.  Same traffic as FedAvg (nothing extra is sent);
the term's compute is part of the metered ``local_step``.  Clients all run the same T iterations
(the paper's inexact solutions / dropped stragglers are not modelled: the simulator times every
client's T iterations instead).
"""
from __future__ import annotations

from typing import Annotated, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup
from sfl_sim.algorithms.fl.fedavg import FedAvg
from sfl_sim.algorithms.terms.fl import proximal_term
from sfl_sim.kit.params import Doc, NonNegative


@ALGORITHMS.register("fedprox")
class FedProx(FedAvg):
    """FedAvg with a proximal term.

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(FedAvg.Params):
        """FedProx's parameters (what a scenario sets beside ``name``)."""

        mu: Annotated[NonNegative, Doc(
            "Proximal coefficient (>= 0; 0 is FedAvg).  0.01 is the value the FedVLS paper lists for FedProx from "
            "its original grid {0.001, 0.01, 0.1, 1}.")] = 0.01

    params: Params

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        self._global: list[torch.Tensor] = []

    def begin_round(self, cohort: np.ndarray) -> None:
        self._global = [p.detach().clone() for p in self.model.parameters()]

    def local_loss(self, client: int, model: nn.Module, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, labels) + proximal_term(model.parameters(), self._global, self.params.mu)
