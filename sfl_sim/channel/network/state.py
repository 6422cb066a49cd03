"""A network of cells inside a run: which cell serves each client over time, its coupling losses
to every cell, and the uplink interference of the other cells' transmissions.

:class:`NetworkRadio` is what :class:`~sfl_sim.channel.radio_state.RadioState` consults when the
scenario names a ``cell.network`` (see ``docs/concepts/network.md``).  Numpy only.

Geometry
--------
Clients are dropped uniformly over the network's hexagons (:class:`NetworkPlacement`, from the
cell's placement stream).  Every position is reduced onto the layout's wrap-around torus (the
plane modulo the layout's translations, :func:`torus_positions_m`): a mobility model moves its
clients in its own region (the step models in a disc of the layout's circumradius around the
centre site, a trace anywhere), and a client that leaves the layout on one side is, for every
distance, a client entering it on the other (our choice: no edge effects, as wrap-around means).
The 2-D distance of a (client, site) is the wrap-around one (the nearest of the site's images,
:meth:`~sfl_sim.channel.network.hexgrid.HexGrid.wraparound_distances_m`); the path-loss component
of ``cell.pathloss`` turns it into a loss (its own heights make it 3-D where it has them).

LOS and shadowing per (client, site)
------------------------------------
Each (client, site) carries a standard normal LOS latent ``z`` (LOS while ``Phi(z) < Pr_LOS(d)``,
as :mod:`sfl_sim.channel.large_scale.model` does per client) and a standard normal shadowing
variable ``x`` (shadowing ``sigma x`` dB, ``sigma`` the ``cell.shadowing`` component's
``sigma_db`` or, for ``model``, the path-loss model's at the (client, site)'s LOS state).  Drawn
independently per (client, site): our reading (TR 38.901 clause 7.6.3.1's site-to-site
correlation is not modelled).  When a client moves by ``dd`` metres both evolve as
``z <- rho z + sqrt(1 - rho^2) w`` with ``rho = exp(-dd / d_corr)`` (Gudmundson's exponential
autocorrelation; ``d_corr`` the LOS decorrelation distance for ``z`` and the shadowing one for
``x``), at every large-scale grid step of a timed mobility (or at every move of a step mobility),
from the network's own stream.

Serving cell in time
--------------------
The serving cells follow the handover rule (``cell.handover``, A3 by default) evaluated on the
RSRP of every (client, cell) at measurement samples every :data:`MEASUREMENT_STEP_S` (the
positions then, the LOS and shadowing of the grid step), lazily as the run asks, in chunks that
carry the rule's state (:meth:`~sfl_sim.channel.network.association.A3Handover.advance`): the
events are the same whatever the grouping of the asks.  Radio link monitoring reads the
downlink SINR of the serving cell with every other cell transmitting at full power (the geometry
SINR, our reading of a fully loaded network).  A client has no link from a handover for its
interruption time and from a radio link failure until it re-attaches; a transfer's rate is 0
then.

Uplink interference
-------------------
The engine says which clients transmit (:meth:`NetworkRadio.set_transmitting`).  The
interference PSD at cell ``i`` is ``I_i = sum_k P_k G_{k,i} / B`` over the transmitting clients
``k`` served by other cells (``P_k`` the configured power, ``G_{k,i}`` the coupling gain to cell
``i``, ``B`` the uplink band): a share ``b`` of cell ``i`` overlaps a share ``b_k`` of an
independent orthogonal allocation of the same band by ``b b_k / B`` on average, which receives
``P_k G_{k,i} b / B`` (our reading).  A link of a client served by ``i`` sees the noise rise
``1 + I_i / (N0 F)`` when it is evaluated (a transfer's at its start).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.special

from sfl_sim.channel.network.hexgrid import HexGrid, hexagon_vertices
from sfl_sim.channel.network.protocols import NO_CELL, HandoverEvent
from sfl_sim.channel.protocols import LosAwarePathLoss, LosDecorrelation, ShadowingDecorrelationSource

__all__ = ["NetworkRadio", "NetworkPlacement", "torus_positions_m", "MEASUREMENT_STEP_S", "layout_radius_m"]

#: The measurement step of the handover rule, s: the shortest non-zero TS 38.331 timeToTrigger
#: (40 ms, :data:`~sfl_sim.channel.network.association.TIME_TO_TRIGGER_S`), so a trigger is resolved to
#: one step (our choice: a UE's layer-1 measurement period is of this order; not read here).
MEASUREMENT_STEP_S = 0.04
#: Samples evaluated at once when the rule runs ahead of a timed mobility (our choice: bounds the work
#: per ask; the events do not depend on it).
_CHUNK = 64
#: The shadowing decorrelation distance when neither component gives one, m (our choice: the LOS one).
_DEFAULT_DECORRELATION_M = 50.0
#: Distances below this are taken at it, m (our choice: a client passing under a site).
_MIN_DISTANCE_M = 1.0
_EPS = 1e-9


def layout_radius_m(grid: HexGrid) -> float:
    """The farthest point of the layout's hexagons from the centre, m (the step models' disc)."""
    vertices = np.vstack([hexagon_vertices(s, grid.isd_m) for s in grid.site_positions_m])
    return float(np.hypot(vertices[:, 0], vertices[:, 1]).max())


def torus_positions_m(grid: HexGrid, positions_m: np.ndarray) -> np.ndarray:
    """Positions reduced onto the layout's wrap-around torus: the representative of each point
    modulo the layout's translations nearest the centre (a 1-site layout: unchanged)."""
    pts = np.asarray(positions_m, dtype=float)
    translations = grid.wraparound_translations_m
    if translations.shape[0] < 3:
        return pts
    # coordinates in two translations 60 deg apart, element by element (no BLAS: a point's numbers
    # do not depend on the batch it is reduced with)
    (ax, ay), (bx, by) = translations[1], translations[2]
    det = ax * by - bx * ay
    x, y = pts[..., 0], pts[..., 1]
    c0 = (by * x - bx * y) / det
    c1 = (ax * y - ay * x) / det
    f0, f1 = c0 - np.floor(c0), c1 - np.floor(c1)
    best_x = best_y = best_norm = None
    for i in (0, 1):
        for j in (0, 1):  # the nearest lattice point to a point of the cell is one of its corners
            g0, g1 = f0 - i, f1 - j
            cx, cy = g0 * ax + g1 * bx, g0 * ay + g1 * by
            norm = cx * cx + cy * cy
            if best_norm is None:
                best_x, best_y, best_norm = cx, cy, norm
            else:
                closer = norm < best_norm
                best_x, best_y = np.where(closer, cx, best_x), np.where(closer, cy, best_y)
                best_norm = np.where(closer, norm, best_norm)
    assert best_x is not None and best_y is not None
    return np.stack([best_x, best_y], axis=-1)


class NetworkPlacement:
    """Drops clients uniformly over a network's hexagons (:meth:`HexGrid.drop_uniform`): the cell's
    placement when the scenario names a network."""

    def __init__(self, grid: HexGrid) -> None:
        self.grid = grid

    def sample_positions_m(self, n_clients: int, rng: np.random.Generator) -> np.ndarray:
        """Positions, shape (n_clients, 2), m."""
        return self.grid.drop_uniform(n_clients, rng)[0]

    def __repr__(self) -> str:
        return f"NetworkPlacement({self.grid!r})"


class NetworkRadio:
    """Serving cells, coupling losses and uplink interference of the clients of a network.

    Parameters
    ----------
    grid : HexGrid
        The layout (one cell per site, or three sectors with the TR 38.901 element pattern).
    rule : object
        The handover rule; it must continue from a carried state (``start``, ``advance``,
        ``pending``: :class:`~sfl_sim.channel.network.association.A3Handover`).
    large_scale : LargeScale
        The clients' positions and mobility, the path-loss and shadowing components.
    budget : LinkBudgetModel
        Bands, powers and noise.
    tx_power_w : numpy.ndarray, shape (n,)
        The clients' configured powers, W.
    rng : numpy.random.Generator
        The network's own stream (LOS latents and shadowing per (client, site)).
    timed_mobility : TimedMobility or None
        Positions at any time; None: the large-scale state's (moved between rounds).
    large_scale_step_s, position_step_s : float
        The radio state's grids (the LOS and shadowing update; a transfer's positions).
    """

    def __init__(self, grid: HexGrid, rule: Any, large_scale: Any, budget: Any, tx_power_w: np.ndarray,
                 rng: np.random.Generator, *, timed_mobility: Any, large_scale_step_s: float,
                 position_step_s: float) -> None:
        for name in ("start", "advance", "pending"):
            if not callable(getattr(rule, name, None)):
                raise ValueError(f"handover {rule!r}: a network needs a rule that continues from a carried state "
                                 "(start, advance, pending, as a3 has)")
        self.grid, self.rule, self._ls, self._budget = grid, rule, large_scale, budget
        self._tx_power_w = np.asarray(tx_power_w, dtype=float)
        self._rng = rng
        self._mobility = timed_mobility
        from sfl_sim.channel.large_scale.mobility_traces import TraceMobility

        if isinstance(timed_mobility, TraceMobility) and timed_mobility.started:
            # the radio started the trace in the cell's annulus (pulled onto its edge outside it): on a
            # network the trace moves on the layout's torus, a crossing kept (a trace draws nothing)
            timed_mobility.start(np.zeros((large_scale.n_clients, 2)))
        self._ls_step_s, self._pos_step_s = float(large_scale_step_s), float(position_step_s)
        self.n_clients = n = large_scale.n_clients
        self.n_sites = grid.n_sites
        self.n_cells = grid.n_cells
        self.measurement_step_s = MEASUREMENT_STEP_S
        pathloss = large_scale.pathloss
        # the sector antennas' vertical cut reads the site's height above the client where the path-loss
        # component has both heights (TR 38.901's models), else the horizon (our choice)
        h_bs = getattr(pathloss, "bs_height_m", None)
        h_ut = getattr(getattr(pathloss, "params", None), "ut_height_m", None)
        self._height_difference_m = float(h_bs) - float(h_ut) if h_bs is not None and h_ut is not None else 0.0
        self._sectored = grid.n_cells != grid.n_sites
        self._los_pathloss = pathloss if isinstance(pathloss, LosAwarePathLoss) else None
        self._los_decorrelation_m = float(pathloss.los_decorrelation_m) if isinstance(pathloss, LosDecorrelation) \
            else _DEFAULT_DECORRELATION_M
        shadow_params = getattr(large_scale.shadowing, "params", None)
        self._sigma_db: Any = getattr(shadow_params, "sigma_db", 0.0) if shadow_params is not None else 0.0
        decorrelation = getattr(shadow_params, "decorrelation_m", None)
        if decorrelation is None and isinstance(pathloss, ShadowingDecorrelationSource):
            decorrelation = float(np.max(pathloss.shadowing_decorrelation_m(None)))
        self._shadowing_decorrelation_m = float(decorrelation or _DEFAULT_DECORRELATION_M)
        # downlink: RSRP and the geometry SINR of radio link monitoring
        p_dl = budget.server_tx_power_w
        b_dl = budget.downlink_bandwidth_hz
        scs_hz = 15e3 * 2 ** (budget.numerology or 0)
        self._p_rb_dbm = 0.0 if p_dl is None or b_dl is None else \
            10.0 * math.log10(p_dl * 12 * scs_hz / b_dl * 1e3)  # power per resource block, dBm
        self._dl_power_w = p_dl
        if p_dl is not None and b_dl is not None:
            nf_db = float(getattr(budget.downlink_rate, "noise_figure_db", 0.0) or 0.0)
            self._dl_noise_w: float | None = budget.noise_psd_w_per_hz * 10 ** (nf_db / 10) * b_dl
        else:
            self._dl_noise_w = None
        # the per-(client, site) latents of each epoch (a grid step of a timed mobility, a move otherwise)
        sites = self.n_sites
        self._epochs: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        first = self._positions_now(0.0)
        self._epochs[0] = (first, rng.standard_normal((n, sites)), rng.standard_normal((n, sites)))
        self._epoch_count = 0  # a step mobility's moves seen
        self._loss_cache: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._seen_snapshot: Any = None  # the large-scale snapshot a step mobility's epoch was checked on
        self._transmitting = np.zeros(n, dtype=bool)
        self._on: np.ndarray | None = None  # the transmitting clients (None: to be listed again)
        self._out_kept: tuple[Any, int, np.ndarray | None] = (None, 0, None)  # _out as arrays
        # the rule's state and what it decided so far
        rsrp0 = self._rsrp_at(np.array([0.0]))
        self._state = rule.start(n, self.n_cells, np.argmax(rsrp0[:, :, 0], axis=1))
        self._k_next = 0  # the next measurement sample to evaluate
        self._k_base = 0  # the first sample kept
        self._serving = np.empty((n, 0), dtype=int)
        self._events: list[HandoverEvent] = []
        self._events_of: dict[int, list[HandoverEvent]] = {}  # each client's, for change_times
        # intervals without a link: client, start, end (inf until an RLF re-attaches)
        self._out: list[tuple[int, float, float]] = []
        self._pruned: tuple[float, Any, int] = (-1.0, None, 0)  # the clock, list and length last pruned at
        self._t_floor = 0.0  # no ask before this (the radio's clock)

    # ------------------------------------------------------------------ geometry and losses
    def _positions_now(self, t_s: float) -> np.ndarray:
        if self._mobility is not None:
            return np.asarray(self._mobility.positions_at(t_s), dtype=float)
        return np.array(self._ls.snapshot.positions_m)

    def _epoch_of(self, t_s: np.ndarray) -> np.ndarray:
        """The epoch of each time (a timed mobility's grid step; a step mobility's latest move)."""
        if self._mobility is not None:
            return np.floor(np.asarray(t_s, dtype=float) / self._ls_step_s + _EPS).astype(np.int64)
        self._sync_moves()
        return np.full(np.shape(t_s), self._epoch_count, dtype=np.int64)

    def _epoch_at(self, t_s: float) -> int:
        """:meth:`_epoch_of` of one time."""
        if self._mobility is not None:
            return math.floor(t_s / self._ls_step_s + _EPS)
        self._sync_moves()
        return self._epoch_count

    def _sync_moves(self) -> None:
        """A step mobility moved the clients: a new epoch (latents evolved by the distances)."""
        snapshot = self._ls.snapshot
        if snapshot is self._seen_snapshot:  # nothing changed since the last look
            return
        self._seen_snapshot = snapshot
        positions = snapshot.positions_m
        last = self._epochs[self._epoch_count][0]
        if positions is last or np.array_equal(positions, last):
            return
        self._evolve(self._epoch_count + 1, np.array(positions))
        self._epoch_count += 1

    def _evolve(self, epoch: int, positions: np.ndarray) -> None:
        before, z_los, z_sh = self._epochs[epoch - 1]
        moved = np.hypot(*(positions - before).T)[:, None]
        rho_los = np.exp(-moved / self._los_decorrelation_m)
        rho_sh = np.exp(-moved / self._shadowing_decorrelation_m)
        w = self._rng.standard_normal((2,) + z_los.shape)
        self._epochs[epoch] = (positions, rho_los * z_los + np.sqrt(1 - rho_los ** 2) * w[0],
                               rho_sh * z_sh + np.sqrt(1 - rho_sh ** 2) * w[1])
        for old in [e for e in self._epochs if e < epoch - 4 and e < self._min_epoch()]:
            del self._epochs[old]

    def _min_epoch(self) -> int:
        """The earliest epoch still needed: the clock's, or that of the first measurement sample the
        rule has not evaluated yet (nobody may have asked for a while: the rule still walks there)."""
        if self._mobility is None:
            return self._epoch_count
        return min(self._epoch_at(self._t_floor), self._epoch_at(self._k_next * self.measurement_step_s))

    def _latents(self, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        if epoch not in self._epochs:
            last = max(self._epochs)
            if epoch < last:
                raise ValueError(f"network: epoch {epoch} asked after it was forgotten (the clock only moves forward)")
            for e in range(last + 1, epoch + 1):
                self._evolve(e, self._positions_now(e * self._ls_step_s))
        _, z_los, z_sh = self._epochs[epoch]
        return z_los, z_sh

    def site_losses_db(self, positions_m: np.ndarray, epoch: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Path loss plus shadowing of every (client, site), dB, shape (k, n_sites): the clients
        ``rows`` (default all) at ``positions_m`` (shape (k, 2)) with the latents of ``epoch``."""
        z_los, z_sh = self._latents(epoch)
        if rows is not None:
            z_los, z_sh = z_los[rows], z_sh[rows]
        d = np.maximum(self.grid.wraparound_distances_m(torus_positions_m(self.grid, positions_m)), _MIN_DISTANCE_M)
        flat = d.reshape(-1)
        los = None
        if self._los_pathloss is None:
            loss = np.asarray(self._ls.pathloss.loss_db(flat), dtype=float)
        else:
            p = np.asarray(self._los_pathloss.los_probability(flat), dtype=float)
            los = scipy.special.ndtr(z_los.reshape(-1)) < p
            loss = np.asarray(self._los_pathloss.loss_db(flat, los=los), dtype=float)
        sigma = self._sigma_db
        if isinstance(sigma, str):  # "model": the path-loss model's sigma at each LOS state
            sigma = np.asarray(self._ls.pathloss.shadowing_sigma_db(los), dtype=float)
        loss = loss + np.asarray(sigma, dtype=float) * z_sh.reshape(-1)
        if not np.all(np.isfinite(loss)):
            raise ValueError(f"pathloss {self._ls.pathloss!r}: a (client, site) loss is not finite")
        return loss.reshape(d.shape)

    def cell_losses_db(self, positions_m: np.ndarray, epoch: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Coupling loss of every (client, cell), dB, shape (k, n_cells): :meth:`site_losses_db` of
        the cell's site less the cell's antenna gain towards the client (three sectors: the
        TR 38.901 Table 7.3-1 element, :meth:`HexGrid.cell_antenna_gains_dbi`; one: 0 dBi)."""
        loss = self.site_losses_db(positions_m, epoch, rows)[:, self.grid.cell_site]
        if self._sectored:
            loss = loss - self.grid.cell_antenna_gains_dbi(torus_positions_m(self.grid, positions_m),
                                                           self._height_difference_m)
        return loss

    def cell_losses_at(self, t_s: float) -> np.ndarray:
        """Coupling loss of every (client, cell) at ``t_s`` on the radio state's position grid, dB,
        shape (n, n_cells) (kept per (epoch, position grid index))."""
        return self._losses_gains_at(float(t_s))[0]

    def _losses_gains_at(self, t_s: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`cell_losses_at` and the coupling gains, linear (both kept)."""
        epoch = self._epoch_at(t_s)
        index = math.floor(t_s / self._pos_step_s + _EPS) if self._mobility is not None else 0
        key = (epoch, index)
        hit = self._loss_cache.get(key)
        if hit is None:
            if len(self._loss_cache) >= 256:
                self._loss_cache.pop(next(iter(self._loss_cache)))
            loss = self.cell_losses_db(self._positions_now(index * self._pos_step_s), epoch)
            hit = (loss, np.power(10.0, -loss / 10.0))
            self._loss_cache[key] = hit
        return hit

    def _rsrp_at(self, times_s: np.ndarray) -> np.ndarray:
        """RSRP of every (client, cell) at the sample times, dBm, shape (n, n_cells, len(times))."""
        out = np.empty((self.n_clients, self.n_cells, times_s.size))
        epochs = self._epoch_of(times_s)
        if self._mobility is None:
            for j, t in enumerate(times_s.tolist()):
                out[:, :, j] = self._p_rb_dbm - 10.0 * math.log10(12) - self.cell_losses_at(t)
            return out
        # a timed mobility: the positions at every sample, the losses of the samples of one epoch at once
        n = self.n_clients
        for e in np.unique(epochs).tolist():
            cols = np.flatnonzero(epochs == e)
            positions = np.concatenate([self._positions_now(t) for t in times_s[cols].tolist()])
            loss = self.cell_losses_db(positions, int(e), np.tile(np.arange(n), cols.size))
            loss = loss.reshape(cols.size, n, self.n_cells)
            out[:, :, cols] = np.moveaxis(self._p_rb_dbm - 10.0 * math.log10(12) - loss, 0, 2)
        return out

    def _sinr_db(self, rsrp_dbm: np.ndarray) -> np.ndarray | None:
        """Geometry downlink SINR of every (client, cell), dB: every other cell at full power."""
        if self._dl_noise_w is None:
            return None
        # RSRP is per resource element; the ratio of received powers is that of RSRPs
        received = np.power(10.0, (rsrp_dbm - self._p_rb_dbm + 10.0 * math.log10(12)) / 10.0) * self._dl_power_w
        total = received.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            return 10.0 * np.log10(received / (self._dl_noise_w + total - received))

    # ------------------------------------------------------------------ the rule, lazily
    def _sample(self, t_s: Any) -> np.ndarray:
        return np.floor(np.asarray(t_s, dtype=float) / self.measurement_step_s + _EPS).astype(np.int64)

    def _ensure(self, k_last: int) -> None:
        """Evaluate the rule up to measurement sample ``k_last`` inclusive."""
        if k_last < self._k_next:
            return
        if self._mobility is not None:  # deterministic in time: run ahead in chunks
            k_last = max(k_last, self._k_next + _CHUNK - 1)
        ks = np.arange(self._k_next, k_last + 1)
        times = ks * self.measurement_step_s
        rsrp = self._rsrp_at(times)
        state = self._state
        quiet = (self._mobility is None and not state.failed and np.all(np.isnan(state.ttt_start))
                 and np.all(np.isnan(state.oos_start)) and np.all(state.blocked_until <= times[0])
                 and ks.size > 1)
        if quiet:  # a static network: the first sample decides; if nothing starts, nothing changes
            serving, _, events = self.rule.advance(state, times[:1], rsrp[:, :, :1], self._sinr(rsrp[:, :, :1]))
            if events or not np.all(np.isnan(state.ttt_start)) or not np.all(np.isnan(state.oos_start)):
                rest_serving, _, rest_events = self.rule.advance(state, times[1:], rsrp[:, :, 1:],
                                                                 self._sinr(rsrp[:, :, 1:]))
                serving = np.concatenate([serving, rest_serving], axis=1)
                events += rest_events
            else:
                serving = np.repeat(serving, ks.size, axis=1)
        else:
            serving, _, events = self.rule.advance(state, times, rsrp, self._sinr(rsrp))
        self._record(events)
        # kept as attached_cell answers them: while a client has no cell, cell 0 (the band it is counted in)
        self._serving = np.concatenate([self._serving, np.where(serving == NO_CELL, 0, serving)], axis=1)
        self._k_next = k_last + 1
        # forget samples before the clock
        drop = int(self._sample(self._t_floor)) - self._k_base - 1
        if drop > 0:
            self._serving = self._serving[:, drop:]
            self._k_base += drop

    def _sinr(self, rsrp: np.ndarray) -> np.ndarray | None:
        return self._sinr_db(rsrp)

    def _record(self, events: list[HandoverEvent]) -> None:
        failed = self._state.failed
        for e in events:
            self._events.append(e)
            self._events_of.setdefault(e.client, []).append(e)
            if e.cause == "rlf":  # re-attached: no link until the re-attachment's sample
                self._out = [o for o in self._out if not (o[0] == e.client and o[1] == e.time_s)]
                self._out.append((e.client, e.time_s, self._serving_time_after(e)))
            else:
                self._out.append((e.client, e.time_s, e.time_s + e.interruption_s))
        for client, (time_s, _) in failed.items():
            if not any(c == client and s == time_s for c, s, _ in self._out):
                self._out.append((client, time_s, math.inf))
        self._out = [o for o in self._out if o[2] > self._t_floor]

    def _serving_time_after(self, event: HandoverEvent) -> float:
        """When a client failed at ``event.time_s`` re-attached: the first sample at or after the
        re-establishment time (what the rule does)."""
        due = event.time_s + event.interruption_s
        k = math.ceil(due / self.measurement_step_s - 1e-6)
        return k * self.measurement_step_s

    # ------------------------------------------------------------------ the port
    def positions_at(self, t_s: float) -> np.ndarray:
        """The clients' positions at ``t_s`` on the layout's torus, shape (n, 2), m (a step
        mobility: the latest move's)."""
        return torus_positions_m(self.grid, self._positions_now(float(t_s)))

    def advance_to(self, t_s: float) -> None:
        """The clock moved to ``t_s``: nothing before it is asked again."""
        self._t_floor = max(self._t_floor, float(t_s))
        if self._mobility is None:
            self._sync_moves()

    def attached_cell(self, client_ids: Any, t_s: Any) -> np.ndarray:
        """The serving cell of each client at each time (the target during a handover's
        interruption; cell 0 from a radio link failure until the re-attachment: our choice)."""
        ids = np.asarray(client_ids, dtype=int)
        if np.ndim(t_s) == 0:  # one time: one column of the evaluated samples
            one = math.floor(float(t_s) / self.measurement_step_s + _EPS)
            self._ensure(one)
            if one < self._k_base:
                self._forgotten(float(t_s))
            return self._serving[ids, one - self._k_base]
        k = np.broadcast_to(self._sample(t_s), ids.shape)
        if k.size == 0:
            return np.zeros(ids.shape, dtype=int)
        self._ensure(int(k.max()))
        if int(k.min()) < self._k_base:  # a negative column would silently read a later sample
            self._forgotten(float(np.min(t_s)))
        return self._serving[ids, k - self._k_base]

    def _forgotten(self, t_s: float) -> None:
        raise ValueError(f"network: the serving cells at {t_s!r} s were asked after they were forgotten "
                         f"(kept from {self._k_base * self.measurement_step_s!r} s: the clock only moves forward; "
                         "read what a round needs when it happens)")

    def serving_cell(self, client_ids: Any, t_s: Any) -> np.ndarray:
        """The serving cell of each client at ``t_s``; :data:`NO_CELL` while it has no link."""
        ids = np.asarray(client_ids, dtype=int).reshape(-1)
        t = np.broadcast_to(np.asarray(t_s, dtype=float), ids.shape)
        cell = self.attached_cell(ids, t)
        return np.where(self.connected(ids, t), cell, NO_CELL)

    def _prune_out(self) -> None:
        """Forget the intervals without a link that are over before the clock (never asked again);
        looked at again only when the clock or the list moved."""
        out = self._out
        floor, kept, length = self._pruned
        if floor == self._t_floor and kept is out and length == len(out):
            return
        if out and min(o[2] for o in out) <= self._t_floor:
            out = self._out = [o for o in out if o[2] > self._t_floor]
        self._pruned = (self._t_floor, out, len(out))

    def _out_arrays(self) -> np.ndarray | None:
        """The intervals without a link still open after the clock, shape (3, m) (client, start,
        end), or None when there are none (kept until they change)."""
        self._prune_out()
        out = self._out
        kept_list, kept_len, kept = self._out_kept
        if kept_list is out and kept_len == len(out):
            return kept
        arrays = np.array(out, dtype=float).T.copy() if out else None
        self._out_kept = (out, len(out), arrays)
        return arrays

    def connected(self, client_ids: Any, t_s: Any) -> np.ndarray:
        """Whether each client has a link at ``t_s`` (not in a handover's interruption, not between
        a radio link failure and its re-attachment)."""
        ids = np.asarray(client_ids, dtype=int)
        if np.ndim(t_s) == 0:  # one time: the clients without a link then, from the (short) list
            one = float(t_s)
            self._ensure(math.floor(one / self.measurement_step_s + _EPS))
            self._prune_out()
            off = [c for c, start, end in self._out if start - _EPS <= one < end - _EPS]
            linked = np.ones(ids.shape, dtype=bool)
            for c in off:  # a few at a time
                linked &= ids != c
            return linked
        t = np.asarray(t_s, dtype=float)
        if t.size == 0 or ids.size == 0:
            return np.ones(ids.shape, dtype=bool)
        t_max = float(t.max())
        self._ensure(math.floor(t_max / self.measurement_step_s + _EPS))
        out = self._out_arrays()
        if out is None:
            return np.ones(ids.shape, dtype=bool)
        # only the intervals that overlap the times asked: usually none
        t_min = float(t.min())
        near = (out[1] - _EPS <= t_max) & (out[2] - _EPS > t_min)
        if not near.any():
            return np.ones(ids.shape, dtype=bool)
        client, start, end = out[:, near]
        t = np.broadcast_to(t, ids.shape)
        hit = (ids[..., None] == client) & (t[..., None] >= start - _EPS) & (t[..., None] < end - _EPS)
        return ~hit.any(axis=-1)

    def changes_within(self, client_ids: Any, t0_s: Any, t1_s: Any) -> np.ndarray:
        """Whether each client changes cell or loses its link (a handover or a radio link failure,
        evaluated or pending) at a time in ``[t0_s, t1_s]`` (per client; ``t1_s`` may be inf)."""
        ids = np.asarray(client_ids, dtype=int).reshape(-1)
        t0 = np.broadcast_to(np.asarray(t0_s, dtype=float), ids.shape)
        t1 = np.broadcast_to(np.asarray(t1_s, dtype=float), ids.shape)
        out = np.zeros(ids.shape, dtype=bool)
        if ids.size == 0:
            return out
        out |= ~np.isfinite(t1)
        finite = ~out
        if not finite.any():
            return out
        last = float(t1[finite].max())
        for event in self.handovers_between(float(t0[finite].min()), math.nextafter(last, math.inf)):
            out |= (ids == event.client) & (t0 <= event.time_s) & (event.time_s <= t1)
        gaps = self._out_arrays()  # and any interval without a link that overlaps the transfer
        if gaps is not None:
            client, start, end = gaps
            out |= ((ids[:, None] == client) & (start[None, :] - _EPS <= t1[:, None])
                    & (end[None, :] - _EPS > t0[:, None])).any(axis=1)
        return out

    def connected_one(self, client: int, t_s: float) -> bool:
        """:meth:`connected` of one client at one time."""
        return bool(self.connected(np.array([client]), float(t_s))[0])

    def change_times(self, client: int, t0_s: float, t1_s: float) -> list[float]:
        """The times in ``(t0_s, t1_s]`` at which ``client``'s serving cell or link changes (a
        handover, the end of its interruption, a radio link failure, its re-attachment), in
        time order: where its rate may change (the rest of the time it changes only with the
        position grid)."""
        reach = t1_s + float(getattr(self.rule.params, "reestablishment_time_s", 0.0)) + self.measurement_step_s
        self._ensure(math.floor(reach / self.measurement_step_s + _EPS))
        times = {e.time_s for e in self._events_of.get(client, ()) if t0_s < e.time_s <= t1_s}
        times.update(e.time_s for e in self.rule.pending(self._state) if e.client == client and t0_s < e.time_s <= t1_s)
        for c, start, end in self._out:
            if c == client:
                times.update(x for x in (start, end) if t0_s < x <= t1_s)
        return sorted(times)

    def losses(self, ids: np.ndarray, t_s: Any) -> tuple[np.ndarray, np.ndarray]:
        """Coupling loss (dB) and gain (linear) of each client to its serving cell at ``t_s``."""
        if np.ndim(t_s) == 0:
            loss_all, gain_all = self._losses_gains_at(float(t_s))
            cell = self.attached_cell(ids, t_s)
            return loss_all[ids, cell], gain_all[ids, cell]
        t = np.broadcast_to(np.asarray(t_s, dtype=float), ids.shape)
        if t.size == 0:
            return np.empty(ids.shape), np.empty(ids.shape)
        cell = self.attached_cell(ids, t)
        # the losses are kept per (epoch, position grid index): few distinct ones per ask
        t_min, t_max = float(t.min()), float(t.max())
        if self._mobility is None:
            same = True  # one epoch: the step mobility moves between asks, not within one
        else:
            same = (self._epoch_at(t_min) == self._epoch_at(t_max)
                    and math.floor(t_min / self._pos_step_s + _EPS) == math.floor(t_max / self._pos_step_s + _EPS))
        if same:
            loss_all, gain_all = self._losses_gains_at(t_min)
            return loss_all[ids, cell], gain_all[ids, cell]
        epoch = self._epoch_of(t)
        index = np.floor(t / self._pos_step_s + _EPS).astype(np.int64)
        key = (epoch - epoch.min()) * (int(index.max() - index.min()) + 1) + (index - index.min())
        loss, gain = np.empty(ids.shape), np.empty(ids.shape)
        for value in np.unique(key).tolist():
            on = key == value
            loss_all, gain_all = self._losses_gains_at(float(t[on].flat[0]))
            loss[on], gain[on] = loss_all[ids[on], cell[on]], gain_all[ids[on], cell[on]]
        return loss, gain

    def noise_rise(self, ids: np.ndarray, t_s: float) -> np.ndarray:
        """``1 + I_i / (N0 F)`` of each client's serving cell ``i`` (the transmissions in flight)."""
        if self._on is None:
            self._on = np.flatnonzero(self._transmitting)
        on = self._on
        if on.size == 0 or self.n_cells == 1:  # nobody transmits, or no other cell to hear
            return np.ones(np.shape(ids))
        t = float(t_s)
        cells = self.attached_cell(ids, t)
        needed, at = np.unique(cells, return_inverse=True)  # a transfer's start: one cell
        psd = self._interference_psd(on, t, needed)
        return (1.0 + psd / self._budget.noise_floor_w_per_hz)[at].reshape(np.shape(ids))

    def _interference_psd(self, on: np.ndarray, t_s: float, cells: np.ndarray) -> np.ndarray:
        """The uplink interference PSD at ``cells`` from the transmitting clients ``on``, W/Hz: each
        cell's sum correctly rounded (``math.fsum``), so a cell's number does not depend on which
        other cells are asked with it."""
        _, gain = self._losses_gains_at(t_s)
        power = self._tx_power_w[on] * self.connected(on, t_s)
        tx_cell = self.attached_cell(on, t_s)
        band_hz = self._budget.uplink_bandwidth_hz
        # a cell's own clients are orthogonal to it
        return np.array([math.fsum(np.where(tx_cell == c, 0.0, power * gain[on, c]).tolist()) / band_hz
                         for c in cells.tolist()])

    def set_transmitting(self, client: int, on: bool) -> None:
        """The engine says whether ``client`` has an uplink transfer in flight."""
        client, on = int(client), bool(on)
        if self._transmitting[client] != on:
            self._transmitting[client] = on
            self._on = None

    def handovers_between(self, t0_s: float, t1_s: float) -> tuple[HandoverEvent, ...]:
        """The events with ``t0_s <= time_s < t1_s`` in time order (ties by client)."""
        reach = t1_s + float(getattr(self.rule.params, "reestablishment_time_s", 0.0)) + self.measurement_step_s
        self._ensure(int(self._sample(reach)))
        chosen = [e for e in self._events + self.rule.pending(self._state) if t0_s <= e.time_s < t1_s]
        return tuple(sorted(chosen, key=lambda e: (e.time_s, e.client)))

    def handover_events(self, with_pending: bool = False) -> tuple[HandoverEvent, ...]:
        """Every event evaluated so far in time order (``with_pending``: with the radio link
        failures not re-attached yet)."""
        events = self._events + (self.rule.pending(self._state) if with_pending else [])
        return tuple(sorted(events, key=lambda e: (e.time_s, e.client)))

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Everything the network carries, as plain data."""
        return {
            "rng": self._rng.bit_generator.state,
            "epochs": [[e, p.copy(), a.copy(), b.copy()] for e, (p, a, b) in sorted(self._epochs.items())],
            "epoch_count": self._epoch_count,
            "rule": self._state.state_dict(),
            "k_next": self._k_next, "k_base": self._k_base, "serving": self._serving.copy(),
            "events": [[e.time_s, e.client, e.source_cell, e.target_cell, e.cause, e.interruption_s]
                       for e in self._events],
            "out": [list(o) for o in self._out], "t_floor": self._t_floor,
            "transmitting": self._transmitting.copy(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        from sfl_sim.channel.network.association import A3State

        try:
            self._rng.bit_generator.state = state["rng"]
            self._epochs = {int(e): (np.array(p, dtype=float), np.array(a, dtype=float), np.array(b, dtype=float))
                            for e, p, a, b in state["epochs"]}
            self._epoch_count = int(state["epoch_count"])
            self._state = A3State.from_state_dict(state["rule"])
            self._k_next, self._k_base = int(state["k_next"]), int(state["k_base"])
            serving = np.array(state["serving"], dtype=int).reshape(self.n_clients, -1)
            self._serving = np.where(serving == NO_CELL, 0, serving)
            self._events = [HandoverEvent(float(t), int(c), int(s), int(g), str(cause), float(i))
                            for t, c, s, g, cause, i in state["events"]]
            self._events_of = {}
            for event in self._events:
                self._events_of.setdefault(event.client, []).append(event)
            self._out = [(int(c), float(s), float(f)) for c, s, f in state["out"]]
            self._t_floor = float(state["t_floor"])
            self._transmitting = np.array(state["transmitting"], dtype=bool).reshape(self.n_clients)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"Cell state['network']: not a network state of this scenario ({exc})") from None
        self._loss_cache = {}
        self._seen_snapshot, self._on = None, None
        self._out_kept = (None, 0, None)
        self._pruned = (-1.0, None, 0)
