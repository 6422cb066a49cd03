"""The uplink noise rise of one cell: its interference model, run on the cell's own stream.

The model places what it needs once (:meth:`~sfl_sim.channel.protocols.Interference.deploy`:
the clients of neighbouring cells), then draws a noise rise on construction and at every
:meth:`UplinkNoiseRise.draw` (which neighbouring clients transmit; only ``first_tier`` draws).
The link budget (:mod:`sfl_sim.channel.link.budget`) takes the current draw.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from sfl_sim.channel.checks import checked_rng_state, plain_data
from sfl_sim.channel.protocols import Interference, LoadFollowingInterference, UplinkScene

__all__ = ["UplinkNoiseRise"]


class UplinkNoiseRise:
    """Interference over thermal ``(N0 F + I) / (N0 F)`` at a cell's base station, drawn per round.

    Parameters
    ----------
    interference : Interference
        The model.
    scene : UplinkScene
        What it sees of the cell.
    rng : numpy.random.Generator
        The interference stream: the layout, then every draw.

    Raises
    ------
    ValueError
        If the model gives a noise rise that is not a finite number >= 1.
    """

    def __init__(self, interference: Interference, scene: UplinkScene, rng: np.random.Generator) -> None:
        self.interference, self.scene = interference, scene
        self._rng = rng
        self._layout = interference.deploy(scene, rng)
        self._linear = self._drawn()

    @property
    def linear(self) -> float:
        """The noise rise of the current draw, linear, >= 1 (1: no interference)."""
        return self._linear

    @property
    def layout(self) -> Any:
        """What the interference model placed (neighbouring clients), or None."""
        return self._layout

    def draw(self, own_load: float | None = None) -> float:
        """Draw the next noise rise from the interference stream and return it.

        Parameters
        ----------
        own_load : float, optional
            The cell's own uplink RB load in the round just run, in [0, 1]: a model that follows
            it (a :class:`~sfl_sim.channel.protocols.LoadFollowingInterference` whose
            ``follows_own_load`` is true: ``first_tier`` with ``rb_load: own_cell``) loads the
            neighbours with it; the others ignore it.
        """
        self._linear = self._drawn(own_load)
        return self._linear

    def state_dict(self) -> dict[str, Any]:
        """``interference_rng`` (the stream's ``bit_generator.state``) and ``noise_rise`` (the current draw)."""
        return {"interference_rng": plain_data(self._rng.bit_generator.state, "interference_rng state"),
                "noise_rise": self._linear}

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check :meth:`state_dict`'s keys of a cell state; the returned callable restores them.

        Raises
        ------
        ValueError
            For a noise rise that is not a finite number >= 1, or a stream state that does not fit.
        """
        noise_rise = state["noise_rise"]
        if isinstance(noise_rise, bool) or not isinstance(noise_rise, (int, float)) or \
                not (math.isfinite(noise_rise) and noise_rise >= 1.0):
            raise ValueError(f"Cell state['noise_rise'] must be a finite number >= 1, got {noise_rise!r}")
        rng_state = checked_rng_state(state, "interference_rng", self._rng)

        def restore() -> None:
            self._rng.bit_generator.state = rng_state
            self._linear = float(noise_rise)

        return restore

    def _drawn(self, own_load: float | None = None) -> float:
        model = self.interference
        if own_load is not None and isinstance(model, LoadFollowingInterference) and model.follows_own_load:
            rise = model.noise_rise_linear(self.scene, self._layout, self._rng, own_load=own_load)
        else:
            rise = self.interference.noise_rise_linear(self.scene, self._layout, self._rng)
        if not (isinstance(rise, (int, float, np.floating)) and math.isfinite(rise) and rise >= 1.0):
            raise ValueError(f"interference {self.interference!r} gave a noise rise that is not a finite number >= 1: "
                             f"{rise!r}")
        return float(rise)
