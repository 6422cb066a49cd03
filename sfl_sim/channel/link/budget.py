"""The per-round link budget: bandwidth, power, gain, SINR and rate of each link of a phase.

Given the large-scale gains of the clients of a phase (and their small-scale fading), the uplink
power control, the noise rise of the interference, the rate model and the band allocator,
:class:`LinkBudgetModel` gives a :class:`LinkBudget` per phase: uplink, downlink and broadcast.
Its inputs are plain arrays (one entry per client of the phase); it keeps no state between calls.

Uplink
    The allocator splits the uplink band among the clients of the phase (or the caller gives the
    shares); the power control gives each client's power on its share with its coupling loss
    (path loss plus shadowing); ``fixed`` keeps the configured ``tx_power_w``.  The interference
    is a noise rise ``IoT = (N0 F + I) / (N0 F)`` (:mod:`sfl_sim.channel.link.interference`); the
    rate model gets the noise PSD ``N0 x IoT``, so every uplink SNR it computes is the SINR
    ``p g / (b (N0 F + I))``.
Downlink
    The server has one power amplifier: ``server_tx_power_w`` is spread over the downlink band at
    a flat spectral density, so a client's sub-band ``b_k`` carries ``P b_k / B``.  No noise rise
    (no neighbouring base station interferes).  The downlink has its own rate model
    (``downlink_rate``: the UE's receiver, the PDSCH's overhead and curves); without one it uses
    the uplink's.
Broadcast
    One server transmission on the whole downlink band that every receiver must decode: the
    minimum of their full-band rates.

Occupied bandwidth
    With the cell's numerology, a share ``b`` of a channel of bandwidth ``B`` that TS 38.101-1
    Table 5.3.2-1 lists is worth its part of the channel's resource blocks, ``b N_RB 12 SCS / B``
    Hz (:func:`~sfl_sim.channel.link.resource_grid.occupied_fraction`; TS 38.306 clause 4.1.2
    counts ``N_PRB x 12`` subcarriers): the rate model sees that bandwidth (its noise and its rate),
    the guard bands carry nothing.  The shares (:attr:`LinkBudget.bandwidth_hz`) and the RBs the
    power control counts stay those of ``B``.  Without a numerology, or for a bandwidth the table
    lacks, the whole share counts (our choice).

Every rate must be finite and >= 0, and every SNR finite where the share is > 0: a ``ValueError``
names the component otherwise.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from sfl_sim.channel.checks import check_finite
from sfl_sim.channel.limits import (
    DOWNLINK_BANDWIDTH_HZ,
    NOISE_PSD_DBM_PER_HZ,
    SERVER_TX_POWER_W,
    UPLINK_BANDWIDTH_HZ,
)
from sfl_sim.channel.link.allocation import accepts_rate_of
from sfl_sim.channel.link.power_control import transmit_power_w
from sfl_sim.channel.link.resource_grid import occupied_fraction
from sfl_sim.channel.link.scheduling import check_numerology
from sfl_sim.channel.protocols import (
    Allocator,
    LinkAwareAllocator,
    NoiseFigureRate,
    PowerControl,
    Rate,
    SnrRate,
)
from sfl_sim.channel.units import dbm_to_w, linear_to_db, linear_to_db_unchecked
from sfl_sim.kit.checks import check_array

__all__ = ["LinkBudget", "LinkBudgetModel"]


@dataclass(frozen=True)
class LinkBudget:
    """The links of a group of clients in one phase; every array has shape (k,).

    Attributes
    ----------
    client_ids : numpy.ndarray of int
        The clients, in the order asked for.
    bandwidth_hz : numpy.ndarray
        Bandwidth of each link in Hz: its share of the channel, guard bands included (the rate is
        on the share's resource blocks, see the module docstring).
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


class LinkBudgetModel:
    """The link budget of a cell: its rate model, allocator and power control with its bands,
    powers and noise (see the module docstring).

    Parameters
    ----------
    rate : Rate
        Gives each link's rate (and its SNR, when it is a :class:`~sfl_sim.channel.protocols.SnrRate`).
    allocator : Allocator
        Splits a band among the clients of a phase (given ``rate_of`` when it declares it).
    power_control : PowerControl
        Gives each client's uplink power.
    noise_psd_dbm_per_hz : float
        Receiver noise power spectral density in dBm/Hz (e.g. -174), finite.
    uplink_bandwidth_hz : float
        Uplink band shared by the clients of one phase, in Hz, > 0.
    downlink_bandwidth_hz : float, optional
        Downlink band in Hz, > 0; needed only by the downlink methods.
    server_tx_power_w : float, optional
        Server transmit power in W, > 0; needed only by the downlink methods.
    downlink_rate : Rate, optional
        The downlink's rate model (the clients' receivers); default ``rate``.
    numerology : int, optional
        The cell's numerology ``mu``: the rate is on the resource blocks of a share, not on the
        whole share (see the module docstring); None: on the whole share.

    Raises
    ------
    ValueError
        For a number outside its physical range (:mod:`sfl_sim.channel.limits`).
    """

    def __init__(
        self,
        rate: Rate,
        allocator: Allocator,
        power_control: PowerControl,
        *,
        noise_psd_dbm_per_hz: float,
        uplink_bandwidth_hz: float,
        downlink_bandwidth_hz: float | None = None,
        server_tx_power_w: float | None = None,
        downlink_rate: Rate | None = None,
        numerology: int | None = None,
    ) -> None:
        self._noise_psd_dbm_per_hz = NOISE_PSD_DBM_PER_HZ.check("noise_psd_dbm_per_hz", noise_psd_dbm_per_hz)
        self._uplink_bandwidth_hz = UPLINK_BANDWIDTH_HZ.check("uplink_bandwidth_hz", uplink_bandwidth_hz)
        self._downlink_bandwidth_hz = (
            None if downlink_bandwidth_hz is None
            else DOWNLINK_BANDWIDTH_HZ.check("downlink_bandwidth_hz", downlink_bandwidth_hz)
        )
        self._server_tx_power_w = (
            None if server_tx_power_w is None else SERVER_TX_POWER_W.check("server_tx_power_w", server_tx_power_w)
        )
        self.rate, self.allocator, self.power_control = rate, allocator, power_control
        self.numerology = None if numerology is None else check_numerology(numerology)
        self._occupied = {"uplink": occupied_fraction(self._uplink_bandwidth_hz, numerology),
                          "downlink": (1.0 if self._downlink_bandwidth_hz is None
                                       else occupied_fraction(self._downlink_bandwidth_hz, numerology))}
        self.downlink_rate = rate if downlink_rate is None else downlink_rate
        self._noise_psd_w_per_hz = float(dbm_to_w(self._noise_psd_dbm_per_hz))
        # each own rate model's SNR method (None: it reports none), looked up once: a runtime
        # protocol's isinstance costs ~25 us, and the scheduler's slot form asks every slot; the
        # bound methods keep their models alive, so an id here never names another object
        self._snr_linear_of: dict[int, Callable[..., Any] | None] = {
            id(m): (m.snr_linear if isinstance(m, SnrRate) else None) for m in (self.rate, self.downlink_rate)}
        # the hot path's rate and SNR methods of each own model (link_unchecked)
        self._unchecked_of = {id(m): (_unchecked(m, "rate_bps"), _unchecked(m, "snr_linear")
                                      if self._snr_linear_of[id(m)] is not None else None)
                              for m in (self.rate, self.downlink_rate)}
        # isinstance cannot see a parameter: the allocator is link-aware when it declares rate_of.
        self._link_aware_allocator = cast(LinkAwareAllocator, allocator) if accepts_rate_of(allocator) else None
        noise_figure_db = float(rate.noise_figure_db) if isinstance(rate, NoiseFigureRate) else 0.0
        # The "thermal" of a noise rise is the receiver's noise, noise figure included.
        self._noise_floor_w_per_hz = self._noise_psd_w_per_hz * 10.0 ** (noise_figure_db / 10)

    # ------------------------------------------------------------------ configuration
    @property
    def noise_psd_dbm_per_hz(self) -> float:
        """Noise power spectral density, dBm/Hz."""
        return self._noise_psd_dbm_per_hz

    @property
    def noise_psd_w_per_hz(self) -> float:
        """Noise power spectral density ``N0``, W/Hz."""
        return self._noise_psd_w_per_hz

    @property
    def noise_floor_w_per_hz(self) -> float:
        """Receiver noise PSD with the rate model's noise figure, ``N0 F``, W/Hz."""
        return self._noise_floor_w_per_hz

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

    def occupied_fraction(self, direction: str = "uplink") -> float:
        """The part of a share its resource blocks occupy, ``N_RB 12 SCS / B`` (1.0 without a
        numerology or a table entry), of ``direction`` ``uplink`` or ``downlink``."""
        return self._occupied[direction]

    def uplink_noise_psd_w_per_hz(self, noise_rise_linear: Any) -> Any:
        """The noise PSD the uplink rate sees: ``N0`` times the noise rise of the interference."""
        if type(noise_rise_linear) is float and noise_rise_linear == 1.0:
            return self._noise_psd_w_per_hz
        return self._noise_psd_w_per_hz * noise_rise_linear  # a float, or one per link (a network's cells)

    # ------------------------------------------------------------------ uplink
    def uplink_tx_power_w(self, nominal_tx_power_w: np.ndarray, bandwidth_hz: np.ndarray,
                          coupling_loss_db: np.ndarray) -> np.ndarray:
        """The power control's uplink power on these shares, checked.

        Parameters
        ----------
        nominal_tx_power_w, bandwidth_hz, coupling_loss_db : numpy.ndarray, shape (k,)
            Each client's configured power (W), share (Hz) and coupling loss (dB).

        Returns
        -------
        numpy.ndarray, shape (k,)
            Transmit power in W, finite and >= 0.
        """
        power = transmit_power_w(self.power_control, nominal_tx_power_w, bandwidth_hz, coupling_loss_db,
                                 self._uplink_bandwidth_hz)
        if power.shape != np.shape(nominal_tx_power_w):
            raise ValueError(f"power_control {self.power_control!r} returned shape {power.shape}, "
                             f"expected {np.shape(nominal_tx_power_w)}")
        check_finite(power, f"power_control {self.power_control!r}", "tx_power_w", minimum=0.0)
        return power

    def uplink(self, client_ids: np.ndarray, gain_linear: np.ndarray, coupling_loss_db: np.ndarray,
               nominal_tx_power_w: np.ndarray, noise_rise_linear: Any, payload_bits: Any = None,
               fading_gain: Any = None) -> LinkBudget:
        """The uplink of a group sending in the same phase: the allocator splits the uplink band.

        Parameters
        ----------
        client_ids : numpy.ndarray of int, shape (k,)
            The clients (carried into the budget).
        gain_linear, coupling_loss_db, nominal_tx_power_w : numpy.ndarray, shape (k,)
            Their large-scale gains, coupling losses (dB) and configured powers (W).
        noise_rise_linear : float
            Interference over thermal, >= 1.
        payload_bits : float or array_like, shape (k,), optional
            Bits each client will send, >= 0; passed to the allocator (a scalar is broadcast).
        fading_gain : float or array_like, shape (k,), optional
            Small-scale power gains for this block; default 1.

        Returns
        -------
        LinkBudget
        """
        def power_on(bandwidth_hz: np.ndarray) -> np.ndarray:
            return self.uplink_tx_power_w(nominal_tx_power_w, bandwidth_hz, coupling_loss_db)

        return self._shared(client_ids, payload_bits, self._uplink_bandwidth_hz, power_on, gain_linear, fading_gain,
                            self.uplink_noise_psd_w_per_hz(noise_rise_linear))

    def uplink_at_bandwidth(self, client_ids: np.ndarray, bandwidth_hz: Any, gain_linear: np.ndarray,
                            coupling_loss_db: np.ndarray, nominal_tx_power_w: np.ndarray, noise_rise_linear: float,
                            fading_gain: Any = None) -> LinkBudget:
        """The uplink on given shares, bypassing the allocator (arguments as :meth:`uplink`;
        ``bandwidth_hz`` is a scalar or one share per client, Hz, >= 0)."""
        band = check_array("bandwidth_hz", bandwidth_hz, minimum=0.0)
        shares = np.broadcast_to(band, client_ids.shape).astype(float)
        gains = gain_linear * _fading(fading_gain, client_ids.shape)
        power = self.uplink_tx_power_w(nominal_tx_power_w, shares, coupling_loss_db)
        return self.link(client_ids, shares, power, gains, self.uplink_noise_psd_w_per_hz(noise_rise_linear))

    # ------------------------------------------------------------------ downlink
    def downlink(self, client_ids: np.ndarray, gain_linear: np.ndarray, payload_bits: Any = None,
                 fading_gain: Any = None) -> LinkBudget:
        """The downlink of a group receiving separate data in one phase (arguments as :meth:`uplink`).

        Raises
        ------
        ValueError
            If the downlink is not configured.
        """
        band, power = self._downlink("downlink_rates_bps")
        power_w = np.broadcast_to(np.asarray(power, dtype=float), client_ids.shape)

        def power_on(bandwidth_hz: np.ndarray) -> np.ndarray:
            # One transmitter's power spread flat over the band: a sub-band b_k carries P b_k / B.
            return power_w * bandwidth_hz / band

        return self._shared(client_ids, payload_bits, band, power_on, gain_linear, fading_gain,
                            self._noise_psd_w_per_hz, self.downlink_rate, direction="downlink")

    def downlink_at_bandwidth(self, client_ids: np.ndarray, bandwidth_hz: Any, gain_linear: np.ndarray,
                              fading_gain: Any = None) -> LinkBudget:
        """The downlink on given shares, bypassing the allocator (a share ``b_k`` carries
        ``P b_k / B``; ``bandwidth_hz`` a scalar or one share per client, Hz, >= 0).

        Raises
        ------
        ValueError
            If the downlink is not configured.
        """
        band, power = self._downlink("downlink_at_bandwidth")
        shares = np.broadcast_to(check_array("bandwidth_hz", bandwidth_hz, minimum=0.0), client_ids.shape).astype(float)
        gains = gain_linear * _fading(fading_gain, client_ids.shape)
        return self.link(client_ids, shares, power * shares / band, gains, self._noise_psd_w_per_hz,
                         self.downlink_rate, direction="downlink")

    def broadcast(self, client_ids: np.ndarray, gain_linear: np.ndarray, fading_gain: Any = None) -> LinkBudget:
        """Each receiver's link of one server transmission on the whole downlink band (arguments as
        :meth:`uplink`): every client sees the whole band and power.

        Raises
        ------
        ValueError
            If the downlink is not configured.
        """
        band, power = self._downlink("broadcast")
        gains = gain_linear * _fading(fading_gain, client_ids.shape)
        return self.link(client_ids, np.full(client_ids.shape, band), power, gains, self._noise_psd_w_per_hz,
                         self.downlink_rate, direction="downlink")

    def broadcast_rate_bps(self, client_ids: np.ndarray, gain_linear: np.ndarray, fading_gain: Any = None) -> float:
        """Rate of one server transmission on the whole downlink band that all these clients decode.

        Raises
        ------
        ValueError
            If ``client_ids`` is empty or the downlink is not configured.
        """
        if client_ids.size == 0:
            raise ValueError("client_ids must name at least one receiver for a broadcast, got []")
        band, power = self._downlink("broadcast_rate_bps")
        gains = gain_linear * _fading(fading_gain, client_ids.shape)
        rate_model = self.downlink_rate
        rates = np.asarray(rate_model.rate_bps(band * self._occupied["downlink"], power, gains,
                                               self._noise_psd_w_per_hz), dtype=float)
        check_finite(rates, f"rate {rate_model!r}", "broadcast rate_bps", minimum=0.0)
        return float(np.min(rates))

    # ------------------------------------------------------------------ the budget
    def link(self, client_ids: np.ndarray, bandwidth_hz: np.ndarray, tx_power_w: Any, gain_linear: np.ndarray,
             noise_psd_w_per_hz: float, rate_model: Rate | None = None, *, direction: str = "uplink") -> LinkBudget:
        """The budget of given links: the rate model's rate and SNR, checked.

        Parameters
        ----------
        client_ids : numpy.ndarray of int, shape (k,)
            The clients.
        bandwidth_hz : numpy.ndarray, shape (k,)
            Each link's bandwidth, Hz.
        tx_power_w : float or numpy.ndarray, shape (k,)
            Transmit power, W.
        gain_linear : numpy.ndarray, shape (k,)
            Channel power gain (fading included).
        noise_psd_w_per_hz : float
            Noise PSD the rate model sees (``N0``, or ``N0`` times the noise rise), W/Hz.
        rate_model : Rate, optional
            The link's rate model; default the uplink's (:attr:`rate`).
        direction : {"uplink", "downlink"}
            Whose channel the shares are cut from: the rate model sees each share's occupied part
            (:meth:`occupied_fraction`).

        Returns
        -------
        LinkBudget
            With the SNR ``p g / (b N0)`` (or the rate model's own, noise figure included) in dB.
        """
        model = self.rate if rate_model is None else rate_model
        power = np.broadcast_to(np.asarray(tx_power_w, dtype=float), client_ids.shape)
        fraction = self._occupied[direction]
        # the rate model sees the share's resource blocks: its noise and its rate (TS 38.306 4.1.2)
        occupied_hz = bandwidth_hz if fraction == 1.0 else np.asarray(bandwidth_hz, dtype=float) * fraction
        rate = np.asarray(model.rate_bps(occupied_hz, power, gain_linear, noise_psd_w_per_hz), dtype=float)
        check_finite(rate, f"rate {model!r}", "rate_bps", minimum=0.0)
        if id(model) in self._snr_linear_of:
            snr_linear = self._snr_linear_of[id(model)]
        else:  # a model passed in that is not the budget's own
            snr_linear = model.snr_linear if isinstance(model, SnrRate) else None
        snr = _snr(snr_linear, occupied_hz, power, gain_linear, noise_psd_w_per_hz)
        # An SNR is infinite only on a 0 Hz share (no noise); anywhere else it must be finite.
        check_finite(snr, f"rate {model!r}" if snr_linear is not None else "the link budget",
                     "SNR (linear)", where=np.broadcast_to(bandwidth_hz, np.shape(snr)) > 0)
        return LinkBudget(
            client_ids=client_ids.copy(),
            bandwidth_hz=np.array(bandwidth_hz, dtype=float),
            tx_power_w=np.array(power, dtype=float),
            gain_linear=np.array(gain_linear, dtype=float),
            snr_db=np.asarray(linear_to_db(snr), dtype=float).reshape(client_ids.shape),
            rate_bps=rate.reshape(client_ids.shape),
        )

    def link_unchecked(self, direction: str, bandwidth_hz: np.ndarray, gain_linear: np.ndarray,
                       coupling_loss_db: np.ndarray | None = None, nominal_tx_power_w: np.ndarray | None = None,
                       noise_rise_linear: float = 1.0, *,
                       with_snr: bool = False) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Rate, and with ``with_snr`` the SNR (dB) and power (W), of links on given shares whose
        inputs were checked once: what :meth:`uplink_at_bandwidth`, :meth:`downlink_at_bandwidth`
        and :meth:`broadcast` give, the same arithmetic in the same order, without the input and
        output checks or the :class:`LinkBudget` (a transfer's rate integrated over many steps asks
        this thousands of times per round).

        Parameters
        ----------
        direction : {"uplink", "downlink", "broadcast"}
        bandwidth_hz : numpy.ndarray of float, shape (k,)
            Each link's share, Hz (ignored for ``broadcast``: the whole band).
        gain_linear : numpy.ndarray, shape (k,)
            Channel power gain, fading included.
        coupling_loss_db, nominal_tx_power_w : numpy.ndarray, shape (k,), optional
            The uplink's power control inputs (uplink only).
        noise_rise_linear : float
            The uplink's noise rise.
        with_snr : bool
            Also the SNR in dB and the transmit power (None otherwise).

        Returns
        -------
        tuple of numpy.ndarray
            ``(rate_bps, snr_db or None, tx_power_w or None)``; a rate model's negative or nan
            SNR is a nan SNR in dB here (the caller checks).
        """
        occupied_hz, power, noise, model = self.rate_terms_unchecked(direction, bandwidth_hz, gain_linear.shape,
                                                                     coupling_loss_db, nominal_tx_power_w,
                                                                     noise_rise_linear)
        rate_of, snr_of = self._unchecked_of[id(model)]
        rate = np.asarray(rate_of(occupied_hz, power, gain_linear, noise), dtype=float)
        if not with_snr:
            return rate, None, None
        snr = _snr(snr_of, occupied_hz, power, gain_linear, noise)
        # unchecked: a plug-in's negative or nan SNR comes out nan, for the caller to name (it checks)
        return rate, linear_to_db_unchecked(snr).reshape(gain_linear.shape), np.array(power, dtype=float)

    def rate_terms_unchecked(self, direction: str, bandwidth_hz: np.ndarray, shape: tuple[int, ...],
                             coupling_loss_db: np.ndarray | None = None,
                             nominal_tx_power_w: np.ndarray | None = None,
                             noise_rise_linear: float = 1.0) -> tuple[Any, Any, Any, Rate]:
        """What :meth:`link_unchecked` hands its rate model besides the gain: the occupied
        bandwidth (Hz), the transmit power (W), the noise PSD (W/Hz) and the model, for links of
        ``shape`` on these shares (the same arithmetic; a compiled transfer integration computes
        the rate from them, :mod:`sfl_sim.channel.transfer_compiled`)."""
        if direction == "uplink":
            assert coupling_loss_db is not None and nominal_tx_power_w is not None
            power = transmit_power_w(self.power_control, nominal_tx_power_w, bandwidth_hz, coupling_loss_db,
                                     self._uplink_bandwidth_hz)
            noise, model, fraction = (self.uplink_noise_psd_w_per_hz(noise_rise_linear), self.rate,
                                      self._occupied["uplink"])
        else:
            band, server_w = self._downlink(direction)
            if direction == "broadcast":
                bandwidth_hz = np.full(shape, band)
                power = np.broadcast_to(np.asarray(server_w, dtype=float), shape)
            else:
                power = server_w * bandwidth_hz / band
            noise, model, fraction = self._noise_psd_w_per_hz, self.downlink_rate, self._occupied["downlink"]
        occupied_hz = bandwidth_hz if fraction == 1.0 else bandwidth_hz * fraction
        return occupied_hz, power, noise, model

    def _shared(self, ids: np.ndarray, payload_bits: Any, band_hz: float,
                power_on: Callable[[np.ndarray], np.ndarray], gain_linear: np.ndarray, fading_gain: Any,
                noise_psd_w_per_hz: float, rate_model: Rate | None = None, direction: str = "uplink") -> LinkBudget:
        """The links of a group that shares ``band_hz`` as the allocator splits it (rate model
        ``rate_model``, default the uplink's)."""
        model = self.rate if rate_model is None else rate_model
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
        gains = gain_linear * _fading(fading_gain, ids.shape)

        if self._link_aware_allocator is not None:
            def rate_of(bandwidth_hz: np.ndarray) -> np.ndarray:
                b = np.asarray(bandwidth_hz, dtype=float)
                return np.asarray(model.rate_bps(b * self._occupied[direction], power_on(b), gains,
                                                 noise_psd_w_per_hz), dtype=float)

            shares = self._link_aware_allocator.allocate_hz(band_hz, payload, gains, rate_of=rate_of)
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
        return self.link(ids, shares, power_on(shares), gains, noise_psd_w_per_hz, model, direction=direction)

    def _downlink(self, method: str) -> tuple[float, float]:
        if self._downlink_bandwidth_hz is None or self._server_tx_power_w is None:
            raise ValueError(
                f"{method} needs downlink_bandwidth_hz and server_tx_power_w, got "
                f"downlink_bandwidth_hz={self._downlink_bandwidth_hz!r}, "
                f"server_tx_power_w={self._server_tx_power_w!r}; pass both (> 0) to Cell"
            )
        return self._downlink_bandwidth_hz, self._server_tx_power_w


def _fading(fading_gain: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Per-client fading gains (default 1), checked against the clients' shape."""
    if fading_gain is None:
        return np.ones(shape)
    g = check_array("fading_gain", fading_gain, minimum=0.0)
    if g.ndim == 0:
        return np.full(shape, float(g))
    if g.shape != shape:
        raise ValueError(
            f"fading_gain must be a scalar or have shape {shape} (one per client id), got shape {g.shape}"
        )
    return g


def _unchecked(model: Any, name: str) -> Callable[..., Any]:
    """``model``'s ``<name>_unchecked`` (the same numbers without the argument checks, for inputs
    checked once) when the class that defines ``name`` defines it too, else ``name`` itself: a
    subclass that overrides ``rate_bps`` is never bypassed by an inherited fast path."""
    fast = name + "_unchecked"
    for klass in type(model).__mro__:
        if name in vars(klass):
            return getattr(model, fast) if fast in vars(klass) else getattr(model, name)
    return getattr(model, name)


def _snr(snr_linear: Callable[..., Any] | None, occupied_hz: Any, power_w: Any, gain_linear: Any,
         noise_psd_w_per_hz: float) -> np.ndarray:
    """The linear SNR of links: the rate model's own ``snr_linear`` where it has one, else
    ``P g / (B N0)`` (0 on a 0 Hz share with no power, where that is 0/0)."""
    if snr_linear is not None:
        return np.asarray(snr_linear(occupied_hz, power_w, gain_linear, noise_psd_w_per_hz), dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        snr = power_w * gain_linear / (occupied_hz * noise_psd_w_per_hz)
    return np.where(np.isnan(snr), 0.0, snr)

