"""What a data set and a partitioner must offer, as :class:`typing.Protocol` s.

Each registry carries its protocol, so a ``module:Class`` that lacks a method is refused with one
line naming the field and the missing method before any work (``Registry.get``/``build``).
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["DatasetLoader", "PartitionerProtocol"]


@runtime_checkable
class DatasetLoader(Protocol):
    """A data set: its constructor takes the scenario's parameters, ``load`` reads the files."""

    def load(self) -> Any:
        """Return an :class:`sfl_sim.data.ArrayDataset` (never download)."""



@runtime_checkable
class PartitionerProtocol(Protocol):
    """Splits the training set among the clients (see :class:`sfl_sim.data.Partitioner`)."""

    def split(self, labels: np.ndarray, n_clients: int, num_classes: int,
              rng: np.random.Generator) -> list[np.ndarray]:
        """K disjoint, non-empty int64 index arrays, one per client, every draw from ``rng``."""
