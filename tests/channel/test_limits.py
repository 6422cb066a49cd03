"""Physical ranges of channel parameters (sfl_sim.channel.limits) and the components that use them."""
import math

import numpy as np
import pytest

from sfl_sim import channel
from sfl_sim.channel import limits
from sfl_sim.channel.limits import ALL_RANGES
from sfl_sim.kit.ranges import Range


def test_range_check_returns_float_inside_and_names_parameter_value_and_range_outside():
    assert limits.UPLINK_BANDWIDTH_HZ.check("cell.uplink_bandwidth_hz", 20_000_000) == 20e6
    with pytest.raises(ValueError) as info:
        limits.UPLINK_BANDWIDTH_HZ.check("cell.uplink_bandwidth_hz", 1e-300)
    message = str(info.value)
    assert message.startswith("cell.uplink_bandwidth_hz must be a finite number in [1, 1e+12] Hz, got 1e-300 (")
    assert "\n" not in message


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "20e6", True, None])
def test_range_refuses_non_finite_and_non_numbers(value):
    with pytest.raises(ValueError):
        limits.BANDWIDTH_HZ.check("b", value)


def test_open_lower_bound_excludes_it():
    assert str(limits.CELL_RADIUS_M) == "(0, 100000] m"
    with pytest.raises(ValueError):
        limits.CELL_RADIUS_M.check("radius_m", 0.0)
    assert limits.MIN_DISTANCE_M.check("min_distance_m", 0.0) == 0.0


def test_check_array_names_the_first_bad_entry():
    with pytest.raises(ValueError, match=r"tx_power_w\[2\] must be a finite number in .* got 1e\+308"):
        limits.CLIENT_TX_POWER_W.check_array("tx_power_w", [0.2, 0.1, 1e308])
    np.testing.assert_array_equal(limits.CLIENT_TX_POWER_W.check_array("p", [0.2, 1.0]), [0.2, 1.0])


def test_every_range_is_sane_and_has_a_reason():
    assert len(ALL_RANGES) >= 15
    for name, rng in ALL_RANGES.items():
        assert isinstance(rng, Range)
        assert rng.low < rng.high and not math.isnan(rng.low), name
        assert len(rng.reason) > 10, name
    # The values other code relies on.
    assert (limits.NOISE_PSD_DBM_PER_HZ.low, limits.NOISE_PSD_DBM_PER_HZ.high) == (-250.0, -50.0)
    assert limits.CLIENT_TX_POWER_W.high == 1e4 and limits.SERVER_TX_POWER_W.high == 1e6
    assert limits.CELL_RADIUS_M.high == 1e5


@pytest.mark.parametrize("build, match", [
    (lambda: channel.UniformDiscPlacement(radius_m=1e300), r"radius_m: got 1e\+300; allowed: a finite number"),
    (lambda: channel.UniformDiscPlacement(min_distance_m=1e300), r"min_distance_m: got 1e\+300; allowed: a finite"),
    (lambda: channel.FixedDistancePlacement([10.0, 1e300]), r"distances_m\[1\]"),
    (lambda: channel.FreeSpace(carrier_frequency_hz=1e300), "carrier_frequency_hz"),
    (lambda: channel.LogDistance(exponent=1e308), "exponent"),
    (lambda: channel.LogNormalShadowing(sigma_db=1e308), "sigma_db"),
    (lambda: channel.CorrelatedShadowing(decorrelation_m=1e300), "decorrelation_m"),
    (lambda: channel.RicianFading(k_factor_db=1e308), "k_factor_db"),
    (lambda: channel.NakagamiFading(m=1e300), r"m: got 1e\+300"),
    (lambda: channel.ShannonRate(noise_figure_db=1e308), "noise_figure_db"),
    (lambda: channel.RandomDirectionMobility(speed_m_per_s=1e300), "speed_m_per_s"),
    (lambda: channel.RandomWaypointMobility(speed_max_m_per_s=1e300), "speed_max_m_per_s"),
])
def test_components_refuse_physically_impossible_parameters(build, match):
    with pytest.raises(ValueError, match=match):
        build()
