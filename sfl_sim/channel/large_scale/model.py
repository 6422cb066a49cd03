"""The large-scale channel of a cell's clients as one object: where the clients are, whether they
are in LOS, their path loss and shadowing, and how all of it evolves together when they move.

A scenario names the parts separately (``cell.placement``, ``cell.pathloss``, ``cell.shadowing``,
``cell.mobility``); :class:`LargeScale` composes them, and is the one place that looks up which
optional capabilities of :mod:`sfl_sim.channel.protocols` each part has (a LOS-aware path loss,
its shadowing sigma and decorrelation distance, its validity range, site-aware shadowing, a disc
placement, a top speed).  The TR 38.901 and TR 36.814 numbers those parts carry are data
(:mod:`sfl_sim.channel.large_scale.tables`).

Random streams
--------------
Each source of randomness has its own generator, so swapping one model never shifts the others'
draws: ``placement_rng`` (positions, on construction), ``los_rng`` (the LOS latent of a LOS-aware
path-loss model, on construction and at every move), ``shadowing_rng`` (shadowing, on
construction and at every move when the model has ``update_site_db``).  Mobility draws from the
generator passed to :meth:`LargeScale.move`.

LOS state
---------
When the path-loss model has ``los_probability(distance_m)``, each client carries a latent
standard normal ``z_k`` (from ``los_rng``) and is in LOS while ``Phi(z_k) < Pr_LOS(d_k)``
(``Phi`` the normal CDF), so that ``P(LOS) = Pr_LOS``.  When the client moves by ``dd`` metres,
``z_k <- rho z_k + sqrt(1 - rho^2) w`` with ``rho = exp(-dd / d_LOS)`` and ``d_LOS`` the model's
``los_decorrelation_m`` (TR 38.901 Table 7.6.3.1-2: 50 m; 50 m when the model has none): a client
that stays put keeps its state, one that travels far gets a fresh draw, and the state always has
the right probability at the new distance (the spatially consistent LOS procedure of TR 38.901
7.6.3.3, per client).  Shadowing is drawn after the LOS state, since its sigma may depend on it.

Checks
------
Every quantity the parts produce (positions, path loss, shadowing, gains) must be finite: a
``ValueError`` names the part and the quantity otherwise.  A path-loss model with
``valid_distance_m`` makes :class:`LargeScale` warn (:class:`ModelValidityWarning`, once) or, with
``out_of_range="error"``, refuse when clients lie outside it, on construction and after every move;
with mobility, also when the annulus the clients may move in reaches outside it.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import scipy.special

from sfl_sim.channel.checks import check_finite, checked_rng_state, plain_data
from sfl_sim.channel.large_scale.geometry import distances_m
from sfl_sim.channel.limits import CELL_RADIUS_M, CLIENT_DISTANCE_M, DECORRELATION_M, MIN_DISTANCE_M
from sfl_sim.channel.protocols import (
    BoundedSpeedMobility,
    DiscPlacement,
    LosAwarePathLoss,
    LosDecorrelation,
    Mobility,
    PathLoss,
    Placement,
    RangedPathLoss,
    Shadowing,
    ShadowingDecorrelationSource,
    ShadowingSigmaSource,
    ShadowingSite,
    SiteShadowing,
    SiteShadowingUpdate,
)
from sfl_sim.kit.checks import check_scalar, readonly, state_array

__all__ = [
    "LargeScale",
    "LargeScaleSnapshot",
    "ModelValidityWarning",
    "NetworkSites",
    "OUT_OF_RANGE_CHOICES",
    "OutOfRange",
    "DEFAULT_LOS_DECORRELATION_M",
]

#: LOS-state decorrelation distance when the path-loss model gives none, metres.
DEFAULT_LOS_DECORRELATION_M = 50.0
#: What the cell does when clients lie outside the path-loss model's ``valid_distance_m``: warn
#: (:class:`ModelValidityWarning`) or refuse (the scenario's ``cell.out_of_range``).
OutOfRange = Literal["warn", "error"]
OUT_OF_RANGE_CHOICES: tuple[str, ...] = get_args(OutOfRange)
#: Frames between a validity warning and the code that built or moved the cell (the warning
#: points there): ``_validity_problem`` <- its check <- ``LargeScale`` <- ``Cell`` <- caller.
_WARNING_STACKLEVEL = 5


class ModelValidityWarning(UserWarning):
    """Clients lie outside the distances a path-loss model is valid for."""


@dataclass(frozen=True)
class NetworkSites:
    """What the validity check of a moving client needs of a network of sites (``cell.network``).

    Attributes
    ----------
    floor_m : float
        The distance below which the network takes a client's distance to a site at this value, m
        (it may pass under a site).
    isd_m : float or None
        The inter-site distance of a hexagonal layout, m; None for another layout.
    """

    floor_m: float
    isd_m: float | None = None

    def share_within(self, distance_m: float) -> float | None:
        """The share of a hexagonal layout's area within ``distance_m`` of a site: the disc
        ``pi d^2`` over the site's hexagon of inradius ``isd_m / 2``, area ``(sqrt(3) / 2) isd_m^2``
        (whole while the disc lies inside it, ``d <= isd_m / 2``); None without ``isd_m`` or beyond."""
        if self.isd_m is None or distance_m > self.isd_m / 2.0:
            return None
        return math.pi * distance_m**2 / (math.sqrt(3.0) / 2.0 * self.isd_m**2)


@dataclass(frozen=True)
class LargeScaleSnapshot:
    """The large-scale channel of every client at one moment; read-only arrays of shape (n,).

    Attributes
    ----------
    positions_m : numpy.ndarray, shape (n, 2)
        Client positions, metres; the base station at the origin.
    distance_m : numpy.ndarray
        2-D distances to the base station, metres.
    los : numpy.ndarray of bool, or None
        LOS state per client; None when the path-loss model has no LOS.
    pathloss_db, shadowing_db : numpy.ndarray
        Path loss and shadowing (positive = extra loss), dB.
    coupling_loss_db : numpy.ndarray
        ``pathloss_db + shadowing_db``.
    gain_linear : numpy.ndarray
        Linear power gain ``10^(-coupling_loss_db / 10)``, finite and > 0.
    site : ShadowingSite
        What the shadowing model saw of these clients (its next update starts from it).
    """

    positions_m: np.ndarray
    distance_m: np.ndarray
    los: np.ndarray | None
    pathloss_db: np.ndarray
    shadowing_db: np.ndarray
    coupling_loss_db: np.ndarray
    gain_linear: np.ndarray
    site: ShadowingSite


class LargeScale:
    """Placement, LOS state, path loss, shadowing and mobility of ``n_clients`` clients, composed.

    The clients are dropped on construction: positions, then the LOS latent, then path loss, then
    shadowing (see the module docstring for the streams and the LOS state).

    Parameters
    ----------
    placement : Placement
        Drops the clients; a :class:`~sfl_sim.channel.protocols.DiscPlacement` gives the default
        radii.
    pathloss : PathLoss
        Path loss; its optional capabilities (LOS, shadowing sigma and decorrelation, validity
        range, LOS decorrelation distance) are looked up here, once.
    shadowing : Shadowing
        Shadowing; ``sample_site_db`` / ``update_site_db`` are preferred when present.
    mobility : Mobility
        Moves the clients in :meth:`move`.
    n_clients : int
        Number of clients, >= 1.
    placement_rng, los_rng, shadowing_rng : numpy.random.Generator
        The streams of the positions, the LOS latent and the shadowing.
    radius_m : float, optional
        Radius of the disc mobility keeps clients in, metres; default the placement's
        ``radius_m``, else the farthest initial client.
    min_distance_m : float, optional
        Exclusion radius around the base station for mobility, metres; default the placement's
        ``min_distance_m``, at least 1 m.
    out_of_range : {"warn", "error"}, default "warn"
        What to do when clients lie outside the path-loss model's ``valid_distance_m``.
    network_sites : NetworkSites, optional
        The clients move over a network of sites (``cell.network``): the mobility check says what
        a moving client meets there (:meth:`_check_mobility_validity`).

    Raises
    ------
    ValueError
        For a radius out of its range, a part that returns arrays of the wrong shape or
        non-finite values, a bad ``valid_distance_m``, or (``out_of_range="error"``) clients
        outside the path-loss model's validity range.
    """

    def __init__(
        self,
        placement: Placement,
        pathloss: PathLoss,
        shadowing: Shadowing,
        mobility: Mobility,
        *,
        n_clients: int,
        placement_rng: np.random.Generator,
        los_rng: np.random.Generator,
        shadowing_rng: np.random.Generator,
        radius_m: float | None = None,
        min_distance_m: float | None = None,
        out_of_range: str = "warn",
        network_sites: NetworkSites | None = None,
    ) -> None:
        if out_of_range not in OUT_OF_RANGE_CHOICES:
            raise ValueError(f"out_of_range must be one of {', '.join(OUT_OF_RANGE_CHOICES)}, got {out_of_range!r}")
        self.placement, self.pathloss, self.shadowing, self.mobility = placement, pathloss, shadowing, mobility
        self._n_clients = n_clients
        self._los_rng, self._shadowing_rng = los_rng, shadowing_rng
        self._out_of_range = out_of_range
        self._network_sites = network_sites
        self._validity_warned = False

        # The capabilities of the parts, looked up once (isinstance on a runtime protocol is not free).
        self._los_pathloss = pathloss if isinstance(pathloss, LosAwarePathLoss) else None
        self._los_decorrelation_m = (
            DECORRELATION_M.check(f"pathloss {pathloss!r} los_decorrelation_m", pathloss.los_decorrelation_m)
            if isinstance(pathloss, LosDecorrelation) else DEFAULT_LOS_DECORRELATION_M
        )
        self._model_sigma_db: Callable[[Any], Any] | None = (
            pathloss.shadowing_sigma_db if isinstance(pathloss, ShadowingSigmaSource) else None)
        self._model_decorrelation_m: Callable[[Any], Any] | None = (
            pathloss.shadowing_decorrelation_m if isinstance(pathloss, ShadowingDecorrelationSource) else None)
        self._sample_site_db = shadowing.sample_site_db if isinstance(shadowing, SiteShadowing) else None
        self._update_site_db = shadowing.update_site_db if isinstance(shadowing, SiteShadowingUpdate) else None
        self._valid_distance_m = _validity_range(pathloss)
        self._mobility_is_static = isinstance(mobility, BoundedSpeedMobility) and mobility.max_speed_m_per_s == 0
        disc = placement if isinstance(placement, DiscPlacement) else None

        positions = self._checked_positions(placement.sample_positions_m(n_clients, placement_rng), "placement",
                                            placement)
        distance = distances_m(positions)
        self._los_latent = los_rng.standard_normal(n_clients) if self._los_pathloss is not None else None
        los = self._los_state(distance)
        pathloss_db = self._pathloss_db(distance, los)
        site = self._site(positions, distance, los)
        if self._sample_site_db is not None:
            shadowing_db, self._shadowing_state = self._sample_site_db(site, shadowing_rng)
        else:
            shadowing_db, self._shadowing_state = shadowing.sample_db(n_clients, shadowing_rng), None
        self._now = self._snapshot(site, pathloss_db, self._checked_shadowing(shadowing_db))

        if radius_m is None and disc is not None:
            radius_m = disc.radius_m
        self._radius_m = (
            CELL_RADIUS_M.check("radius_m", float(distance.max())) if radius_m is None
            else CELL_RADIUS_M.check("radius_m", radius_m)
        )
        if min_distance_m is None:
            min_distance_m = (disc.min_distance_m if disc is not None else None) or 0.0
        self._min_distance_m = max(MIN_DISTANCE_M.check("min_distance_m", min_distance_m), 1.0)
        if self._min_distance_m >= self._radius_m:
            raise ValueError(f"min_distance_m must be < radius_m ({self._radius_m:g} m), got {min_distance_m!r}")
        self._check_validity(distance, "are placed")
        self._check_mobility_validity()

    # ------------------------------------------------------------------ read-only state
    @property
    def n_clients(self) -> int:
        """Number of clients."""
        return self._n_clients

    @property
    def snapshot(self) -> LargeScaleSnapshot:
        """The clients' large-scale channel now."""
        return self._now

    @property
    def radius_m(self) -> float:
        """Radius of the disc mobility keeps clients in, metres."""
        return self._radius_m

    @property
    def los_decorrelation_m(self) -> float:
        """The LOS state's decorrelation distance, metres (the path-loss model's, else 50 m)."""
        return self._los_decorrelation_m

    @property
    def min_distance_m(self) -> float:
        """Exclusion radius around the base station for mobility, metres."""
        return self._min_distance_m

    # ------------------------------------------------------------------ mobility
    def move(self, dt_s: float, rng: np.random.Generator) -> np.ndarray:
        """Move the clients by ``dt_s`` seconds of mobility and update their large-scale channel.

        Order: positions (mobility, from ``rng``), then the LOS latent (from the LOS stream), then
        path loss, then shadowing (``update_site_db`` from the shadowing stream when the model has
        it; otherwise each client keeps its value).  When nobody moved, nothing changes and no
        stream is consumed.

        Parameters
        ----------
        dt_s : float
            Elapsed simulated time in seconds, >= 0.
        rng : numpy.random.Generator
            The mobility stream.

        Returns
        -------
        numpy.ndarray, shape (n,)
            Distance each client moved, metres.
        """
        dt = check_scalar("dt_s", dt_s, minimum=0.0)
        stepped = self.mobility.step(self._now.positions_m, dt, rng, radius_m=self._radius_m,
                                     min_distance_m=self._min_distance_m)
        return self.relocate(stepped)

    def relocate(self, positions_m: Any) -> np.ndarray:
        """Put the clients at ``positions_m`` and update their large-scale channel as :meth:`move` does.

        What a timed mobility (positions as a function of time) uses instead of a step: the LOS
        latent, path loss and shadowing follow the clients exactly as after a step to the same
        positions.  When nobody moved, nothing changes and no stream is consumed.

        Parameters
        ----------
        positions_m : array_like, shape (n, 2)
            The clients' new positions, metres.

        Returns
        -------
        numpy.ndarray, shape (n,)
            Distance each client moved, metres.
        """
        now = self._now
        new_pos = self._checked_positions(positions_m, "mobility", self.mobility)
        moved_m = np.hypot(*(new_pos - now.positions_m).T)
        if not np.any(moved_m > 0):
            return moved_m
        distance = distances_m(new_pos)
        if self._los_latent is not None:
            rho = np.exp(-moved_m / self._los_decorrelation_m)
            w = self._los_rng.standard_normal(self._n_clients)
            self._los_latent = rho * self._los_latent + np.sqrt(1.0 - rho**2) * w
        los = self._los_state(distance)
        pathloss_db = self._pathloss_db(distance, los)
        site = self._site(new_pos, distance, los)
        if self._update_site_db is not None:
            shadowing_db, self._shadowing_state = self._update_site_db(
                self._shadowing_state, now.site, site, self._shadowing_rng)
            shadowing_db = self._checked_shadowing(shadowing_db)
        else:
            shadowing_db = np.array(now.shadowing_db)
        self._now = self._snapshot(site, pathloss_db, shadowing_db)
        self._check_validity(distance, "are, after a move,")
        return moved_m

    def coupling_loss_db_at(self, client_ids: np.ndarray, positions_m: np.ndarray) -> np.ndarray:
        """Coupling loss (dB) the clients would have at ``positions_m`` (shape (k, 2)) with their LOS
        latent and shadowing held: pure (no stream is drawn, nothing changes).

        What a transfer's rate follows between two moves (:mod:`sfl_sim.channel.radio_state`): the
        path loss follows the distance; the LOS state follows it through the held latent; the
        shadowing, drawn only when the clients are moved, is held (our choice: it decorrelates
        over metres, :data:`~sfl_sim.channel.large_scale.tables` decorrelation distances, far more
        than a client travels within one transfer).
        """
        distance = distances_m(np.asarray(positions_m, dtype=float))
        if self._los_pathloss is None:
            pathloss_db = np.asarray(self.pathloss.loss_db(distance), dtype=float)
        else:
            assert self._los_latent is not None
            p = np.asarray(self._los_pathloss.los_probability(distance), dtype=float)
            los = scipy.special.ndtr(self._los_latent[client_ids]) < p
            pathloss_db = np.asarray(self._los_pathloss.loss_db(distance, los=los), dtype=float)
        check_finite(pathloss_db, f"pathloss {self.pathloss!r}", "path loss (dB)")
        return pathloss_db + self._now.shadowing_db[client_ids]

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The evolving state as plain data: the large-scale part of the cell's state.

        Returns
        -------
        dict
            ``positions_m`` (n, 2); ``los_latent`` (n,) or None; ``shadowing_db`` (n,);
            ``shadowing_state`` (what the shadowing model carries between moves); ``los_rng`` and
            ``shadowing_rng`` (the streams' ``bit_generator.state``).  Copies.

        Raises
        ------
        ValueError
            If the shadowing model's carried state is not plain data.
        """
        now = self._now
        return {
            "positions_m": np.array(now.positions_m),
            "los_latent": None if self._los_latent is None else np.array(self._los_latent),
            "shadowing_db": np.array(now.shadowing_db),
            "shadowing_state": plain_data(self._shadowing_state, f"shadowing {self.shadowing!r} state"),
            "los_rng": plain_data(self._los_rng.bit_generator.state, "los_rng state"),
            "shadowing_rng": plain_data(self._shadowing_rng.bit_generator.state, "shadowing_rng state"),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the large-scale part of a cell state (:meth:`state_dict`'s keys) without changing anything.

        Parameters
        ----------
        state : dict
            A cell state whose keys were checked; arrays may be numpy arrays, lists or CPU tensors.

        Returns
        -------
        callable
            Restores the checked state when called: afterwards every property and every later
            :meth:`move` is bit-identical to the continuation of the saved clients.

        Raises
        ------
        ValueError
            For arrays of the wrong shape or with non-finite values, clients at impossible
            distances, a LOS latent that does not fit the path-loss model, or an rng state that
            does not fit the streams.
        """
        n = self._n_clients
        positions = state_array("Cell", state, "positions_m", (n, 2))
        distance = CLIENT_DISTANCE_M.check_array("Cell state distance_m", distances_m(positions))
        if self._los_pathloss is not None:
            if state["los_latent"] is None:
                raise ValueError("Cell state['los_latent'] must be an array of shape "
                                 f"({n},) for the LOS-aware path loss {self.pathloss!r}, got None")
            latent = state_array("Cell", state, "los_latent", (n,))
        elif state["los_latent"] is not None:
            raise ValueError(f"Cell state['los_latent'] must be None for path loss {self.pathloss!r} (no LOS)")
        else:
            latent = None
        shadowing_db = state_array("Cell", state, "shadowing_db", (n,))
        shadowing_state = plain_data(state["shadowing_state"], "Cell state['shadowing_state']")
        los_rng = checked_rng_state(state, "los_rng", self._los_rng)
        shadowing_rng = checked_rng_state(state, "shadowing_rng", self._shadowing_rng)

        def restore() -> None:
            self._los_rng.bit_generator.state = los_rng
            self._shadowing_rng.bit_generator.state = shadowing_rng
            self._los_latent = latent
            self._shadowing_state = shadowing_state
            los = self._los_state(distance)
            pathloss_db = self._pathloss_db(distance, los)
            site = self._site(positions, distance, los)
            self._now = self._snapshot(site, pathloss_db, self._checked_shadowing(shadowing_db))

        return restore

    # ------------------------------------------------------------------ the parts, checked
    def _checked_positions(self, positions: Any, kind: str, component: object) -> np.ndarray:
        n = self._n_clients
        positions = np.asarray(positions, dtype=float)
        if positions.shape != (n, 2):
            raise ValueError(f"{kind} {component!r} returned positions of shape {positions.shape}, expected ({n}, 2)")
        check_finite(positions, f"{kind} {component!r}", "position (m)")
        CLIENT_DISTANCE_M.check_array(f"{kind} {component!r} client distance_m", distances_m(positions))
        return positions

    def _checked_shadowing(self, shadowing_db: Any) -> np.ndarray:
        n = self._n_clients
        shadowing_db = np.asarray(shadowing_db, dtype=float)
        if shadowing_db.shape != (n,):
            raise ValueError(f"shadowing {self.shadowing!r} returned shape {shadowing_db.shape}, expected ({n},)")
        check_finite(shadowing_db, f"shadowing {self.shadowing!r}", "shadowing (dB)")
        return shadowing_db

    def _los_state(self, distance: np.ndarray) -> np.ndarray | None:
        if self._los_pathloss is None:
            return None
        p = np.asarray(self._los_pathloss.los_probability(distance), dtype=float)
        if p.shape != distance.shape or np.any(~((p >= 0) & (p <= 1))):
            raise ValueError(
                f"pathloss {self.pathloss!r} los_probability must return {distance.shape} values in [0, 1]")
        return scipy.special.ndtr(self._los_latent) < p

    def _pathloss_db(self, distance: np.ndarray, los: np.ndarray | None) -> np.ndarray:
        if self._los_pathloss is None or los is None:
            out = np.asarray(self.pathloss.loss_db(distance), dtype=float)
        else:
            out = np.asarray(self._los_pathloss.loss_db(distance, los=los), dtype=float)
        if out.shape != distance.shape:
            raise ValueError(f"pathloss {self.pathloss!r} returned shape {out.shape}, expected {distance.shape}")
        check_finite(out, f"pathloss {self.pathloss!r}", "path loss (dB)")
        return out

    def _site(self, positions: np.ndarray, distance: np.ndarray, los: np.ndarray | None) -> ShadowingSite:
        n = distance.shape[0]

        def per_client(model_value: Callable[[Any], Any] | None, method: str) -> np.ndarray | None:
            if model_value is None:
                return None
            values = np.broadcast_to(np.asarray(model_value(los), dtype=float), (n,))
            check_finite(values, f"pathloss {self.pathloss!r}", method, minimum=0.0)
            return readonly(values)

        return ShadowingSite(
            positions_m=readonly(positions),
            distance_m=readonly(distance),
            los=None if los is None else np.array(los, dtype=bool),
            model_sigma_db=per_client(self._model_sigma_db, "shadowing_sigma_db"),
            model_decorrelation_m=per_client(self._model_decorrelation_m, "shadowing_decorrelation_m"),
        )

    def _snapshot(self, site: ShadowingSite, pathloss_db: np.ndarray, shadowing_db: np.ndarray) -> LargeScaleSnapshot:
        los = None
        if site.los is not None:
            los = np.array(site.los, dtype=bool)
            los.flags.writeable = False
        # Shadowing is extra loss in dB, so it adds to the path loss before converting to linear.
        with np.errstate(over="ignore"):
            gain = np.power(10.0, -(pathloss_db + shadowing_db) / 10.0)
        if not np.all(np.isfinite(gain) & (gain > 0)):
            k = int(np.argmax(~(np.isfinite(gain) & (gain > 0))))
            raise ValueError(
                f"channel gain of client {k} is {float(gain[k])!r} (path loss {pathloss_db[k]:g} dB from pathloss "
                f"{self.pathloss!r} + shadowing {shadowing_db[k]:g} dB from shadowing {self.shadowing!r}); "
                f"a gain must be finite and > 0"
            )
        return LargeScaleSnapshot(
            positions_m=readonly(site.positions_m),
            distance_m=readonly(site.distance_m),
            los=los,
            pathloss_db=readonly(pathloss_db),
            shadowing_db=readonly(shadowing_db),
            coupling_loss_db=readonly(pathloss_db + shadowing_db),
            gain_linear=readonly(gain),
            site=site,
        )

    # ------------------------------------------------------------------ validity range
    def _validity_problem(self, low_m: float, high_m: float, what: str, advice: str | None = None) -> None:
        valid_low, valid_high = self._valid_distance_m  # type: ignore[misc]
        fixes = []
        if low_m < valid_low:
            fixes.append(f"min_distance_m >= {valid_low:g}")
        if high_m > valid_high:
            fixes.append(f"radius_m <= {valid_high:g}")
        if advice is None:
            advice = f"set {' and '.join(fixes)} or choose another path-loss model"
        message = (
            f"{what} outside the valid distance range [{valid_low:g}, {valid_high:g}] m of pathloss "
            f"{self.pathloss!r}; {advice}"
        )
        if self._out_of_range == "error":
            raise ValueError(message)
        if not self._validity_warned:
            self._validity_warned = True
            warnings.warn(message, ModelValidityWarning, stacklevel=_WARNING_STACKLEVEL)

    def _check_validity(self, distance: np.ndarray, verb: str) -> None:
        """Warn or raise when clients lie outside the path-loss model's distance range."""
        if self._valid_distance_m is None:
            return
        low, high = self._valid_distance_m
        out = (distance < low) | (distance > high)
        if np.any(out):
            d = distance[out]
            span = f"{d.min():.4g} m" if d.min() == d.max() else f"{d.min():.4g} m to {d.max():.4g} m"
            self._validity_problem(
                float(d.min()), float(d.max()), f"{int(out.sum())} of {distance.size} clients {verb} at {span},"
            )

    def _check_mobility_validity(self) -> None:
        """With mobility, clients may go anywhere in the annulus: check it against the range."""
        if self._valid_distance_m is None or self._mobility_is_static:
            return
        low, high = self._valid_distance_m
        sites = self._network_sites
        if sites is not None and (sites.floor_m < low or self._radius_m > high):
            # on a network a client moves past every site, not only the centre one a mobility's
            # min_distance_m keeps it from: no setting of min_distance_m keeps it in range
            near = sites.share_within(low)
            share = "" if near is None else (
                f"; about {100 * near:.3g} % of the layout's area lies within {low:g} m of a site (the disc "
                f"of {low:g} m over the hexagon of isd_m {sites.isd_m:g}), which a larger isd_m makes smaller")
            far = "" if self._radius_m <= high else f"; the layout reaches {self._radius_m:g} m from its centre"
            self._validity_problem(
                sites.floor_m, self._radius_m,
                f"on a network, mobility {self.mobility!r} takes clients past every site, as near as "
                f"{sites.floor_m:g} m (a mobility's min_distance_m keeps them off the centre of its region only; "
                f"a distance below {sites.floor_m:g} m is taken at {sites.floor_m:g} m), and the path loss there is "
                f"evaluated at max(d, {sites.floor_m:g} m),",
                f"its formula is used there all the same (extrapolated){share}{far}; a path-loss model valid over "
                f"[{sites.floor_m:g}, {self._radius_m:g}] m avoids it")
            return
        if self._min_distance_m < low or self._radius_m > high:
            self._validity_problem(
                self._min_distance_m, self._radius_m,
                f"mobility {self.mobility!r} can take clients anywhere in "
                f"[{self._min_distance_m:g}, {self._radius_m:g}] m,",
            )


def _validity_range(pathloss: PathLoss) -> tuple[float, float] | None:
    """The path-loss model's ``valid_distance_m``, checked; None when it states none."""
    if not isinstance(pathloss, RangedPathLoss):
        return None
    rng = pathloss.valid_distance_m
    try:
        low, high = (float(v) for v in rng)
    except (TypeError, ValueError):
        low, high = math.nan, math.nan
    if not (0.0 <= low < high) or math.isnan(high):
        raise ValueError(
            f"pathloss {pathloss!r} valid_distance_m must be (low_m, high_m) with 0 <= low_m < high_m "
            f"(high_m may be inf), got {rng!r}"
        )
    return low, high
