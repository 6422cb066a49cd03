"""Optimizers by name: ``sgd``, ``adam``, ``adamw`` or any ``torch.optim.Optimizer`` as ``module:Class``.

:data:`OPTIMIZERS` is a registry like the simulator's others (short names, ``package.module:Class``,
entry points ``sfl_sim.optimizer``); :func:`make_optimizer` builds one over a parameter list with
the round's learning rate, and :func:`check_optimizer` builds one over a dummy parameter so a bad
class or hyper-parameter is refused before any work.
"""
from __future__ import annotations

from typing import Iterable

import torch

from simkit.registry import Registry
from sfl_sim.optim.settings import TrainingSettings

__all__ = ["OPTIMIZERS", "check_optimizer", "make_optimizer", "optimizer_class"]

OPTIMIZERS = Registry("optimizer")
OPTIMIZERS.register("sgd")(torch.optim.SGD)
OPTIMIZERS.register("adam")(torch.optim.Adam)
OPTIMIZERS.register("adamw")(torch.optim.AdamW)


def optimizer_class(name: str) -> type:
    """The optimizer class ``name`` resolves to.

    Raises
    ------
    simkit.registry.UnknownComponentError
        If ``name`` does not resolve to a class.
    ValueError
        If the class is not a ``torch.optim.Optimizer`` subclass.
    """
    cls = OPTIMIZERS.get(name)
    if not issubclass(cls, torch.optim.Optimizer):
        raise ValueError(f"{name!r} is {cls.__module__}.{cls.__qualname__}, not a torch.optim.Optimizer subclass")
    return cls


def make_optimizer(settings: TrainingSettings, params: Iterable[torch.nn.Parameter],
                   lr: float) -> torch.optim.Optimizer:
    """A new optimizer of ``settings`` over ``params`` at learning rate ``lr``.

    Built-in hyper-parameters come validated from the scenario; ``betas`` arrive as a YAML list
    and are handed to torch as a tuple.
    """
    kwargs = dict(settings.optimizer_params)
    if "betas" in kwargs:
        kwargs["betas"] = tuple(kwargs["betas"])
    return OPTIMIZERS.build(settings.optimizer, list(params), lr=lr, **kwargs)


def check_optimizer(settings: TrainingSettings, lr: float) -> None:
    """Build the optimizer over one dummy parameter and take one step, so that an unknown name,
    a class that is not an optimizer or a rejected hyper-parameter fails before training.

    Raises
    ------
    simkit.registry.UnknownComponentError, simkit.registry.ComponentParameterError, ValueError, TypeError
        From resolving, checking or constructing the optimizer (or its first step).
    """
    optimizer_class(settings.optimizer)
    dummy = torch.nn.Parameter(torch.zeros(2))
    optimizer = make_optimizer(settings, [dummy], lr)
    dummy.grad = torch.ones(2)
    optimizer.step()
