"""Decibel and power unit conversions (array-friendly; scalars in give numpy scalars out)."""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["db_to_linear", "linear_to_db", "linear_to_db_unchecked", "dbm_to_w", "w_to_dbm"]


def db_to_linear(value_db: Any) -> np.ndarray:
    """Convert a power ratio in dB to linear scale.

    Parameters
    ----------
    value_db : float or array_like
        Ratio in dB, any shape.

    Returns
    -------
    numpy.ndarray or numpy.float64
        ``10 ** (value_db / 10)``, same shape as the input.
    """
    return np.power(10.0, np.asarray(value_db, dtype=float) / 10.0)


def linear_to_db(value_linear: Any) -> np.ndarray:
    """Convert a linear power ratio to dB.

    Parameters
    ----------
    value_linear : float or array_like
        Ratio >= 0, any shape; 0 maps to ``-inf`` dB.

    Returns
    -------
    numpy.ndarray or numpy.float64
        ``10 log10(value_linear)``, same shape as the input.

    Raises
    ------
    ValueError
        If any entry is negative or NaN (no dB value exists).
    """
    arr = np.asarray(value_linear, dtype=float)
    if np.any(~(arr >= 0)):
        raise ValueError(f"value_linear must be >= 0 to convert to dB, got {value_linear!r}")
    # log10(0) = -inf is the right answer for a zero power; silence numpy's warning about it.
    with np.errstate(divide="ignore"):
        return 10.0 * np.log10(arr)


def linear_to_db_unchecked(value_linear: np.ndarray) -> np.ndarray:
    """:func:`linear_to_db` of a float array without its check (a negative entry gives nan, not an
    error): the same numbers, for a hot path whose caller checks the result (a link budget's SNR
    at every transfer's start)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 10.0 * np.log10(value_linear)


def dbm_to_w(power_dbm: Any) -> np.ndarray:
    """Convert power in dBm to watts.

    Parameters
    ----------
    power_dbm : float or array_like
        Power in dBm (also works for densities: dBm/Hz -> W/Hz), any shape.

    Returns
    -------
    numpy.ndarray or numpy.float64
        ``10 ** ((power_dbm - 30) / 10)`` W, same shape as the input.
    """
    return np.power(10.0, (np.asarray(power_dbm, dtype=float) - 30.0) / 10.0)


def w_to_dbm(power_w: Any) -> np.ndarray:
    """Convert power in watts to dBm.

    Parameters
    ----------
    power_w : float or array_like
        Power >= 0 in W, any shape; 0 W maps to ``-inf`` dBm.

    Returns
    -------
    numpy.ndarray or numpy.float64
        ``10 log10(power_w) + 30`` dBm, same shape as the input.

    Raises
    ------
    ValueError
        If any entry is negative or NaN.
    """
    arr = np.asarray(power_w, dtype=float)
    if np.any(~(arr >= 0)):
        raise ValueError(f"power_w must be >= 0 to convert to dBm, got {power_w!r}")
    with np.errstate(divide="ignore"):
        return 10.0 * np.log10(arr) + 30.0
