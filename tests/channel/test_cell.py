import numpy as np
import pytest

from sfl_sim.channel import (
    LogNormalShadowing,
    ShannonRate,
    TR36814Macro,
    UniformDiscPlacement,
)
from tests.channel.helpers import N0_W_PER_HZ


def test_cell_gain_matches_components(make_cell):
    cell = make_cell(UniformDiscPlacement(500.0, 10.0), shadowing=LogNormalShadowing(8.0), n_clients=6, seed=10)
    expected_pos = UniformDiscPlacement(500.0, 10.0).sample_positions_m(6, np.random.default_rng(10))
    expected_sh = LogNormalShadowing(8.0).sample_db(6, np.random.default_rng(11))
    np.testing.assert_array_equal(cell.positions_m, expected_pos)
    np.testing.assert_array_equal(cell.shadowing_db, expected_sh)
    np.testing.assert_allclose(cell.pathloss_db, TR36814Macro().loss_db(cell.distance_m))
    np.testing.assert_allclose(cell.gain_linear, 10 ** (-(cell.pathloss_db + expected_sh) / 10))


def test_uplink_rates_match_rate_model_on_equal_share(make_cell):
    cell = make_cell()
    # Clients 0 and 2 transmit together: 1.5 MHz each on the 3 MHz uplink.
    rates = cell.uplink_rates_bps([0, 2])
    expected = ShannonRate().rate_bps(1.5e6, 0.2, cell.gain_linear[[0, 2]], N0_W_PER_HZ)
    np.testing.assert_allclose(rates, expected)


def test_uplink_rate_hand_computation_single_client_at_100_m(make_cell):
    cell = make_cell()
    # Alone on 3 MHz at 100 m: PL = 90.5 dB, SNR = 23.0103 - 90.5 - (-174 + 64.771) = 41.739 dB
    # rate = 3e6 * log2(1 + 10^4.1739) = 41.62 Mbit/s
    assert cell.uplink_rates_bps([0])[0] == pytest.approx(3e6 * np.log2(1 + 10 ** 4.17392), rel=1e-4)


def test_per_client_tx_power(make_cell):
    cell = make_cell(tx_power_w=[0.1, 0.2, 0.3])
    expected = ShannonRate().rate_bps(1e6, [0.1, 0.2, 0.3], cell.gain_linear, N0_W_PER_HZ)
    np.testing.assert_allclose(cell.uplink_rates_bps([0, 1, 2]), expected)


def test_downlink_rates_spread_server_power_over_the_band(make_cell):
    cell = make_cell()
    # Two receivers share the 20 MHz downlink: 10 MHz each, carrying half of the server's 1 W.
    expected = ShannonRate().rate_bps(10e6, 0.5, cell.gain_linear[[1, 2]], N0_W_PER_HZ)
    np.testing.assert_allclose(cell.downlink_rates_bps([1, 2]), expected)


def test_broadcast_rate_is_worst_clients_full_band_rate(make_cell):
    cell = make_cell()
    full_band = ShannonRate().rate_bps(20e6, 1.0, cell.gain_linear, N0_W_PER_HZ)
    assert cell.broadcast_rate_bps([0, 1, 2]) == pytest.approx(full_band[2])  # 500 m is worst
    assert cell.broadcast_rate_bps([0, 1, 2]) == pytest.approx(full_band.min())


def test_downlink_without_config_raises(make_cell):
    cell = make_cell(downlink_bandwidth_hz=None, server_tx_power_w=None)
    with pytest.raises(ValueError, match="downlink_bandwidth_hz"):
        cell.downlink_rates_bps([0])


def test_state_arrays_are_read_only(make_cell):
    cell = make_cell()
    with pytest.raises(ValueError):
        cell.gain_linear[0] = 1.0


def test_describe_reports_equal_share_snr_and_rate(make_cell):
    cell = make_cell()
    info = cell.describe()
    assert set(info) == {"client", "distance_m", "pathloss_db", "shadowing_db", "snr_db", "uplink_rate_bps",
                         "sinr_db", "tx_power_w"}
    np.testing.assert_array_equal(info["client"], [0, 1, 2])
    np.testing.assert_allclose(info["uplink_rate_bps"], cell.uplink_rates_bps([0, 1, 2]))
    # 100 m, 1 MHz share: SNR = 23.0103 - 90.5 - (-174 + 60) = 46.5103 dB
    assert info["snr_db"][0] == pytest.approx(46.5103, abs=1e-4)


def test_duplicate_client_ids_raise(make_cell):
    with pytest.raises(ValueError, match="distinct"):
        make_cell().uplink_rates_bps([0, 0])


def test_out_of_range_client_id_raises(make_cell):
    with pytest.raises(ValueError, match="client_ids"):
        make_cell().uplink_rates_bps([3])


def test_wrong_length_tx_power_raises(make_cell):
    with pytest.raises(ValueError, match="tx_power_w"):
        make_cell(tx_power_w=[0.1, 0.2])


def test_non_positive_uplink_bandwidth_raises(make_cell):
    with pytest.raises(ValueError, match=r"uplink_bandwidth_hz.*-1"):
        make_cell(uplink_bandwidth_hz=-1.0)


def test_seed_instead_of_generator_raises(make_cell):
    with pytest.raises(TypeError, match="placement_rng"):
        make_cell(placement_rng=0)
