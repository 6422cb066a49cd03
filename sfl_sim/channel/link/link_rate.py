"""Link abstractions: rate models that replace Shannon capacity by what coded modulation achieves.

Each model maps the link's SINR to a spectral efficiency ``SE(SINR)`` in bit/s/Hz and gives
``rate = b x SE(p g / (b N0 F))``.  They share :class:`~sfl_sim.channel.link.rate.ShannonRate`'s SINR (with its
receiver noise figure) and expose ``spectral_efficiency_bps_per_hz(sinr_linear)``, which the
conformance check uses: a model with an SINR floor or steps is non-decreasing in SINR but not
always in bandwidth (a wider share at the same power can drop the SINR below the floor).

- ``shannon_gap``: :class:`ShannonGapRate`, ``log2(1 + SINR / Gamma)`` (ns-3 LTE AMC).
- ``attenuated_shannon``: :class:`AttenuatedShannonRate`, 3GPP TR 36.942 Annex A.
- ``mcs_table``: :class:`McsTableRate`, the TS 38.214 CQI tables with an SNR-gap or a BLER mapping.
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np

from sfl_sim.channel.limits import (
    BER_TARGET,
    BLER_TARGET,
    CODE_BLOCK_BITS,
    NOISE_FIGURE_DB,
    OVERHEAD_FRACTION,
    SHANNON_ATTENUATION,
    SINR_MIN_DB,
    SLOT_S,
    SNR_GAP_DB,
    SPECTRAL_EFFICIENCY_BPS_PER_HZ,
)
from sfl_sim.channel.link.bler import (
    TABLE_CODE_BLOCK_BITS_MAX,
    code_blocks_array,
    cqi_curves,
    transport_block_error_rate,
)
from sfl_sim.channel.link.cqi_tables import CQI_TABLES
from sfl_sim.channel.link.peak import DOWNLINK_OVERHEAD_FRACTION, UPLINK_OVERHEAD_FRACTION
from sfl_sim.channel.link.rate import RATES, ShannonRate, _check_link
from sfl_sim.channel.link.resource_grid import DEFAULT_NUMEROLOGY, slot_duration_s
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel, model_validator

__all__ = ["ShannonGapRate", "AttenuatedShannonRate", "McsTableRate", "gap_from_ber", "TR36942_DEFAULTS"]

#: ns-3's default BER target of its LTE AMC model (``LteAmc::Ber``).
DEFAULT_BER_TARGET = 5e-5
#: The bler mapping's transport-block error target: 0.1, and 1e-5 with CQI table 3: TS 38.214
#: clause 5.2.2.1's CQI definition, our reading (we could not retrieve that clause's text to read it;
#: TS 25.214 clause 6A.2.1's HSDPA CQI, which we read, is the same rule on the transport block:
#: "received with a transport block error probability not exceeding 0.1").
DEFAULT_BLER_TARGET = 0.1
CQI_TABLE3_BLER_TARGET = 1e-5


def gap_from_ber(ber_target: float) -> float:
    """SNR gap ``Gamma = -ln(5 BER) / 1.5`` (linear) of an M-QAM link at bit-error rate ``BER``.

    Source: G. Piro et al., "Simulating LTE Cellular Systems: an Open Source Framework", IEEE
    Trans. Veh. Technol. 60(2), 2011, Sec. on AMC (after Goldsmith and Chua's M-QAM bound); ns-3
    ``LteAmc::GetCqiFromSpectralEfficiency``.
    """
    return -math.log(5.0 * ber_target) / 1.5


class _SinrRate(Component):
    """The SINR of the link, as :class:`~sfl_sim.channel.link.rate.ShannonRate` computes it, plus
    ``rate = b x SE(SINR)`` with a zero rate on a zero share.  Subclasses' ``Params`` have a
    ``noise_figure_db``."""

    params: Any

    def __post_init__(self) -> None:
        self._snr = ShannonRate(noise_figure_db=self.params.noise_figure_db)
        self._noise_factor = 10.0 ** (self.params.noise_figure_db / 10.0)

    @property
    def noise_figure_db(self) -> float:
        """The receiver noise figure, dB."""
        return self.params.noise_figure_db

    def snr_linear(self, bandwidth_hz: Any, tx_power_w: Any, gain_linear: Any, noise_psd_w_per_hz: Any) -> np.ndarray:
        """Received SINR (linear), as :meth:`sfl_sim.channel.link.rate.ShannonRate.snr_linear`."""
        return self._snr.snr_linear(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz)

    def snr_linear_unchecked(self, bandwidth_hz: Any, tx_power_w: Any, gain_linear: Any,
                             noise_psd_w_per_hz: Any) -> np.ndarray:
        """:meth:`snr_linear` of arguments already checked (the link budget's hot path)."""
        return self._snr.snr_linear_unchecked(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz)

    def spectral_efficiency_bps_per_hz(self, sinr_linear: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def rate_bps(self, bandwidth_hz: Any, tx_power_w: Any, gain_linear: Any, noise_psd_w_per_hz: Any) -> np.ndarray:
        """Rate ``b x SE(SINR)`` in bit/s, broadcast over the arguments (0 on a 0 Hz share).

        Parameters
        ----------
        bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz : float or array_like
            Bandwidth in Hz (>= 0), transmit power in W (>= 0), linear channel power gain
            (>= 0) and noise PSD in W/Hz (> 0), as for :meth:`sfl_sim.channel.link.rate.ShannonRate.rate_bps`.

        Returns
        -------
        numpy.ndarray
            Rate in bit/s with the broadcast shape of the arguments.
        """
        return self.rate_bps_unchecked(*_check_link(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz))

    def rate_bps_unchecked(self, b: Any, p: Any, g: Any, n0: Any) -> np.ndarray:
        """:meth:`rate_bps` of arguments already checked (float arrays in range): the link budget's hot path."""
        positive = b > 0
        safe_b = np.where(positive, b, 1.0)
        se = self.spectral_efficiency_bps_per_hz(p * g / (safe_b * n0 * self._noise_factor))
        return np.where(positive, safe_b * se, 0.0)


@RATES.register("shannon_gap")
class ShannonGapRate(_SinrRate):
    """Shannon capacity with an SNR gap: ``SE = log2(1 + SINR / Gamma)`` bit/s/Hz.

    The gap ``Gamma`` is how far a practical M-QAM code sits from capacity at a bit-error target;
    from ``ber_target`` it is ``Gamma = -ln(5 BER) / 1.5`` (G. Piro et al., IEEE Trans. Veh.
    Technol. 60(2), 2011, the LTE AMC model of ns-3, ``LteAmc``), or given directly in dB.
    At BER 5e-5 (ns-3's default) ``Gamma = 5.529`` (7.43 dB).

    Attributes
    ----------
    gap_linear : float
        The gap ``Gamma`` in use (linear).

    Raises
    ------
    ValueError
        For a parameter out of range, or both ``gap_db`` and ``ber_target`` given.
    """

    class Params(ParamsModel):
        gap_db: Annotated[Annotated[float, SNR_GAP_DB] | None, Doc(
            "The gap ``Gamma`` in dB, in [0, 30].  Give this or ``ber_target``, not both.")] = None
        ber_target: Annotated[Annotated[float, BER_TARGET] | None, Doc(
            "Bit-error-rate target, in (0, 0.0446] (above it ``Gamma < 1`` and the model would beat capacity; the "
            "formula's gap is negative from 0.2).  Neither given: 5e-5 (ns-3's default).")] = None
        noise_figure_db: Annotated[float, NOISE_FIGURE_DB, Doc(
            "Receiver noise figure in dB, >= 0 (as for ``shannon``).")] = 0.0

        @model_validator(mode="after")
        def _one_way(self) -> ShannonGapRate.Params:
            if self.gap_db is not None and self.ber_target is not None:
                raise ValueError(f"gap_db and ber_target are two ways to set the same gap: give one, got "
                                 f"gap_db={self.gap_db!r} and ber_target={self.ber_target!r}")
            return self

    params: Params

    def __post_init__(self) -> None:
        super().__post_init__()
        p = self.params
        self.gap_linear = (10.0 ** (p.gap_db / 10.0) if p.gap_db is not None
                           else gap_from_ber(DEFAULT_BER_TARGET if p.ber_target is None else p.ber_target))

    def __repr__(self) -> str:
        p = self.params
        ber = DEFAULT_BER_TARGET if p.ber_target is None else p.ber_target
        setting = f"gap_db={p.gap_db!r}" if p.gap_db is not None else f"ber_target={ber!r}"
        return f"ShannonGapRate({setting}, noise_figure_db={p.noise_figure_db!r})"

    def spectral_efficiency_bps_per_hz(self, sinr_linear: Any) -> np.ndarray:
        """``log2(1 + SINR / Gamma)`` for linear SINR(s) >= 0; same shape."""
        return np.log2(1.0 + np.asarray(sinr_linear, dtype=float) / self.gap_linear)


#: TR 36.942 Annex A defaults by link: (alpha, SINR_min in dB, Thr_max in bit/s/Hz).
TR36942_DEFAULTS = {"downlink": (0.6, -10.0, 4.4), "uplink": (0.4, -10.0, 2.0)}


@RATES.register("attenuated_shannon")
class AttenuatedShannonRate(_SinrRate):
    """Attenuated and truncated Shannon bound of 3GPP TR 36.942, Annex A (A.1 downlink, A.2 uplink).

    ``SE = 0`` for ``SINR < SINR_min``, ``SE = alpha log2(1 + SINR)`` for
    ``SINR_min <= SINR < SINR_max``, and ``SE = Thr_max`` above, where ``SINR_max`` is where
    ``alpha log2(1 + SINR)`` reaches ``Thr_max`` (so ``SE = min(alpha log2(1 + SINR), Thr_max)``
    at and above the floor).  TR 36.942 (V17) Table A.1 (downlink) and Table A.2 (uplink),
    "Parameters describing baseline E-UTRA link level performance"::

        Parameter   DL        UL        Notes
        alpha       0.6       0.4       implementation losses
        SINR_MIN    -10 dB    -10 dB    QPSK, 1/8 rate (DL); QPSK 1/5 rate (UL)
        Thr_MAX     4.4       2.0       bps/Hz; 64QAM 4/5 (DL); 16QAM 3/4 (UL)

    Attributes
    ----------
    alpha, sinr_min_db, max_spectral_efficiency_bps_per_hz : float
        The values in use: the parameter, else the link's default.

    Raises
    ------
    ValueError
        For a parameter out of range.
    """

    class Params(ParamsModel):
        link: Annotated[Literal["uplink", "downlink"], Doc(
            "Which column of the table gives the defaults (the cell's uplink is where the clients send; use "
            "``downlink`` for a server-side rate).")] = "uplink"
        alpha: Annotated[Annotated[float, SHANNON_ATTENUATION] | None, Doc(
            "Attenuation in (0, 1]; null: the link's default.")] = None
        sinr_min_db: Annotated[Annotated[float, SINR_MIN_DB] | None, Doc(
            "The floor in dB, in [-50, 50]; null: the link's default.")] = None
        max_spectral_efficiency_bps_per_hz: Annotated[Annotated[float, SPECTRAL_EFFICIENCY_BPS_PER_HZ] | None, Doc(
            "``Thr_max`` in bit/s/Hz, in (0, 100]; null: the link's default.")] = None
        noise_figure_db: Annotated[float, NOISE_FIGURE_DB, Doc("Receiver noise figure in dB, >= 0.")] = 0.0

    params: Params

    def __post_init__(self) -> None:
        super().__post_init__()
        p = self.params
        d_alpha, d_min, d_max = TR36942_DEFAULTS[p.link]
        self.alpha = d_alpha if p.alpha is None else p.alpha
        self.sinr_min_db = d_min if p.sinr_min_db is None else p.sinr_min_db
        self.max_spectral_efficiency_bps_per_hz = (
            d_max if p.max_spectral_efficiency_bps_per_hz is None else p.max_spectral_efficiency_bps_per_hz)
        self._sinr_min_linear = 10.0 ** (self.sinr_min_db / 10.0)

    def __repr__(self) -> str:
        return (f"AttenuatedShannonRate(link={self.params.link!r}, alpha={self.alpha!r}, "
                f"sinr_min_db={self.sinr_min_db!r}, "
                f"max_spectral_efficiency_bps_per_hz={self.max_spectral_efficiency_bps_per_hz!r}, "
                f"noise_figure_db={self.noise_figure_db!r})")

    def spectral_efficiency_bps_per_hz(self, sinr_linear: Any) -> np.ndarray:
        """TR 36.942 A.1/A.2 throughput per Hz at linear SINR(s) >= 0; same shape."""
        sinr = np.asarray(sinr_linear, dtype=float)
        se = np.minimum(self.alpha * np.log2(1.0 + sinr), self.max_spectral_efficiency_bps_per_hz)
        return np.where(sinr >= self._sinr_min_linear, se, 0.0)


@RATES.register("mcs_table")
class McsTableRate(_SinrRate):
    """Rate of the highest 5G NR CQI the SINR supports: ``b x efficiency(CQI) x (1 - overhead)``.

    The CQI tables are TS 38.214 Tables 5.2.2.1-2, -3 and -4 (:mod:`sfl_sim.channel.link.cqi_tables`).  The
    SINR picks the CQI by ``mapping``:

    - ``gap``: the highest CQI whose efficiency is <= the SNR-gap spectral efficiency
      ``log2(1 + SINR / Gamma)``, ``Gamma = -ln(5 BER) / 1.5`` at ``ber_target``
      (:class:`ShannonGapRate`; ns-3's ``LteAmc::GetCqiFromSpectralEfficiency`` does the same on
      the LTE table).
    - ``bler``: the highest CQI whose transport-block error rate at the SINR is <= ``bler_target``
      (TS 38.214 clause 5.2.2.1 defines the CQI on the transport block, not the code block), from
      Sionna's 5G NR BLER tables (:mod:`sfl_sim.channel.link.bler`: each CQI's modulation and code
      rate matched to an MCS entry).  Per CQI ``j`` the transport block is what one slot carries on
      the share at that CQI, ``TB_j = b x eff_j x (1 - overhead) x slot_s`` bits (``b`` the RBs'
      bandwidth the rate model is given; our reading of "a slot's transport block", as HARQ's); TS
      38.212 clause 5.2.2's segmentation (:func:`~sfl_sim.channel.link.bler.code_blocks`, Sionna's)
      cuts it into ``C_j`` code blocks of ``K_j`` bits, and ``TBLER_j = 1 - (1 - BLER_j(SINR,
      K_j))^C_j`` (Sionna's TBLER).  A large share at a high CQI has several code blocks, so the
      CQI the code-block rule picks can miss the target on the block (``C = 4`` at a code-block
      BLER of 0.06 gives 0.22); with one code block nothing changes.  Without a bandwidth
      (:meth:`cqi` and :meth:`spectral_efficiency_bps_per_hz` called on the SINR alone) the block is
      one code block of 2000 bits.  ``code_block_bits`` given instead keeps the former rule: the
      code-block error of one block of that size, whatever the share.

    Below CQI 1 the link is out of range and the rate is 0 (the cell's outage policy makes that an
    outage).

    Attributes
    ----------
    overhead_fraction : float
        The overhead in use: the parameter, else the link's TS 38.306 clause 4.1.2 value.

    Raises
    ------
    ValueError
        For a parameter out of range or an unknown table or mapping.
    """

    class Params(ParamsModel):
        table: Annotated[Literal["cqi_table1", "cqi_table2", "cqi_table3"], Doc(
            "TS 38.214 Table 5.2.2.1-2 (up to 64QAM), 5.2.2.1-3 (up to 256QAM) or 5.2.2.1-4 (low SE).")] = \
            "cqi_table1"
        mapping: Annotated[Literal["gap", "bler"], Doc("How the SINR picks the CQI (see above).")] = "gap"
        ber_target: Annotated[float, BER_TARGET, Doc(
            "Bit-error target of the gap mapping, in (0, 0.0446] (ns-3's default 5e-5).")] = DEFAULT_BER_TARGET
        bler_target: Annotated[Annotated[float, BLER_TARGET] | None, Doc(
            "Transport-block error target of the bler mapping, in (0, 0.99]; null: 0.1, or 1e-5 with cqi_table3 "
            "(TS 38.214 clause 5.2.2.1's CQI definition, our reading).")] = None
        code_block_bits: Annotated[Annotated[float, CODE_BLOCK_BITS] | None, Doc(
            "null (default): the bler mapping judges each CQI on one slot's transport block on the share (see "
            "above); a size in bits, in [24, 8448]: on one code block of that size (the former rule).")] = None
        slot_s: Annotated[Annotated[float, SLOT_S] | None, Doc(
            "The slot whose transport block the bler mapping judges, s; null: numerology 1's 0.5 ms (TS 38.211 "
            "clause 4.3.2; our choice: cell.numerology's default).")] = None
        overhead_fraction: Annotated[Annotated[float, OVERHEAD_FRACTION] | None, Doc(
            "Fraction of the resources spent on control and reference signals, in [0, 0.9]; null: the link's "
            "TS 38.306 clause 4.1.2 value, 0.08 (FR1 uplink) or 0.14 (FR1 downlink).")] = None
        noise_figure_db: Annotated[float, NOISE_FIGURE_DB, Doc("Receiver noise figure in dB, >= 0.")] = 0.0
        link: Annotated[Literal["uplink", "downlink"], Doc(
            "Whose BLER curves the bler mapping reads: ``uplink`` (PUSCH tables first) or ``downlink`` (PDSCH "
            "tables only; :mod:`sfl_sim.channel.link.bler`).")] = "uplink"

    params: Params

    def __post_init__(self) -> None:
        super().__post_init__()
        self.gap_linear = gap_from_ber(self.params.ber_target)
        rows = CQI_TABLES[self.params.table]
        self.efficiency_bps_per_hz = np.array([r[3] for r in rows])  # ascending with the CQI index
        self.cqi_index = np.array([r[0] for r in rows])
        given = self.params.overhead_fraction
        by_link = UPLINK_OVERHEAD_FRACTION if self.params.link == "uplink" else DOWNLINK_OVERHEAD_FRACTION
        self.overhead_fraction = by_link if given is None else given
        p = self.params
        #: The transport-block error target of the bler mapping in use.
        self.bler_target = (p.bler_target if p.bler_target is not None
                            else CQI_TABLE3_BLER_TARGET if p.table == "cqi_table3" else DEFAULT_BLER_TARGET)
        #: The slot of the bler mapping's transport block, s.
        self.slot_s = slot_duration_s(DEFAULT_NUMEROLOGY) if p.slot_s is None else p.slot_s
        self._code_rate = [r[2] / 1024.0 for r in rows]

    @property
    def table(self) -> str:
        """The CQI table in use (what HARQ reads the same curves from)."""
        return self.params.table

    def __repr__(self) -> str:
        p = self.params
        target = f"ber_target={p.ber_target!r}" if p.mapping == "gap" else \
            f"bler_target={self.bler_target!r}, " + (
                f"slot_s={self.slot_s!r}" if p.code_block_bits is None else f"code_block_bits={p.code_block_bits!r}")
        return (f"McsTableRate(table={p.table!r}, mapping={p.mapping!r}, {target}, "
                f"overhead_fraction={self.overhead_fraction!r}, noise_figure_db={p.noise_figure_db!r}"
                + ("" if p.link == "uplink" else f", link={p.link!r}") + ")")

    def _rows_allowed(self, sinr_linear: Any, bandwidth_hz: Any = None) -> np.ndarray:
        """1 + the index of the row the mapping picks at each SINR (0: below CQI 1), on RBs of
        ``bandwidth_hz`` (broadcast with the SINR; None: see the class docstring)."""
        sinr = np.asarray(sinr_linear, dtype=float)
        if self.params.mapping == "bler":
            with np.errstate(divide="ignore"):
                sinr_db = 10.0 * np.log10(sinr)
            ok = np.stack([self._block_error(j, sinr_db, bandwidth_hz) <= self.bler_target
                           for j in range(len(self.cqi_index))])
            # the highest row meeting the target (rows are in increasing efficiency)
            return np.where(ok.any(axis=0), len(ok) - np.argmax(ok[::-1], axis=0), 0)
        se = np.log2(1.0 + sinr / self.gap_linear)
        return np.searchsorted(self.efficiency_bps_per_hz, se, side="right")

    def _block_error(self, row: int, sinr_db: np.ndarray, bandwidth_hz: Any) -> np.ndarray:
        """The error rate the bler mapping compares with its target for row ``row`` (see the class docstring)."""
        curve = cqi_curves(self.params.table, self.params.link)[row]
        if self.params.code_block_bits is not None:
            return curve.bler(sinr_db, self.params.code_block_bits)
        if bandwidth_hz is None:
            return curve.bler(sinr_db, TABLE_CODE_BLOCK_BITS_MAX)
        tb_bits = (np.asarray(bandwidth_hz, dtype=float) * self.efficiency_bps_per_hz[row]
                   * (1.0 - self.overhead_fraction) * self.slot_s)
        s, tb = np.broadcast_arrays(sinr_db, tb_bits)
        cb_bits, n_cb = code_blocks_array(tb, self._code_rate[row])
        return transport_block_error_rate(curve.bler(s, cb_bits), n_cb)

    def cqi(self, sinr_linear: Any, bandwidth_hz: Any = None) -> np.ndarray:
        """CQI index chosen at linear SINR(s) >= 0 on RBs of ``bandwidth_hz`` (0 = out of range); int."""
        k = self._rows_allowed(sinr_linear, bandwidth_hz)
        return np.where(k > 0, self.cqi_index[np.maximum(k - 1, 0)], 0)

    def cqi_of_rate(self, sinr_linear: float, rate_bps: float) -> int:
        """The CQI behind a rate this model gave at SINR ``sinr_linear`` (0 if none), for whoever
        knows the link's rate but not its bandwidth (HARQ, the channel report).

        With the transport-block rule the CQI depends on the bandwidth, ``b = rate / (eff x (1 -
        overhead))`` at the CQI taken: the highest CQI that the rule picks at its own ``b`` (our
        choice where two would be consistent).  Otherwise :meth:`cqi` at the SINR.
        """
        if self.params.mapping != "bler" or self.params.code_block_bits is not None or rate_bps <= 0:
            return int(self.cqi(sinr_linear))
        bands = rate_bps / (self.efficiency_bps_per_hz * (1.0 - self.overhead_fraction))
        picked = self._rows_allowed(np.full(bands.shape, float(sinr_linear)), bands)
        consistent = np.flatnonzero(picked == np.arange(1, bands.size + 1))
        return int(self.cqi_index[consistent[-1]]) if consistent.size else 0

    def spectral_efficiency_bps_per_hz(self, sinr_linear: Any, bandwidth_hz: Any = None) -> np.ndarray:
        """Table efficiency of the chosen CQI times ``1 - overhead_fraction`` (0 below CQI 1), on RBs
        of ``bandwidth_hz`` (the bler mapping's transport block; None: see the class docstring)."""
        k = self._rows_allowed(sinr_linear, bandwidth_hz)
        eff = np.where(k > 0, self.efficiency_bps_per_hz[np.maximum(k - 1, 0)], 0.0)
        return eff * (1.0 - self.overhead_fraction)

    def rate_bps(self, bandwidth_hz: Any, tx_power_w: Any, gain_linear: Any, noise_psd_w_per_hz: Any) -> np.ndarray:
        """Rate ``b x SE(SINR, b)`` in bit/s (0 on a 0 Hz share): as the other link abstractions',
        the CQI judged on the share's transport block (see the class docstring)."""
        return self.rate_bps_unchecked(*_check_link(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz))

    def rate_bps_unchecked(self, b: Any, p: Any, g: Any, n0: Any) -> np.ndarray:
        """:meth:`rate_bps` of arguments already checked (float arrays in range): the link budget's hot path."""
        positive = b > 0
        safe_b = np.where(positive, b, 1.0)
        se = self.spectral_efficiency_bps_per_hz(p * g / (safe_b * n0 * self._noise_factor), safe_b)
        return np.where(positive, safe_b * se, 0.0)
