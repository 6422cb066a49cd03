"""The learning rate of each round, from ``torch.optim.lr_scheduler``.

Optimizers come and go (a client's lives for one round by default), so the schedule cannot live
on any one of them: :class:`RoundSchedule` steps a torch scheduler attached to a one-parameter
stand-in optimizer once per round, and every optimizer the algorithm uses in a round is given
that round's rate.  Its state (the scheduler's and the stand-in's rate) is checkpointed, so a
resumed run continues with exactly the rates it would have used.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import torch

__all__ = ["RoundSchedule"]


class RoundSchedule:
    """Learning rate per round: round 1 uses ``base_lr``, each :meth:`step` moves to the next round.

    Parameters
    ----------
    base_lr : float
        ``training.learning_rate``.
    name : {"constant", "step", "exponential", "cosine"}
        ``step``: ``StepLR(step_size=step_size_rounds, gamma)``; ``exponential``:
        ``ExponentialLR(gamma)``; ``cosine``: ``CosineAnnealingLR(T_max=rounds, eta_min)`` (past
        ``rounds`` it rises again, as torch's does).
    params : mapping, optional
        The schedule's parameters (see :class:`sfl_sim.config.LrScheduleSpec`).
    """

    def __init__(self, base_lr: float, name: str = "constant", params: Optional[Mapping[str, Any]] = None) -> None:
        p = dict(params or {})
        self.name = name
        self._holder = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base_lr)
        sched = torch.optim.lr_scheduler
        self._scheduler: Optional[sched.LRScheduler]
        if name == "constant":
            self._scheduler = None
        elif name == "step":
            self._scheduler = sched.StepLR(self._holder, step_size=int(p["step_size_rounds"]),
                                           gamma=float(p.get("gamma", 0.1)))
        elif name == "exponential":
            self._scheduler = sched.ExponentialLR(self._holder, gamma=float(p["gamma"]))
        elif name == "cosine":
            self._scheduler = sched.CosineAnnealingLR(self._holder, T_max=int(p["rounds"]),
                                                      eta_min=float(p.get("eta_min", 0.0)))
        else:
            raise ValueError(f"lr_schedule={name!r}; allowed: constant, step, exponential, cosine")

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

    def state_dict(self) -> Dict[str, Any]:
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
