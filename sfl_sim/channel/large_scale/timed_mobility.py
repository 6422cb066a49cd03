"""Mobility as a function of absolute simulated time (:class:`~sfl_sim.channel.protocols.TimedMobility`).

A timed model answers ``positions_at(t_s)`` for any ``t_s >= 0`` after one ``start(positions_m,
rng, radius_m, min_distance_m)``, the same whatever was asked before, so a radio state that asks
at every transmission, a round-level one that asks once per round and a re-timed run all see the
same trajectories.  Here:

- :class:`StepwiseTimedMobility` adapts any between-round model of :data:`MOBILITY` (its
  ``step(positions_m, dt_s, rng, ...)``) to ``positions_at``;
- :class:`GaussMarkovMobility` (``gauss_markov``) is the Gauss–Markov model, timed natively.

Both advance on a fixed step grid ``t_k = k step_s`` from their start state with a generator of
their own (seeded by one draw from the ``rng`` given to ``start``) and interpolate linearly within
a step.  Why a fixed grid: a step model's trajectory depends on the steps it is called with (a
random waypoint draws its next waypoints for the clients that arrive within one call together, so
two calls of 5 s and one of 10 s draw in another order); on a grid that does not depend on the
queries, the positions are a function of ``t`` alone.  The grid is walked in blocks of
:data:`BLOCK_STEPS` steps; the state and the generator's state at each block start are kept
(a few numbers per client), the positions of the last :data:`CACHED_BLOCKS` blocks too, so a query
earlier than the cache recomputes its block from that block's start state, bit for bit.

Both are also :class:`~sfl_sim.channel.protocols.Mobility` models (``step``), so a cell that moves
its clients between rounds uses them unchanged: the first ``step`` starts the model from the
positions it is given, and each ``step(dt_s)`` returns the positions ``dt_s`` later on the model's
own clock.
"""
from __future__ import annotations

import copy
import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Annotated, Any, ClassVar

import numpy as np

from sfl_sim.channel.large_scale.mobility import MOBILITY, _check_step_args, _into_annulus
from sfl_sim.channel.limits import CELL_RADIUS_M, MIN_DISTANCE_M, SIMULATED_INTERVAL_S, SPEED_M_PER_S
from sfl_sim.channel.protocols import BoundedSpeedMobility, Resettable, Stateful
from sfl_sim.kit.checks import check_real, check_scalar, check_state_keys, state_array
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, Field, ParamsModel

__all__ = ["StepwiseTimedMobility", "GaussMarkovMobility", "BLOCK_STEPS", "CACHED_BLOCKS", "MAX_STEPS"]

#: Steps per block of the grid (our choice: a block of 256 steps of 1000 clients is 4 MB of positions).
BLOCK_STEPS = 256
#: Blocks of positions kept (our choice: the block being read, its neighbours, and one more).
CACHED_BLOCKS = 4
#: The furthest grid step a query may reach (our choice: 10^7 steps, 116 days at 1 s, is about a
#: minute of stepping; a query beyond is refused rather than left running).
MAX_STEPS = 10_000_000

_SEED_HIGH = 2**63 - 1


def _new_generator(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


class _SteppedPath:
    """Positions of ``n`` clients on the grid ``t_k = k step_s``, generated in order.

    ``advance(state, generator)`` returns the state one step later (it may change ``state`` in
    place: the path hands it a copy of a checkpoint) and ``positions_of(state)`` the (n, 2)
    positions of a state; ``generator`` is in its state at step 0 (the path keeps a copy of it).
    """

    def __init__(self, step_s: float, state0: Any, generator: np.random.Generator,
                 advance: Callable[[Any, np.random.Generator], Any],
                 positions_of: Callable[[Any], np.ndarray]) -> None:
        self.step_s = step_s
        self._advance, self._positions_of = advance, positions_of
        self._checkpoints: list[tuple[Any, Any]] = [
            (copy.deepcopy(state0), copy.deepcopy(generator.bit_generator.state))]
        self._blocks: OrderedDict[int, np.ndarray] = OrderedDict()

    def _compute(self, b: int) -> np.ndarray:
        state0, generator_state = self._checkpoints[b]
        state = copy.deepcopy(state0)
        gen = np.random.Generator(np.random.PCG64())
        gen.bit_generator.state = copy.deepcopy(generator_state)
        first = np.array(self._positions_of(state), dtype=float)
        out = np.empty((BLOCK_STEPS + 1, *first.shape))
        out[0] = first
        for j in range(1, BLOCK_STEPS + 1):
            state = self._advance(state, gen)
            out[j] = self._positions_of(state)
        if b + 1 == len(self._checkpoints):
            self._checkpoints.append((copy.deepcopy(state), copy.deepcopy(gen.bit_generator.state)))
        self._blocks[b] = out
        while len(self._blocks) > CACHED_BLOCKS:
            self._blocks.popitem(last=False)
        return out

    def block(self, b: int) -> np.ndarray:
        """Positions at steps ``b B .. (b + 1) B`` (``B`` = :data:`BLOCK_STEPS`), shape (B + 1, n, 2)."""
        if b in self._blocks:
            self._blocks.move_to_end(b)
            return self._blocks[b]
        while len(self._checkpoints) <= b:  # walk forward; only the last blocks stay cached
            self._compute(len(self._checkpoints) - 1)
        return self._compute(b)

    def segment(self, t_s: float) -> tuple[np.ndarray, np.ndarray, float]:
        """``(p_k, p_{k+1}, fraction)`` of the step ``[t_k, t_{k+1})`` that holds ``t_s``."""
        u = t_s / self.step_s
        k = math.floor(u)
        if k >= MAX_STEPS:
            raise ValueError(f"t_s: got {t_s!r}; allowed: at most {MAX_STEPS} steps of step_s "
                             f"({self.step_s:g} s), i.e. t_s < {MAX_STEPS * self.step_s:g} s (or a larger step_s)")
        b, j = divmod(k, BLOCK_STEPS)
        arr = self.block(b)
        return arr[j], arr[j + 1], u - k


class _TimedBase:
    """What the timed models share: ``positions_at`` / ``velocities_at`` from a path, argument
    checks, and the between-round ``step`` on the model's own clock."""

    timed: ClassVar[bool] = True
    _clock_s: float
    _path: _SteppedPath | None
    _min_distance_m: Any  # the exclusion radius, m (None or 0: none)

    def _reset_clock(self) -> None:
        self._clock_s = 0.0

    def _require_started(self) -> None:
        if not self.started:
            raise ValueError(f"{type(self).__name__}: positions were asked before start(positions_m, rng); "
                             f"allowed: call start first (once per run)")

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called (since the last reset)."""
        raise NotImplementedError

    def start(self, positions_m: Any, rng: np.random.Generator,
              radius_m: float | None = None, min_distance_m: float | None = None) -> np.ndarray:
        """See :class:`~sfl_sim.channel.protocols.TimedMobility`."""
        raise NotImplementedError

    def _segment(self, t_s: Any) -> tuple[np.ndarray, np.ndarray, float, float]:
        """``(p_k, p_{k+1}, fraction, step_s)`` of the grid step that holds ``t_s`` (checked; the
        model started): the one walk of the grid both :meth:`positions_at` and :meth:`velocities_at` read."""
        t = _check_t(t_s)
        self._require_started()
        path = self._path
        assert path is not None
        p0, p1, frac = path.segment(t)
        return p0, p1, frac, path.step_s

    def positions_at(self, t_s: float) -> np.ndarray:
        """Positions at ``t_s`` (shape (n, 2), m): the grid's, linear within a step
        (:class:`~sfl_sim.channel.protocols.TimedMobility`); a point of the straight line between
        two grid points that falls inside the exclusion circle (the chord of a long step passing
        the site) is pushed radially out to it, as the grid points are."""
        p0, p1, frac, _ = self._segment(t_s)
        if frac == 0.0:
            return p0.copy()
        pos = p0 + (p1 - p0) * frac
        r0 = self._min_distance_m
        if r0:
            inside = np.hypot(pos[:, 0], pos[:, 1]) < r0
            if inside.any():
                pos[inside] = _into_annulus(pos[inside], math.inf, r0)
        return pos

    def velocities_at(self, t_s: float) -> np.ndarray:
        """Velocities at ``t_s`` (shape (n, 2), m/s): the step's displacement over the grid step
        (the derivative of :meth:`positions_at`, taken from the right at a grid time)."""
        p0, p1, _, step_s = self._segment(t_s)
        return (p1 - p0) / step_s

    def step(
        self, positions_m: Any, dt_s: float, rng: np.random.Generator,
        radius_m: float | None = None, min_distance_m: float | None = None,
    ) -> np.ndarray:
        """The between-round form: positions ``dt_s`` seconds later on the model's own clock.

        The first call starts the model from ``positions_m`` (with ``rng``, the cell's radius and
        exclusion distance); later calls ignore ``positions_m`` and ``rng`` (the trajectory is the
        model's own) and advance the clock by ``dt_s``.

        Returns
        -------
        numpy.ndarray, shape (n, 2)
            Positions in metres at the clock's new time.
        """
        dt = check_scalar("dt_s", dt_s, minimum=0.0)
        if not self.started:
            self.start(positions_m, rng, radius_m, min_distance_m)
        self._clock_s += dt
        return self.positions_at(self._clock_s)


def _check_t(t_s: Any) -> float:
    return check_real("t_s", t_s, minimum=0.0)


def _check_positions(positions_m: Any) -> np.ndarray:
    pos = np.array(positions_m, dtype=float)
    if pos.ndim != 2 or pos.shape[1] != 2 or not np.all(np.isfinite(pos)):
        raise ValueError(f"positions_m must be a finite array of shape (n, 2), got shape {pos.shape}")
    return pos


def _draw_seed(rng: Any) -> int:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: got {type(rng).__name__}; allowed: a numpy.random.Generator (the mobility stream)")
    return int(rng.integers(0, _SEED_HIGH))


class StepwiseTimedMobility(_TimedBase):
    """Any between-round mobility model (``step(positions_m, dt_s, rng, radius_m, min_distance_m)``)
    as a :class:`~sfl_sim.channel.protocols.TimedMobility`.

    The model is stepped on the fixed grid ``t_k = k step_s`` from the positions given to
    :meth:`start`, with a generator seeded by one draw from :meth:`start`'s ``rng``; positions in
    between are interpolated linearly (a client that turns inside a step cuts the corner: by at
    most ``speed * step_s / 2`` from its path).  See the module docstring for why a fixed grid.

    Parameters
    ----------
    model : Mobility
        The model to step (copied at :meth:`start`; the instance given is not stepped).
    step_s : float, default 1.0
        The grid step, seconds, in ``sfl_sim.channel.limits.SIMULATED_INTERVAL_S`` (>= 1 ms).
        Our choice of default: 1 s is a pedestrian's metre, and a 500-round run of minutes per
        round is a few hundred thousand steps.
    """

    def __init__(self, model: Any, step_s: float = 1.0) -> None:
        if not callable(getattr(model, "step", None)):
            raise ValueError(f"model: got {type(model).__name__}; allowed: a mobility model with "
                             f"step(positions_m, dt_s, rng, radius_m=None, min_distance_m=None)")
        self.model = model
        self.step_s = SIMULATED_INTERVAL_S.check("step_s", step_s)
        self.reset()

    def __repr__(self) -> str:
        return f"StepwiseTimedMobility({self.model!r}, step_s={self.step_s!r})"

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called (since the last reset)."""
        return self._path is not None

    def reset(self) -> None:
        """Forget the start state (the next :meth:`start` or :meth:`step` begins again)."""
        self._path: _SteppedPath | None = None
        self._seed: int | None = None
        self._positions0_m: np.ndarray | None = None
        self._radius_m: float | None = None
        self._min_distance_m: float | None = None
        self._model0: Any = None
        self._reset_clock()

    def _build(self) -> None:
        assert self._positions0_m is not None and self._seed is not None
        model, radius, r0, step = self._model0, self._radius_m, self._min_distance_m, self.step_s

        def advance(state: dict[str, Any], gen: np.random.Generator) -> dict[str, Any]:
            state["pos"] = np.array(state["model"].step(state["pos"], step, gen, radius_m=radius,
                                                        min_distance_m=r0), dtype=float)
            return state

        self._path = _SteppedPath(step, {"model": copy.deepcopy(model), "pos": self._positions0_m.copy()},
                                  _new_generator(self._seed), advance, lambda state: state["pos"])

    def start(self, positions_m: Any, rng: np.random.Generator,
              radius_m: float | None = None, min_distance_m: float | None = None) -> np.ndarray:
        """Start at ``positions_m`` (shape (n, 2), m) and return them (the positions at t = 0).

        ``rng`` gives one draw, the seed of the model's own generator; ``radius_m`` and
        ``min_distance_m`` are passed to every ``step`` of the model.
        """
        pos = _check_positions(positions_m)
        seed = _draw_seed(rng)
        self.reset()
        self._seed, self._positions0_m = seed, pos
        self._radius_m = None if radius_m is None else CELL_RADIUS_M.check("radius_m", radius_m)
        self._min_distance_m = None if min_distance_m is None else MIN_DISTANCE_M.check("min_distance_m",
                                                                                       min_distance_m)
        self._model0 = copy.deepcopy(self.model)
        self._build()
        return pos.copy()

    def nominal_speed_m_per_s(self) -> np.ndarray:
        """Each client's speed for its Doppler, m/s: the model's ``nominal_speed_m_per_s`` when it
        states one, else its ``max_speed_m_per_s`` (an upper bound: the Doppler is then the
        largest, the coherence time the shortest)."""
        self._require_started()
        assert self._positions0_m is not None
        n = self._positions0_m.shape[0]
        stated = getattr(self.model, "nominal_speed_m_per_s", None)
        if stated is not None:
            value = stated() if callable(stated) else stated
            return np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
        if isinstance(self.model, BoundedSpeedMobility):
            return np.full(n, float(self.model.max_speed_m_per_s))
        raise ValueError(f"{self.model!r} states no speed: allowed: a model with nominal_speed_m_per_s or "
                         f"max_speed_m_per_s (for the clients' Doppler)")

    def state_dict(self) -> dict[str, Any]:
        """The start state as plain data (the grid is recomputed from it).

        Returns
        -------
        dict
            ``seed`` (int) or None before :meth:`start`, ``positions0_m`` (n, 2), ``radius_m``,
            ``min_distance_m``, ``model_state`` (the model's ``state_dict()`` at start, or None for a
            model without one) and ``clock_s`` (the :meth:`step` clock).
        """
        model_state = self._model0.state_dict() if isinstance(self._model0, Stateful) else None
        return {"seed": self._seed,
                "positions0_m": None if self._positions0_m is None else self._positions0_m.copy(),
                "radius_m": self._radius_m, "min_distance_m": self._min_distance_m,
                "model_state": copy.deepcopy(model_state), "clock_s": self._clock_s}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`.

        Raises
        ------
        ValueError
            For other keys or values of the wrong shape.
        """
        owner = type(self).__name__
        check_state_keys(owner, state, ("seed", "positions0_m", "radius_m", "min_distance_m", "model_state",
                                        "clock_s"))
        self.reset()
        if state["seed"] is None:
            return
        n = np.shape(state["positions0_m"])[0] if np.ndim(state["positions0_m"]) else -1
        self._positions0_m = state_array(owner, state, "positions0_m", (n, 2))
        self._seed = int(state["seed"])
        self._radius_m = None if state["radius_m"] is None else float(state["radius_m"])
        self._min_distance_m = None if state["min_distance_m"] is None else float(state["min_distance_m"])
        self._model0 = copy.deepcopy(self.model)
        if state["model_state"] is not None and isinstance(self._model0, Stateful):
            self._model0.load_state_dict(copy.deepcopy(state["model_state"]))
        elif isinstance(self._model0, Resettable):
            self._model0.reset()
        self._build()
        self._clock_s = check_scalar(f"{owner} state['clock_s']", state["clock_s"], minimum=0.0)


@MOBILITY.register("gauss_markov")
class GaussMarkovMobility(_TimedBase, Component):
    """Gauss–Markov mobility, timed natively: speed and heading with memory ``alpha``.

    The model of Liang & Haas (1999) as the survey of Camp, Boleng & Davies (2002, section 2.5)
    describes it: at fixed intervals (``step_s``) each client's speed and direction are updated as

    ``s_n = alpha s_{n-1} + (1 - alpha) s_mean + sqrt(1 - alpha^2) sigma_s w_s``,
    ``d_n = alpha d_{n-1} + (1 - alpha) d_mean + sqrt(1 - alpha^2) sigma_d w_d``

    with ``w_s, w_d`` standard normal draws, and the position moves by ``s_{n-1} step_s`` along
    ``d_{n-1}``.  ``alpha = 0`` is a memoryless walk, ``alpha = 1`` a straight line at constant
    speed.  The survey says only that the random variables are Gaussian; their standard deviations
    ``sigma_s`` and ``sigma_d`` are parameters here, as in INET's ``GaussMarkovMobility`` (which
    scales a unit normal by one ``variance``).  A negative speed (a wide ``sigma_s``) moves the
    client backwards along its direction, as the formula reads.

    Start (our choice, as INET does it): each client at its placed position, at the mean speed,
    heading in its mean direction, drawn uniform in [0, 2 pi) per client.

    Boundary (the survey: a client is forced away from an edge by changing its mean direction; our
    reading for the annulus, following INET's ``preventBorderHugging``): a client within
    ``edge_margin_m`` of the cell edge gets the mean direction towards the base station, one within
    ``edge_margin_m`` of the exclusion circle the mean direction away from it, and keeps that
    mean until the other edge changes it (taken within pi of its current direction, so it turns the
    short way).  A step that still crosses an edge ends on it (pulled radially back, as the other
    models of :data:`MOBILITY` do).

    The grid's positions are interpolated linearly within a step, which is the model's own path
    (it moves in a straight line during a step) except on a step that ends on an edge.

    Raises
    ------
    ValueError
        For a parameter out of range.
    """

    class Params(ParamsModel):
        mean_speed_m_per_s: Annotated[float, SPEED_M_PER_S, Doc(
            "The mean speed s_mean the speed returns to, m/s (our default: 1 m/s, a walk).")] = 1.0
        alpha: Annotated[float, Field(ge=0, le=1), Doc(
            "Memory in [0, 1]: 0 is a memoryless walk, 1 a straight line (our default 0.75).")] = 0.75
        speed_sigma_m_per_s: Annotated[float, SPEED_M_PER_S, Doc(
            "Standard deviation of the speed's Gaussian draw, m/s (our default 0.5 m/s).")] = 0.5
        direction_sigma_rad: Annotated[float, Field(ge=0, le=2 * math.pi, allow_inf_nan=False), Doc(
            "Standard deviation of the direction's Gaussian draw, radians in [0, 2 pi] "
            "(our default 0.5 rad).")] = 0.5
        step_s: Annotated[float, SIMULATED_INTERVAL_S, Doc(
            "The update interval, seconds (>= 1 ms; our default 1 s).")] = 1.0
        edge_margin_m: Annotated[float, MIN_DISTANCE_M, Doc(
            "Distance from an edge of the annulus within which the mean direction turns away from "
            "it, metres (our default 10 m).")] = 10.0
        radius_m: Annotated[Annotated[float, CELL_RADIUS_M] | None, Doc(
            "Cell radius in metres; the Cell passes its own to start/step.")] = None
        min_distance_m: Annotated[Annotated[float, MIN_DISTANCE_M] | None, Doc(
            "Exclusion distance in metres; the Cell passes its own to start/step.")] = None

    params: Params

    def __post_init__(self) -> None:
        self.reset()

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called (since the last reset)."""
        return self._path is not None

    def reset(self) -> None:
        """Forget the start state (the next :meth:`start` or :meth:`step` begins again)."""
        self._path: _SteppedPath | None = None
        self._seed: int | None = None
        self._positions0_m: np.ndarray | None = None
        self._radius_m = 0.0
        self._min_distance_m = 0.0
        self._reset_clock()

    def _advance(self, state: dict[str, np.ndarray], gen: np.random.Generator) -> dict[str, np.ndarray]:
        # In place and with few array operations: this runs once per step and client block.
        p = self.params
        pos, speed, direction, mean_direction = state["pos"], state["speed"], state["direction"], state["mean"]
        travel = speed * p.step_s
        pos[:, 0] += travel * np.cos(direction)
        pos[:, 1] += travel * np.sin(direction)
        r = np.hypot(pos[:, 0], pos[:, 1])
        low, high = r.min(), r.max()
        if high > self._radius_m or low < self._min_distance_m:
            pos[:] = _into_annulus(pos, self._radius_m, self._min_distance_m)
            r = np.hypot(pos[:, 0], pos[:, 1])
        if high >= self._radius_m - p.edge_margin_m or low <= self._min_distance_m + p.edge_margin_m:
            outer = r >= self._radius_m - p.edge_margin_m
            turn = outer | (r <= self._min_distance_m + p.edge_margin_m)
            away = np.arctan2(pos[turn, 1], pos[turn, 0])
            target = np.where(outer[turn], away + np.pi, away)
            # the same heading within pi of the current direction: the client turns the short way
            now = direction[turn]
            mean_direction[turn] = now + np.remainder(target - now + np.pi, 2 * np.pi) - np.pi
        w = gen.standard_normal((2, pos.shape[0]))
        keep = p.alpha
        fresh = math.sqrt(max(1.0 - keep * keep, 0.0))
        speed *= keep
        speed += (1 - keep) * p.mean_speed_m_per_s + (fresh * p.speed_sigma_m_per_s) * w[0]
        direction *= keep
        direction += (1 - keep) * mean_direction + (fresh * p.direction_sigma_rad) * w[1]
        return state

    def _build(self) -> None:
        assert self._positions0_m is not None and self._seed is not None
        n = self._positions0_m.shape[0]
        # The mean directions come first from the model's own generator, then the steps follow
        # from its state (so the start state is the seed and the positions alone).
        gen = _new_generator(self._seed)
        mean = np.asarray(gen.uniform(0.0, 2 * np.pi, n), dtype=float)
        state0 = {"pos": self._positions0_m.copy(), "speed": np.full(n, self.params.mean_speed_m_per_s),
                  "direction": mean.copy(), "mean": mean}
        self._path = _SteppedPath(self.params.step_s, state0, gen, self._advance, lambda state: state["pos"])

    def start(self, positions_m: Any, rng: np.random.Generator,
              radius_m: float | None = None, min_distance_m: float | None = None) -> np.ndarray:
        """Start at ``positions_m`` (shape (n, 2), m; pulled into the annulus) and return them.

        ``rng`` gives one draw, the seed of the model's own generator.  ``radius_m`` and
        ``min_distance_m`` (default the parameters of the same names) bound the annulus.
        """
        pos, _, radius, r0 = _check_step_args(positions_m, 0.0, radius_m, min_distance_m, self.params.radius_m,
                                              self.params.min_distance_m)
        seed = _draw_seed(rng)
        self.reset()
        self._radius_m, self._min_distance_m = radius, r0
        self._seed, self._positions0_m = seed, _into_annulus(pos, radius, r0)
        self._build()
        return self._positions0_m.copy()

    def nominal_speed_m_per_s(self) -> np.ndarray:
        """``mean_speed_m_per_s`` for every client (the speed the process returns to)."""
        self._require_started()
        assert self._positions0_m is not None
        return np.full(self._positions0_m.shape[0], self.params.mean_speed_m_per_s)

    def state_dict(self) -> dict[str, Any]:
        """The start state as plain data (the trajectory is recomputed from it).

        Returns
        -------
        dict
            ``seed`` (int) or None before :meth:`start`, ``positions0_m`` (n, 2), ``radius_m``,
            ``min_distance_m`` and ``clock_s`` (the :meth:`step` clock).
        """
        return {"seed": self._seed,
                "positions0_m": None if self._positions0_m is None else self._positions0_m.copy(),
                "radius_m": self._radius_m, "min_distance_m": self._min_distance_m, "clock_s": self._clock_s}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`.

        Raises
        ------
        ValueError
            For other keys or values of the wrong shape or range.
        """
        owner = type(self).__name__
        check_state_keys(owner, state, ("seed", "positions0_m", "radius_m", "min_distance_m", "clock_s"))
        self.reset()
        if state["seed"] is None:
            return
        n = np.shape(state["positions0_m"])[0] if np.ndim(state["positions0_m"]) else -1
        self._positions0_m = state_array(owner, state, "positions0_m", (n, 2))
        self._seed = int(state["seed"])
        self._radius_m = CELL_RADIUS_M.check(f"{owner} state['radius_m']", state["radius_m"])
        self._min_distance_m = MIN_DISTANCE_M.check(f"{owner} state['min_distance_m']", state["min_distance_m"])
        self._build()
        self._clock_s = check_scalar(f"{owner} state['clock_s']", state["clock_s"], minimum=0.0)
