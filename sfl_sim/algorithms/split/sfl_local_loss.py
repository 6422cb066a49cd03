"""SFLLocalLoss: split federated learning with locally generated losses (Han et al., 2021).

"SFLLocalLoss introduces an auxiliary network (local classification) at the client side, where
clients update local models based on the local loss functions" (scala-icml.md, Appendix F).  The
server trains its part from the activations it receives and sends *nothing* back during the
iterations: no activation gradients cross the air.  One round:

1. the server broadcasts the client-side model w_c and the auxiliary head w_a (two messages,
   kinds ``client_model`` and ``aux_head``);
2. T times, every client k in parallel: samples B_k examples (eq. 3), forward through w_c,k and
   the auxiliary head, cross-entropy on its own labels, backward through both, SGD step (one
   compute job, kind ``client_step``); then uploads the activations A_k (computed before the
   step) and the labels Y_k and goes straight on to its next iteration;
3. the server steps the server-side model on each arriving (A_k, Y_k) with plain cross-entropy —
   weight gradients only, A_k needs no gradient since nothing is returned;
4. every client uploads w_c,k and w_a,k; both are averaged by |D_k|, like the server side.

The evaluated global model is the averaged client part followed by the server part; the
auxiliary head is used for training only.

Choices where the paper is silent (each a parameter):

* ``aux_hidden=0`` (default): the auxiliary head is ``Flatten -> Linear(activation size,
  classes)``, the smallest local classifier; ``aux_hidden=h > 0`` inserts ``Linear(., h) -> ReLU``.
  It is initialised with torch's default init from the global torch generator at construction
  (seeded by the runner), so it is the same for the same seed.
* ``server_mode="per_client"`` (default): the server keeps one copy of w_s per client, steps
  them in parallel (queued on the one server) and averages them by |D_k|, as in SplitFedV1 on
  which the SFL baselines of the SCALA papers are built; ``"sequential"`` trains one w_s on the
  clients' activations in cohort order (client 1, 2, ... of iteration 1, then iteration 2...), as
  in Han et al.'s single server-side model.
* A client uploads A_k *after* its local step and does not overlap the upload with its next
  computation (the engine gives a client one thing at a time); it never waits for the server.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal, cast

import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup, state_bytes
from sfl_sim.algorithms.split.base import SplitFedBase
from sfl_sim.algorithms.split.messages import ClientStep
from sfl_sim.algorithms.split.server_modes import ServerModeName
from sfl_sim.engine import Lost, Outcome, RoundContext, SimSteps
from sfl_sim.kit.params import Doc, NonNegativeInt


@ALGORITHMS.register("sfl_local_loss")
class SFLLocalLoss(SplitFedBase):
    """Clients learn from an auxiliary local classifier; the server learns from the activations.

    Parameters
    ----------
    setup : TrainingSetup
    """

    server_replies = False  # nothing goes back: the server computes no activation gradient
    client_forward_kind = "client_step"  # the client's whole local step happens before its upload

    class Params(SplitFedBase.Params):
        """SFLLocalLoss's parameters (what a scenario sets beside ``name``)."""

        aux_hidden: Annotated[NonNegativeInt, Doc(
            "Hidden width of the auxiliary head; 0 for a single linear layer.")] = 0
        server_mode: Annotated[Literal["per_client", "sequential"], Doc(
            "How the server works through the activations (it sends nothing back).")] = "per_client"

    params: Params

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        hidden = self.params.aux_hidden
        n_features = math.prod(self.activation_shape)
        layers: list[nn.Module] = [nn.Flatten()]
        if hidden:
            layers += [nn.Linear(n_features, hidden), nn.ReLU()]
            n_features = hidden
        layers.append(nn.Linear(n_features, setup.num_classes))
        self.aux_head = nn.Sequential(*layers).to(setup.device)
        self._client_side = nn.ModuleDict({"body": self.client_model, "aux": self.aux_head})

    def make_server_mode(self) -> ServerModeName:
        return self.params.server_mode

    # -- state -----------------------------------------------------------------------------------
    def extra_state(self) -> dict[str, Any]:
        return {"aux_head": self.aux_head.state_dict()}

    def load_extra_state(self, state: Mapping[str, Any]) -> None:
        self.aux_head.load_state_dict(state["aux_head"])

    # -- the delta ---------------------------------------------------------------------------------
    def client_side(self) -> nn.Module:
        return self._client_side

    def distribute(self, ctx: RoundContext, clients: list[int]) -> SimSteps[dict[int, nn.Module]]:
        yield ctx.broadcast(state_bytes(self.client_model), "client_model")
        yield ctx.broadcast(state_bytes(self.aux_head), "aux_head")
        return self.working_copies(self._client_side, clients)

    def finish_client(self, ctx: RoundContext, k: int, model: nn.Module) -> SimSteps[Outcome]:
        parts = cast(nn.ModuleDict, model)  # a working copy of _client_side
        sent = yield ctx.upload(k, state_bytes(parts["body"]), "client_model")
        if isinstance(sent, Lost):
            return sent
        return (yield ctx.upload(k, state_bytes(parts["aux"]), "aux_head"))

    def client_forward(self, step: ClientStep) -> torch.Tensor:
        """The local step on the auxiliary loss; returns the activations computed before it."""
        parts = cast(nn.ModuleDict, step.model)  # a working copy of _client_side
        body, aux = parts["body"], parts["aux"]
        acts = body(step.x)
        F.cross_entropy(aux(acts), step.y).backward()
        self.optimizer_step(self.client_optimizer(step.client, step.model.parameters()))
        return acts.detach()
