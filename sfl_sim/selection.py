"""Client selection: which clients take part in a round."""
from __future__ import annotations

import numpy as np

from channel.registry import Registry

SELECTORS = Registry("selector")


@SELECTORS.register("uniform")
class UniformSelection:
    """Uniform random selection without replacement, as in SCALA (Algorithm 1, line 5)."""

    def select(self, n_clients: int, n_selected: int, rng: np.random.Generator) -> np.ndarray:
        """Pick ``n_selected`` distinct client indices, returned sorted (int64, shape (n_selected,))."""
        if not 1 <= n_selected <= n_clients:
            raise ValueError(f"n_selected={n_selected} must be in [1, n_clients={n_clients}]")
        return np.sort(rng.choice(n_clients, size=n_selected, replace=False)).astype(np.int64)


def cohort_size(n_clients: int, participation: float) -> int:
    """Number of clients per round: ``round(participation * n_clients)``, at least 1."""
    return max(1, int(round(participation * n_clients)))
