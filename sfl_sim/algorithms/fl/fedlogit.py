"""FedLogit (SCALA conference paper §5.1): FedAvg whose clients train with the logit-adjusted
loss of eq. (15), ``CE(s + log P_k, y)``, P_k being client k's label distribution.

``label_prior="batch"`` (default) takes P_k from the current minibatch's labels, as SCALA's
client adjustment does in this simulator (``scala.py``, ``label_prior="batch"``), so FedLogit is
SCALA's client-side loss inside FedAvg; ``"local_data"`` uses client k's whole local label
distribution.  Same traffic as FedAvg.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

import torch
from torch import nn

from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup
from sfl_sim.algorithms.fl.fedavg import FedAvg
from sfl_sim.algorithms.terms.logit_adjustment import label_distribution, logit_adjusted_cross_entropy
from sfl_sim.kit.params import Doc


@ALGORITHMS.register("fedlogit")
class FedLogit(FedAvg):
    """FedAvg with the client-side logit adjustment of SCALA eq. (15).

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(FedAvg.Params):
        """FedLogit's parameters (what a scenario sets beside ``name``)."""

        label_prior: Annotated[Literal["batch", "local_data"], Doc("Where P_k comes from (see module docstring).")] = \
            "batch"

    params: Params

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        counts = setup.client_label_counts
        self._local_prior = counts / counts.sum(dim=1, keepdim=True).clamp_min(1.0)

    def local_loss(self, client: int, model: nn.Module, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.params.label_prior == "batch":
            prior = label_distribution(labels, self.setup.num_classes).to(logits.device)
        else:
            prior = self._local_prior[client]
        return logit_adjusted_cross_entropy(logits, labels, prior)
