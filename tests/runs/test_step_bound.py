"""The derived float32 bound of one SGD step (``tests/runs/step_bound.py``), checked on the CPU.

The CUDA-vs-CPU step test (``test_cuda.py``) trusts that bound; here the float32 step of the
default scenario's model on real Fashion-MNIST must lie within it of the float64 step (the
stand-in for "exact"), and a step that differs by something other than rounding (one label of
the batch changed, or the learning rate 1 % off) must lie outside it.
"""
from __future__ import annotations

import pytest
import torch

from sfl_sim.config import load_scenario
from sfl_sim.config.scenario_files import resolve_scenario
from sfl_sim.data import DatasetNotFoundError
from sfl_sim.runs.build import build_run
from tests.runs.step_bound import excess, gamma, sgd_step, step_bound

LR = 0.01


def scenario_batch(name: str = "cellular_100clients", batch: int = 32, device: str = "cpu"):
    """The scenario's initial model (dropout 0) and its first ``batch`` training images."""
    cfg = load_scenario(resolve_scenario(name), ["model.params.dropout=0.0"],
                        {"device": device, "algorithms": [{"name": "fedavg"}]})
    try:
        run = build_run(cfg, cfg.algorithms[0])
    except DatasetNotFoundError as exc:
        pytest.skip(f"data set not installed: {exc}")
    model = run.algorithm.global_model()
    return model, run.setup.train_x[:batch].cpu(), run.setup.train_y[:batch].cpu()


@pytest.fixture(scope="module")
def default_batch():
    torch.manual_seed(0)
    return scenario_batch()


def test_float32_step_lies_within_the_bound_of_float64(default_batch) -> None:
    model, x, y = default_batch
    exact = sgd_step(model, x, y, LR, torch.float64)
    f32 = sgd_step(model, x, y, LR, torch.float32)
    over = excess(f32, exact, step_bound(model, x, y, LR))
    assert max(over.values()) <= 1.0, over
    assert max(over.values()) > 0.0  # float32 did round: the comparison saw something


@pytest.mark.parametrize("change", ["one label", "lr 1 % off"])
def test_a_changed_step_lies_outside_the_bound(default_batch, change) -> None:
    model, x, y = default_batch
    bound = step_bound(model, x, y, LR)
    exact = sgd_step(model, x, y, LR, torch.float64)
    if change == "one label":
        y = y.clone()
        y[0] = (y[0] + 1) % 10
        other = sgd_step(model, x, y, LR, torch.float32)
    else:
        other = sgd_step(model, x, y, LR * 1.01, torch.float32)
    assert max(excess(other, exact, bound).values()) > 1.0


def test_gamma_refuses_sums_too_long_to_bound() -> None:
    assert gamma(10) == pytest.approx(10 * 2.0 ** -24)
    with pytest.raises(ValueError, match="n: got"):
        gamma(2 ** 24)
