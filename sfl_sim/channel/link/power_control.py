"""Uplink power control: the transmit power each client uses on the share it is given.

A power-control model is any object with
``tx_power_w(nominal_tx_power_w, bandwidth_hz, coupling_loss_db) -> ndarray`` (W) that broadcasts
its arguments elementwise (:class:`sfl_sim.channel.protocols.PowerControl`); register new ones in
:data:`POWER_CONTROL`.  The cell calls it for every uplink link it computes (also on the candidate
shares a link-aware allocator tries), with the clients' configured power (``cell.client_tx_power_w``),
their bandwidth and their coupling loss (path loss plus shadowing: the long-term loss a terminal
estimates from the downlink reference signals; small-scale fading is not compensated).  A model
whose ``tx_power_w`` also takes ``channel_bandwidth_hz`` (a
:class:`~sfl_sim.channel.protocols.ChannelAwarePowerControl`) is given the uplink band the shares
are cut from (:func:`transmit_power_w`).  A model with ``headroom_rbs(coupling_loss_db)`` (a
:class:`~sfl_sim.channel.protocols.HeadroomPowerControl`) tells a dynamic scheduler how many
resource blocks each client can power at its nominal power (:func:`headroom_rbs`); a model
without it sets no such limit.

- ``fixed``: :class:`FixedPower`, every client sends at its configured power (the default).
- ``open_loop``: :class:`OpenLoopPowerControl`, 3GPP TS 38.213 clause 7.1.1 open loop.
"""
from __future__ import annotations

import functools
import inspect
from typing import Annotated, Any, Literal

import numpy as np

from sfl_sim.channel.limits import CLIENT_MAX_POWER_DBM, NOMINAL_RX_POWER_DBM, SUBCARRIER_SPACING_HZ
from sfl_sim.channel.link.resource_grid import SUBCARRIERS_PER_RB, share_resource_blocks
from sfl_sim.channel.protocols import PowerControl
from sfl_sim.kit.checks import check_array
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel, field_validator
from sfl_sim.kit.registry import Registry

__all__ = ["POWER_CONTROL", "FixedPower", "OpenLoopPowerControl", "PATHLOSS_COMPENSATION_FACTORS",
           "SUBCARRIERS_PER_RB", "headroom_rbs", "resource_blocks", "numerology", "transmit_power_w",
           "takes_channel_bandwidth"]

POWER_CONTROL = Registry("power_control", protocol=PowerControl)

#: The fractional path-loss compensation factors ``alpha`` TS 38.213 allows
#: (``msg3-Alpha`` / ``p0-PUSCH-AlphaSet`` ``alpha`` in TS 38.331: alpha0, alpha04, ..., alpha1).
PATHLOSS_COMPENSATION_FACTORS: tuple[float, ...] = (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def resource_blocks(bandwidth_hz: Any, subcarrier_spacing_hz: float,
                    channel_bandwidth_hz: float | None = None) -> np.ndarray:
    """Resource blocks ``M_RB`` a share of ``bandwidth_hz`` occupies (0 on 0 Hz): the share's part
    of the channel's TS 38.101-1 grid when the channel is in Table 5.3.2-1, else ``ceil(b / (12 SCS))``
    (:func:`sfl_sim.channel.link.resource_grid.share_resource_blocks`, which says why).

    Parameters
    ----------
    bandwidth_hz : float or array_like
        Bandwidth of each share in Hz, >= 0.
    subcarrier_spacing_hz : float
        NR subcarrier spacing in Hz (15, 30, 60, 120 kHz; TS 38.211 Table 4.2-1).
    channel_bandwidth_hz : float, optional
        The uplink band the shares are cut from, Hz.

    Returns
    -------
    numpy.ndarray
        Number of resource blocks (float, integral values), same shape.
    """
    return share_resource_blocks(bandwidth_hz, subcarrier_spacing_hz, channel_bandwidth_hz)


def numerology(subcarrier_spacing_hz: float) -> int:
    """The numerology ``mu`` of a subcarrier spacing ``15 x 2^mu`` kHz (TS 38.211 Table 4.2-1)."""
    return _NR_SUBCARRIER_SPACINGS_HZ.index(float(subcarrier_spacing_hz))


def takes_channel_bandwidth(power_control: Any) -> bool:
    """True when ``power_control.tx_power_w`` declares a ``channel_bandwidth_hz`` parameter."""
    method = power_control.tx_power_w
    function = getattr(method, "__func__", method)  # a method's signature is its class's: asked once
    try:
        return _declares_channel_bandwidth(function)
    except TypeError:  # an unhashable callable: asked each time
        return _declares_channel_bandwidth.__wrapped__(function)


@functools.lru_cache(maxsize=256)
def _declares_channel_bandwidth(function: Any) -> bool:
    # inspect.signature costs ~70 us, and the scheduler's slot form asks every slot
    try:
        return "channel_bandwidth_hz" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def transmit_power_w(power_control: PowerControl, nominal_tx_power_w: Any, bandwidth_hz: Any,
                     coupling_loss_db: Any, channel_bandwidth_hz: float) -> np.ndarray:
    """``power_control``'s power on these shares of a channel of ``channel_bandwidth_hz``: the
    channel is passed to a model that takes it (:func:`takes_channel_bandwidth`), not to others."""
    if takes_channel_bandwidth(power_control):
        return np.asarray(power_control.tx_power_w(  # type: ignore[call-arg]
            nominal_tx_power_w, bandwidth_hz, coupling_loss_db, channel_bandwidth_hz=channel_bandwidth_hz),
            dtype=float)
    return np.asarray(power_control.tx_power_w(nominal_tx_power_w, bandwidth_hz, coupling_loss_db), dtype=float)


def headroom_rbs(power_control: PowerControl, coupling_loss_db: Any) -> np.ndarray | None:
    """Each client's power headroom in resource blocks, ``power_control.headroom_rbs`` (integers
    >= 1), or None for a model that has no such method (no limit: :class:`FixedPower`)."""
    method = getattr(power_control, "headroom_rbs", None)
    if method is None:
        return None
    return np.asarray(method(coupling_loss_db), dtype=np.int64)


@POWER_CONTROL.register("fixed")
class FixedPower(Component):
    """Every client sends at its configured power (``cell.client_tx_power_w``), whatever its share.

    It reports no power headroom (no ``headroom_rbs``): its power does not depend on the resource
    blocks, so there is no nominal power on ``M`` RBs to hold against ``P_CMAX`` (TS 38.213 clause
    7.7.1).  That its rate grows less than in proportion to the RBs (the same power spread over
    more of them) is the scheduler's to weigh: proportional fair's marginal rule splits the band
    by it (:mod:`sfl_sim.channel.link.scheduling`).
    """

    def tx_power_w(self, nominal_tx_power_w: Any, bandwidth_hz: Any, coupling_loss_db: Any) -> np.ndarray:
        """The configured power, broadcast to the shape of the arguments.

        Parameters
        ----------
        nominal_tx_power_w, bandwidth_hz, coupling_loss_db : float or array_like
            Configured power in W, share in Hz, coupling loss in dB (the last two unused).

        Returns
        -------
        numpy.ndarray
            Transmit power in W.
        """
        p = np.asarray(nominal_tx_power_w, dtype=float)
        if np.shape(bandwidth_hz) == p.shape == np.shape(coupling_loss_db):  # one per link already: a copy
            return np.array(p, dtype=float)
        shape = np.broadcast_shapes(p.shape, np.shape(bandwidth_hz), np.shape(coupling_loss_db))
        return np.array(np.broadcast_to(p, shape), dtype=float)


@POWER_CONTROL.register("open_loop")
class OpenLoopPowerControl(Component):
    """Open-loop fractional uplink power control of 3GPP TS 38.213 clause 7.1.1 (PUSCH).

    ``P = min(P_max, P0 + 10 log10(2^mu M_RB) + alpha PL)`` in dBm: TS 38.213 eq. (7.1.1) for
    ``P_PUSCH`` (``P_O_PUSCH + 10 log10(2^mu M_RB) + alpha PL + Delta_TF + f``, as the clause
    writes it; e.g. cafetele.com/labs/5g-phy-layer/pusch-power-control.html reproduces it) with
    the transport-format and closed-loop terms ``Delta_TF = f = 0`` (open loop only).  ``mu`` is
    the numerology of the subcarrier spacing ``15 x 2^mu`` kHz: a resource block of ``12 x 15 x
    2^mu`` kHz spans ``2^mu`` times the bandwidth of a 15 kHz one, and ``P0`` is the target per
    15 kHz-numerology RB, so the same received power spectral density needs ``10 log10(2^mu)`` dB
    more per RB (3.01 dB at the default 30 kHz).  ``M_RB`` is the resource blocks of the client's
    share of the uplink channel (:func:`resource_blocks`: its part of the channel's TS 38.101-1
    Table 5.3.2-1 grid, so the whole 20 MHz band at 30 kHz is 51 RBs), ``PL`` its coupling loss in
    dB (path loss plus shadowing) and ``alpha`` the fractional path-loss compensation.

    Sionna SYS's ``open_loop_uplink_power_control`` computes ``P0 + alpha PL + 10 log10(#PRB)``
    with ``#PRB = ceil(subcarriers / 12)``: it leaves ``2^mu`` out (and the guard bands); the spec
    is the reference here, Sionna a cross-check whose deviation is that term
    (``tests/channel/link/test_power_control.py``).

    ``P0`` is ``P_O_PUSCH = P_O_NOMINAL_PUSCH + P_O_UE_PUSCH`` (TS 38.213 clause 7.1.1).  Its
    cell-wide part, TS 38.331 ``p0-NominalWithGrant``, takes "only even values (step size 2)" in
    -202..24 dBm (the field description as srsRAN's PUSCH configuration quotes it), and the
    UE-specific part ``p0`` of a ``P0-PUSCH-AlphaSet`` adds an integer offset; so the sum is not
    restricted to even values, and any number in [-202, 24] dBm is taken (our reading: the range
    of the UE-specific offset is not checked).  ``P_max`` is ``P_CMAX``: 23 dBm for a power
    class 3 handset (TS 38.101-1 Table 6.2.1-1, the default).  With ``alpha = 1`` the power
    received per RB is ``P0`` (per 15 kHz of RB bandwidth: ``P0 + 10 log10(2^mu)`` per RB) until
    ``P_max`` caps it; smaller ``alpha`` lets cell-edge clients arrive weaker (less interference to
    the neighbouring cells).  A client given no band (0 Hz) sends nothing.  The configured
    ``cell.client_tx_power_w`` is not used: ``P_max`` is the cap.

    Raises
    ------
    ValueError
        For a parameter out of its range or set.
    """

    class Params(ParamsModel):
        p0_dbm: Annotated[float, NOMINAL_RX_POWER_DBM, Doc(
            "Target received power per RB ``P0 = P_O_PUSCH`` in dBm, in [-202, 24] (TS 38.331 ``p0-NominalWithGrant`` "
            "spans -202..24 dBm in steps of 2; a UE-specific integer offset adds to it).")] = -90.0
        # Float literals are not PEP 586 types, but pydantic reads them: the scenario schema gets the
        # enum and a wrong value is refused with the allowed set before any work.
        alpha: Annotated[Literal[0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], Doc(  # type: ignore[valid-type]
            "Path-loss compensation factor, one of 0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1 (TS 38.213 clause 7.1.1 / "
            "TS 38.331 ``Alpha``).")] = 1.0
        p_max_dbm: Annotated[float, CLIENT_MAX_POWER_DBM, Doc(
            "Maximum transmit power ``P_CMAX`` in dBm, in [-40, 40] (23 dBm: power class 3, TS 38.101-1).")] = 23.0
        subcarrier_spacing_hz: Annotated[float, SUBCARRIER_SPACING_HZ, Doc(
            "Subcarrier spacing ``15 x 2^mu`` kHz in Hz, one of 15, 30, 60, 120, 240 kHz (TS 38.211 Table 4.2-1): "
            "sets ``mu`` and the RB width.")] = 30000.0

        @field_validator("subcarrier_spacing_hz")
        @classmethod
        def _numerology(cls, value: float) -> float:
            if value not in _NR_SUBCARRIER_SPACINGS_HZ:
                raise ValueError(f"one of {', '.join(f'{s:g}' for s in _NR_SUBCARRIER_SPACINGS_HZ)} "
                                 f"(TS 38.211 Table 4.2-1)")
            return value

    params: Params

    def __repr__(self) -> str:
        p = self.params
        return (f"OpenLoopPowerControl(p0_dbm={p.p0_dbm!r}, alpha={float(p.alpha)!r}, p_max_dbm={p.p_max_dbm!r}, "
                f"subcarrier_spacing_hz={p.subcarrier_spacing_hz!r})")

    def tx_power_dbm(self, bandwidth_hz: Any, coupling_loss_db: Any,
                     channel_bandwidth_hz: float | None = None) -> np.ndarray:
        """``min(P_max, P0 + 10 log10(2^mu M_RB) + alpha PL)`` in dBm (``-inf`` on a 0 Hz share).

        Parameters
        ----------
        bandwidth_hz : float or array_like
            Each client's share in Hz, >= 0.
        coupling_loss_db : float or array_like
            Each client's path loss plus shadowing in dB (finite).
        channel_bandwidth_hz : float, optional
            The uplink band the shares are cut from, Hz (the cell gives it): ``M_RB`` counts the
            share's part of its TS 38.101-1 grid (:func:`resource_blocks`).

        Returns
        -------
        numpy.ndarray
            Transmit power in dBm, broadcast shape.
        """
        p = self.params
        rbs = resource_blocks(bandwidth_hz, p.subcarrier_spacing_hz, channel_bandwidth_hz)
        pl = check_array("coupling_loss_db", coupling_loss_db)
        with np.errstate(divide="ignore"):
            wanted = p.p0_dbm + 10.0 * np.log10(2.0 ** numerology(p.subcarrier_spacing_hz) * rbs) \
                + float(p.alpha) * pl
        return np.minimum(p.p_max_dbm, wanted)

    def headroom_rbs(self, coupling_loss_db: Any) -> np.ndarray:
        """The most resource blocks each client can send on at its nominal power: the largest
        ``M_RB >= 1`` whose Type-1 power headroom is not negative (TS 38.213 clause 7.7.1:
        ``PH = P_CMAX - (P0 + 10 log10(2^mu M_RB) + alpha PL)`` with ``Delta_TF = f = 0``, as in
        :meth:`tx_power_dbm`), ``floor(10^((P_max - P0 - alpha PL) / 10) / 2^mu)``; 1 for a client
        that is power-limited on one RB already.  On more RBs its power stays at ``P_max`` and
        its power per RB falls.

        Parameters
        ----------
        coupling_loss_db : float or array_like
            Each client's path loss plus shadowing in dB (finite).

        Returns
        -------
        numpy.ndarray
            RBs (int64, >= 1), same shape (at most 2^31: no grid is near it).
        """
        p = self.params
        pl = check_array("coupling_loss_db", coupling_loss_db)
        spare_db = p.p_max_dbm - p.p0_dbm - float(p.alpha) * pl
        rbs = 10.0 ** (np.minimum(spare_db, 100.0) / 10.0) / 2.0 ** numerology(p.subcarrier_spacing_hz)
        # a headroom of exactly 0 dB counts (PH >= 0); 1e-9 keeps a rounding below the integer in
        return np.clip(np.floor(rbs * (1.0 + 1e-9)), 1.0, 2.0 ** 31).astype(np.int64)

    def tx_power_w(self, nominal_tx_power_w: Any, bandwidth_hz: Any, coupling_loss_db: Any,
                   channel_bandwidth_hz: float | None = None) -> np.ndarray:
        """Transmit power in W (0 on a 0 Hz share); ``nominal_tx_power_w`` only sets the shape.

        Parameters
        ----------
        nominal_tx_power_w : float or array_like
            Configured power in W (not used by this model beyond broadcasting).
        bandwidth_hz, coupling_loss_db, channel_bandwidth_hz
            As for :meth:`tx_power_dbm`.

        Returns
        -------
        numpy.ndarray
            Transmit power in W, broadcast shape.
        """
        dbm = self.tx_power_dbm(bandwidth_hz, coupling_loss_db, channel_bandwidth_hz)
        shape = np.broadcast_shapes(np.shape(nominal_tx_power_w), dbm.shape)
        return np.array(np.broadcast_to(10.0 ** ((dbm - 30.0) / 10.0), shape), dtype=float)


#: NR numerologies mu = 0..4: 15 x 2^mu kHz (TS 38.211 Table 4.2-1).
_NR_SUBCARRIER_SPACINGS_HZ = (15e3, 30e3, 60e3, 120e3, 240e3)
