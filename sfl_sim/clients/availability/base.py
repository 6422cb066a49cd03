"""The availability kind itself: its protocol and its registry (imported by the models and the
conformance check, so that neither needs the package's ``__init__``)."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from sfl_sim.kit.registry import Registry

__all__ = ["AVAILABILITY", "Availability"]


@runtime_checkable
class Availability(Protocol):
    """What every availability model offers.

    A model's answers must depend only on the ``rng`` given to :meth:`prepare` and on the client
    and time asked, never on which questions came before: a resumed run prepares the model afresh
    from the same seed and asks only about times after the checkpoint, and must get the answers
    the uninterrupted run got (nothing of the model is checkpointed).
    """

    def prepare(self, n_clients: int, rng: np.random.Generator) -> None:
        """Fix the model for ``n_clients`` simulated clients; every random draw comes from ``rng``."""

    def online(self, clients: np.ndarray, t_s: float) -> np.ndarray:
        """A bool per entry of ``clients`` (client indices): online at simulated time ``t_s``."""

    def next_change_s(self, client: int, t_s: float) -> float:
        """The first simulated time > ``t_s`` at which ``client``'s state differs from its state at
        ``t_s``; ``inf`` when it never changes."""


AVAILABILITY = Registry("availability", protocol=Availability)
