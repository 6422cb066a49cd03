"""Optimizers come from torch.optim: plain SGD is the hand step w <- w - lr grad bit for bit; momentum, weight
decay, Nesterov, Adam, AdamW and clipping equal a plain torch.optim loop on a one-client run.

The plain loops below redo by hand what a one-client FedAvg round is: the same initial weights,
the same minibatch draws from the same stream (B = |D| samples without replacement, T per round),
the client's optimizer made afresh each round (``fresh``) or kept (``persist``); averaging one
model returns it unchanged.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.optim import TrainingSettings
from tests.optim.optim_test_helpers import one_client_setup, run_rounds

ROUNDS, T, LR = 3, 2, 0.1


def hand_sgd_loop(setup) -> dict[str, torch.Tensor]:
    """The simulator's former update, written out: w <- w - eta grad, gradients cleared."""
    model = copy.deepcopy(setup.model)
    rng = np.random.default_rng(0)
    n = len(setup.client_indices[0])
    for _ in range(ROUNDS):
        for _ in range(T):
            rows = setup.client_indices[0][torch.from_numpy(rng.choice(n, size=setup.batch_size, replace=False))]
            F.cross_entropy(model(setup.train_x[rows]), setup.train_y[rows]).backward()
            with torch.no_grad():
                for p in model.parameters():
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-LR)
                        p.grad = None
    return model.state_dict()


def torch_optim_loop(setup, settings: TrainingSettings) -> dict[str, torch.Tensor]:
    """A plain torch.optim loop over the same batches (optimizer per round unless persisted)."""
    from sfl_sim.optim import make_optimizer

    model = copy.deepcopy(setup.model)
    rng = np.random.default_rng(0)
    n = len(setup.client_indices[0])
    optimizer = make_optimizer(settings, model.parameters(), LR)
    for _ in range(ROUNDS):
        if settings.client_optimizer_state == "fresh":
            optimizer = make_optimizer(settings, model.parameters(), LR)
        for _ in range(T):
            rows = setup.client_indices[0][torch.from_numpy(rng.choice(n, size=setup.batch_size, replace=False))]
            F.cross_entropy(model(setup.train_x[rows]), setup.train_y[rows]).backward()
            if settings.max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(list(model.parameters()), settings.max_grad_norm)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    return model.state_dict()


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_sgd_without_momentum_is_the_hand_step_bit_for_bit() -> None:
    setup = one_client_setup(T, LR)
    algo = ALGORITHMS.get("fedavg")(setup)
    run_rounds(algo, ROUNDS)
    assert same(algo.state_dict()["model"], hand_sgd_loop(one_client_setup(T, LR)))
    assert "optimizers" not in algo.state_dict()  # plain SGD keeps no state: the checkpoint holds none


OPTIMIZERS: list[dict[str, Any]] = [
    {"optimizer": "sgd", "optimizer_params": {"momentum": 0.9}},
    {"optimizer": "sgd", "optimizer_params": {"momentum": 0.9, "weight_decay": 1e-3, "nesterov": True}},
    {"optimizer": "sgd", "optimizer_params": {"momentum": 0.5, "dampening": 0.2, "weight_decay": 1e-2}},
    {"optimizer": "adam", "optimizer_params": {"betas": [0.8, 0.99], "eps": 1e-7}},
    {"optimizer": "adamw", "optimizer_params": {"weight_decay": 0.1, "amsgrad": True}},
    {"optimizer": "sgd", "optimizer_params": {"momentum": 0.9}, "max_grad_norm": 0.05},
]


@pytest.mark.parametrize("state", ["fresh", "persist"])
@pytest.mark.parametrize("kw", OPTIMIZERS, ids=lambda kw: f"{kw['optimizer']}-{sorted(kw['optimizer_params'])}"
                         f"-clip{kw.get('max_grad_norm')}")
def test_one_client_fedavg_equals_a_plain_torch_optim_loop(kw, state) -> None:
    settings = TrainingSettings(client_optimizer_state=state, **kw)
    algo = ALGORITHMS.get("fedavg")(one_client_setup(T, LR, settings))
    run_rounds(algo, ROUNDS)
    want = torch_optim_loop(one_client_setup(T, LR, settings), settings)
    assert same(algo.state_dict()["model"], want)
    # persisted client state is checkpointed (per client, plain tensors); fresh state is not
    assert ("optimizers" in algo.state_dict()) == (state == "persist")


def test_fresh_and_persisted_client_state_differ_with_momentum() -> None:
    runs = {}
    for state in ("fresh", "persist"):
        algo = ALGORITHMS.get("fedavg")(one_client_setup(T, LR, TrainingSettings(
            optimizer_params={"momentum": 0.9}, client_optimizer_state=state)))
        run_rounds(algo, ROUNDS)
        runs[state] = algo.state_dict()["model"]
    assert not same(runs["fresh"], runs["persist"])


def test_server_optimizer_persists_across_rounds_client_optimizer_is_fresh() -> None:
    """CA-SFL with one client: the server steps its one w_s with an optimizer kept across rounds,
    the client its copy of w_c with one made each round — a plain loop doing the same on the two
    halves of the model agrees (one client: G_k is the gradient of the server loss)."""
    from sfl_sim.optim import make_optimizer

    settings = TrainingSettings(optimizer_params={"momentum": 0.9, "weight_decay": 1e-3})
    setup = one_client_setup(T, LR, settings)
    algo = ALGORITHMS.get("ca_sfl")(setup)
    run_rounds(algo, ROUNDS)

    ref = one_client_setup(T, LR, settings)
    client, server = copy.deepcopy(ref.model).split(ref.split_point)
    rng = np.random.default_rng(0)
    n = len(ref.client_indices[0])
    server_opt = make_optimizer(settings, server.parameters(), LR)
    for _ in range(ROUNDS):
        client_opt = make_optimizer(settings, client.parameters(), LR)
        for _ in range(T):
            rows = ref.client_indices[0][torch.from_numpy(rng.choice(n, size=ref.batch_size, replace=False))]
            F.cross_entropy(server(client(ref.train_x[rows])), ref.train_y[rows]).backward()
            for opt in (server_opt, client_opt):
                opt.step()
                opt.zero_grad(set_to_none=True)
    got = algo.global_model()
    want = torch.nn.Sequential(client, server)
    for a, b in zip(got.parameters(), want.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    state = algo.state_dict()["optimizers"]
    assert list(state) == ["server"] and state["server"]["model"]["state"]  # the momentum buffers


def test_optimizer_state_survives_state_dict_exactly() -> None:
    """Resume: a fresh instance loaded from state_dict() continues exactly as the original."""
    settings = TrainingSettings(optimizer="adam", client_optimizer_state="persist", lr_schedule="exponential",
                                lr_schedule_params={"gamma": 0.5})
    a = ALGORITHMS.get("fedavg")(one_client_setup(T, LR, settings))
    run_rounds(a, 2)
    b = ALGORITHMS.get("fedavg")(one_client_setup(T, LR, settings))
    b.load_state_dict(copy.deepcopy(a.state_dict()))
    b.setup.minibatch_rng.bit_generator.state = a.setup.minibatch_rng.bit_generator.state
    assert b.learning_rate == a.learning_rate == LR * 0.25
    run_rounds(a, 2)
    run_rounds(b, 2)
    assert same(a.state_dict()["model"], b.state_dict()["model"])


def test_an_optimizer_is_built_over_whatever_model_the_client_has() -> None:
    """Nothing is tied to a model object's identity: a persisted state is loaded into the
    optimizer of the client's next working model, wherever its weights came from."""
    settings = TrainingSettings(optimizer_params={"momentum": 0.9}, client_optimizer_state="persist")
    algo = ALGORITHMS.get("fedavg")(one_client_setup(T, LR, settings))
    first, second = copy.deepcopy(algo.model), copy.deepcopy(algo.model)
    for model in (first, second):
        algo.optimizers.begin_round()
        opt = algo.client_optimizer(0, model.parameters())
        model(torch.randn(2, 1, 5, 5)).sum().backward()
        algo.optimizer_step(opt)
        algo.optimizers.end_round()
    kept = algo.optimizers.state_dict()["clients"][0]["model"]["state"]
    assert set(kept) == set(range(len(list(first.parameters()))))
    # the second round's optimizer stepped `second`, starting from the buffers `first` left
    assert all(torch.is_tensor(s["momentum_buffer"]) for s in kept.values())


def test_an_optimizer_maker_checks_once_and_builds_what_make_optimizer_builds() -> None:
    """The bank's maker resolves and checks the class on its first build (one-line errors, as
    ``make_optimizer``), then builds the same class with the same hyper-parameters directly."""
    from sfl_sim.kit.registry import ComponentParameterError
    from sfl_sim.optim import OptimizerMaker, make_optimizer

    params = [torch.nn.Parameter(torch.zeros(3))]
    settings = TrainingSettings(optimizer="adam", optimizer_params={"betas": [0.8, 0.9], "eps": 1e-6})
    make = OptimizerMaker(settings)
    built = [make(params, 0.1), make(params, 0.2)]
    want = make_optimizer(settings, params, 0.2)
    assert all(type(b) is torch.optim.Adam for b in built)
    assert built[1].param_groups[0] == {**want.param_groups[0], "params": built[1].param_groups[0]["params"]}
    assert built[0].param_groups[0]["lr"] == 0.1
    with pytest.raises(ComponentParameterError, match="momentun"):
        OptimizerMaker(TrainingSettings(optimizer_params={"momentun": 0.9}))(params, 0.1)


class _OwnZeroGrad(torch.optim.SGD):
    """An optimizer that clears gradients its own way (to zeros, keeping the tensors)."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                p.grad.zero_()


def test_the_step_clears_gradients_and_keeps_a_classs_own_zero_grad() -> None:
    from sfl_sim.optim import OptimizerBank

    bank = OptimizerBank(TrainingSettings(), 0.1)
    for optimizer, cleared in ((torch.optim.SGD, lambda g: g is None), (_OwnZeroGrad, lambda g: torch.equal(
            g, torch.zeros(2)))):
        p = torch.nn.Parameter(torch.ones(2))
        p.grad = torch.ones(2)
        bank.step(optimizer([p], lr=0.1))
        assert torch.equal(p.detach(), torch.full((2,), 0.9)) and cleared(p.grad)
