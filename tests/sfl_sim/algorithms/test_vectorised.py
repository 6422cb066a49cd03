"""The vectorised cohort equals the per-client loop (issue 16).

Every algorithm with a vectorised path trains three rounds under each engine setting of the golden
runs, once with ``execution = "loop"`` and once ``"vectorised"``: the weights agree within float
tolerance, and the engine saw the same run — clock, every round's duration and drops, bytes and
FLOPs by kind, FLOPs per sample — exactly.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.vectorised import SAMPLES_PER_CALL, vectorise_refusal
from sfl_sim.build import build_run
from sfl_sim.config import validate
from sfl_sim.errors import ConfigError
from sfl_sim.models import build_model
from test_golden_runs import ENGINES, N_CLASSES, _setup, _simulator

#: The algorithms that have a vectorised path (FedAvg's plain local step, and the split
#: algorithms whose client hooks are the defaults); the others refuse with a reason.
VECTORISED = {"fedavg", "fedcbs", "scala", "ca_sfl", "lla_sfl", "minibatch_sfl", "splitfed_v1", "splitfed_v2",
              "splitfed_v3", "cs_sfl"}
COHORTS = [[0, 1, 2], [0, 1, 3], [3, 2, 1, 0]]


def _setup_without_dropout(dropout: float = 0.0):
    setup = _setup()
    torch.manual_seed(1)
    setup.model = build_model("alexnet", (1, 8, 8), N_CLASSES, conv_channels=[2, 3, 3, 3, 2], fc_features=[5, 4],
                              dropout=dropout)
    return setup


def _train(name: str, execution: str, engine: str, dropout: float = 0.0) -> dict:
    setup = _setup_without_dropout(dropout)
    torch.manual_seed(2)
    algo = ALGORITHMS.get(name)(setup)
    algo.execution = execution
    sim = _simulator(engine)
    torch.manual_seed(3)
    rounds = []
    for cohort in COHORTS:
        cohort = np.array(cohort, dtype=np.int64)
        duration = sim.run_round(lambda ctx, c=cohort: algo.round_process(ctx, c), cohort)
        rounds.append((duration, dict(sim.last_round.dropped)))
    return {"state": algo.state_dict(), "counters": sim.counters.as_dict(), "clock": sim.now_s, "rounds": rounds,
            "flops_per_sample": dict(algo.meter.flops_per_sample)}


def _leaves(obj, prefix=""):
    if isinstance(obj, torch.Tensor):
        yield prefix, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, f"{prefix}/{k}")


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_the_algorithms_with_a_vectorised_path():
    have = set()
    for name in ALGORITHMS.names():
        algo = ALGORITHMS.get(name)(_setup_without_dropout())
        if algo.vectorise_refusal() is None:
            have.add(name)
    assert have == VECTORISED


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(VECTORISED))
def test_vectorised_equals_the_loop(name: str, engine: str) -> None:
    loop = _train(name, "loop", engine)
    vec = _train(name, "vectorised", engine)
    assert vec["counters"] == loop["counters"]  # bytes and FLOPs by kind, drops, retransmissions
    assert vec["clock"] == loop["clock"]
    assert vec["rounds"] == loop["rounds"]
    assert vec["flops_per_sample"] == loop["flops_per_sample"]
    want = dict(_leaves(loop["state"]))
    got = dict(_leaves(vec["state"]))
    assert got.keys() == want.keys()
    for key, value in want.items():
        torch.testing.assert_close(got[key], value, rtol=1e-5, atol=1e-6, msg=lambda m: f"{key}: {m}")


@pytest.mark.parametrize("name", ["scala", "splitfed_v1"])
def test_a_server_side_with_dropout_keeps_its_random_stream(name: str) -> None:
    """The client side is stacked; the server's dropout draws the same masks in the same order."""
    loop = _train(name, "loop", "plain", dropout=0.5)
    vec = _train(name, "vectorised", "plain", dropout=0.5)
    assert vec["counters"] == loop["counters"] and vec["clock"] == loop["clock"]
    for key, value in _leaves(loop["state"]):
        torch.testing.assert_close(dict(_leaves(vec["state"]))[key], value, rtol=1e-5, atol=1e-6)


def test_many_clients_are_cut_into_chunks(monkeypatch) -> None:
    """A cohort larger than one call's samples runs in several stacked calls, with the same result."""
    whole = _train("splitfed_v1", "vectorised", "plain")
    monkeypatch.setattr("sfl_sim.algorithms.vectorised.SAMPLES_PER_CALL", 3)
    assert SAMPLES_PER_CALL > 3
    chunked = _train("splitfed_v1", "vectorised", "plain")
    for key, value in _leaves(whole["state"]):
        torch.testing.assert_close(dict(_leaves(chunked["state"]))[key], value, rtol=1e-5, atol=1e-6)


def test_refusals_name_the_reason() -> None:
    torch.manual_seed(0)
    assert "Dropout(p=0.5)" in vectorise_refusal(build_model("alexnet", (1, 28, 28), 10))
    assert "buffers" in vectorise_refusal(nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)))

    class Odd(nn.Module):
        def forward(self, x):
            return x - x.mean()

    assert "Odd" in vectorise_refusal(nn.Sequential(nn.Linear(2, 2), Odd()))
    assert vectorise_refusal(build_model("alexnet", (1, 28, 28), 10, dropout=0.0)) is None
    fedprox = ALGORITHMS.get("fedprox")(_setup_without_dropout())
    assert "local_loss" in fedprox.vectorise_refusal()
    fedavg = ALGORITHMS.get("fedavg")(_setup())  # the golden setup's model has dropout
    assert "Dropout" in fedavg.vectorise_refusal()


TINY = {"rounds": 1, "eval_samples": 64, "device": "cpu", "clients": {"count": 6, "participation": 0.5},
        "training": {"batch_size": 12, "local_iterations": 1, "torch_threads": 1},
        "model": {"name": "alexnet", "split_point": "S2", "params": {"conv_channels": [2, 2, 2, 2, 2],
                                                                     "fc_features": [4, 4]}}}


def test_the_scenario_field_chooses_and_refuses() -> None:
    cfg = validate({**TINY, "execution": "vectorised", "algorithms": [{"name": "scala"}]})
    assert build_run(cfg, cfg.algorithms[0]).algorithm.execution == "vectorised"
    cfg = validate({**TINY, "algorithms": [{"name": "scala"}]})  # auto on CPU: the loop
    assert build_run(cfg, cfg.algorithms[0]).algorithm.execution == "loop"
    cfg = validate({**TINY, "execution": "vectorised", "algorithms": [{"name": "fedprox"}]})
    with pytest.raises(ConfigError, match=r"execution: vectorised is not available for fedprox: .*local_loss"):
        build_run(cfg, cfg.algorithms[0])
    cfg = validate({**TINY, "execution": "vectorised", "algorithms": [{"name": "fedavg"}]})  # dropout 0.5
    with pytest.raises(ConfigError, match="Dropout"):
        build_run(cfg, cfg.algorithms[0])
