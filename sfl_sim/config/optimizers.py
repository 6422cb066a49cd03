"""The built-in optimizers and learning-rate schedules: each name, its torch class and its parameters.

:data:`BUILTIN_OPTIMIZERS` and :data:`BUILTIN_SCHEDULES` are the one place these facts live.
Scenario validation and the JSON Schema of ``training.optimizer`` / ``training.lr_schedule``
(:mod:`sfl_sim.config.training`) read their names and parameter models; the optimizer registry
(:data:`sfl_sim.optim.OPTIMIZERS`) registers their torch classes; :class:`sfl_sim.optim.RoundSchedule`
builds the torch scheduler a schedule names with the arguments its model gives.  This module
names torch classes as strings, so validating a scenario does not import torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, model_validator

from sfl_sim.config.errors import CrossFieldError
from sfl_sim.config.fields import Allowed, Number, PositiveInt, Section

__all__ = ["BuiltinOptimizer", "BuiltinSchedule", "BUILTIN_OPTIMIZERS", "BUILTIN_SCHEDULES", "SGDParams", "AdamParams",
           "AdamWParams", "ScheduleParams", "ConstantParams", "StepParams", "ExponentialParams", "CosineParams"]

_BelowOne = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False), Allowed("a number in [0, 1)")]
_Decay = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False), Allowed("a number in (0, 1]")]


# ------------------------------------------------------------------------------------- optimizers
class SGDParams(Section):
    """Hyper-parameters of ``torch.optim.SGD`` besides the learning rate."""

    momentum: _BelowOne = 0.0
    dampening: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False), Allowed("a number in [0, 1]")] = 0.0
    nesterov: bool = False
    weight_decay: Annotated[float, Number(0, why="L2 penalty")] = 0.0

    @model_validator(mode="after")
    def _nesterov(self) -> SGDParams:
        if self.nesterov and (self.momentum == 0 or self.dampening != 0):
            raise CrossFieldError("nesterov", True, "true only with momentum > 0 and dampening 0 (torch.optim.SGD)",
                                  relative=True)
        return self


class AdamParams(Section):
    """Hyper-parameters of ``torch.optim.Adam`` besides the learning rate."""

    betas: Annotated[list[_BelowOne], Field(min_length=2, max_length=2),
                     Allowed("two numbers in [0, 1) (beta1, beta2)")] = Field(default_factory=lambda: [0.9, 0.999])
    eps: Annotated[float, Number(0, low_open=True)] = 1e-8
    weight_decay: Annotated[float, Number(0, why="L2 penalty")] = 0.0
    amsgrad: bool = False


class AdamWParams(AdamParams):
    """Hyper-parameters of ``torch.optim.AdamW`` besides the learning rate (decoupled weight decay)."""

    weight_decay: Annotated[float, Number(0, why="decoupled weight decay")] = 0.01


@dataclass(frozen=True)
class BuiltinOptimizer:
    """A built-in optimizer.

    Attributes
    ----------
    torch_class : str
        Its class in ``torch.optim``.
    params : type
        The model of its hyper-parameters besides the learning rate, with torch's defaults (the
        scenario records every value the run used).
    """

    torch_class: str
    params: type[Section]


#: Built-in optimizers of ``training.optimizer``, by name (the default first).
BUILTIN_OPTIMIZERS: dict[str, BuiltinOptimizer] = {
    "sgd": BuiltinOptimizer("SGD", SGDParams),
    "adam": BuiltinOptimizer("Adam", AdamParams),
    "adamw": BuiltinOptimizer("AdamW", AdamWParams),
}


# -------------------------------------------------------------------------------------- schedules
class ScheduleParams(Section):
    """The parameters of a learning-rate schedule."""

    def torch_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of its torch scheduler besides the optimizer."""
        return {}


class ConstantParams(ScheduleParams):
    """``constant``: the learning rate of every round is ``training.learning_rate``."""


class StepParams(ScheduleParams):
    """``step``: multiply the learning rate by ``gamma`` every ``step_size_rounds`` rounds (StepLR)."""

    step_size_rounds: Annotated[PositiveInt, Allowed("an integer >= 1 (rounds between decays)")]
    gamma: _Decay = 0.1

    def torch_kwargs(self) -> dict[str, Any]:
        return {"step_size": self.step_size_rounds, "gamma": self.gamma}


class ExponentialParams(ScheduleParams):
    """``exponential``: multiply the learning rate by ``gamma`` after every round (ExponentialLR)."""

    gamma: _Decay

    def torch_kwargs(self) -> dict[str, Any]:
        return {"gamma": self.gamma}


class CosineParams(ScheduleParams):
    """``cosine``: cosine annealing from the learning rate to ``eta_min`` over ``rounds`` rounds
    (CosineAnnealingLR with T_max = ``rounds``)."""

    rounds: Annotated[PositiveInt, Allowed("an integer >= 1 (T_max, the rounds of one half cosine)")]
    eta_min: Annotated[float, Number(0, why="the learning rate at the end of the half cosine")] = 0.0

    def torch_kwargs(self) -> dict[str, Any]:
        return {"T_max": self.rounds, "eta_min": self.eta_min}


@dataclass(frozen=True)
class BuiltinSchedule:
    """A per-round learning-rate schedule.

    Attributes
    ----------
    torch_class : str or None
        Its scheduler in ``torch.optim.lr_scheduler``, stepped once per round (None: the rate
        never changes).
    params : type
        The model of its parameters; :meth:`ScheduleParams.torch_kwargs` gives the scheduler's
        arguments.
    """

    torch_class: str | None
    params: type[ScheduleParams]


#: Per-round learning-rate schedules of ``training.lr_schedule``, by name (the default first).
BUILTIN_SCHEDULES: dict[str, BuiltinSchedule] = {
    "constant": BuiltinSchedule(None, ConstantParams),
    "step": BuiltinSchedule("StepLR", StepParams),
    "exponential": BuiltinSchedule("ExponentialLR", ExponentialParams),
    "cosine": BuiltinSchedule("CosineAnnealingLR", CosineParams),
}
