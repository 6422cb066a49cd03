"""check_algorithm passes every built-in and rejects broken algorithms with a one-line message."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.asynchronous import is_asynchronous
from sfl_sim.algorithms.conformance import ConformanceError, check_algorithm
from sfl_sim.algorithms.fl.fedavg import FedAvg
from sfl_sim.algorithms.split.splitfed import SplitFedV1

ALL_CHECKS = ["subclass", "hooks", "builds", "rounds run", "evaluates", "bytes counted", "flops counted", "plain state",
              "same seed", "saves", "restores", "optimizer state", "lost payloads"]


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in ALGORITHMS.names() if not is_asynchronous(ALGORITHMS.get(n))])
def test_every_builtin_passes(name: str) -> None:
    report = check_algorithm(name)
    assert report["checks"] == ALL_CHECKS
    assert report["uplink_bytes"] > 0 and report["sim_time_s"] > 0


@pytest.mark.slow
def test_spec_forms_and_parameters() -> None:
    by_class = check_algorithm(SplitFedV1)
    by_path = check_algorithm("sfl_sim.algorithms.split.splitfed:SplitFedV1")
    assert by_class["algorithm"] == "SplitFedV1" and by_path["uplink_bytes"] == by_class["uplink_bytes"]
    parallel = check_algorithm({"name": "splitfed_v2", "sequential_clients": False})
    assert parallel["sim_time_s"] < check_algorithm("splitfed_v2")["sim_time_s"]


@pytest.mark.slow
def test_caller_random_stream_is_left_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    check_algorithm("fedavg")
    assert torch.equal(torch.rand(1), expected)


def _fails(spec, check: str, match: str, **params) -> str:
    with pytest.raises(ConformanceError) as info:
        check_algorithm(spec, **params)
    message = str(info.value)
    assert "\n" not in message and f"fails check '{check}'" in message
    assert match in message
    return message


class NotAnAlgorithm:
    def __init__(self, setup):
        self.setup = setup


class SendsNothing(FedAvg):
    """Trains locally but never uploads: nothing crosses the air."""

    def round_process(self, ctx, cohort):
        for k in cohort.tolist():
            yield from ctx.compute(k, 1e3, "local_step")


class ComputesForFree(FedAvg):
    """Uploads its model but never charges compute."""

    def round_process(self, ctx, cohort):
        yield ctx.all_of([ctx.upload(k, 100, "model") for k in cohort.tolist()])


class KeepsAnObject(FedAvg):
    def state_dict(self):
        return {**super().state_dict(), "history": np.zeros(3)}


class UnseededNoise(FedAvg):
    def aggregate(self, cohort, local):
        super().aggregate(cohort, local)
        with torch.no_grad():
            next(self.model.parameters()).add_(float(np.random.default_rng().normal()))


class ForgetsOnLoad(FedAvg):
    def load_state_dict(self, state):
        pass


class WaitsForEveryone(FedAvg):
    """Waits for every client with all_of instead of ctx.gather: no straggler policy, no drops."""

    def round_process(self, ctx, cohort):
        work = self.plan_local_work(cohort)
        local = {k: FedAvg(self.setup).model for k in cohort.tolist()}
        for k in local:
            local[k].load_state_dict(self.model.state_dict())
        steps = self.local_steps()
        yield ctx.all_of([ctx.process(self._client(ctx, work[k], local[k], steps)) for k in local])
        self.aggregate(cohort, local)


class BreaksOnBuild(FedAvg):
    def __init__(self, setup, mu):
        super().__init__(setup)


def test_rejects_a_class_that_is_not_an_algorithm() -> None:
    _fails(NotAnAlgorithm, "subclass", "does not derive from sfl_sim.algorithms.Algorithm")


class SamplesItsOwnBatches(FedAvg):
    def sample_batch(self, client, size):
        raise AssertionError("never called: batches come from plan_local_work")


def test_rejects_a_retired_hook_that_would_be_silently_ignored() -> None:
    message = _fails(SamplesItsOwnBatches, "hooks", "defines sample_batch, which no training path calls")
    assert "plan_local_work" in message


def test_rejects_a_round_that_sends_nothing() -> None:
    _fails(SendsNothing, "bytes counted", "no uplink bytes")


def test_rejects_a_round_that_charges_no_compute() -> None:
    _fails(ComputesForFree, "flops counted", "ctx.compute")


def test_rejects_a_state_dict_holding_an_object() -> None:
    _fails(KeepsAnObject, "plain state", "state_dict()['history'] is a numpy.ndarray")


def test_rejects_unseeded_randomness() -> None:
    _fails(UnseededNoise, "same seed", "same seed")


def test_rejects_a_load_that_restores_nothing() -> None:
    _fails(ForgetsOnLoad, "restores", "does not give back the same state")


@pytest.mark.slow
def test_rejects_a_round_that_ignores_stragglers_and_lost_uploads() -> None:
    _fails(WaitsForEveryone, "lost payloads", "ctx.gather")


def test_rejects_bad_parameters_at_build() -> None:
    _fails(BreaksOnBuild, "builds", "TypeError")
    _fails("fedprox", "builds", "mu", mu=-1.0)


class ForgetsItsOptimizers(FedAvg):
    """Saves the weights only: momentum buffers and the schedule's position are lost on resume."""

    def state_dict(self):
        return {"model": self.model.state_dict()}

    def load_state_dict(self, state):
        self.model.load_state_dict(state["model"])


def test_rejects_a_state_dict_without_the_optimizer_state() -> None:
    message = _fails(ForgetsItsOptimizers, "optimizer state", "optimizer_state")
    assert "load_optimizer_state" in message
