"""Preallocated working copies are what deepcopy gave, bit for bit."""
from __future__ import annotations

import copy
import hashlib

import numpy as np
import pytest
import torch
from torch import nn

from sfl_sim.algorithms import ALGORITHMS, Algorithm
from sfl_sim.algorithms._exec import working_copies
from sfl_sim.algorithms._exec.working_copies import WorkingCopies, copy_into
from sfl_sim.optim import TrainingSettings
from tests.algorithms.test_golden_runs import _digest, _setup, _simulator

#: Cohorts that grow, shrink and grow again, so copies are made, refilled and partly reused.
COHORTS = [[0, 1], [0, 1, 2], [3], [2, 3, 1, 0]]


def _deepcopy_working_copies(self, source, keys):
    return {k: copy.deepcopy(source) for k in keys}


def _train(spec: dict, engine: str, training: TrainingSettings | None = None) -> tuple[str, dict, float]:
    training = training if training is not None else TrainingSettings()
    spec = dict(spec)
    name = spec.pop("name")
    setup = _setup()
    setup.training = training
    torch.manual_seed(2)
    algo = ALGORITHMS.get(name)(setup, **spec)
    sim = _simulator(engine)
    torch.manual_seed(3)
    for cohort in COHORTS:
        cohort = np.array(cohort, dtype=np.int64)
        sim.run_round(lambda ctx, c=cohort: algo.run_round(ctx, c), cohort)
    h = hashlib.sha256()
    _digest(algo.state_dict(), h)
    return h.hexdigest(), sim.counters.as_dict(), sim.now_s


@pytest.fixture(autouse=True)
def _two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
@pytest.mark.parametrize("spec", [{"name": "fedavg"}, {"name": "fedprox"}, {"name": "feddyn"}, {"name": "splitfed_v1"},
                                  {"name": "scala"}, {"name": "sfl_local_loss"}, {"name": "besplit_a"},
                                  {"name": "fedconcat", "encoder_rounds": 2, "n_clusters": 2}],
                         ids=lambda s: s["name"])
@pytest.mark.parametrize("engine", ["plain", "lossy"])
def test_training_on_working_copies_equals_training_on_deep_copies(spec, engine, monkeypatch):
    pooled = _train(spec, engine)
    monkeypatch.setattr(Algorithm, "working_copies", _deepcopy_working_copies)
    deep = _train(spec, engine)
    assert pooled == deep


#: Optimizer settings whose state lives across the round (momentum, Adam moments) or across a
#: client's participations (persist): kept per client, never tied to which copy object it trained.
STATEFUL = {
    "momentum_persist": TrainingSettings(optimizer_params={"momentum": 0.9, "weight_decay": 1e-4},
                                         client_optimizer_state="persist", max_grad_norm=1.0),
    "adam_fresh_schedule": TrainingSettings(optimizer="adam", lr_schedule="exponential",
                                            lr_schedule_params={"gamma": 0.5}),
    "adamw_persist_epochs": TrainingSettings(optimizer="adamw", client_optimizer_state="persist", local_epochs=1),
}


@pytest.mark.slow
@pytest.mark.parametrize("settings", sorted(STATEFUL))
@pytest.mark.parametrize("spec", [{"name": "fedavg"}, {"name": "splitfed_v1"}, {"name": "scala"}],
                         ids=lambda s: s["name"])
def test_optimizers_drive_working_copies_as_they_drive_deep_copies(spec, settings, monkeypatch):
    """The optimizers from torch.optim (their round state, persisted client state, schedule, local
    epochs, clipping) train refilled copies exactly as fresh deep copies."""
    pooled = _train(spec, "plain", STATEFUL[settings])
    monkeypatch.setattr(Algorithm, "working_copies", _deepcopy_working_copies)
    deep = _train(spec, "plain", STATEFUL[settings])
    assert pooled == deep
    assert pooled != _train(spec, "plain")  # and the settings did change the training


@pytest.mark.slow
@pytest.mark.parametrize("spec", [{"name": "fedavg"}, {"name": "splitfed_v1"}], ids=lambda s: s["name"])
def test_without_foreach_copy_the_per_tensor_copy_gives_the_same_training(spec, monkeypatch):
    """torch._foreach_copy_ is private: where torch lacks it the copies are refilled tensor by tensor."""
    fused = _train(spec, "lossy")
    monkeypatch.setattr(working_copies, "_foreach_copy", None)
    assert _train(spec, "lossy") == fused


def test_copy_into_falls_back_when_foreach_copy_refuses(monkeypatch):
    def refuses(dst, src):
        raise RuntimeError("not supported here")

    monkeypatch.setattr(working_copies, "_foreach_copy", refuses)
    dst, src = [torch.zeros(3), torch.zeros(2, 2)], [torch.arange(3.0), torch.ones(2, 2)]
    copy_into(dst, src)
    assert all(torch.equal(d, s) for d, s in zip(dst, src, strict=True))


class _WithState(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm2d(2)
        self.head = nn.Linear(2, 3)


def _state(module: nn.Module) -> list:
    out = [(n, t.clone()) for n, t in module.state_dict().items()]
    out += [(n, p.requires_grad, None if p.grad is None else p.grad.clone()) for n, p in module.named_parameters()]
    out += [(n, m.training) for n, m in module.named_modules()]
    return out


def _same(a: list, b: list) -> bool:
    def eq(x, y):
        if isinstance(x, torch.Tensor):
            return isinstance(y, torch.Tensor) and x.dtype == y.dtype and torch.equal(x, y)
        return x == y
    return len(a) == len(b) and all(len(u) == len(v) and all(eq(x, y) for x, y in zip(u, v, strict=True)) for u,
                                    v in zip(a, b, strict=True))


def test_a_refilled_copy_holds_weights_buffers_flags_and_grads_of_the_source():
    torch.manual_seed(0)
    source = _WithState()
    pool = WorkingCopies(source)
    first = pool.take(2)
    # Train the copies: weights, BN statistics, grads, flags all move away from the source.
    for m in first:
        m.bn(m.conv(torch.randn(4, 1, 5, 5))).sum().backward()
        with torch.no_grad():
            for p in m.parameters():
                p.add_(1.0)
        m.eval()
        m.head.weight.requires_grad_(False)
    # The source changes too: new weights and statistics, a frozen layer, a gradient, eval mode.
    source.bn(source.conv(torch.randn(4, 1, 5, 5))).sum().backward()
    source.conv.bias.requires_grad_(False)
    source.conv.bias.grad = None
    source.head.eval()
    again = pool.take(3)
    assert again[:2] == first  # the same objects, refilled
    want = _state(copy.deepcopy(source))
    for m in again:
        assert _same(_state(m), want)
    assert source.conv.weight.grad is not None and again[0].conv.weight.grad is None  # as deepcopy leaves it


def test_copies_are_distinct_and_independent():
    source = nn.Linear(3, 2)
    a, b = WorkingCopies(source).take(2)
    with torch.no_grad():
        a.weight.add_(1.0)
    assert torch.equal(b.weight, source.weight) and not torch.equal(a.weight, source.weight)


def test_a_rebuilt_source_gets_fresh_copies():
    holder = nn.Sequential(nn.Linear(3, 2))
    pool = WorkingCopies(holder)
    old = pool.take(1)[0]
    holder[0] = nn.Linear(3, 4)  # other parameter objects, another shape
    new = pool.take(1)[0]
    assert new is not old and new[0].weight.shape == (4, 3)
