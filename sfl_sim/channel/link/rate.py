"""Achievable-rate models mapping bandwidth, power and channel gain to a bit rate.

A rate model is any object with
``rate_bps(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz) -> ndarray`` that
broadcasts its arguments elementwise; register new ones in :data:`RATES`.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np

from sfl_sim.channel.limits import NOISE_FIGURE_DB, SPECTRAL_EFFICIENCY_BPS_PER_HZ
from sfl_sim.channel.link.peak import PEAK_CAPS
from sfl_sim.channel.protocols import Rate
from sfl_sim.channel.units import linear_to_db
from sfl_sim.kit.checks import check_array
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel
from sfl_sim.kit.registry import Registry

__all__ = ["RATES", "ShannonRate"]

RATES = Registry("rate", protocol=Rate)


def _check_link(
    bandwidth_hz: Any, tx_power_w: Any, gain_linear: Any, noise_psd_w_per_hz: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    b = check_array("bandwidth_hz", bandwidth_hz, minimum=0.0)
    p = check_array("tx_power_w", tx_power_w, minimum=0.0)
    g = check_array("gain_linear", gain_linear, minimum=0.0)
    # Zero noise would make every rate infinite; no physical receiver has it.
    n0 = check_array("noise_psd_w_per_hz", noise_psd_w_per_hz, minimum=0.0, strict=True)
    return b, p, g, n0


@RATES.register("shannon")
class ShannonRate(Component):
    """Shannon capacity of an AWGN link: ``b log2(1 + p g / (b N0 F))``, optionally capped.

    Uncapped (the default), the rate has no ceiling: at a high SNR it exceeds what any NR handset
    carries, e.g. TS 38.306 clause 4.1.2's single-layer uplink peak (6.3595 bit/s/Hz of the resource
    blocks, 116.76 Mbit/s on 20 MHz at 30 kHz; :mod:`sfl_sim.channel.link.peak`).
    ``max_spectral_efficiency_bps_per_hz: ts38306_uplink`` (or ``ts38306_downlink``) caps it there;
    ``attenuated_shannon`` (TR 36.942 Annex A) also scales it by ``alpha``.

    All arguments of its methods broadcast against each other (numpy rules).

    Raises
    ------
    ValueError
        For a parameter out of range.
    """

    class Params(ParamsModel):
        noise_figure_db: Annotated[float, NOISE_FIGURE_DB, Doc(
            "Receiver noise figure ``F`` in dB, >= 0; multiplies the noise PSD by ``10^(F/10)``.")] = 0.0
        max_spectral_efficiency_bps_per_hz: Annotated[
            Annotated[float, SPECTRAL_EFFICIENCY_BPS_PER_HZ] | Literal["ts38306_uplink", "ts38306_downlink"] | None,
            Doc("Cap on the rate per Hz, > 0, or ``ts38306_uplink`` / ``ts38306_downlink``: TS 38.306 clause 4.1.2's "
                "single-layer 256QAM peak per Hz of the resource blocks (6.3595 / 5.9448 bit/s/Hz: OH 0.08 / 0.14, "
                "the cyclic prefix's 14/15); null = no cap (rates above that peak are possible).  The rate becomes "
                "``min(b log2(1 + snr), b * cap)``.")] = None

    params: Params

    def __post_init__(self) -> None:
        self._noise_factor = 10.0 ** (self.params.noise_figure_db / 10.0)
        cap = self.params.max_spectral_efficiency_bps_per_hz
        #: The cap in use, bit/s/Hz (a named one resolved), or None.
        self.max_spectral_efficiency_bps_per_hz: float | None = PEAK_CAPS[cap] if isinstance(cap, str) else cap

    @property
    def noise_figure_db(self) -> float:
        """The receiver noise figure, dB (the :class:`~sfl_sim.channel.protocols.NoiseFigureRate` the budget reads)."""
        return self.params.noise_figure_db

    def __repr__(self) -> str:
        p = self.params
        if p.noise_figure_db == 0.0 and p.max_spectral_efficiency_bps_per_hz is None:
            return "ShannonRate()"
        return (f"ShannonRate(noise_figure_db={p.noise_figure_db!r}, "
                f"max_spectral_efficiency_bps_per_hz={p.max_spectral_efficiency_bps_per_hz!r})")

    def snr_linear(
        self, bandwidth_hz: Any, tx_power_w: Any, gain_linear: Any, noise_psd_w_per_hz: Any
    ) -> np.ndarray:
        """Received SNR ``p g / (b N0 F)`` (linear); ``inf`` where ``b == 0`` and ``p g > 0``.

        Parameters
        ----------
        bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz : float or array_like
            Bandwidth in Hz (>= 0), transmit power in W (>= 0), linear channel power gain
            (>= 0) and noise power spectral density in W/Hz (> 0); broadcast together.

        Returns
        -------
        numpy.ndarray
            Linear SNR with the broadcast shape.
        """
        return self.snr_linear_unchecked(*_check_link(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz))

    def snr_linear_unchecked(self, bandwidth_hz: Any, tx_power_w: Any, gain_linear: Any,
                             noise_psd_w_per_hz: Any) -> np.ndarray:
        """:meth:`snr_linear` of arguments already checked (float arrays in range): the link budget's
        hot path (:meth:`~sfl_sim.channel.link.budget.LinkBudgetModel.link_unchecked`)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            snr = tx_power_w * gain_linear / (bandwidth_hz * noise_psd_w_per_hz * self._noise_factor)
        # 0/0 (no band, no signal) is "no SNR": report 0, not nan.
        return np.where(np.isnan(snr), 0.0, snr)

    def snr_db(
        self, bandwidth_hz: Any, tx_power_w: Any, gain_linear: Any, noise_psd_w_per_hz: Any
    ) -> np.ndarray:
        """Received SNR in dB; same arguments and shapes as :meth:`snr_linear`."""
        return linear_to_db(self.snr_linear(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz))

    def rate_bps(
        self, bandwidth_hz: Any, tx_power_w: Any, gain_linear: Any, noise_psd_w_per_hz: Any
    ) -> np.ndarray:
        """Shannon rate ``b log2(1 + p g / (b N0 F))``, capped at ``b * max_spectral_efficiency``.

        Parameters
        ----------
        bandwidth_hz : float or array_like
            Allocated bandwidth in Hz, >= 0.  A zero share gives rate 0 (the limit of the
            formula as b -> 0 is 0 for any finite p g), never nan.
        tx_power_w : float or array_like
            Transmit power in W, >= 0.
        gain_linear : float or array_like
            Linear channel power gain (path loss and shadowing), >= 0.
        noise_psd_w_per_hz : float or array_like
            Noise power spectral density in W/Hz, > 0.

        Returns
        -------
        numpy.ndarray
            Rate in bit/s with the broadcast shape of the arguments.

        Raises
        ------
        ValueError
            If an argument is negative, non-finite, or the noise PSD is not > 0.
        """
        return self.rate_bps_unchecked(*_check_link(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz))

    def rate_bps_unchecked(self, b: Any, p: Any, g: Any, n0: Any) -> np.ndarray:
        """:meth:`rate_bps` of arguments already checked (bandwidth, power, gain, noise PSD as float
        arrays in range): the link budget's hot path."""
        positive = np.greater(b, 0)
        every = bool(positive.all())  # no 0 Hz share (a transfer's start): no masks, the same numbers
        # Replace b = 0 by 1 inside the formula only to avoid 0 * log(inf); masked out below.
        safe_b = b if every else np.where(positive, b, 1.0)
        rate = safe_b * np.log2(1.0 + p * g / (safe_b * n0 * self._noise_factor))
        cap = self.max_spectral_efficiency_bps_per_hz
        if cap is not None:
            rate = np.minimum(rate, safe_b * cap)
        return np.asarray(rate, dtype=float) if every else np.where(positive, rate, 0.0)
