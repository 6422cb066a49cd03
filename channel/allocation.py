"""Bandwidth allocation among the clients that transmit in the same phase.

An allocator is any object with
``allocate_hz(total_bandwidth_hz, payload_bits, gain_linear) -> ndarray (n,)`` returning
non-negative shares that sum to at most ``total_bandwidth_hz``; register new ones in
:data:`ALLOCATORS`.  The payload and gains are part of the signature so that allocators that
use them (proportional to payload, finish-time equalizing) share the interface.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ._checks import check_scalar
from .registry import Registry

__all__ = ["ALLOCATORS", "EqualAllocation"]

ALLOCATORS = Registry("allocation")


@ALLOCATORS.register("equal")
class EqualAllocation:
    """Every active client gets ``total_bandwidth_hz / n``."""

    def __repr__(self) -> str:
        return "EqualAllocation()"

    def allocate_hz(
        self, total_bandwidth_hz: float, payload_bits: Optional[Any], gain_linear: Any
    ) -> np.ndarray:
        """Split the band equally.

        Parameters
        ----------
        total_bandwidth_hz : float
            Band to share in Hz, >= 0.
        payload_bits : array_like, shape (n,), or None
            Bits each client must send; ignored here.
        gain_linear : array_like, shape (n,)
            Linear channel gain of each client; only its length (the number of clients) is used.

        Returns
        -------
        numpy.ndarray, shape (n,)
            Bandwidth per client in Hz (empty when n == 0).

        Raises
        ------
        ValueError
            If ``total_bandwidth_hz`` is negative or non-finite.
        """
        total = check_scalar("total_bandwidth_hz", total_bandwidth_hz, minimum=0.0)
        n = np.asarray(gain_linear).size
        if n == 0:
            return np.zeros(0)
        return np.full(n, total / n)
