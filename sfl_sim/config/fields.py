"""Field types of the scenario models: bounds, allowed values and their human descriptions, once.

A field's type carries what an error message says is allowed.  :class:`Allowed` is that text;
:class:`Number` and :class:`Integer` are bounds that write their own text (``a number > 0 in the
range [1, 1e+12] (Hz, ...)``) and give pydantic the same bounds, so the check and its
description cannot drift apart; :class:`OneOf` describes a :data:`typing.Literal` of
:mod:`sfl_sim.config.choices`.  Each is ordinary ``Annotated`` metadata, so a type checker reads the
field as the plain ``int``/``float``/``Literal`` it is.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import annotated_types
from pydantic import AllowInfNan, BaseModel, ConfigDict

from sfl_sim.channel import limits
from sfl_sim.clients import limits as clients_limits
from sfl_sim.config.choices import allowed
from sfl_sim.kit.ranges import Range

__all__ = ["Allowed", "Bounds", "Number", "Integer", "OneOf", "Section", "PositiveInt", "NonNegativeInt",
           "PositiveFloat", "Fraction", "BandwidthHz", "ClientPowerW", "ServerPowerW", "NoisePsdDbmPerHz",
           "ComputeFlopsPerS", "MAX_TORCH_THREADS"]


class Allowed:
    """Field metadata: the human description of the allowed values, used in error messages.

    Parameters
    ----------
    text : str
        Completes "allowed: ...", e.g. ``"an integer >= 1 (T)"``.
    """

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Allowed({self.text!r})"


class Bounds(Allowed, annotated_types.GroupedMetadata):
    """Inclusive bounds (or an exclusive lower bound) of a finite number, described once.

    Pydantic reads the bounds (``ge``/``gt``/``le``, and no infinity or NaN for a float) by
    iterating over the object; error messages read :attr:`text`.

    Parameters
    ----------
    low, high : float, optional
        The bounds (None: unbounded on that side).
    low_open : bool
        ``low`` itself is not allowed.
    unit, why : str
        Shown in parentheses after the range.
    """

    #: Says what a value is in the description ("an integer", "a number").
    word = "a number"
    #: Whether pydantic must refuse infinity and NaN (floats only: an int has neither).
    finite = True

    def __init__(self, low: float | None = None, high: float | None = None, *, low_open: bool = False,
                 unit: str = "", why: str = "") -> None:
        self.low, self.high, self.low_open = low, high, low_open
        super().__init__(self._describe(unit, why))

    def _describe(self, unit: str, why: str) -> str:
        lo, hi, word = self.low, self.high, self.word
        if lo is not None and hi is not None and lo > 0 and not self.low_open:
            text = f"{word} > 0 in the range [{lo:g}, {hi:g}]"  # a physical quantity: positive, and bounded
        elif lo is not None and hi is not None:
            text = f"{word} in {'(' if self.low_open else '['}{lo:g}, {hi:g}]"
        elif lo is not None:
            text = f"{word} {'>' if self.low_open else '>='} {lo:g}"
        else:
            text = f"{word} <= {hi:g}"
        if unit or why:
            text += f" ({', '.join(x for x in (unit, why) if x)})"
        return text

    def __iter__(self) -> Iterator[Any]:
        if self.low is not None:
            yield annotated_types.Gt(self.low) if self.low_open else annotated_types.Ge(self.low)
        if self.high is not None:
            yield annotated_types.Le(self.high)
        if self.finite:
            yield AllowInfNan(False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.text!r})"


class Number(Bounds):
    """:class:`Bounds` of a ``float`` field."""

    @classmethod
    def of_range(cls, rng: Range) -> Number:
        """The bounds of one of the physical ranges of :mod:`sfl_sim.channel.limits` or
        :mod:`sfl_sim.clients.limits` (one definition for both)."""
        high = None if rng.high == float("inf") else rng.high  # unbounded above: said as ">= low"
        return cls(rng.low, high, low_open=rng.low_open, unit=rng.unit, why=rng.reason)


class Integer(Bounds):
    """:class:`Bounds` of an ``int`` field."""

    word = "an integer"
    finite = False


class OneOf(Allowed):
    """The description of a :data:`typing.Literal` field: ``one of a, b, c``."""

    def __init__(self, choice: Any) -> None:
        super().__init__("one of " + ", ".join(allowed(choice)))


class Section(BaseModel):
    """A fixed part of the scenario: strict types, unknown keys refused, frozen once validated."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


PositiveInt = Annotated[int, Integer(1)]
NonNegativeInt = Annotated[int, Integer(0)]
PositiveFloat = Annotated[float, Number(0, low_open=True)]
Fraction = Annotated[float, Number(0, 1, low_open=True)]

# Physical ranges: a value outside them is a typo or a unit slip, and inside the simulator it
# becomes an infinite SNR, a zero-time upload or an overflow instead of an error.
BandwidthHz = Annotated[float, Number.of_range(limits.BANDWIDTH_HZ)]
ClientPowerW = Annotated[float, Number.of_range(limits.CLIENT_TX_POWER_W)]
ServerPowerW = Annotated[float, Number.of_range(limits.SERVER_TX_POWER_W)]
NoisePsdDbmPerHz = Annotated[float, Number.of_range(limits.NOISE_PSD_DBM_PER_HZ)]
ComputeFlopsPerS = Annotated[float, Number.of_range(clients_limits.COMPUTE_FLOPS_PER_S)]  # a capability trace's too
#: Host threads: libgomp aborts far above any real core count.
MAX_TORCH_THREADS = 1024
