"""SCALA: split federated learning with concatenated activations and logit adjustments.

Follows scala-icml.md Algorithm 2 (eqs. 3-10, 14, 15).  One round (global iteration):

1. the server broadcasts the client-side model w_c to the cohort C (and B_k from eq. 3);
2. T times, every client k in parallel: samples B_k examples, computes A_k = h(w_c,k; X_k)
   (eq. 4) and uploads A_k and the labels Y_k; the server waits for *all* of them (the
   concatenation A = U_k A_k needs every client, eqs. 5-6), runs the server-side model once on A,
   updates w_s with the loss adjusted by the concatenated label distribution P_s (eqs. 7, 14) and
   computes each client's activation gradient G_k with the loss adjusted by P_k (eqs. 8, 15), both
   from the same pre-update w_s^t; each client downloads G_k, backpropagates and updates its copy
   of w_c (eq. 9);
3. every client uploads w_c,k^T and the server averages them weighted by |D_k| (eq. 10).

Ablations (scala-journal.txt §5.2) are flags of the same class, registered under their names:

* ``ca_sfl`` — concatenated activations, no logit adjustment anywhere.  Its server and client
  losses are then the same cross-entropy, so its server step does one backward (forward +
  one backward, as SplitFedV1's) where SCALA's needs two.
* ``lla_sfl`` — no concatenation: each client's activations are processed on its own copy of the
  server-side model (SplitFedV1 style, copies averaged by |D_k| after the round) with the loss
  adjusted by that client's P_k.

Choices where the paper is silent (each a parameter):

* ``label_prior="batch"``: P_s and P_k are the label distributions of the current iteration's
  concatenated labels Y and of client k's labels Y_k — what the server sees (eq. 6).  With
  ``"local_data"`` P_k is client k's whole local label distribution and P_s that of the cohort's
  data combined (clients would report label counts once per round; not counted as traffic).
* Labels travel as int64 tensors, as torch holds them; their bytes count as uplink (kind
  ``labels``, after the activations).
* The server is one device: with ``concatenate=False`` the per-client server jobs queue on it.
* Semi-asynchronous SCALA (``trigger_clients`` / ``window_s``): each server step concatenates the
  activations that have arrived by its trigger and the others join the next step
  (:mod:`sfl_sim.algorithms.split.triggered_server`, which states the choices it makes).

How each step reads the papers (scala-icml.md §3 and Algorithm 2; scala-journal.txt §3-5): the
reading, the paper's words, and where the code does it:

==============================  ============================================  ==================================
Reading                         Paper                                          Code
==============================  ============================================  ==================================
B_k = |D_k| B / sum |D_k|       "sets the minibatch size for each client k     ``split/messages.py`` (batch sizes),
(B = 320)                       in proportion to its local data size" (3)      ``TrainingSetup.batch_size``
P_s: labels of this iteration   "P_s(y) is the distribution of concatenated    ``_prior`` (``label_prior="batch"``;
                                labels" (14)                                   ``local_data`` an ablation)
P_k: client k's labels          "given a participating client k along with     ``_prior`` per client in
                                the label distribution P_k(y)" (15)            ``server_on_concatenation``
logits + log P, no temperature  "s_y(x) + log P_s(y)" (14), (15); plain s(x)   ``terms/logit_adjustment.py``
                                at test time (13)
w_s updated by the P_s loss     "the server adjusts the loss function using    ``server_loss`` -> ``optimizer_step``
                                (14) and updates the server-side model
                                using (7)"
G_k from the P_k loss at the    "G_k = grad_{A_k} l(w_s^t; A_k, Y_k)" (8),     ``client_loss`` on the same
pre-update w_s^t                "computes the backpropagated gradients for     forward (``autograd.grad``), then
                                each client using (8)" with (15)               the w_s step
w_s every local iteration       "The server-side model is centrally updated    one ``server_on_concatenation``
                                in each local iteration"                        per iteration (T = 5)
sum |D_k| w_c,k / sum |D_k|     eq. (10)                                       ``SplitFedBase.aggregate``
SGD lr 0.01, no momentum        "updated via SGD optimizer with learning       scenario ``training``; fresh client
                                rate eta = 0.01"                               optimiser each round (no state to keep)
split after conv-relu-pool x2   "the first 6 layers as the client-side         ``models/alexnet.py`` ``S2`` (default)
(S2)                            model" (ICML); "the split point is selected
                                at the second convolutional layer" (journal)
==============================  ============================================  ==================================

The ablations that compare this setting with the paper's Table 4 are ``studies/scala_gap_*.yaml``.

The round itself (messages, timing, aggregation) is :class:`~sfl_sim.algorithms.split.base.SplitFedBase`'s;
this module adds the priors, the concatenated server step and LLA-SFL's per-client loss.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, cast

import numpy as np
import torch
from pydantic import Field, model_validator

from sfl_sim.algorithms.base import ALGORITHMS, to_device
from sfl_sim.algorithms.split.base import SplitFedBase
from sfl_sim.algorithms.split.messages import ClientActivations, Reply
from sfl_sim.algorithms.split.server_modes import ServerMode, ServerModeName
from sfl_sim.algorithms.split.triggered_server import TriggeredConcatenatedServer
from sfl_sim.algorithms.terms.logit_adjustment import label_distribution, logit_adjusted_cross_entropy
from sfl_sim.kit.params import FIXED, Doc

#: Where the label priors P_s and P_k come from.
LabelPrior = Literal["batch", "local_data"]


@ALGORITHMS.register("scala")
class SCALA(SplitFedBase):
    """SCALA and its ablations (see module docstring).

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(SplitFedBase.Params):
        """SCALA's parameters (what a scenario sets beside ``name``)."""

        concatenate: Annotated[bool, Doc(
            "Train one server-side model on the concatenated activations (True, SCALA/CA-SFL) or one copy per "
            "client on its own activations (False, LLA-SFL).")] = True
        server_adjustment: Annotated[bool, Doc(
            "Adjust the server-side update loss by log P_s (eq. 14).  Only with ``concatenate``.")] = True
        client_adjustment: Annotated[bool, Doc(
            "Adjust the loss whose gradient goes back to client k by log P_k (eq. 15).")] = True
        label_prior: Annotated[LabelPrior, Doc("Where P_s and P_k come from.")] = "batch"
        trigger_clients: Annotated[int | None, Field(ge=1), Doc(
            "Semi-asynchronous SCALA: each server step concatenates the activations that have arrived once K "
            "clients' wait (the others join the next step; sfl_sim.algorithms.split.triggered_server).  null: "
            "every client's activations of the iteration (SCALA).  Only with concatenate.")] = None
        window_s: Annotated[float | None, Field(gt=0, allow_inf_nan=False), Doc(
            "Semi-asynchronous SCALA: each server step concatenates what has arrived window_s simulated seconds "
            "after the first waiting upload (or sooner, once every client's has).  null: no window.  Only with "
            "concatenate.")] = None

        @model_validator(mode="after")
        def _server_adjustment_needs_concatenation(self) -> SCALA.Params:
            if self.server_adjustment and not self.concatenate:
                raise ValueError("server_adjustment=true needs concatenate=true (P_s is the concatenated label "
                                 "distribution); allowed: server_adjustment=false with concatenate=false")
            return self

        @model_validator(mode="after")
        def _trigger_needs_concatenation(self) -> SCALA.Params:
            if (self.trigger_clients is not None or self.window_s is not None) and not self.concatenate:
                raise ValueError("trigger_clients / window_s need concatenate=true (they time the concatenated "
                                 "server step); allowed: null with concatenate=false")
            return self

    params: Params

    def make_server_mode(self) -> ServerModeName | ServerMode:
        p = self.params
        if p.concatenate and (p.trigger_clients is not None or p.window_s is not None):
            return TriggeredConcatenatedServer(p.trigger_clients, p.window_s)
        return "concatenated" if p.concatenate else "per_client"

    # -- priors ----------------------------------------------------------------------------------
    def _uniform(self) -> torch.Tensor:
        n = self.setup.num_classes
        return torch.full((n,), 1.0 / n, device=self.setup.device)

    def _prior(self, labels: torch.Tensor, clients: list[int], adjust: bool) -> torch.Tensor:
        """Distribution used for the logit adjustment; uniform (i.e. no adjustment) when off."""
        if not adjust:
            return self._uniform()
        if self.params.label_prior == "batch":
            return label_distribution(labels, self.setup.num_classes)
        counts = self.setup.client_label_counts.index_select(
            0, to_device(np.asarray(clients, dtype=np.int64), self.setup.device)).sum(dim=0)
        return counts / counts.sum()

    @property
    def losses_coincide(self) -> bool:
        """No adjustment anywhere (CA-SFL): the server loss and the clients' losses are the same
        cross-entropy, so one backward gives both w_s's gradient and every G_k (and one is charged)."""
        return not self.params.server_adjustment and not self.params.client_adjustment

    # -- the delta to the split-learning round (split_base.SplitFedBase) ------------------------
    def per_client_loss(self, k: int, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Without concatenation: client k's loss adjusted by its own P_k (LLA-SFL)."""
        return logit_adjusted_cross_entropy(logits, labels, self._prior(labels, [k], self.params.client_adjustment))

    def server_on_concatenation(self, uploads: Sequence[ClientActivations]) -> list[Reply]:
        """Server-side update on the concatenated activations and the gradients G_k (eqs. 5-8, 14, 15).

        Parameters
        ----------
        uploads : sequence of ClientActivations
            Each client's activations A_k (B_k, ...) (detached) and labels Y_k, in cohort order.

        Returns
        -------
        list of Reply
            G_k for each client, shaped like A_k.
        """
        clients = [u.client for u in uploads]
        sizes = [u.activations.shape[0] for u in uploads]
        acts = torch.cat([u.activations for u in uploads]).requires_grad_(True)  # eq. (5)
        labels = torch.cat([u.labels for u in uploads])  # eq. (6)
        logits = self.server_model(acts)
        params = list(self.server_model.parameters())
        # eq. (14) with P_s: the loss that updates w_s (eq. 7).
        server_prior = self._prior(labels, clients, self.params.server_adjustment)
        server_loss = logit_adjusted_cross_entropy(logits, labels, server_prior)
        if self.losses_coincide:
            # Both losses are plain cross-entropy: the server loss is the mean over the B samples,
            # sum_k (B_k / B) F_k, so client k's gradient dF_k/dA_k is (B / B_k) times the server
            # loss's, read off the one backward that also gives w_s's gradients.
            server_loss.backward()
            total = float(sum(sizes))
            act_grads = [g * (total / n) for g, n in zip(cast(torch.Tensor, acts.grad).split(sizes), sizes,
                                                         strict=True)]
            self.optimizer_step(self.server_optimizer(params))
            return [Reply(g) for g in act_grads]
        # eq. (15) with P_k per client: the loss whose gradient goes back to client k (eq. 8), on the
        # same pre-update w_s^t.  Each A_k appears only in its own term, so the gradient of the sum
        # w.r.t. A_k is exactly G_k.  With adjustments off the prior is uniform, a constant shift of
        # the logits, i.e. plain cross-entropy.
        client_loss = cast(torch.Tensor, sum(  # a sum of tensors (one per client of the concatenation)
            logit_adjusted_cross_entropy(lk, yk, self._prior(yk, [k], self.params.client_adjustment))
            for k, lk, yk in zip(clients, logits.split(sizes), labels.split(sizes), strict=True)))
        param_grads = torch.autograd.grad(server_loss, params, retain_graph=True)
        act_grad = torch.autograd.grad(client_loss, acts)[0]
        for p, g in zip(params, param_grads, strict=True):
            p.grad = g
        self.optimizer_step(self.server_optimizer(params))
        return [Reply(g) for g in act_grad.split(sizes)]


@ALGORITHMS.register("ca_sfl")
class CASFL(SCALA):
    """CA-SFL: SCALA's concatenated activations without any logit adjustment (journal §5.2)."""

    class Params(SCALA.Params):
        concatenate: Annotated[bool, FIXED] = True
        server_adjustment: Annotated[bool, FIXED] = False
        client_adjustment: Annotated[bool, FIXED] = False

    params: Params


@ALGORITHMS.register("lla_sfl")
class LLASFL(SCALA):
    """LLA-SFL: SplitFedV1-style per-client server copies with the local logit adjustment P_k."""

    class Params(SCALA.Params):
        concatenate: Annotated[bool, FIXED] = False
        server_adjustment: Annotated[bool, FIXED] = False
        client_adjustment: Annotated[bool, FIXED] = True

    params: Params
