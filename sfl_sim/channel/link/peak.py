"""The single-layer peak of an NR carrier, TS 38.306 clause 4.1.2, as a cap on a rate per Hz.

TS 38.306 (V17) clause 4.1.2, "Max data rate without ue-CategoryDL and ue-CategoryUL", gives the
approximate data rate of one carrier as::

    rate = 1e-6 v_Layers Q_m f R_max (N_PRB 12 / T_s^mu) (1 - OH)   Mbit/s,

``R_max = 948/1024``, ``T_s^mu = 1e-3 / (14 2^mu)`` s the average OFDM symbol (normal cyclic
prefix), ``N_PRB`` the maximum RB allocation of the bandwidth (TS 38.101-1 Table 5.3.2-1), ``OH``
0.14 FR1 downlink and 0.08 FR1 uplink, ``f`` a scaling factor in {1, 0.8, 0.75, 0.4}.

Per Hz of the resource blocks' bandwidth ``N_PRB x 12 x SCS`` (what the rate models are given,
:mod:`sfl_sim.channel.link.budget`), with ``SCS = 15 kHz x 2^mu``, the ``N_PRB 12`` and ``2^mu``
cancel::

    peak SE = v_Layers Q_m f R_max (1 - OH) x 14 / 15   bit/s/Hz,

the ``14 / 15`` being the cyclic prefix's share (14 symbols in ``1 ms / 2^mu`` against
``15 x 2^mu`` per ms without it).  Our reading for a single-layer handset at full scale: ``v = 1``,
``f = 1``, ``Q_m = 8`` (256QAM, the highest of CQI table 2): 6.3595 bit/s/Hz uplink (116.76 Mbit/s
on 20 MHz at 30 kHz, 51 RBs), 5.9448 downlink.
"""
from __future__ import annotations

__all__ = ["DOWNLINK_OVERHEAD_FRACTION", "UPLINK_OVERHEAD_FRACTION", "R_MAX", "PEAK_MODULATION_ORDER",
           "SYMBOLS_PER_SLOT", "peak_spectral_efficiency_bps_per_hz", "PEAK_CAPS"]

#: TS 38.306 clause 4.1.2: the overhead ``OH`` of the approximate maximum data rate, FR1 downlink
#: ("0.14, for frequency range FR1 for DL").
DOWNLINK_OVERHEAD_FRACTION = 0.14
#: TS 38.306 clause 4.1.2: ``OH`` for FR1 uplink ("0.08, for frequency range FR1 for UL").
UPLINK_OVERHEAD_FRACTION = 0.08
#: TS 38.306 clause 4.1.2: ``R_max = 948/1024``.
R_MAX = 948.0 / 1024.0
#: 256QAM, the highest modulation of TS 38.214's CQI Table 5.2.2.1-3 (our reading of "Q_m, the
#: maximum modulation order" for a UE that supports it).
PEAK_MODULATION_ORDER = 8
#: OFDM symbols per slot with normal cyclic prefix (TS 38.306 clause 4.1.2's ``T_s = 1e-3 / (14 2^mu)``).
SYMBOLS_PER_SLOT = 14


def peak_spectral_efficiency_bps_per_hz(overhead_fraction: float, modulation_order: int = PEAK_MODULATION_ORDER,
                                        layers: int = 1, scaling: float = 1.0) -> float:
    """TS 38.306 clause 4.1.2's rate per Hz of the RBs' bandwidth (see the module docstring).

    Parameters
    ----------
    overhead_fraction : float
        ``OH`` (0.08 FR1 uplink, 0.14 FR1 downlink).
    modulation_order, layers, scaling : int, int, float
        ``Q_m``, ``v_Layers`` and ``f``.

    Returns
    -------
    float
        bit/s per Hz of ``N_PRB x 12 x SCS``.
    """
    return layers * modulation_order * scaling * R_MAX * (1.0 - overhead_fraction) * SYMBOLS_PER_SLOT / 15.0


#: The caps a ``shannon`` rate may name (``max_spectral_efficiency_bps_per_hz``): the single-layer
#: 256QAM peak of the FR1 uplink and downlink.
PEAK_CAPS: dict[str, float] = {
    "ts38306_uplink": peak_spectral_efficiency_bps_per_hz(UPLINK_OVERHEAD_FRACTION),
    "ts38306_downlink": peak_spectral_efficiency_bps_per_hz(DOWNLINK_OVERHEAD_FRACTION),
}
