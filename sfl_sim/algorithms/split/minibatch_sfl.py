"""Minibatch-SFL (Huang, Tian and Tang, 2023, arXiv 2308.11953; scala-journal.txt [21]).

"The clients train the client-side model in an FL fashion while the server trains the
server-side model similar to MiniBatch SGD" (the paper's abstract): the server-side model is
centrally trained on the activations of the whole cohort, as in CA-SFL, so it sees a minibatch
drawn from every participating client at once.  One round:

1. the server broadcasts the client-side model w_c (kind ``client_model``);
2. T times, every client k in parallel: samples B_k examples (eq. 3), forward through w_c,k,
   uploads A_k and Y_k; the server waits for the whole cohort and takes *one* minibatch-SGD step
   of w_s on the loss  F_s = sum_k a_k F_k,  with a_k = |D_k| / sum_j |D_j| and F_k the mean
   cross-entropy of client k's activations (the server-side update of the paper, a
   data-size-weighted average of the clients' server-side gradients);
3. client-side update rule (the paper's "FL fashion"): each client receives G_k = dF_k/dA_k, the
   gradient of *its own* loss F_k (not of F_s), backpropagates it and takes a local SGD step on
   its copy w_c,k; after the T local iterations the clients upload w_c,k and the server averages
   them by |D_k| (FedAvg, aggregation period = T iterations = one round).

All gradients come from the same pre-update w_s^t, as in SCALA.  No logit adjustment anywhere.

Differences from ``ca_sfl`` (CA-SFL = SCALA without adjustments):

* the server loss weights each client's *mean* loss by a_k (the paper's weights) instead of
  averaging over the concatenated samples (weights B_k / B); the two coincide when eq. (3)
  rounds to exact proportions.  ``server_weighting="samples"`` gives the concatenated mean;
* the server does a single backward pass: dF_s/dA_k = a_k dF_k/dA_k, so G_k is read off the
  same backward as the weight gradients (divided by a_k), as CA-SFL's step does too; with
  ``server_weighting="samples"`` the two compute the same step (up to rounding).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, cast

import numpy as np
import torch
import torch.nn.functional as F

from sfl_sim.algorithms.base import ALGORITHMS, to_device
from sfl_sim.algorithms.split.base import SplitFedBase
from sfl_sim.algorithms.split.messages import ClientActivations, Reply
from sfl_sim.algorithms.split.server_modes import ServerModeName
from sfl_sim.kit.params import Doc


@ALGORITHMS.register("minibatch_sfl")
class MinibatchSFL(SplitFedBase):
    """Minibatch-SFL (see module docstring).

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(SplitFedBase.Params):
        """MinibatchSFL's parameters (what a scenario sets beside ``name``)."""

        server_weighting: Annotated[Literal["data_size", "samples"], Doc(
            "a_k = |D_k| / sum |D_j| (the paper) or B_k / B (mean over the concatenated samples).")] = "data_size"

    params: Params

    def make_server_mode(self) -> ServerModeName:
        return "concatenated"

    def _weights(self, clients: list[int], sizes: list[int]) -> np.ndarray:
        """a_k as float32 host numbers (computed in float64, as the paper's ratio)."""
        if self.params.server_weighting == "data_size":
            w = np.asarray(self.setup.client_data_sizes[clients], dtype=np.float64)
        else:
            w = np.asarray(sizes, dtype=np.float64)
        return (w / w.sum()).astype(np.float32)

    def server_on_concatenation(self, uploads: Sequence[ClientActivations]) -> list[Reply]:
        """One minibatch-SGD step of w_s on sum_k a_k F_k; returns G_k = dF_k/dA_k per client."""
        sizes = [u.activations.shape[0] for u in uploads]
        acts = torch.cat([u.activations for u in uploads]).requires_grad_(True)
        labels = torch.cat([u.labels for u in uploads])
        logits = self.server_model(acts)
        weights = self._weights([u.client for u in uploads], sizes)  # host numbers: no device round trip
        losses = torch.stack([F.cross_entropy(lk, yk) for lk, yk in zip(logits.split(sizes), labels.split(sizes),
                                                                        strict=True)])
        (losses * to_device(weights, losses.device)).sum().backward()
        self.optimizer_step(self.server_optimizer(self.server_model.parameters()))
        grads = cast(torch.Tensor, acts.grad)  # backward filled it
        return [Reply(g / w) for g, w in zip(grads.split(sizes), weights.tolist(), strict=True)]
