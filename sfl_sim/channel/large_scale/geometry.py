"""Where clients are dropped in the cell.  The server / base station sits at the origin.

A placement is any object with ``sample_positions_m(n_clients, rng) -> ndarray (n, 2)``;
register new ones in :data:`PLACEMENTS`.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np

from sfl_sim.channel.limits import CELL_RADIUS_M, CLIENT_DISTANCE_M, MIN_DISTANCE_M
from sfl_sim.channel.protocols import Placement
from sfl_sim.kit.checks import check_count
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, Field, ParamsModel, model_validator
from sfl_sim.kit.registry import Registry

__all__ = ["PLACEMENTS", "UniformDiscPlacement", "FixedDistancePlacement", "distances_m"]

PLACEMENTS = Registry("placement", protocol=Placement)


@PLACEMENTS.register("uniform_disc")
class UniformDiscPlacement(Component):
    """Clients uniform over the area of the annulus ``min_distance_m <= r <= radius_m``.

    Raises
    ------
    ValueError
        If either radius is out of its range or ``radius_m <= min_distance_m``.
    """

    class Params(ParamsModel):
        radius_m: Annotated[float, CELL_RADIUS_M, Doc(
            "Cell radius in metres, in ``sfl_sim.channel.limits.CELL_RADIUS_M``; must be > ``min_distance_m``.")] = \
            500.0
        min_distance_m: Annotated[float, MIN_DISTANCE_M, Doc(
            "Exclusion radius around the base station in metres, in ``sfl_sim.channel.limits.MIN_DISTANCE_M``. "
            "Keeps the path-loss model inside its validity range and away from d = 0: the default 35 m is where "
            "the default path loss (TR 36.814 macro) starts to hold.")] = 35.0

        @model_validator(mode="after")
        def _annulus(self) -> UniformDiscPlacement.Params:
            if self.radius_m <= self.min_distance_m:
                raise ValueError(f"radius_m must be > min_distance_m ({self.min_distance_m:g} m), "
                                 f"got {self.radius_m!r}")
            return self

    params: Params

    @property
    def radius_m(self) -> float:
        """The cell radius, metres (the :class:`~sfl_sim.channel.protocols.DiscPlacement` the cell reads)."""
        return self.params.radius_m

    @property
    def min_distance_m(self) -> float:
        """The exclusion radius around the base station, metres."""
        return self.params.min_distance_m

    def sample_positions_m(self, n_clients: int, rng: np.random.Generator) -> np.ndarray:
        """Draw client positions.

        Parameters
        ----------
        n_clients : int
            Number of clients, >= 0.
        rng : numpy.random.Generator
            Source of all randomness (radii are drawn first, then angles).

        Returns
        -------
        numpy.ndarray, shape (n_clients, 2)
            x, y coordinates in metres.
        """
        n = check_count("n_clients", n_clients)
        r0_sq, r_sq = self.min_distance_m**2, self.radius_m**2
        # Inverse-CDF of the area-uniform radius: P(r <= x) = (x^2 - r0^2) / (R^2 - r0^2).
        # Sampling r uniformly instead would crowd clients near the base station.
        radius = np.sqrt(rng.random(n) * (r_sq - r0_sq) + r0_sq)
        angle = rng.uniform(0.0, 2.0 * np.pi, n)
        return np.column_stack((radius * np.cos(angle), radius * np.sin(angle)))


@PLACEMENTS.register("fixed_distances")
class FixedDistancePlacement(Component):
    """Clients on the positive x axis at given distances (deterministic; for hand-checked tests).

    Raises
    ------
    ValueError
        If ``distances_m`` is empty, not 1-D, or has an entry <= 0 or non-finite.
    """

    class Params(ParamsModel):
        distances_m: Annotated[Sequence[Annotated[float, CLIENT_DISTANCE_M]], Field(min_length=1), Doc(
            "Distance of each client from the base station in metres, each in "
            "``sfl_sim.channel.limits.CLIENT_DISTANCE_M`` (> 0, <= 100 km).")]

    params: Params

    @property
    def distances_m(self) -> tuple[float, ...]:
        """The clients' distances, metres."""
        return tuple(float(d) for d in self.params.distances_m)

    def __repr__(self) -> str:
        return f"FixedDistancePlacement(distances_m={list(self.distances_m)!r})"

    def sample_positions_m(self, n_clients: int, rng: Any = None) -> np.ndarray:
        """Return the fixed positions; ``rng`` is accepted for interface parity and not used.

        Parameters
        ----------
        n_clients : int
            Must equal ``len(distances_m)``.
        rng : numpy.random.Generator, optional
            Ignored.

        Returns
        -------
        numpy.ndarray, shape (n_clients, 2)
            ``[[d_i, 0], ...]`` in metres.

        Raises
        ------
        ValueError
            If ``n_clients != len(distances_m)``.
        """
        n = check_count("n_clients", n_clients)
        if n != len(self.distances_m):
            raise ValueError(
                f"n_clients must equal len(distances_m) = {len(self.distances_m)} for "
                f"fixed_distances placement, got {n_clients!r}"
            )
        return np.column_stack((np.array(self.distances_m), np.zeros(n)))


def distances_m(positions_m: Any) -> np.ndarray:
    """Euclidean distance of each position from the base station at the origin.

    Parameters
    ----------
    positions_m : array_like, shape (n, 2)
        x, y coordinates in metres.

    Returns
    -------
    numpy.ndarray, shape (n,)
        Distances in metres.
    """
    pos = np.asarray(positions_m, dtype=float)
    if pos.ndim != 2 or pos.shape[1] != 2:
        raise ValueError(f"positions_m must have shape (n, 2), got shape {pos.shape}")
    return np.hypot(pos[:, 0], pos[:, 1])
