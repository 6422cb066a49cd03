"""3GPP TR 38.901 path loss: Urban Macro (UMa) and Urban Micro - Street Canyon (UMi).

Equations from TR 38.901 (v17) Table 7.4.1-1 (path loss), Table 7.4.2-1 (LOS probability),
Table 7.5-6 (shadow-fading decorrelation distances) and Table 7.6.3.1-2 (LOS-state correlation
distance); the numbers of each scenario are data, one row per scenario in
:mod:`sfl_sim.channel.large_scale.tables`.  ``f_c`` is in GHz inside the formulas, ``d_2D``/``d_3D``
in metres::

    d_3D   = sqrt(d_2D^2 + (h_BS - h_UT)^2)
    d'_BP  = 4 h'_BS h'_UT f_c[Hz] / c,   h' = h - h_E,  h_E = 1 m,  c = 3.0e8 m/s
    UMa LOS    PL1 = 28.0 + 22 log10(d_3D) + 20 log10(f_c)                  10 m <= d_2D <= d'_BP
               PL2 = 28.0 + 40 log10(d_3D) + 20 log10(f_c)
                     - 9 log10(d'_BP^2 + (h_BS - h_UT)^2)                    d'_BP <= d_2D <= 5 km
    UMa NLOS   PL  = max(PL_LOS, 13.54 + 39.08 log10(d_3D) + 20 log10(f_c) - 0.6 (h_UT - 1.5))
    UMi LOS    PL1 = 32.4 + 21 log10(d_3D) + 20 log10(f_c)
               PL2 = 32.4 + 40 log10(d_3D) + 20 log10(f_c) - 9.5 log10(d'_BP^2 + (h_BS - h_UT)^2)
    UMi NLOS   PL  = max(PL_LOS, 22.4 + 35.3 log10(d_3D) + 21.3 log10(f_c) - 0.3 (h_UT - 1.5))
    sigma_SF   UMa 4 dB LOS / 6 dB NLOS,  UMi 4 dB LOS / 7.82 dB NLOS
    Pr_LOS     UMi: 1 if d_2D <= 18 m, else 18/d + exp(-d/36) (1 - 18/d)
               UMa: 1 if d_2D <= 18 m, else [18/d + exp(-d/63) (1 - 18/d)]
                                             * [1 + C'(h_UT) 5/4 (d/100)^3 exp(-d/150)]
               C'(h_UT) = 0 for h_UT <= 13 m, ((h_UT - 13)/10)^1.5 for 13 m < h_UT <= 23 m

Effective environment height: 38.901 takes ``h_E = 1 m`` for UMi; for UMa ``h_E = 1 m`` with
probability ``1 / (1 + C(d_2D, h_UT))`` and otherwise a random height of buildings, where
``C = 0`` for ``h_UT < 13 m``.  These models always use ``h_E = 1 m`` — exact for terminals
below 13 m (the usual 1.5 m handset), a simplification above.

Validity: Table 7.4.1-1 gives every UMa and UMi formula for ``10 m <= d_2D <= 5 km``; that is
the models' ``valid_distance_m``, and the Cell warns (or refuses) when clients fall outside it.
The formulas are still applied as written there.  (The calibration layouts of Table 7.8-1 further
keep terminals at least 35 m (UMa) / 10 m (UMi) from the base station; that is a deployment
choice, the placement's ``min_distance_m``, not a limit of the formulas.)

LOS interface
-------------
``los`` is ``"stochastic"`` (each client's LOS state drawn with ``Pr_LOS``), ``"los"`` or
``"nlos"`` (every client in that state).  :meth:`los_probability` gives the probability under
the configured mode (1 or 0 for the fixed modes), :meth:`sample_los` draws a state from an rng,
and :meth:`loss_db` takes the state as ``los=`` (a bool array, True = LOS).  A
:class:`~sfl_sim.channel.Cell` draws the state itself from its own ``los_rng`` stream, so that changing
the LOS mode never moves the clients or the shadowing.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np

from sfl_sim.channel.large_scale.pathloss import PATHLOSS
from sfl_sim.channel.large_scale.tables import TR38901_UMA, TR38901_UMI, Tr38901Scenario
from sfl_sim.kit.checks import check_array
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel
from sfl_sim.kit.ranges import Range

__all__ = ["TR38901UMa", "TR38901UMi", "C_3GPP_M_PER_S", "ENVIRONMENT_HEIGHT_M"]

#: Speed of light as TR 38.901 writes it (3.0e8 m/s) for the breakpoint distance.
C_3GPP_M_PER_S = 3.0e8
#: Effective environment height h_E in metres.
ENVIRONMENT_HEIGHT_M = 1.0
#: The carrier frequencies TR 38.901's models are defined for.
TR38901_CARRIER_FREQUENCY_HZ = Range(0.5e9, 100e9, "the TR 38.901 range", "Hz")
#: A base-station or user antenna height (above h_E; the UT's upper bound depends on the scenario).
ANTENNA_HEIGHT_M = Range(ENVIRONMENT_HEIGHT_M, float("inf"), "> h_E = 1 m (the effective environment height)", "m",
                         low_open=True)

class _TR38901Base(Component):
    """Shared machinery of the 38.901 models; subclasses name their scenario's constants.

    Attributes
    ----------
    bs_height_m : float
        The base-station height in use: the parameter, else the scenario's (Table 7.4.1-1).
    breakpoint_m : float
        The LOS breakpoint distance d'_BP, metres.
    """

    #: The scenario's constants (:mod:`sfl_sim.channel.large_scale.tables`).
    constants: Tr38901Scenario

    class Params(ParamsModel):
        carrier_frequency_hz: Annotated[float, TR38901_CARRIER_FREQUENCY_HZ, Doc(
            "Carrier in Hz, in [0.5e9, 100e9].")] = 3.5e9
        bs_height_m: Annotated[Annotated[float, ANTENNA_HEIGHT_M] | None, Doc(
            "Base-station antenna height in metres, > 1; null: the scenario's (TR 38.901 Table 7.4.1-1: UMa 25 m, "
            "UMi 10 m).")] = None
        ut_height_m: Annotated[float, ANTENNA_HEIGHT_M, Doc(
            "Terminal height in metres, > 1 and at most the scenario's highest terminal (UMa 23 m, UMi 22.5 m).")] = \
            1.5
        los: Annotated[Literal["stochastic", "los", "nlos"], Doc("How each client's LOS state is set.")] = \
            "stochastic"

    params: Params

    @property
    def los_decorrelation_m(self) -> float:
        """LOS-state correlation distance (Table 7.6.3.1-2), used when clients move, metres."""
        return self.constants.los_decorrelation_m

    @property
    def valid_distance_m(self) -> tuple[float, float]:
        """2-D distances the path-loss formulas hold for (Table 7.4.1-1), metres."""
        return self.constants.valid_distance_m

    def __post_init__(self) -> None:
        p = self.params
        h_ut = p.ut_height_m
        if h_ut > self.constants.max_ut_height_m:
            raise ValueError(
                f"ut_height_m must be > {ENVIRONMENT_HEIGHT_M:g} m and <= {self.constants.max_ut_height_m:g} m "
                f"for {self.constants.name}, got {h_ut!r}"
            )
        h_bs = p.bs_height_m if p.bs_height_m is not None else self.constants.default_bs_height_m
        self.bs_height_m = h_bs
        self.breakpoint_m = (
            4.0 * (h_bs - ENVIRONMENT_HEIGHT_M) * (h_ut - ENVIRONMENT_HEIGHT_M) * p.carrier_frequency_hz
            / C_3GPP_M_PER_S
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(carrier_frequency_hz={self.params.carrier_frequency_hz!r}, "
            f"bs_height_m={self.bs_height_m!r}, ut_height_m={self.params.ut_height_m!r}, los={self.params.los!r})"
        )

    # ------------------------------------------------------------------ geometry
    def distance_3d_m(self, distance_m: Any) -> np.ndarray:
        """3-D distance ``sqrt(d_2D^2 + (h_BS - h_UT)^2)`` in metres, same shape as ``distance_m``."""
        d_2d = check_array("distance_m", distance_m, minimum=0.0, strict=True)
        return np.hypot(d_2d, self.bs_height_m - self.params.ut_height_m)

    # ------------------------------------------------------------------ path loss
    def loss_los_db(self, distance_m: Any) -> np.ndarray:
        """LOS path loss in dB at 2-D distance(s) ``distance_m`` (m, > 0); same shape."""
        d_2d = check_array("distance_m", distance_m, minimum=0.0, strict=True)
        d_3d = np.hypot(d_2d, self.bs_height_m - self.params.ut_height_m)
        fc_ghz = self.params.carrier_frequency_hz / 1e9
        a, b1, c1 = self.constants.los_db
        pl1 = a + b1 * np.log10(d_3d) + 20.0 * np.log10(fc_ghz)
        pl2 = (
            a + 40.0 * np.log10(d_3d) + 20.0 * np.log10(fc_ghz)
            - c1 * np.log10(self.breakpoint_m**2 + (self.bs_height_m - self.params.ut_height_m) ** 2)
        )
        return np.where(d_2d <= self.breakpoint_m, pl1, pl2)

    def loss_nlos_db(self, distance_m: Any) -> np.ndarray:
        """NLOS path loss ``max(PL_LOS, PL'_NLOS)`` in dB at 2-D distance(s) (m, > 0); same shape."""
        d_3d = self.distance_3d_m(distance_m)
        return np.maximum(self.loss_los_db(distance_m), self._nlos_prime_db(d_3d))

    def loss_db(self, distance_m: Any, los: Any = None) -> np.ndarray:
        """Path loss at each 2-D distance for a given LOS state.

        Parameters
        ----------
        distance_m : float or array_like
            2-D (ground) distance(s) from the base station in metres, each > 0.
        los : bool or array_like of bool, optional
            LOS state per distance (True = LOS), broadcast against ``distance_m``.  When omitted,
            the configured mode decides (``"los"`` or ``"nlos"``); for ``"stochastic"`` it must
            be given (draw it with :meth:`sample_los`).

        Returns
        -------
        numpy.ndarray
            Path loss in dB, the broadcast shape of ``distance_m`` and ``los``.

        Raises
        ------
        ValueError
            If a distance is <= 0, or ``los`` is omitted in ``"stochastic"`` mode.
        """
        if los is None:
            if self.params.los == "stochastic":
                raise ValueError(
                    f"los must be given (a bool array, True = LOS) when {type(self).__name__} has "
                    f"los='stochastic', got None; draw it with sample_los(distance_m, rng)"
                )
            los = self.params.los == "los"
        los_arr = np.asarray(los, dtype=bool)
        return np.where(los_arr, self.loss_los_db(distance_m), self.loss_nlos_db(distance_m))

    # ------------------------------------------------------------------ LOS state
    def los_probability(self, distance_m: Any) -> np.ndarray:
        """Probability of LOS at each 2-D distance under the configured ``los`` mode.

        Parameters
        ----------
        distance_m : float or array_like
            2-D distance(s) in metres, each > 0.

        Returns
        -------
        numpy.ndarray
            ``Pr_LOS`` of Table 7.4.2-1 in ``"stochastic"`` mode, all ones in ``"los"``, all
            zeros in ``"nlos"``; same shape as ``distance_m``.
        """
        d_2d = check_array("distance_m", distance_m, minimum=0.0, strict=True)
        if self.params.los == "los":
            return np.ones_like(d_2d)
        if self.params.los == "nlos":
            return np.zeros_like(d_2d)
        return self.los_probability_table(d_2d)

    def los_probability_table(self, distance_m: Any) -> np.ndarray:
        """``Pr_LOS`` of TR 38.901 Table 7.4.2-1 regardless of the mode; same shape as the input."""
        raise NotImplementedError

    def sample_los(self, distance_m: Any, rng: np.random.Generator) -> np.ndarray:
        """Draw a LOS state per distance: ``rng.random(n) < los_probability(distance_m)``.

        Parameters
        ----------
        distance_m : array_like, shape (n,)
            2-D distances in metres, each > 0.
        rng : numpy.random.Generator
            Source of the draws (one uniform per distance, in every mode).

        Returns
        -------
        numpy.ndarray of bool, shape (n,)
            True = LOS.
        """
        p = self.los_probability(distance_m)
        return rng.random(p.shape) < p

    # ------------------------------------------------------------------ shadowing parameters
    def shadowing_sigma_db(self, los: Any = None) -> np.ndarray:
        """Shadow-fading sigma in dB per client (LOS / NLOS values of Table 7.4.1-1).

        ``los`` None means the configured fixed mode (NLOS for ``"stochastic"``).
        """
        los_arr = self._los_or_mode(los)
        c = self.constants
        return np.where(los_arr, c.shadowing_sigma_los_db, c.shadowing_sigma_nlos_db).astype(float)

    def shadowing_decorrelation_m(self, los: Any = None) -> np.ndarray:
        """Shadow-fading decorrelation distance in metres per client (Table 7.5-6)."""
        los_arr = self._los_or_mode(los)
        c = self.constants
        return np.where(los_arr, c.shadowing_decorrelation_los_m, c.shadowing_decorrelation_nlos_m).astype(float)

    # ------------------------------------------------------------------ helpers
    def _los_or_mode(self, los: Any) -> np.ndarray:
        if los is None:
            return np.asarray(self.params.los == "los")
        return np.asarray(los, dtype=bool)

    def _nlos_prime_db(self, d_3d: np.ndarray) -> np.ndarray:
        """``PL'_NLOS`` of Table 7.4.1-1 in dB at 3-D distance(s) ``d_3d``."""
        a, b, c, d = self.constants.nlos_db
        fc_ghz = self.params.carrier_frequency_hz / 1e9
        return a + b * np.log10(d_3d) + c * np.log10(fc_ghz) - d * (self.params.ut_height_m - 1.5)


@PATHLOSS.register("tr38901_uma")
class TR38901UMa(_TR38901Base):
    """TR 38.901 Urban Macro path loss, LOS and NLOS (see the module docstring for the equations).

    Notes
    -----
    Shadowing sigma 4 dB (LOS) / 6 dB (NLOS); decorrelation 37 m (LOS) / 50 m (NLOS).
    """

    constants = TR38901_UMA

    def los_probability_table(self, distance_m: Any) -> np.ndarray:
        d = check_array("distance_m", distance_m, minimum=0.0, strict=True)
        h = self.params.ut_height_m
        c_prime = 0.0 if h <= 13.0 else ((h - 13.0) / 10.0) ** 1.5
        with np.errstate(over="ignore"):
            far = (18.0 / d + np.exp(-d / 63.0) * (1.0 - 18.0 / d)) * (
                1.0 + c_prime * 1.25 * (d / 100.0) ** 3 * np.exp(-d / 150.0)
            )
        return np.where(d <= 18.0, 1.0, np.minimum(far, 1.0))


@PATHLOSS.register("tr38901_umi")
class TR38901UMi(_TR38901Base):
    """TR 38.901 Urban Micro - Street Canyon path loss, LOS and NLOS (equations in the module docstring).

    Notes
    -----
    Shadowing sigma 4 dB (LOS) / 7.82 dB (NLOS); decorrelation 10 m (LOS) / 13 m (NLOS).
    """

    constants = TR38901_UMI

    def los_probability_table(self, distance_m: Any) -> np.ndarray:
        d = check_array("distance_m", distance_m, minimum=0.0, strict=True)
        return np.where(d <= 18.0, 1.0, 18.0 / d + np.exp(-d / 36.0) * (1.0 - 18.0 / d))
