"""FedDyn's round makes only the passes over the whole model that its formulas need (issue 54:
its extra state cost more than its training).  Counted, not timed: ``bench/feddyn.py`` prints the
time ratio FedDyn / FedAvg side by side."""
from __future__ import annotations

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

import sfl_sim.algorithms.base as base
from sfl_sim.algorithms import ALGORITHMS
from tests.helpers import tiny_setup, two_client_simulator


class _CountCats(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.cats = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.cat:
            self.cats += 1
        return func(*args, **(kwargs or {}))


def test_a_round_flattens_the_global_model_once_and_each_client_model_twice(monkeypatch) -> None:
    iterations = 3
    algo = ALGORITHMS.get("feddyn")(tiny_setup(local_iterations=iterations), alpha=0.1)
    averaged: list[int] = []
    real = base.weighted_average
    monkeypatch.setattr("sfl_sim.algorithms.fl.feddyn.weighted_average",
                        lambda states, w: averaged.append(len(states)) or real(states, w))
    sim, cohort = two_client_simulator(), np.array([0, 1])
    with _CountCats() as mode:
        sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    # begin_round: the global model once; each step: the local model (the regulariser); each client:
    # after its training (its state) and at the aggregation (a row of the cohort's matrix).
    assert mode.cats == 1 + len(cohort) * iterations + 2 * len(cohort)
    assert averaged == []  # no buffers: nothing to average, the FedDyn rule sets the parameters
