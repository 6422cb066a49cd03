"""What a channel component must offer: one :class:`typing.Protocol` per kind, plus the optional
capabilities the :class:`~sfl_sim.channel.Cell` uses when a component has them.

Required (one per kind, see :data:`sfl_sim.channel.kinds.CHANNEL_KINDS`)
----------------------------------------------
=============  =====================  =======================================================================
kind           protocol               method
=============  =====================  =======================================================================
placement      :class:`Placement`     ``sample_positions_m(n_clients, rng) -> (n, 2)``
pathloss       :class:`PathLoss`      ``loss_db(distance_m) -> same shape``
shadowing      :class:`Shadowing`     ``sample_db(n_clients, rng) -> (n,)``
fading         :class:`Fading`        ``sample_power_gain(n, rng) -> (n,)``; or a process in time,
                                      :class:`TimeVaryingFading` (``start``, ``power_gain_at``)
rate           :class:`Rate`          ``rate_bps(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz)``
allocation     :class:`Allocator`     ``allocate_hz(total_bandwidth_hz, payload_bits, gain_linear) -> (n,)``
mobility       :class:`Mobility`      ``step(positions_m, dt_s, rng, radius_m=None, min_distance_m=None)``
power_control  :class:`PowerControl`  ``tx_power_w(nominal_tx_power_w, bandwidth_hz, coupling_loss_db)``
interference   :class:`Interference`  ``deploy(scene, rng)``, ``noise_rise_linear(scene, layout, rng)``
harq           :class:`HarqModel`     ``send(payload_bits, rate_bps, sinr_db, rng) -> HarqSend``,
                                      ``slot_block(rate_bps, sinr_db)``
=============  =====================  =======================================================================

Optional capabilities
---------------------
:class:`DiscPlacement` (``radius_m``, ``min_distance_m``), :class:`LosAwarePathLoss`
(``los_probability``, ``loss_db(distance_m, los=...)``), :class:`LosSampler` (``sample_los``),
:class:`LosDecorrelation`
(``los_decorrelation_m``), :class:`ShadowingSigmaSource` (``shadowing_sigma_db(los)``),
:class:`ShadowingDecorrelationSource` (``shadowing_decorrelation_m(los)``),
:class:`RangedPathLoss` (``valid_distance_m``), :class:`SiteShadowing` (``sample_site_db``),
:class:`SiteShadowingUpdate` (``update_site_db``), :class:`SnrRate` (``snr_linear``),
:class:`NoiseFigureRate` (``noise_figure_db``),
:class:`LinkAwareAllocator` (``allocate_hz(..., rate_of=...)``), :class:`ChannelAwarePowerControl`
(``tx_power_w(..., channel_bandwidth_hz=...)``), :class:`HeadroomPowerControl`
(``headroom_rbs(coupling_loss_db)``), :class:`BoundedSpeedMobility`
(``max_speed_m_per_s``), :class:`Resettable` (``reset()``) and :class:`Stateful`
(``state_dict()`` / ``load_state_dict(state)``, any kind).

``isinstance(obj, Protocol)`` only sees that the members exist, not their parameters; the two
capabilities that live in a parameter are detected by
:func:`sfl_sim.channel.link.allocation.accepts_rate_of` (``rate_of``) and
:func:`sfl_sim.channel.link.power_control.takes_channel_bandwidth` (``channel_bandwidth_hz``), and a
scheduler's optional inputs (``rates_bps``, ``headroom_rb``) by
:func:`sfl_sim.channel.link.scheduling.declares`.

:class:`ShadowingSite`, the argument of the site-aware shadowing protocols, and :class:`UplinkScene`,
the argument of the interference protocol, and :class:`HarqSend`, what a HARQ model's ``send``
returns, are defined here with them.  :mod:`sfl_sim.kit.protocols`
checks a component against these protocols.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "Scheduler",
    "LoadFollowingInterference",
    "ShadowingSite",
    "Placement",
    "DiscPlacement",
    "PathLoss",
    "LosAwarePathLoss",
    "LosSampler",
    "LosDecorrelation",
    "ShadowingSigmaSource",
    "ShadowingDecorrelationSource",
    "RangedPathLoss",
    "Shadowing",
    "SiteShadowing",
    "SiteShadowingUpdate",
    "Fading",
    "TimeVaryingFading",
    "Rate",
    "SnrRate",
    "NoiseFigureRate",
    "Allocator",
    "LinkAwareAllocator",
    "Mobility",
    "BoundedSpeedMobility",
    "Resettable",
    "TimedMobility",
    "Stateful",
    "PowerControl",
    "ChannelAwarePowerControl",
    "HeadroomPowerControl",
    "UplinkScene",
    "Interference",
    "HarqSend",
    "HarqModel",
]


@dataclass(frozen=True)
class ShadowingSite:
    """Where the clients are, as a shadowing model sees it.

    Attributes
    ----------
    positions_m : numpy.ndarray, shape (n, 2)
        Client positions in metres (base station at the origin).
    distance_m : numpy.ndarray, shape (n,)
        2-D distances to the base station in metres.
    los : numpy.ndarray of bool, shape (n,), or None
        LOS state per client (None: the path-loss model has no LOS notion).
    model_sigma_db : numpy.ndarray, shape (n,), or None
        The path-loss model's shadowing sigma per client in dB (None: it gives none).
    model_decorrelation_m : numpy.ndarray, shape (n,), or None
        The path-loss model's shadowing decorrelation distance per client in metres.
    """

    positions_m: np.ndarray
    distance_m: np.ndarray
    los: np.ndarray | None = None
    model_sigma_db: np.ndarray | None = None
    model_decorrelation_m: np.ndarray | None = None

    @property
    def n_clients(self) -> int:
        """Number of clients."""
        return int(self.distance_m.shape[0])



# ---------------------------------------------------------------------- placement
@runtime_checkable
class Placement(Protocol):
    """Drops the clients in the cell (server at the origin)."""

    def sample_positions_m(self, n_clients: int, rng: np.random.Generator) -> np.ndarray:
        """Client positions, shape (n_clients, 2), metres."""


@runtime_checkable
class DiscPlacement(Placement, Protocol):
    """A placement inside the annulus ``min_distance_m <= r <= radius_m``; the cell takes both
    radii as its defaults for mobility and the validity-range check."""

    radius_m: float
    min_distance_m: float


# ---------------------------------------------------------------------- path loss
@runtime_checkable
class PathLoss(Protocol):
    """Distance-dependent path loss."""

    def loss_db(self, distance_m: Any) -> np.ndarray:
        """Path loss in dB (positive = attenuation) at 2-D distance(s) in metres; same shape."""


@runtime_checkable
class LosAwarePathLoss(PathLoss, Protocol):
    """A path loss with LOS and NLOS states: the cell draws each client's state from
    ``los_probability`` and calls ``loss_db(distance_m, los=state)`` (bool array, True = LOS)."""

    def los_probability(self, distance_m: Any) -> np.ndarray:
        """Probability of LOS at each distance, in [0, 1]; same shape."""

    def loss_db(self, distance_m: Any, los: Any = None) -> np.ndarray:
        """Path loss in dB for the given LOS state per distance."""


@runtime_checkable
class LosSampler(Protocol):
    """A LOS-aware path loss that draws LOS states itself (the conformance check uses it; the cell
    draws from its own stream instead)."""

    def sample_los(self, distance_m: Any, rng: np.random.Generator) -> np.ndarray:
        """Bool LOS state per distance (True = LOS), same shape."""


@runtime_checkable
class LosDecorrelation(Protocol):
    """The LOS state's correlation distance when clients move, metres (default 50 m)."""

    los_decorrelation_m: float


@runtime_checkable
class ShadowingSigmaSource(Protocol):
    """The path-loss model's own shadowing standard deviation (used by ``sigma_db: model``)."""

    def shadowing_sigma_db(self, los: Any = None) -> np.ndarray:
        """Sigma in dB per client (``los`` is the LOS state, or None), broadcastable to (n,)."""


@runtime_checkable
class ShadowingDecorrelationSource(Protocol):
    """The path-loss model's shadowing decorrelation distance (``decorrelation_m: model``)."""

    def shadowing_decorrelation_m(self, los: Any = None) -> np.ndarray:
        """Decorrelation distance in metres per client, > 0, broadcastable to (n,)."""


@runtime_checkable
class RangedPathLoss(Protocol):
    """A path loss that states the 2-D distances it is valid for: ``(low_m, high_m)``, closed,
    ``high_m`` may be ``inf``.  The cell warns (or refuses) when clients fall outside."""

    valid_distance_m: tuple[float, float]


# ---------------------------------------------------------------------- shadowing
@runtime_checkable
class Shadowing(Protocol):
    """Large-scale shadowing, extra loss in dB per client."""

    def sample_db(self, n_clients: int, rng: np.random.Generator) -> np.ndarray:
        """One value per client, shape (n_clients,), dB."""


@runtime_checkable
class SiteShadowing(Protocol):
    """Shadowing that needs to know where the clients are; the cell prefers it to ``sample_db``.
    ``state`` is what the model carries to the next update (plain arrays/dicts, so that
    :meth:`sfl_sim.channel.Cell.state_dict` can save it)."""

    def sample_site_db(self, site: ShadowingSite, rng: np.random.Generator) -> tuple[np.ndarray, Any]:
        """``(shadowing_db (n,), state)`` for the clients of ``site``."""


@runtime_checkable
class SiteShadowingUpdate(Protocol):
    """Shadowing that follows moving clients (without it, clients keep their values)."""

    def update_site_db(
        self, state: Any, old_site: ShadowingSite, new_site: ShadowingSite, rng: np.random.Generator
    ) -> tuple[np.ndarray, Any]:
        """``(shadowing_db (n,), state)`` after the clients moved from ``old_site`` to ``new_site``."""


# ---------------------------------------------------------------------- fading
@runtime_checkable
class Fading(Protocol):
    """Small-scale fading: linear power gains with mean 1."""

    def sample_power_gain(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n power gains >= 0, shape (n,)."""


@runtime_checkable
class TimeVaryingFading(Protocol):
    """Small-scale fading as a process in time (kind ``fading``): per-client state, gains at absolute times.

    ``start`` is called once per run (and again on a fresh copy for checks) before any query; the
    gains are then a deterministic function of (the generator's seed, client id, t_s): the same for
    any order or grouping of queries, so static, fluid and slot forms and re-timings see the same
    channel (common random numbers). Queries of one client come in non-decreasing time in the
    engine, but a component must give the same answer for a query at t whatever was asked before.

    Optional: an attribute ``speed_m_per_s`` (a float, or None) fixes the speed every client's
    Doppler is computed from (a drop-based evaluation, clients that stay where they were dropped);
    without it, or with None, the radio state gives each client's mobility speed
    (:mod:`sfl_sim.channel.radio_state`).
    """

    time_varying: ClassVar[bool]  # True (how the cell tells it from an i.i.d. Fading)

    def start(self, n_clients: int, doppler_hz: np.ndarray, rng: np.random.Generator) -> None:
        """Draw the per-client state (phases, initial gains, stream keys) for ``n_clients``
        clients whose maximum Doppler frequencies are ``doppler_hz`` (shape (n,), >= 0)."""

    def power_gain_at(self, client_ids: np.ndarray, t_s: np.ndarray) -> np.ndarray:
        """Linear power gains |h|^2 (mean 1) of ``client_ids`` (shape (k,), repeats allowed)
        at absolute simulated times ``t_s`` (shape (k,) or scalar, >= 0). Shape (k,)."""

    def coherence_time_s(self, client_ids: np.ndarray) -> np.ndarray:
        """Each client's coherence time (a stated definition with its source), s; inf for f_D = 0."""

    def state_dict(self) -> dict[str, Any]:
        """The per-client state as plain data (copies)."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict`."""


# ---------------------------------------------------------------------- rate
@runtime_checkable
class Rate(Protocol):
    """Achievable rate of a link; arguments broadcast elementwise."""

    def rate_bps(self, bandwidth_hz: Any, tx_power_w: Any, gain_linear: Any, noise_psd_w_per_hz: Any) -> np.ndarray:
        """Rate in bit/s, >= 0, finite, 0 on 0 Hz."""


@runtime_checkable
class SnrRate(Rate, Protocol):
    """A rate model that reports the SNR it sees (noise figure included); otherwise the cell
    reports ``p g / (b N0)``."""

    def snr_linear(self, bandwidth_hz: Any, tx_power_w: Any, gain_linear: Any, noise_psd_w_per_hz: Any) -> np.ndarray:
        """Linear SNR, broadcast shape."""


@runtime_checkable
class NoiseFigureRate(Protocol):
    """A rate model with a receiver noise figure ``F`` in dB: the "thermal" of the uplink's
    interference over thermal is then ``N0 F`` (0 dB without it)."""

    noise_figure_db: float


# ---------------------------------------------------------------------- allocation
@runtime_checkable
class Allocator(Protocol):
    """Splits a band among the clients that transmit in one phase."""

    def allocate_hz(self, total_bandwidth_hz: float, payload_bits: Any | None, gain_linear: Any) -> np.ndarray:
        """Shares in Hz, shape (n,), >= 0, summing to at most ``total_bandwidth_hz``."""


@runtime_checkable
class LinkAwareAllocator(Protocol):
    """An allocator that needs the whole link: it declares a keyword ``rate_of`` (detected with
    :func:`sfl_sim.channel.link.allocation.accepts_rate_of`, since ``isinstance`` cannot see parameters) and
    the cell passes ``rate_of(bandwidth_hz (n,)) -> rate_bps (n,)``."""

    def allocate_hz(
        self,
        total_bandwidth_hz: float,
        payload_bits: Any | None,
        gain_linear: Any,
        rate_of: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> np.ndarray:
        """Shares in Hz, shape (n,)."""


# ---------------------------------------------------------------------- mobility
@runtime_checkable
class Mobility(Protocol):
    """Moves the clients between rounds, keeping them in ``min_distance_m <= |x| <= radius_m``."""

    def step(
        self, positions_m: Any, dt_s: float, rng: np.random.Generator,
        radius_m: float | None = None, min_distance_m: float | None = None,
    ) -> np.ndarray:
        """Positions ``dt_s`` seconds later, shape (n, 2), metres."""


@runtime_checkable
class BoundedSpeedMobility(Protocol):
    """A mobility model with a top speed (0 means static: the cell then skips the
    validity check of the whole annulus)."""

    max_speed_m_per_s: float


@runtime_checkable
class Resettable(Protocol):
    """A component with per-client memory that ``reset()`` forgets."""

    def reset(self) -> None:
        """Forget the memory."""


@runtime_checkable
class TimedMobility(Protocol):
    """Client positions as a function of absolute simulated time (kind ``mobility``).

    ``start`` once per run; then positions at any t >= 0 are deterministic given the seed (a query
    at t gives the same answer whatever was asked before; internally a model may advance in steps
    and cache, but must be able to answer a t earlier than its cache by recomputing from its start
    state, or refuse with one line if it cannot).
    """

    timed: ClassVar[bool]  # True

    def start(self, positions_m: np.ndarray, rng: np.random.Generator,
              radius_m: float | None = None, min_distance_m: float | None = None) -> np.ndarray:
        """Take the placement's positions (shape (n, 2), m) at t = 0 and return the positions
        actually used at t = 0 (a trace returns the file's, ignoring the placement)."""

    def positions_at(self, t_s: float) -> np.ndarray:
        """All clients' positions at absolute time t_s, shape (n, 2), m."""

    def velocities_at(self, t_s: float) -> np.ndarray:
        """All clients' velocities at t_s, shape (n, 2), m/s."""

    def nominal_speed_m_per_s(self) -> np.ndarray:
        """Each client's speed for its Doppler (shape (n,), m/s): the model's stated speed
        (e.g. the mean of a trace's speeds, or a fixed pedestrian/vehicular speed)."""

    def state_dict(self) -> dict[str, Any]:
        """The model's state as plain data (copies)."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict`."""


# ---------------------------------------------------------------------- power control
@runtime_checkable
class PowerControl(Protocol):
    """Uplink transmit power of each client on its share; arguments broadcast elementwise."""

    def tx_power_w(self, nominal_tx_power_w: Any, bandwidth_hz: Any, coupling_loss_db: Any) -> np.ndarray:
        """Transmit power in W, >= 0, finite, from the configured power (W), the share (Hz) and the
        coupling loss (path loss plus shadowing, dB)."""


@runtime_checkable
class ChannelAwarePowerControl(Protocol):
    """A power control that also wants the channel the shares are cut from (its resource grid,
    :mod:`sfl_sim.channel.link.resource_grid`): the cell passes ``channel_bandwidth_hz``, the
    uplink band, to a ``tx_power_w`` that declares it (:func:`sfl_sim.channel.link.power_control.transmit_power_w`)."""

    def tx_power_w(self, nominal_tx_power_w: Any, bandwidth_hz: Any, coupling_loss_db: Any,
                   channel_bandwidth_hz: float | None = None) -> np.ndarray:
        """As :meth:`PowerControl.tx_power_w`, the shares cut from a channel of ``channel_bandwidth_hz`` Hz."""


@runtime_checkable
class HeadroomPowerControl(Protocol):
    """A power control with a nominal power per resource block, which reports each client's power
    headroom in RBs: the most RBs it can send on before its nominal power reaches ``P_CMAX``
    (TS 38.213 clause 7.7.1, Type-1 PH >= 0).  A dynamic scheduler caps a client's grant by it
    while another client can use the RBs (:mod:`sfl_sim.channel.link.scheduling`); a model
    without the method sets no limit."""

    def headroom_rbs(self, coupling_loss_db: Any) -> np.ndarray:
        """Integers >= 1, the shape of ``coupling_loss_db`` (path loss plus shadowing, dB)."""


# ---------------------------------------------------------------------- interference
@dataclass(frozen=True)
class UplinkScene:
    """What an interference model sees of the cell whose uplink it disturbs.

    Attributes
    ----------
    placement, pathloss, shadowing, power_control : Placement, PathLoss, Shadowing, PowerControl
        The cell's components (neighbouring cells are drawn with the same models).
    n_clients : int
        Clients per cell.
    tx_power_w : numpy.ndarray, shape (n_clients,)
        The clients' configured transmit power in W (``power_control`` turns it into the power sent).
    uplink_bandwidth_hz : float
        The uplink band, Hz (every cell uses the same band: frequency reuse 1).
    noise_floor_w_per_hz : float
        Receiver noise PSD including the rate model's noise figure, ``N0 F``, in W/Hz: the
        "thermal" of interference over thermal.
    radius_m : float
        Cell radius in metres.
    """

    placement: Placement
    pathloss: PathLoss
    shadowing: Shadowing
    power_control: PowerControl
    n_clients: int
    tx_power_w: np.ndarray
    uplink_bandwidth_hz: float
    noise_floor_w_per_hz: float
    radius_m: float


@runtime_checkable
class Interference(Protocol):
    """Uplink interference at the cell's base station, as a noise rise ``(N + I) / N >= 1``."""

    def deploy(self, scene: UplinkScene, rng: np.random.Generator) -> Any:
        """What the model places once (neighbouring clients), as plain data or None."""

    def noise_rise_linear(self, scene: UplinkScene, layout: Any, rng: np.random.Generator) -> float:
        """One draw of the noise rise (linear, >= 1) given :meth:`deploy`'s layout."""


@runtime_checkable
class LoadFollowingInterference(Interference, Protocol):
    """An interference model whose neighbours may follow this cell's own uplink load
    (``first_tier`` with ``rb_load: own_cell``): the cell hands each draw the load its uplink had
    in the round before (:meth:`RoundContext.uplink_load <sfl_sim.engine.RoundContext.uplink_load>`)."""

    @property
    def follows_own_load(self) -> bool:
        """Whether :meth:`noise_rise_linear` takes ``own_load`` (else the cell draws without it)."""

    def noise_rise_linear(self, scene: UplinkScene, layout: Any, rng: np.random.Generator,
                          own_load: float | None = None) -> float:
        """One draw of the noise rise given the layout and the cell's uplink load in [0, 1] (None:
        not measured)."""


# ---------------------------------------------------------------------- HARQ
@dataclass(frozen=True)
class HarqSend:
    """What one payload's HARQ transfer took.

    Attributes
    ----------
    time_s : float
        Simulated seconds on the air plus the HARQ round trips.
    retransmissions : float
        Copies sent beyond the first of each block (expected value in ``expected`` mode).
    delivered : bool
        False when a block still failed after ``max_transmissions`` copies (an outage).
    blocks : int
        Transport blocks of the payload.
    """

    time_s: float
    retransmissions: float
    delivered: bool
    blocks: int


@runtime_checkable
class HarqModel(Protocol):
    """Uplink HARQ: how long a payload takes on a link whose transport blocks may fail, and whether
    it arrives.

    The engine builds one per run with the cell's rate model as the first constructor argument
    (``cls(rate, **params)``: an MCS model picks the CQI, and so the BLER curve, at each SINR) and
    calls :meth:`send` for every uplink payload that is not in outage; the channel report calls
    :meth:`slot_block`.
    """

    def send(self, payload_bits: float, rate_bps: float, sinr_db: float,
             rng: np.random.Generator | None = None) -> HarqSend:
        """Time (s, >= ``payload_bits / rate_bps``), retransmissions (>= 0), delivered (bool) and
        transport blocks (>= 1) of one payload; random draws only from ``rng`` (the ``harq``
        stream)."""

    def slot_block(self, rate_bps: Any, sinr_db: Any) -> tuple[np.ndarray, np.ndarray]:
        """First-transmission error rate and expected transmissions of one slot's transport block
        per link, each shape (k,); NaN where the rate is 0."""


# ---------------------------------------------------------------------- scheduler
@runtime_checkable
class Scheduler(Protocol):
    """A MAC scheduling policy: how many resource blocks each client with data gets now
    (:mod:`sfl_sim.channel.link.scheduling`).  Pure functions of their arguments; the engine owns
    the buffers, the clock and the averages.  Everything the engine's band
    (:mod:`sfl_sim.engine.band`) reads is a member here, checked when the run is built (a
    class lacking one is refused in one line naming it, never run in another form):

    - ``dynamic`` (a class attribute, a bool): False (``static``) means the engine keeps the
      per-round split of ``cell.allocation`` and asks nothing else;
      :func:`sfl_sim.channel.link.scheduling.is_dynamic` is the one place that reads it;
    - ``fidelity``: ``"fluid"`` (asked when a transfer starts or ends) or ``"slot"`` (every slot);
    - ``fluid_equal_shares`` (a bool): True promises that :meth:`fluid_rbs` is ``n_rb / n`` each
      whatever the rates, when no client's ``headroom_rb`` is below ``n_rb / n`` (round robin):
      the engine then reads the rates of ``n`` equal shares from its tables without asking (the
      conformance check holds the policy to it);
    - :meth:`grant_latency_slots`, the slots a new transfer waits before its first grant.

    Optional inputs.  :meth:`fluid_rbs` and :meth:`grant_rbs` may declare either of two
    keyword parameters, and the band passes each only to a method that declares it
    (:func:`sfl_sim.channel.link.scheduling.declares`), so a policy written without them runs
    unchanged:

    - ``rates_bps``, shape (k, n_rb): each client's rate (bit/s) on ``m + 1`` resource blocks at
      its channel now, made concave in ``m`` (the least concave majorant of the cell's rates,
      :func:`sfl_sim.channel.link.scheduling.concave_rates`: what time-sharing two grant sizes
      reaches; the cell's own rates where they are concave, as at a fixed power);
    - ``headroom_rb``, shape (k,): each client's power headroom in RBs, integers in ``[1, n_rb]``
      (the power control's ``headroom_rbs``, :class:`HeadroomPowerControl`); ``n_rb`` for a
      power control without a limit.  A grant beyond it (the client at ``P_CMAX``, its power per
      RB falling) should wait until every client with data holds ``min(need, headroom)``.
    """

    dynamic: ClassVar[bool]
    fidelity: str
    fluid_equal_shares: bool

    def grant_latency_slots(self) -> int:
        """Slots (an integer >= 0) from a transfer's first bit in the buffer to its first grant
        (scheduling request, buffer status report, K2)."""

    def fluid_rbs(self, n_rb: int, rate_per_rb_bps: np.ndarray) -> np.ndarray:
        """Processor-sharing split of ``n_rb`` among the clients given (all with data), shape
        (k,), real numbers >= 0 summing to ``n_rb`` (optional keywords: see the class)."""

    def grant_rbs(self, n_rb: int, need_rb: np.ndarray, rate_per_rb_bps: np.ndarray,
                  average_bps: np.ndarray, turn: int) -> np.ndarray:
        """One slot's grants, integers >= 0, shape (k,): 0 where ``need_rb`` is 0 (an empty
        buffer), at most ``need_rb`` for a dynamic one, summing to at most ``n_rb``; ``turn`` is the
        slot's index (optional keywords: see the class)."""

    def average_bps(self, average_bps: np.ndarray, served_bps: np.ndarray) -> np.ndarray:
        """The averaged throughputs ``grant_rbs`` is given, after a slot that served ``served_bps``
        (each client with data; a policy that keeps no average returns ``average_bps``)."""


# ---------------------------------------------------------------------- any kind
@runtime_checkable
class Stateful(Protocol):
    """A component whose behaviour depends on what happened before (a waypoint, a heading).

    ``state_dict()`` returns only numpy arrays, Python numbers/strings/bools/None and plain
    dicts/lists (so a checkpoint can hold it without pickling objects); ``load_state_dict``
    restores a freshly built component of the same parameters exactly, and refuses a state of the
    wrong keys or shapes with a ``ValueError``.  Stateless components need neither method.
    """

    def state_dict(self) -> dict[str, Any]:
        """The component's state as plain data (copies)."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict`."""
