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

Cost: the states are flat vectors of all n_params parameters, so every pass over them is a pass
over the whole model (hundreds of MB for the full-width AlexNet of the paper's scenario).  A
round makes as few as the formulas need: the global model is flattened once per round (not per
local step), clients without a state share one zero vector, the cohort's models are flattened
straight into the rows of one ``(|P_t|, n_params)`` matrix that both server updates read, and
the aggregation averages only the buffers (the parameters are overwritten by the FedDyn rule).
``bench/feddyn.py`` prints FedDyn's round time against FedAvg's.
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
        self._global_flat = self.h
        self._zeros: torch.Tensor | None = None  # the state of a client that has not taken part yet

    def extra_state(self) -> dict[str, Any]:
        return {"h": self.h.clone(), "client_grads": {k: v.clone() for k, v in self.client_grads.items()}}

    def load_extra_state(self, state: Mapping[str, Any]) -> None:
        self.h = state["h"].to(self.h.device)
        self.client_grads = {int(k): v.to(self.h.device) for k, v in state["client_grads"].items()}

    def _grad_state(self, client: int) -> torch.Tensor:
        state = self.client_grads.get(client)
        if state is not None:
            return state
        if self._zeros is None or self._zeros.shape != self.h.shape or self._zeros.device != self.h.device:
            self._zeros = torch.zeros_like(self.h)  # never written to: the client update makes a new tensor
        return self._zeros

    def begin_round(self, cohort: np.ndarray) -> None:
        self._global_flat = flat(p.detach() for p in self.model.parameters())  # a copy: the model is overwritten

    def local_loss(self, client: int, model: nn.Module, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        reg = feddyn_regularizer(list(model.parameters()), self._global_flat, self._grad_state(client),
                                 self.params.alpha)
        return F.cross_entropy(logits, labels) + reg

    def after_local_training(self, client: int, model: nn.Module) -> None:
        local = flat(p.detach() for p in model.parameters())
        self.client_grads[client] = feddyn_client_state(self._grad_state(client), local, self._global_flat,
                                                        self.params.alpha)

    def aggregate(self, cohort: np.ndarray, local: dict[int, nn.Module]) -> None:
        clients = cohort.tolist()
        thetas = self.h.new_empty((len(clients), self.h.numel()))  # row i: client clients[i]'s flat model
        for row, k in zip(thetas, clients, strict=True):
            torch.cat([p.detach().reshape(-1) for p in local[k].parameters()], out=row)
        n_clients = len(self.setup.client_indices)
        self.h = feddyn_server_state(self.h, thetas, self._global_flat, self.params.alpha, n_clients)
        # Buffers (if any) as FedAvg; the parameters are set by the FedDyn rule below, so averaging
        # them too would be a whole FedAvg aggregation thrown away.
        buffers = [name for name, _ in self.model.named_buffers()]
        if buffers:
            weights = self.setup.client_data_sizes[cohort].astype(float)
            states = [{name: local[k].get_buffer(name) for name in buffers} for k in clients]
            self.model.load_state_dict(weighted_average(states, weights), strict=False)
        with torch.no_grad():
            vector_to_parameters(feddyn_server_model(thetas, self.h, self.params.alpha), self.model.parameters())
