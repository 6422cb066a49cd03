"""Client selection: which clients take part in a round.

A selector is a component of its own (registry :data:`SELECTORS`), so any algorithm runs with any
selector from the scenario (``clients.selection``).  When the scenario leaves it unset, the
algorithm's own choice (:attr:`sfl_sim.algorithms.Algorithm.default_selection`) is used, and
uniform selection when the algorithm has none.
"""
from __future__ import annotations

import numpy as np

from channel.registry import Registry

SELECTORS = Registry("selector")


class Selector:
    """Base of client selectors.

    Subclasses implement :meth:`select`; selectors that need to know the clients' data override
    :meth:`prepare`, which the runner calls once before the first round.
    """

    def prepare(self, client_label_counts: np.ndarray) -> None:
        """Receive the (K, N) label counts of every client's local data (no-op by default)."""

    def select(self, n_clients: int, n_selected: int, rng: np.random.Generator) -> np.ndarray:
        """Pick ``n_selected`` distinct client indices, sorted, int64, shape (n_selected,)."""
        raise NotImplementedError


@SELECTORS.register("uniform")
class UniformSelection(Selector):
    """Uniform random selection without replacement, as in SCALA (Algorithm 1, line 5)."""

    def select(self, n_clients: int, n_selected: int, rng: np.random.Generator) -> np.ndarray:
        if not 1 <= n_selected <= n_clients:
            raise ValueError(f"n_selected={n_selected} must be in [1, n_clients={n_clients}]")
        return np.sort(rng.choice(n_clients, size=n_selected, replace=False)).astype(np.int64)


def cohort_size(n_clients: int, participation: float) -> int:
    """Number of clients per round: ``round(participation * n_clients)``, at least 1."""
    return max(1, int(round(participation * n_clients)))
