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
``interference_rng`` places the clients of neighbouring cells on construction and draws which of
them transmit, then once more at every :meth:`Cell.move` (only the ``first_tier`` interference
model draws).

Power control and interference (uplink)
---------------------------------------
The uplink power of each client is what the power-control component gives on its share with its
coupling loss (path loss plus shadowing); ``fixed`` keeps the configured ``tx_power_w``.  The
interference component gives a noise rise ``IoT = (N0 F + I) / (N0 F)`` (:mod:`sfl_sim.channel.link.interference`);
the rate model gets the noise PSD ``N0 x IoT``, so every uplink SNR it computes is the SINR
``p g / (b (N0 F + I))``.  :class:`LinkBudget` carries that power and SINR.  The downlink sees
neither (the server's power is fixed, and no neighbouring base station interferes).

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

Components and checks
---------------------
Each component must satisfy its protocol (:mod:`sfl_sim.channel.protocols`); optional capabilities are
found with ``isinstance`` on the capability protocols.  Parameters are checked against the
physical ranges of :mod:`sfl_sim.channel.limits`, and every quantity the components produce (positions,
path loss, shadowing, gains, SNR, rates) must be finite: a ``ValueError`` names the component and
the quantity otherwise.  A path-loss model with ``valid_distance_m`` makes the cell warn
(:class:`ModelValidityWarning`) or, with ``out_of_range="error"``, refuse when clients lie outside
it, on construction and after every move.

State
-----
:meth:`Cell.state_dict` returns the cell's evolving state as plain data (numpy arrays, numbers,
strings, dicts): positions, the LOS latent, shadowing values, the shadowing model's carried
state, the cell's LOS and shadowing streams and the state of stateful components (mobility).
:meth:`Cell.load_state_dict` restores it into a freshly built cell of the same scenario, after
which every property and every later draw is bit-identical to the original's continuation.
"""
from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import scipy.special

from sfl_sim.channel.kinds import CELL_KINDS
from sfl_sim.channel.large_scale.geometry import distances_m as _distances_m
from sfl_sim.channel.large_scale.mobility import StaticMobility
from sfl_sim.channel.limits import (
    CELL_RADIUS_M,
    CLIENT_DISTANCE_M,
    CLIENT_TX_POWER_W,
    DECORRELATION_M,
    DOWNLINK_BANDWIDTH_HZ,
    MIN_DISTANCE_M,
    NOISE_PSD_DBM_PER_HZ,
    SERVER_TX_POWER_W,
    UPLINK_BANDWIDTH_HZ,
)
from sfl_sim.channel.link.allocation import accepts_rate_of
from sfl_sim.channel.link.fading import NoFading
from sfl_sim.channel.link.interference import NoInterference
from sfl_sim.channel.link.power_control import FixedPower
from sfl_sim.channel.protocols import (
    BoundedSpeedMobility,
    DiscPlacement,
    LosAwarePathLoss,
    LosDecorrelation,
    RangedPathLoss,
    ShadowingDecorrelationSource,
    ShadowingSigmaSource,
    ShadowingSite,
    SiteShadowing,
    SiteShadowingUpdate,
    SnrRate,
    Stateful,
    UplinkScene,
)
from sfl_sim.channel.units import dbm_to_w, linear_to_db
from sfl_sim.kit.checks import check_array, check_count, check_scalar, check_state_keys, readonly, state_array
from sfl_sim.kit.protocols import check_protocol

__all__ = ["Cell", "LinkBudget", "ModelValidityWarning", "OutOfRange", "OUT_OF_RANGE_CHOICES", "CELL_STATE_VERSION"]

#: LOS-state decorrelation distance when the path-loss model gives none, metres.
DEFAULT_LOS_DECORRELATION_M = 50.0
#: What the cell does when clients lie outside the path-loss model's ``valid_distance_m``: warn
#: (:class:`ModelValidityWarning`) or refuse (the scenario's ``cell.out_of_range``).
OutOfRange = Literal["warn", "error"]
OUT_OF_RANGE_CHOICES: tuple[str, ...] = get_args(OutOfRange)
#: Version of the :meth:`Cell.state_dict` layout.
CELL_STATE_VERSION = 2
_STATE_KEYS = (
    "version", "n_clients", "component_types", "positions_m", "los_latent", "shadowing_db",
    "shadowing_state", "los_rng", "shadowing_rng", "component_states", "interference_rng", "noise_rise",
)


class ModelValidityWarning(UserWarning):
    """Clients lie outside the distances a path-loss model is valid for."""


def _type_name(obj: Any) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _plain(value: Any, what: str) -> Any:
    """A deep copy of ``value`` made of numpy arrays, Python scalars, strings, None, dicts and
    lists/tuples only (numpy scalars become Python scalars; array-likes such as tensors become
    numpy arrays); anything else raises ``ValueError`` naming ``what``."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise ValueError(f"{what} must hold plain data, got an object array")
        return value.copy()
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{what} must have string keys, got {key!r}")
            out[key] = _plain(item, f"{what}[{key!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(item, f"{what}[{i}]") for i, item in enumerate(value))
    if hasattr(value, "__array__"):
        return _plain(np.array(value), what)
    raise ValueError(
        f"{what} must hold only numpy arrays, numbers, strings, None and dicts/lists, got a {type(value).__name__}"
    )


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
        Received SINR in dB on the link's bandwidth (the SNR when there is no interference:
        the uplink with ``interference: none``, and every downlink).
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
    out_of_range : {"warn", "error"}, default "warn"
        What to do when clients lie outside the path-loss model's ``valid_distance_m`` (on
        construction or after a move; with mobility, also when the annulus clients may move in
        reaches outside it): a :class:`ModelValidityWarning` (once per cell) or a ``ValueError``.

    Raises
    ------
    ValueError
        For any parameter outside its physical range (:mod:`sfl_sim.channel.limits`), a component that
        returns arrays of the wrong shape or non-finite values, or (``out_of_range="error"``)
        clients outside the path-loss model's validity range.
    ComponentProtocolError
        If a component lacks a method of its kind (:data:`sfl_sim.channel.kinds.PROTOCOLS`).
    TypeError
        If an rng is not a ``numpy.random.Generator``.

    Other Parameters
    ----------------
    power_control : object, optional
        Has ``tx_power_w(nominal_tx_power_w, bandwidth_hz, coupling_loss_db)`` (see
        ``POWER_CONTROL``); default ``fixed`` (every client at ``tx_power_w``).
    interference : object, optional
        Has ``deploy(scene, rng)`` and ``noise_rise_linear(scene, layout, rng)`` (see
        ``INTERFERENCE``); default none.
    interference_rng : numpy.random.Generator, optional
        Stream of the interference model's draws; defaults to ``shadowing_rng`` (pass a separate
        stream).
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
        downlink_bandwidth_hz: float | None = None,
        server_tx_power_w: float | None = None,
        placement_rng: np.random.Generator,
        shadowing_rng: np.random.Generator,
        fading: Any = None,
        mobility: Any = None,
        los_rng: np.random.Generator | None = None,
        radius_m: float | None = None,
        min_distance_m: float | None = None,
        out_of_range: str = "warn",
        power_control: Any = None,
        interference: Any = None,
        interference_rng: np.random.Generator | None = None,
    ) -> None:
        n = check_count("n_clients", n_clients)
        if n < 1:
            raise ValueError(f"n_clients must be an integer >= 1, got {n_clients!r}")
        if los_rng is None:
            los_rng = shadowing_rng
        if interference_rng is None:
            interference_rng = shadowing_rng
        for name, rng in (("placement_rng", placement_rng), ("shadowing_rng", shadowing_rng), ("los_rng", los_rng),
                          ("interference_rng", interference_rng)):
            if not isinstance(rng, np.random.Generator):
                raise TypeError(f"{name} must be a numpy.random.Generator, got {type(rng).__name__}")

        fading = NoFading() if fading is None else fading
        mobility = StaticMobility() if mobility is None else mobility
        power_control = FixedPower() if power_control is None else power_control
        interference = NoInterference() if interference is None else interference
        arguments = locals()  # the components by their argument names, the optional ones filled in
        components = {kind.name: arguments[str(kind.cell_argument)] for kind in CELL_KINDS}
        for kind in CELL_KINDS:
            check_protocol(components[kind.name], kind.protocol, f"Cell {kind.name}")
        if out_of_range not in OUT_OF_RANGE_CHOICES:
            raise ValueError(f"out_of_range must be one of {', '.join(OUT_OF_RANGE_CHOICES)}, got {out_of_range!r}")

        power = CLIENT_TX_POWER_W.check_array("tx_power_w", tx_power_w)
        if power.ndim == 0:
            power = np.full(n, float(power))
        elif power.shape != (n,):
            raise ValueError(
                f"tx_power_w must be a scalar or have shape ({n},) (one per client), got shape {power.shape}"
            )
        noise_dbm = NOISE_PSD_DBM_PER_HZ.check("noise_psd_dbm_per_hz", noise_psd_dbm_per_hz)
        self._uplink_bandwidth_hz = UPLINK_BANDWIDTH_HZ.check("uplink_bandwidth_hz", uplink_bandwidth_hz)
        self._downlink_bandwidth_hz = (
            None
            if downlink_bandwidth_hz is None
            else DOWNLINK_BANDWIDTH_HZ.check("downlink_bandwidth_hz", downlink_bandwidth_hz)
        )
        self._server_tx_power_w = (
            None if server_tx_power_w is None else SERVER_TX_POWER_W.check("server_tx_power_w", server_tx_power_w)
        )

        self.placement, self.pathloss, self.shadowing = placement, pathloss, shadowing
        self.rate, self.allocator = rate, allocator
        self.fading, self.mobility = fading, mobility
        self.power_control, self.interference = power_control, interference
        self._components = components
        self._allocator_wants_link = accepts_rate_of(allocator)
        self._n_clients = n
        self._noise_psd_dbm_per_hz = noise_dbm
        self._noise_psd_w_per_hz = float(dbm_to_w(noise_dbm))
        self._tx_power_w = readonly(power)
        self._los_rng, self._shadowing_rng = los_rng, shadowing_rng
        self._interference_rng = interference_rng
        # Capabilities, looked up once (isinstance on a runtime protocol is not free).
        self._los_aware = isinstance(pathloss, LosAwarePathLoss)
        self._los_decorrelation_m = (
            DECORRELATION_M.check(f"pathloss {pathloss!r} los_decorrelation_m", pathloss.los_decorrelation_m)
            if isinstance(pathloss, LosDecorrelation) else DEFAULT_LOS_DECORRELATION_M
        )
        self._model_sigma = isinstance(pathloss, ShadowingSigmaSource)
        self._model_decorrelation = isinstance(pathloss, ShadowingDecorrelationSource)
        self._site_shadowing = isinstance(shadowing, SiteShadowing)
        self._site_update = isinstance(shadowing, SiteShadowingUpdate)
        self._rate_has_snr = isinstance(rate, SnrRate)
        self._valid_distance_m = self._validity_range(pathloss)
        self._out_of_range = out_of_range
        self._validity_warned = False

        positions = self._checked_positions(placement.sample_positions_m(n, placement_rng), "placement", placement)
        distance = _distances_m(positions)
        # LOS first (own stream), then shadowing, whose sigma may depend on the LOS state.
        self._los_latent = los_rng.standard_normal(n) if self._los_aware else None
        los = self._los_state(distance)
        pathloss_db = self._pathloss(distance, los)
        site = self._site(positions, distance, los)
        if self._site_shadowing:
            shadowing_db, self._shadowing_state = shadowing.sample_site_db(site, shadowing_rng)
        else:
            shadowing_db, self._shadowing_state = shadowing.sample_db(n, shadowing_rng), None
        shadowing_db = self._checked_shadowing(shadowing_db)
        self._set_state(positions, distance, los, pathloss_db, shadowing_db, site)

        if radius_m is None and isinstance(placement, DiscPlacement):
            radius_m = placement.radius_m
        self._radius_m = (
            CELL_RADIUS_M.check("radius_m", float(distance.max())) if radius_m is None
            else CELL_RADIUS_M.check("radius_m", radius_m)
        )
        if min_distance_m is None:
            min_distance_m = (placement.min_distance_m if isinstance(placement, DiscPlacement) else None) or 0.0
        self._min_distance_m = max(MIN_DISTANCE_M.check("min_distance_m", min_distance_m), 1.0)
        if self._min_distance_m >= self._radius_m:
            raise ValueError(f"min_distance_m must be < radius_m ({self._radius_m:g} m), got {min_distance_m!r}")
        self._check_validity(distance, "are placed")
        self._check_mobility_validity()
        # Interference last: its scene needs the radius, and its draws come from its own stream.
        self._scene = UplinkScene(
            placement=placement, pathloss=pathloss, shadowing=shadowing, power_control=power_control,
            n_clients=n, tx_power_w=self._tx_power_w, uplink_bandwidth_hz=self._uplink_bandwidth_hz,
            # The "thermal" of the noise rise is the receiver's noise, noise figure included.
            noise_floor_w_per_hz=self._noise_psd_w_per_hz * 10.0 ** (float(getattr(rate, "noise_figure_db", 0.0)) / 10),
            radius_m=self._radius_m,
        )
        self._interference_layout = interference.deploy(self._scene, interference_rng)
        self._noise_rise = self._drawn_noise_rise()

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
    def los(self) -> np.ndarray | None:
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
    def noise_rise_linear(self) -> float:
        """Uplink interference over thermal ``(N0 F + I) / (N0 F)`` of the current draw (1: none)."""
        return self._noise_rise

    @property
    def interference_layout(self) -> Any:
        """What the interference model placed (neighbouring clients), or None."""
        return self._interference_layout

    def uplink_tx_power_w(self, client_ids: Any, bandwidth_hz: Any) -> np.ndarray:
        """Uplink transmit power the power control gives these clients on these shares, W.

        Parameters
        ----------
        client_ids : array_like of int, shape (k,)
            Distinct client indices.
        bandwidth_hz : float or array_like, shape (k,)
            Each client's share in Hz, >= 0.

        Returns
        -------
        numpy.ndarray, shape (k,)
        """
        ids = self._check_ids(client_ids)
        shares = np.broadcast_to(check_array("bandwidth_hz", bandwidth_hz, minimum=0.0), ids.shape).astype(float)
        return self._uplink_power(ids, shares)

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
    def downlink_bandwidth_hz(self) -> float | None:
        """Total downlink band, Hz, or None if not configured."""
        return self._downlink_bandwidth_hz

    @property
    def server_tx_power_w(self) -> float | None:
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
        if gains.shape != ids.shape or np.any(~(gains >= 0)) or not np.all(np.isfinite(gains)):
            raise ValueError(f"fading {self.fading!r} must return {ids.size} finite gains >= 0, got {gains!r}")
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
        return self._shared_link(ids, payload_bits, self._uplink_bandwidth_hz, lambda b: self._uplink_power(ids, b),
                                 fading_gain, self._uplink_noise_psd_w_per_hz())

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
        return self._link(ids, shares, self._uplink_power(ids, shares), gains, self._uplink_noise_psd_w_per_hz())

    def downlink_link(self, client_ids: Any, payload_bits: Any = None, fading_gain: Any = None) -> LinkBudget:
        """Downlink links of a group receiving separate data in one phase (see :meth:`downlink_rates_bps`)."""
        ids = self._check_ids(client_ids)
        band, power = self._downlink_config("downlink_rates_bps")
        power_w = np.broadcast_to(np.asarray(power, dtype=float), ids.shape)
        # One transmitter's power spread flat over the band: a sub-band b_k carries P b_k / B.
        return self._shared_link(ids, payload_bits, band, lambda b: power_w * b / band, fading_gain,
                                 self._noise_psd_w_per_hz)

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
        rates = np.asarray(self.rate.rate_bps(band, power, gains, self._noise_psd_w_per_hz), dtype=float)
        self._check_finite(rates, f"rate {self.rate!r}", "broadcast rate_bps", minimum=0.0)
        return float(np.min(rates))

    # ------------------------------------------------------------------ mobility
    def move(self, dt_s: float, rng: np.random.Generator) -> np.ndarray:
        """Move the clients by ``dt_s`` seconds of mobility and update the large-scale channel.

        Order: positions (mobility model, from ``rng``), then the LOS state (latent update from
        the cell's LOS stream, see the module docstring), then path loss, then shadowing
        (``update_site_db`` from the cell's shadowing stream when the model has it; otherwise
        each client keeps its value).  With static mobility nothing changes and no stream is
        consumed.  Then, for ``dt_s > 0``, the interference model draws the next noise rise (which
        neighbouring clients transmit) from the cell's interference stream.

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
        if dt > 0:
            self._noise_rise = self._drawn_noise_rise()
        n = self._n_clients
        new_pos = self._checked_positions(
            self.mobility.step(
                self._positions_m, dt, rng, radius_m=self._radius_m, min_distance_m=self._min_distance_m
            ),
            "mobility", self.mobility,
        )
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
        if self._site_update:
            shadowing_db, self._shadowing_state = self.shadowing.update_site_db(
                self._shadowing_state, self._site_now, site, self._shadowing_rng
            )
            shadowing_db = self._checked_shadowing(shadowing_db)
        else:
            shadowing_db = np.array(self._shadowing_db)
        self._set_state(new_pos, distance, los, pathloss_db, shadowing_db, site)
        self._check_validity(distance, "are, after a move,")
        return moved_m

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The cell's evolving state as plain data, for a checkpoint.

        Returns
        -------
        dict
            ``version``; ``n_clients``; ``component_types`` (kind -> ``module.Class``, to refuse a
            state from another scenario; the class name is compared, not its module, which a
            refactor may change); ``positions_m`` (n, 2); ``los_latent`` (n,) or None;
            ``shadowing_db`` (n,); ``shadowing_state`` (what the shadowing model carries between
            moves); ``los_rng`` / ``shadowing_rng`` / ``interference_rng`` (the streams'
            ``bit_generator.state``); ``noise_rise`` (the uplink noise rise of the current draw);
            ``component_states`` (kind -> ``state_dict()`` of each :class:`~sfl_sim.channel.protocols.Stateful`
            component, e.g. mobility).  Only numpy arrays (copies), Python numbers, strings,
            bools, None and dicts/lists: convert the arrays to tensors (``torch.from_numpy``) to
            save with ``torch.save`` and load with ``torch.load(weights_only=True)``.

        Raises
        ------
        ValueError
            If a component's state (or the shadowing model's carried state) is not plain data.
        """
        return {
            "version": CELL_STATE_VERSION,
            "n_clients": self._n_clients,
            "component_types": {kind: _type_name(c) for kind, c in self._components.items()},
            "positions_m": np.array(self._positions_m),
            "los_latent": None if self._los_latent is None else np.array(self._los_latent),
            "shadowing_db": np.array(self._shadowing_db),
            "shadowing_state": _plain(self._shadowing_state, f"shadowing {self.shadowing!r} state"),
            "los_rng": _plain(self._los_rng.bit_generator.state, "los_rng state"),
            "shadowing_rng": _plain(self._shadowing_rng.bit_generator.state, "shadowing_rng state"),
            "interference_rng": _plain(self._interference_rng.bit_generator.state, "interference_rng state"),
            "noise_rise": self._noise_rise,
            "component_states": {
                kind: _plain(c.state_dict(), f"{kind} {c!r} state_dict()")
                for kind, c in self._components.items() if isinstance(c, Stateful)
            },
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` into this cell, built from the same scenario.

        Afterwards every property, and every later :meth:`move` and rate, is bit-identical to the
        continuation of the cell the state was taken from.  Arrays may be numpy arrays, lists or
        CPU tensors.  Nothing is changed when the state is refused.

        Parameters
        ----------
        state : dict
            From :meth:`state_dict`.

        Raises
        ------
        ValueError
            For missing or unexpected keys, another version (a state saved by an older cell is
            upgraded by whoever reads it: :func:`sfl_sim.runs.rundir.upgrade.cell_state`), client
            count or component types,
            arrays of the wrong shape or with non-finite values, or an rng state that does not
            fit the cell's streams.
        """
        if isinstance(state, dict) and state.get("version", CELL_STATE_VERSION) != CELL_STATE_VERSION:
            # before the keys: another version's layout has other keys
            raise ValueError(f"Cell state version must be {CELL_STATE_VERSION}, got {state['version']!r}")
        check_state_keys("Cell", state, _STATE_KEYS)
        n = self._n_clients
        if state["n_clients"] != n:
            raise ValueError(f"Cell state is for {state['n_clients']!r} clients, this cell has {n}")
        types = {kind: _type_name(c) for kind, c in self._components.items()}
        saved_types = state["component_types"] if isinstance(state["component_types"], dict) else {}
        # A class is the same where its name is: the module path is not compared, so a state loads
        # into the same components after a refactor moved them (the run checks identity by name).
        qualnames = {kind: type(c).__qualname__ for kind, c in self._components.items()}
        if set(saved_types) != set(types) or any(
                not isinstance(saved_types[k], str) or not (saved_types[k] == types[k]
                                                            or saved_types[k].endswith("." + qualnames[k]))
                for k in types):
            diff = sorted(k for k in set(types) | set(saved_types) if saved_types.get(k) != types.get(k))
            raise ValueError(
                f"Cell state was saved with other components ({', '.join(diff)}): "
                f"{ {k: (state['component_types'] or {}).get(k) for k in diff} }, this cell has "
                f"{ {k: types.get(k) for k in diff} }"
            )
        positions = state_array("Cell", state, "positions_m", (n, 2))
        distance = CLIENT_DISTANCE_M.check_array("Cell state distance_m", _distances_m(positions))
        if self._los_aware:
            if state["los_latent"] is None:
                raise ValueError("Cell state['los_latent'] must be an array of shape "
                                 f"({n},) for the LOS-aware path loss {self.pathloss!r}, got None")
            latent = state_array("Cell", state, "los_latent", (n,))
        elif state["los_latent"] is not None:
            raise ValueError(f"Cell state['los_latent'] must be None for path loss {self.pathloss!r} (no LOS)")
        else:
            latent = None
        shadowing_db = state_array("Cell", state, "shadowing_db", (n,))
        shadowing_state = _plain(state["shadowing_state"], "Cell state['shadowing_state']")
        rng_states = {}
        noise_rise = state["noise_rise"]
        if isinstance(noise_rise, bool) or not isinstance(noise_rise, (int, float)) or \
                not (math.isfinite(noise_rise) and noise_rise >= 1.0):
            raise ValueError(f"Cell state['noise_rise'] must be a finite number >= 1, got {noise_rise!r}")
        for key, rng in (("los_rng", self._los_rng), ("shadowing_rng", self._shadowing_rng),
                         ("interference_rng", self._interference_rng)):
            scratch = type(rng.bit_generator)()
            try:
                scratch.state = copy.deepcopy(state[key])
            except (TypeError, ValueError, KeyError) as exc:
                raise ValueError(
                    f"Cell state[{key!r}] is not a {type(rng.bit_generator).__name__} state ({exc})"
                ) from None
            rng_states[key] = scratch.state
        stateful = {kind: c for kind, c in self._components.items() if isinstance(c, Stateful)}
        saved = state["component_states"]
        if not isinstance(saved, dict) or set(saved) != set(stateful):
            raise ValueError(
                f"Cell state['component_states'] must hold the states of {sorted(stateful)}, "
                f"got {sorted(saved) if isinstance(saved, dict) else saved!r}"
            )
        # Components last among the checks: their own load refuses a bad state before changing.
        for kind, component in stateful.items():
            component.load_state_dict(_plain(saved[kind], f"Cell state['component_states'][{kind!r}]"))
        self._los_rng.bit_generator.state = rng_states["los_rng"]
        self._shadowing_rng.bit_generator.state = rng_states["shadowing_rng"]
        self._interference_rng.bit_generator.state = rng_states["interference_rng"]
        self._noise_rise = float(noise_rise)
        self._los_latent = latent
        self._shadowing_state = shadowing_state
        los = self._los_state(distance)
        pathloss_db = self._pathloss(distance, los)
        site = self._site(positions, distance, los)
        self._set_state(positions, distance, los, pathloss_db, self._checked_shadowing(shadowing_db), site)

    # ------------------------------------------------------------------ summaries
    def describe(self, n_sharing: int | None = None) -> dict[str, np.ndarray]:
        """Per-client summary for printing and result files.

        SINR, SNR, power and rate assume the client transmits on an equal share
        ``uplink_bandwidth_hz / n_sharing`` (a reference point, not what a given phase uses).

        Parameters
        ----------
        n_sharing : int, optional
            Number of clients sharing the band, >= 1; default ``n_clients``.

        Returns
        -------
        dict of str to numpy.ndarray, each shape (n,)
            ``client`` (int), ``distance_m``, ``pathloss_db``, ``shadowing_db``, ``snr_db`` (signal
            over thermal noise only), ``uplink_rate_bps`` (at the SINR), ``sinr_db`` (with the
            current interference draw; equal to ``snr_db`` without interference), ``tx_power_w``
            (the power control's power on the share).
        """
        k = self._n_clients if n_sharing is None else check_count("n_sharing", n_sharing)
        if k < 1:
            raise ValueError(f"n_sharing must be an integer >= 1, got {n_sharing!r}")
        ids = np.arange(self._n_clients)
        link = self.uplink_link_at_bandwidth(ids, self._uplink_bandwidth_hz / k)
        if self._noise_rise == 1.0:
            snr_db = link.snr_db
        else:
            thermal = self._link(ids, link.bandwidth_hz, link.tx_power_w, link.gain_linear, self._noise_psd_w_per_hz)
            snr_db = thermal.snr_db
        return {
            "client": ids,
            "distance_m": self._distance_m.copy(),
            "pathloss_db": self._pathloss_db.copy(),
            "shadowing_db": self._shadowing_db.copy(),
            "snr_db": snr_db,
            "uplink_rate_bps": link.rate_bps,
            "sinr_db": link.snr_db.copy(),
            "tx_power_w": link.tx_power_w,
        }

    def __repr__(self) -> str:
        # The uplink extensions are named only when set, so the default cell reads as before.
        extra = "".join(
            f", {name}={component!r}" for name, component, default in (
                ("power_control", self.power_control, FixedPower), ("interference", self.interference, NoInterference))
            if type(component) is not default
        )
        return (
            f"Cell(n_clients={self._n_clients}, placement={self.placement!r}, pathloss={self.pathloss!r}, "
            f"shadowing={self.shadowing!r}, rate={self.rate!r}, allocator={self.allocator!r}, "
            f"fading={self.fading!r}, mobility={self.mobility!r}{extra})"
        )

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _check_finite(values: np.ndarray, who: str, quantity: str, minimum: float | None = None,
                      where: np.ndarray | None = None) -> None:
        """Raise ``ValueError`` naming ``who`` and ``quantity`` when a value is nan/inf (or below
        ``minimum``); ``where`` restricts the check to some entries."""
        values = np.asarray(values, dtype=float)
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(values) if minimum is None else ~(np.isfinite(values) & (values >= minimum))
        if where is not None:
            bad = bad & np.broadcast_to(where, bad.shape)
        if np.any(bad):
            idx = np.argwhere(bad)[0]
            at = f" (client index {int(idx[0])})" if values.ndim else ""
            rel = "finite" if minimum is None else f"finite and >= {minimum:g}"
            raise ValueError(f"{who} gave a {quantity} that is not {rel}: {float(values[tuple(idx)])!r}{at}")

    def _checked_positions(self, positions: Any, kind: str, component: Any) -> np.ndarray:
        n = self._n_clients
        positions = np.asarray(positions, dtype=float)
        if positions.shape != (n, 2):
            raise ValueError(f"{kind} {component!r} returned positions of shape {positions.shape}, expected ({n}, 2)")
        self._check_finite(positions, f"{kind} {component!r}", "position (m)")
        CLIENT_DISTANCE_M.check_array(f"{kind} {component!r} client distance_m", _distances_m(positions))
        return positions

    def _checked_shadowing(self, shadowing_db: Any) -> np.ndarray:
        n = self._n_clients
        shadowing_db = np.asarray(shadowing_db, dtype=float)
        if shadowing_db.shape != (n,):
            raise ValueError(f"shadowing {self.shadowing!r} returned shape {shadowing_db.shape}, expected ({n},)")
        self._check_finite(shadowing_db, f"shadowing {self.shadowing!r}", "shadowing (dB)")
        return shadowing_db

    @staticmethod
    def _validity_range(pathloss: Any) -> tuple[float, float] | None:
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

    def _validity_problem(self, low_m: float, high_m: float, what: str) -> None:
        valid_low, valid_high = self._valid_distance_m  # type: ignore[misc]
        fixes = []
        if low_m < valid_low:
            fixes.append(f"min_distance_m >= {valid_low:g}")
        if high_m > valid_high:
            fixes.append(f"radius_m <= {valid_high:g}")
        message = (
            f"{what} outside the valid distance range [{valid_low:g}, {valid_high:g}] m of pathloss "
            f"{self.pathloss!r}; set {' and '.join(fixes)} or choose another path-loss model"
        )
        if self._out_of_range == "error":
            raise ValueError(message)
        if not self._validity_warned:
            self._validity_warned = True
            warnings.warn(message, ModelValidityWarning, stacklevel=4)

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
        if self._valid_distance_m is None:
            return
        if isinstance(self.mobility, BoundedSpeedMobility) and self.mobility.max_speed_m_per_s == 0:
            return
        low, high = self._valid_distance_m
        if self._min_distance_m < low or self._radius_m > high:
            self._validity_problem(
                self._min_distance_m, self._radius_m,
                f"mobility {self.mobility!r} can take clients anywhere in "
                f"[{self._min_distance_m:g}, {self._radius_m:g}] m,",
            )

    def _los_state(self, distance: np.ndarray) -> np.ndarray | None:
        if not self._los_aware:
            return None
        p = np.asarray(self.pathloss.los_probability(distance), dtype=float)
        if p.shape != distance.shape or np.any(~((p >= 0) & (p <= 1))):
            raise ValueError(
                f"pathloss {self.pathloss!r} los_probability must return {distance.shape} values in [0, 1]")
        return scipy.special.ndtr(self._los_latent) < p

    def _pathloss(self, distance: np.ndarray, los: np.ndarray | None) -> np.ndarray:
        out = self.pathloss.loss_db(distance) if los is None else self.pathloss.loss_db(distance, los=los)
        out = np.asarray(out, dtype=float)
        if out.shape != distance.shape:
            raise ValueError(f"pathloss {self.pathloss!r} returned shape {out.shape}, expected {distance.shape}")
        self._check_finite(out, f"pathloss {self.pathloss!r}", "path loss (dB)")
        return out

    def _site(self, positions: np.ndarray, distance: np.ndarray, los: np.ndarray | None) -> ShadowingSite:
        n = distance.shape[0]

        def per_client(present: bool, method: str) -> np.ndarray | None:
            if not present:
                return None
            values = np.broadcast_to(np.asarray(getattr(self.pathloss, method)(los), dtype=float), (n,))
            self._check_finite(values, f"pathloss {self.pathloss!r}", method, minimum=0.0)
            return readonly(values)

        return ShadowingSite(
            positions_m=readonly(positions),
            distance_m=readonly(distance),
            los=None if los is None else np.array(los, dtype=bool),
            model_sigma_db=per_client(self._model_sigma, "shadowing_sigma_db"),
            model_decorrelation_m=per_client(self._model_decorrelation, "shadowing_decorrelation_m"),
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
        self._coupling_loss_db = readonly(pathloss_db + shadowing_db)
        self._site_now = site
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
        self._gain_linear = readonly(gain)

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

    def _uplink_power(self, ids: np.ndarray, shares: np.ndarray) -> np.ndarray:
        """The power control's uplink power of clients ``ids`` on ``shares``, checked."""
        power = np.asarray(self.power_control.tx_power_w(self._tx_power_w[ids], shares, self._coupling_loss_db[ids]),
                           dtype=float)
        if power.shape != ids.shape:
            raise ValueError(f"power_control {self.power_control!r} returned shape {power.shape}, expected {ids.shape}")
        self._check_finite(power, f"power_control {self.power_control!r}", "tx_power_w", minimum=0.0)
        return power

    def _uplink_noise_psd_w_per_hz(self) -> float:
        """The noise PSD the uplink rate sees: ``N0`` times the noise rise of the interference."""
        return self._noise_psd_w_per_hz if self._noise_rise == 1.0 else self._noise_psd_w_per_hz * self._noise_rise

    def _drawn_noise_rise(self) -> float:
        rise = self.interference.noise_rise_linear(self._scene, self._interference_layout, self._interference_rng)
        if not (isinstance(rise, (int, float, np.floating)) and math.isfinite(rise) and rise >= 1.0):
            raise ValueError(f"interference {self.interference!r} gave a noise rise that is not a finite number >= 1: "
                             f"{rise!r}")
        return float(rise)

    def _link(self, ids: np.ndarray, shares: np.ndarray, power_w: Any, gains: np.ndarray,
              noise_psd_w_per_hz: float | None = None) -> LinkBudget:
        noise = self._noise_psd_w_per_hz if noise_psd_w_per_hz is None else noise_psd_w_per_hz
        power = np.broadcast_to(np.asarray(power_w, dtype=float), ids.shape)
        rate = np.asarray(self.rate.rate_bps(shares, power, gains, noise), dtype=float)
        self._check_finite(rate, f"rate {self.rate!r}", "rate_bps", minimum=0.0)
        if self._rate_has_snr:
            snr = np.asarray(self.rate.snr_linear(shares, power, gains, noise), dtype=float)
        else:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                snr = power * gains / (shares * noise)
            snr = np.where(np.isnan(snr), 0.0, snr)
        # An SNR is infinite only on a 0 Hz share (no noise); anywhere else it must be finite.
        self._check_finite(snr, f"rate {self.rate!r}" if self._rate_has_snr else "the link budget", "SNR (linear)",
                           where=np.broadcast_to(shares, np.shape(snr)) > 0)
        return LinkBudget(
            client_ids=ids.copy(),
            bandwidth_hz=np.array(shares, dtype=float),
            tx_power_w=np.array(power, dtype=float),
            gain_linear=np.array(gains, dtype=float),
            snr_db=np.asarray(linear_to_db(snr), dtype=float).reshape(ids.shape),
            rate_bps=rate.reshape(ids.shape),
        )

    def _shared_link(
        self, ids: np.ndarray, payload_bits: Any, band_hz: float, power_on: Callable[[np.ndarray], np.ndarray],
        fading_gain: Any, noise_psd_w_per_hz: float,
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

        if self._allocator_wants_link:
            def rate_of(bandwidth_hz: np.ndarray) -> np.ndarray:
                b = np.asarray(bandwidth_hz, dtype=float)
                return np.asarray(self.rate.rate_bps(b, power_on(b), gains, noise_psd_w_per_hz), dtype=float)

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
        return self._link(ids, shares, power_on(shares), gains, noise_psd_w_per_hz)
