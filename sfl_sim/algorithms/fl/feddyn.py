"""FedDyn (Acar et al., ICLR 2021, "Federated Learning Based on Dynamic Regularization"), Alg. 1.

Client k in the cohort P_t, starting from the broadcast theta^{t-1}, minimises (T SGD iterations)

    L_k(theta) - <grad L_k(theta_k^{t-1}), theta> + alpha/2 ||theta - theta^{t-1}||^2

and then updates its state ``grad L_k(theta_k^t) = grad L_k(theta_k^{t-1}) - alpha (theta_k^t - theta^{t-1})``.
The server keeps ``h^t = h^{t-1} - alpha/m sum_{k in P_t} (theta_k^t - theta^{t-1})`` (m = all
clients) and sets ``theta^t = mean_{k in P_t} theta_k^t - h^t / alpha`` (unweighted mean, as in the
paper).  Both states start at zero, live on the device that holds them (client / server) and are
never transmitted: the traffic is FedAvg's.  The states cover the model's parameters; buffers
(none in AlexNet) are averaged by |D_k| as in FedAvg.  Client states are kept only for clients
that have taken part (others are zero) and are saved in :meth:`FedDyn.state_dict`.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import vector_to_parameters

from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup, weighted_average
from sfl_sim.algorithms.fl.fedavg import FedAvg
from sfl_sim.algorithms.terms.fl import (
    feddyn_client_state,
    feddyn_regularizer,
    feddyn_server_model,
    feddyn_server_state,
    flat,
)
from sfl_sim.kit.params import Doc, Positive


@ALGORITHMS.register("feddyn")
class FedDyn(FedAvg):
    """FedAvg with dynamic regularisation.

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(FedAvg.Params):
        """FedDyn's parameters (what a scenario sets beside ``name``)."""

        alpha: Annotated[Positive, Doc(
            "Regularisation coefficient (> 0; the update divides by it).  0.01 is the value of the paper's grid "
            "{0.1, 0.01, 0.001} most used in its experiments.")] = 0.01

    params: Params

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        self.h = torch.zeros_like(flat(p.detach() for p in self.model.parameters()))
        self.client_grads: dict[int, torch.Tensor] = {}
        self._global: list[torch.Tensor] = []
        self._global_flat = self.h

    def extra_state(self) -> dict[str, Any]:
        return {"h": self.h.clone(), "client_grads": {k: v.clone() for k, v in self.client_grads.items()}}

    def load_extra_state(self, state: Mapping[str, Any]) -> None:
        self.h = state["h"].to(self.h.device)
        self.client_grads = {int(k): v.to(self.h.device) for k, v in state["client_grads"].items()}

    def _grad_state(self, client: int) -> torch.Tensor:
        state = self.client_grads.get(client)
        return torch.zeros_like(self.h) if state is None else state

    def begin_round(self, cohort: np.ndarray) -> None:
        self._global = [p.detach().clone() for p in self.model.parameters()]
        self._global_flat = flat(self._global)

    def local_loss(self, client: int, model: nn.Module, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        reg = feddyn_regularizer(list(model.parameters()), self._global, self._grad_state(client), self.params.alpha)
        return F.cross_entropy(logits, labels) + reg

    def after_local_training(self, client: int, model: nn.Module) -> None:
        local = flat(p.detach() for p in model.parameters())
        self.client_grads[client] = feddyn_client_state(self._grad_state(client), local, self._global_flat,
                                                        self.params.alpha)

    def aggregate(self, cohort: np.ndarray, local: dict[int, nn.Module]) -> None:
        clients = cohort.tolist()
        thetas = [flat(p.detach() for p in local[k].parameters()) for k in clients]
        n_clients = len(self.setup.client_indices)
        self.h = feddyn_server_state(self.h, thetas, self._global_flat, self.params.alpha, n_clients)
        # Buffers (if any) as FedAvg; the parameters are then overwritten by the FedDyn rule.
        weights = self.setup.client_data_sizes[cohort].astype(float)
        self.model.load_state_dict(weighted_average([local[k].state_dict() for k in clients], weights))
        with torch.no_grad():
            vector_to_parameters(feddyn_server_model(thetas, self.h, self.params.alpha), self.model.parameters())
