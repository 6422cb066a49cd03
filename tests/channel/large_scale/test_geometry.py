import numpy as np
import pytest

from sfl_sim.channel import PLACEMENTS, FixedDistancePlacement, UniformDiscPlacement, distances_m

R_M, R0_M = 500.0, 10.0


def test_uniform_disc_within_annulus():
    pos = UniformDiscPlacement(R_M, R0_M).sample_positions_m(5000, np.random.default_rng(0))
    assert pos.shape == (5000, 2)
    d = distances_m(pos)
    assert d.min() >= R0_M and d.max() <= R_M


def test_uniform_disc_same_seed_same_positions():
    place = UniformDiscPlacement(R_M, R0_M)
    a = place.sample_positions_m(20, np.random.default_rng(42))
    b = place.sample_positions_m(20, np.random.default_rng(42))
    np.testing.assert_array_equal(a, b)


def test_uniform_disc_different_seed_different_positions():
    place = UniformDiscPlacement(R_M, R0_M)
    a = place.sample_positions_m(20, np.random.default_rng(1))
    b = place.sample_positions_m(20, np.random.default_rng(2))
    assert not np.allclose(a, b)


def test_uniform_disc_is_uniform_over_area():
    n = 20000
    d = distances_m(UniformDiscPlacement(R_M, R0_M).sample_positions_m(n, np.random.default_rng(3)))
    expected = ((R_M / 2) ** 2 - R0_M**2) / (R_M**2 - R0_M**2)  # ~0.2496
    # Binomial standard error sqrt(p(1-p)/n) ~ 0.003; 0.015 is 5 of them.
    assert np.mean(d <= R_M / 2) == pytest.approx(expected, abs=0.015)


def test_uniform_disc_angles_cover_all_quadrants():
    pos = UniformDiscPlacement(R_M, R0_M).sample_positions_m(4000, np.random.default_rng(4))
    quadrant_share = [np.mean((np.sign(pos[:, 0]) == sx) & (np.sign(pos[:, 1]) == sy))
                      for sx in (-1, 1) for sy in (-1, 1)]
    np.testing.assert_allclose(quadrant_share, 0.25, atol=0.03)


def test_radius_not_above_min_distance_raises():
    with pytest.raises(ValueError, match=r"radius_m.*10"):
        UniformDiscPlacement(radius_m=10.0, min_distance_m=10.0)


def test_negative_min_distance_raises():
    with pytest.raises(ValueError, match="min_distance_m"):
        UniformDiscPlacement(radius_m=100.0, min_distance_m=-1.0)


def test_fixed_distances_on_x_axis():
    pos = FixedDistancePlacement([100.0, 250.0]).sample_positions_m(2, np.random.default_rng(0))
    np.testing.assert_array_equal(pos, [[100.0, 0.0], [250.0, 0.0]])
    np.testing.assert_array_equal(distances_m(pos), [100.0, 250.0])


def test_fixed_distances_wrong_count_raises():
    with pytest.raises(ValueError, match=r"n_clients.*2"):
        FixedDistancePlacement([100.0, 250.0]).sample_positions_m(3, None)


def test_fixed_distances_rejects_non_positive_distance():
    with pytest.raises(ValueError, match="distances_m"):
        FixedDistancePlacement([100.0, 0.0])


def test_distances_m_is_euclidean():
    np.testing.assert_allclose(distances_m([[3.0, 4.0], [-6.0, 8.0]]), [5.0, 10.0])


def test_registered_placements():
    assert {"fixed_distances", "uniform_disc"} <= set(PLACEMENTS.names())
