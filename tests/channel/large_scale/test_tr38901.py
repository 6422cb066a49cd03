"""TR 38.901 UMa / UMi against the equations of Table 7.4.1-1 and 7.4.2-1, evaluated by hand."""
import math

import numpy as np
import pytest

from sfl_sim.channel import PATHLOSS, FreeSpace, LogDistance, TR38901UMa, TR38901UMi

FC_GHZ = 3.5


def d3(d2, h_bs, h_ut):
    return math.sqrt(d2**2 + (h_bs - h_ut) ** 2)


# ---------------------------------------------------------------------- UMa, f_c = 3.5 GHz, h_BS = 25 m, h_UT = 1.5 m
# d'_BP = 4 (25 - 1)(1.5 - 1) 3.5e9 / 3e8 = 4 * 24 * 0.5 * 11.6667 = 560 m
UMA_BP_M = 4 * 24 * 0.5 * 3.5e9 / 3e8


def test_uma_breakpoint_is_560_m():
    assert pytest.approx(560.0) == UMA_BP_M
    assert TR38901UMa().breakpoint_m == pytest.approx(560.0)


def test_uma_los_before_breakpoint_by_hand():
    # d_2D = 100 m: d_3D = sqrt(100^2 + 23.5^2) = 102.7242 m
    # PL1 = 28 + 22 log10(102.7242) + 20 log10(3.5) = 28 + 44.2568 + 10.8814 = 83.1382 dB
    pl1 = 28.0 + 22 * math.log10(d3(100, 25, 1.5)) + 20 * math.log10(FC_GHZ)
    assert pl1 == pytest.approx(83.1382, abs=1e-3)
    assert TR38901UMa(los="los").loss_db(100.0) == pytest.approx(pl1, rel=1e-12)


def test_uma_los_after_breakpoint_by_hand():
    # d_2D = 1000 m > 560 m: d_3D = 1000.2761 m
    # PL2 = 28 + 40 log10(1000.2761) + 10.8814 - 9 log10(560^2 + 23.5^2)
    #     = 28 + 120.0048 + 10.8814 - 9 * 5.497141 = 109.4119 dB
    pl2 = (28.0 + 40 * math.log10(d3(1000, 25, 1.5)) + 20 * math.log10(FC_GHZ)
           - 9 * math.log10(UMA_BP_M**2 + 23.5**2))
    assert pl2 == pytest.approx(109.4119, abs=1e-3)
    assert TR38901UMa(los="los").loss_db(1000.0) == pytest.approx(pl2, rel=1e-12)


def test_uma_los_is_continuous_at_the_breakpoint():
    model = TR38901UMa(los="los")
    below, above = model.loss_db([UMA_BP_M * (1 - 1e-9), UMA_BP_M * (1 + 1e-9)])
    assert below == pytest.approx(above, abs=1e-6)


@pytest.mark.parametrize("d2", [20.0, 100.0, 400.0, 700.0, 2000.0])
def test_uma_nlos_by_hand_both_sides_of_breakpoint(d2):
    # PL'_NLOS = 13.54 + 39.08 log10(d_3D) + 20 log10(f_c) - 0.6 (h_UT - 1.5); PL = max(PL_LOS, PL'_NLOS)
    d = d3(d2, 25, 1.5)
    if d2 <= UMA_BP_M:
        los = 28.0 + 22 * math.log10(d) + 20 * math.log10(FC_GHZ)
    else:
        los = 28.0 + 40 * math.log10(d) + 20 * math.log10(FC_GHZ) - 9 * math.log10(UMA_BP_M**2 + 23.5**2)
    nlos_prime = 13.54 + 39.08 * math.log10(d) + 20 * math.log10(FC_GHZ) - 0.6 * 0.0
    assert TR38901UMa(los="nlos").loss_db(d2) == pytest.approx(max(los, nlos_prime), rel=1e-12)


def test_uma_nlos_at_100_m_literal():
    # 13.54 + 39.08 * 2.011673 + 10.8814 = 13.54 + 78.6162 + 10.8814 = 103.0375 dB
    assert TR38901UMa(los="nlos").loss_db(100.0) == pytest.approx(103.0375, abs=1e-3)


def test_uma_nlos_height_correction():
    # h_UT = 11.5 m: PL' drops by 0.6 * 10 = 6 dB; also d_3D and d'_BP change.
    model = TR38901UMa(ut_height_m=11.5, los="nlos")
    d = d3(300, 25, 11.5)
    bp = 4 * 24 * 10.5 * 3.5e9 / 3e8  # 11760 m: 300 m is before the breakpoint
    los = 28.0 + 22 * math.log10(d) + 20 * math.log10(FC_GHZ)
    nlos_prime = 13.54 + 39.08 * math.log10(d) + 20 * math.log10(FC_GHZ) - 0.6 * 10.0
    assert model.breakpoint_m == pytest.approx(bp)
    assert model.loss_db(300.0) == pytest.approx(max(los, nlos_prime), rel=1e-12)


# ---------------------------------------------------------------------- UMi, f_c = 3.5 GHz, h_BS = 10 m, h_UT = 1.5 m
# d'_BP = 4 (10 - 1)(1.5 - 1) 3.5e9 / 3e8 = 210 m
UMI_BP_M = 4 * 9 * 0.5 * 3.5e9 / 3e8


def test_umi_breakpoint_is_210_m():
    assert pytest.approx(210.0) == UMI_BP_M
    assert TR38901UMi().breakpoint_m == pytest.approx(210.0)


@pytest.mark.parametrize("d2", [15.0, 100.0, 200.0, 300.0, 1500.0])
def test_umi_los_and_nlos_by_hand_both_sides_of_breakpoint(d2):
    d = d3(d2, 10, 1.5)
    if d2 <= UMI_BP_M:
        los = 32.4 + 21 * math.log10(d) + 20 * math.log10(FC_GHZ)
    else:
        los = 32.4 + 40 * math.log10(d) + 20 * math.log10(FC_GHZ) - 9.5 * math.log10(UMI_BP_M**2 + 8.5**2)
    nlos_prime = 22.4 + 35.3 * math.log10(d) + 21.3 * math.log10(FC_GHZ) - 0.3 * 0.0
    assert TR38901UMi(los="los").loss_db(d2) == pytest.approx(los, rel=1e-12)
    assert TR38901UMi(los="nlos").loss_db(d2) == pytest.approx(max(los, nlos_prime), rel=1e-12)


def test_umi_literals():
    # 100 m: d_3D = sqrt(10000 + 72.25) = 100.3601; log10 = 2.001561
    #   LOS  = 32.4 + 21 * 2.001561 + 10.8814 = 85.3142 dB
    #   NLOS = 22.4 + 35.3 * 2.001561 + 21.3 * 0.544068 = 22.4 + 70.6551 + 11.5886 = 104.6437 dB
    assert TR38901UMi(los="los").loss_db(100.0) == pytest.approx(85.3142, abs=1e-3)
    assert TR38901UMi(los="nlos").loss_db(100.0) == pytest.approx(104.6437, abs=1e-3)


def test_explicit_los_array_overrides_mode_and_broadcasts():
    model = TR38901UMi(los="stochastic")
    d = np.array([50.0, 50.0, 400.0])
    out = model.loss_db(d, los=np.array([True, False, True]))
    np.testing.assert_allclose(out, [model.loss_los_db(50.0), model.loss_nlos_db(50.0), model.loss_los_db(400.0)])


def test_stochastic_without_los_state_raises():
    with pytest.raises(ValueError, match="sample_los"):
        TR38901UMa().loss_db(100.0)


# ---------------------------------------------------------------------- LOS probability, Table 7.4.2-1
def test_umi_los_probability_by_hand():
    # d <= 18 m: 1.  d = 50 m: 18/50 + exp(-50/36)(1 - 18/50) = 0.36 + 0.249352 * 0.64 = 0.519585
    p = TR38901UMi().los_probability([10.0, 18.0, 50.0, 200.0])
    assert p[0] == 1.0 and p[1] == 1.0
    assert p[2] == pytest.approx(0.36 + math.exp(-50 / 36) * 0.64, rel=1e-12)
    assert p[2] == pytest.approx(0.519585, abs=1e-6)
    assert p[3] == pytest.approx(18 / 200 + math.exp(-200 / 36) * (1 - 18 / 200), rel=1e-12)


def test_uma_los_probability_by_hand():
    # h_UT = 1.5 m (C' = 0): d = 50 m: 0.36 + exp(-50/63) * 0.64 = 0.36 + 0.452191 * 0.64 = 0.649402
    p = TR38901UMa().los_probability([18.0, 50.0])
    assert p[0] == 1.0
    assert p[1] == pytest.approx(0.649402, abs=1e-6)
    # h_UT = 20 m: C' = (7/10)^1.5 = 0.585662;
    # factor = 1 + 0.585662 * 5/4 * (50/100)^3 * exp(-50/150) = 1 + 0.065570 = 1.065570
    #   -> 0.649402 * 1.065570 = 0.691983
    c = 0.7**1.5
    factor = 1 + c * 1.25 * 0.5**3 * math.exp(-50 / 150)
    expected = (18 / 50 + math.exp(-50 / 63) * (1 - 18 / 50)) * factor
    assert TR38901UMa(ut_height_m=20.0).los_probability(50.0) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.691983, abs=1e-5)


def test_fixed_modes_give_probability_one_or_zero():
    np.testing.assert_array_equal(TR38901UMa(los="los").los_probability([30.0, 300.0]), [1.0, 1.0])
    np.testing.assert_array_equal(TR38901UMa(los="nlos").los_probability([30.0, 300.0]), [0.0, 0.0])


def test_sample_los_frequency_matches_probability_and_is_seeded():
    model = TR38901UMi()
    d = np.full(20000, 50.0)
    los = model.sample_los(d, np.random.default_rng(0))
    assert los.dtype == bool
    assert los.mean() == pytest.approx(0.519585, abs=0.015)
    np.testing.assert_array_equal(los, model.sample_los(d, np.random.default_rng(0)))


def test_shadowing_parameters_per_state():
    los = np.array([True, False])
    np.testing.assert_array_equal(TR38901UMa().shadowing_sigma_db(los), [4.0, 6.0])
    np.testing.assert_array_equal(TR38901UMi().shadowing_sigma_db(los), [4.0, 7.82])
    np.testing.assert_array_equal(TR38901UMa().shadowing_decorrelation_m(los), [37.0, 50.0])
    np.testing.assert_array_equal(TR38901UMi().shadowing_decorrelation_m(los), [10.0, 13.0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"carrier_frequency_hz": 0.1e9}, r"carrier_frequency_hz.*100000000"),
        ({"ut_height_m": 1.0}, "ut_height_m"),
        ({"ut_height_m": 30.0}, r"ut_height_m.*30"),
        ({"bs_height_m": -5.0}, "bs_height_m"),
        ({"los": "maybe"}, r"los: got 'maybe'.*stochastic"),
    ],
)
def test_bad_parameters_raise_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TR38901UMa(**kwargs)


def test_registered_names():
    assert isinstance(PATHLOSS.create("tr38901_uma", los="nlos"), TR38901UMa)
    assert isinstance(PATHLOSS.create("tr38901_umi", carrier_frequency_hz=28e9), TR38901UMi)
    assert {"free_space", "log_distance", "tr36814_macro"} <= set(PATHLOSS.names())


# ---------------------------------------------------------------------- free space, log distance
def test_free_space_by_hand():
    # 100 m at 2.4 GHz: 20 log10(4 pi 100 2.4e9 / 299792458) = 20 log10(10059.97) = 80.0521 dB
    # (the textbook 20 log10(d_km) + 20 log10(f_MHz) + 32.45 = -20 + 67.604 + 32.45 = 80.05)
    assert FreeSpace(2.4e9).loss_db(100.0) == pytest.approx(20 * math.log10(4 * math.pi * 100 * 2.4e9 / 299792458.0))
    assert FreeSpace(2.4e9).loss_db(100.0) == pytest.approx(80.05, abs=0.01)
    # Doubling the distance adds 20 log10(2) = 6.0206 dB.
    a, b = FreeSpace(2.4e9).loss_db([100.0, 200.0])
    assert b - a == pytest.approx(6.0206, abs=1e-4)


def test_log_distance_by_hand():
    # PL(100 m) = 40 + 10 * 3 * log10(100 / 1) = 100 dB
    model = LogDistance(exponent=3.0, reference_distance_m=1.0, reference_loss_db=40.0)
    assert model.loss_db(100.0) == pytest.approx(100.0)
    # Default reference loss is free space at d0: at d0 = 1 m, 2 GHz,
    # 20 log10(4 pi 2e9 / c) = 20 log10(83.8336) = 38.4684 dB
    assert LogDistance().reference_loss_db == pytest.approx(38.4684, abs=1e-4)


def test_log_distance_bad_exponent_raises():
    with pytest.raises(ValueError, match=r"exponent.*-2"):
        LogDistance(exponent=-2.0)
