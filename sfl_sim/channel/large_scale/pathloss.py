"""Distance-dependent path-loss models.

Protocol
--------
A path-loss model is any object with ``loss_db(distance_m) -> ndarray`` (same shape as the
input, loss in dB, positive = attenuation; ``distance_m`` is the 2-D ground distance from the
base station); register new ones in :data:`PATHLOSS`.  Optional methods the :class:`~sfl_sim.channel.Cell`
uses when present:

``shadowing_sigma_db(los) -> ndarray``
    The model's own shadow-fading standard deviation in dB per client (``los`` is the bool LOS
    state per client, or None for models without LOS), used by shadowing ``sigma_db: model``.
``shadowing_decorrelation_m(los) -> ndarray``
    The model's shadowing decorrelation distance in metres, used by ``correlated`` shadowing.
``los_probability(distance_m) -> ndarray``
    Makes the model *LOS-aware*: the Cell then draws a LOS state per client from its own LOS
    stream (``los_rng``) and calls ``loss_db(distance_m, los=state)`` with a bool array.  See
    :mod:`sfl_sim.channel.large_scale.tr38901`.
``valid_distance_m: (low_m, high_m)``
    The 2-D distances the model is valid for (closed; ``high_m`` may be ``inf``).  The Cell warns
    (or, with ``out_of_range="error"``, refuses) when clients fall outside.

Models without the optional members keep working unchanged (``loss_db(distance_m)`` only); the
protocols are in :mod:`sfl_sim.channel.protocols`.
"""
from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from sfl_sim.channel.large_scale.tables import TR36814_MACRO
from sfl_sim.channel.limits import (
    CARRIER_FREQUENCY_HZ,
    CLIENT_DISTANCE_M,
    DECORRELATION_M,
    PATHLOSS_EXPONENT,
    SHADOWING_SIGMA_DB,
)
from sfl_sim.channel.protocols import PathLoss
from sfl_sim.kit.checks import check_array
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, Field, ParamsModel
from sfl_sim.kit.registry import Registry

__all__ = ["PATHLOSS", "TR36814Macro", "FreeSpace", "LogDistance", "SPEED_OF_LIGHT_M_PER_S"]

#: Speed of light in vacuum, m/s (exact).
SPEED_OF_LIGHT_M_PER_S = 299_792_458.0

PATHLOSS = Registry("pathloss", protocol=PathLoss)


@PATHLOSS.register("tr36814_macro")
class TR36814Macro(Component):
    """3GPP TR 36.814 macro-cell path loss: ``128.1 + 37.6 log10(d_km)`` dB.

    No parameters; the model is defined for the 2 GHz carrier of the 3GPP evaluation setup.
    Its shadowing (TR 36.814 Table A.2.1.1.2-3, macro) has a standard deviation of 8 dB and a
    decorrelation distance of 50 m.

    Valid from 35 m (``valid_distance_m``): the TR 36.814 system-simulation baseline (Annex
    A.2.1.1, as TR 25.814 before it) keeps every UE at least 35 m from the cell.  Closer in, the
    formula drops below free-space loss (52.9 dB at 10 m against Friis' 58.5 dB at 2 GHz).  No upper
    bound is stated.
    """

    intercept_db = TR36814_MACRO.intercept_db
    slope_db_per_decade = TR36814_MACRO.slope_db_per_decade
    sigma_db = TR36814_MACRO.shadowing_sigma_db
    decorrelation_m = TR36814_MACRO.shadowing_decorrelation_m
    #: 2-D distances the model is valid for, metres (closed interval).
    valid_distance_m = TR36814_MACRO.valid_distance_m

    def shadowing_sigma_db(self, los: Any = None) -> np.ndarray:
        """Shadowing standard deviation, 8 dB for every client (``los`` is ignored)."""
        return _per_client(self.sigma_db, los)

    def shadowing_decorrelation_m(self, los: Any = None) -> np.ndarray:
        """Shadowing decorrelation distance, 50 m for every client (``los`` is ignored)."""
        return _per_client(self.decorrelation_m, los)


    def loss_db(self, distance_m: Any) -> np.ndarray:
        """Path loss at each distance.

        Parameters
        ----------
        distance_m : float or array_like
            Distance(s) in metres, each > 0 (log of 0 is undefined).

        Returns
        -------
        numpy.ndarray
            Path loss in dB, same shape as ``distance_m``.

        Raises
        ------
        ValueError
            If any distance is <= 0 or non-finite.
        """
        d_m = check_array("distance_m", distance_m, minimum=0.0, strict=True)
        # The 3GPP formula takes the distance in kilometres.
        return self.intercept_db + self.slope_db_per_decade * np.log10(d_m / 1000.0)


def _per_client(value: float, los: Any) -> np.ndarray:
    """``value`` as an array shaped like ``los`` (a 0-d array when ``los`` is None)."""
    if los is None:
        return np.asarray(float(value))
    return np.full(np.shape(los), float(value))


@PATHLOSS.register("free_space")
class FreeSpace(Component):
    """Friis free-space path loss ``20 log10(4 pi d f_c / c)`` dB.

    Notes
    -----
    The loss is below 0 dB (a gain) for ``d < c / (4 pi f_c)`` (1.2 cm at 2 GHz); Friis' formula
    is a far-field result, so ``valid_distance_m`` starts at one wavelength ``c / f_c`` (15 cm at
    2 GHz).  No shadowing of its own: ``shadowing_sigma_db`` is 0 dB.
    """

    class Params(ParamsModel):
        carrier_frequency_hz: Annotated[float, CARRIER_FREQUENCY_HZ, Doc("Carrier frequency in Hz, > 0.")] = 2.0e9

    params: Params

    @property
    def valid_distance_m(self) -> tuple:
        """``(wavelength, inf)`` in metres: the far field."""
        return (SPEED_OF_LIGHT_M_PER_S / self.params.carrier_frequency_hz, float("inf"))

    def loss_db(self, distance_m: Any) -> np.ndarray:
        """Free-space loss at each distance.

        Parameters
        ----------
        distance_m : float or array_like
            Distance(s) in metres, each > 0.

        Returns
        -------
        numpy.ndarray
            Path loss in dB, same shape as ``distance_m``.
        """
        d_m = check_array("distance_m", distance_m, minimum=0.0, strict=True)
        return 20.0 * np.log10(4.0 * np.pi * d_m * self.params.carrier_frequency_hz / SPEED_OF_LIGHT_M_PER_S)

    def shadowing_sigma_db(self, los: Any = None) -> np.ndarray:
        """0 dB: free space has no shadowing."""
        return _per_client(0.0, los)

    def shadowing_decorrelation_m(self, los: Any = None) -> np.ndarray:
        """50 m (irrelevant while sigma is 0; given so correlated shadowing can run)."""
        return _per_client(50.0, los)


@PATHLOSS.register("log_distance")
class LogDistance(Component):
    """Log-distance path loss ``PL(d0) + 10 n log10(d / d0)`` dB.

    Attributes
    ----------
    reference_loss_db : float
        The loss at ``d0`` in use: the parameter, else free space at ``d0``.

    Raises
    ------
    ValueError
        For a parameter out of its range.

    Notes
    -----
    ``valid_distance_m`` is ``(reference_distance_m, inf)``: the model extrapolates from ``d0``
    outwards only.
    """

    class Params(ParamsModel):
        exponent: Annotated[float, PATHLOSS_EXPONENT, Doc(
            "Path-loss exponent ``n``, > 0 (2 = free space, 2.7-3.5 urban, 4 dense urban).")] = 3.0
        reference_distance_m: Annotated[float, CLIENT_DISTANCE_M, Doc(
            "Reference distance ``d0`` in metres, > 0.")] = 1.0
        reference_loss_db: Annotated[Annotated[float, Field(allow_inf_nan=False)] | None, Doc(
            "Loss at ``d0`` in dB; null takes the free-space loss at ``d0`` and ``carrier_frequency_hz``.")] = None
        carrier_frequency_hz: Annotated[float, CARRIER_FREQUENCY_HZ, Doc(
            "Carrier in Hz, > 0; used only when ``reference_loss_db`` is null.")] = 2.0e9
        shadowing_sigma_db: Annotated[float, SHADOWING_SIGMA_DB, Doc(
            "The model's shadowing standard deviation in dB, >= 0 (used by ``sigma_db: model``).")] = 0.0
        shadowing_decorrelation_m: Annotated[float, DECORRELATION_M, Doc(
            "The model's shadowing decorrelation distance in metres, > 0.")] = 50.0

    params: Params

    def __post_init__(self) -> None:
        p = self.params
        self.reference_loss_db = (
            float(FreeSpace(p.carrier_frequency_hz).loss_db(p.reference_distance_m)) if p.reference_loss_db is None
            else p.reference_loss_db)

    @property
    def valid_distance_m(self) -> tuple:
        """``(reference_distance_m, inf)`` in metres."""
        return (self.params.reference_distance_m, float("inf"))

    def __repr__(self) -> str:
        p = self.params
        return (f"LogDistance(exponent={p.exponent!r}, reference_distance_m={p.reference_distance_m!r}, "
                f"reference_loss_db={self.reference_loss_db!r})")

    def loss_db(self, distance_m: Any) -> np.ndarray:
        """Loss at each distance.

        Parameters
        ----------
        distance_m : float or array_like
            Distance(s) in metres, each > 0.

        Returns
        -------
        numpy.ndarray
            Path loss in dB, same shape as ``distance_m``.
        """
        d_m = check_array("distance_m", distance_m, minimum=0.0, strict=True)
        return self.reference_loss_db + 10.0 * self.params.exponent * np.log10(d_m / self.params.reference_distance_m)

    def shadowing_sigma_db(self, los: Any = None) -> np.ndarray:
        """``shadowing_sigma_db`` for every client."""
        return _per_client(self.params.shadowing_sigma_db, los)

    def shadowing_decorrelation_m(self, los: Any = None) -> np.ndarray:
        """``shadowing_decorrelation_m`` for every client."""
        return _per_client(self.params.shadowing_decorrelation_m, los)
