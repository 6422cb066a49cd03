"""Checks of what the channel's components produce and of saved cell states, shared by the
large-scale model (:mod:`sfl_sim.channel.large_scale.model`), the link budget
(:mod:`sfl_sim.channel.link.budget`) and the :class:`~sfl_sim.channel.cell.Cell`: every value a
component gives must be finite (a ``ValueError`` names the component and the quantity otherwise),
and a saved state must be plain data whose streams fit the cell's generators.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from sfl_sim.kit.checks import all_finite_at_least

__all__ = ["check_finite", "plain_data", "checked_rng_state"]


def check_finite(values: Any, who: str, quantity: str, minimum: float | None = None,
                 where: np.ndarray | None = None) -> None:
    """Raise ``ValueError`` naming ``who`` and ``quantity`` when a value is nan/inf (or below ``minimum``).

    Parameters
    ----------
    values : array_like
        What the component gave.
    who : str
        The component, as the message names it (``"pathloss TR36814Macro()"``).
    quantity : str
        What the values are, with their unit (``"path loss (dB)"``).
    minimum : float, optional
        The smallest allowed value.
    where : numpy.ndarray of bool, optional
        Only these entries are checked (broadcast against ``values``).

    Raises
    ------
    ValueError
        ``"{who} gave a {quantity} that is not finite: {value} (client index {k})"``.
    """
    values = np.asarray(values, dtype=float)
    if all_finite_at_least(values, minimum):  # nothing bad anywhere: nothing bad where it is checked
        return
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) if minimum is None else ~(np.isfinite(values) & (values >= minimum))
    if where is not None:
        bad = bad & np.broadcast_to(where, bad.shape)
    if np.any(bad):
        idx = np.argwhere(bad)[0]
        at = f" (client index {int(idx[0])})" if values.ndim else ""
        rel = "finite" if minimum is None else f"finite and >= {minimum:g}"
        raise ValueError(f"{who} gave a {quantity} that is not {rel}: {float(values[tuple(idx)])!r}{at}")


def plain_data(value: Any, what: str) -> Any:
    """A deep copy of ``value`` made of numpy arrays, Python scalars, strings, None, dicts and
    lists/tuples only (numpy scalars become Python scalars; array-likes such as tensors become
    numpy arrays).

    Raises
    ------
    ValueError
        Naming ``what`` (and the key or index inside it) for anything else.
    """
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise ValueError(f"{what} must hold plain data, got an object array")
        return value.copy()
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{what} must have string keys, got {key!r}")
            out[key] = plain_data(item, f"{what}[{key!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return type(value)(plain_data(item, f"{what}[{i}]") for i, item in enumerate(value))
    if hasattr(value, "__array__"):
        return plain_data(np.array(value), what)
    raise ValueError(
        f"{what} must hold only numpy arrays, numbers, strings, None and dicts/lists, got a {type(value).__name__}"
    )


def checked_rng_state(state: dict[str, Any], key: str, rng: np.random.Generator) -> dict[str, Any]:
    """``state[key]`` of a saved cell state as a state of ``rng``'s bit generator, tried on a
    scratch generator (``rng`` is not touched).

    Raises
    ------
    ValueError
        ``"Cell state[key] is not a PCG64 state (...)"``.
    """
    scratch = type(rng.bit_generator)()
    try:
        scratch.state = copy.deepcopy(state[key])
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"Cell state[{key!r}] is not a {type(rng.bit_generator).__name__} state ({exc})") from None
    return dict(scratch.state)
