"""The constants of the 3GPP large-scale scenarios, as data: one frozen row per scenario.

Each row holds what its path-loss model (:mod:`sfl_sim.channel.large_scale.pathloss`,
:mod:`sfl_sim.channel.large_scale.tr38901`) and the shadowing and LOS state coupled to it need:
antenna heights, path-loss coefficients, shadow-fading sigmas, decorrelation distances, the
distances the formulas hold for.  The formulas themselves stay in code next to their equations;
each field's comment names the table or clause it is read from.

Sources
-------
- 3GPP TR 38.901 (v17): Table 7.4.1-1 (path loss, shadow-fading sigma, heights, distances),
  Table 7.4.2-1 (LOS probability), Table 7.5-6 (shadow-fading decorrelation distances),
  Table 7.6.3.1-2 (LOS-state correlation distance).
- 3GPP TR 36.814: Annex A.2.1.1 (macro-cell path loss and the 35 m minimum distance of the
  system-simulation baseline), Table A.2.1.1.2-3 (macro shadowing: sigma, decorrelation).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Tr38901Scenario", "TR38901_UMA", "TR38901_UMI", "Tr36814Macro", "TR36814_MACRO"]


@dataclass(frozen=True)
class Tr38901Scenario:
    """The constants of one TR 38.901 scenario (see the module docstring for the tables).

    Path loss (Table 7.4.1-1; ``d_3D`` in m, ``f_c`` in GHz)::

        PL1      = a + b log10(d_3D) + 20 log10(f_c)                               los_db = (a, b, c)
        PL2      = a + 40 log10(d_3D) + 20 log10(f_c) - c log10(d'_BP^2 + (h_BS - h_UT)^2)
        PL'_NLOS = a + b log10(d_3D) + c log10(f_c) - d (h_UT - 1.5)               nlos_db = (a, b, c, d)

    Attributes
    ----------
    name : str
        The scenario as TR 38.901 names it.
    default_bs_height_m : float
        Base-station antenna height (Table 7.4.1-1).
    max_ut_height_m : float
        Highest terminal the model takes, metres.
    los_db : tuple of float
        ``(a, b, c)`` of the LOS formulas PL1 and PL2.
    nlos_db : tuple of float
        ``(a, b, c, d)`` of the NLOS formula PL'_NLOS.
    shadowing_sigma_los_db, shadowing_sigma_nlos_db : float
        Shadow-fading standard deviation in LOS / NLOS (Table 7.4.1-1).
    shadowing_decorrelation_los_m, shadowing_decorrelation_nlos_m : float
        Shadow-fading decorrelation distance in LOS / NLOS (Table 7.5-6).
    los_decorrelation_m : float
        Correlation distance of the LOS state, used when clients move (Table 7.6.3.1-2).
    valid_distance_m : tuple of float
        The 2-D distances the path-loss formulas hold for, closed (Table 7.4.1-1).
    """

    name: str
    default_bs_height_m: float
    max_ut_height_m: float
    los_db: tuple[float, float, float]
    nlos_db: tuple[float, float, float, float]
    shadowing_sigma_los_db: float
    shadowing_sigma_nlos_db: float
    shadowing_decorrelation_los_m: float
    shadowing_decorrelation_nlos_m: float
    los_decorrelation_m: float
    valid_distance_m: tuple[float, float]


#: TR 38.901 Urban Macro.
TR38901_UMA = Tr38901Scenario(
    name="UMa",
    default_bs_height_m=25.0,  # Table 7.4.1-1: h_BS = 25 m
    # Table 7.4.2-1 gives the UMa LOS probability's height term C'(h_UT) up to h_UT = 23 m.
    max_ut_height_m=23.0,
    los_db=(28.0, 22.0, 9.0),  # Table 7.4.1-1, UMa LOS
    nlos_db=(13.54, 39.08, 20.0, 0.6),  # Table 7.4.1-1, UMa NLOS
    shadowing_sigma_los_db=4.0,  # Table 7.4.1-1
    shadowing_sigma_nlos_db=6.0,  # Table 7.4.1-1
    shadowing_decorrelation_los_m=37.0,  # Table 7.5-6
    shadowing_decorrelation_nlos_m=50.0,  # Table 7.5-6
    los_decorrelation_m=50.0,  # Table 7.6.3.1-2
    valid_distance_m=(10.0, 5000.0),  # Table 7.4.1-1: 10 m <= d_2D <= 5 km
)

#: TR 38.901 Urban Micro - Street Canyon.
TR38901_UMI = Tr38901Scenario(
    name="UMi-Street Canyon",
    default_bs_height_m=10.0,  # Table 7.4.1-1: h_BS = 10 m
    max_ut_height_m=22.5,  # Table 7.4.1-1: 1.5 m <= h_UT <= 22.5 m
    los_db=(32.4, 21.0, 9.5),  # Table 7.4.1-1, UMi-Street Canyon LOS
    nlos_db=(22.4, 35.3, 21.3, 0.3),  # Table 7.4.1-1, UMi-Street Canyon NLOS
    shadowing_sigma_los_db=4.0,  # Table 7.4.1-1
    shadowing_sigma_nlos_db=7.82,  # Table 7.4.1-1
    shadowing_decorrelation_los_m=10.0,  # Table 7.5-6
    shadowing_decorrelation_nlos_m=13.0,  # Table 7.5-6
    los_decorrelation_m=50.0,  # Table 7.6.3.1-2
    valid_distance_m=(10.0, 5000.0),  # Table 7.4.1-1: 10 m <= d_2D <= 5 km
)


@dataclass(frozen=True)
class Tr36814Macro:
    """The constants of the TR 36.814 macro cell: ``PL = intercept + slope log10(d_km)`` dB.

    Attributes
    ----------
    intercept_db, slope_db_per_decade : float
        The path-loss formula's coefficients (Annex A.2.1.1).
    shadowing_sigma_db : float
        Shadowing standard deviation (Table A.2.1.1.2-3).
    shadowing_decorrelation_m : float
        Shadowing decorrelation distance (Table A.2.1.1.2-3).
    valid_distance_m : tuple of float
        From the baseline's minimum distance between a UE and its cell (Annex A.2.1.1, as TR
        25.814 before it) outwards; no upper bound is stated.
    """

    intercept_db: float
    slope_db_per_decade: float
    shadowing_sigma_db: float
    shadowing_decorrelation_m: float
    valid_distance_m: tuple[float, float]


#: TR 36.814 macro cell (the 2 GHz carrier of the 3GPP evaluation setup).
TR36814_MACRO = Tr36814Macro(
    intercept_db=128.1,  # Annex A.2.1.1
    slope_db_per_decade=37.6,  # Annex A.2.1.1
    shadowing_sigma_db=8.0,  # Table A.2.1.1.2-3, macro
    shadowing_decorrelation_m=50.0,  # Table A.2.1.1.2-3, macro
    valid_distance_m=(35.0, float("inf")),  # Annex A.2.1.1: UEs at least 35 m from the cell
)
