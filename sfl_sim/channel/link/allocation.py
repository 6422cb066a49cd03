"""Bandwidth allocation among the clients that transmit in the same phase.

An allocator is any object with
``allocate_hz(total_bandwidth_hz, payload_bits, gain_linear) -> ndarray (n,)`` returning
non-negative shares that sum to at most ``total_bandwidth_hz``; register new ones in
:data:`ALLOCATORS`.  The payload and gains are part of the signature so that allocators that
use them (proportional to payload, finish-time equalizing) share the interface.

An allocator that needs the whole link (power, noise, rate model) declares a keyword parameter
``rate_of``: the :class:`~sfl_sim.channel.Cell` then calls
``allocate_hz(total_bandwidth_hz, payload_bits, gain_linear, rate_of=rate_of)`` where
``rate_of(bandwidth_hz: ndarray (n,)) -> ndarray (n,)`` is client k's rate in bit/s on
``bandwidth_hz[k]`` (the cell's rate model with the client's power, gain — fading included —
and the noise PSD).  Allocators without that parameter get the three positional arguments only.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

import numpy as np
import scipy.optimize

from sfl_sim.channel.protocols import Allocator
from sfl_sim.kit.checks import check_array, check_scalar
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel
from sfl_sim.kit.ranges import Range
from sfl_sim.kit.registry import Registry

__all__ = [
    "ALLOCATORS",
    "EqualAllocation",
    "ProportionalPayloadAllocation",
    "EqualFinishTimeAllocation",
    "accepts_rate_of",
]


def accepts_rate_of(allocator: Any) -> bool:
    """True when ``allocator.allocate_hz`` declares a ``rate_of`` parameter (or ``**kwargs``)."""
    try:
        params = inspect.signature(allocator.allocate_hz).parameters
    except (TypeError, ValueError):
        return False
    return "rate_of" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _payload(payload_bits: Any, n: int) -> np.ndarray | None:
    """Per-client payload array, or None when none is given."""
    if payload_bits is None:
        return None
    arr = check_array("payload_bits", payload_bits, minimum=0.0)
    if arr.ndim == 0:
        return np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValueError(f"payload_bits must be a scalar or have shape ({n},) (one per client), got shape {arr.shape}")
    return arr

ALLOCATORS = Registry("allocation", protocol=Allocator)
#: The bisection's relative tolerance on finish times and bandwidths.
RELATIVE_TOLERANCE = Range(0.0, float("inf"), "> 0 (the bisection stops within it)", low_open=True)


@ALLOCATORS.register("equal")
class EqualAllocation(Component):
    """Every active client gets ``total_bandwidth_hz / n``."""

    def allocate_hz(
        self, total_bandwidth_hz: float, payload_bits: Any | None, gain_linear: Any
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


@ALLOCATORS.register("proportional_payload")
class ProportionalPayloadAllocation(Component):
    """Share proportional to the payload: ``b_k = B p_k / sum(p)``.

    Without payloads (``payload_bits`` None) or when they are all 0, the band is split equally.
    """

    def allocate_hz(self, total_bandwidth_hz: float, payload_bits: Any | None, gain_linear: Any) -> np.ndarray:
        """Split the band in proportion to the payloads.

        Parameters
        ----------
        total_bandwidth_hz : float
            Band to share in Hz, >= 0.
        payload_bits : float or array_like, shape (n,), or None
            Bits each client must send, >= 0.
        gain_linear : array_like, shape (n,)
            Linear gains; only the count is used.

        Returns
        -------
        numpy.ndarray, shape (n,)
            Bandwidth per client in Hz, summing to ``total_bandwidth_hz``.
        """
        total = check_scalar("total_bandwidth_hz", total_bandwidth_hz, minimum=0.0)
        n = np.asarray(gain_linear).size
        if n == 0:
            return np.zeros(0)
        payload = _payload(payload_bits, n)
        if payload is None or payload.sum() <= 0:
            return np.full(n, total / n)
        return total * payload / payload.sum()


@ALLOCATORS.register("equal_finish_time")
class EqualFinishTimeAllocation(Component):
    """The split of the whole band under which every client finishes at the same time.

    Finds ``T`` and ``b_k`` with ``payload_k / rate_k(b_k) = T`` for every client with a payload
    and ``sum_k b_k = B``: the outer problem is solved by :func:`scipy.optimize.brentq` on ``T``,
    the inner inversion ``rate_k(b) = payload_k / T`` by a vectorized bisection on ``b`` (each
    ``rate_k`` is non-decreasing in ``b``).  This minimises the time the last client finishes.

    Needs the link: the Cell passes ``rate_of`` (see the module docstring).  Without payloads
    (``payload_bits`` None, as the engine calls it when it does not know them), all payloads are
    taken equal, which equalises the clients' rates (max-min fair rates).  Clients with a zero
    payload get 0 Hz; clients that cannot send at any bandwidth (rate 0 on the whole band) get
    0 Hz and the others share the band.
    """

    class Params(ParamsModel):
        rtol: Annotated[float, RELATIVE_TOLERANCE, Doc(
            "Relative tolerance on the finish time and the bandwidths, > 0.")] = 1e-9

    params: Params

    def allocate_hz(
        self,
        total_bandwidth_hz: float,
        payload_bits: Any | None,
        gain_linear: Any,
        rate_of: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> np.ndarray:
        """Equalise the finish times.

        Parameters
        ----------
        total_bandwidth_hz : float
            Band to share in Hz, >= 0.
        payload_bits : float or array_like, shape (n,), or None
            Bits each client must send, >= 0 (None: equal payloads).
        gain_linear : array_like, shape (n,)
            Linear gains (the count is used; the gains enter through ``rate_of``).
        rate_of : callable
            ``rate_of(bandwidth_hz (n,)) -> rate_bps (n,)``, elementwise, non-decreasing.

        Returns
        -------
        numpy.ndarray, shape (n,)
            Bandwidth per client in Hz, summing to ``total_bandwidth_hz`` (within ``rtol``).

        Raises
        ------
        ValueError
            If ``rate_of`` is missing.
        """
        total = check_scalar("total_bandwidth_hz", total_bandwidth_hz, minimum=0.0)
        n = np.asarray(gain_linear).size
        if n == 0:
            return np.zeros(0)
        if rate_of is None:
            raise ValueError(
                "rate_of must be given to equal_finish_time (a callable bandwidth_hz -> rate_bps per client, "
                "which Cell passes), got None"
            )
        payload = _payload(payload_bits, n)
        if payload is None:
            payload = np.ones(n)
        if total == 0.0:
            return np.zeros(n)
        full = np.asarray(rate_of(np.full(n, total)), dtype=float)
        live = (payload > 0) & (full > 0)
        shares = np.zeros(n)
        if not live.any():
            # Nobody can (or needs to) send: the split does not matter; keep the band equal.
            return np.full(n, total / n)
        idx = np.flatnonzero(live)

        def rate_live(b_live: np.ndarray) -> np.ndarray:
            b = np.zeros(n)
            b[idx] = b_live
            return np.asarray(rate_of(b), dtype=float)[idx]

        p = payload[idx]
        # At T_lo the slowest client needs the whole band; at T_hi (the equal split's finish time
        # of the slowest client) everyone fits in an equal share.
        t_lo = float(np.max(p / full[idx]))
        equal_rate = rate_live(np.full(idx.size, total / idx.size))
        t_hi = float(np.max(p / equal_rate))
        if idx.size == 1:
            shares[idx] = total
            return shares

        def excess_hz(t: float) -> float:
            return float(self._bandwidth_for(rate_live, p / t, total).sum() - total)

        f_lo, f_hi = excess_hz(t_lo), excess_hz(t_hi)
        if f_hi >= 0.0:  # the equal split already equalises (identical clients)
            t_star = t_hi
        elif f_lo <= 0.0:
            t_star = t_lo
        else:
            t_star = scipy.optimize.brentq(excess_hz, t_lo, t_hi, rtol=self.params.rtol)
        b = self._bandwidth_for(rate_live, p / t_star, total)
        # Hand out the rounding remainder in proportion, so the whole band is used exactly.
        shares[idx] = b * (total / b.sum())
        return shares

    def _bandwidth_for(self, rate_live: Callable, target_bps: np.ndarray, total: float) -> np.ndarray:
        """Smallest b in [0, total] with rate(b) >= target, per client (vectorized bisection)."""
        lo = np.zeros(target_bps.size)
        hi = np.full(target_bps.size, total)
        # 2^-60 of the band is far below any tolerance that matters.
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            enough = rate_live(mid) >= target_bps
            hi = np.where(enough, mid, hi)
            lo = np.where(enough, lo, mid)
            if np.all(hi - lo <= self.params.rtol * total * 1e-3):
                break
        return hi
