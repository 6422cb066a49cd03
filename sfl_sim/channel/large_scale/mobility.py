"""Client mobility inside the cell disc, between training rounds.

A mobility model is any object with
``step(positions_m, dt_s, rng, radius_m=None, min_distance_m=None) -> ndarray (n, 2)`` returning
the positions ``dt_s`` seconds later, inside the annulus ``min_distance_m <= |x| <= radius_m``
(the :class:`~sfl_sim.channel.Cell` passes its radius and exclusion distance); register new ones in
:data:`MOBILITY`.  Models may keep per-client state between calls (a waypoint, a heading), so use
one instance per cell; ``reset()`` forgets it, and ``state_dict()`` / ``load_state_dict(state)``
save and restore it as plain arrays (so a checkpoint holds it without pickling the model).
Optional attribute ``max_speed_m_per_s`` bounds the displacement per step (checked by
:mod:`sfl_sim.channel.conformance`).
"""
from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from sfl_sim.channel.limits import CELL_RADIUS_M, MIN_DISTANCE_M, SPEED_M_PER_S
from sfl_sim.channel.protocols import Mobility, TimedMobility
from sfl_sim.kit.checks import check_scalar, check_state_keys, state_array
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, Field, ParamsModel, model_validator
from sfl_sim.kit.ranges import Range
from sfl_sim.kit.registry import Registry

__all__ = ["MOBILITY", "StaticMobility", "RandomWaypointMobility", "RandomDirectionMobility"]

MOBILITY = Registry("mobility", protocol=Mobility, alternatives=(TimedMobility,))
#: A random-waypoint pause at each waypoint, s.
PAUSE_S = Range(0.0, float("inf"), ">= 0 (simulated seconds a client rests at a waypoint)", "s")

_MAX_LEGS = 100_000


def _check_step_args(
    positions_m: Any, dt_s: Any, radius_m: float | None, min_distance_m: float | None,
    own_radius_m: float | None, own_min_m: float | None,
) -> tuple[np.ndarray, float, float, float]:
    pos = np.array(positions_m, dtype=float)
    if pos.ndim != 2 or pos.shape[1] != 2 or not np.all(np.isfinite(pos)):
        raise ValueError(f"positions_m must be a finite array of shape (n, 2), got shape {pos.shape}")
    dt = check_scalar("dt_s", dt_s, minimum=0.0)
    radius = radius_m if radius_m is not None else own_radius_m
    if radius is None:
        raise ValueError("radius_m must be given (to step() or the constructor) as a number > 0, got None")
    radius = CELL_RADIUS_M.check("radius_m", radius)
    r0 = min_distance_m if min_distance_m is not None else (own_min_m or 0.0)
    r0 = MIN_DISTANCE_M.check("min_distance_m", r0)
    if r0 >= radius:
        raise ValueError(f"min_distance_m must be < radius_m ({radius:g} m), got {r0!r}")
    return pos, dt, radius, r0


def _into_annulus(pos: np.ndarray, radius_m: float, min_distance_m: float) -> np.ndarray:
    """Pull points outside the disc back onto its edge and push points inside the exclusion
    circle radially out to it (a point at the origin goes to (min_distance_m, 0))."""
    r = np.hypot(pos[:, 0], pos[:, 1])
    out = pos.copy()
    far = r > radius_m
    out[far] *= (radius_m / r[far])[:, None]
    near = r < min_distance_m
    at_origin = near & (r == 0)
    scale = np.where(near & ~at_origin, min_distance_m / np.where(r > 0, r, 1.0), 1.0)
    out *= scale[:, None]
    out[at_origin] = (min_distance_m, 0.0)
    return out


def _uniform_annulus(n: int, radius_m: float, min_distance_m: float, rng: np.random.Generator) -> np.ndarray:
    r = np.sqrt(rng.random(n) * (radius_m**2 - min_distance_m**2) + min_distance_m**2)
    a = rng.uniform(0.0, 2.0 * np.pi, n)
    return np.column_stack((r * np.cos(a), r * np.sin(a)))


@MOBILITY.register("static")
class StaticMobility(Component):
    """Clients never move."""

    max_speed_m_per_s = 0.0

    def reset(self) -> None:
        """Nothing to forget."""

    def step(
        self, positions_m: Any, dt_s: float, rng: Any = None,
        radius_m: float | None = None, min_distance_m: float | None = None,
    ) -> np.ndarray:
        """Return a copy of ``positions_m`` (shape (n, 2), metres); ``rng`` is not consumed."""
        pos = np.array(positions_m, dtype=float)
        if pos.ndim != 2 or pos.shape[1] != 2:
            raise ValueError(f"positions_m must have shape (n, 2), got shape {pos.shape}")
        check_scalar("dt_s", dt_s, minimum=0.0)
        return pos


@MOBILITY.register("random_waypoint")
class RandomWaypointMobility(Component):
    """Random waypoint: walk straight to a waypoint uniform over the cell, pause, repeat.

    Each leg's speed is uniform in ``[speed_min_m_per_s, speed_max_m_per_s]``; after arriving a
    client pauses ``pause_s`` seconds.  Waypoints are uniform over the annulus
    ``min_distance_m <= r <= radius_m``; the straight leg between two of them can cross the
    exclusion circle, where the position is pushed radially out to it.

    Raises
    ------
    ValueError
        For a parameter out of range.
    """

    class Params(ParamsModel):
        speed_min_m_per_s: Annotated[float, SPEED_M_PER_S, Field(gt=0), Doc(
            "Lowest leg speed in m/s, > 0 (0 would let clients stall forever).")] = 0.5
        speed_max_m_per_s: Annotated[float, SPEED_M_PER_S, Doc(
            "Highest leg speed in m/s, >= ``speed_min_m_per_s``.")] = 1.5
        pause_s: Annotated[float, PAUSE_S, Doc("Pause at each waypoint in seconds, >= 0.")] = 0.0
        radius_m: Annotated[Annotated[float, CELL_RADIUS_M] | None, Doc(
            "Cell radius in metres; the Cell passes its own to step.")] = None
        min_distance_m: Annotated[Annotated[float, MIN_DISTANCE_M] | None, Doc(
            "Exclusion distance in metres; the Cell passes its own to step.")] = None

        @model_validator(mode="after")
        def _speeds(self) -> RandomWaypointMobility.Params:
            if self.speed_max_m_per_s < self.speed_min_m_per_s:
                raise ValueError(f"speed_max_m_per_s must be >= speed_min_m_per_s ({self.speed_min_m_per_s:g}), "
                                 f"got {self.speed_max_m_per_s!r}")
            return self

    params: Params

    def __post_init__(self) -> None:
        self.reset()

    @property
    def max_speed_m_per_s(self) -> float:
        """The fastest a client moves, m/s (the bound the cell checks displacements against)."""
        return self.params.speed_max_m_per_s

    def __repr__(self) -> str:
        p = self.params
        return (f"RandomWaypointMobility(speed_min_m_per_s={p.speed_min_m_per_s!r}, "
                f"speed_max_m_per_s={p.speed_max_m_per_s!r}, pause_s={p.pause_s!r})")

    def reset(self) -> None:
        """Forget waypoints, speeds and pauses (the next step draws new ones)."""
        self._waypoint_m: np.ndarray | None = None
        self._speed_m_per_s = np.zeros(0)
        self._pause_left_s = np.zeros(0)

    def state_dict(self) -> dict[str, Any]:
        """Waypoints, leg speeds and pauses left, as copies.

        Returns
        -------
        dict
            ``waypoint_m`` (n, 2) metres or None before the first step, ``speed_m_per_s`` (n,)
            and ``pause_left_s`` (n,).
        """
        return {
            "waypoint_m": None if self._waypoint_m is None else self._waypoint_m.copy(),
            "speed_m_per_s": self._speed_m_per_s.copy(),
            "pause_left_s": self._pause_left_s.copy(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` (arrays are copied).

        Raises
        ------
        ValueError
            For other keys, or arrays of inconsistent shapes or non-finite values.
        """
        owner = type(self).__name__
        check_state_keys(owner, state, ("waypoint_m", "speed_m_per_s", "pause_left_s"))
        if state["waypoint_m"] is None:
            self.reset()
            return
        n = np.shape(state["waypoint_m"])[0] if np.ndim(state["waypoint_m"]) else -1
        waypoint = state_array(owner, state, "waypoint_m", (n, 2))
        speed = state_array(owner, state, "speed_m_per_s", (n,))
        pause = state_array(owner, state, "pause_left_s", (n,))
        self._waypoint_m, self._speed_m_per_s, self._pause_left_s = waypoint, speed, pause

    def step(
        self, positions_m: Any, dt_s: float, rng: np.random.Generator,
        radius_m: float | None = None, min_distance_m: float | None = None,
    ) -> np.ndarray:
        """Advance every client by ``dt_s`` seconds.

        Parameters
        ----------
        positions_m : array_like, shape (n, 2)
            Current positions in metres.
        dt_s : float
            Elapsed time in seconds, >= 0.
        rng : numpy.random.Generator
            Source of new waypoints and speeds (drawn when a client arrives; on the first call,
            one per client).
        radius_m, min_distance_m : float, optional
            Override the constructor's cell radius / exclusion distance, metres.

        Returns
        -------
        numpy.ndarray, shape (n, 2)
            New positions in metres, inside the annulus.
        """
        pos, dt, radius, r0 = _check_step_args(
            positions_m, dt_s, radius_m, min_distance_m, self.params.radius_m, self.params.min_distance_m
        )
        n: int = pos.shape[0]
        pos = _into_annulus(pos, radius, r0)
        if self._waypoint_m is None or self._waypoint_m.shape[0] != n:
            self._waypoint_m = _uniform_annulus(n, radius, r0, rng)
            self._speed_m_per_s = rng.uniform(self.params.speed_min_m_per_s, self.params.speed_max_m_per_s, n)
            self._pause_left_s = np.zeros(n)
        left = np.full(n, dt)
        for _ in range(_MAX_LEGS):
            active = left > 0
            if not active.any():
                break
            pausing = active & (self._pause_left_s > 0)
            used = np.minimum(self._pause_left_s[pausing], left[pausing])
            self._pause_left_s[pausing] -= used
            left[pausing] -= used
            moving = np.flatnonzero((left > 0) & (self._pause_left_s <= 0))
            if moving.size == 0:
                continue
            vec = self._waypoint_m[moving] - pos[moving]
            dist = np.hypot(vec[:, 0], vec[:, 1])
            speed = self._speed_m_per_s[moving]
            travel = speed * left[moving]
            arrive = travel >= dist
            go = moving[~arrive]
            frac = (travel[~arrive] / dist[~arrive])[:, None]
            pos[go] += vec[~arrive] * frac
            left[go] = 0.0
            done = moving[arrive]
            if done.size:
                pos[done] = self._waypoint_m[done]
                left[done] -= dist[arrive] / speed[arrive]
                left[done] = np.maximum(left[done], 0.0)
                self._pause_left_s[done] = self.params.pause_s
                self._waypoint_m[done] = _uniform_annulus(done.size, radius, r0, rng)
                p = self.params
                self._speed_m_per_s[done] = rng.uniform(p.speed_min_m_per_s, p.speed_max_m_per_s, done.size)
        return _into_annulus(pos, radius, r0)


@MOBILITY.register("random_direction")
class RandomDirectionMobility(Component):
    """Random direction: straight lines at constant speed; at the cell edge, a new heading.

    Each client keeps a heading (uniform on the first step) until it reaches the edge of the
    disc, then turns to a heading uniform over the directions pointing into the disc.  A
    position that crosses the exclusion circle is pushed radially out to it.

    Raises
    ------
    ValueError
        For a parameter out of range.
    """

    class Params(ParamsModel):
        speed_m_per_s: Annotated[float, SPEED_M_PER_S, Doc("Speed in m/s, >= 0.")] = 1.0
        radius_m: Annotated[Annotated[float, CELL_RADIUS_M] | None, Doc(
            "Cell radius in metres; the Cell passes its own to step.")] = None
        min_distance_m: Annotated[Annotated[float, MIN_DISTANCE_M] | None, Doc(
            "Exclusion distance in metres; the Cell passes its own to step.")] = None

    params: Params

    def __post_init__(self) -> None:
        self.reset()

    @property
    def max_speed_m_per_s(self) -> float:
        """The fastest a client moves, m/s (the bound the cell checks displacements against)."""
        return self.params.speed_m_per_s

    def __repr__(self) -> str:
        return f"RandomDirectionMobility(speed_m_per_s={self.params.speed_m_per_s!r})"

    def reset(self) -> None:
        """Forget the headings."""
        self._heading_rad: np.ndarray | None = None

    def state_dict(self) -> dict[str, Any]:
        """``heading_rad`` (n,) radians (a copy), or None before the first step."""
        return {"heading_rad": None if self._heading_rad is None else self._heading_rad.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`.

        Raises
        ------
        ValueError
            For other keys, or a heading array that is not 1-D and finite.
        """
        owner = type(self).__name__
        check_state_keys(owner, state, ("heading_rad",))
        if state["heading_rad"] is None:
            self.reset()
            return
        n = np.shape(state["heading_rad"])[0] if np.ndim(state["heading_rad"]) else -1
        self._heading_rad = state_array(owner, state, "heading_rad", (n,))

    def step(
        self, positions_m: Any, dt_s: float, rng: np.random.Generator,
        radius_m: float | None = None, min_distance_m: float | None = None,
    ) -> np.ndarray:
        """Advance every client by ``dt_s`` seconds.

        Parameters
        ----------
        positions_m : array_like, shape (n, 2)
            Current positions in metres.
        dt_s : float
            Elapsed time in seconds, >= 0.
        rng : numpy.random.Generator
            Source of the headings (n on the first call, one per edge hit after).
        radius_m, min_distance_m : float, optional
            Override the constructor's cell radius / exclusion distance, metres.

        Returns
        -------
        numpy.ndarray, shape (n, 2)
            New positions in metres, inside the annulus.
        """
        pos, dt, radius, r0 = _check_step_args(
            positions_m, dt_s, radius_m, min_distance_m, self.params.radius_m, self.params.min_distance_m
        )
        n: int = pos.shape[0]
        pos = _into_annulus(pos, radius, r0)
        if self._heading_rad is None or self._heading_rad.shape[0] != n:
            self._heading_rad = rng.uniform(0.0, 2.0 * np.pi, n)
        if self.params.speed_m_per_s == 0.0 or dt == 0.0:
            return pos
        travel_left = np.full(n, self.params.speed_m_per_s * dt)
        for _ in range(_MAX_LEGS):
            active = np.flatnonzero(travel_left > 0)
            if active.size == 0:
                break
            u = np.column_stack((np.cos(self._heading_rad[active]), np.sin(self._heading_rad[active])))
            p = pos[active]
            b = np.einsum("ij,ij->i", p, u)
            c = np.einsum("ij,ij->i", p, p) - radius**2
            to_edge = -b + np.sqrt(np.maximum(b * b - c, 0.0))
            go = travel_left[active] < to_edge
            pos[active[go]] = p[go] + u[go] * travel_left[active[go]][:, None]
            travel_left[active[go]] = 0.0
            hit = active[~go]
            if hit.size:
                pos[hit] = p[~go] + u[~go] * to_edge[~go][:, None]
                travel_left[hit] -= to_edge[~go]
                inward = np.arctan2(-pos[hit, 1], -pos[hit, 0])
                self._heading_rad[hit] = inward + rng.uniform(-np.pi / 2, np.pi / 2, hit.size)
        return _into_annulus(pos, radius, r0)
