"""FedCBS (Zhang et al., ICML 2023, "Fed-CBS: A Heterogeneity-Aware Client Sampling Mechanism for
Federated Learning via Class-Imbalance Reduction"): FedAvg whose cohort is drawn by the
class-balanced sampler (``class_balanced`` in :mod:`sfl_sim.clients.selection`), which prefers cohorts
whose grouped label histogram has a small quadratic class-imbalance degree (QCID).

Training and traffic are FedAvg's.  The paper derives QCID under homomorphic encryption; the
simulator neither times nor counts that exchange (the label counts are given to the selector once,
as the runner does for every selector).  A scenario's ``clients.selection`` overrides the default.
"""
from __future__ import annotations

from sfl_sim.algorithms.base import ALGORITHMS
from sfl_sim.algorithms.fl.fedavg import FedAvg


@ALGORITHMS.register("fedcbs")
class FedCBS(FedAvg):
    """FedAvg with class-balanced client selection by default."""

    default_selection = {"name": "class_balanced", "beta_first": 1.0, "beta_last": 10.0, "exploration": 10.0}
