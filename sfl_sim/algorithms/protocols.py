"""What an algorithm's round shows to an observer of its local models, as a :class:`typing.Protocol`.

Algorithms themselves are classes derived from :class:`sfl_sim.algorithms.Algorithm` (an abstract
base: its abstract methods are the contract, checked at construction).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only
    from torch import nn

__all__ = ["LocalModelObserver"]


@runtime_checkable
class LocalModelObserver(Protocol):
    """Sees a round's locally trained models before aggregation (e.g.
    :class:`sfl_sim.models.evaluation.VacantClassProbe`); passed to
    :meth:`sfl_sim.algorithms.Algorithm.run_round` for a round the runner will evaluate."""

    def observe(self, models: Mapping[int, nn.Module]) -> None:
        """Read the client -> ``nn.Module`` models (eval mode, no gradients, no random draws)."""
