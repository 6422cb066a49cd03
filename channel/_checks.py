"""Shared parameter checks: every failure names the parameter, the value and what is allowed."""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np


def check_count(name: str, value: Any) -> int:
    """Return ``value`` as an ``int`` >= 0, else raise ``ValueError``."""
    # bool is an Integral in Python; a True client count is always a bug upstream.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def check_scalar(name: str, value: Any, *, minimum: float = 0.0, strict: bool = False) -> float:
    """Return ``value`` as a finite float >= ``minimum`` (> when ``strict``), else raise."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        value_f = float(value)
        ok = math.isfinite(value_f) and (value_f > minimum if strict else value_f >= minimum)
    if not ok:
        rel = ">" if strict else ">="
        raise ValueError(f"{name} must be a finite number {rel} {minimum:g}, got {value!r}")
    return value_f


def check_array(name: str, value: Any, *, minimum: float = 0.0, strict: bool = False) -> np.ndarray:
    """Return ``value`` as a float array whose entries are finite and >= ``minimum`` (> if strict)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric, got {value!r}") from exc
    bad = ~np.isfinite(arr) | ((arr <= minimum) if strict else (arr < minimum))
    if np.any(bad):
        rel = ">" if strict else ">="
        first = arr[bad].flat[0]
        raise ValueError(f"{name} must be finite and {rel} {minimum:g} everywhere, got {first!r} in {value!r}")
    return arr


def readonly(arr: np.ndarray) -> np.ndarray:
    """A read-only copy, so callers cannot corrupt state shared between phases."""
    out = np.array(arr, dtype=float, copy=True)
    out.flags.writeable = False
    return out


def check_state_keys(owner: str, state: Any, keys: Any) -> None:
    """Refuse a saved state that is not a dict with exactly ``keys`` (names what differs)."""
    if not isinstance(state, dict):
        raise ValueError(f"{owner} state must be a dict, got {type(state).__name__}")
    expected = set(keys)
    missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
    if missing or extra:
        raise ValueError(
            f"{owner} state must have keys {sorted(expected)}; missing {missing}, unexpected {extra}"
        )


def state_array(owner: str, state: Any, key: str, shape: tuple, dtype: Any = float) -> np.ndarray:
    """``state[key]`` as a fresh array of ``shape`` (finite when float), else ``ValueError``.

    Accepts any array-like (a numpy array, a list, a CPU tensor), so a state that went through a
    checkpoint as tensors loads as well.
    """
    try:
        arr = np.array(state[key], dtype=dtype, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{owner} state[{key!r}] must be a numeric array of shape {shape}, got {state[key]!r}") from exc
    if arr.shape != tuple(shape):
        raise ValueError(f"{owner} state[{key!r}] must have shape {tuple(shape)}, got shape {arr.shape}")
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
        raise ValueError(f"{owner} state[{key!r}] must be finite, got {arr!r}")
    return arr
