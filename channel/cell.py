"""The radio state of one cell: client positions, LOS state, path loss, shadowing, rates.

A :class:`Cell` is assembled from swappable components (placement, path loss, shadowing, rate
model, bandwidth allocator, and optionally small-scale fading and mobility) that the caller
creates through the registries.  The clients are dropped on construction; the per-client arrays
are read-only, and change only when :meth:`Cell.move` moves the clients.

Random streams
--------------
Each source of randomness has its own generator, so swapping one model never shifts the others'
draws: ``placement_rng`` (positions), ``los_rng`` (LOS state of LOS-aware path-loss models,
drawn on construction and updated by :meth:`Cell.move`), ``shadowing_rng`` (shadowing, drawn on
construction and updated by :meth:`Cell.move`).  Fading and mobility are drawn from the
generators the caller passes to :meth:`Cell.sample_fading` and :meth:`Cell.move`.

LOS state
---------
When the path-loss model has ``los_probability(distance_m)``, each client carries a latent
standard normal ``z_k`` (from ``los_rng``) and is in LOS while ``Phi(z_k) < Pr_LOS(d_k)``
(``Phi`` the normal CDF), so that ``P(LOS) = Pr_LOS``.  When the client moves by ``dd`` metres,
``z_k <- rho z_k + sqrt(1 - rho^2) w`` with ``rho = exp(-dd / d_LOS)`` and ``d_LOS`` the model's
``los_decorrelation_m`` (TR 38.901 Table 7.6.3.1-2: 50 m; 50 m when the model has none): a client
that stays put keeps its state, one that travels far gets a fresh draw, and the state always has
the right probability at the new distance (the spatially consistent LOS procedure of TR 38.901
7.6.3.3, per client).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np
import scipy.special

from ._checks import check_array, check_count, check_scalar, readonly
from .allocation import accepts_rate_of
from .fading import NoFading
from .geometry import distances_m as _distances_m
from .mobility import StaticMobility
from .shadowing import ShadowingSite
from .units import dbm_to_w, linear_to_db

__all__ = ["Cell", "LinkBudget"]

#: LOS-state decorrelation distance when the path-loss model gives none, metres.
DEFAULT_LOS_DECORRELATION_M = 50.0


@dataclass(frozen=True)
class LinkBudget:
    """The links of a group of clients in one phase; every array has shape (k,).

    Attributes
    ----------
    client_ids : numpy.ndarray of int
        The clients, in the order asked for.
    bandwidth_hz : numpy.ndarray
        Bandwidth of each link in Hz.
    tx_power_w : numpy.ndarray
        Transmit power on each link in W.
    gain_linear : numpy.ndarray
        Linear channel power gain (large-scale gain times fading).
    snr_db : numpy.ndarray
        Received SNR in dB on the link's bandwidth.
    rate_bps : numpy.ndarray
        Rate in bit/s.
    """

    client_ids: np.ndarray
    bandwidth_hz: np.ndarray
    tx_power_w: np.ndarray
    gain_linear: np.ndarray
    snr_db: np.ndarray
    rate_bps: np.ndarray


class Cell:
    """Large-scale state of one cell with ``n_clients`` clients and a server at the origin.

    Parameters
    ----------
    placement : object
        Has ``sample_positions_m(n_clients, rng) -> ndarray (n, 2)`` (see ``PLACEMENTS``).
    pathloss : object
        Has ``loss_db(distance_m) -> ndarray`` (see ``PATHLOSS``).
    shadowing : object
        Has ``sample_db(n_clients, rng) -> ndarray (n,)`` (see ``SHADOWING``).
    rate : object
        Has ``rate_bps(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz)`` (see ``RATES``).
    allocator : object
        Has ``allocate_hz(total_bandwidth_hz, payload_bits, gain_linear) -> ndarray (k,)``
        (see ``ALLOCATORS``).
    n_clients : int
        Number of clients, >= 1.
    tx_power_w : float or array_like, shape (n_clients,)
        Client transmit power in W, > 0.
    noise_psd_dbm_per_hz : float
        Receiver noise power spectral density in dBm/Hz (e.g. -174), finite.
    uplink_bandwidth_hz : float
        Uplink band shared by the clients of one phase, in Hz, > 0.
    downlink_bandwidth_hz : float, optional
        Downlink band in Hz, > 0; needed only by the downlink methods.
    server_tx_power_w : float, optional
        Server (base station) transmit power in W, > 0; needed only by the downlink methods.
    placement_rng, shadowing_rng : numpy.random.Generator
        Separate streams, so changing the shadowing model does not move the clients.  The cell
        keeps ``shadowing_rng`` to update correlated shadowing when clients move.
    fading : object, optional
        Has ``sample_power_gain(n, rng) -> ndarray (n,)`` (see ``FADING``); default no fading.
    mobility : object, optional
        Has ``step(positions_m, dt_s, rng, radius_m=..., min_distance_m=...)`` (see
        ``MOBILITY``); default static.
    los_rng : numpy.random.Generator, optional
        Stream of the LOS state (used only by LOS-aware path-loss models); defaults to
        ``shadowing_rng`` (then the LOS draws come first and shift the shadowing draws).  Pass a
        separate stream.
    radius_m : float, optional
        Cell radius in metres that mobility keeps clients within; default the placement's
        ``radius_m``, else the farthest initial client.
    min_distance_m : float, optional
        Exclusion radius around the base station for mobility, metres; default the placement's
        ``min_distance_m``, at least 1 m.

    Raises
    ------
    ValueError
        For any out-of-range parameter, or a component that returns arrays of the wrong shape.
    TypeError
        If an rng is not a ``numpy.random.Generator``.
    """

    def __init__(
        self,
        placement: Any,
        pathloss: Any,
        shadowing: Any,
        rate: Any,
        allocator: Any,
        *,
        n_clients: int,
        tx_power_w: Any,
        noise_psd_dbm_per_hz: float,
        uplink_bandwidth_hz: float,
        downlink_bandwidth_hz: Optional[float] = None,
        server_tx_power_w: Optional[float] = None,
        placement_rng: np.random.Generator,
        shadowing_rng: np.random.Generator,
        fading: Any = None,
        mobility: Any = None,
        los_rng: Optional[np.random.Generator] = None,
        radius_m: Optional[float] = None,
        min_distance_m: Optional[float] = None,
    ) -> None:
        n = check_count("n_clients", n_clients)
        if n < 1:
            raise ValueError(f"n_clients must be an integer >= 1, got {n_clients!r}")
        if los_rng is None:
            los_rng = shadowing_rng
        for name, rng in (("placement_rng", placement_rng), ("shadowing_rng", shadowing_rng), ("los_rng", los_rng)):
            if not isinstance(rng, np.random.Generator):
                raise TypeError(f"{name} must be a numpy.random.Generator, got {type(rng).__name__}")

        power = check_array("tx_power_w", tx_power_w, minimum=0.0, strict=True)
        if power.ndim == 0:
            power = np.full(n, float(power))
        elif power.shape != (n,):
            raise ValueError(
                f"tx_power_w must be a scalar or have shape ({n},) (one per client), got shape {power.shape}"
            )
        noise_dbm = check_scalar("noise_psd_dbm_per_hz", noise_psd_dbm_per_hz, minimum=-np.inf)
        self._uplink_bandwidth_hz = check_scalar(
            "uplink_bandwidth_hz", uplink_bandwidth_hz, minimum=0.0, strict=True
        )
        self._downlink_bandwidth_hz = (
            None
            if downlink_bandwidth_hz is None
            else check_scalar("downlink_bandwidth_hz", downlink_bandwidth_hz, minimum=0.0, strict=True)
        )
        self._server_tx_power_w = (
            None
            if server_tx_power_w is None
            else check_scalar("server_tx_power_w", server_tx_power_w, minimum=0.0, strict=True)
        )

        self.placement, self.pathloss, self.shadowing = placement, pathloss, shadowing
        self.rate, self.allocator = rate, allocator
        self.fading = NoFading() if fading is None else fading
        self.mobility = StaticMobility() if mobility is None else mobility
        self._allocator_wants_link = accepts_rate_of(allocator)
        self._n_clients = n
        self._noise_psd_dbm_per_hz = noise_dbm
        self._noise_psd_w_per_hz = float(dbm_to_w(noise_dbm))
        self._tx_power_w = readonly(power)
        self._los_rng, self._shadowing_rng = los_rng, shadowing_rng
        self._los_aware = hasattr(pathloss, "los_probability")
        self._los_decorrelation_m = float(getattr(pathloss, "los_decorrelation_m", DEFAULT_LOS_DECORRELATION_M))

        positions = np.asarray(placement.sample_positions_m(n, placement_rng), dtype=float)
        if positions.shape != (n, 2):
            raise ValueError(f"placement {placement!r} returned shape {positions.shape}, expected ({n}, 2)")
        distance = _distances_m(positions)
        # LOS first (own stream), then shadowing, whose sigma may depend on the LOS state.
        self._los_latent = los_rng.standard_normal(n) if self._los_aware else None
        los = self._los_state(distance)
        pathloss_db = self._pathloss(distance, los)
        site = self._site(positions, distance, los)
        if hasattr(shadowing, "sample_site_db"):
            shadowing_db, self._shadowing_state = shadowing.sample_site_db(site, shadowing_rng)
        else:
            shadowing_db, self._shadowing_state = shadowing.sample_db(n, shadowing_rng), None
        shadowing_db = np.asarray(shadowing_db, dtype=float)
        if shadowing_db.shape != (n,):
            raise ValueError(f"shadowing {shadowing!r} returned shape {shadowing_db.shape}, expected ({n},)")
        self._set_state(positions, distance, los, pathloss_db, shadowing_db, site)

        if radius_m is None:
            radius_m = getattr(placement, "radius_m", None)
        self._radius_m = (
            float(distance.max()) if radius_m is None else check_scalar("radius_m", radius_m, strict=True)
        )
        if min_distance_m is None:
            min_distance_m = getattr(placement, "min_distance_m", None) or 0.0
        self._min_distance_m = max(check_scalar("min_distance_m", min_distance_m), 1.0)
        if self._min_distance_m >= self._radius_m:
            raise ValueError(f"min_distance_m must be < radius_m ({self._radius_m:g} m), got {min_distance_m!r}")

    # ------------------------------------------------------------------ read-only state
    @property
    def n_clients(self) -> int:
        """Number of clients in the cell."""
        return self._n_clients

    @property
    def positions_m(self) -> np.ndarray:
        """Client positions, shape (n, 2), metres; server at the origin."""
        return self._positions_m

    @property
    def distance_m(self) -> np.ndarray:
        """Client-server distances, shape (n,), metres."""
        return self._distance_m

    @property
    def pathloss_db(self) -> np.ndarray:
        """Path loss per client, shape (n,), dB."""
        return self._pathloss_db

    @property
    def shadowing_db(self) -> np.ndarray:
        """Shadowing per client, shape (n,), dB (positive = extra loss)."""
        return self._shadowing_db

    @property
    def los(self) -> Optional[np.ndarray]:
        """LOS state per client (bool, shape (n,)), or None when the path-loss model has no LOS."""
        return self._los

    @property
    def radius_m(self) -> float:
        """Radius of the disc mobility keeps clients in, metres."""
        return self._radius_m

    @property
    def min_distance_m(self) -> float:
        """Exclusion radius around the base station for mobility, metres."""
        return self._min_distance_m

    @property
    def gain_linear(self) -> np.ndarray:
        """Linear channel power gain ``10^(-(pathloss_db + shadowing_db)/10)``, shape (n,)."""
        return self._gain_linear

    @property
    def tx_power_w(self) -> np.ndarray:
        """Client transmit power, shape (n,), W."""
        return self._tx_power_w

    @property
    def noise_psd_dbm_per_hz(self) -> float:
        """Noise power spectral density, dBm/Hz."""
        return self._noise_psd_dbm_per_hz

    @property
    def noise_psd_w_per_hz(self) -> float:
        """Noise power spectral density, W/Hz."""
        return self._noise_psd_w_per_hz

    @property
    def uplink_bandwidth_hz(self) -> float:
        """Total uplink band, Hz."""
        return self._uplink_bandwidth_hz

    @property
    def downlink_bandwidth_hz(self) -> Optional[float]:
        """Total downlink band, Hz, or None if not configured."""
        return self._downlink_bandwidth_hz

    @property
    def server_tx_power_w(self) -> Optional[float]:
        """Server transmit power, W, or None if not configured."""
        return self._server_tx_power_w

    # ------------------------------------------------------------------ fading
    def sample_fading(self, client_ids: Any, rng: np.random.Generator) -> np.ndarray:
        """Draw one small-scale fading power gain per client for one coherence block.

        Parameters
        ----------
        client_ids : array_like of int, shape (k,)
            Distinct client indices in ``[0, n_clients)``.
        rng : numpy.random.Generator
            The fading stream (the engine's; the cell keeps none for fading).

        Returns
        -------
        numpy.ndarray, shape (k,)
            Linear power gains (mean 1), to pass as ``fading_gain`` to the rate methods.
        """
        ids = self._check_ids(client_ids)
        gains = np.asarray(self.fading.sample_power_gain(ids.size, rng), dtype=float)
        if gains.shape != ids.shape or np.any(~(gains >= 0)):
            raise ValueError(f"fading {self.fading!r} must return {ids.size} gains >= 0, got {gains!r}")
        return gains

    # ------------------------------------------------------------------ rates
    def uplink_link(self, client_ids: Any, payload_bits: Any = None, fading_gain: Any = None) -> LinkBudget:
        """Bandwidth, gain, SNR and rate of each client in a group sending in the same phase.

        Parameters
        ----------
        client_ids : array_like of int, shape (k,)
            Distinct client indices in ``[0, n_clients)``.
        payload_bits : float or array_like, shape (k,), optional
            Bits each client will send, >= 0; passed to the allocator (a scalar is broadcast).
        fading_gain : array_like, shape (k,), optional
            Small-scale power gains of these clients for this block (:meth:`sample_fading`);
            default 1 (no fading).

        Returns
        -------
        LinkBudget
            Arrays of shape (k) in the order of ``client_ids``.
        """
        ids = self._check_ids(client_ids)
        return self._shared_link(ids, payload_bits, self._uplink_bandwidth_hz, self._tx_power_w[ids], fading_gain)

    def uplink_rates_bps(self, client_ids: Any, payload_bits: Any = None, fading_gain: Any = None) -> np.ndarray:
        """Uplink rate of each client in a group that transmits in the same phase.

        The allocator splits ``uplink_bandwidth_hz`` among exactly these clients, then the rate
        model gives each client's rate on its share with gain ``gain_linear * fading_gain``.

        Parameters
        ----------
        client_ids : array_like of int, shape (k,)
            Distinct client indices in ``[0, n_clients)``.
        payload_bits : float or array_like, shape (k,), optional
            Bits each client will send, >= 0; passed to the allocator (a scalar is broadcast).
        fading_gain : array_like, shape (k,), optional
            Small-scale power gains for this block; default 1.

        Returns
        -------
        numpy.ndarray, shape (k,)
            Rates in bit/s, in the order of ``client_ids``.
        """
        return self.uplink_link(client_ids, payload_bits, fading_gain).rate_bps

    def uplink_link_at_bandwidth(self, client_ids: Any, bandwidth_hz: Any, fading_gain: Any = None) -> LinkBudget:
        """Uplink links on given bandwidths, bypassing the allocator.

        For a retransmission on the share a client already holds (with a fresh fading draw), and
        for reference tables (equal share, whole band).

        Parameters
        ----------
        client_ids : array_like of int, shape (k,)
            Distinct client indices.
        bandwidth_hz : float or array_like, shape (k,)
            Bandwidth of each link in Hz, >= 0.
        fading_gain : array_like, shape (k,), optional
            Small-scale power gains; default 1.

        Returns
        -------
        LinkBudget
        """
        ids = self._check_ids(client_ids)
        band = check_array("bandwidth_hz", bandwidth_hz, minimum=0.0)
        shares = np.broadcast_to(band, ids.shape).astype(float)
        gains = self._gain_linear[ids] * self._fading(fading_gain, ids)
        return self._link(ids, shares, self._tx_power_w[ids], gains)

    def downlink_link(self, client_ids: Any, payload_bits: Any = None, fading_gain: Any = None) -> LinkBudget:
        """Downlink links of a group receiving separate data in one phase (see :meth:`downlink_rates_bps`)."""
        ids = self._check_ids(client_ids)
        band, power = self._downlink_config("downlink_rates_bps")
        return self._shared_link(ids, payload_bits, band, power, fading_gain, power_per_hz=True)

    def downlink_rates_bps(self, client_ids: Any, payload_bits: Any = None, fading_gain: Any = None) -> np.ndarray:
        """Downlink rate to each client when the server sends them separate data in one phase.

        Same as :meth:`uplink_rates_bps` with ``downlink_bandwidth_hz`` and ``server_tx_power_w``,
        except that the server has one power amplifier: ``server_tx_power_w`` is spread over the
        band at a flat spectral density, so a client's sub-band b_k carries P b_k / B.

        Parameters
        ----------
        client_ids : array_like of int, shape (k,)
            Distinct client indices in ``[0, n_clients)``.
        payload_bits : float or array_like, shape (k,), optional
            Bits the server will send to each client, >= 0.
        fading_gain : array_like, shape (k,), optional
            Downlink small-scale power gains for this block; default 1.

        Returns
        -------
        numpy.ndarray, shape (k,)
            Rates in bit/s.

        Raises
        ------
        ValueError
            If the cell was built without ``downlink_bandwidth_hz`` or ``server_tx_power_w``.
        """
        return self.downlink_link(client_ids, payload_bits, fading_gain).rate_bps

    def broadcast_rate_bps(self, client_ids: Any, fading_gain: Any = None) -> float:
        """Rate of one server transmission on the whole downlink band received by all clients.

        Every receiver must decode, so the rate is the minimum of their full-band rates.

        Parameters
        ----------
        client_ids : array_like of int, shape (k,), k >= 1
            Distinct client indices in ``[0, n_clients)``.
        fading_gain : array_like, shape (k,), optional
            Downlink small-scale power gains for this block; default 1.

        Returns
        -------
        float
            Broadcast rate in bit/s.

        Raises
        ------
        ValueError
            If ``client_ids`` is empty or the downlink is not configured.
        """
        ids = self._check_ids(client_ids)
        if ids.size == 0:
            raise ValueError("client_ids must name at least one receiver for a broadcast, got []")
        band, power = self._downlink_config("broadcast_rate_bps")
        gains = self._gain_linear[ids] * self._fading(fading_gain, ids)
        rates = self.rate.rate_bps(band, power, gains, self._noise_psd_w_per_hz)
        return float(np.min(rates))

    # ------------------------------------------------------------------ mobility
    def move(self, dt_s: float, rng: np.random.Generator) -> np.ndarray:
        """Move the clients by ``dt_s`` seconds of mobility and update the large-scale channel.

        Order: positions (mobility model, from ``rng``), then the LOS state (latent update from
        the cell's LOS stream, see the module docstring), then path loss, then shadowing
        (``update_site_db`` from the cell's shadowing stream when the model has it; otherwise
        each client keeps its value).  With static mobility nothing changes and no stream is
        consumed.

        Parameters
        ----------
        dt_s : float
            Elapsed simulated time in seconds, >= 0 (e.g. the duration of the last round).
        rng : numpy.random.Generator
            The mobility stream.

        Returns
        -------
        numpy.ndarray, shape (n,)
            Distance each client moved, metres.
        """
        dt = check_scalar("dt_s", dt_s, minimum=0.0)
        n = self._n_clients
        new_pos = np.asarray(
            self.mobility.step(
                self._positions_m, dt, rng, radius_m=self._radius_m, min_distance_m=self._min_distance_m
            ),
            dtype=float,
        )
        if new_pos.shape != (n, 2) or not np.all(np.isfinite(new_pos)):
            raise ValueError(f"mobility {self.mobility!r} returned shape {new_pos.shape} or non-finite positions, "
                             f"expected finite ({n}, 2)")
        moved_m = np.hypot(*(new_pos - self._positions_m).T)
        if not np.any(moved_m > 0):
            return moved_m
        distance = _distances_m(new_pos)
        if self._los_aware:
            rho = np.exp(-moved_m / self._los_decorrelation_m)
            w = self._los_rng.standard_normal(n)
            self._los_latent = rho * self._los_latent + np.sqrt(1.0 - rho**2) * w
        los = self._los_state(distance)
        pathloss_db = self._pathloss(distance, los)
        site = self._site(new_pos, distance, los)
        if hasattr(self.shadowing, "update_site_db"):
            shadowing_db, self._shadowing_state = self.shadowing.update_site_db(
                self._shadowing_state, self._site_now, site, self._shadowing_rng
            )
            shadowing_db = np.asarray(shadowing_db, dtype=float)
            if shadowing_db.shape != (n,):
                raise ValueError(f"shadowing {self.shadowing!r} returned shape {shadowing_db.shape}, expected ({n},)")
        else:
            shadowing_db = np.array(self._shadowing_db)
        self._set_state(new_pos, distance, los, pathloss_db, shadowing_db, site)
        return moved_m

    # ------------------------------------------------------------------ summaries
    def describe(self, n_sharing: Optional[int] = None) -> Dict[str, np.ndarray]:
        """Per-client summary for printing and result files.

        SNR and rate assume the client transmits on an equal share
        ``uplink_bandwidth_hz / n_sharing`` (a reference point, not what a given phase uses).

        Parameters
        ----------
        n_sharing : int, optional
            Number of clients sharing the band, >= 1; default ``n_clients``.

        Returns
        -------
        dict of str to numpy.ndarray, each shape (n,)
            ``client`` (int), ``distance_m``, ``pathloss_db``, ``shadowing_db``, ``snr_db``,
            ``uplink_rate_bps``.
        """
        k = self._n_clients if n_sharing is None else check_count("n_sharing", n_sharing)
        if k < 1:
            raise ValueError(f"n_sharing must be an integer >= 1, got {n_sharing!r}")
        link = self.uplink_link_at_bandwidth(np.arange(self._n_clients), self._uplink_bandwidth_hz / k)
        return {
            "client": np.arange(self._n_clients),
            "distance_m": self._distance_m.copy(),
            "pathloss_db": self._pathloss_db.copy(),
            "shadowing_db": self._shadowing_db.copy(),
            "snr_db": link.snr_db,
            "uplink_rate_bps": link.rate_bps,
        }

    def __repr__(self) -> str:
        return (
            f"Cell(n_clients={self._n_clients}, placement={self.placement!r}, pathloss={self.pathloss!r}, "
            f"shadowing={self.shadowing!r}, rate={self.rate!r}, allocator={self.allocator!r}, "
            f"fading={self.fading!r}, mobility={self.mobility!r})"
        )

    # ------------------------------------------------------------------ helpers
    def _los_state(self, distance: np.ndarray) -> Optional[np.ndarray]:
        if not self._los_aware:
            return None
        p = np.asarray(self.pathloss.los_probability(distance), dtype=float)
        if p.shape != distance.shape or np.any(~((p >= 0) & (p <= 1))):
            raise ValueError(f"pathloss {self.pathloss!r} los_probability must return {distance.shape} values in [0, 1]")
        return scipy.special.ndtr(self._los_latent) < p

    def _pathloss(self, distance: np.ndarray, los: Optional[np.ndarray]) -> np.ndarray:
        out = self.pathloss.loss_db(distance) if los is None else self.pathloss.loss_db(distance, los=los)
        out = np.asarray(out, dtype=float)
        if out.shape != distance.shape:
            raise ValueError(f"pathloss {self.pathloss!r} returned shape {out.shape}, expected {distance.shape}")
        return out

    def _site(self, positions: np.ndarray, distance: np.ndarray, los: Optional[np.ndarray]) -> ShadowingSite:
        n = distance.shape[0]

        def per_client(method: str) -> Optional[np.ndarray]:
            fn = getattr(self.pathloss, method, None)
            if fn is None:
                return None
            return readonly(np.broadcast_to(np.asarray(fn(los), dtype=float), (n,)))

        return ShadowingSite(
            positions_m=readonly(positions),
            distance_m=readonly(distance),
            los=None if los is None else np.array(los, dtype=bool),
            model_sigma_db=per_client("shadowing_sigma_db"),
            model_decorrelation_m=per_client("shadowing_decorrelation_m"),
        )

    def _set_state(self, positions, distance, los, pathloss_db, shadowing_db, site) -> None:
        self._positions_m = readonly(positions)
        self._distance_m = readonly(distance)
        if los is None:
            self._los = None
        else:
            self._los = np.array(los, dtype=bool)
            self._los.flags.writeable = False
        self._pathloss_db = readonly(pathloss_db)
        self._shadowing_db = readonly(shadowing_db)
        self._site_now = site
        # Shadowing is extra loss in dB, so it adds to the path loss before converting to linear.
        self._gain_linear = readonly(np.power(10.0, -(pathloss_db + shadowing_db) / 10.0))

    def _fading(self, fading_gain: Any, ids: np.ndarray) -> np.ndarray:
        if fading_gain is None:
            return np.ones(ids.size)
        g = check_array("fading_gain", fading_gain, minimum=0.0)
        if g.ndim == 0:
            return np.full(ids.size, float(g))
        if g.shape != ids.shape:
            raise ValueError(
                f"fading_gain must be a scalar or have shape {ids.shape} (one per client id), got shape {g.shape}"
            )
        return g

    def _check_ids(self, client_ids: Any) -> np.ndarray:
        ids = np.asarray(client_ids)
        if ids.ndim != 1:
            raise ValueError(f"client_ids must be a 1-D array of client indices, got shape {ids.shape}")
        if ids.size == 0:
            return ids.astype(int)
        if not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"client_ids must be integers, got dtype {ids.dtype} ({client_ids!r})")
        if ids.min() < 0 or ids.max() >= self._n_clients:
            raise ValueError(f"client_ids must lie in [0, {self._n_clients}), got {client_ids!r}")
        # A client listed twice would receive two bandwidth shares: always a caller bug.
        if np.unique(ids).size != ids.size:
            raise ValueError(f"client_ids must be distinct, got {client_ids!r}")
        return ids.astype(int)

    def _downlink_config(self, method: str) -> tuple:
        if self._downlink_bandwidth_hz is None or self._server_tx_power_w is None:
            raise ValueError(
                f"{method} needs downlink_bandwidth_hz and server_tx_power_w, got "
                f"downlink_bandwidth_hz={self._downlink_bandwidth_hz!r}, "
                f"server_tx_power_w={self._server_tx_power_w!r}; pass both (> 0) to Cell"
            )
        return self._downlink_bandwidth_hz, self._server_tx_power_w

    def _link(self, ids: np.ndarray, shares: np.ndarray, power_w: Any, gains: np.ndarray) -> LinkBudget:
        power = np.broadcast_to(np.asarray(power_w, dtype=float), ids.shape)
        rate = np.asarray(self.rate.rate_bps(shares, power, gains, self._noise_psd_w_per_hz), dtype=float)
        if hasattr(self.rate, "snr_linear"):
            snr = np.asarray(self.rate.snr_linear(shares, power, gains, self._noise_psd_w_per_hz), dtype=float)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                snr = power * gains / (shares * self._noise_psd_w_per_hz)
            snr = np.where(np.isnan(snr), 0.0, snr)
        return LinkBudget(
            client_ids=ids.copy(),
            bandwidth_hz=np.array(shares, dtype=float),
            tx_power_w=np.array(power, dtype=float),
            gain_linear=np.array(gains, dtype=float),
            snr_db=np.asarray(linear_to_db(snr), dtype=float).reshape(ids.shape),
            rate_bps=rate.reshape(ids.shape),
        )

    def _shared_link(
        self, ids: np.ndarray, payload_bits: Any, band_hz: float, power_w: Any, fading_gain: Any,
        power_per_hz: bool = False,
    ) -> LinkBudget:
        if ids.size == 0:
            empty = np.zeros(0)
            return LinkBudget(ids, empty, empty, empty, empty, empty)
        payload = None
        if payload_bits is not None:
            payload = check_array("payload_bits", payload_bits, minimum=0.0)
            if payload.ndim == 0:
                payload = np.full(ids.size, float(payload))
            elif payload.shape != ids.shape:
                raise ValueError(
                    f"payload_bits must be a scalar or have shape {ids.shape} (one per client id), "
                    f"got shape {payload.shape}"
                )
        gains = self._gain_linear[ids] * self._fading(fading_gain, ids)
        power = np.broadcast_to(np.asarray(power_w, dtype=float), ids.shape)

        def power_on(shares: np.ndarray) -> np.ndarray:
            # One transmitter's power spread flat over the band, or each client's own power.
            return power * shares / band_hz if power_per_hz else power

        if self._allocator_wants_link:
            def rate_of(bandwidth_hz: np.ndarray) -> np.ndarray:
                b = np.asarray(bandwidth_hz, dtype=float)
                return np.asarray(self.rate.rate_bps(b, power_on(b), gains, self._noise_psd_w_per_hz), dtype=float)

            shares = self.allocator.allocate_hz(band_hz, payload, gains, rate_of=rate_of)
        else:
            shares = self.allocator.allocate_hz(band_hz, payload, gains)
        shares = np.asarray(shares, dtype=float)
        # Check plug-in allocators here so a bad one fails loudly instead of inventing spectrum.
        if shares.shape != ids.shape or np.any(~(shares >= 0)):
            raise ValueError(
                f"allocator {self.allocator!r} must return {ids.size} non-negative shares, got {shares!r}"
            )
        if shares.sum() > band_hz * (1.0 + 1e-9):
            raise ValueError(
                f"allocator {self.allocator!r} allocated {shares.sum():g} Hz, more than the band {band_hz:g} Hz"
            )
        return self._link(ids, shares, power_on(shares), gains)
