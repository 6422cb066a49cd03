"""Who has no usable uplink rate at the drop: the count ``--check`` prints.

A client's upload is in outage when its rate is 0 (the rate model finds no MCS at its SINR) on
the round's share of the band, and, under a dynamic ``cell.scheduler``, also when it is 0 on the
whole band (every resource block, what a client alone with data is granted: the band could never
carry its bits, :meth:`~sfl_sim.engine.band.base.BandResource.serves`); the cell's outage policy decides
what follows (drop, or retransmit on a fresh fading draw).  Counted here at the cell's
large-scale gains, without fading, as :func:`~sfl_sim.channel.link.downlink.downlink_outage`
counts the downlink.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the cell imports this layer; only its type is needed here
    from sfl_sim.channel.cell import Cell

__all__ = ["UplinkOutage", "uplink_outage"]


class UplinkOutage:
    """Clients with no usable uplink rate at the cell's large-scale gains (no fading).

    Attributes
    ----------
    share_rate_bps, band_rate_bps : numpy.ndarray, shape (n_clients,)
        Every client's rate on an equal share of the band and on the whole band, bit/s.
    scheduled : bool
        Whether a dynamic scheduler hands out the band (then a zero rate on the whole band is an
        outage too).
    clients : numpy.ndarray of int
        The clients in outage.
    """

    def __init__(self, share_rate_bps: np.ndarray, band_rate_bps: np.ndarray, scheduled: bool) -> None:
        self.share_rate_bps, self.band_rate_bps, self.scheduled = share_rate_bps, band_rate_bps, scheduled
        lost = share_rate_bps <= 0.0
        if scheduled:
            lost |= band_rate_bps <= 0.0
        self.clients = np.flatnonzero(lost)

    def line(self, scheduler: str) -> str:
        """One line for ``--check``: how many clients are in uplink outage under ``scheduler``
        (the name of ``cell.scheduler``)."""
        n, k = self.share_rate_bps.size, self.clients.size
        where = "an equal share or on the whole band" if self.scheduled else "an equal share"
        return (f"uplink ({scheduler}): {k} of {n} clients in uplink outage (no usable rate on {where}; "
                f"cell.outage decides what follows); median rate on an equal share "
                f"{float(np.median(self.share_rate_bps)) / 1e6:.3g} Mbit/s")


def uplink_outage(cell: Cell, receivers: int | None = None, scheduled: bool = False) -> UplinkOutage:
    """Each client's uplink rates on an equal share and on the whole band, and who has none.

    Parameters
    ----------
    cell : Cell
    receivers : int, optional
        How many clients share the band at once (a round's cohort), >= 1; default all of them.
    scheduled : bool, default False
        A dynamic scheduler hands out the band.

    Returns
    -------
    UplinkOutage
    """
    ids = np.arange(cell.n_clients)
    band_hz = float(cell.uplink_bandwidth_hz)
    k = cell.n_clients if receivers is None else max(1, min(int(receivers), cell.n_clients))
    share = cell.uplink_link_at_bandwidth(ids, np.full(ids.size, band_hz / k)).rate_bps
    whole = cell.uplink_link_at_bandwidth(ids, np.full(ids.size, band_hz)).rate_bps
    return UplinkOutage(np.asarray(share, dtype=float), np.asarray(whole, dtype=float), scheduled)
