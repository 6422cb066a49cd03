"""The training settings an algorithm runs with, as plain data (no pydantic, no torch).

:class:`TrainingSettings` is what :class:`~sfl_sim.algorithms.TrainingSetup` carries about the
optimizer, the learning-rate schedule, local epochs, clipping and client optimizer state; its
defaults are the papers' setting (plain SGD at a constant rate, ``local_iterations`` of eq. 3
batches, no clipping), so a scenario without a ``training:`` section trains as SCALA does.
:func:`settings_from_config` builds it from a scenario's (merged) ``training:`` section.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

__all__ = ["TrainingSettings", "settings_from_config"]


@dataclass(frozen=True)
class TrainingSettings:
    """How an algorithm's optimizers are made and stepped.

    Attributes
    ----------
    optimizer : str
        ``"sgd"``, ``"adam"``, ``"adamw"`` or ``"package.module:Class"`` (a ``torch.optim.Optimizer``).
    optimizer_params : mapping
        Its hyper-parameters besides the learning rate (e.g. ``{"momentum": 0.9}``).
    lr_schedule : str
        ``"constant"``, ``"step"``, ``"exponential"`` or ``"cosine"`` (one step per round).
    lr_schedule_params : mapping
        ``step_size_rounds``/``gamma``, ``gamma``, or ``rounds``/``eta_min``.
    local_epochs : int or None
        E: each client makes E passes over its data in batches of the setup's ``batch_size``
        (None: T = ``local_iterations`` iterations of eq. 3 batches).
    max_grad_norm : float or None
        Clip each step's gradients to this 2-norm (``torch.nn.utils.clip_grad_norm_``); None: off.
    client_optimizer_state : {"fresh", "persist"}
        A client's optimizer state starts empty each round it takes part (``fresh``) or is kept
        per client from one participation to the next (``persist``).
    """

    optimizer: str = "sgd"
    optimizer_params: Mapping[str, Any] = field(default_factory=dict)
    lr_schedule: str = "constant"
    lr_schedule_params: Mapping[str, Any] = field(default_factory=dict)
    local_epochs: Optional[int] = None
    max_grad_norm: Optional[float] = None
    client_optimizer_state: str = "fresh"

    @property
    def is_plain_sgd(self) -> bool:
        """SGD without momentum or weight decay, at a constant rate, unclipped: the hand-written
        step every algorithm took before optimizers came from ``torch.optim``."""
        p = self.optimizer_params
        return (self.optimizer == "sgd" and not p.get("momentum") and not p.get("weight_decay")
                and self.lr_schedule == "constant" and self.max_grad_norm is None)


def settings_from_config(training: Any) -> TrainingSettings:
    """The :class:`TrainingSettings` of a validated :class:`sfl_sim.config.Training` section."""
    return TrainingSettings(
        optimizer=training.optimizer.name, optimizer_params=dict(training.optimizer.params),
        lr_schedule=training.lr_schedule.name, lr_schedule_params=dict(training.lr_schedule.params),
        local_epochs=training.local_epochs, max_grad_norm=training.max_grad_norm,
        client_optimizer_state=training.client_optimizer_state)
