"""The downlink's own link: its rate model's parameters, and who has no usable downlink rate.

The downlink is the server's transmission decoded by the clients' receivers, so its rate model
differs from the uplink's in the parameters that describe a link end, not in the model:

- ``link``: ``downlink`` (``mcs_table``'s ``bler`` mapping reads the PDSCH curves,
  :mod:`sfl_sim.channel.link.bler`; ``attenuated_shannon`` takes TR 36.942 Table A.1's column);
- ``overhead_fraction``: :data:`DOWNLINK_OVERHEAD_FRACTION`, TS 38.306 clause 4.1.2's FR1
  downlink value (the uplink's is 0.08);
- ``noise_figure_db``: the UE's receiver, when the scenario gives one.  No default is taken
  from a source: ns-3's LTE module defaults to 9 dB at the UE and 5 dB at the eNB
  (``LteUePhy``/``LteEnbPhy`` ``NoiseFigure``), 5G-LENA to 5 dB at both (``NrUePhy``/``NrGnbPhy``
  ``NoiseFigure``, "nr code from NYU and UniPd assumed ... 5dB"); so, our reading, an unset UE
  noise figure keeps the uplink model's.

:func:`downlink_rate_params` derives these from the uplink's rate parameters (for a scenario
that names no downlink rate model of its own); :func:`downlink_outage` says which clients have
no usable downlink rate (the rate model finds no MCS at their SINR), the count ``--check`` and
``sfl-sim channel`` print.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

# TS 38.306 clause 4.1.2's overheads live with its peak rate (peak.py); named here too, where the downlink's are set
from sfl_sim.channel.link.peak import DOWNLINK_OVERHEAD_FRACTION, UPLINK_OVERHEAD_FRACTION

if TYPE_CHECKING:  # the cell imports this layer; only its type is needed here
    from sfl_sim.channel.cell import Cell

__all__ = ["DOWNLINK_OVERHEAD_FRACTION", "UPLINK_OVERHEAD_FRACTION", "GNB_NOISE_FIGURE_DB", "DownlinkOutage",
           "downlink_outage", "downlink_rate_params"]

#: The gNB receiver's noise figure a scenario takes when it gives none (``cell.gnb_noise_figure_db``),
#: dB: 5G-LENA's default for its NR PHY, ``NrPhy`` attribute ``NoiseFigure`` ``DoubleValue(5.0)`` ("nr
#: code from NYU and UniPd assumed in the code the value of 5dB"); ns-3's LTE eNB has 5 dB as well
#: (``LteEnbPhy`` ``NoiseFigure``).
GNB_NOISE_FIGURE_DB = 5.0


def downlink_rate_params(uplink_params: Mapping[str, Any], declared: Collection[str] | None,
                         ue_noise_figure_db: float | None = None) -> dict[str, Any]:
    """The downlink rate model's parameters, from the uplink model's (see the module docstring).

    Parameters
    ----------
    uplink_params : mapping
        The uplink rate model's parameters as the scenario gives them.
    declared : collection of str or None
        The parameters the model accepts (None: any, e.g. ``**kwargs``: nothing is added).
    ue_noise_figure_db : float, optional
        The UE's noise figure, dB; None keeps ``uplink_params``' (or the model's default).

    Returns
    -------
    dict
        ``uplink_params`` with ``link: downlink``, ``overhead_fraction`` 0.14 and the UE's noise
        figure, each where the model declares it.
    """
    params = dict(uplink_params)
    own = {"link": "downlink", "overhead_fraction": DOWNLINK_OVERHEAD_FRACTION}
    if ue_noise_figure_db is not None:
        own["noise_figure_db"] = ue_noise_figure_db
    for name, value in own.items():
        if declared is not None and name in declared:
            params[name] = value
    return params


class DownlinkOutage:
    """Clients with no usable downlink rate at the cell's large-scale gains (no fading).

    Attributes
    ----------
    unicast : numpy.ndarray of int
        Clients whose rate on an equal share of the band (``receivers`` clients at once) is 0.
    broadcast : numpy.ndarray of int
        Clients whose rate on the whole band is 0 (they cannot decode a broadcast at any rate).
    unicast_rate_bps, broadcast_rate_bps : numpy.ndarray
        Every client's rates, bit/s.
    """

    def __init__(self, unicast_rate_bps: np.ndarray, broadcast_rate_bps: np.ndarray) -> None:
        self.unicast_rate_bps = unicast_rate_bps
        self.broadcast_rate_bps = broadcast_rate_bps
        self.unicast = np.flatnonzero(unicast_rate_bps <= 0.0)
        self.broadcast = np.flatnonzero(broadcast_rate_bps <= 0.0)

    def line(self, mode: str) -> str:
        """One line for ``--check``/``sfl-sim channel``: how many clients are in downlink outage
        (``mode`` ``broadcast`` counts :attr:`broadcast`, any other :attr:`unicast`)."""
        n = self.unicast_rate_bps.size
        if mode == "broadcast":
            k = self.broadcast.size
            return (f"downlink (broadcast): {k} of {n} clients in downlink outage (no usable rate on the whole "
                    f"band); median rate {_mbps(self.broadcast_rate_bps)}")
        k = self.unicast.size
        note = "; mode ideal: takes no time, shown for unicast" if mode == "ideal" else ""
        return (f"downlink ({mode}): {k} of {n} clients in downlink outage (no usable rate on an equal share{note}); "
                f"median rate {_mbps(self.unicast_rate_bps)}")


def downlink_outage(cell: Cell, receivers: int | None = None) -> DownlinkOutage:
    """Each client's downlink rates on an equal share and on the whole band, and who has none.

    Parameters
    ----------
    cell : Cell
        A cell built with ``downlink_bandwidth_hz`` and ``server_tx_power_w``.
    receivers : int, optional
        How many clients share the band at once (a round's cohort), >= 1; default all of them.

    Returns
    -------
    DownlinkOutage
    """
    ids = np.arange(cell.n_clients)
    band_hz = float(cell.downlink_bandwidth_hz or 0.0)
    k = cell.n_clients if receivers is None else max(1, min(int(receivers), cell.n_clients))
    unicast = cell.downlink_link_at_bandwidth(ids, band_hz / k).rate_bps
    whole = cell.broadcast_link(ids).rate_bps
    return DownlinkOutage(np.asarray(unicast, dtype=float), np.asarray(whole, dtype=float))


def _mbps(rates_bps: np.ndarray) -> str:
    return f"{float(np.median(rates_bps)) / 1e6:.3g} Mbit/s"
