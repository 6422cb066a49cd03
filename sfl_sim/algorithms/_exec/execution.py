"""How a round's client steps run, and whether an algorithm may run them stacked.

Two modes, one protocol: ``loop`` runs each client's torch work in its own SimPy process when
its event fires (the reference); ``vectorised`` keeps exactly the same processes, events, bytes
and FLOPs but defers the torch work of the cohort's working copies and runs it stacked
(:mod:`sfl_sim.algorithms._exec.vectorised`).  The round code of an algorithm family is written once;
only its client-step object differs between the modes (FedAvg's
:class:`~sfl_sim.algorithms.fl.fedavg.LocalSteps`, the split algorithms'
:class:`~sfl_sim.algorithms.split.base.ClientSteps`).

Eligibility is declared, not guessed: a family whose client steps can run stacked says so with a
:class:`StackedSteps` class attribute ``stacked_steps``, naming the public hooks the stacked steps
stand in for.  The class that holds the declaration is its *owner*; a subclass inherits the path
as long as it keeps the owner's definitions of those hooks (and of
:data:`OPTIMIZER_HOOKS`), and loses it, with a reason, when it overrides one of them.
:func:`vectorised_refusal` is the one place that decides, and :func:`resolve_execution` turns a
run's request (:class:`TrainingSetup.execution <sfl_sim.algorithms.base.TrainingSetup>`) into
the mode.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

from torch import nn

from sfl_sim.algorithms._exec.vectorised import stacking_refusal
from sfl_sim.optim import TrainingSettings

__all__ = ["EXECUTION_REQUESTS", "Executable", "ExecutionRefused", "ExecutionRequest", "ResolvedExecution",
           "OPTIMIZER_HOOKS", "StackedSteps", "overridden", "resolve_execution", "stacked_steps_of",
           "training_refusal", "vectorised_refusal"]

#: How a run's client steps run, once resolved (:func:`resolve_execution`); the scenario's
#: ``execution`` (:data:`sfl_sim.config.choices.ExecutionMode`) may also say ``auto``.
ResolvedExecution = Literal["loop", "vectorised"]

#: What a run asks for: ``loop``; ``vectorised`` (refused, with the reason, by an algorithm that
#: cannot run it); ``prefer_vectorised`` (vectorised where the algorithm can, else the loop: the
#: scenario's ``execution: auto`` on a device where vectorised was measured faster).
ExecutionRequest = Literal["loop", "vectorised", "prefer_vectorised"]
EXECUTION_REQUESTS: tuple[str, ...] = get_args(ExecutionRequest)

#: The optimizer hooks the stacked steps never call (they apply ``w <- w - eta grad`` themselves).
OPTIMIZER_HOOKS = ("client_optimizer", "optimizer_step")


class _HasTraining(Protocol):
    @property
    def training(self) -> TrainingSettings:
        """The run's training settings (:func:`training_refusal` reads them)."""


class Executable(Protocol):
    """What the execution seam reads of an algorithm: its setup's training settings (the rest
    through its class); :class:`sfl_sim.algorithms.Algorithm`, which imports this module, has it."""

    @property
    def setup(self) -> _HasTraining:
        """The algorithm's :class:`~sfl_sim.algorithms.TrainingSetup`."""


class ExecutionRefused(ValueError):
    """``vectorised`` was asked of an algorithm that cannot run it (the message is the reason, one line)."""


@dataclass(frozen=True)
class StackedSteps:
    """Declares that an algorithm family's client steps can run stacked.

    Set as the class attribute ``stacked_steps`` of the family's base (the *owner*); a subclass
    that writes its own stacked steps declares again, one that must not inherit the path sets
    ``stacked_steps = None``.

    Attributes
    ----------
    hooks : tuple of str
        The public hooks whose owner's definitions the stacked steps reproduce; a subclass that
        overrides one runs the loop.
    step : str
        The stacked step in words, for refusals (``"client step"``).
    module : callable
        ``module(algorithm) -> nn.Module``: what is stacked (the model, the client side).
    what : str
        That module in words, for refusals (``"model"``, ``"client side"``).
    condition : callable, optional
        ``condition(algorithm) -> str or None``: a further reason of the family to refuse.
    """

    hooks: tuple[str, ...]
    step: str
    module: Callable[[Any], nn.Module]
    what: str
    condition: Callable[[Any], str | None] | None = None


def overridden(obj: Any, base: type, names: Sequence[str]) -> list[str]:
    """The methods of ``names`` that ``type(obj)`` defines differently from ``base``."""
    return [n for n in names if getattr(type(obj), n) is not getattr(base, n)]


def stacked_steps_of(cls: type) -> tuple[type | None, StackedSteps | None]:
    """The owner of ``cls``'s ``stacked_steps`` declaration (the nearest class in its MRO that
    sets one) and the declaration; ``(None, None)`` when no class declares one."""
    for klass in cls.__mro__:
        if "stacked_steps" in vars(klass):
            steps = vars(klass)["stacked_steps"]
            return (klass, steps) if steps is not None else (None, None)
    return None, None


def training_refusal(settings: TrainingSettings) -> str | None:
    """Why training ``settings`` keep the stacked client steps from training as the loop does
    (None when they can).

    The stacked steps apply ``w <- w - eta grad`` at the round's rate, T iterations of eq. (3)
    batches per client.  So they honour SGD without momentum or weight decay, any
    ``lr_schedule`` (the rate is fixed within a round) and ``client_optimizer_state`` ``fresh`` or
    ``persist`` (such SGD keeps no state, so there is nothing to persist); they refuse any other
    optimizer, momentum, weight decay, ``local_epochs`` and ``max_grad_norm``."""
    if settings.optimizer != "sgd":
        return f"training.optimizer is {settings.optimizer}; the stacked client step is plain SGD"
    for name, value in sorted(settings.optimizer_params.items()):
        if name in ("dampening", "nesterov"):  # no effect without momentum (nesterov needs it)
            continue
        if value:
            what = {"momentum": "keeps no momentum", "weight_decay": "applies no weight decay"}.get(
                name, "is plain SGD")
            return f"training.optimizer.{name} is {value}; the stacked client step {what}"
    if settings.local_epochs is not None:
        return (f"training.local_epochs is {settings.local_epochs}; the stacked client step runs T iterations "
                f"of eq. (3) batches (local_iterations) only")
    if settings.max_grad_norm is not None:
        return f"training.max_grad_norm is {settings.max_grad_norm:g}; the stacked client step does not clip"
    return None


def vectorised_refusal(algorithm: Executable) -> str | None:
    """Why ``algorithm`` cannot run ``execution: vectorised`` (None when it can).

    In order: its family declares no :class:`StackedSteps`; it overrides one of the declared
    hooks; the family's own condition; its training settings (:func:`training_refusal`); it
    overrides an optimizer hook; the stacked module holds a layer that cannot be stacked
    (:func:`~sfl_sim.algorithms._exec.vectorised.stacking_refusal`)."""
    name = type(algorithm).__name__
    owner, steps = stacked_steps_of(type(algorithm))
    if owner is None or steps is None:
        return f"{name} has no vectorised path"
    changed = overridden(algorithm, owner, steps.hooks)
    if changed:
        return f"{name} overrides {', '.join(changed)}, which the stacked {steps.step} does not run"
    if steps.condition is not None:
        why = steps.condition(algorithm)
        if why is not None:
            return why
    why = training_refusal(algorithm.setup.training)
    if why is not None:
        return why
    changed = overridden(algorithm, owner, OPTIMIZER_HOOKS)
    if changed:
        return f"{name} overrides {', '.join(changed)}, which the stacked client step does not call"
    why = stacking_refusal(steps.module(algorithm))
    return None if why is None else f"its {steps.what} cannot be stacked: {why}"


def resolve_execution(request: ExecutionRequest, algorithm: Executable) -> ResolvedExecution:
    """The mode ``algorithm`` runs for a run's ``request`` (see :data:`ExecutionRequest`).

    Raises
    ------
    ExecutionRefused
        For ``vectorised`` when :func:`vectorised_refusal` gives a reason.
    """
    if request not in EXECUTION_REQUESTS:
        raise ValueError(f"execution={request!r}; allowed: {', '.join(EXECUTION_REQUESTS)}")
    if request == "loop":
        return "loop"
    try:
        why = vectorised_refusal(algorithm)
    except Exception as exc:  # a plug-in's hook (its client_side, say) failed while being checked
        lines = str(exc).strip().splitlines()
        why = f"checking its vectorised path raised {type(exc).__name__}" + (f": {lines[0]}" if lines else "")
    if why is None:
        return "vectorised"
    if request == "vectorised":
        raise ExecutionRefused(why)
    return "loop"
