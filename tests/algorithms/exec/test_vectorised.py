"""The vectorised cohort equals the per-client loop.

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
from sfl_sim.algorithms._exec.vectorised import SAMPLES_PER_CALL, stacking_refusal
from sfl_sim.algorithms.conformance import N_CLASSES
from sfl_sim.config import validate
from sfl_sim.errors import ConfigError
from sfl_sim.models import build_model
from sfl_sim.optim import TrainingSettings
from sfl_sim.runs.build import build_run
from tests.algorithms.test_golden_runs import ENGINES, _setup, _simulator

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


def _train(name: str, execution: str, engine: str, dropout: float = 0.0,
           training: TrainingSettings | None = None) -> dict:
    setup = _setup_without_dropout(dropout)
    setup.training = training if training is not None else TrainingSettings()
    setup.execution = execution
    torch.manual_seed(2)
    algo = ALGORITHMS.get(name)(setup)
    assert algo.execution == execution
    sim = _simulator(engine)
    torch.manual_seed(3)
    rounds = []
    for cohort in COHORTS:
        cohort = np.array(cohort, dtype=np.int64)
        duration = sim.run_round(lambda ctx, c=cohort: algo.run_round(ctx, c), cohort)
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


@pytest.mark.slow
def test_the_algorithms_with_a_vectorised_path():
    have = set()
    for name in ALGORITHMS.names():
        algo = ALGORITHMS.get(name)(_setup_without_dropout())
        if algo.vectorise_refusal() is None:
            have.add(name)
    assert have == VECTORISED


@pytest.mark.slow
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
        torch.testing.assert_close(got[key], value, rtol=1e-5, atol=1e-6, msg=lambda m, key=key: f"{key}: {m}")


#: Training settings the stacked client steps honour: a schedule moves the rate between rounds only,
#: and SGD without momentum or weight decay keeps no state, so persisting it changes nothing.
HONOURED = {
    "exponential_schedule": TrainingSettings(lr_schedule="exponential", lr_schedule_params={"gamma": 0.5}),
    "step_schedule_persist": TrainingSettings(lr_schedule="step", lr_schedule_params={"step_size_rounds": 1,
                                                                                      "gamma": 0.3},
                                              client_optimizer_state="persist"),
}


@pytest.mark.parametrize("settings", sorted(HONOURED))
@pytest.mark.parametrize("name", ["fedavg", "scala", "splitfed_v1", "splitfed_v2"])
def test_vectorised_equals_the_loop_with_the_training_settings_it_honours(name: str, settings: str) -> None:
    training = HONOURED[settings]
    assert ALGORITHMS.get(name)(_setup_without_dropout()).vectorise_refusal() is None
    loop = _train(name, "loop", "plain", training=training)
    vec = _train(name, "vectorised", "plain", training=training)
    assert vec["counters"] == loop["counters"] and vec["clock"] == loop["clock"]
    assert vec["flops_per_sample"] == loop["flops_per_sample"]
    for key, value in _leaves(loop["state"]):
        torch.testing.assert_close(dict(_leaves(vec["state"]))[key], value, rtol=1e-5, atol=1e-6,
                                   msg=lambda m, key=key: f"{key}: {m}")
    plain = _train(name, "loop", "plain")  # and the schedule did change the training
    assert any(not torch.equal(v, dict(_leaves(loop["state"]))[k]) for k, v in _leaves(plain["state"]))


#: Training settings the stacked client steps cannot honour, and what the refusal names.
REFUSED = {
    "adam": (TrainingSettings(optimizer="adam", optimizer_params={"betas": [0.9, 0.999]}),
             "training.optimizer is adam"),
    "adamw": (TrainingSettings(optimizer="adamw"), "training.optimizer is adamw"),
    "momentum": (TrainingSettings(optimizer_params={"momentum": 0.9, "dampening": 0.0, "nesterov": False,
                                                    "weight_decay": 0.0}), "training.optimizer.momentum is 0.9"),
    "momentum_persist": (TrainingSettings(optimizer_params={"momentum": 0.5}, client_optimizer_state="persist"),
                         "training.optimizer.momentum is 0.5"),
    "weight_decay": (TrainingSettings(optimizer_params={"weight_decay": 1e-5}), "training.optimizer.weight_decay"),
    "local_epochs": (TrainingSettings(local_epochs=2), "training.local_epochs is 2"),
    "max_grad_norm": (TrainingSettings(max_grad_norm=1.0), "training.max_grad_norm is 1"),
    "custom_class": (TrainingSettings(optimizer="torch.optim:RMSprop"), "training.optimizer is torch.optim:RMSprop"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
@pytest.mark.parametrize("name", ["fedavg", "fedcbs", "scala", "minibatch_sfl", "splitfed_v1", "splitfed_v3"])
def test_training_settings_the_stacked_step_cannot_honour_are_refused(name: str, case: str) -> None:
    settings, reason = REFUSED[case]
    setup = _setup_without_dropout()
    setup.training = settings
    refusal = ALGORITHMS.get(name)(setup).vectorise_refusal()
    assert refusal is not None and reason in refusal and "\n" not in refusal


def test_an_overridden_optimizer_hook_is_refused() -> None:
    class Clipped(ALGORITHMS.get("fedavg")):
        def optimizer_step(self, optimizer):
            super().optimizer_step(optimizer)

    assert "optimizer_step" in Clipped(_setup_without_dropout()).vectorise_refusal()


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
    monkeypatch.setattr("sfl_sim.algorithms._exec.vectorised.SAMPLES_PER_CALL", 3)
    assert SAMPLES_PER_CALL > 3
    chunked = _train("splitfed_v1", "vectorised", "plain")
    for key, value in _leaves(whole["state"]):
        torch.testing.assert_close(dict(_leaves(chunked["state"]))[key], value, rtol=1e-5, atol=1e-6)


def test_refusals_name_the_reason() -> None:
    torch.manual_seed(0)
    assert "Dropout(p=0.5)" in stacking_refusal(build_model("alexnet", (1, 28, 28), 10))
    assert "buffers" in stacking_refusal(nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)))

    class Odd(nn.Module):
        def forward(self, x):
            return x - x.mean()

    assert "Odd" in stacking_refusal(nn.Sequential(nn.Linear(2, 2), Odd()))
    assert stacking_refusal(build_model("alexnet", (1, 28, 28), 10, dropout=0.0)) is None
    fedprox = ALGORITHMS.get("fedprox")(_setup_without_dropout())
    assert "local_loss" in fedprox.vectorise_refusal()
    fedavg = ALGORITHMS.get("fedavg")(_setup())  # the golden setup's model has dropout
    assert "Dropout" in fedavg.vectorise_refusal()


TINY = {"rounds": 1, "eval_samples": 64, "device": "cpu", "clients": {"count": 6, "participation": 0.5},
        "training": {"batch_size": 12, "local_iterations": 1, "torch_threads": 1},
        "model": {"name": "alexnet", "split_point": "S2", "params": {"conv_channels": [2, 2, 2, 2, 2],
                                                                     "fc_features": [4, 4]}}}


@pytest.mark.slow
def test_the_scenario_field_chooses_and_refuses() -> None:
    cfg = validate({**TINY, "execution": "vectorised", "algorithms": [{"name": "scala"}]})
    assert build_run(cfg, cfg.algorithms[0]).algorithm.execution == "vectorised"
    cfg = validate({**TINY, "algorithms": [{"name": "scala"}]})  # auto on CPU: the loop
    assert build_run(cfg, cfg.algorithms[0]).algorithm.execution == "loop"
    cfg = validate({**TINY, "execution": "vectorised", "algorithms": [{"name": "fedprox"}]})
    with pytest.raises(ConfigError,
                       match=r"execution: got 'vectorised', which fedprox cannot run: .*local_loss.*; allowed: loop"):
        build_run(cfg, cfg.algorithms[0])
    cfg = validate({**TINY, "execution": "vectorised", "algorithms": [{"name": "fedavg"}]})  # dropout 0.5
    with pytest.raises(ConfigError, match="Dropout"):
        build_run(cfg, cfg.algorithms[0])


@pytest.mark.slow
def test_the_scenario_field_refuses_training_it_cannot_honour_and_auto_takes_the_loop(monkeypatch) -> None:
    """An optimizer, momentum, local epochs or clipping the stacked step cannot honour: ``vectorised``
    is refused in one line naming the field (also from an algorithm's own training: block), and
    ``auto`` falls back to the loop even where it would otherwise choose ``vectorised``."""
    training = {**TINY["training"]}
    for override, field in [({"optimizer": "adam"}, "training.optimizer is adam"),
                            ({"optimizer": {"name": "sgd", "momentum": 0.9}, "client_optimizer_state": "persist"},
                             "training.optimizer.momentum is 0.9"),
                            ({"local_epochs": 1, "local_iterations": None}, "training.local_epochs is 1"),
                            ({"max_grad_norm": 5.0}, "training.max_grad_norm is 5")]:
        cfg = validate({**TINY, "execution": "vectorised", "training": {**training, **override},
                        "algorithms": [{"name": "scala"}]})
        with pytest.raises(ConfigError) as err:
            build_run(cfg, cfg.algorithms[0])
        message = str(err.value)
        assert message.startswith("execution: got 'vectorised', which scala cannot run: ") and field in message
        assert "\n" not in message
        cfg = validate({**TINY, "execution": "vectorised", "algorithms": [
            {"name": "splitfed_v1", "training": {k: v for k, v in override.items() if k != "local_iterations"}}]})
        with pytest.raises(ConfigError, match=field):
            build_run(cfg, cfg.algorithms[0])
    monkeypatch.setitem(__import__("sfl_sim.runs.host", fromlist=["x"]).VECTORISED_BY_DEFAULT, "cpu", True)
    cfg = validate({**TINY, "training": {**training, "optimizer": "adam"}, "algorithms": [{"name": "scala"}]})
    assert build_run(cfg, cfg.algorithms[0]).algorithm.execution == "loop"  # auto: refused, so the loop
    cfg = validate({**TINY, "training": {**training, "lr_schedule": {"name": "exponential", "gamma": 0.9}},
                    "algorithms": [{"name": "scala"}]})
    assert build_run(cfg, cfg.algorithms[0]).algorithm.execution == "vectorised"  # auto where measured faster


def test_the_execution_is_passed_in_and_resolved_by_the_algorithm() -> None:
    """``setup.execution`` asks, the algorithm decides once, and nobody sets it from outside."""
    from sfl_sim.algorithms._exec.execution import ExecutionRefused

    def built(name: str, request: str):
        setup = _setup_without_dropout()
        setup.execution = request
        return ALGORITHMS.get(name)(setup)

    assert built("scala", "vectorised").execution == "vectorised"
    assert built("scala", "prefer_vectorised").execution == "vectorised"
    assert built("fedprox", "prefer_vectorised").execution == "loop"
    assert built("fedprox", "loop").execution == "loop"
    with pytest.raises(ExecutionRefused, match="FedProx overrides local_loss"):
        _ = built("fedprox", "vectorised").execution
    algo = built("fedavg", "loop")
    with pytest.raises(AttributeError):
        algo.execution = "vectorised"


def test_eligibility_is_the_declared_stacked_steps() -> None:
    """A subclass keeps the stacked path while it keeps the declared hooks; it can opt out."""
    fedavg = ALGORITHMS.get("fedavg")

    class OptsOut(fedavg):
        stacked_steps = None

    class OwnBatches(fedavg):
        def plan_local_work(self, cohort):
            return super().plan_local_work(cohort)

    class SameStep(fedavg):
        def begin_round(self, cohort):  # not a hook the stacked step stands in for
            super().begin_round(cohort)

    assert OptsOut(_setup_without_dropout()).vectorise_refusal() == "OptsOut has no vectorised path"
    assert "OwnBatches overrides plan_local_work" in OwnBatches(_setup_without_dropout()).vectorise_refusal()
    assert SameStep(_setup_without_dropout()).vectorise_refusal() is None


def test_the_activation_probe_follows_a_replaced_client_model() -> None:
    """Read before or after a subclass replaces ``client_model``, the probe is of the current one."""
    algo = ALGORITHMS.get("splitfed_v1")(_setup_without_dropout())
    before = algo.activation_shape
    channels = before[0]
    algo.client_model = nn.Sequential(algo.client_model, nn.Conv2d(channels, 1, 3, stride=2, padding=1))
    assert algo.activation_shape == (1, (before[1] + 1) // 2, (before[2] + 1) // 2)
