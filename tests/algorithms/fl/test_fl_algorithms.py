"""The FL baselines over a two-client cell: equivalences, protocol counts, state and parameters."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.base import state_bytes
from sfl_sim.engine import Simulator
from tests.helpers import tiny_setup, two_client_simulator

WHOLE_MODEL = ["fedavg", "fedprox", "feddyn", "feddecorr", "fedlogit", "fedlc", "fedla", "fedntd", "fedcbs"]


def _rounds(algo, n: int, sim: Simulator | None = None) -> Simulator:
    sim = sim or two_client_simulator()
    cohort = np.array([0, 1])
    for _ in range(n):
        sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    return sim


def _params(algo):
    return [p.detach().clone() for p in algo.global_model().parameters()]


@pytest.mark.parametrize("name,params", [("fedprox", {"mu": 0.0}), ("feddecorr", {"beta": 0.0}),
                                         ("fedlc", {"tau": 0.0}), ("fedntd", {"beta": 0.0})])
def test_zero_coefficient_gives_fedavg_weights(name: str, params: dict) -> None:
    ref = ALGORITHMS.get("fedavg")(tiny_setup(local_iterations=3))
    algo = ALGORITHMS.get(name)(tiny_setup(local_iterations=3), **params)
    _rounds(ref, 2)
    _rounds(algo, 2)
    for a, b in zip(_params(ref), _params(algo), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0 if name == "fedprox" else 1e-6)


def test_fedprox_with_mu_moves_less_than_fedavg() -> None:
    start = _params(ALGORITHMS.get("fedavg")(tiny_setup()))
    drift = {}
    for name, params in (("fedavg", {}), ("fedprox", {"mu": 5.0})):
        algo = ALGORITHMS.get(name)(tiny_setup(local_iterations=5), **params)
        _rounds(algo, 1)
        drift[name] = sum(((a - b) ** 2).sum().item() for a, b in zip(_params(algo), start, strict=True))
    assert drift["fedprox"] < drift["fedavg"]


@pytest.mark.parametrize("name", WHOLE_MODEL)
def test_bytes_and_flops_are_the_whole_model_protocol(name: str) -> None:
    setup = tiny_setup(local_iterations=2)
    algo = ALGORITHMS.get(name)(setup)
    model_bytes = state_bytes(algo.global_model())
    sim = _rounds(algo, 1)
    c = sim.counters
    assert c.uplink_bytes == model_bytes * 2 and c.downlink_bytes == model_bytes * 2
    per_sample = algo.meter.flops_per_sample["local_step"]
    assert c.client_flops == pytest.approx(per_sample * setup.batch_size * setup.local_iterations)
    assert c.server_flops == 0


def test_fedntd_and_feddecorr_meter_their_extra_compute() -> None:
    per_sample = {}
    for name in ("fedavg", "fedntd"):
        algo = ALGORITHMS.get(name)(tiny_setup())
        _rounds(algo, 1)
        per_sample[name] = algo.meter.flops_per_sample["local_step"]
    assert per_sample["fedntd"] > per_sample["fedavg"]  # the global model's forward pass


def _resume_equal(name: str, params: dict, rounds_before: int, rounds_after: int) -> None:
    straight = ALGORITHMS.get(name)(tiny_setup(local_iterations=2), **params)
    _rounds(straight, rounds_before + rounds_after)
    first = ALGORITHMS.get(name)(tiny_setup(local_iterations=2), **params)
    _rounds(first, rounds_before)
    state = first.state_dict()
    resumed = ALGORITHMS.get(name)(tiny_setup(local_iterations=2), **params)
    resumed.load_state_dict(state)
    resumed.setup.minibatch_rng.bit_generator.state = first.setup.minibatch_rng.bit_generator.state
    _rounds(resumed, rounds_after)
    for a, b in zip(_params(straight), _params(resumed), strict=True):
        torch.testing.assert_close(a, b)


def test_feddyn_state_resumes() -> None:
    _resume_equal("feddyn", {"alpha": 0.1}, 2, 2)


def test_feddyn_keeps_state_per_client_and_server() -> None:
    algo = ALGORITHMS.get("feddyn")(tiny_setup(local_iterations=2), alpha=0.1)
    _rounds(algo, 1)
    assert set(algo.client_grads) == {0, 1} and algo.h.abs().sum() > 0
    assert set(algo.state_dict()) == {"model", "h", "client_grads", "client_work"}  # client_work: its streams


def test_fedconcat_stages_traffic_and_resume() -> None:
    setup = tiny_setup(local_iterations=2)
    algo = ALGORITHMS.get("fedconcat")(setup, n_clusters=2, encoder_rounds=1)
    assert sorted(algo.clusters.tolist()) == [0, 1]
    model_bytes = state_bytes(algo.model)
    sim = _rounds(algo, 1)
    assert sim.counters.uplink_bytes == 2 * model_bytes and sim.counters.downlink_bytes == 2 * model_bytes
    assert algo.stage == 2
    up, down = sim.counters.uplink_bytes, sim.counters.downlink_bytes
    _rounds(algo, 1, sim)
    head_bytes, enc_bytes = state_bytes(algo.concat.head), state_bytes(algo.concat.encoders)
    assert sim.counters.uplink_bytes - up == 2 * head_bytes
    assert sim.counters.downlink_bytes - down == 2 * head_bytes + 2 * enc_bytes  # encoders once per client
    down = sim.counters.downlink_bytes
    enc_before = [p.clone() for p in algo.concat.encoders.parameters()]
    _rounds(algo, 1, sim)
    assert sim.counters.downlink_bytes - down == 2 * head_bytes
    assert all(torch.equal(a, b) for a, b in zip(enc_before, algo.concat.encoders.parameters(), strict=True))
    assert sim.counters.by_kind["client/classifier_step"] > 0
    _resume_equal("fedconcat", {"n_clusters": 2, "encoder_rounds": 1}, 2, 1)
    _resume_equal("fedconcat", {"n_clusters": 2, "encoder_rounds": 2}, 1, 2)


def test_fedcbs_defaults_to_class_balanced_selection() -> None:
    assert ALGORITHMS.get("fedcbs").default_selection["name"] == "class_balanced"
    assert ALGORITHMS.get("fedla") is ALGORITHMS.get("fedlc")


@pytest.mark.parametrize("name,params,match", [
    ("fedprox", {"mu": -1.0}, "mu: got -1.0"), ("feddyn", {"alpha": 0.0}, "alpha: got 0.0"),
    ("feddecorr", {"beta": "x"}, "beta: got 'x'"), ("fedlc", {"tau": float("nan")}, "tau: got nan"),
    ("fedntd", {"tau": 0}, "tau: got 0"), ("fedlogit", {"label_prior": "global"}, "label_prior: got 'global'"),
    ("fedconcat", {"n_clusters": 0}, "n_clusters: got 0"),
    ("fedconcat", {"classifier_init": "zeros"}, "classifier_init"),
    ("fedconcat", {"encoder_rounds": -2}, "encoder_rounds: got -2")])
def test_invalid_parameters_are_named(name: str, params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        ALGORITHMS.get(name)(tiny_setup(), **params)
    assert "allowed" in str(err.value)


class _Seen:
    """A LocalModelObserver that records which clients' models it was shown."""

    def __init__(self) -> None:
        self.clients: list[list[int]] = []

    def observe(self, models) -> None:
        self.clients.append(sorted(models))


def test_the_local_model_observer_is_an_argument_of_run_round_for_that_round_only() -> None:
    """The runner hands its vacant-class probe to ``Algorithm.run_round`` (it sets no attribute of
    the algorithm); FedAvg shows it the round's local models, and a round without one shows nobody."""
    from sfl_sim.algorithms.protocols import LocalModelObserver

    algo = ALGORITHMS.get("fedavg")(tiny_setup(n_clients=2))
    sim, seen = two_client_simulator(), _Seen()
    assert isinstance(seen, LocalModelObserver)
    cohort = np.array([0, 1], dtype=np.int64)
    sim.run_round(lambda ctx: algo.run_round(ctx, cohort, seen), cohort)
    sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    assert seen.clients == [[0, 1]]
