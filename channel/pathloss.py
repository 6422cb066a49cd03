"""Distance-dependent path-loss models.

A path-loss model is any object with ``loss_db(distance_m) -> ndarray`` (same shape as the
input, loss in dB, positive = attenuation); register new ones in :data:`PATHLOSS`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import check_array
from .registry import Registry

__all__ = ["PATHLOSS", "TR36814Macro"]

PATHLOSS = Registry("pathloss")


@PATHLOSS.register("tr36814_macro")
class TR36814Macro:
    """3GPP TR 36.814 macro-cell path loss: ``128.1 + 37.6 log10(d_km)`` dB.

    No parameters; the model is defined for the 2 GHz carrier of the 3GPP evaluation setup.
    """

    intercept_db = 128.1
    slope_db_per_decade = 37.6

    def __repr__(self) -> str:
        return "TR36814Macro()"

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
