import numpy as np
import pytest

from sfl_sim.channel import (
    MOBILITY,
    RandomDirectionMobility,
    RandomWaypointMobility,
    StaticMobility,
    UniformDiscPlacement,
)

R_M, R0_M = 500.0, 10.0


def start(n=200, seed=0):
    return UniformDiscPlacement(R_M, R0_M).sample_positions_m(n, np.random.default_rng(seed))


@pytest.mark.parametrize("model", [RandomWaypointMobility(1.0, 20.0, pause_s=5.0), RandomDirectionMobility(15.0)])
def test_stays_inside_the_disc_over_many_steps(model):
    pos, rng = start(), np.random.default_rng(1)
    for dt in [1.0, 30.0, 300.0, 3000.0] * 5:
        new = model.step(pos, dt, rng, radius_m=R_M, min_distance_m=R0_M)
        d = np.hypot(*new.T)
        assert new.shape == pos.shape
        assert d.max() <= R_M + 1e-9 and d.min() >= R0_M - 1e-9
        assert np.all(np.hypot(*(new - pos).T) <= model.max_speed_m_per_s * dt + 1e-9)
        pos = new


@pytest.mark.parametrize("factory", [lambda: RandomWaypointMobility(0.5, 2.0, 1.0),
                                     lambda: RandomDirectionMobility(3.0)])
def test_same_seed_same_trajectory(factory):
    runs = []
    for _ in range(2):
        model, pos, rng = factory(), start(20), np.random.default_rng(5)
        for _ in range(10):
            pos = model.step(pos, 60.0, rng, radius_m=R_M, min_distance_m=R0_M)
        runs.append(pos)
    np.testing.assert_array_equal(runs[0], runs[1])


def test_random_direction_moves_exactly_speed_times_dt_away_from_edges():
    model = RandomDirectionMobility(2.0)
    pos = np.array([[0.0, 100.0]])
    new = model.step(pos, 10.0, np.random.default_rng(0), radius_m=R_M, min_distance_m=R0_M)
    assert np.hypot(*(new - pos)[0]) == pytest.approx(20.0)


def test_random_waypoint_pause_holds_clients():
    model = RandomWaypointMobility(100.0, 100.0, pause_s=1e6)
    pos = model.step(start(5), 100.0, np.random.default_rng(0), radius_m=R_M, min_distance_m=R0_M)
    # Every client reached its first waypoint (<= 1000 m at 100 m/s) and is now pausing.
    again = model.step(pos, 100.0, np.random.default_rng(1), radius_m=R_M, min_distance_m=R0_M)
    np.testing.assert_array_equal(pos, again)


def test_static_returns_same_positions():
    pos = start(4)
    np.testing.assert_array_equal(StaticMobility().step(pos, 100.0, None), pos)


def test_radius_from_constructor_or_error():
    pos = start(3)
    RandomDirectionMobility(1.0, radius_m=R_M).step(pos, 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="radius_m"):
        RandomDirectionMobility(1.0).step(pos, 1.0, np.random.default_rng(0))


@pytest.mark.parametrize("factory, match", [
    (lambda: RandomWaypointMobility(speed_min_m_per_s=0.0), "speed_min_m_per_s"),
    (lambda: RandomWaypointMobility(2.0, 1.0), r"speed_max_m_per_s.*1"),
    (lambda: RandomWaypointMobility(pause_s=-1.0), r"pause_s.*-1"),
    (lambda: RandomDirectionMobility(-1.0), r"speed_m_per_s.*-1"),
])
def test_bad_parameters_raise(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()


def test_registered():
    assert {"static", "random_waypoint", "random_direction"} <= set(MOBILITY.names())


@pytest.mark.parametrize("make", [
    lambda: RandomWaypointMobility(speed_min_m_per_s=2.0, speed_max_m_per_s=20.0, pause_s=3.0),
    lambda: RandomDirectionMobility(speed_m_per_s=15.0),
])
def test_state_dict_restores_a_fresh_model_to_the_same_continuation(make):
    pos = UniformDiscPlacement(500.0, 35.0).sample_positions_m(12, np.random.default_rng(0))
    a, rng_a = make(), np.random.default_rng(1)
    for dt in (5.0, 30.0, 60.0):
        pos = a.step(pos, dt, rng_a, radius_m=500.0, min_distance_m=35.0)
    state = a.state_dict()
    b, rng_b = make(), np.random.default_rng()
    b.load_state_dict(state)
    rng_b.bit_generator.state = rng_a.bit_generator.state
    pa = pb = pos
    for dt in (7.0, 45.0, 300.0):
        pa = a.step(pa, dt, rng_a, radius_m=500.0, min_distance_m=35.0)
        pb = b.step(pb, dt, rng_b, radius_m=500.0, min_distance_m=35.0)
        np.testing.assert_array_equal(pa, pb)


def test_state_dict_is_plain_data_and_a_copy():
    m = RandomWaypointMobility()
    assert m.state_dict()["waypoint_m"] is None
    pos = UniformDiscPlacement(500.0, 35.0).sample_positions_m(3, np.random.default_rng(0))
    m.step(pos, 10.0, np.random.default_rng(1), radius_m=500.0, min_distance_m=35.0)
    state = m.state_dict()
    assert set(state) == {"waypoint_m", "speed_m_per_s", "pause_left_s"}
    assert all(isinstance(v, np.ndarray) for v in state.values())
    before = state["waypoint_m"].copy()
    m.step(pos, 1e4, np.random.default_rng(2), radius_m=500.0, min_distance_m=35.0)
    np.testing.assert_array_equal(state["waypoint_m"], before)


def test_load_state_dict_accepts_lists_and_resets_on_none():
    m = RandomDirectionMobility()
    m.load_state_dict({"heading_rad": [0.0, 1.0]})
    assert m.state_dict()["heading_rad"].tolist() == [0.0, 1.0]
    m.load_state_dict({"heading_rad": None})
    assert m.state_dict()["heading_rad"] is None


@pytest.mark.parametrize("state, match", [
    ({"heading": [0.0]}, "keys"),
    ({"heading_rad": [[0.0]]}, "shape"),
    ({"heading_rad": [float("nan")]}, "finite"),
    ([0.0], "dict"),
])
def test_load_state_dict_refuses_a_wrong_state(state, match):
    with pytest.raises(ValueError, match=match):
        RandomDirectionMobility().load_state_dict(state)


def test_waypoint_state_with_inconsistent_shapes_is_refused():
    state = {"waypoint_m": np.zeros((3, 2)), "speed_m_per_s": np.ones(2), "pause_left_s": np.zeros(3)}
    with pytest.raises(ValueError, match=r"speed_m_per_s.*shape \(3,\)"):
        RandomWaypointMobility().load_state_dict(state)
