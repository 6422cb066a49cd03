"""The radio of one cell: its clients' large-scale channel and the link budget of every phase.

A :class:`Cell` is a thin assembly of two parts, built from swappable components (placement, path
loss, shadowing, rate model, bandwidth allocator, and optionally small-scale fading, mobility,
uplink power control and interference) that the caller creates through the registries:

- :class:`~sfl_sim.channel.large_scale.model.LargeScale`: where the clients are, whether they are
  in LOS, their path loss and shadowing, and how these evolve when :meth:`Cell.move` moves them
  (placement, path loss, shadowing and mobility composed, their capabilities looked up once);
- :class:`~sfl_sim.channel.link.budget.LinkBudgetModel`: the per-round link budget (power
  control, the noise rise of the interference, rate and allocation) of the uplink, the downlink
  and the broadcast, with the interference drawn by
  :class:`~sfl_sim.channel.link.noise_rise.UplinkNoiseRise`.

The clients are dropped on construction; the per-client arrays are read-only, and change only
when :meth:`Cell.move` moves the clients.

Random streams
--------------
Each source of randomness has its own generator, so swapping one model never shifts the others'
draws: ``placement_rng`` (positions), ``los_rng`` (LOS state of LOS-aware path-loss models),
``shadowing_rng`` (shadowing), see :mod:`sfl_sim.channel.large_scale.model`.  Fading and mobility
are drawn from the generators the caller passes to :meth:`Cell.sample_fading` and
:meth:`Cell.move`.  ``interference_rng`` places the clients of neighbouring cells on construction
and draws which of them transmit, then once more at every :meth:`Cell.move` with ``dt_s > 0``
(only the ``first_tier`` interference model draws).

Components and checks
---------------------
Each component must satisfy its protocol (:mod:`sfl_sim.channel.protocols`).  Parameters are
checked against the physical ranges of :mod:`sfl_sim.channel.limits`, and every quantity the
components produce (positions, path loss, shadowing, gains, SNR, rates) must be finite: a
``ValueError`` names the component and the quantity otherwise.  A path-loss model with
``valid_distance_m`` makes the cell warn (:class:`ModelValidityWarning`) or, with
``out_of_range="error"``, refuse when clients lie outside it, on construction and after every move.

State
-----
:meth:`Cell.state_dict` returns the cell's evolving state as plain data (numpy arrays, numbers,
strings, dicts): positions, the LOS latent, shadowing values, the shadowing model's carried
state, the cell's LOS, shadowing and interference streams, the noise rise and the state of
stateful components (mobility).  :meth:`Cell.load_state_dict` restores it into a freshly built
cell of the same scenario, after which every property and every later draw is bit-identical to
the original's continuation.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from sfl_sim.channel.checks import plain_data
from sfl_sim.channel.kinds import CELL_KINDS
from sfl_sim.channel.large_scale.mobility import StaticMobility
from sfl_sim.channel.large_scale.model import (
    OUT_OF_RANGE_CHOICES,
    LargeScale,
    ModelValidityWarning,
    NetworkSites,
    OutOfRange,
)
from sfl_sim.channel.limits import CLIENT_TX_POWER_W
from sfl_sim.channel.link.budget import LinkBudget, LinkBudgetModel
from sfl_sim.channel.link.fading import NoFading
from sfl_sim.channel.link.interference import NoInterference
from sfl_sim.channel.link.noise_rise import UplinkNoiseRise
from sfl_sim.channel.link.power_control import FixedPower
from sfl_sim.channel.protocols import (
    Allocator,
    Fading,
    Interference,
    Mobility,
    PathLoss,
    Placement,
    PowerControl,
    Rate,
    Shadowing,
    Stateful,
    TimedMobility,
    TimeVaryingFading,
    UplinkScene,
)
from sfl_sim.channel.radio_state import RadioState
from sfl_sim.kit.checks import check_array, check_count, check_scalar, check_state_keys, readonly
from sfl_sim.kit.protocols import check_protocol, check_protocols

__all__ = ["Cell", "LinkBudget", "ModelValidityWarning", "OutOfRange", "OUT_OF_RANGE_CHOICES", "CELL_STATE_VERSION"]

#: Version of the :meth:`Cell.state_dict` layout.
CELL_STATE_VERSION = 2
_STATE_KEYS = (
    "version", "n_clients", "component_types", "positions_m", "los_latent", "shadowing_db",
    "shadowing_state", "los_rng", "shadowing_rng", "component_states", "interference_rng", "noise_rise",
)
#: The keys a cell in time (time-varying fading or timed mobility) adds: the radio state's clock.
_TIME_KEYS = ("radio_time_s", "radio_grid_index", "moved_s")


def _type_name(obj: Any) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


class Cell:
    """Large-scale state and link budget of one cell with ``n_clients`` clients and a server at the origin.

    Parameters
    ----------
    placement : Placement
        Has ``sample_positions_m(n_clients, rng) -> ndarray (n, 2)`` (see ``PLACEMENTS``).
    pathloss : PathLoss
        Has ``loss_db(distance_m) -> ndarray`` (see ``PATHLOSS``).
    shadowing : Shadowing
        Has ``sample_db(n_clients, rng) -> ndarray (n,)`` (see ``SHADOWING``).
    rate : Rate
        Has ``rate_bps(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz)`` (see ``RATES``).
    allocator : Allocator
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
    fading : Fading, optional
        Has ``sample_power_gain(n, rng) -> ndarray (n,)`` (see ``FADING``); default no fading.
    mobility : Mobility, optional
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
    power_control : PowerControl, optional
        Has ``tx_power_w(nominal_tx_power_w, bandwidth_hz, coupling_loss_db)`` (see
        ``POWER_CONTROL``); default ``fixed`` (every client at ``tx_power_w``).
    interference : Interference, optional
        Has ``deploy(scene, rng)`` and ``noise_rise_linear(scene, layout, rng)`` (see
        ``INTERFERENCE``); default none.
    interference_rng : numpy.random.Generator, optional
        Stream of the interference model's draws; defaults to ``shadowing_rng`` (pass a separate
        stream).
    downlink_rate : Rate, optional
        The downlink's own rate model (the clients' receivers: their noise figure, the PDSCH's
        overhead and curves); default ``rate``.
    numerology : int, optional
        The cell's numerology ``mu``: a share of a channel that TS 38.101-1 Table 5.3.2-1 lists is
        rated on its resource blocks, ``b N_RB 12 SCS / B`` Hz (guard bands carry nothing; TS
        38.306 clause 4.1.2); None (the default): on the whole share
        (:mod:`sfl_sim.channel.link.budget`).
    """

    def __init__(
        self,
        placement: Placement,
        pathloss: PathLoss,
        shadowing: Shadowing,
        rate: Rate,
        allocator: Allocator,
        *,
        n_clients: int,
        tx_power_w: npt.ArrayLike,
        noise_psd_dbm_per_hz: float,
        uplink_bandwidth_hz: float,
        downlink_bandwidth_hz: float | None = None,
        server_tx_power_w: float | None = None,
        placement_rng: np.random.Generator,
        shadowing_rng: np.random.Generator,
        fading: Fading | None = None,
        mobility: Mobility | None = None,
        los_rng: np.random.Generator | None = None,
        radius_m: float | None = None,
        min_distance_m: float | None = None,
        out_of_range: str = "warn",
        power_control: PowerControl | None = None,
        interference: Interference | None = None,
        interference_rng: np.random.Generator | None = None,
        downlink_rate: Rate | None = None,
        numerology: int | None = None,
        fading_process_rng: np.random.Generator | None = None,
        mobility_rng: np.random.Generator | None = None,
        carrier_frequency_hz: float | None = None,
        network: Any = None,
        handover: Any = None,
        network_rng: np.random.Generator | None = None,
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
        by_argument: dict[str, object] = {
            "placement": placement, "pathloss": pathloss, "shadowing": shadowing, "rate": rate,
            "allocator": allocator, "fading": fading, "mobility": mobility, "power_control": power_control,
            "interference": interference,
        }
        # The components by kind, in the kinds' order (the state's component_types keep it).
        self._components = {kind.name: by_argument[str(kind.cell_argument)] for kind in CELL_KINDS}
        # a fading or mobility in time answers its own protocol (sfl_sim.channel.radio_state)
        in_time = {"fading": ("time_varying", TimeVaryingFading), "mobility": ("timed", TimedMobility)}
        for kind in CELL_KINDS:
            component = self._components[kind.name]
            flag, timed_protocol = in_time.get(kind.name, ("", kind.protocol))
            if flag and getattr(component, flag, False):
                check_protocol(component, timed_protocol, f"Cell {kind.name}")
            else:
                check_protocols(component, kind.protocols, f"Cell {kind.name}")

        power = CLIENT_TX_POWER_W.check_array("tx_power_w", tx_power_w)
        if power.ndim == 0:
            power = np.full(n, float(power))
        elif power.shape != (n,):
            raise ValueError(
                f"tx_power_w must be a scalar or have shape ({n},) (one per client), got shape {power.shape}"
            )
        self._tx_power_w = readonly(power)
        self._n_clients = n
        self._fading = fading
        self._budget = LinkBudgetModel(
            rate, allocator, power_control, noise_psd_dbm_per_hz=noise_psd_dbm_per_hz,
            uplink_bandwidth_hz=uplink_bandwidth_hz, downlink_bandwidth_hz=downlink_bandwidth_hz,
            server_tx_power_w=server_tx_power_w, downlink_rate=downlink_rate, numerology=numerology,
        )
        if downlink_rate is not None:
            check_protocol(downlink_rate, Rate, "Cell downlink_rate")
        sites = None
        if network is not None:  # the validity check of a moving client on a network (NetworkSites)
            from sfl_sim.channel.network.state import _MIN_DISTANCE_M

            isd_m = getattr(network, "isd_m", None)
            sites = NetworkSites(_MIN_DISTANCE_M, None if isd_m is None else float(isd_m))
        self._large_scale = LargeScale(
            placement, pathloss, shadowing, mobility, n_clients=n, placement_rng=placement_rng, los_rng=los_rng,
            shadowing_rng=shadowing_rng, radius_m=radius_m, min_distance_m=min_distance_m, out_of_range=out_of_range,
            network_sites=sites,
        )
        # Interference last: its scene needs the radius, and its draws come from its own stream.
        self._interference_rng = interference_rng  # the noise rise draws from it
        self._noise_rise = UplinkNoiseRise(interference, UplinkScene(
            placement=placement, pathloss=pathloss, shadowing=shadowing, power_control=power_control,
            n_clients=n, tx_power_w=self._tx_power_w, uplink_bandwidth_hz=self._budget.uplink_bandwidth_hz,
            noise_floor_w_per_hz=self._budget.noise_floor_w_per_hz, radius_m=self._large_scale.radius_m,
        ), interference_rng)
        if carrier_frequency_hz is None:
            # the path-loss model's carrier when it has one; otherwise the 2 GHz of the 3GPP
            # evaluation setup TR 36.814 macro is defined for (sfl_sim.channel.large_scale.pathloss)
            carrier_frequency_hz = float(getattr(getattr(pathloss, "params", None), "carrier_frequency_hz", 2.0e9))
        self._radio = RadioState(self._large_scale, self._budget, self._noise_rise, self._tx_power_w, fading,
                                 carrier_frequency_hz=carrier_frequency_hz, fading_rng=fading_process_rng,
                                 mobility_rng=mobility_rng)
        self._network = None
        if network is not None:
            # a network of cells (sfl_sim.channel.network.state): serving cells, handovers, interference
            from sfl_sim.channel.network.association import A3Handover
            from sfl_sim.channel.network.state import NetworkRadio

            if network_rng is None:
                raise ValueError("network_rng: got None; allowed: a numpy.random.Generator (the network's stream)")
            radio = self._radio
            self._network = NetworkRadio(
                network, A3Handover() if handover is None else handover, self._large_scale, self._budget,
                self._tx_power_w, network_rng, timed_mobility=radio._timed_mobility,
                large_scale_step_s=radio.large_scale_step_s, position_step_s=radio.position_step_s)
            radio.attach_network(self._network)
        self._moved_s = 0.0  # the time the cell's moves add up to (a timed mobility is advanced to it)

    # ------------------------------------------------------------------ components
    @property
    def placement(self) -> Placement:
        """Where the clients were dropped."""
        return self._large_scale.placement

    @property
    def pathloss(self) -> PathLoss:
        """The path-loss model."""
        return self._large_scale.pathloss

    @property
    def shadowing(self) -> Shadowing:
        """The shadowing model."""
        return self._large_scale.shadowing

    @property
    def fading(self) -> Fading:
        """The small-scale fading model (none by default)."""
        return self._fading

    @property
    def mobility(self) -> Mobility:
        """The mobility model (static by default)."""
        return self._large_scale.mobility

    @property
    def rate(self) -> Rate:
        """The (uplink) rate model."""
        return self._budget.rate

    @property
    def downlink_rate(self) -> Rate:
        """The downlink's rate model (the uplink's when the cell was given none)."""
        return self._budget.downlink_rate

    @property
    def allocator(self) -> Allocator:
        """The bandwidth allocator."""
        return self._budget.allocator

    @property
    def power_control(self) -> PowerControl:
        """The uplink power control (``fixed`` by default)."""
        return self._budget.power_control

    @property
    def interference(self) -> Interference:
        """The uplink interference model (none by default)."""
        return self._noise_rise.interference

    @property
    def large_scale(self) -> LargeScale:
        """The clients' large-scale channel (placement, LOS, path loss, shadowing, mobility)."""
        return self._large_scale

    @property
    def link_budget(self) -> LinkBudgetModel:
        """The per-round link budget (power control, rate, allocation, bands and noise)."""
        return self._budget

    @property
    def radio(self) -> RadioState:
        """The clients' radio advanced in time: the one port the engine asks for links."""
        return self._radio

    # ------------------------------------------------------------------ read-only state
    @property
    def n_clients(self) -> int:
        """Number of clients in the cell."""
        return self._n_clients

    @property
    def positions_m(self) -> np.ndarray:
        """Client positions, shape (n, 2), metres; server at the origin."""
        return self._large_scale.snapshot.positions_m

    @property
    def distance_m(self) -> np.ndarray:
        """Client-server distances, shape (n,), metres."""
        return self._large_scale.snapshot.distance_m

    @property
    def pathloss_db(self) -> np.ndarray:
        """Path loss per client, shape (n,), dB."""
        return self._large_scale.snapshot.pathloss_db

    @property
    def shadowing_db(self) -> np.ndarray:
        """Shadowing per client, shape (n,), dB (positive = extra loss)."""
        return self._large_scale.snapshot.shadowing_db

    @property
    def los(self) -> np.ndarray | None:
        """LOS state per client (bool, shape (n,)), or None when the path-loss model has no LOS."""
        return self._large_scale.snapshot.los

    @property
    def radius_m(self) -> float:
        """Radius of the disc mobility keeps clients in, metres."""
        return self._large_scale.radius_m

    @property
    def min_distance_m(self) -> float:
        """Exclusion radius around the base station for mobility, metres."""
        return self._large_scale.min_distance_m

    @property
    def gain_linear(self) -> np.ndarray:
        """Linear channel power gain ``10^(-(pathloss_db + shadowing_db)/10)``, shape (n,)."""
        return self._large_scale.snapshot.gain_linear

    @property
    def tx_power_w(self) -> np.ndarray:
        """Client transmit power, shape (n,), W."""
        return self._tx_power_w

    @property
    def noise_rise_linear(self) -> float:
        """Uplink interference over thermal ``(N0 F + I) / (N0 F)`` of the current draw (1: none)."""
        return self._noise_rise.linear

    @property
    def interference_layout(self) -> Any:
        """What the interference model placed (neighbouring clients), or None."""
        return self._noise_rise.layout

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
        radio = self._radio
        return self._budget.uplink_tx_power_w(self._tx_power_w[ids], shares, radio.coupling_loss_db(ids, radio.t_s))

    @property
    def noise_psd_dbm_per_hz(self) -> float:
        """Noise power spectral density, dBm/Hz."""
        return self._budget.noise_psd_dbm_per_hz

    @property
    def noise_psd_w_per_hz(self) -> float:
        """Noise power spectral density, W/Hz."""
        return self._budget.noise_psd_w_per_hz

    @property
    def uplink_bandwidth_hz(self) -> float:
        """Total uplink band, Hz."""
        return self._budget.uplink_bandwidth_hz

    @property
    def downlink_bandwidth_hz(self) -> float | None:
        """Total downlink band, Hz, or None if not configured."""
        return self._budget.downlink_bandwidth_hz

    @property
    def server_tx_power_w(self) -> float | None:
        """Server transmit power, W, or None if not configured."""
        return self._budget.server_tx_power_w

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
        if self._radio.time_varying:
            raise ValueError(f"fading {self.fading!r} is time-varying: its gains are at times "
                             "(cell.radio.links with fading='at_time'), not drawn per block")
        gains = np.asarray(self._fading.sample_power_gain(ids.size, rng), dtype=float)
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
        return self._radio.links(ids, self._radio.t_s, fading=fading_gain, payload_bits=payload_bits)

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
        return self._radio.links(ids, self._radio.t_s, bandwidth_hz, fading=fading_gain)

    def downlink_link(self, client_ids: Any, payload_bits: Any = None, fading_gain: Any = None) -> LinkBudget:
        """Downlink links of a group receiving separate data in one phase (see :meth:`downlink_rates_bps`)."""
        ids = self._check_ids(client_ids)
        return self._radio.links(ids, self._radio.t_s, fading=fading_gain, direction="downlink",
                                 payload_bits=payload_bits)

    def downlink_link_at_bandwidth(self, client_ids: Any, bandwidth_hz: Any, fading_gain: Any = None) -> LinkBudget:
        """Downlink links on given shares, bypassing the allocator (a share b_k carries P b_k / B)."""
        ids = self._check_ids(client_ids)
        return self._radio.links(ids, self._radio.t_s, bandwidth_hz, fading=fading_gain, direction="downlink")

    def broadcast_link(self, client_ids: Any, fading_gain: Any = None) -> LinkBudget:
        """Each receiver's link of one server transmission on the whole downlink band (its rate is
        what that receiver could decode; :meth:`broadcast_rate_bps` is their minimum)."""
        ids = self._check_ids(client_ids)
        return self._radio.links(ids, self._radio.t_s, fading=fading_gain, direction="broadcast")

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
        return self._budget.broadcast_rate_bps(ids, self._large_scale.snapshot.gain_linear[ids], fading_gain)

    # ------------------------------------------------------------------ mobility
    def move(self, dt_s: float, rng: np.random.Generator, uplink_load: float | None = None) -> np.ndarray:
        """Move the clients by ``dt_s`` seconds of mobility and update the large-scale channel.

        For ``dt_s > 0`` the interference model first draws the next noise rise (which
        neighbouring clients transmit) from the cell's interference stream; a model that follows
        the cell's own load (``first_tier`` with ``rb_load: own_cell``) loads the neighbours with
        ``uplink_load``.  Then, as
        :meth:`LargeScale.move <sfl_sim.channel.large_scale.model.LargeScale.move>`: positions
        (mobility model, from ``rng``), the LOS state (latent update from the cell's LOS stream),
        path loss, and shadowing (``update_site_db`` from the cell's shadowing stream when the
        model has it; otherwise each client keeps its value).  With static mobility nothing else
        changes and no other stream is consumed.

        Parameters
        ----------
        dt_s : float
            Elapsed simulated time in seconds, >= 0 (e.g. the duration of the last round).
        rng : numpy.random.Generator
            The mobility stream.
        uplink_load : float, optional
            The cell's uplink RB load over those seconds, in [0, 1]
            (:meth:`RoundContext.uplink_load <sfl_sim.engine.RoundContext.uplink_load>`); None: not
            measured (a model that follows it takes fully loaded neighbours, as before the
            first round).

        Returns
        -------
        numpy.ndarray, shape (n,)
            Distance each client moved, metres.
        """
        dt = check_scalar("dt_s", dt_s, minimum=0.0)
        if dt > 0:
            if uplink_load is not None and not 0.0 <= check_scalar("uplink_load", uplink_load) <= 1.0:
                raise ValueError(f"uplink_load: got {uplink_load!r}; allowed: a fraction in [0, 1]")
            self._noise_rise.draw(uplink_load)
        if not self._radio.timed:
            return self._large_scale.move(dt, rng)
        # a timed mobility: positions are a function of time; the moves add up to the clock
        before = np.array(self._large_scale.snapshot.positions_m)
        self._moved_s += dt
        self._radio.advance_to(max(self._radio.t_s, self._moved_s))
        return np.hypot(*(self._large_scale.snapshot.positions_m - before).T)

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
            **self._large_scale.state_dict(),
            **self._noise_rise.state_dict(),
            # only a cell in time has a clock: the states of every other cell keep their keys
            **({**self._radio.state_dict(), "moved_s": self._moved_s} if self._radio.in_time else {}),
            **({"network": plain_data(self._network.state_dict(), "network state")} if self._network else {}),
            "component_states": {
                kind: plain_data(c.state_dict(), f"{kind} {c!r} state_dict()")
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
        check_state_keys("Cell", state, _STATE_KEYS + (_TIME_KEYS if self._radio.in_time else ())
                         + (("network",) if self._network is not None else ()))
        n = self._n_clients
        if state["n_clients"] != n:
            raise ValueError(f"Cell state is for {state['n_clients']!r} clients, this cell has {n}")
        types = {kind: _type_name(c) for kind, c in self._components.items()}
        saved_types = state["component_types"] if isinstance(state["component_types"], dict) else {}
        # exactly: a state saved before a refactor moved a class reads as today's names
        # (sfl_sim.runs.rundir.upgrade.cell_state)
        if set(saved_types) != set(types) or any(saved_types[k] != types[k] for k in types):
            diff = sorted(k for k in set(types) | set(saved_types) if saved_types.get(k) != types.get(k))
            raise ValueError(
                f"Cell state was saved with other components ({', '.join(diff)}): "
                f"{ {k: (state['component_types'] or {}).get(k) for k in diff} }, this cell has "
                f"{ {k: types.get(k) for k in diff} }"
            )
        restore_large_scale = self._large_scale.prepare_load(state)
        restore_noise_rise = self._noise_rise.prepare_load(state)
        stateful = {kind: c for kind, c in self._components.items() if isinstance(c, Stateful)}
        saved = state["component_states"]
        if not isinstance(saved, dict) or set(saved) != set(stateful):
            raise ValueError(
                f"Cell state['component_states'] must hold the states of {sorted(stateful)}, "
                f"got {sorted(saved) if isinstance(saved, dict) else saved!r}"
            )
        # Components last among the checks: their own load refuses a bad state before changing.
        for kind, component in stateful.items():
            component.load_state_dict(plain_data(saved[kind], f"Cell state['component_states'][{kind!r}]"))
        moved_s = check_scalar("Cell state['moved_s']", state["moved_s"], minimum=0.0) if self._radio.in_time else 0.0
        if self._radio.in_time:
            self._radio.load_state_dict(state)  # checks, then sets the clock
        restore_noise_rise()
        restore_large_scale()
        if self._network is not None:
            self._network.load_state_dict(state["network"])
        self._moved_s = moved_s

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
        link = self.uplink_link_at_bandwidth(ids, self.uplink_bandwidth_hz / k)
        if self._noise_rise.linear == 1.0:
            snr_db = link.snr_db
        else:
            thermal = self._budget.link(ids, link.bandwidth_hz, link.tx_power_w, link.gain_linear,
                                        self._budget.noise_psd_w_per_hz)
            snr_db = thermal.snr_db
        now = self._large_scale.snapshot
        return {
            "client": ids,
            "distance_m": now.distance_m.copy(),
            "pathloss_db": now.pathloss_db.copy(),
            "shadowing_db": now.shadowing_db.copy(),
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
