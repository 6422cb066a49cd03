"""An interval of physically meaningful values with a reason, and the one-line error for a value outside it.

A :class:`Range` is a bound that carries its own explanation, so the error names the field, the
value, the interval and why (``cell.uplink_bandwidth_hz must be a finite number in [1, 1e+12] Hz,
got 1e-300 (1 Hz is narrower than any radio channel; ...)``).  The radio ranges are in
:mod:`sfl_sim.channel.limits`.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Range"]


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:g}"


@dataclass(frozen=True)
class Range:
    """An interval of physically meaningful values of one quantity.

    Parameters
    ----------
    low, high : float
        Bounds, in the quantity's unit; ``high`` may be ``inf``.
    reason : str
        One line saying why these bounds (shown in error messages).
    unit : str, default ""
        Unit symbol for messages (``"Hz"``, ``"W"``...).
    low_open : bool, default False
        True when ``low`` itself is excluded (``(0, ...]``).

    Notes
    -----
    Non-finite values (nan, +-inf) are always refused, whatever the bounds.
    """

    low: float
    high: float
    reason: str
    unit: str = ""
    low_open: bool = False

    def __str__(self) -> str:
        left = "(" if self.low_open else "["
        unit = f" {self.unit}" if self.unit else ""
        return f"{left}{_fmt(self.low)}, {_fmt(self.high)}]{unit}"

    def contains(self, value: float) -> bool:
        """True when ``value`` is a finite number inside the range."""
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def message(self, name: str, value: Any) -> str:
        """The one-line error for ``name`` = ``value`` outside the range."""
        return f"{name} must be a finite number in {self}, got {value!r} ({self.reason})"

    def check(self, name: str, value: Any) -> float:
        """Return ``value`` as a float, or raise naming ``name``, the value and the range.

        Parameters
        ----------
        name : str
            The parameter as the user wrote it (e.g. ``"cell.uplink_bandwidth_hz"``).
        value : object
            A real number (bools are refused).

        Returns
        -------
        float

        Raises
        ------
        ValueError
            If ``value`` is not a real number, is non-finite, or lies outside the range.
        """
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not self.contains(float(value)):
            raise ValueError(self.message(name, value))
        return float(value)

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        """``Annotated[float, RANGE]`` in a parameter model: a finite number inside the range (an
        ``int`` annotation stays an integer, a count); pydantic calls this when it builds the model."""
        return self._bound(handler(source))

    def _bound(self, schema: Any) -> Any:
        """``schema`` with the numbers in it bounded: a float or int schema itself, and the numbers
        inside an optional (``float | None``: pydantic's ``nullable``) or a union (``float | str``),
        as pydantic's own ``Field(ge=...)`` does; other members (None, a keyword) stay as they are."""
        kind = schema.get("type")
        if kind in ("float", "int"):
            schema = dict(schema)
            schema["gt" if self.low_open else "ge"] = self.low
            if self.high != float("inf"):
                schema["le"] = self.high
            if kind == "float":
                schema["allow_inf_nan"] = False
            return schema
        if kind == "nullable":
            return {**schema, "schema": self._bound(schema["schema"])}
        if kind == "union":  # a choice is a schema or (schema, label)
            return {**schema, "choices": [(self._bound(c[0]), c[1]) if isinstance(c, tuple) else self._bound(c)
                                          for c in schema["choices"]]}
        return schema

    def check_array(self, name: str, value: Any) -> np.ndarray:
        """Return ``value`` as a float array whose every entry lies in the range, else raise.

        The message names the first offending entry and its index.
        """
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be numeric, got {value!r}") from exc
        with np.errstate(invalid="ignore"):
            above = arr > self.low if self.low_open else arr >= self.low
            ok = np.isfinite(arr) & above & (arr <= self.high)
        if not np.all(ok):
            bad = np.argwhere(~ok)[0]
            where = f"{name}[{', '.join(str(int(i)) for i in bad)}]" if arr.ndim else name
            raise ValueError(self.message(where, float(arr[tuple(bad)])))
        return arr
