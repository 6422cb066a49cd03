"""The project's one family of value checks: every failure is one line in one format,

    ``NAME: got VALUE; allowed: WHAT``

the format of scenario errors too (``sfl_sim.config``), so a bad parameter reads the same whether
the scenario validator, a channel component or an algorithm's constructor caught it.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["invalid", "one_line", "check_int", "check_count", "check_real", "check_scalar", "check_nonnegative",
           "check_positive", "check_array", "check_choice", "check_bool", "readonly", "check_state_keys",
           "state_array", "all_finite_at_least"]


def invalid(name: str, value: Any, allowed: str) -> ValueError:
    """The error for ``name`` given ``value`` when ``allowed`` describes what is accepted."""
    return ValueError(f"{name}: got {value!r}; allowed: {allowed}")


def one_line(exc: BaseException, with_type: bool = False) -> str:
    """An exception's message on one line (runs of whitespace, newlines included, as one space).

    Parameters
    ----------
    exc : BaseException
    with_type : bool
        Prefix the exception's type name (``ValueError: message``).

    Returns
    -------
    str
        The message; the type name alone when the message is empty.
    """
    message = " ".join(str(exc).split())
    name = type(exc).__name__
    if not message:
        return name
    return f"{name}: {message}" if with_type else message


def _bounds(word: str, minimum: float | None, maximum: float | None, strict: bool) -> str:
    parts = []
    if minimum is not None:
        parts.append(f"{'>' if strict else '>='} {minimum:g}")
    if maximum is not None:
        parts.append(f"<= {maximum:g}")
    return f"{word} {' and '.join(parts)}" if parts else word


def check_int(name: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an ``int`` within ``[minimum, maximum]`` (bools refused), else ``ValueError``."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    ok = ok and (minimum is None or value >= minimum) and (maximum is None or value <= maximum)
    if not ok:
        raise invalid(name, value, _bounds("an integer", minimum, maximum, strict=False))
    return int(value)


def check_count(name: str, value: Any) -> int:
    """``value`` as an ``int`` >= 0 (a count), else ``ValueError``."""
    # bool is an Integral in Python; a True client count is always a bug upstream.
    return check_int(name, value, minimum=0)


def check_real(name: str, value: Any, minimum: float | None = None, maximum: float | None = None,
               strict: bool = False) -> float:
    """``value`` as a finite float, ``>= minimum`` (``>`` when ``strict``) and ``<= maximum``."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        v = float(value)
        ok = math.isfinite(v) and (minimum is None or (v > minimum if strict else v >= minimum)) \
            and (maximum is None or v <= maximum)
    if not ok:
        raise invalid(name, value, _bounds("a finite number", minimum, maximum, strict))
    return float(value)


def check_scalar(name: str, value: Any, *, minimum: float = 0.0, strict: bool = False) -> float:
    """``value`` as a finite float >= ``minimum`` (> when ``strict``), else ``ValueError``."""
    return check_real(name, value, minimum=minimum, strict=strict)


def check_nonnegative(name: str, value: Any) -> float:
    """``value`` as a finite float >= 0 (a weight, a coefficient), else ``ValueError``."""
    return check_real(name, value, minimum=0.0)


def check_positive(name: str, value: Any) -> float:
    """``value`` as a finite float > 0, else ``ValueError``."""
    return check_real(name, value, minimum=0.0, strict=True)


def check_choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    """``value`` if it is one of ``allowed``, else ``ValueError`` listing them."""
    if not isinstance(value, str) or value not in allowed:
        raise invalid(name, value, "one of " + ", ".join(allowed))
    return value


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool (not 0/1), else ``ValueError``."""
    if not isinstance(value, bool):
        raise invalid(name, value, "true or false")
    return value


def all_finite_at_least(arr: np.ndarray, minimum: float | None = None, *, strict: bool = False) -> bool:
    """True when ``arr`` is non-empty and every entry is finite and >= ``minimum`` (> if strict;
    None: no bound), in two reductions: the common case of a check, asked every slot by the link
    budgets.  False says only that the elementwise check must look (an empty array included)."""
    if not arr.size:
        return False
    low, high = float(arr.min()), float(arr.max())  # a NaN anywhere makes both NaN
    return math.isfinite(low) and math.isfinite(high) and (
        minimum is None or (low > minimum if strict else low >= minimum))


def check_array(name: str, value: Any, *, minimum: float = 0.0, strict: bool = False) -> np.ndarray:
    """``value`` as a float array whose entries are finite and >= ``minimum`` (> if strict)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise invalid(name, value, "numbers") from None
    if all_finite_at_least(arr, minimum, strict=strict):
        return arr
    bad = ~np.isfinite(arr) | ((arr <= minimum) if strict else (arr < minimum))
    if np.any(bad):
        raise invalid(name, float(arr[bad].flat[0]), _bounds("finite numbers", minimum, None, strict) + " everywhere")
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
        raise ValueError(
            f"{owner} state[{key!r}] must be a numeric array of shape {shape}, got {state[key]!r}") from exc
    if arr.shape != tuple(shape):
        raise ValueError(f"{owner} state[{key!r}] must have shape {tuple(shape)}, got shape {arr.shape}")
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
        raise ValueError(f"{owner} state[{key!r}] must be finite, got {arr!r}")
    return arr
