"""FedConcat (Diao, Li and He, AAAI 2024, "Exploiting Label Skews in Federated Learning with Model
Concatenation"), as the SCALA journal compares it: FL with concatenated client-cluster encoders.

What follows the paper:

1. the server clusters the clients by their label distributions with K-means into J clusters;
2. stage 1: FedAvg *within* each cluster — every cohort client downloads its cluster's model,
   trains the whole model T iterations and uploads it; each cluster's model is the |D_k|-weighted
   average of its members' uploads (a cluster without members in the cohort keeps its model);
3. stage 2: the J encoders (each model without its classifier, the last ``nn.Linear``) are frozen
   and concatenated; a linear classifier on the concatenated features is trained by FedAvg over
   the cohort: clients download the classifier, run T iterations (forward through the frozen
   encoders, backward through the classifier only) and upload the classifier.

Choices (each a parameter):

* ``n_clusters`` J = 4 (FedVLS, Table 10, runs FedConcat with 2 and 4 clusters).
* ``encoder_rounds`` = 120: rounds of stage 1 (80 % of the default scenario's 150 rounds); all
  later rounds are stage 2.  The paper trains each stage to its own budget; the simulator has one
  round counter, kept in :meth:`FedConcat.state_dict` so a resumed run lands in the right stage.
* ``classifier_init="average"``: the stage-2 classifier starts as ``[W_1 .. W_J] / J`` (biases
  averaged), i.e. the concatenated model starts as the mean of the clusters' logits; this is also
  the model evaluated during stage 1 (the paper has no global model before stage 2).  ``"random"``
  starts it from PyTorch's default initialisation instead, as in the paper.
* K-means is deterministic (farthest-point initialisation from client 0), so the clusters depend
  only on the seeded partition.  The label counts the clients report for clustering (N integers
  each) are not counted as traffic (the paper also offers a model-output proxy for them).
* Traffic: stage 1 is FedAvg's per client (its cluster's model down, unicast, and up).  In stage 2
  a client downloads the frozen encoders once, the first time it takes part in stage 2
  (``downlink/encoders``), and the classifier every round (``downlink/classifier`` broadcast,
  ``uplink/classifier``).  The encoders stay in eval mode (no dropout) in stage 2.
"""
from __future__ import annotations

import copy
from typing import Annotated, Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup, state_bytes, weighted_average
from sfl_sim.algorithms.fl.fedavg import FedAvg
from sfl_sim.algorithms.terms.fl import (
    ConcatenatedModel,
    FeatureExtractor,
    averaged_concat_head,
    classifier_layer,
    kmeans_label_clusters,
)
from sfl_sim.engine import Outcome, RoundContext, SimSteps
from sfl_sim.kit.params import Doc, NonNegativeInt, PositiveInt


@ALGORITHMS.register("fedconcat")
class FedConcat(FedAvg):
    """Clustered FedAvg, then a classifier trained on the concatenated cluster encoders.

    Parameters
    ----------
    setup : TrainingSetup

    Attributes
    ----------
    n_clusters : int
        The clusters used: ``params.n_clusters``, at most one per client.
    """

    class Params(FedAvg.Params):
        """FedConcat's parameters (what a scenario sets beside ``name``)."""

        n_clusters: Annotated[PositiveInt, Doc(
            "J, number of label-distribution clusters (>= 1; capped at the number of clients).")] = 4
        encoder_rounds: Annotated[NonNegativeInt, Doc(
            "Rounds of stage 1 (>= 0); rounds after it train the classifier.")] = 120
        classifier_init: Annotated[Literal["average", "random"], Doc(
            "How the classifier on the concatenated encoders starts: the average of the clusters' classifiers, "
            "or a fresh random layer.")] = "average"

    params: Params

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        # At most one cluster per client: a federation smaller than n_clusters gets one per client.
        self.n_clusters = min(self.params.n_clusters, len(setup.client_indices))
        classifier_layer(self.model)  # the model must end with a Linear classifier
        counts = setup.client_label_counts.cpu().numpy().astype(float)
        self.clusters = kmeans_label_clusters(counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0),
                                              self.n_clusters)
        self.cluster_models = [copy.deepcopy(self.model) for _ in range(self.n_clusters)]
        self.rounds_done = 0
        self.concat: ConcatenatedModel | None = None
        self.has_encoders: set[int] = set()

    # -- state -----------------------------------------------------------------------------------
    @property
    def stage(self) -> int:
        """1 while the cluster models train, 2 once the classifier trains."""
        return 1 if self.rounds_done < self.params.encoder_rounds else 2

    def _build_concat(self, init: str) -> ConcatenatedModel:
        """Concatenated model of the current cluster models; head by ``init`` ("random" draws from
        torch's generator, so it is used once, at the switch to stage 2)."""
        encoders = [FeatureExtractor(copy.deepcopy(m)) for m in self.cluster_models]
        head = averaged_concat_head([classifier_layer(m) for m in self.cluster_models])
        if init == "random":
            head = nn.Linear(head.in_features, head.out_features).to(head.weight.device)
        return ConcatenatedModel(encoders, head)

    def global_model(self) -> nn.Module:
        # Stage 1: the mean of the clusters' logits (built fresh, no randomness drawn).
        return self.concat if self.concat is not None else self._build_concat("average")

    def state_dict(self) -> dict[str, Any]:
        return {"cluster_models": [m.state_dict() for m in self.cluster_models], "rounds_done": self.rounds_done,
                "concat": None if self.concat is None else self.concat.state_dict(),
                "has_encoders": sorted(self.has_encoders), **self.stream_state(), **self.optimizer_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for m, s in zip(self.cluster_models, state["cluster_models"], strict=True):
            m.load_state_dict(s)
        self.rounds_done = int(state["rounds_done"])
        self.has_encoders = set(int(k) for k in state["has_encoders"])
        self.concat = None
        if state["concat"] is not None:
            self.concat = self._build_concat("average")
            self.concat.load_state_dict(state["concat"])
        self.load_stream_state(state)
        self.load_optimizer_state(state)

    # -- one round -------------------------------------------------------------------------------
    def round_process(self, ctx: RoundContext, cohort: np.ndarray) -> SimSteps[None]:
        if self.stage == 1:
            yield from self._encoder_round(ctx, cohort)
        else:
            if self.concat is None:
                self.concat = self._build_concat(self.params.classifier_init)
            yield from self._classifier_round(ctx, cohort)
        self.rounds_done += 1

    def _encoder_round(self, ctx: RoundContext, cohort: np.ndarray) -> SimSteps[None]:
        clients = cohort.tolist()
        work = self.drawn_local_work(cohort)
        local: dict[int, nn.Module] = {}
        for j, model in enumerate(self.cluster_models):  # each cluster's members start from its model
            local.update(self.working_copies(model, [k for k in clients if self.clusters[k] == j]))
        local = {k: local[k] for k in clients}

        steps = self.local_steps()

        def client(k: int) -> SimSteps[Outcome]:
            yield ctx.download(k, state_bytes(local[k]), "model")
            return (yield from self._client(ctx, work[k], local[k], steps))

        jobs = {k: ctx.process(client(k)) for k in clients}
        kept = yield from ctx.gather(jobs, local_iterations=max(w.iterations for w in work.values()))
        steps.finish(local, kept)
        if kept:
            self.observe_local_models({k: local[k] for k in kept})
        for j in range(self.n_clusters):
            members = [k for k in kept if self.clusters[k] == j]
            if members:
                weights = self.setup.client_data_sizes[members].astype(float)
                self.cluster_models[j].load_state_dict(
                    weighted_average([local[k].state_dict() for k in members], weights))

    def _classifier_round(self, ctx: RoundContext, cohort: np.ndarray) -> SimSteps[None]:
        concat = self.concat
        assert concat is not None
        clients = cohort.tolist()
        work = self.drawn_local_work(cohort)
        encoder_bytes = state_bytes(concat.encoders)
        yield ctx.broadcast(state_bytes(concat.head), "classifier")
        heads = self.working_copies(concat.head, clients)

        def client(k: int) -> SimSteps[Outcome]:
            if k not in self.has_encoders:
                yield ctx.download(k, encoder_bytes, "encoders")
                self.has_encoders.add(k)
            head = heads[k]
            optimizer = self.client_optimizer(k, head.parameters(), name="classifier")
            for t in range(work[k].iterations):
                x, y = work[k].batch(t)

                def step(x: torch.Tensor = x, y: torch.Tensor = y) -> None:
                    with self.client_stream(k):  # any draw from the client's own stream
                        with torch.no_grad():
                            feats = concat.features(x)
                        F.cross_entropy(head(feats), y).backward()
                        self.optimizer_step(optimizer)

                _, flops = self.meter.run("classifier_step", len(y), step)
                yield from ctx.compute(k, flops, "classifier_step")
            delivered = yield ctx.upload(k, state_bytes(head), "classifier")
            return delivered

        jobs = {k: ctx.process(client(k)) for k in clients}
        kept = yield from ctx.gather(jobs, local_iterations=max(w.iterations for w in work.values()))
        if kept:
            weights = self.setup.client_data_sizes[kept].astype(float)
            concat.head.load_state_dict(weighted_average([heads[k].state_dict() for k in kept], weights))
