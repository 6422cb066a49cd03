"""The NR resource grid of a channel: how many resource blocks a bandwidth holds (FR1).

:data:`N_RB_FR1` is TS 38.101-1 Table 5.3.2-1, "Maximum transmission bandwidth configuration
``N_RB``": per channel bandwidth and subcarrier spacing, the resource blocks a carrier uses once
its guard bands are left out (20 MHz at 30 kHz is 51 RBs, not ``20 MHz / (12 x 30 kHz) = 55.6``).
We read the numbers from OpenAirInterface (``openairinterface5g``, ``common/utils/nr/nr_common.c``
at commit 883724b977: ``tables_5_3_2``, whose columns ``get_supported_bw_mhz`` names 5, 10, 15,
20, 25, 30, 40, 50, 60, 80, 90 and 100 MHz); the channel bandwidths later releases of the spec
added (35, 45 and 70 MHz) are not in that table and so not here.  ``-1`` there (a bandwidth the
spacing does not support) is a missing key here.

:func:`n_rb` reads the table; :func:`share_resource_blocks` counts the RBs a share of a channel
occupies, which uplink power control needs (TS 38.213 clause 7.1.1's ``M_RB``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sfl_sim.kit.checks import check_array

__all__ = ["N_RB_FR1", "SUBCARRIERS_PER_RB", "DEFAULT_NUMEROLOGY", "n_rb", "occupied_fraction",
           "share_resource_blocks", "slot_duration_s", "subcarrier_spacing_hz"]

#: Subcarriers in one NR resource block (TS 38.211 clause 4.4.4.1, ``N_sc^RB = 12``).
SUBCARRIERS_PER_RB = 12

#: The numerology ``mu`` of a cell that names none (``cell.numerology``'s default; our choice: 30 kHz,
#: the spacing FR1 mid-band carriers commonly use).
DEFAULT_NUMEROLOGY = 1


def subcarrier_spacing_hz(mu: int) -> float:
    """Subcarrier spacing ``15 kHz x 2^mu`` of numerology ``mu`` (TS 38.211 Table 4.2-1), Hz."""
    return 15e3 * 2.0 ** mu


def slot_duration_s(mu: int) -> float:
    """Slot ``1 ms / 2^mu`` of numerology ``mu`` (TS 38.211 clause 4.3.2: ``2^mu`` slots per 1 ms
    subframe), s."""
    return 1e-3 / 2.0 ** mu


#: TS 38.101-1 Table 5.3.2-1 (FR1): subcarrier spacing (Hz) -> channel bandwidth (MHz) -> ``N_RB``.
N_RB_FR1: dict[float, dict[int, int]] = {
    15e3: {5: 25, 10: 52, 15: 79, 20: 106, 25: 133, 30: 160, 40: 216, 50: 270},
    30e3: {5: 11, 10: 24, 15: 38, 20: 51, 25: 65, 30: 78, 40: 106, 50: 133, 60: 162, 80: 217, 90: 245, 100: 273},
    60e3: {10: 11, 15: 18, 20: 24, 25: 31, 30: 38, 40: 51, 50: 65, 60: 79, 80: 107, 90: 121, 100: 135},
}


def _table_entry(bandwidth_hz: float, scs_hz: float) -> int | None:
    """``N_RB`` of the table for this pair, or None when the table has no such entry."""
    row = N_RB_FR1.get(float(scs_hz))
    mhz = bandwidth_hz / 1e6
    if row is None or not float(mhz).is_integer():
        return None
    return row.get(int(mhz))


def n_rb(bandwidth_hz: float, scs_hz: float) -> int:
    """Resource blocks of an FR1 channel of ``bandwidth_hz`` at subcarrier spacing ``scs_hz``.

    Parameters
    ----------
    bandwidth_hz : float
        Channel bandwidth in Hz: one of the table's (5e6, 10e6, ... 100e6).
    scs_hz : float
        Subcarrier spacing in Hz: 15e3, 30e3 or 60e3.

    Returns
    -------
    int
        ``N_RB`` of TS 38.101-1 Table 5.3.2-1.

    Raises
    ------
    ValueError
        One line naming the pair and the bandwidths the table holds at that spacing.
    """
    got = _table_entry(bandwidth_hz, scs_hz)
    if got is None:
        row = N_RB_FR1.get(float(scs_hz))
        if row is None:
            raise ValueError(f"scs_hz: got {scs_hz!r}; allowed: {', '.join(f'{s:g}' for s in N_RB_FR1)} "
                             f"(TS 38.101-1 Table 5.3.2-1, FR1)")
        raise ValueError(f"bandwidth_hz: got {bandwidth_hz!r} at {scs_hz:g} Hz subcarrier spacing; allowed: "
                         f"{', '.join(f'{m}e6' for m in row)} (TS 38.101-1 Table 5.3.2-1, FR1)")
    return got


def occupied_fraction(bandwidth_hz: float, mu: int | None) -> float:
    """The fraction of a channel its resource blocks occupy, ``N_RB x 12 x SCS / B``.

    TS 38.306 clause 4.1.2 counts a carrier's rate on ``N_PRB`` resource blocks of 12 subcarriers
    (``N_PRB`` the maximum RB allocation of TS 38.101-1 clause 5.3, :data:`N_RB_FR1`): the guard
    bands carry nothing.  20 MHz at 30 kHz: ``51 x 12 x 30 kHz / 20 MHz = 0.918``; 5 MHz at 30 kHz:
    ``11 x 360 kHz / 5 MHz = 0.792``.  (Clause 4.1.2 divides by the average OFDM symbol duration
    ``T_s = 1e-3 / (14 x 2^mu)`` rather than multiplying by the spacing; the difference, 14/15, is
    the cyclic prefix, which the rate models here do not count: our reading.)

    Parameters
    ----------
    bandwidth_hz : float
        Channel bandwidth, Hz.
    mu : int or None
        The cell's numerology; None: unknown.

    Returns
    -------
    float
        ``N_RB x 12 x 15 kHz x 2^mu / B`` where the table has the pair; 1.0 where it has none, or
        without a numerology (our choice: no guard band is known, so the whole bandwidth is taken
        as occupied, as before the table was applied).
    """
    if mu is None:
        return 1.0
    scs_hz = subcarrier_spacing_hz(mu)
    blocks = _table_entry(bandwidth_hz, scs_hz)
    return 1.0 if blocks is None else blocks * SUBCARRIERS_PER_RB * scs_hz / bandwidth_hz


def share_resource_blocks(share_hz: Any, scs_hz: float, channel_bandwidth_hz: float | None = None) -> np.ndarray:
    """Resource blocks ``M_RB`` a share of ``share_hz`` of a channel occupies (0 on 0 Hz).

    With a channel of TS 38.101-1 Table 5.3.2-1 (``channel_bandwidth_hz`` and ``scs_hz`` a pair
    of :data:`N_RB_FR1`), the share holds its part of the channel's RBs, ``N_RB x b / B``, counted
    by the RBs it touches (rounded up): the whole band is exactly ``N_RB``, a tenth of a 20 MHz
    carrier at 30 kHz ``ceil(5.1) = 6``.  Otherwise (no channel given, or one the table lacks)
    the share is counted as if it had no guard band: ``ceil(b / (12 SCS))``, as Sionna's
    ``open_loop_uplink_power_control`` counts ``ceil(subcarriers / 12)``.  Either way ``M_RB`` is
    non-decreasing in the share.  A relative tolerance of 1e-9 keeps a share of exactly ``m``
    blocks, computed in floating point, at ``m``.

    Parameters
    ----------
    share_hz : float or array_like
        Bandwidth of each share in Hz, >= 0.
    scs_hz : float
        Subcarrier spacing in Hz.
    channel_bandwidth_hz : float, optional
        The channel the shares are cut from, Hz.

    Returns
    -------
    numpy.ndarray
        ``M_RB`` per share (float, integral values), same shape as ``share_hz``.
    """
    b = check_array("share_hz", share_hz, minimum=0.0)
    table = None if channel_bandwidth_hz is None else _table_entry(channel_bandwidth_hz, scs_hz)
    if table is None:
        blocks = b / (SUBCARRIERS_PER_RB * scs_hz)
    else:
        assert channel_bandwidth_hz is not None
        blocks = table * b / channel_bandwidth_hz
    return np.ceil(blocks * (1.0 - 1e-9))
