"""The radio of a cell's clients as one state advanced in simulated time, and the one port that gives links.

:class:`RadioState` holds, over the clients, what the link budget needs: positions and velocities,
the large-scale channel (path loss, shadowing, LOS, coupling loss and gain: a
:class:`~sfl_sim.channel.large_scale.model.LargeScale`), the transmit powers, the uplink noise rise
and the small-scale fading component with its state.  :meth:`RadioState.advance_to` evolves it to
an absolute simulated time; :meth:`RadioState.links` gives the link budget of many clients at
once (repeated ids allowed where no allocator splits a band).  The engine asks only this port; a
:class:`~sfl_sim.channel.cell.Cell` is a view over it.

Time
----
Two kinds of component make the radio a function of time:

- a :class:`~sfl_sim.channel.protocols.TimeVaryingFading` (``time_varying = True``): its gains are
  a deterministic function of (its stream, client, t): :meth:`links` with ``fading="at_time"``
  reads them at the asked times.  It is started once, on construction, from its own stream
  (``fading_rng``), with each client's maximum Doppler ``f_D = v f_c / c``
  (``c = 299 792 458 m/s``, the SI definition), ``v`` the mobility's nominal speed (a timed
  mobility's ``nominal_speed_m_per_s``; a step model's ``max_speed_m_per_s``, our choice: the
  shortest coherence it can have; 0 otherwise);
- a :class:`~sfl_sim.channel.protocols.TimedMobility` (``timed = True``): positions at any time.
  The random parts of the large-scale channel (the LOS latent and the shadowing, drawn from the
  cell's streams) are updated on a fixed grid of times, every :attr:`RadioState.large_scale_step_s`
  (the time a client at its nominal speed takes to travel a tenth of the LOS decorrelation
  distance, at most 1 s: our choice), whatever the engine asks, so every form of a run draws the
  same; between grid times the path loss follows the client's position (taken every tenth of that
  step, :attr:`RadioState.position_step_s`) with the LOS latent and shadowing held
  (:meth:`~sfl_sim.channel.large_scale.model.LargeScale.coupling_loss_db_at`).

With neither (today's i.i.d. fading and between-round mobility) nothing depends on time:
the links are those of the large-scale state as the cell's ``move`` left it, exactly as before.

A transfer in time
------------------
:meth:`RadioState.transfer_end_s` gives when ``bits`` sent from ``t0`` on a fixed share are
through: the rate is evaluated at ``t0`` and at every step ``dt`` after, held over the step, and
the bits integrated (numpy, ahead of time: the channel is a deterministic function of time, so a
transfer stays one timeout of the engine).  ``dt`` is :meth:`RadioState.step_s`: a tenth of the
client's coherence time (the fading changes little over it), at most :data:`MAX_STEP_S`.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from sfl_sim.channel.large_scale.model import LargeScale
from sfl_sim.channel.link.budget import LinkBudget, LinkBudgetModel
from sfl_sim.channel.link.fading_time import doppler_hz
from sfl_sim.channel.link.noise_rise import UplinkNoiseRise
from sfl_sim.channel.protocols import BoundedSpeedMobility, Fading, TimedMobility, TimeVaryingFading
from sfl_sim.kit.checks import check_scalar

__all__ = ["RadioState", "MAX_STEP_S", "STEP_FRACTION", "DIRECTIONS"]

#: The step a transfer's rate is re-evaluated at, as a fraction of the client's coherence time
#: (our choice: the gain changes little over a tenth of the time it takes to decorrelate).
STEP_FRACTION = 0.1
#: The longest step, s (our choice: with no Doppler the channel changes only by the client's
#: motion, which moves a client at 30 m/s by 0.3 m in 10 ms).
MAX_STEP_S = 0.01
#: The longest large-scale step, s (our choice).
MAX_LARGE_SCALE_STEP_S = 1.0
#: The link directions :meth:`RadioState.links` knows.
DIRECTIONS = ("uplink", "downlink", "broadcast")
#: The most steps a transfer is integrated over before the state refuses (a link that never
#: delivers is an outage, which the engine judges at the transfer's start).
_MAX_STEPS = 10_000_000


class RadioState:
    """The clients' radio, advanced in simulated time (see the module docstring).

    Parameters
    ----------
    large_scale : LargeScale
        The clients' large-scale channel (and the mobility).
    budget : LinkBudgetModel
        The link budget (rate, allocator, power control, bands, noise).
    noise_rise : UplinkNoiseRise
        The uplink interference's noise rise (drawn per move by the cell).
    tx_power_w : numpy.ndarray, shape (n,)
        The clients' configured transmit powers, W.
    fading : Fading or TimeVaryingFading
        The small-scale fading component.
    carrier_frequency_hz : float
        The carrier of the Doppler, Hz, > 0.
    fading_rng : numpy.random.Generator, optional
        The time-varying fading's own stream (started here, once); required with one.
    mobility_rng : numpy.random.Generator, optional
        The timed mobility's own stream (started here, once); required with one.

    Raises
    ------
    ValueError
        For a time-varying fading or timed mobility without its stream, or a component that
        returns values of the wrong shape.
    """

    def __init__(self, large_scale: LargeScale, budget: LinkBudgetModel, noise_rise: UplinkNoiseRise,
                 tx_power_w: np.ndarray, fading: Fading | TimeVaryingFading, *, carrier_frequency_hz: float,
                 fading_rng: np.random.Generator | None = None,
                 mobility_rng: np.random.Generator | None = None) -> None:
        self.large_scale, self.budget, self.noise_rise = large_scale, budget, noise_rise
        self.tx_power_w = tx_power_w
        self.fading = fading
        self.n_clients = n = large_scale.n_clients
        self.carrier_frequency_hz = check_scalar("carrier_frequency_hz", carrier_frequency_hz, minimum=0.0)
        mobility = large_scale.mobility
        self.timed = bool(getattr(mobility, "timed", False)) and isinstance(mobility, TimedMobility)
        self.time_varying = bool(getattr(fading, "time_varying", False)) and isinstance(fading, TimeVaryingFading)
        self._t_s = 0.0
        self._grid_index = 0  # large-scale grid steps done (timed mobility)
        if self.timed:
            assert isinstance(mobility, TimedMobility)
            if mobility_rng is None:
                raise ValueError(f"mobility {mobility!r} is timed: the cell needs its stream (mobility_rng), got None")
            self._timed_mobility: TimedMobility | None = mobility
            start = mobility.start(np.array(large_scale.snapshot.positions_m), mobility_rng,
                                   radius_m=large_scale.radius_m, min_distance_m=large_scale.min_distance_m)
            large_scale.relocate(start)
            speed = self._per_client(mobility.nominal_speed_m_per_s(), f"mobility {mobility!r} nominal_speed_m_per_s")
        else:
            self._timed_mobility = None
            top = mobility.max_speed_m_per_s if isinstance(mobility, BoundedSpeedMobility) else 0.0
            speed = np.full(n, float(top))
        self.nominal_speed_m_per_s = speed
        fastest = float(speed.max()) if speed.size else 0.0
        #: The large-scale grid step, s (timed mobility; see the module docstring).
        self.large_scale_step_s = (MAX_LARGE_SCALE_STEP_S if fastest <= 0 else
                                   min(MAX_LARGE_SCALE_STEP_S, 0.1 * large_scale.los_decorrelation_m / fastest))
        #: The step a transfer's position is taken at, s: a tenth of the large-scale step (our choice:
        #: at most a hundredth of the LOS decorrelation distance travelled).
        self.position_step_s = self.large_scale_step_s / 10
        self._positions: dict[int, np.ndarray] = {}
        if self.time_varying:
            assert isinstance(fading, TimeVaryingFading)
            if fading_rng is None:
                raise ValueError(f"fading {fading!r} is time-varying: the cell needs its stream (fading_rng), got None")
            self._tv_fading: TimeVaryingFading | None = fading
            # a fading may fix the speed of its Doppler (a drop-based evaluation: clients that stay put)
            fixed = getattr(fading, "speed_m_per_s", None)
            fading_speed = speed if fixed is None else np.full(n, float(fixed))
            fading.start(n, doppler_hz(fading_speed, self.carrier_frequency_hz), fading_rng)
            coherence = self._per_client(fading.coherence_time_s(np.arange(n)),
                                         f"fading {fading!r} coherence_time_s", allow_inf=True)
        else:
            self._tv_fading = None
            coherence = np.full(n, math.inf)
        self.coherence_time_s = coherence
        self._step_s = np.minimum(STEP_FRACTION * coherence, MAX_STEP_S)
        self._step_s = np.where(self._step_s > 0, self._step_s, MAX_STEP_S)

    # ------------------------------------------------------------------ the arrays
    @property
    def in_time(self) -> bool:
        """True when the radio depends on time (time-varying fading or timed mobility)."""
        return self.timed or self.time_varying

    @property
    def t_s(self) -> float:
        """The simulated time the state was advanced to, s."""
        return self._t_s

    @property
    def positions_m(self) -> np.ndarray:
        """Client positions at the latest large-scale update, shape (n, 2), m."""
        return self.large_scale.snapshot.positions_m

    @property
    def velocities_m_per_s(self) -> np.ndarray:
        """Client velocities at :attr:`t_s`, shape (n, 2), m/s (zero without a timed mobility)."""
        if self._timed_mobility is None:
            return np.zeros((self.n_clients, 2))
        return np.asarray(self._timed_mobility.velocities_at(self._t_s), dtype=float)

    def step_s(self, client_ids: Any) -> np.ndarray:
        """The step each client's rate is re-evaluated at within a transfer, s (module docstring)."""
        return self._step_s[np.asarray(client_ids, dtype=int)]

    # ------------------------------------------------------------------ time
    def advance_to(self, t_s: float) -> None:
        """Evolve mobility (and with it the large-scale channel) to absolute time ``t_s``.

        Monotone: a time before :attr:`t_s` is refused.  Without a timed mobility only the clock
        moves (the fading is a function of time; step mobility moves with the cell's ``move``).

        Raises
        ------
        ValueError
            If ``t_s`` is before the time the state was advanced to.
        """
        t = check_scalar("t_s", t_s, minimum=0.0)
        if t < self._t_s:
            raise ValueError(f"t_s: got {t!r}; allowed: >= {self._t_s!r} (the radio state only moves forward)")
        self._t_s = t
        mobility = self._timed_mobility
        if mobility is None:
            return
        step = self.large_scale_step_s
        # every grid time up to t, each one update (each draws from the LOS and shadowing streams)
        target = int(math.floor(t / step))
        while self._grid_index < target:
            self._grid_index += 1
            self.large_scale.relocate(mobility.positions_at(self._grid_index * step))

    # ------------------------------------------------------------------ links
    def fading_at(self, client_ids: Any, t_s: Any) -> np.ndarray:
        """The time-varying fading's power gains of ``client_ids`` at ``t_s`` (checked).

        Raises
        ------
        ValueError
            Without a time-varying fading, or for gains of the wrong shape, negative or not finite.
        """
        fading = self._tv_fading
        if fading is None:
            raise ValueError(f"fading {self.fading!r} is not time-varying: it has no gains at a time")
        ids = np.asarray(client_ids, dtype=int)
        gains = np.asarray(fading.power_gain_at(ids, np.asarray(t_s, dtype=float)), dtype=float)
        if gains.shape != ids.shape or not np.all(np.isfinite(gains) & (gains >= 0)):
            raise ValueError(f"fading {fading!r} power_gain_at must return {ids.size} finite gains >= 0, got {gains!r}")
        return gains

    def coupling_loss_db(self, client_ids: np.ndarray, t_s: Any) -> np.ndarray:
        """Coupling loss (dB) of ``client_ids`` at ``t_s`` (scalar or per id): with a timed mobility
        the path loss at each client's position then (the random parts held since the latest grid
        update); otherwise the latest large-scale state's."""
        mobility = self._timed_mobility
        if mobility is None:
            return self.large_scale.snapshot.coupling_loss_db[client_ids]
        # positions on a grid of position_step_s (a few per transfer; every client's transfers at
        # about the same time share them: the latest few are kept)
        step = self.position_step_s
        index = np.floor(np.broadcast_to(np.asarray(t_s, dtype=float), client_ids.shape) / step).astype(np.int64)
        positions = np.empty((client_ids.size, 2))
        for i in np.unique(index).tolist():
            at = index == i
            positions[at] = self._positions_at_grid(mobility, i)[client_ids[at]]
        return self.large_scale.coupling_loss_db_at(client_ids, positions)

    def _positions_at_grid(self, mobility: TimedMobility, index: int) -> np.ndarray:
        """All clients' positions at ``index * position_step_s`` (kept for the next asks)."""
        cache = self._positions
        if index not in cache:
            if len(cache) >= 64:
                cache.pop(next(iter(cache)))
            cache[index] = np.asarray(mobility.positions_at(index * self.position_step_s), dtype=float)
        return cache[index]

    def links(self, client_ids: Any, t_s: Any, bandwidth_hz: Any = None, *, fading: Any = None,
              direction: str = "uplink", payload_bits: Any = None) -> LinkBudget:
        """The link budget of many clients at once, pure (nothing advances, no stream is drawn).

        Parameters
        ----------
        client_ids : array_like of int, shape (k,)
            Client indices; repeats allowed when ``bandwidth_hz`` is given (one link per entry).
        t_s : float or array_like, shape (k,)
            Absolute simulated time of each link (its fading with ``fading="at_time"``; its
            position with a timed mobility).
        bandwidth_hz : float or array_like, shape (k,), optional
            Each link's share, Hz; None: the allocator splits the direction's band among the
            (distinct) clients, for ``payload_bits``.  Ignored for ``broadcast`` (the whole band).
        fading : None, "at_time" or array_like, shape (k,)
            None: no small-scale fading (gain 1); ``"at_time"``: the time-varying fading's gains at
            ``t_s``; an array: these gains (an i.i.d. draw of the coherence block).
        direction : {"uplink", "downlink", "broadcast"}
        payload_bits : float or array_like, shape (k,), optional
            For the allocator (``bandwidth_hz`` None).

        Returns
        -------
        LinkBudget
        """
        if direction not in DIRECTIONS:
            raise ValueError(f"direction: got {direction!r}; allowed: {', '.join(DIRECTIONS)}")
        ids = np.asarray(client_ids, dtype=int)
        gain_fading = self.fading_at(ids, t_s) if isinstance(fading, str) and fading == "at_time" else fading
        if isinstance(fading, str) and fading != "at_time":
            raise ValueError(f"fading: got {fading!r}; allowed: None, 'at_time' or an array of gains")
        if self._timed_mobility is None:
            now = self.large_scale.snapshot
            coupling_db, gain = now.coupling_loss_db[ids], now.gain_linear[ids]
        else:
            coupling_db = self.coupling_loss_db(ids, t_s)
            gain = np.power(10.0, -coupling_db / 10.0)
        budget = self.budget
        if direction == "broadcast":
            return budget.broadcast(ids, gain, gain_fading)
        if direction == "downlink":
            if bandwidth_hz is None:
                return budget.downlink(ids, gain, payload_bits, gain_fading)
            return budget.downlink_at_bandwidth(ids, bandwidth_hz, gain, gain_fading)
        if bandwidth_hz is None:
            return budget.uplink(ids, gain, coupling_db, self.tx_power_w[ids], self.noise_rise.linear,
                                 payload_bits, gain_fading)
        return budget.uplink_at_bandwidth(ids, bandwidth_hz, gain, coupling_db, self.tx_power_w[ids],
                                          self.noise_rise.linear, gain_fading)

    def transfer_end_s(self, client: int, bits: float, t0_s: float, bandwidth_hz: float,
                       direction: str = "uplink", fading_gain: float | None = None,
                       start_rate_bps: float | None = None) -> float:
        """When ``bits`` sent by (or to) ``client`` from ``t0_s`` on a share of ``bandwidth_hz`` are through.

        The rate at ``t0_s + j dt`` (``dt`` = :meth:`step_s`; the time-varying fading's gain and,
        with a timed mobility, the client's position then) is held over ``[t0 + j dt, t0 + (j+1) dt)``
        and the bits integrated; the last step ends when the last bit is through.  Pure.  Without a
        time-varying fading the gain is ``fading_gain`` (the coherence block's draw; None: 1).
        ``start_rate_bps``, the rate at ``t0_s`` when the caller has it, only sizes the first chunk
        of steps evaluated at once.

        Raises
        ------
        ValueError
            When the bits are not through after a great many steps (the rate stays 0).
        """
        dt = float(self._step_s[client])
        done, j0 = 0.0, 0
        first = start_rate_bps if start_rate_bps is not None else float(
            self.links([client], t0_s, bandwidth_hz, fading=self._fading_mode(fading_gain),
                       direction=direction).rate_bps[0])
        # a first chunk about the length the start's rate needs, then doubling
        chunk = int(min(4096, max(16, 1.25 * bits / (first * dt) + 2))) if first > 0 else 64
        while j0 < _MAX_STEPS:
            times = t0_s + dt * np.arange(j0, j0 + chunk)
            ids = np.full(chunk, client)
            rate = self.links(ids, times, np.full(chunk, float(bandwidth_hz)), fading=self._fading_mode(fading_gain),
                              direction=direction).rate_bps
            cum = done + np.cumsum(rate * dt)
            j = int(np.searchsorted(cum, bits))  # the first step whose end is past the last bit
            if j < chunk:
                before = cum[j - 1] if j > 0 else done
                return float(times[j] + (bits - before) / rate[j])
            done, j0, chunk = float(cum[-1]), j0 + chunk, min(2 * chunk, 65536)
        raise ValueError(f"client {client}: {bits:g} bits not through after {_MAX_STEPS} steps of {dt:g} s "
                         "(its rate stays 0)")

    def _fading_mode(self, fading_gain: float | None) -> str | float | None:
        return "at_time" if self.time_varying else fading_gain

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The state's clock as plain data (its components' states are the cell's ``component_states``)."""
        return {"radio_time_s": self._t_s, "radio_grid_index": self._grid_index}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (the large-scale arrays are restored by the cell)."""
        t = check_scalar("Cell state['radio_time_s']", state["radio_time_s"], minimum=0.0)
        grid = state["radio_grid_index"]
        if not isinstance(grid, int) or isinstance(grid, bool) or grid < 0:
            raise ValueError(f"Cell state['radio_grid_index']: got {grid!r}; allowed: an integer >= 0")
        self._t_s, self._grid_index = t, grid

    # ------------------------------------------------------------------ helpers
    def _per_client(self, values: Any, what: str, allow_inf: bool = False) -> np.ndarray:
        n = self.n_clients
        out = np.asarray(values, dtype=float)
        if out.shape != (n,) or np.any(np.isnan(out)) or np.any(out < 0) or (
                not allow_inf and not np.all(np.isfinite(out))):
            raise ValueError(f"{what} must return {n} {'' if allow_inf else 'finite '}values >= 0, got {values!r}")
        return out
