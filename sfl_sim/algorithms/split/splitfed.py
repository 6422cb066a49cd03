"""SplitFed V1, V2 (Thapa et al., AAAI 2022) and V3 (Gawali et al., 2021).

The SFL baselines of scala-icml.md Appendix F (Tables 5-6) and scala-journal.txt Table III, as
the ICML paper describes them: "in SplitFedV1, the server-side models and local-side models of
participating clients are executed separately in parallel and then aggregated [...] SplitFedV2
processes the forward-backward propagations of the server-side model sequentially with respect to
the activations of clients (no FedAvg of the server-side models). In SplitFedV3, the client-side
models are unique for each client and the server-side model is an averaged version."

All three run the split-learning round of :mod:`sfl_sim.algorithms.split.base` with the same
minibatches (B_k of eq. 3), T local iterations per round and plain softmax cross-entropy:

* ``splitfed_v1`` — broadcast of w_c; every client trains in parallel; the server keeps one copy
  of w_s per client, steps it on that client's activations as they arrive (the server is one
  device: the copies' jobs queue on it, first come first served) and returns G_k; after the round
  both the client-side models (uploaded) and the server-side copies (on the server) are averaged
  by |D_k|.  Each copy draws its dropout from its client's own torch generator
  (:mod:`sfl_sim.algorithms.streams`, as every per-client server copy does), so the
  order in which the link delivers the activations changes when the copies step, never what they
  learn.
* ``splitfed_v2`` — one w_s, no copies, no averaging of it: the server steps it on one client's
  activations after another, in the cohort's order (client index order).  Client k+1's server
  step never starts before client k's has finished.  Client-side models are broadcast, trained
  and averaged by |D_k| as in V1.

  ``sequential_clients`` (default ``True``, as in SplitFedV2's original, where the clients take
  turns): client k+1 starts its first forward pass only when client k has done its T iterations
  (its last backward); the server then sees client 1's T steps, then client 2's...  With
  ``False`` the clients compute and upload in parallel as in V1, and the server works through
  iteration t's activations in cohort order (client 1, 2, ... of iteration 1, then of iteration
  2...), waiting for a slow client even when a later one has already arrived.
  Each client still starts from the broadcast w_c (no relay of the client-side model between
  clients) and, under the engine's model, uses its equal share of the uplink band even when it
  transmits alone.
* ``splitfed_v3`` — client-side models unique per client: no broadcast and no upload of w_c;
  each client keeps its own model from one participation to its next (a client's first round
  starts from the common initial w_c, downloaded once, kind ``client_model``).  Server side as in
  V1 (per-client copies averaged by |D_k|).  The paper leaves open which client-side model the
  *evaluated* global model uses: ``eval_client_model="average_trained"`` (default) evaluates the
  |D_k|-weighted average of the client models of every client that has trained so far, with the
  averaged w_s; ``"average_all"`` averages over all K clients (the ones never selected keep the
  initial w_c).  The average is for evaluation only and never goes back to the clients.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import numpy as np
from torch import nn

from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup, state_bytes, weighted_average
from sfl_sim.algorithms.split.base import SplitFedBase
from sfl_sim.algorithms.split.server_modes import SequentialServer
from sfl_sim.engine import DELIVERED, Outcome, RoundContext, SimSteps
from sfl_sim.kit.params import Doc


@ALGORITHMS.register("splitfed_v1")
class SplitFedV1(SplitFedBase):
    """SplitFedV1: per-client server-side copies in parallel, both sides averaged (see module docstring).

    Parameters
    ----------
    setup : TrainingSetup
    """


@ALGORITHMS.register("splitfed_v2")
class SplitFedV2(SplitFedBase):
    """SplitFedV2: one server-side model trained on the clients' activations one client after another.

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(SplitFedBase.Params):
        """SplitFedV2's parameters (what a scenario sets beside ``name``)."""

        sequential_clients: Annotated[bool, Doc(
            "Clients take turns (True) or compute in parallel while the server still works through them in "
            "order (False).")] = True

    params: Params

    def make_server_mode(self) -> SequentialServer:
        return SequentialServer(clients_take_turns=self.params.sequential_clients)


@ALGORITHMS.register("splitfed_v3")
class SplitFedV3(SplitFedBase):
    """SplitFedV3: client-side models unique per client and kept across rounds; server side averaged.

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(SplitFedBase.Params):
        """SplitFedV3's parameters (what a scenario sets beside ``name``)."""

        eval_client_model: Annotated[Literal["average_trained", "average_all"], Doc(
            "Client-side part of the evaluated global model (see module docstring).")] = "average_trained"

    params: Params

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        self._initial_client = copy.deepcopy(self.client_model)
        self.client_models: dict[int, nn.Module] = {}

    # -- state -----------------------------------------------------------------------------------
    def global_model(self) -> nn.Module:
        sizes = self.setup.client_data_sizes
        ks = list(range(len(sizes))) if self.params.eval_client_model == "average_all" else sorted(self.client_models)
        if ks:
            states = [self.client_models.get(k, self._initial_client).state_dict() for k in ks]
            self.client_model.load_state_dict(weighted_average(states, sizes[ks].astype(float)))
        return self.full_model

    def extra_state(self) -> dict[str, Any]:
        return {"client_models": {k: m.state_dict() for k, m in self.client_models.items()}}

    def load_extra_state(self, state: Mapping[str, Any]) -> None:
        self.client_models = {}
        for k, s in state["client_models"].items():
            model = copy.deepcopy(self._initial_client)
            model.load_state_dict(s)
            self.client_models[int(k)] = model

    # -- the delta ---------------------------------------------------------------------------------
    def distribute(self, ctx: RoundContext, clients: list[int]) -> SimSteps[dict[int, nn.Module]]:
        """No broadcast: a client brings its own model; a newcomer downloads the initial w_c once."""
        newcomers = [k for k in clients if k not in self.client_models]
        for k in newcomers:
            self.client_models[k] = copy.deepcopy(self._initial_client)
        if newcomers:
            nbytes = state_bytes(self._initial_client)
            yield ctx.all_of([ctx.process(self._download(ctx, k, nbytes)) for k in newcomers])
        return {k: self.client_models[k] for k in clients}

    @staticmethod
    def _download(ctx: RoundContext, k: int, nbytes: int) -> SimSteps[None]:
        yield ctx.download(k, nbytes, "client_model")

    def finish_client(self, ctx: RoundContext, k: int, model: nn.Module) -> SimSteps[Outcome]:
        """The client keeps its model: nothing to upload."""
        return DELIVERED
        yield  # pragma: no cover  (makes this a generator)

    def aggregate(self, cohort: np.ndarray, local: dict[int, nn.Module],
                  servers: dict[int, nn.Module] | None) -> None:
        """Only the server-side copies are averaged by |D_k|; client models stay as they are."""
        assert servers is not None  # per_client mode made the copies
        weights = self.setup.client_data_sizes[cohort].astype(float)
        self.server_model.load_state_dict(weighted_average([servers[k].state_dict() for k in cohort.tolist()], weights))
