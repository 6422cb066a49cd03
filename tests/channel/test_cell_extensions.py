import functools

import numpy as np
import pytest

from sfl_sim.channel import (
    CorrelatedShadowing,
    EqualFinishTimeAllocation,
    FixedDistancePlacement,
    LogNormalShadowing,
    RandomWaypointMobility,
    RayleighFading,
    ShannonRate,
    TR38901UMa,
    TR38901UMi,
    UniformDiscPlacement,
)
from tests.channel.helpers import N0_W_PER_HZ


@pytest.fixture
def disc_cell(make_cell):
    """20 clients on a 500 m disc (10 m exclusion), 20 MHz up and down, a 10 W server."""
    return functools.partial(make_cell, placement=UniformDiscPlacement(500.0, 10.0), n_clients=20,
                             uplink_bandwidth_hz=20e6, server_tx_power_w=10.0)


def test_fading_multiplies_the_gain(disc_cell):
    cell = disc_cell(fading=RayleighFading())
    ids = np.array([3, 7, 11])
    fade = cell.sample_fading(ids, np.random.default_rng(4))
    np.testing.assert_array_equal(fade, RayleighFading().sample_power_gain(3, np.random.default_rng(4)))
    expected = ShannonRate().rate_bps(20e6 / 3, 0.2, cell.gain_linear[ids] * fade, N0_W_PER_HZ)
    np.testing.assert_allclose(cell.uplink_rates_bps(ids, fading_gain=fade), expected)
    # Without fading_gain: the rate on the mean gain.
    np.testing.assert_allclose(cell.uplink_rates_bps(ids),
                               ShannonRate().rate_bps(20e6 / 3, 0.2, cell.gain_linear[ids], N0_W_PER_HZ))


def test_downlink_and_broadcast_take_fading(disc_cell):
    cell = disc_cell()
    ids = np.array([0, 1])
    fade = np.array([0.5, 2.0])
    np.testing.assert_allclose(cell.downlink_rates_bps(ids, fading_gain=fade),
                               ShannonRate().rate_bps(10e6, 5.0, cell.gain_linear[ids] * fade, N0_W_PER_HZ))
    full = ShannonRate().rate_bps(20e6, 10.0, cell.gain_linear[ids] * fade, N0_W_PER_HZ)
    assert cell.broadcast_rate_bps(ids, fading_gain=fade) == pytest.approx(full.min())


def test_uplink_link_reports_bandwidth_snr_and_rate(disc_cell):
    cell = disc_cell()
    link = cell.uplink_link([0, 1, 2, 3])
    np.testing.assert_allclose(link.bandwidth_hz, 5e6)
    snr = 0.2 * cell.gain_linear[:4] / (5e6 * N0_W_PER_HZ)
    np.testing.assert_allclose(link.snr_db, 10 * np.log10(snr))
    np.testing.assert_allclose(link.rate_bps, cell.uplink_rates_bps([0, 1, 2, 3]))


def test_link_at_bandwidth_bypasses_allocator(disc_cell):
    cell = disc_cell(allocator=EqualFinishTimeAllocation())
    link = cell.uplink_link_at_bandwidth([1, 2], [1e6, 3e6])
    np.testing.assert_allclose(link.rate_bps,
                               ShannonRate().rate_bps([1e6, 3e6], 0.2, cell.gain_linear[[1, 2]], N0_W_PER_HZ))


def test_equal_finish_time_allocator_through_cell(disc_cell):
    cell = disc_cell(allocator=EqualFinishTimeAllocation())
    ids = np.arange(8)
    payload = np.linspace(1e6, 8e6, 8)
    link = cell.uplink_link(ids, payload)
    assert link.bandwidth_hz.sum() == pytest.approx(20e6)
    finish = payload / link.rate_bps
    np.testing.assert_allclose(finish, finish[0], rtol=1e-6)


def test_los_state_follows_los_probability(disc_cell):
    cell = disc_cell(n_clients=3000, pathloss=TR38901UMi())
    assert cell.los.dtype == bool and cell.los.shape == (3000,)
    p = TR38901UMi().los_probability(cell.distance_m)
    # Expected number of LOS clients sum(p); binomial sd sqrt(sum p(1-p)) ~ 10
    assert cell.los.sum() == pytest.approx(p.sum(), abs=5 * np.sqrt(np.sum(p * (1 - p))))
    model = TR38901UMi()
    np.testing.assert_allclose(cell.pathloss_db, model.loss_db(cell.distance_m, los=cell.los))


def test_shadowing_takes_model_sigma(disc_cell):
    cell = disc_cell(n_clients=3000, pathloss=TR38901UMa(los="nlos"), shadowing=LogNormalShadowing("model"))
    assert cell.shadowing_db.std() == pytest.approx(6.0, abs=0.3)


def test_move_updates_large_scale_state_and_is_seeded(disc_cell):
    def moved():
        cell = disc_cell(n_clients=10, pathloss=TR38901UMa(), shadowing=CorrelatedShadowing(),
                         mobility=RandomWaypointMobility(1.0, 10.0))
        before = cell.pathloss_db.copy()
        rng = np.random.default_rng(9)
        for _ in range(3):
            dist = cell.move(100.0, rng)
        assert dist.shape == (10,) and np.all(dist >= 0)
        assert not np.allclose(cell.pathloss_db, before)
        np.testing.assert_allclose(cell.distance_m, np.hypot(*cell.positions_m.T))
        np.testing.assert_allclose(cell.pathloss_db, TR38901UMa().loss_db(cell.distance_m, los=cell.los))
        np.testing.assert_allclose(cell.gain_linear, 10 ** (-(cell.pathloss_db + cell.shadowing_db) / 10))
        assert np.all(cell.distance_m <= 500.0 + 1e-9)
        return cell.positions_m, cell.shadowing_db, cell.los

    a, b = moved(), moved()
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def test_static_move_changes_nothing(disc_cell):
    cell = disc_cell(n_clients=5, pathloss=TR38901UMa(), shadowing=CorrelatedShadowing())
    state = (cell.positions_m, cell.los, cell.shadowing_db, cell.gain_linear)
    assert not cell.move(50.0, np.random.default_rng(0)).any()
    for before, after in zip(state, (cell.positions_m, cell.los, cell.shadowing_db, cell.gain_linear), strict=True):
        np.testing.assert_array_equal(before, after)


def test_small_moves_keep_los_state_large_moves_redraw(disc_cell):
    # rho = exp(-dd / 50 m): 0.1 m moves keep (almost) every state; after ~10 km of travel it is fresh.
    cell = disc_cell(n_clients=400, pathloss=TR38901UMi(), mobility=RandomWaypointMobility(0.1, 0.1))
    los0 = cell.los.copy()
    cell.move(1.0, np.random.default_rng(0))
    assert np.mean(cell.los == los0) > 0.95


def test_fixed_placement_cell_can_move_inside_its_farthest_client(disc_cell):
    cell = disc_cell(n_clients=3, placement=FixedDistancePlacement([100.0, 200.0, 300.0]),
                     mobility=RandomWaypointMobility(5.0, 5.0))
    assert cell.radius_m == 300.0
    cell.move(1000.0, np.random.default_rng(0))
    assert np.all(cell.distance_m <= 300.0 + 1e-9)


def test_bad_fading_gain_shape_raises(disc_cell):
    with pytest.raises(ValueError, match="fading_gain"):
        disc_cell().uplink_rates_bps([0, 1], fading_gain=[1.0, 1.0, 1.0])


def test_describe_with_cohort_share(disc_cell):
    cell = disc_cell()
    info = cell.describe(n_sharing=4)
    np.testing.assert_allclose(info["uplink_rate_bps"],
                               ShannonRate().rate_bps(5e6, 0.2, cell.gain_linear, N0_W_PER_HZ))
