"""What a client selector must offer, and what a selector may offer to see batteries, as
:class:`typing.Protocol` s (the registry of selectors carries :class:`SelectorProtocol`).
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["SelectorProtocol", "BatteryObserver"]


@runtime_checkable
class SelectorProtocol(Protocol):
    """Picks each round's cohort (see :class:`sfl_sim.clients.selection.Selector`)."""

    def prepare(self, client_label_counts: np.ndarray) -> None:
        """Receive the (K, N) label counts once before the first round."""

    def select(self, n_clients: int, n_selected: int, rng: np.random.Generator) -> np.ndarray:
        """``n_selected`` distinct, sorted client indices (int64).  With an availability model
        other than ``always`` it is also called with ``available=`` a bool mask of the online
        clients (:func:`sfl_sim.clients.selection.select_online`), and picks only among them."""

    def state_dict(self) -> dict[str, Any]:
        """State to checkpoint (plain data)."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
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
