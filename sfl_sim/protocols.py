"""What each swappable part of the simulator must offer, as :class:`typing.Protocol` s.

The channel's component kinds have theirs in :mod:`channel.protocols`; these are the simulator's.
Each registry carries its protocol, so a ``module:Class`` that lacks a method is refused with one
line naming the field and the missing method before any work (``Registry.get``/``build``).
Algorithms are classes derived from :class:`sfl_sim.algorithms.Algorithm` (an abstract base: its
abstract methods are the contract, checked at construction).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # annotations only: the data and selection modules import this one without torch
    from torch import nn

__all__ = ["BatteryObserver", "DatasetLoader", "LocalModelObserver", "PartitionerProtocol", "SelectorProtocol"]


@runtime_checkable
class DatasetLoader(Protocol):
    """A data set: its constructor takes the scenario's parameters, ``load`` reads the files."""

    def load(self) -> Any:
        """Return an :class:`sfl_sim.data.ArrayDataset` (never download)."""


@runtime_checkable
class PartitionerProtocol(Protocol):
    """Splits the training set among the clients (see :class:`sfl_sim.data.Partitioner`)."""

    def split(self, labels: np.ndarray, n_clients: int, num_classes: int,
              rng: np.random.Generator) -> List[np.ndarray]:
        """K disjoint, non-empty int64 index arrays, one per client, every draw from ``rng``."""


@runtime_checkable
class SelectorProtocol(Protocol):
    """Picks each round's cohort (see :class:`sfl_sim.selection.Selector`)."""

    def prepare(self, client_label_counts: np.ndarray) -> None:
        """Receive the (K, N) label counts once before the first round."""

    def select(self, n_clients: int, n_selected: int, rng: np.random.Generator) -> np.ndarray:
        """``n_selected`` distinct, sorted client indices (int64).  With an availability model
        other than ``always`` it is also called with ``available=`` a bool mask of the online
        clients (:func:`sfl_sim.selection.select_online`), and picks only among them."""

    def state_dict(self) -> Dict[str, Any]:
        """State to checkpoint (plain data)."""

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""


@runtime_checkable
class BatteryObserver(Protocol):
    """A selector that wants the clients' battery charges (``energy.battery``) before each draw.

    Any selector with this method (shipped ``battery_aware``, or your own) is handed the charges
    before every round of a run with batteries; clients whose charge cannot cover a round are
    already left out of ``available``.  Runs without batteries never call it.
    """

    def observe_battery(self, remaining_j: np.ndarray) -> None:
        """The charge left in each client's battery, J, shape (K,), for the coming round's draw."""


@runtime_checkable
class LocalModelObserver(Protocol):
    """Sees a round's locally trained models before aggregation (e.g.
    :class:`sfl_sim.evaluation.VacantClassProbe`); passed to
    :meth:`sfl_sim.algorithms.Algorithm.run_round` for a round the runner will evaluate."""

    def observe(self, models: Mapping[int, nn.Module]) -> None:
        """Read the client -> ``nn.Module`` models (eval mode, no gradients, no random draws)."""
