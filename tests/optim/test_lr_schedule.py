"""Per-round learning-rate schedules: the expected rate in every round, in the optimizers the
algorithm steps, and exactly the same rates after a resume."""
from __future__ import annotations

import copy
import math

import pytest

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.fl.fedavg import FedAvg
from sfl_sim.optim import RoundSchedule, TrainingSettings
from tests.optim.optim_test_helpers import one_client_setup, run_rounds

LR = 0.1
ROUNDS = 12


def expected(name: str, params: dict, rnd: int) -> float:
    """Closed forms of torch's schedulers: the rate of round ``rnd`` (1-based; round 1 uses LR)."""
    e = rnd - 1  # scheduler steps taken before the round
    if name == "constant":
        return LR
    if name == "step":
        return LR * params["gamma"] ** (e // params["step_size_rounds"])
    if name == "exponential":
        return LR * params["gamma"] ** e
    eta_min, t_max = params.get("eta_min", 0.0), params["rounds"]
    return eta_min + (LR - eta_min) * (1 + math.cos(math.pi * e / t_max)) / 2


CASES = [("constant", {}), ("step", {"step_size_rounds": 4, "gamma": 0.5}), ("exponential", {"gamma": 0.9}),
         ("cosine", {"rounds": 10, "eta_min": 0.001}), ("cosine", {"rounds": ROUNDS, "eta_min": 0.0})]


@pytest.mark.parametrize("name, params", CASES, ids=lambda v: str(v))
def test_round_schedule_gives_the_expected_rate_each_round(name, params) -> None:
    schedule = RoundSchedule(LR, name, params)
    for rnd in range(1, ROUNDS + 1):
        assert schedule.lr == pytest.approx(expected(name, params, rnd), rel=1e-9, abs=1e-15), rnd
        schedule.step()


class RecordsRates(FedAvg):
    """FedAvg noting, each round, the rate its client optimizer stepped with."""

    def __init__(self, setup):
        super().__init__(setup)
        self.rates = []

    def after_local_training(self, client, model):
        self.rates.append(self.optimizers.client(client, model.parameters()).param_groups[0]["lr"])


@pytest.mark.parametrize("name, params", CASES[1:4], ids=lambda v: str(v))
def test_the_algorithm_steps_with_the_rounds_rate(name, params) -> None:
    algo = RecordsRates(one_client_setup(1, LR, TrainingSettings(lr_schedule=name, lr_schedule_params=params)))
    run_rounds(algo, 6)
    assert algo.rates == pytest.approx([expected(name, params, r) for r in range(1, 7)], rel=1e-9)


def test_server_optimizer_follows_the_schedule_too() -> None:
    settings = TrainingSettings(lr_schedule="step", lr_schedule_params={"step_size_rounds": 1, "gamma": 0.5})
    algo = ALGORITHMS.get("ca_sfl")(one_client_setup(1, LR, settings))
    run_rounds(algo, 3)
    server_opt = algo.server_optimizer(algo.server_model.parameters())
    assert server_opt.param_groups[0]["lr"] == pytest.approx(LR / 8)  # asked after 3 rounds: round 4's rate


def test_schedule_position_survives_a_checkpoint_exactly() -> None:
    params = {"rounds": 7, "eta_min": 0.002}
    a = RoundSchedule(LR, "cosine", params)
    for _ in range(3):
        a.step()
    b = RoundSchedule(LR, "cosine", params)
    b.load_state_dict(copy.deepcopy(a.state_dict()))
    for _ in range(6):
        assert a.lr == b.lr  # bit for bit: the scheduler's recursion continues from the same state
        a.step()
        b.step()


def test_constant_schedule_has_no_state() -> None:
    s = RoundSchedule(LR)
    s.step()
    assert s.lr == LR and s.state_dict() == {}
