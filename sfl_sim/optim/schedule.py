"""The learning rate of each round, from ``torch.optim.lr_scheduler``.

Optimizers come and go (a client's lives for one round by default), so the schedule cannot live
on any one of them: :class:`RoundSchedule` steps a torch scheduler attached to a one-parameter
stand-in optimizer once per round, and every optimizer the algorithm uses in a round is given
that round's rate.  Its state (the scheduler's and the stand-in's rate) is checkpointed, so a
resumed run continues with exactly the rates it would have used.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from pydantic import ValidationError

from sfl_sim.config.errors import format_validation_error
from sfl_sim.config.optimizers import BUILTIN_SCHEDULES

__all__ = ["RoundSchedule"]


class RoundSchedule:
    """Learning rate per round: round 1 uses ``base_lr``, each :meth:`step` moves to the next round.

    Parameters
    ----------
    base_lr : float
        ``training.learning_rate``.
    name : str
        A schedule of :data:`sfl_sim.config.optimizers.BUILTIN_SCHEDULES`: ``constant``, or
        ``step`` (``StepLR``), ``exponential`` (``ExponentialLR``), ``cosine``
        (``CosineAnnealingLR``; past ``rounds`` it rises again, as torch's does).
    params : mapping, optional
        The schedule's parameters (its model fills the defaults left out).

    Raises
    ------
    ValueError
        An unknown name, or parameters its model refuses (one line).
    """

    def __init__(self, base_lr: float, name: str = "constant", params: Mapping[str, Any] | None = None) -> None:
        builtin = BUILTIN_SCHEDULES.get(name)
        if builtin is None:
            raise ValueError(f"lr_schedule={name!r}; allowed: {', '.join(BUILTIN_SCHEDULES)}")
        try:
            kwargs = builtin.params.model_validate(dict(params or {})).torch_kwargs()
        except ValidationError as exc:
            raise ValueError(f"lr_schedule {name!r}: {format_validation_error(exc, builtin.params)}") from None
        self.name = name
        self._holder = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base_lr)
        self._scheduler: torch.optim.lr_scheduler.LRScheduler | None = None
        if builtin.torch_class is not None:
            self._scheduler = getattr(torch.optim.lr_scheduler, builtin.torch_class)(self._holder, **kwargs)

    @property
    def lr(self) -> float:
        """The learning rate of the current round."""
        return float(self._holder.param_groups[0]["lr"])

    def step(self) -> None:
        """Move to the next round's rate (called once at the end of every round)."""
        if self._scheduler is None:
            return
        self._holder.step()  # no gradient: changes nothing, but keeps torch's call-order check quiet
        self._scheduler.step()

    def state_dict(self) -> dict[str, Any]:
        """``{}`` for ``constant`` (nothing changes), else the scheduler's state and the current rate."""
        if self._scheduler is None:
            return {}
        return {"scheduler": self._scheduler.state_dict(), "lr": self.lr}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` (an empty state leaves a fresh schedule)."""
        if self._scheduler is None or not state:
            return
        self._scheduler.load_state_dict(dict(state["scheduler"]))
        self._holder.param_groups[0]["lr"] = float(state["lr"])
