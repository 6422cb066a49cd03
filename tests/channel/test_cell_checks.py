"""The Cell refuses physically impossible parameters and non-finite results, and warns (or
refuses) when clients lie outside the path-loss model's validity range."""
import warnings

import numpy as np
import pytest

from sfl_sim.channel import (
    FixedDistancePlacement,
    RandomWaypointMobility,
    RayleighFading,
    StaticMobility,
    TR38901UMi,
    UniformDiscPlacement,
)
from sfl_sim.channel.cell import ModelValidityWarning
from sfl_sim.kit.protocols import ComponentProtocolError


# ---------------------------------------------------------------------- physical ranges
@pytest.mark.parametrize("field, value", [
    ("uplink_bandwidth_hz", 1e-300),
    ("uplink_bandwidth_hz", 1e300),
    ("downlink_bandwidth_hz", 1e-300),
    ("tx_power_w", 1e308),
    ("tx_power_w", 1e-30),
    ("server_tx_power_w", 1e308),
    ("noise_psd_dbm_per_hz", 1e6),
    ("noise_psd_dbm_per_hz", -1e6),
    ("radius_m", 1e300),
    ("min_distance_m", 1e300),
])
def test_cell_refuses_physically_impossible_parameters_naming_field_value_and_range(field, value, make_cell):
    with pytest.raises(ValueError) as info:
        make_cell(**{field: value})
    message = str(info.value)
    assert message.startswith(f"{field} must be a finite number in ")
    assert repr(value) in message and "\n" not in message


def test_per_client_power_names_the_client(make_cell):
    with pytest.raises(ValueError, match=r"tx_power_w\[1\] must be a finite number in \[1e-09, 10000\] W"):
        make_cell(tx_power_w=[0.2, 1e308, 0.2])


def test_placement_at_absurd_distance_is_refused(make_cell):
    class FarAway:
        def sample_positions_m(self, n_clients, rng):
            return np.full((n_clients, 2), 1e300)

    with pytest.raises(ValueError, match="placement .*FarAway.* client distance_m"):
        make_cell(placement=FarAway())


def test_cell_refuses_a_component_without_its_method(make_cell):
    class NotAPathLoss:
        def loss(self, distance_m):
            return distance_m

    with pytest.raises(ComponentProtocolError, match="Cell pathloss: .*NotAPathLoss lacks loss_db"):
        make_cell(pathloss=NotAPathLoss())


# ---------------------------------------------------------------------- non-finite results
class NanPathLoss:
    def loss_db(self, distance_m):
        return np.full(np.shape(distance_m), np.nan)


class HugeGainPathLoss:
    def loss_db(self, distance_m):
        return np.full(np.shape(distance_m), -1e5)


class InfShadowing:
    def sample_db(self, n_clients, rng):
        return np.full(n_clients, np.inf)


class InfRate:
    def rate_bps(self, bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz):
        return np.full(np.broadcast(bandwidth_hz, gain_linear).shape, np.inf)


class NanSnrRate(InfRate):
    def rate_bps(self, bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz):
        return np.ones(np.broadcast(bandwidth_hz, gain_linear).shape)

    def snr_linear(self, bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz):
        return np.full(np.broadcast(bandwidth_hz, gain_linear).shape, np.nan)


def test_non_finite_path_loss_names_the_model_and_the_quantity(make_cell):
    with pytest.raises(ValueError, match=r"pathloss .*NanPathLoss.* gave a path loss \(dB\) that is not finite"):
        make_cell(pathloss=NanPathLoss())


def test_overflowing_gain_names_both_components(make_cell):
    with pytest.raises(ValueError, match="channel gain of client 0 is inf .*HugeGainPathLoss.*NoShadowing"):
        make_cell(pathloss=HugeGainPathLoss())


def test_non_finite_shadowing_is_refused(make_cell):
    with pytest.raises(ValueError, match=r"shadowing .*InfShadowing.* gave a shadowing \(dB\)"):
        make_cell(shadowing=InfShadowing())


def test_infinite_rate_names_the_rate_model(make_cell):
    cell = make_cell(rate=InfRate())
    with pytest.raises(ValueError, match=r"rate .*InfRate.* gave a rate_bps that is not finite and >= 0"):
        cell.uplink_rates_bps([0, 1])
    with pytest.raises(ValueError, match="broadcast rate_bps"):
        cell.broadcast_rate_bps([0, 1])


def test_nan_snr_names_the_rate_model(make_cell):
    with pytest.raises(ValueError, match=r"rate .*NanSnrRate.* gave a SNR \(linear\)"):
        make_cell(rate=NanSnrRate()).uplink_link([0])


def test_infinite_snr_on_a_zero_share_is_allowed(make_cell):
    link = make_cell().uplink_link_at_bandwidth([0, 1], [0.0, 1e6])
    assert np.isinf(link.snr_db[0]) and link.rate_bps[0] == 0.0


def test_infinite_fading_gain_is_refused(make_cell):
    class InfFading:
        def sample_power_gain(self, n, rng):
            return np.full(n, np.inf)

    cell = make_cell(fading=InfFading())
    with pytest.raises(ValueError, match="finite gains"):
        cell.sample_fading([0], np.random.default_rng(0))


def test_non_finite_mobility_positions_are_refused(make_cell):
    class Teleport:
        def step(self, positions_m, dt_s, rng, radius_m=None, min_distance_m=None):
            return np.full(np.shape(positions_m), np.nan)

    cell = make_cell(mobility=Teleport(), out_of_range="error", placement=FixedDistancePlacement([40.0, 50.0, 60.0]),
                     min_distance_m=35.0)
    with pytest.raises(ValueError, match=r"mobility .*Teleport.* gave a position \(m\) that is not finite"):
        cell.move(1.0, np.random.default_rng(0))


# ---------------------------------------------------------------------- validity range
def test_clients_closer_than_the_model_allows_give_one_clear_warning(make_cell):
    with pytest.warns(ModelValidityWarning) as record:
        make_cell(placement=FixedDistancePlacement([10.0, 20.0, 300.0]))
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith("2 of 3 clients are placed at 10 m to 20 m, outside the valid distance range "
                              "[35, inf] m of pathloss TR36814Macro(); set min_distance_m >= 35")
    assert "\n" not in message


def test_out_of_range_error_refuses(make_cell):
    with pytest.raises(ValueError, match="1 of 3 clients are placed at 10 m, outside"):
        make_cell(placement=FixedDistancePlacement([10.0, 200.0, 300.0]), out_of_range="error")


def test_clients_beyond_the_upper_bound_name_radius(make_cell):
    with pytest.raises(ValueError,
                       match=r"at 6000 m, outside the valid distance range \[10, 5000\] m.*radius_m <= 5000"):
        make_cell(placement=FixedDistancePlacement([50.0, 200.0, 6000.0]), pathloss=TR38901UMi(los="los"),
                  out_of_range="error")


def test_no_warning_inside_the_range(make_cell):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_cell(placement=UniformDiscPlacement(500.0, 35.0), n_clients=50,
                  mobility=RandomWaypointMobility(), out_of_range="error")


def test_mobility_annulus_outside_the_range_is_caught_at_construction(make_cell):
    with pytest.raises(ValueError, match=r"mobility .* can take clients anywhere in \[20, 500\] m"):
        make_cell(placement=UniformDiscPlacement(500.0, 20.0), n_clients=1, mobility=RandomWaypointMobility(),
                  out_of_range="error", placement_rng=np.random.default_rng(3))
    # Static mobility moves nobody: only the placed clients count.
    make_cell(placement=FixedDistancePlacement([40.0, 50.0, 60.0]), mobility=StaticMobility(),
              min_distance_m=20.0, out_of_range="error")


def test_a_move_out_of_range_warns_or_raises(make_cell):
    class Inward:
        max_speed_m_per_s = 0.0  # declares itself static, so only real positions are checked

        def step(self, positions_m, dt_s, rng, radius_m=None, min_distance_m=None):
            return np.asarray(positions_m) * 0.1

    cell = make_cell(placement=FixedDistancePlacement([100.0, 300.0, 500.0]), mobility=Inward())
    with pytest.warns(ModelValidityWarning, match="2 of 3 clients are, after a move, at 10 m to 30 m"):
        cell.move(1.0, np.random.default_rng(0))
    strict = make_cell(placement=FixedDistancePlacement([100.0, 300.0, 500.0]), mobility=Inward(),
                       out_of_range="error")
    with pytest.raises(ValueError, match="after a move"):
        strict.move(1.0, np.random.default_rng(0))


def test_bad_validity_range_of_a_plug_in_is_refused(make_cell):
    class Backwards:
        valid_distance_m = (100.0, 10.0)

        def loss_db(self, distance_m):
            return 100.0 + 0.0 * np.asarray(distance_m)

    with pytest.raises(ValueError, match="valid_distance_m must be \\(low_m, high_m\\)"):
        make_cell(pathloss=Backwards())


def test_unknown_out_of_range_choice_is_refused(make_cell):
    with pytest.raises(ValueError, match="out_of_range must be one of warn, error"):
        make_cell(out_of_range="ignore")


def test_fading_cell_still_builds(make_cell):
    make_cell(fading=RayleighFading())
