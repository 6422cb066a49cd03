"""Optimizers by name: ``sgd``, ``adam``, ``adamw`` or any ``torch.optim.Optimizer`` as ``module:Class``.

:data:`OPTIMIZERS` is a registry like the simulator's others (short names, ``package.module:Class``,
entry points ``sfl_sim.optimizer``); its short names are the built-ins of
:data:`sfl_sim.config.optimizers.BUILTIN_OPTIMIZERS`, which also holds their hyper-parameter
models (the scenario validates them before torch is imported).  :func:`make_optimizer` builds one
over a parameter list with the round's learning rate, and :func:`check_optimizer` builds one over
a dummy parameter so a bad class or hyper-parameter is refused before any work.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from sfl_sim.config.optimizers import BUILTIN_OPTIMIZERS
from sfl_sim.kit.registry import Registry
from sfl_sim.optim.settings import TrainingSettings

__all__ = ["OPTIMIZERS", "OptimizerMaker", "check_optimizer", "make_optimizer", "optimizer_class",
           "optimizer_kwargs"]

OPTIMIZERS = Registry("optimizer", supplied=("params", "lr"))
for _name, _builtin in BUILTIN_OPTIMIZERS.items():
    OPTIMIZERS.register(_name)(getattr(torch.optim, _builtin.torch_class))


def optimizer_class(name: str) -> type:
    """The optimizer class ``name`` resolves to.

    Raises
    ------
    sfl_sim.kit.registry.UnknownComponentError
        If ``name`` does not resolve to a class.
    ValueError
        If the class is not a ``torch.optim.Optimizer`` subclass.
    """
    cls = OPTIMIZERS.get(name)
    if not issubclass(cls, torch.optim.Optimizer):
        raise ValueError(f"{name!r} is {cls.__module__}.{cls.__qualname__}, not a torch.optim.Optimizer subclass")
    return cls


def optimizer_kwargs(settings: TrainingSettings) -> dict[str, Any]:
    """The constructor's keyword arguments besides ``lr``: the hyper-parameters of ``settings``
    (``betas`` arrive as a YAML list and are handed to torch as a tuple)."""
    kwargs = dict(settings.optimizer_params)
    if "betas" in kwargs:
        kwargs["betas"] = tuple(kwargs["betas"])
    return kwargs


def make_optimizer(settings: TrainingSettings, params: Iterable[torch.nn.Parameter],
                   lr: float) -> torch.optim.Optimizer:
    """A new optimizer of ``settings`` over ``params`` at learning rate ``lr``, resolved and its
    parameters checked through :data:`OPTIMIZERS` (one-line errors).

    Built-in hyper-parameters come validated from the scenario.  The check reads the
    constructor's signature, about 15 times the cost of building an SGD: code that builds many
    optimizers of one setting uses :class:`OptimizerMaker`, which checks once.
    """
    return OPTIMIZERS.build(settings.optimizer, list(params), lr=lr, **optimizer_kwargs(settings))


class OptimizerMaker:
    """Builds optimizers of one :class:`TrainingSettings`: the first through :func:`make_optimizer`
    (resolved and checked), the rest by calling the class it resolved to with the same arguments
    (the same optimizer, without resolving and checking it again).

    Parameters
    ----------
    settings : TrainingSettings
    """

    def __init__(self, settings: TrainingSettings) -> None:
        self.settings = settings
        self._cls: type | None = None
        self._kwargs = optimizer_kwargs(settings)

    def __call__(self, params: Iterable[torch.nn.Parameter], lr: float) -> torch.optim.Optimizer:
        """A new optimizer over ``params`` at learning rate ``lr``."""
        if self._cls is None:
            optimizer = make_optimizer(self.settings, params, lr)
            self._cls = optimizer_class(self.settings.optimizer)
            return optimizer
        return self._cls(list(params), lr=lr, **self._kwargs)


def check_optimizer(settings: TrainingSettings, lr: float) -> None:
    """Build the optimizer over one dummy parameter and take one step, so that an unknown name,
    a class that is not an optimizer or a rejected hyper-parameter fails before training.

    Raises
    ------
    sfl_sim.kit.registry.UnknownComponentError, sfl_sim.kit.registry.ComponentParameterError, ValueError, TypeError
        From resolving, checking or constructing the optimizer (or its first step).
    """
    optimizer_class(settings.optimizer)
    dummy = torch.nn.Parameter(torch.zeros(2))
    optimizer = make_optimizer(settings, [dummy], lr)
    dummy.grad = torch.ones(2)
    optimizer.step()
