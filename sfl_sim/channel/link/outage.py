"""Outage: does a transmission at the achieved rate (or SNR) fail, and what happens then.

:class:`OutagePolicy` is plain data plus pure decisions; the engine owns the clock.  A
transmission is in outage when its achieved rate is below ``min_rate_bps`` or (if set) its SNR is
below ``min_snr_db`` (and always at rate 0: a link abstraction found no usable MCS).  After an
outage the engine either drops the payload at once (``on_outage="drop"``, the default, one
attempt) or retransmits it after a fresh fading draw (``on_outage="retransmit"``, at most
``max_attempts >= 2`` attempts in all, then drops it).  The two names say what happens:
``retransmit`` with one attempt (which would drop at once) and ``drop`` with more than one (which
would never use them) are refused (:func:`outage_rule_problem`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sfl_sim.kit.checks import check_scalar

__all__ = ["OutagePolicy", "DELIVER", "RETRANSMIT", "DROP", "outage_rule_problem"]

DELIVER = "deliver"
RETRANSMIT = "retransmit"
DROP = "drop"
_ON_OUTAGE = (DROP, RETRANSMIT)


def outage_rule_problem(on_outage: str, max_attempts: int) -> tuple[str, str] | None:
    """Why ``on_outage`` with ``max_attempts`` does not say what happens, or None when it does.

    Returns
    -------
    (str, str) or None
        The field at fault (``"on_outage"`` or ``"max_attempts"``) and what is allowed, for a
        one-line refusal: ``retransmit`` with one attempt drops at the first outage (write
        ``drop``); ``drop`` with more than one attempt never retransmits (write ``retransmit``).
    """
    if on_outage == RETRANSMIT and max_attempts == 1:
        return ("on_outage", "drop (what one attempt does: the payload is dropped at its first outage), or "
                             "retransmit with max_attempts >= 2 (attempts in all)")
    if on_outage == DROP and max_attempts != 1:
        return ("max_attempts", f"1 with on_outage: drop (it never retransmits), or on_outage: retransmit to "
                                f"retransmit up to {max_attempts} attempts in all")
    return None


@dataclass(frozen=True)
class OutagePolicy:
    """When a transmission fails, and what follows.

    Parameters
    ----------
    min_rate_bps : float, default 0.0
        A transmission whose achieved rate is below this (bit/s, >= 0) is in outage.  0 with no
        ``min_snr_db`` means no outage ever.
    min_snr_db : float or None, default None
        Optional SNR threshold in dB (finite); below it, outage.
    max_attempts : int, default 1
        Attempts in all per transmission: 1 with ``drop``, >= 2 with ``retransmit``.
    on_outage : {"drop", "retransmit"}, default "drop"
        What an outage leads to: the payload is dropped, or retransmitted while attempts remain
        (after the last attempt it is dropped).

    Raises
    ------
    ValueError
        For a parameter out of range.
    """

    min_rate_bps: float = 0.0
    min_snr_db: float | None = None
    max_attempts: int = 1
    on_outage: str = DROP

    def __post_init__(self) -> None:
        object.__setattr__(self, "min_rate_bps", check_scalar("min_rate_bps", self.min_rate_bps, minimum=0.0))
        if self.min_snr_db is not None:
            object.__setattr__(self, "min_snr_db", check_scalar("min_snr_db", self.min_snr_db, minimum=-math.inf))
        attempts = self.max_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ValueError(f"max_attempts must be an integer >= 1, got {attempts!r}")
        if self.on_outage not in _ON_OUTAGE:
            raise ValueError(f"on_outage must be one of {', '.join(_ON_OUTAGE)}, got {self.on_outage!r}")
        problem = outage_rule_problem(self.on_outage, attempts)
        if problem is not None:
            field, allowed = problem
            raise ValueError(f"{field}: got {getattr(self, field)!r} (on_outage={self.on_outage!r}, "
                             f"max_attempts={attempts!r}); allowed: {allowed}")

    @property
    def active(self) -> bool:
        """False when no transmission can ever be in outage (the engine may skip the checks)."""
        return self.min_rate_bps > 0.0 or self.min_snr_db is not None

    def is_outage(self, rate_bps: Any, snr_db: Any = None) -> np.ndarray:
        """Which transmissions fail.

        Parameters
        ----------
        rate_bps : float or array_like, shape (k,)
            Achieved rates in bit/s, >= 0.
        snr_db : float or array_like, shape (k,), optional
            SNRs in dB (``-inf`` allowed); required when ``min_snr_db`` is set.

        Returns
        -------
        numpy.ndarray of bool, shape of ``rate_bps``
            True = outage.

        Raises
        ------
        ValueError
            If a rate is negative or NaN, or ``snr_db`` is missing while ``min_snr_db`` is set.
        """
        rate = np.asarray(rate_bps, dtype=float)
        if np.any(~(rate >= 0)):
            raise ValueError(f"rate_bps must be >= 0 everywhere, got {rate_bps!r}")
        out = rate < self.min_rate_bps
        if self.min_snr_db is not None:
            if snr_db is None:
                raise ValueError(f"snr_db must be given when min_snr_db is set ({self.min_snr_db!r} dB), got None")
            snr = np.asarray(snr_db, dtype=float)
            if np.any(np.isnan(snr)):
                raise ValueError(f"snr_db must not be NaN, got {snr_db!r}")
            out = out | (snr < self.min_snr_db)
        return out

    def next_action(self, outage: Any, attempt: int) -> np.ndarray:
        """What follows an attempt.

        Parameters
        ----------
        outage : bool or array_like of bool, shape (k,)
            Result of :meth:`is_outage` for attempt number ``attempt``.
        attempt : int
            Which attempt just ended, 1-based (1 = first transmission).

        Returns
        -------
        numpy.ndarray of str, shape of ``outage``
            ``"deliver"`` (no outage), ``"retransmit"`` (outage, attempts left, policy
            retransmits) or ``"drop"``.
        """
        if isinstance(attempt, bool) or not isinstance(attempt, (int, np.integer)) or attempt < 1:
            raise ValueError(f"attempt must be an integer >= 1, got {attempt!r}")
        failed = np.asarray(outage, dtype=bool)
        retry = self.on_outage == RETRANSMIT and attempt < self.max_attempts
        action = np.where(failed, RETRANSMIT if retry else DROP, DELIVER)
        return action.astype(object)
