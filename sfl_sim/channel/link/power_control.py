"""Uplink power control: the transmit power each client uses on the share it is given.

A power-control model is any object with
``tx_power_w(nominal_tx_power_w, bandwidth_hz, coupling_loss_db) -> ndarray`` (W) that broadcasts
its arguments elementwise (:class:`sfl_sim.channel.protocols.PowerControl`); register new ones in
:data:`POWER_CONTROL`.  The cell calls it for every uplink link it computes (also on the candidate
shares a link-aware allocator tries), with the clients' configured power (``cell.client_tx_power_w``),
their bandwidth and their coupling loss (path loss plus shadowing: the long-term loss a terminal
estimates from the downlink reference signals; small-scale fading is not compensated).

- ``fixed``: :class:`FixedPower`, every client sends at its configured power (the default).
- ``open_loop``: :class:`OpenLoopPowerControl`, 3GPP TS 38.213 clause 7.1.1 open loop.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np

from sfl_sim.channel.limits import CLIENT_MAX_POWER_DBM, NOMINAL_RX_POWER_DBM, SUBCARRIER_SPACING_HZ
from sfl_sim.channel.protocols import PowerControl
from sfl_sim.kit.checks import check_array
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel, field_validator
from sfl_sim.kit.registry import Registry

__all__ = ["POWER_CONTROL", "FixedPower", "OpenLoopPowerControl", "PATHLOSS_COMPENSATION_FACTORS",
           "SUBCARRIERS_PER_RB", "resource_blocks"]

POWER_CONTROL = Registry("power_control", protocol=PowerControl)

#: The fractional path-loss compensation factors ``alpha`` TS 38.213 allows
#: (``msg3-Alpha`` / ``p0-PUSCH-AlphaSet`` ``alpha`` in TS 38.331: alpha0, alpha04, ..., alpha1).
PATHLOSS_COMPENSATION_FACTORS: tuple[float, ...] = (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: Subcarriers in one NR resource block (TS 38.211 clause 4.4.4.1, ``N_sc^RB = 12``).
SUBCARRIERS_PER_RB = 12


def resource_blocks(bandwidth_hz: Any, subcarrier_spacing_hz: float) -> np.ndarray:
    """Resource blocks ``M_RB = ceil(b / (12 x SCS))`` a share of ``b`` Hz occupies (0 on 0 Hz).

    A share that is not a whole number of blocks is counted by the blocks it touches, as Sionna's
    ``open_loop_uplink_power_control`` counts ``ceil(subcarriers / 12)``.  The relative tolerance
    of 1e-9 keeps a share of exactly ``m`` blocks, computed in floating point, at ``m``.

    Parameters
    ----------
    bandwidth_hz : float or array_like
        Bandwidth of each share in Hz, >= 0.
    subcarrier_spacing_hz : float
        NR subcarrier spacing in Hz (15, 30, 60, 120 kHz; TS 38.211 Table 4.2-1).

    Returns
    -------
    numpy.ndarray
        Number of resource blocks (float, integral values), same shape.
    """
    b = check_array("bandwidth_hz", bandwidth_hz, minimum=0.0)
    return np.ceil(b / (SUBCARRIERS_PER_RB * subcarrier_spacing_hz) * (1.0 - 1e-9))


@POWER_CONTROL.register("fixed")
class FixedPower(Component):
    """Every client sends at its configured power (``cell.client_tx_power_w``), whatever its share."""

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
        shape = np.broadcast_shapes(p.shape, np.shape(bandwidth_hz), np.shape(coupling_loss_db))
        return np.array(np.broadcast_to(p, shape), dtype=float)


@POWER_CONTROL.register("open_loop")
class OpenLoopPowerControl(Component):
    """Open-loop fractional uplink power control of 3GPP TS 38.213 clause 7.1.1 (PUSCH).

    ``P = min(P_max, P0 + 10 log10(M_RB) + alpha PL)`` in dBm, with ``M_RB`` the resource blocks
    of the client's share (:func:`resource_blocks`), ``PL`` its coupling loss in dB (path loss
    plus shadowing) and ``alpha`` the fractional path-loss compensation.  This is TS 38.213
    eq. (7.1.1) for ``P_PUSCH`` with ``P_O_PUSCH = P0``, ``mu`` folded into ``M_RB`` (the RBs of the
    numerology in use), and the transport-format and closed-loop terms ``Delta_TF = f = 0``
    (open loop only); Sionna SYS's ``open_loop_uplink_power_control`` is the same formula.
    ``P_max`` is ``P_CMAX``: 23 dBm for a power class 3 handset (TS 38.101-1 Table 6.2.1-1,
    the default).  With ``alpha = 1`` the power received per RB is ``P0`` until ``P_max``
    caps it; smaller ``alpha`` lets cell-edge clients arrive weaker (less interference to the
    neighbouring cells).  A client given no band (0 Hz) sends nothing.  The configured
    ``cell.client_tx_power_w`` is not used: ``P_max`` is the cap.

    Raises
    ------
    ValueError
        For a parameter out of its range or set.
    """

    class Params(ParamsModel):
        p0_dbm: Annotated[float, NOMINAL_RX_POWER_DBM, Doc(
            "Target received power per RB ``P0`` in dBm, in [-202, 24] (TS 38.331 ``p0-NominalWithGrant`` spans "
            "-202..24 dBm).")] = -90.0
        # Float literals are not PEP 586 types, but pydantic reads them: the scenario schema gets the
        # enum and a wrong value is refused with the allowed set before any work.
        alpha: Annotated[Literal[0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], Doc(  # type: ignore[valid-type]
            "Path-loss compensation factor, one of 0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1 (TS 38.213 clause 7.1.1 / "
            "TS 38.331 ``Alpha``).")] = 1.0
        p_max_dbm: Annotated[float, CLIENT_MAX_POWER_DBM, Doc(
            "Maximum transmit power ``P_CMAX`` in dBm, in [-40, 40] (23 dBm: power class 3, TS 38.101-1).")] = 23.0
        subcarrier_spacing_hz: Annotated[float, SUBCARRIER_SPACING_HZ, Doc(
            "Subcarrier spacing in Hz, one of 15, 30, 60, 120, 240 kHz (TS 38.211 Table 4.2-1).")] = 30000.0

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

    def tx_power_dbm(self, bandwidth_hz: Any, coupling_loss_db: Any) -> np.ndarray:
        """``min(P_max, P0 + 10 log10(M_RB) + alpha PL)`` in dBm (``-inf`` on a 0 Hz share).

        Parameters
        ----------
        bandwidth_hz : float or array_like
            Each client's share in Hz, >= 0.
        coupling_loss_db : float or array_like
            Each client's path loss plus shadowing in dB (finite).

        Returns
        -------
        numpy.ndarray
            Transmit power in dBm, broadcast shape.
        """
        rbs = resource_blocks(bandwidth_hz, self.params.subcarrier_spacing_hz)
        pl = check_array("coupling_loss_db", coupling_loss_db)
        with np.errstate(divide="ignore"):
            wanted = self.params.p0_dbm + 10.0 * np.log10(rbs) + float(self.params.alpha) * pl
        return np.minimum(self.params.p_max_dbm, wanted)

    def tx_power_w(self, nominal_tx_power_w: Any, bandwidth_hz: Any, coupling_loss_db: Any) -> np.ndarray:
        """Transmit power in W (0 on a 0 Hz share); ``nominal_tx_power_w`` only sets the shape.

        Parameters
        ----------
        nominal_tx_power_w : float or array_like
            Configured power in W (not used by this model beyond broadcasting).
        bandwidth_hz, coupling_loss_db : float or array_like
            As for :meth:`tx_power_dbm`.

        Returns
        -------
        numpy.ndarray
            Transmit power in W, broadcast shape.
        """
        dbm = self.tx_power_dbm(bandwidth_hz, coupling_loss_db)
        shape = np.broadcast_shapes(np.shape(nominal_tx_power_w), dbm.shape)
        return np.array(np.broadcast_to(10.0 ** ((dbm - 30.0) / 10.0), shape), dtype=float)


#: NR numerologies mu = 0..4: 15 x 2^mu kHz (TS 38.211 Table 4.2-1).
_NR_SUBCARRIER_SPACINGS_HZ = (15e3, 30e3, 60e3, 120e3, 240e3)
