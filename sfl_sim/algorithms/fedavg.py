"""FedAvg: every client trains the whole model locally and uploads it (McMahan et al., 2017).

The first baseline of the SCALA papers.  One round: the server broadcasts the global model to the
cohort; each client runs T local SGD iterations on minibatches of B_k samples — the same eq. (3)
sizes SCALA uses, so both algorithms process the same samples per round — and uploads its model;
the server averages the models weighted by |D_k|.

Subclasses (FedProx, FedLogit, ...) override :meth:`FedAvg.local_loss` only.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, Generator

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.algorithms.base import ALGORITHMS, Algorithm, TrainingSetup, state_bytes, weighted_average


@ALGORITHMS.register("fedavg")
class FedAvg(Algorithm):
    """Federated averaging over the simulated cell.

    Parameters
    ----------
    setup : TrainingSetup
    """

    def __init__(self, setup: TrainingSetup) -> None:
        super().__init__(setup)
        self.model = copy.deepcopy(setup.model)

    def global_model(self) -> nn.Module:
        return self.model

    def state_dict(self) -> Dict[str, Any]:
        return {"model": self.model.state_dict()}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])

    def local_loss(self, client: int, model: nn.Module, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Loss of one local iteration; plain softmax cross-entropy for FedAvg."""
        return F.cross_entropy(logits, labels)

    def round_process(self, ctx: Any, cohort: np.ndarray) -> Generator:
        clients = cohort.tolist()
        batch = self.cohort_batch_sizes(cohort)
        yield ctx.broadcast(state_bytes(self.model), "model")
        local = {k: copy.deepcopy(self.model) for k in clients}
        yield ctx.all_of([ctx.process(self._client(ctx, k, batch[k], local[k])) for k in clients])
        weights = self.setup.client_data_sizes[cohort].astype(float)
        self.model.load_state_dict(weighted_average([local[k].state_dict() for k in clients], weights))

    def _client(self, ctx: Any, k: int, b_k: int, model: nn.Module) -> Generator:
        for _t in range(self.setup.local_iterations):
            x, y = self.sample_batch(k, b_k)

            def step() -> None:
                loss = self.local_loss(k, model, model(x), y)
                loss.backward()
                self.sgd_step(list(model.parameters()))

            _, flops = self.meter.run("local_step", b_k, step)
            yield from ctx.compute(k, flops, "local_step")
        yield ctx.upload(k, state_bytes(model), "model")
