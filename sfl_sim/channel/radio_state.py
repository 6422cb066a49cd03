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
  (:meth:`~sfl_sim.channel.large_scale.model.LargeScale.coupling_loss_db_at`).  A transfer's end
  is computed at its start, so a transfer that spans a grid update keeps the LOS latent and
  shadowing of its start to its end (its path loss still follows its position): the update's
  draws are taken only when the clock reaches it.

With neither (today's i.i.d. fading and between-round mobility) nothing depends on time:
the links are those of the large-scale state as the cell's ``move`` left it, exactly as before.

A transfer in time
------------------
:meth:`RadioState.transfer_end_s` gives when ``bits`` sent from ``t0`` on a fixed share are
through, integrating the rate over the channel as it changes (numpy, ahead of time: the channel is
a deterministic function of time, so a transfer stays one timeout of the engine).  Three rules:

- **Pieces**, without a time-varying fading (a timed mobility, a network of cells, or both; an
  i.i.d. block gain held over the transfer): the rate is constant between the position grid's
  steps (:attr:`RadioState.position_step_s`) and, on a network, the client's changes of cell or
  link (handovers, interruptions, radio link failures and re-attachments), so each transfer is
  walked piece by piece, each piece's rate that at its middle (the first's the start's), the bits
  summed in order: the exact integral of that rate (``tests/channel/network/
  test_network_fast_paths.py``: within 1.2e-5 s of held steps of 10 us at 120 km/h, where the
  held steps of 10 ms, the rule before, were 5e-4 s off).

- **Gauss-Legendre panels**, for a fading whose gain is smooth in time (``smooth_in_time``: the
  sum-of-sinusoids ``jakes`` and ``rician_jakes``).  The time from ``t0`` is cut into panels of
  ``h`` = :data:`PANEL_FRACTION` of the client's coherence time (at most :data:`MAX_PANEL_S`);
  each panel's bits are ``h (r(u1) + r(u2)) / 2`` with the rate ``r`` at the 2-point
  Gauss-Legendre nodes ``u = 1/2 -+ 1/(2 sqrt 3)`` of the panel (Abramowitz & Stegun 25.4.29),
  summed in order; in the panel of the last bit the end is where the integral of the line
  through the two nodes' rates reaches it (that line's integral over the panel is the panel's
  bits, so the end is continuous).  A transfer through within :data:`FIRST_SPAN_FRACTION` of a
  panel (a tenth of the coherence time, as the held steps' first step) at its start's rate
  ends at ``t0 + bits / rate``.
- **Held steps**, for any other time-varying fading (``gauss_markov``, constant between its
  grid points; a plug-in that says nothing): the rate at
  ``t0 + j dt`` held over ``[t0 + j dt, t0 + (j+1) dt)``, the bits summed in order; ``dt`` is
  :meth:`RadioState.step_s`: a tenth of the client's coherence time, at most :data:`MAX_STEP_S`.

Why these panels (our choice, measured against the true integral: the rate's trapezoid sum at a
four-hundredth of the coherence time; ``jakes`` at 2 GHz and 8.33 m/s, 100 clients per seed with
mean SNRs from -5 to 40 dB, seeds 0 and 1, transfers of L coherence times from random starts; the
error of an end relative to the transfer's duration, max (p99) over the clients, seed 0 / seed 1;
the comparison of ``tests/channel/test_radio_state_quadrature.py`` at 100 clients)::

    Shannon   held steps (T_c / 10)                panels (T_c / 5, 2 nodes)
    L = 1     0.20 (0.057) / 0.047 (0.039)         7.9e-4 (3.9e-4) / 4.5e-3 (1.8e-3)
    L = 3     0.045 (0.032) / 0.064 (0.046)        1.8e-3 (1.6e-3) / 2.4e-3 (1.1e-3)
    L = 10    0.029 (0.011) / 9.6e-3 (9.1e-3)      7.7e-4 (6.9e-4) / 1.3e-3 (1.2e-3)
    L = 45    1.2e-3 (1.1e-3) / 1.2e-3 (1.1e-3)    3.0e-4 (3.0e-4) / 3.3e-4 (2.9e-4)
    L = 100   2.2e-3 (1.2e-3) / 2.2e-3 (5.3e-4)    2.2e-4 (2.0e-4) / 3.1e-4 (2.1e-4)
    MCS table (mcs_table, CQI table 1)
    L = 1     0.21 (0.14) / 0.16 (0.067)           0.12 (0.10) / 0.028 (0.025)
    L = 3     0.042 (0.040) / 0.12 (0.054)         0.023 (0.023) / 0.068 (0.033)
    L = 10    0.43 (0.27) / 0.37 (0.13)            0.077 (0.073) / 0.40 (0.080)
    L = 45    0.045 (0.043) / 0.046 (8.6e-3)       0.012 (9.8e-3) / 0.040 (8.6e-3)
    L = 100   0.067 (0.056) / 0.092 (0.053)        0.039 (0.022) / 0.018 (0.017)

The deep fades of a high-SNR link are narrow dips of
``log2(1 + SNR |h|^2)``: a rate held over a tenth of the coherence time misses or over-counts them
(the errors of up to 20 % on short transfers), while two nodes per fifth of it follow them.
Panels of T_c / 2 (2.5 times fewer evaluations) or T_c / 4 were as good on short Shannon
transfers but worse than the held steps on 100 T_c (2.8e-3 and 9.8e-4 against 5.7e-4, 60
clients, seed 0), and on the MCS table's rate (a step function of the SINR, so of time) a node
further apart than the held steps' step samples its jumps worse (T_c / 4: 0.16 against 0.094 at
3 T_c); at T_c / 5 the panels evaluate the rate as often as the held steps did and are closer on
both rates but for one cell (MCS, 10 T_c, seed 1: max 0.40 against 0.37, its p99 0.080 against
0.13).  A table rate's errors stay large for either rule: near outage its bits come in the
short peaks that clear CQI 1.  The test (``tests/channel/test_radio_state_quadrature.py``, 16
clients, two seeds, 1 to 45 T_c) checks the max and p99 over everything, for both rates.

The bits are summed in order along each transfer's steps (panels), so a transfer's end is the same
number whether it is computed alone or with others (:meth:`RadioState.transfer_ends_s`: many
transfers at once, each from its own start) and however its steps are asked in chunks.  The
rates skip the argument checks of :meth:`RadioState.links` (the same arithmetic:
:meth:`~sfl_sim.channel.link.budget.LinkBudgetModel.link_unchecked`); the coupling losses are
computed for every client per position grid time (blocks of :data:`LOSS_BLOCK` grid
times in one call) and kept; a lone transfer with its start's rate is ended around one compiled
call (:meth:`RadioState.transfer_end_s`); a fading that has
``power_gain_steps`` / ``power_gain_panels``
(:meth:`~sfl_sim.channel.link.fading_time.JakesFading.power_gain_panels`) gives a transfer's
gains at its steps (nodes) at once, equal to its ``power_gain_at`` up to float rounding.  For
the built-in ``jakes`` / ``rician_jakes`` with the Shannon or the MCS table's gap rate (one cell),
the panels are walked by a compiled loop (:mod:`sfl_sim.channel.transfer_compiled`: the same
algorithm, ends within :data:`~sfl_sim.channel.transfer_compiled.NUMPY_AGREEMENT` of the
transfer's duration of this numpy path's; ``SFL_SIM_RADIO_NUMPY=1`` keeps numpy).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from sfl_sim.channel import transfer_compiled
from sfl_sim.channel.large_scale.model import LargeScale
from sfl_sim.channel.link.budget import LinkBudget, LinkBudgetModel
from sfl_sim.channel.link.fading_time import doppler_hz
from sfl_sim.channel.link.noise_rise import UplinkNoiseRise
from sfl_sim.channel.protocols import BoundedSpeedMobility, Fading, TimedMobility, TimeVaryingFading
from sfl_sim.kit.checks import check_scalar

if TYPE_CHECKING:
    from sfl_sim.channel.network.state import NetworkRadio

__all__ = ["RadioState", "CLOCK_ROUNDING", "MAX_STEP_S", "STEP_FRACTION", "DIRECTIONS"]

#: How far (relative) a time asked of :meth:`RadioState.advance_to` may lie behind the state and
#: still be its instant: a few ulps of a clock summed in two orders (our choice).
CLOCK_ROUNDING = 1e-12

#: The step a transfer's rate is re-evaluated at, as a fraction of the client's coherence time
#: (our choice: the gain changes little over a tenth of the time it takes to decorrelate).
STEP_FRACTION = 0.1
#: The longest step, s (our choice: with no Doppler the channel changes only by the client's
#: motion, which moves a client at 30 m/s by 0.3 m in 10 ms).
MAX_STEP_S = 0.01
#: Gauss-Legendre nodes per panel of a smooth fading's transfer (see "A transfer in time").
QUADRATURE_NODES = 2
#: A smooth fading's panel as a fraction of the client's coherence time (our choice, measured:
#: module docstring).
PANEL_FRACTION = 0.2
#: The longest panel, s (our choice: the nodes no further apart than :data:`MAX_STEP_S`).
MAX_PANEL_S = QUADRATURE_NODES * MAX_STEP_S
#: A transfer on a smooth fading through within this fraction of a panel at its start's rate
#: ends at ``t0 + bits / rate`` (our choice: the rate held over at most T_c / 32; the panel's
#: line through its nodes does not see the start's rate).
FIRST_SPAN_FRACTION = 0.4

def _finite_links(rates: list[float], snrs_db: list[float], shares_hz: list[float]) -> bool:
    """Whether links' rates are finite and >= 0 and their SNRs (dB) what :meth:`RadioState.links`
    takes (not nan; infinite only on a 0 Hz share), in Python floats: a start asks for one or a
    few links, where a numpy reduction's set-up would cost more than the check."""
    return all(0.0 <= r < math.inf and not math.isnan(q) and (b <= 0.0 or not math.isinf(q))
               for r, q, b in zip(rates, snrs_db, shares_hz, strict=True))


def _only_time(t_s: Any) -> float:
    """The one time of a scalar or one-element ``t_s``, a Python float."""
    return float(t_s[0]) if isinstance(t_s, np.ndarray) and t_s.ndim else float(t_s)


def _gauss_legendre(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """The nodes (fractions of a panel, in (0, 1)) and weights (summing to 1) of the Gauss-Legendre
    rule of ``nodes`` points on a panel (Abramowitz & Stegun 25.4.29; numpy's ``leggauss`` on
    [-1, 1], mapped to [0, 1])."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    return (x + 1.0) / 2.0, w / 2.0


_GL_NODES, _GL_WEIGHTS = _gauss_legendre(QUADRATURE_NODES)
#: The longest large-scale step, s (our choice).
MAX_LARGE_SCALE_STEP_S = 1.0
#: The link directions :meth:`RadioState.links` knows.
DIRECTIONS = ("uplink", "downlink", "broadcast")
#: Position grid times whose coupling losses are computed together when one is first asked
#: (:meth:`RadioState._loss_at_grid`; our choice: the position steps of one large-scale step).
LOSS_BLOCK = 10
#: How many numbers the kept positions and, apart, the kept coupling losses of the position grid
#: times may hold (our choice: 32 MB each).  A long transfer at speed walks hundreds of grid
#: times (FedAvg's uploads at 120 km/h, the default scenario at 100 clients per round: 5 to 13 s,
#: ``clients.csv``'s ``uplink_air_s``, 330 to 890 grid times of 15 ms), and the transfers that start while
#: the large-scale state holds walk the same ones: with 64 positions kept (256 losses) every
#: transfer computed every client's positions and losses at each of them again.  At 1000 clients
#: about 2000 grid times are kept (30 s at 120 km/h), never fewer than 64 (256).
KEPT_NUMBERS = 1 << 22
#: The most position grid times one call of the compiled integration is handed (our choice: a
#: block's worth; the chunk's panels may reach far further when a transfer starts in a fade, and
#: the grid times it never walks would be computed for nothing, then forgotten when the
#: large-scale state moves on; a transfer that walks past its table carries on with the next).
TABLE_GRID_TIMES = LOSS_BLOCK
#: The most steps a transfer is integrated over before the state refuses (a link that never
#: delivers is an outage, which the engine judges at the transfer's start).
_MAX_STEPS = 10_000_000
#: The most steps of a group of transfers evaluated at once (our choice: bounds the memory of a
#: sum-of-sinusoids fading's evaluation, about its sinusoids x 8 bytes per step).
_MAX_ELEMENTS = 1 << 17
#: The most pieces a transfer without a time-varying fading is walked over one by one before the
#: held steps take over (our choice: a rate that stays 0 is refused by them).
_MAX_PIECES = 100_000
#: The network's grid indices are floor(t / step + this) (:mod:`sfl_sim.channel.network.state`).
_GRID_EPS = 1e-9


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
        # grid times kept (KEPT_NUMBERS): positions (n, 2) each; coupling losses and gains (n) each
        self._kept_positions = max(64, KEPT_NUMBERS // (2 * max(n, 1)))
        self._kept_losses = max(256, KEPT_NUMBERS // (2 * max(n, 1)))
        self._loss_owner: Any = None  # the large-scale snapshot the kept coupling losses are of
        self._loss_at: dict[int, tuple[np.ndarray, np.ndarray]] = {}
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
        # the compiled integration's terms per direction (_compiled_terms)
        self._terms_kept: dict[str, tuple[Any, Any, Any]] = {}
        # a fading that evaluates a transfer's steps at once (JakesFading.power_gain_steps)
        self._steps_of = getattr(self._tv_fading, "power_gain_steps", None)
        self._step_s = np.minimum(STEP_FRACTION * coherence, MAX_STEP_S)
        self._step_s = np.where(self._step_s > 0, self._step_s, MAX_STEP_S)
        # a smooth fading: a transfer's bits by Gauss-Legendre panels (module docstring)
        self._smooth = self._tv_fading is not None and bool(getattr(fading, "smooth_in_time", False))
        self._panels_of = getattr(self._tv_fading, "power_gain_panels", None) if self._smooth else None
        panel = np.minimum(PANEL_FRACTION * coherence, MAX_PANEL_S)
        self._panel_s = np.where(panel > 0, panel, MAX_PANEL_S)
        # a transfer through within this at its start's rate ends at t0 + bits / that rate
        self._first_span_s = self._panel_s * FIRST_SPAN_FRACTION if self._smooth else self._step_s
        #: The network of cells (:mod:`sfl_sim.channel.network.state`), or None: one cell.
        self.network: NetworkRadio | None = None

    def attach_network(self, network: NetworkRadio) -> None:
        """Serve the clients from a network of cells: the serving cell's coupling loss, no rate
        while a client has no link, the uplink interference of the other cells' transmissions."""
        self.network = network

    # ------------------------------------------------------------------ the arrays
    @property
    def in_time(self) -> bool:
        """True when the radio depends on time (time-varying fading or timed mobility)."""
        return self.timed or self.time_varying or self.network is not None

    @property
    def transfer_rule(self) -> str:
        """How a transfer's bits are integrated over time here, in words (module docstring, "A
        transfer in time"); "" when nothing depends on time."""
        if self._smooth:
            return (f"Gauss-Legendre panels of min({PANEL_FRACTION:g} x coherence, {MAX_PANEL_S * 1e3:g} ms), "
                    f"{QUADRATURE_NODES} nodes each")
        if self.time_varying:
            return f"held steps of min({STEP_FRACTION:g} x coherence, {MAX_STEP_S * 1e3:g} ms)"
        if self.in_time:
            return "pieces of constant rate (the position grid's steps and the changes of cell or link)"
        return ""

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

    def step_of(self, client: int) -> float:
        """:meth:`step_s` of one client, s."""
        return float(self._step_s[client])

    def first_span_of(self, client: int) -> float:
        """The span within which a transfer of ``client`` through at its start's rate ends at
        ``t0 + bits / rate``, s (:meth:`transfer_ends_s`): a sub-panel with a smooth fading, else
        a step."""
        return float(self._first_span_s[client])

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
        if type(t_s) is float and t_s == self._t_s:  # the engine asks at every transfer: often no change
            return
        t = check_scalar("t_s", t_s, minimum=0.0)
        if t < self._t_s:
            # the same instant summed another way (the engine's clock and the cell's sum of round
            # durations differ in the last bits): already there
            if self._t_s - t <= CLOCK_ROUNDING * max(1.0, self._t_s):
                return
            raise ValueError(f"t_s: got {t!r}; allowed: >= {self._t_s!r} (the radio state only moves forward)")
        self._t_s = t
        if self.network is not None:
            self.network.advance_to(t)
        mobility = self._timed_mobility
        if mobility is None:
            return
        step = self.large_scale_step_s
        # every grid time up to t, each one update (each draws from the LOS and shadowing streams)
        target = int(math.floor(t / step))
        while self._grid_index < target:
            self._grid_index += 1
            self.large_scale.relocate(mobility.positions_at(self._grid_index * step))

    def holds_until(self, t_s: Any) -> np.ndarray:
        """Whether the large-scale state stays as it is until each of ``t_s`` (no grid update of a
        timed mobility before then): what :meth:`links` gives for those times now is what it will
        give then."""
        t = np.asarray(t_s, dtype=float)
        if self._timed_mobility is None:
            return np.ones(t.shape, dtype=bool)
        return np.floor(t / self.large_scale_step_s) <= self._grid_index

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
        return self._large_scale_at(np.asarray(client_ids, dtype=int), t_s)[0]

    def _large_scale_at(self, ids: np.ndarray, t_s: Any) -> tuple[np.ndarray, np.ndarray]:
        """Coupling loss (dB) and gain (linear) of ``ids`` at ``t_s`` (see :meth:`coupling_loss_db`)."""
        if self.network is not None:
            return self.network.losses(ids, t_s)
        mobility = self._timed_mobility
        now = self.large_scale.snapshot
        if mobility is None:
            return now.coupling_loss_db[ids], now.gain_linear[ids]
        # positions on a grid of position_step_s; every client's coupling loss and gain at a grid
        # time computed at once and kept (_loss_at_grid: a transfer spans a few grid times, the
        # cohort's transfers share them)
        step = self.position_step_s
        if ids.size == 1:  # a transfer's start: its grid time in Python floats (the same floor of t / step)
            loss, gain = self._loss_at_grid(mobility, math.floor(_only_time(t_s) / step))
            return loss[ids], gain[ids]
        index = np.floor(np.broadcast_to(np.asarray(t_s, dtype=float), ids.shape) / step).astype(np.int64)
        first, last = (int(index.min()), int(index.max())) if index.size else (0, -1)
        if first == last:
            loss, gain = self._loss_at_grid(mobility, first)
            return loss[ids], gain[ids]
        if last - first < 64:  # a transfer's steps: a few consecutive grid times, one gather
            kept = [self._loss_at_grid(mobility, i) for i in range(first, last + 1)]
            at = (index - first) * self.n_clients + ids
            return np.stack([k[0] for k in kept]).reshape(-1)[at], np.stack([k[1] for k in kept]).reshape(-1)[at]
        coupling_db, gain_linear = np.empty(ids.size), np.empty(ids.size)
        for i in np.unique(index).tolist():
            on = index == i
            loss, gain = self._loss_at_grid(mobility, i)
            coupling_db[on], gain_linear[on] = loss[ids[on]], gain[ids[on]]
        return coupling_db, gain_linear

    def _loss_at_grid(self, mobility: TimedMobility, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Every client's coupling loss (dB) and gain at ``index * position_step_s`` (kept).

        A grid time not kept yet is computed with the others of its block of
        :data:`LOSS_BLOCK` grid times (``index // LOSS_BLOCK``) not kept yet, in one call of the
        large-scale model (their positions stacked): the time moves forward, a round asks them in
        turn, and the call's fixed cost is most of a grid time's.  The same numbers as one grid
        time at a time (the losses are element-wise in the positions:
        ``tests/channel/test_radio_state.py``).  Kept while the large-scale state holds (its LOS
        latent and shadowing), forgotten when it moves on."""
        now = self.large_scale.snapshot
        if self._loss_owner is not now:
            self._loss_owner, self._loss_at = now, {}
        cache = self._loss_at
        hit = cache.get(index)
        if hit is not None:
            return hit
        while len(cache) + LOSS_BLOCK > self._kept_losses:
            cache.pop(next(iter(cache)))
        start = index - index % LOSS_BLOCK
        block = [i for i in range(start, start + LOSS_BLOCK) if i not in cache]
        n = self.n_clients
        positions = np.concatenate([self._positions_at_grid(mobility, i) for i in block])
        loss = self.large_scale.coupling_loss_db_at(np.tile(np.arange(n), len(block)), positions)
        gain = np.power(10.0, -loss / 10.0)
        for j, i in enumerate(block):
            cache[i] = (loss[j * n:(j + 1) * n], gain[j * n:(j + 1) * n])
        return cache[index]

    def _positions_at_grid(self, mobility: TimedMobility, index: int) -> np.ndarray:
        """All clients' positions at ``index * position_step_s`` (kept for the next asks)."""
        cache = self._positions
        if index not in cache:
            if len(cache) >= self._kept_positions:
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
        coupling_db, gain = self._large_scale_at(ids, t_s)
        if self.network is not None:
            return self._network_links(ids, t_s, bandwidth_hz, gain_fading, direction, payload_bits, coupling_db, gain)
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

    def uplink_of(self, client: int, t_s: float, bandwidth_hz: float, fading_gain: float) -> tuple[float, float, float]:
        """One client's uplink at ``t_s`` on a share of ``bandwidth_hz`` with the block gain
        ``fading_gain``: the rate (bit/s; a network: on the serving cell, connected or not), SNR (dB)
        and transmit power (W) of :meth:`links`, the same numbers, without its input checks (the
        engine asks at every transfer's start; the share and gain were checked when drawn).  A
        component's rate or SNR that is not finite and >= 0 is named by :meth:`links`' checks."""
        ids = np.array([client])
        coupling_db, gain = self._large_scale_at(ids, t_s)
        share = np.array([bandwidth_hz], dtype=float)
        rate, snr_db, power = self.budget.link_unchecked("uplink", share, gain * fading_gain, coupling_db,
                                                         self.tx_power_w[ids], self._noise_rise_of(ids, t_s, "uplink"),
                                                         with_snr=True)
        assert snr_db is not None and power is not None
        r, snr = float(rate[0]), float(snr_db[0])
        if not (0.0 <= r < math.inf) or math.isnan(snr) or (bandwidth_hz > 0 and math.isinf(snr)):
            self.links(ids, t_s, share, fading=np.array([fading_gain]))  # raises, naming the component
        return r, snr, float(power[0])

    def transfer_end_s(self, client: int, bits: float, t0_s: float, bandwidth_hz: float,
                       direction: str = "uplink", fading_gain: float | None = None,
                       start_rate_bps: float | None = None) -> float:
        """When ``bits`` sent by (or to) ``client`` from ``t0_s`` on a share of ``bandwidth_hz`` are through.

        The rate is integrated over the channel as it changes by the rule the channel calls for
        (the module docstring, "A transfer in time": pieces without a time-varying fading,
        Gauss-Legendre panels on a smooth one, held steps otherwise), the bits summed in order from
        the start.  Pure.  Without a time-varying fading the gain is ``fading_gain`` (the coherence
        block's draw; None: 1).  ``start_rate_bps``, the rate at ``t0_s`` when the caller has it
        (the same number; a network's on the serving cell, connected or not), saves its evaluation.
        :meth:`transfer_ends_s` for one client.

        Raises
        ------
        ValueError
            When the bits are not through after a great many steps (the rate stays 0).
        """
        if start_rate_bps is not None and self._smooth and bandwidth_hz > 0:
            terms = self._compiled_terms(direction)
            if terms is not None:  # one transfer on the compiled path: no array set-up per transfer
                return self._lone_end_s(int(client), float(bits), float(t0_s), float(bandwidth_hz),
                                        float(start_rate_bps), direction, terms)
        return float(self.transfer_ends_s([client], bits, t0_s, bandwidth_hz, direction, fading_gain,
                                          None if start_rate_bps is None else [start_rate_bps])[0])

    def _lone_end_s(self, client: int, bits: float, t0: float, share: float, first: float, direction: str,
                    terms: tuple[tuple[Any, ...], tuple[Any, ...]]) -> float:
        """:meth:`transfer_ends_s` of one transfer on the compiled path (a smooth fading, no
        network, a share > 0, its start's rate ``first``), in Python floats where that path has
        arrays of one: the same operations on the same numbers (the first span's end, the chunk
        sizes, the grid times' table, :func:`~sfl_sim.channel.transfer_compiled.integrate`), so
        the same end as with others (``tests/channel/test_transfer_compiled.py``), without the
        batch's numpy set-up (a few hundred microseconds a call; a lone transfer is the common
        case at speed, where most start alone)."""
        if first > 0 and bits <= first * float(self._first_span_s[client]):
            return t0 + bits / first
        fading, (code, noise_factor, cap, keep, eff) = terms
        panel = float(self._panel_s[client])
        # transfer_ends_s's first chunk for one transfer (np.clip(...).astype(int64): truncation)
        count = int(min(max(2.5 * bits / (first * panel) + 2 if first > 0 else 64.0, 64.0), 4096.0))
        mobility = self._timed_mobility
        step = self.position_step_s if mobility is not None else math.inf
        ids, t0s, panels = np.array([client], dtype=np.int64), np.array([t0]), np.array([panel])
        want = np.array([bits])
        done, next_panel = np.zeros(1), np.zeros(1, dtype=np.int64)
        ends, status = np.empty(1), np.zeros(1, dtype=np.int64)
        tx_power = self.tx_power_w[client]
        while True:
            now = self.large_scale.snapshot
            if mobility is None:
                index0, width = 0, 1
                coupling_db, gain = now.coupling_loss_db[client:client + 1], now.gain_linear[client:client + 1]
            else:
                j = int(next_panel[0])
                index0 = math.floor((t0 + panel * j) / step)
                last = min(math.floor((t0 + panel * (j + count)) / step), index0 + TABLE_GRID_TIMES - 1)
                width = last - index0 + 1
                kept = [self._loss_at_grid(mobility, i) for i in range(index0, last + 1)]
                coupling_db = np.array([k[0][client] for k in kept])
                gain = np.array([k[1][client] for k in kept])
            occupied, power, noise, _ = self.budget.rate_terms_unchecked(
                direction, np.full(width, share), (width,), coupling_db, np.full(width, tx_power),
                self.noise_rise.linear)
            occupied = np.asarray(occupied, dtype=float).reshape(width)[:1]
            power = np.ascontiguousarray(np.broadcast_to(np.asarray(power, dtype=float), (width,)))
            denominator = occupied * noise * noise_factor  # as _integrate_compiled's
            transfer_compiled.integrate(*fading, ids, t0s, panels, want, _GL_NODES, _GL_WEIGHTS, step,
                                        np.array([index0], dtype=np.int64), np.array([width], dtype=np.int64),
                                        power.reshape(1, width), gain.reshape(1, width), occupied, denominator,
                                        code, cap, eff, keep, done, next_panel, _MAX_STEPS, ends, status)
            if status[0] == transfer_compiled.DONE:
                return float(ends[0])
            if status[0] == transfer_compiled.STUCK:
                raise ValueError(f"client {client}: {bits:g} bits not through after {_MAX_STEPS} panels of "
                                 f"{panel:g} s (its rate stays 0)")
            count = min(2 * count, 1 << 16)

    def transfer_ends_s(self, client_ids: Any, bits: Any, t0_s: Any, bandwidth_hz: Any,
                        direction: str = "uplink", fading_gain: Any = None,
                        start_rate_bps: Any = None) -> np.ndarray:
        """:meth:`transfer_end_s` of many transfers at once (one client each, each from its start).

        Each transfer's end is the same number alone or with others: the steps' (nodes') rates
        are element-wise, and each transfer's bits are summed in order along its own steps
        (panels).

        Parameters
        ----------
        client_ids : array_like of int, shape (k,)
        bits, bandwidth_hz : float or array_like, shape (k,)
            Bits (> 0) and share (Hz; ignored for ``broadcast``) of each transfer.
        t0_s : float or array_like, shape (k,)
            Their starts, s.
        direction : {"uplink", "downlink", "broadcast"}
        fading_gain : float or array_like, shape (k,), optional
            Without a time-varying fading: each transfer's block gain (None: 1).
        start_rate_bps : array_like, shape (k,), optional
            Each rate at ``t0_s`` when the caller has it (a network: the serving cell's, connected
            or not, as :meth:`links` and :meth:`uplink_of` give it).

        Returns
        -------
        numpy.ndarray, shape (k,)
            The ends, s.
        """
        ids = np.asarray(client_ids, dtype=int).reshape(-1)
        k = ids.size
        want = np.broadcast_to(np.asarray(bits, dtype=float), (k,))
        share = np.broadcast_to(np.asarray(bandwidth_hz, dtype=float), (k,)).astype(float)
        t0 = np.broadcast_to(np.asarray(t0_s, dtype=float), (k,)).astype(float)
        gains = None if self.time_varying or fading_gain is None else \
            np.broadcast_to(np.asarray(fading_gain, dtype=float), (k,))
        if start_rate_bps is None:
            first = self._rates(ids, t0.copy(), share, gains, direction)
        else:
            first = np.asarray(start_rate_bps, dtype=float).reshape(k)
            if self.network is not None:  # the serving cell's rate: 0 while the client has no link
                first = first * self.network.connected(ids, t0)
        ends = np.empty(k)
        if not self.time_varying and (self.network is not None or self.timed) and direction != "broadcast":
            # no time-varying fading: the rate is piecewise constant in time (module docstring, "A
            # transfer in time"), each transfer walked piece by piece, exactly
            for r in range(k):
                ends[r] = self._piecewise_end(int(ids[r]), float(want[r]), float(t0[r]), float(share[r]),
                                              None if gains is None else float(gains[r]), float(first[r]), direction)
            return ends
        # through within the first span (a step; a sub-panel with a smooth fading): t0 + bits / (the start's rate)
        quick = (first > 0) & (want <= first * self._first_span_s[ids])
        if self.network is not None and not (self.timed or self.time_varying):
            # a network whose channel does not change in time: a link's rate is constant until its
            # client changes cell or loses the link, so a transfer without such an event in it is
            # through at t0 + bits / rate (the steps would sum the same rate)
            with np.errstate(divide="ignore"):
                through = t0 + np.where(first > 0, want / first, np.inf)
            quick |= (first > 0) & ~self.network.changes_within(ids, t0, through)
        ends[quick] = t0[quick] + want[quick] / first[quick]
        rest = np.flatnonzero(~quick)
        if rest.size == 0:
            return ends
        # a first chunk of steps (panels) about the length the start's rate needs (each transfer its
        # own), then doubling; the chunks change nothing but the work (each transfer's bits are
        # summed in order along its steps, the sum carried over a chunk's edge)
        dt = self._panel_s[ids] if self._smooth else self._step_s[ids]
        # (one transfer alone: a generous first chunk, a second pass costs more than the evaluations)
        spare, low = (2.5, 64) if self._smooth and k == 1 else (1.25, 16)
        with np.errstate(divide="ignore"):
            sized = np.where(first[rest] > 0, spare * want[rest] / (first[rest] * dt[rest]) + 2, 64.0)
        count = np.clip(sized, low, 4096).astype(np.int64)
        # groups of transfers of at most _MAX_ELEMENTS steps each evaluated at once (the memory)
        group = np.cumsum(count) // _MAX_ELEMENTS
        if not self._smooth:  # the held steps: one start per call
            group = group * (k + 1) + np.unique(t0[rest], return_inverse=True)[1].reshape(-1)
        compiled = self._compiled_terms(direction) if self._smooth else None
        if compiled is not None and np.all(share[rest] > 0):
            ends[rest] = self._integrate_compiled(ids[rest], want[rest], t0[rest], share[rest], dt[rest], direction,
                                                  count, compiled)
            return ends
        for g in np.unique(group).tolist():
            on = group == g
            rows = rest[on]
            if self._smooth:
                ends[rows] = self._integrate_panels(ids[rows], want[rows], t0[rows], share[rows], dt[rows],
                                                    direction, count[on])
            else:
                ends[rows] = self._integrate(ids[rows], want[rows], float(t0[rows[0]]), share[rows],
                                             None if gains is None else gains[rows], dt[rows], direction, count[on])
        return ends

    def _piecewise_end(self, client: int, bits: float, t0: float, share: float, gain: float | None,
                       first: float, direction: str) -> float:
        """When ``bits`` of one transfer from ``t0`` are through, without a time-varying fading:
        the rate is constant between the position grid's steps (a timed mobility) and the
        client's changes of cell or link (a network: handovers, interruptions, radio link
        failures), so the transfer is walked piece by piece, each piece's rate that at its middle
        (the first's: ``first``, the rate at ``t0``), the bits summed in order and the end placed
        in the piece of the last bit.  Exact for the piecewise-constant rate (no held steps)."""
        step = self.position_step_s if self.timed else math.inf
        network = self.network
        i = math.floor(t0 / step + _GRID_EPS) if self.timed else 0  # the grid step t0 is in
        window = 1.0  # how far ahead a network's changes are looked up at once, s (our choice)
        horizon = t0 if network is not None else math.inf  # the changes are known up to here
        changes: list[float] = []  # the client's changes of cell or link after the piece's start
        start, done, rate = t0, 0.0, first  # the piece's start, the bits before it, its rate
        for _ in range(_MAX_PIECES):
            grid = (i + 1) * step
            while changes and changes[0] <= start:
                changes.pop(0)
            # look further while nothing ends the piece before the horizon and the bits are not through by it
            while (network is not None and not changes and horizon < grid
                   and not (rate > 0 and done + rate * (horizon - start) >= bits)):
                changes = network.change_times(client, horizon, horizon + window)
                horizon += window
                if rate <= 0 and not changes:  # no link and none ahead: the held steps decide or refuse
                    break
            end = min(grid, changes[0] if changes else math.inf, horizon)
            if rate > 0 and done + rate * (end - start) >= bits:
                return start + (bits - done) / rate
            if math.isinf(end) or (rate <= 0 and not changes and end >= horizon):
                break
            done += rate * (end - start)
            start = end
            if start >= grid:
                i += 1
            while changes and changes[0] <= start:
                changes.pop(0)
            if network is not None and horizon <= start:
                changes = network.change_times(client, horizon, start + window)
                horizon = start + window
            following = min((i + 1) * step, changes[0] if changes else math.inf, horizon)
            rate = self._rate_at(client, 0.5 * (start + following), share, gain, direction)
        # not through after that many pieces (a rate that stays 0): the held steps decide or refuse
        dt = self._step_s[[client]]
        return float(self._integrate(np.array([client]), np.array([bits]), t0, np.array([share]),
                                     None if gain is None else np.array([gain]), dt, direction,
                                     np.array([64]))[0])

    def _rate_at(self, client: int, t_s: float, share: float, gain: float | None, direction: str) -> float:
        """One link's rate at ``t_s`` (0 while a network's client has no link), bit/s."""
        if direction == "uplink":
            rate = self.uplink_of(client, t_s, share, 1.0 if gain is None else gain)[0]
            if self.network is not None and not self.network.connected_one(client, t_s):
                return 0.0
            return rate
        return float(self._rates(np.array([client]), np.array([t_s]), np.array([share]),
                                 None if gain is None else np.array([gain]), direction)[0])

    def broadcast_end_s(self, client_ids: Any, bits: float, t0_s: float, fading_gain: Any = None,
                        cap_bps: float = math.inf) -> float:
        """When one broadcast of ``bits`` from ``t0_s`` on the whole downlink band is through to
        ``client_ids``: the rate at each step is the slowest of the receivers' that have a usable
        rate then (our choice, the round-start rule's, :class:`~sfl_sim.engine.radio.Downlink`:
        a receiver in a deep fade does not stall the others), at most ``cap_bps`` (receivers whose
        rate a trace fixes); held over the step, the bits summed in order.  The step is the
        shortest of the receivers' :meth:`step_s`.  Pure.

        Raises
        ------
        ValueError
            When the bits are not through after a great many steps (no receiver has a rate).
        """
        ids = np.asarray(client_ids, dtype=int).reshape(-1)
        k = ids.size
        gains = None if self.time_varying or fading_gain is None else \
            np.broadcast_to(np.asarray(fading_gain, dtype=float), (k,))
        dt = float(self._step_s[ids].min()) if k else MAX_STEP_S
        share = np.zeros(k)
        done, j0, width = 0.0, 0, 16
        while j0 < _MAX_STEPS:
            times = t0_s + dt * np.arange(j0, j0 + width)
            rate = self._rates(np.repeat(ids, width), np.tile(times, k), np.repeat(share, width),
                               None if gains is None else np.repeat(gains, width), "broadcast").reshape(k, width)
            slowest = np.where(rate > 0, rate, np.inf).min(axis=0) if k else np.full(width, np.inf)
            slowest = np.minimum(np.where(np.isinf(slowest), 0.0 if k else cap_bps, slowest), cap_bps)
            cum = np.cumsum(np.concatenate(([done], slowest * dt)))[1:]
            j = int(np.searchsorted(cum, bits))  # the first step whose end is past the last bit
            if j < width:
                before = cum[j - 1] if j > 0 else done
                return float(times[j] + (bits - before) / slowest[j])
            done, j0, width = float(cum[-1]), j0 + width, min(2 * width, 4096)
        raise ValueError(f"broadcast to clients {ids.tolist()}: {bits:g} bits not through after {_MAX_STEPS} steps "
                         f"of {dt:g} s (no receiver has a rate)")

    def _integrate(self, ids: np.ndarray, bits: np.ndarray, t0_s: float, share: np.ndarray, gains: np.ndarray | None,
                   dt: np.ndarray, direction: str, count: np.ndarray) -> np.ndarray:
        """The ends of the transfers of :meth:`transfer_ends_s` not through in their first step,
        ``count`` steps of each evaluated first."""
        m = ids.size
        ends, done = np.empty(m), np.zeros(m)
        first_step = np.zeros(m, dtype=np.int64)  # each transfer's next step to evaluate
        count = count.copy()
        left = np.arange(m)  # transfers not through yet
        while True:
            n = count[left]
            if int(first_step[left].max()) >= _MAX_STEPS:
                worst = int(left[0])
                raise ValueError(f"client {int(ids[worst])}: {float(bits[worst]):g} bits not through after "
                                 f"{_MAX_STEPS} steps of {float(dt[worst]):g} s (its rate stays 0)")
            # the steps of every transfer left, flat (row r: steps first_step[r] .. + n[r] - 1)
            row = np.repeat(np.arange(left.size), n)
            local = np.arange(row.size) - np.repeat(np.cumsum(n) - n, n)
            owner = left[row]
            times_flat = t0_s + dt[owner] * (first_step[owner] + local)
            steps = None if self._steps_of is None else self._steps_of(ids[left], t0_s, dt[left], first_step[left], n)
            rate_flat = self._rates(ids[owner], times_flat, share[owner],
                                    None if gains is None else gains[owner], direction, steps)
            width = int(n.max())
            times, rate = np.zeros((left.size, width)), np.zeros((left.size, width))
            times[row, local], rate[row, local] = times_flat, rate_flat
            # the bits through by each step's end (a row's steps past its count add 0: it stays)
            cum = np.cumsum(np.concatenate((done[left, None], rate * dt[left, None]), axis=1), axis=1)[:, 1:]
            through = cum >= bits[left, None]
            hit = through[:, -1]
            if np.any(hit):
                rows = np.flatnonzero(hit)
                j = through[rows].argmax(axis=1)  # the first step whose end is past the last bit
                before = np.where(j > 0, cum[rows, np.maximum(j - 1, 0)], done[left[rows]])
                ends[left[rows]] = times[rows, j] + (bits[left[rows]] - before) / rate[rows, j]
            done[left] = cum[:, -1]
            first_step[left] += n
            count[left] = np.minimum(2 * n, max(16, _MAX_ELEMENTS // left.size))
            left = left[~hit]
            if left.size == 0:
                return ends

    def _integrate_panels(self, ids: np.ndarray, bits: np.ndarray, t0: np.ndarray, share: np.ndarray,
                          panel: np.ndarray, direction: str, count: np.ndarray) -> np.ndarray:
        """The ends of transfers on a smooth fading (module docstring, "A transfer in time"):
        the bits of each panel by Gauss-Legendre, summed in order; the end placed in the panel of
        the last bit on the line through its nodes' rates (:meth:`_within_panel`).  ``count``
        panels of each evaluated first.  Every number is element-wise or summed along its own
        transfer, so an end is the same whatever transfers are computed with it."""
        m = ids.size
        done = np.zeros(m)
        first_panel = np.zeros(m, dtype=np.int64)  # each transfer's next panel to evaluate
        count = count.copy()
        left = np.arange(m)  # transfers not through yet
        last = np.zeros(m, dtype=np.int64)  # the panel of the last bit
        before, bits_in = np.zeros(m), np.zeros(m)  # the bits before it, and its bits
        last_rates = np.zeros((m, _GL_NODES.size))  # its nodes' rates
        while left.size:
            n = count[left]
            if int(first_panel[left].max()) >= _MAX_STEPS:
                worst = int(left[0])
                raise ValueError(f"client {int(ids[worst])}: {float(bits[worst]):g} bits not through after "
                                 f"{_MAX_STEPS} panels of {float(panel[worst]):g} s (its rate stays 0)")
            row = np.repeat(np.arange(left.size), n)
            local = np.arange(row.size) - np.repeat(np.cumsum(n) - n, n)
            got, node_rates = self._panel_bits(ids[left], t0[left], panel[left], first_panel[left], n, share[left],
                                               direction)
            width = int(n.max())
            per = np.zeros((left.size, width))
            per[row, local] = got
            cum = np.cumsum(np.concatenate((done[left, None], per), axis=1), axis=1)[:, 1:]
            through = cum >= bits[left, None]
            hit = through[:, -1]
            if np.any(hit):
                rows = np.flatnonzero(hit)
                j = through[rows].argmax(axis=1)
                who = left[rows]
                before[who] = np.where(j > 0, cum[rows, np.maximum(j - 1, 0)], done[who])
                bits_in[who] = per[rows, j]
                last[who] = first_panel[who] + j
                flat = np.cumsum(n)[rows] - n[rows] + j  # the panel's row in the flat evaluation
                last_rates[who] = node_rates[flat]
            done[left] = cum[:, -1]
            first_panel[left] += n
            count[left] = np.minimum(2 * n, max(16, _MAX_ELEMENTS // (left.size * _GL_NODES.size)))
            left = left[~hit]
        return t0 + panel * last.astype(float) + panel * self._within_panel(bits - before, bits_in, last_rates, panel)

    def _compiled_terms(self, direction: str) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
        """The fading's and the rate model's terms for the compiled integration
        (:mod:`sfl_sim.channel.transfer_compiled`), or None where the numpy path runs: a fading or
        rate model it does not know, a network of cells, or the compiled path switched off."""
        if self.network is not None or direction not in ("uplink", "downlink") or not transfer_compiled.enabled():
            return None
        model = self.budget.rate if direction == "uplink" else self.budget.downlink_rate
        # kept per direction while the fading's sinusoids (set anew when it is started or its state
        # loaded) and the rate model are the same objects: a lone transfer asks at every start
        source = getattr(self._tv_fading, "_omega_c", None)
        kept = self._terms_kept.get(direction)
        if kept is not None and kept[0] is source and kept[1] is model:
            return kept[2]
        fading = transfer_compiled.fading_terms(self._tv_fading)
        rate = transfer_compiled.rate_terms(model)
        terms = None if fading is None or rate is None else (fading, rate)
        self._terms_kept[direction] = (source, model, terms)
        return terms

    def _integrate_compiled(self, ids: np.ndarray, bits: np.ndarray, t0: np.ndarray, share: np.ndarray,
                            panel: np.ndarray, direction: str, count: np.ndarray,
                            terms: tuple[tuple[Any, ...], tuple[Any, ...]]) -> np.ndarray:
        """:meth:`_integrate_panels` compiled (:mod:`sfl_sim.channel.transfer_compiled`): the
        powers and large-scale gains of the position grid times the next ``count`` panels of each
        transfer reach (at most :data:`TABLE_GRID_TIMES` of them) are computed here (as
        :meth:`_rates` does), the panels walked there; a transfer that walks past its table carries
        on with the next table (twice the panels)."""
        fading, (code, noise_factor, cap, keep, eff) = terms
        m = ids.size
        mobility = self._timed_mobility
        step = self.position_step_s if mobility is not None else math.inf
        done, ends = np.zeros(m), np.empty(m)
        next_panel = np.zeros(m, dtype=np.int64)
        status = np.zeros(m, dtype=np.int64)
        count = count.astype(np.int64)
        left = np.arange(m)
        rise = self.noise_rise.linear
        while left.size:
            on_ids, on_t0, on_panel = ids[left], t0[left], panel[left]
            if mobility is None:  # one large-scale state: a table of one grid time
                index0, span = np.zeros(left.size, dtype=np.int64), np.ones(left.size, dtype=np.int64)
                cols = index0[:, None]
            else:
                index0 = np.floor((on_t0 + on_panel * next_panel[left]) / step).astype(np.int64)
                reach = np.floor((on_t0 + on_panel * (next_panel[left] + count[left])) / step).astype(np.int64)
                last = np.minimum(reach, index0 + (TABLE_GRID_TIMES - 1))
                span = last - index0 + 1
                cols = np.minimum(index0[:, None] + np.arange(int(span.max()))[None, :], last[:, None])
            width = cols.shape[1]
            if mobility is None:
                now = self.large_scale.snapshot
                coupling_db, gain = now.coupling_loss_db[on_ids][:, None], now.gain_linear[on_ids][:, None]
            else:
                times, where = np.unique(cols, return_inverse=True)
                kept = [self._loss_at_grid(mobility, i) for i in times.tolist()]
                # only these transfers' rows of each grid time (a grid time holds every client's)
                at = (where.reshape(cols.shape), np.arange(left.size)[:, None])
                coupling_db = np.stack([k[0][on_ids] for k in kept])[at]
                gain = np.stack([k[1][on_ids] for k in kept])[at]
            flat_ids = np.repeat(on_ids, width)
            occupied, power, noise, _ = self.budget.rate_terms_unchecked(
                direction, np.repeat(share[left], width), (flat_ids.size,), coupling_db.reshape(-1),
                self.tx_power_w[flat_ids], rise)
            occupied = np.asarray(occupied, dtype=float).reshape(left.size, width)[:, 0]
            power = np.ascontiguousarray(np.broadcast_to(np.asarray(power, dtype=float), (flat_ids.size,)))
            denominator = occupied * noise * noise_factor  # ShannonRate's safe_b * n0 * F
            on_ends, on_status = np.empty(left.size), np.empty(left.size, dtype=np.int64)
            on_done, on_next = done[left], next_panel[left]
            transfer_compiled.integrate(*fading, on_ids.astype(np.int64), on_t0, on_panel, bits[left], _GL_NODES,
                                        _GL_WEIGHTS, step, index0, span, power.reshape(left.size, width), gain,
                                        occupied, denominator, code, cap, eff, keep, on_done, on_next, _MAX_STEPS,
                                        on_ends, on_status)
            done[left], next_panel[left], ends[left], status[left] = on_done, on_next, on_ends, on_status
            stuck = on_status == transfer_compiled.STUCK
            if np.any(stuck):
                worst = int(left[np.flatnonzero(stuck)[0]])
                raise ValueError(f"client {int(ids[worst])}: {float(bits[worst]):g} bits not through after "
                                 f"{_MAX_STEPS} panels of {float(panel[worst]):g} s (its rate stays 0)")
            more = on_status == transfer_compiled.MORE
            left = left[more]
            count[left] = np.minimum(2 * count[left], 1 << 16)
        return ends

    def _panel_bits(self, ids: np.ndarray, t0: np.ndarray, panel: np.ndarray, first: np.ndarray, count: np.ndarray,
                    share: np.ndarray, direction: str) -> tuple[np.ndarray, np.ndarray]:
        """The Gauss-Legendre bits of panels ``first[r] .. + count[r] - 1`` of width ``panel[r]``
        from ``t0[r]`` of each transfer, rows concatenated, shape (sum(count),), and the rates at
        their nodes, shape (sum(count), QUADRATURE_NODES)."""
        nodes, weights = _GL_NODES, _GL_WEIGHTS
        p = nodes.size
        row = np.repeat(np.arange(ids.size), count)
        j = (np.repeat(first - np.cumsum(count) + count, count) + np.arange(row.size)).astype(float)
        times = t0[row][:, None] + panel[row][:, None] * (j[:, None] + nodes[None, :])
        gains = None if self._panels_of is None else self._panels_of(ids, t0, panel, first, count, nodes).reshape(-1)
        rate = self._rates(np.repeat(ids[row], p), times.reshape(-1), np.repeat(share[row], p), None, direction,
                           gains).reshape(-1, p)
        acc = rate[:, 0] * weights[0]
        for i in range(1, p):  # the nodes summed in one order, element-wise
            acc = acc + rate[:, i] * weights[i]
        return acc * panel[row], rate

    @staticmethod
    def _within_panel(remaining: np.ndarray, panel_bits: np.ndarray, rates: np.ndarray,
                      panel: np.ndarray) -> np.ndarray:
        """Where in its panel (a fraction ``u`` in [0, 1]) the last of ``remaining`` bits is
        through, on the rate ``max(0, a + b u)`` through the two nodes' rates (a line in time, cut
        at 0: a rate that rises from or falls to 0 inside the panel, as a table rate's does),
        scaled so that its integral over the panel is the panel's bits (with
        :data:`QUADRATURE_NODES` = 2 and a line that stays >= 0, scale 1: the end is continuous
        across panels)."""
        u1, u2 = float(_GL_NODES[0]), float(_GL_NODES[-1])
        r1, r2 = rates[:, 0], rates[:, -1]
        b = (r2 - r1) / (u2 - u1)
        a = r1 - b * u1
        with np.errstate(divide="ignore", invalid="ignore"):
            zero = -a / b  # where the line crosses 0 (outside [0, 1] when it stays > 0)
            rising, falling = (a < 0) & (b > 0), (a + b < 0) & (b < 0)
            # the line's positive part's integral over [0, 1]
            whole = np.where(rising, b * (1 - zero) ** 2 / 2,
                             np.where(falling, a * zero + b * zero * zero / 2, a + b / 2))
            x = remaining / panel * (whole / (panel_bits / panel))  # in the line's units
            root = np.sqrt(a * a + 2.0 * b * x)
            u = np.where(rising, zero + np.sqrt(2.0 * x / b), 2.0 * x / (a + root))  # no cancellation
            mean = remaining / panel_bits
        ok = (whole > 0) & np.isfinite(u) & (u >= 0) & (u <= 1)
        return np.where(ok, u, np.clip(mean, 0.0, 1.0))

    def start_links(self, client_ids: np.ndarray, t_s: np.ndarray, bandwidth_hz: np.ndarray,
                    direction: str = "uplink") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The time-varying fading's gains and the links of ``client_ids`` at ``t_s`` on these shares:
        :meth:`fading_at` and :meth:`links` (``fading`` those gains), the same numbers, without
        their argument checks (ids, times and shares checked by the caller's round).

        Returns
        -------
        tuple of numpy.ndarray, shape (k,)
            Fading gains, rates (bit/s), SNRs (dB) and transmit powers (W).

        Raises
        ------
        ValueError
            Without a time-varying fading, or when a component returns rates that are not finite
            and >= 0 or SNRs that :meth:`links` refuses (nan; infinite on a share > 0 Hz).
        """
        fading = self._tv_fading
        if fading is None:
            raise ValueError(f"fading {self.fading!r} is not time-varying: it has no gains at a time")
        fast = getattr(fading, "power_gain_unchecked", None)
        gains = fast(client_ids, t_s) if fast is not None else self.fading_at(client_ids, t_s)
        coupling_db, gain = self._large_scale_at(client_ids, t_s)
        rate, snr_db, power = self.budget.link_unchecked(direction, bandwidth_hz, gain * gains, coupling_db,
                                                         self.tx_power_w[client_ids],
                                                         self._noise_rise_of(client_ids, t_s, direction),
                                                         with_snr=True)
        assert snr_db is not None and power is not None
        if not _finite_links(rate.tolist(), snr_db.tolist(), bandwidth_hz.tolist()):  # a plug-in's, named once
            self.links(client_ids, t_s, bandwidth_hz, fading=gains, direction=direction)
        return gains, rate, snr_db, power

    def _rates(self, ids: np.ndarray, times: np.ndarray, share: np.ndarray, gains: np.ndarray | None,
               direction: str, fading_steps: np.ndarray | None = None) -> np.ndarray:
        """The rates of :meth:`links` (``fading="at_time"`` with a time-varying fading, else
        ``gains``), bit/s, without its checks: its inputs were checked once.  ``fading_steps``: the
        time-varying fading's gains at ``times`` when the caller has them."""
        fading: np.ndarray | None
        if fading_steps is not None:
            fading = fading_steps
        elif self._tv_fading is not None:
            fast = getattr(self._tv_fading, "power_gain_unchecked", None)
            fading = fast(ids, times) if fast is not None else self.fading_at(ids, times)
        else:
            fading = gains
        coupling_db, gain = self._large_scale_at(ids, times)
        if fading is not None:
            gain = gain * fading
        rate = self.budget.link_unchecked(direction, share, gain, coupling_db, self.tx_power_w[ids],
                                          self._noise_rise_of(ids, times, direction))[0]
        if self.network is not None:  # no rate while a client has no link
            rate = rate * self.network.connected(ids, times)
        return rate

    # ------------------------------------------------------------------ a network of cells
    def _noise_rise_of(self, ids: np.ndarray, t_s: Any, direction: str) -> Any:
        """The uplink noise rise of these links: the cell's draw, or with a network each serving
        cell's from the transmissions in flight (at the earliest of ``t_s``)."""
        if self.network is None or direction != "uplink":
            return self.noise_rise.linear
        t = np.asarray(t_s, dtype=float)
        return self.network.noise_rise(ids, float(t.min()) if t.size else self._t_s)

    def _network_links(self, ids: np.ndarray, t_s: Any, bandwidth_hz: Any, gain_fading: Any, direction: str,
                       payload_bits: Any, coupling_db: np.ndarray, gain: np.ndarray) -> LinkBudget:
        """:meth:`links` with a network: the allocator splits each cell's band among the clients
        that cell serves (a client without a link: the cell it last had)."""
        network = self.network
        assert network is not None
        budget = self.budget
        rise = self._noise_rise_of(ids, t_s, direction)
        if direction == "broadcast":
            link = budget.broadcast(ids, gain, gain_fading)
        elif bandwidth_hz is not None:
            if direction == "downlink":
                link = budget.downlink_at_bandwidth(ids, bandwidth_hz, gain, gain_fading)
            else:
                link = budget.uplink_at_bandwidth(ids, bandwidth_hz, gain, coupling_db, self.tx_power_w[ids], rise,
                                                  gain_fading)
        else:
            cells = network.attached_cell(ids, np.broadcast_to(np.asarray(t_s, dtype=float), ids.shape))
            payload = None if payload_bits is None else np.broadcast_to(np.asarray(payload_bits, dtype=float),
                                                                        ids.shape)
            fading_all = None if gain_fading is None else np.broadcast_to(np.asarray(gain_fading, dtype=float),
                                                                          ids.shape)
            parts: list[tuple[np.ndarray, LinkBudget]] = []
            for cell in np.unique(cells).tolist():
                on = np.flatnonzero(cells == cell)
                bits = None if payload is None else payload[on]
                fad = None if fading_all is None else fading_all[on]
                if direction == "downlink":
                    part = budget.downlink(ids[on], gain[on], bits, fad)
                else:
                    part = budget.uplink(ids[on], gain[on], coupling_db[on], self.tx_power_w[ids[on]],
                                         rise[on] if isinstance(rise, np.ndarray) else rise, bits, fad)
                parts.append((on, part))
            fields = {}
            for name in ("bandwidth_hz", "tx_power_w", "gain_linear", "snr_db", "rate_bps"):
                column = np.empty(ids.shape)
                for on, part in parts:
                    column[on] = getattr(part, name)
                fields[name] = column
            link = LinkBudget(client_ids=ids, **fields)
        # the rate on the serving cell, connected or not: a transfer that starts in an interruption
        # waits for the link (its integration, _rates, has rate 0 until then), it is not in outage
        return link

    @property
    def n_cells(self) -> int:
        """The number of cells (1 without a network)."""
        return 1 if self.network is None else self.network.n_cells

    def serving_cell(self, client_ids: Any, t_s: Any) -> np.ndarray:
        """Each client's serving cell at ``t_s``; ``NO_CELL`` (-1) while it has no link; 0 without a network."""
        ids = np.asarray(client_ids, dtype=int)
        if self.network is None:
            return np.zeros(ids.shape, dtype=int)
        return self.network.serving_cell(ids, t_s).reshape(ids.shape)

    def connected(self, client_ids: Any, t_s: Any) -> np.ndarray:
        """Whether each client has a link at ``t_s`` (always without a network)."""
        ids = np.asarray(client_ids, dtype=int)
        if self.network is None:
            return np.ones(ids.shape, dtype=bool)
        return self.network.connected(ids, t_s)

    def handovers_between(self, t0_s: float, t1_s: float) -> tuple[Any, ...]:
        """The handover events with ``t0_s <= time_s < t1_s``, in time order; () without a network."""
        return () if self.network is None else self.network.handovers_between(float(t0_s), float(t1_s))

    def handover_events(self) -> tuple[Any, ...]:
        """Every handover event evaluated so far, in time order; () without a network."""
        return () if self.network is None else self.network.handover_events()

    def set_transmitting(self, client: int, on: bool) -> None:
        """The engine says an uplink transfer of ``client`` starts (``on``) or ends; no-op without a network."""
        if self.network is not None:
            self.network.set_transmitting(client, on)

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
