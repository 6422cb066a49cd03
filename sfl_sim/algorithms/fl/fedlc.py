"""FedLC (Zhang et al., ICML 2022, "Federated Learning with Label Distribution Skew via Logits
Calibration"): FedAvg whose clients train with the calibrated loss

    L_cal = CE( s_c - tau * n_{k,c}^{-1/4}, y ),

n_{k,c} being client k's local count of class c (softmax over all classes, as in the authors'
code; a class the client does not hold gets -inf).  Registered twice: ``fedlc`` (the SCALA journal's
name) and ``fedla`` (the SCALA conference tables' name for the same baseline, Zhang et al. 2022).
Same traffic as FedAvg; the label counts are the client's own and never sent.
"""
from __future__ import annotations

from typing import Annotated, Any

import torch
from torch import nn

from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup
from sfl_sim.algorithms.fl.fedavg import FedAvg
from sfl_sim.algorithms.terms.fl import logit_calibrated_cross_entropy
from sfl_sim.kit.params import Doc, NonNegative


@ALGORITHMS.register("fedla")
@ALGORITHMS.register("fedlc")
class FedLC(FedAvg):
    """FedAvg with logit calibration.

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(FedAvg.Params):
        """FedLC's parameters (what a scenario sets beside ``name``)."""

        tau: Annotated[NonNegative, Doc(
            "Calibration strength (>= 0; 0 is FedAvg).  0.5 is the value the FedVLS paper (Table 10) lists for "
            "FedLC from the original paper.")] = 0.5

    params: Params

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        self._counts = setup.client_label_counts

    def local_loss(self, client: int, model: nn.Module, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return logit_calibrated_cross_entropy(logits, labels, self._counts[client], self.params.tau)
