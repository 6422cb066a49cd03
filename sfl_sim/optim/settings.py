"""The training settings an algorithm runs with, as plain data (no torch): a view of ``training:``.

:class:`TrainingSettings` is what :class:`~sfl_sim.algorithms.TrainingSetup` carries about the
optimizer, the learning-rate schedule, local epochs, clipping and client optimizer state.  It is
derived from the scenario's :class:`~sfl_sim.config.Training` section, which defines these
fields once: every attribute is the section's field of the same name (an optimizer or schedule
as its ``name``, with its parameters in ``*_params``), its defaults are the section's defaults
(the papers' setting: plain SGD at a constant rate, ``local_iterations`` of eq. 3 batches, no
clipping), and :meth:`TrainingSettings.from_training` reads a (merged) section.  The view leaves
out what the setup carries elsewhere (batch size, T, the learning rate) and host settings.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sfl_sim.config.choices import ClientOptimizerState
from sfl_sim.config.training import Training

__all__ = ["TrainingSettings", "settings_from_config"]

_PARAMS = "_params"


def _view(training: Training, name: str) -> Any:
    """The value of ``TrainingSettings.<name>`` in ``training``: the field itself, a named spec's
    ``name``, or (``<field>_params``) its parameters."""
    if name.endswith(_PARAMS):
        return dict(getattr(training, name[: -len(_PARAMS)]).params)
    value = getattr(training, name)
    return value.name if hasattr(value, "params") else value


_DEFAULTS = Training()


@dataclass(frozen=True)
class TrainingSettings:
    """How an algorithm's optimizers are made and stepped (defaults: ``training:``'s).

    Attributes
    ----------
    optimizer : str
        ``training.optimizer``'s name: ``"sgd"``, ``"adam"``, ``"adamw"`` or
        ``"package.module:Class"`` (a ``torch.optim.Optimizer``).
    optimizer_params : mapping
        Its hyper-parameters besides the learning rate (e.g. ``{"momentum": 0.9}``; left out:
        torch's defaults).
    lr_schedule : str
        ``training.lr_schedule``'s name: ``"constant"``, ``"step"``, ``"exponential"`` or
        ``"cosine"`` (one step per round).
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

    optimizer: str = _view(_DEFAULTS, "optimizer")
    optimizer_params: Mapping[str, Any] = field(default_factory=dict)
    lr_schedule: str = _view(_DEFAULTS, "lr_schedule")
    lr_schedule_params: Mapping[str, Any] = field(default_factory=dict)
    local_epochs: int | None = _view(_DEFAULTS, "local_epochs")
    max_grad_norm: float | None = _view(_DEFAULTS, "max_grad_norm")
    client_optimizer_state: ClientOptimizerState = _view(_DEFAULTS, "client_optimizer_state")

    @classmethod
    def from_training(cls, training: Training) -> TrainingSettings:
        """The settings of a validated (and merged) ``training:`` section."""
        values: dict[str, Any] = {f.name: _view(training, f.name) for f in dataclasses.fields(cls)}
        return cls(**values)


def settings_from_config(training: Training) -> TrainingSettings:
    """The :class:`TrainingSettings` of a validated :class:`sfl_sim.config.Training` section
    (:meth:`TrainingSettings.from_training`)."""
    return TrainingSettings.from_training(training)
