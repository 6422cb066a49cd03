"""Timed mobility: the step-model adapter, Gauss–Markov, and the conformance check of the timed form."""
import copy
import math

import numpy as np
import pytest

from sfl_sim.channel import (
    MOBILITY,
    GaussMarkovMobility,
    RandomDirectionMobility,
    RandomWaypointMobility,
    StaticMobility,
    StepwiseTimedMobility,
    check_component,
)
from sfl_sim.channel.large_scale import timed_mobility
from sfl_sim.channel.protocols import Mobility, TimedMobility

R_M, R0_M = 500.0, 10.0
POS = np.array([[100.0, 0.0], [0.0, -200.0], [-150.0, 150.0]])


def gauss_markov(**params):
    model = GaussMarkovMobility(**params)
    model.start(POS, np.random.default_rng(7), R_M, R0_M)
    return model


def test_both_are_timed_and_step_models():
    for model in (GaussMarkovMobility(), StepwiseTimedMobility(RandomWaypointMobility(), 1.0)):
        assert isinstance(model, TimedMobility) and isinstance(model, Mobility) and model.timed is True
    assert isinstance(MOBILITY.create("gauss_markov", alpha=0.5), GaussMarkovMobility)


def test_gauss_markov_follows_the_survey_formulas_step_by_step():
    """Two steps computed by hand from the model's generator (seeded by one draw of the start rng):
    the mean directions, then one pair of standard normals per step."""
    p = dict(mean_speed_m_per_s=2.0, alpha=0.6, speed_sigma_m_per_s=0.3, direction_sigma_rad=0.2, step_s=0.5)
    model = gauss_markov(**p)
    gen = np.random.Generator(np.random.PCG64(int(np.random.default_rng(7).integers(0, 2**63 - 1))))
    mean = gen.uniform(0.0, 2 * np.pi, 3)
    s, d = np.full(3, 2.0), mean.copy()
    x1 = POS + (s * 0.5)[:, None] * np.column_stack((np.cos(d), np.sin(d)))
    w = gen.standard_normal((2, 3))
    keep, fresh = 0.6, math.sqrt(1 - 0.6**2)
    s = keep * s + (1 - keep) * 2.0 + fresh * 0.3 * w[0]
    d = keep * d + (1 - keep) * mean + fresh * 0.2 * w[1]
    x2 = x1 + (s * 0.5)[:, None] * np.column_stack((np.cos(d), np.sin(d)))
    np.testing.assert_array_equal(model.positions_at(0.0), POS)
    np.testing.assert_allclose(model.positions_at(0.5), x1, rtol=1e-12)
    np.testing.assert_allclose(model.positions_at(1.0), x2, rtol=1e-12)
    np.testing.assert_allclose(model.positions_at(0.75), (x1 + x2) / 2, rtol=1e-12)
    np.testing.assert_allclose(model.velocities_at(0.75), (x2 - x1) / 0.5, rtol=1e-12)
    np.testing.assert_array_equal(model.nominal_speed_m_per_s(), [2.0, 2.0, 2.0])


def test_alpha_one_without_noise_is_a_straight_line():
    model = gauss_markov(mean_speed_m_per_s=3.0, alpha=1.0, speed_sigma_m_per_s=0.0, direction_sigma_rad=0.0)
    moved = model.positions_at(20.0) - POS
    np.testing.assert_allclose(np.hypot(*moved.T), 60.0, rtol=1e-12)
    np.testing.assert_allclose(model.positions_at(7.25) - POS, moved * 7.25 / 20.0, rtol=1e-9, atol=1e-9)


def test_gauss_markov_stays_in_the_annulus_and_turns_away_from_the_edge():
    model = GaussMarkovMobility(mean_speed_m_per_s=20.0, alpha=0.9, speed_sigma_m_per_s=2.0, edge_margin_m=25.0)
    model.start(np.array([[480.0, 0.0], [0.0, 15.0]]), np.random.default_rng(1), R_M, R0_M)
    r = np.array([np.hypot(*model.positions_at(t).T) for t in np.arange(0.0, 2000.0, 0.5)])
    assert r.max() <= R_M + 1e-9 and r.min() >= R0_M - 1e-9
    assert (r[:, 0] < 400.0).any() and (r[:, 1] > 100.0).any()  # neither hugs its edge


def test_gauss_markov_is_the_same_in_any_query_order_and_after_its_cache():
    times = [0.0, 0.3, 255.9, 256.0, 256.4, 3000.7, 12.5]
    a, b = gauss_markov(), gauss_markov()
    forward = [a.positions_at(t) for t in times]
    backward = [b.positions_at(t) for t in reversed(times)][::-1]
    for x, y in zip(forward, backward, strict=True):
        np.testing.assert_array_equal(x, y)
    assert len(a._path._blocks) == timed_mobility.CACHED_BLOCKS  # block 0 was dropped by 3000.7 s
    np.testing.assert_array_equal(a.positions_at(0.3), forward[1])  # recomputed from its checkpoint
    other = GaussMarkovMobility()
    other.start(POS, np.random.default_rng(8), R_M, R0_M)
    assert not np.array_equal(other.positions_at(12.5), forward[-1])


def test_gauss_markov_state_restores_the_trajectory_and_the_step_clock():
    model = GaussMarkovMobility()
    rng = np.random.default_rng(2)
    pos = model.step(POS, 10.0, rng, R_M, R0_M)
    again = GaussMarkovMobility()
    again.load_state_dict(copy.deepcopy(model.state_dict()))
    np.testing.assert_array_equal(again.positions_at(10.0), pos)
    np.testing.assert_array_equal(again.step(pos, 5.0, rng), model.step(pos, 5.0, rng))
    np.testing.assert_array_equal(model.positions_at(15.0), model.step(pos, 0.0, rng))


def test_a_query_past_the_step_limit_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"t_s: got 1000000000000.0; allowed: at most 10000000 steps"):
        gauss_markov().positions_at(1e12)
    with pytest.raises(ValueError, match="t_s"):
        gauss_markov().positions_at(-1.0)
    with pytest.raises(ValueError, match="before start"):
        GaussMarkovMobility().positions_at(1.0)


@pytest.mark.parametrize("bad, match", [({"alpha": 1.5}, "alpha"), ({"step_s": 1e-6}, "step_s"),
                                        ({"mean_speed_m_per_s": -1.0}, "mean_speed_m_per_s")])
def test_gauss_markov_bad_parameters(bad, match):
    with pytest.raises(ValueError, match=match):
        MOBILITY.create("gauss_markov", **bad)


def test_stepwise_adapter_steps_the_model_on_its_grid():
    model = RandomWaypointMobility(1.0, 3.0, pause_s=2.0)
    timed = StepwiseTimedMobility(model, 2.0)
    assert timed.start(POS, np.random.default_rng(4), R_M, R0_M).tolist() == POS.tolist()
    seed = int(np.random.default_rng(4).integers(0, 2**63 - 1))
    by_hand, gen, pos = copy.deepcopy(model), np.random.Generator(np.random.PCG64(seed)), POS.copy()
    grid = [pos]
    for _ in range(5):
        pos = by_hand.step(pos, 2.0, gen, radius_m=R_M, min_distance_m=R0_M)
        grid.append(pos)
    for k in range(6):
        np.testing.assert_array_equal(timed.positions_at(2.0 * k), grid[k])
    np.testing.assert_allclose(timed.positions_at(5.0), (grid[2] + grid[3]) / 2, rtol=1e-12)
    np.testing.assert_allclose(timed.velocities_at(5.0), (grid[3] - grid[2]) / 2.0, rtol=1e-12)
    np.testing.assert_array_equal(timed.nominal_speed_m_per_s(), [3.0, 3.0, 3.0])  # its max_speed
    assert model.state_dict()["waypoint_m"] is None  # the model given is never stepped


def test_stepwise_adapter_state_round_trip_and_query_order():
    timed = StepwiseTimedMobility(RandomDirectionMobility(5.0), 1.0)
    timed.start(POS, np.random.default_rng(9), R_M, R0_M)
    late = timed.positions_at(2000.5)
    early = timed.positions_at(3.5)
    fresh = StepwiseTimedMobility(RandomDirectionMobility(5.0), 1.0)
    fresh.load_state_dict(copy.deepcopy(timed.state_dict()))
    np.testing.assert_array_equal(fresh.positions_at(3.5), early)
    np.testing.assert_array_equal(fresh.positions_at(2000.5), late)


def test_stepwise_adapter_refusals():
    with pytest.raises(ValueError, match="model: got str"):
        StepwiseTimedMobility("random_waypoint", 1.0)
    with pytest.raises(ValueError, match="step_s"):
        StepwiseTimedMobility(StaticMobility(), 0.0)

    class Speedless:
        def step(self, positions_m, dt_s, rng, radius_m=None, min_distance_m=None):
            return np.asarray(positions_m)

    timed = StepwiseTimedMobility(Speedless(), 1.0)
    timed.start(POS, np.random.default_rng(0))
    with pytest.raises(ValueError, match="states no speed"):
        timed.nominal_speed_m_per_s()


@pytest.mark.parametrize("factory", [lambda: GaussMarkovMobility(mean_speed_m_per_s=5.0),
                                     lambda: StepwiseTimedMobility(RandomWaypointMobility(), 1.0)],
                         ids=["gauss_markov", "stepwise_random_waypoint"])
def test_timed_conformance_passes(factory):
    report = check_component("mobility", factory(), client_counts=(3,))
    for check in ("same seed, same positions in any query order", "an early time again after a late one",
                  "start gives the positions at t = 0", "a loaded state gives the same positions"):
        assert check in report["checks"]


def test_timed_conformance_catches_a_model_whose_answer_depends_on_the_queries():
    class Drifting(GaussMarkovMobility):
        """Draws from a generator shared by the queries: the answer depends on what came before."""

        def start(self, positions_m, rng, radius_m=None, min_distance_m=None):
            self._shared = np.random.default_rng(0)
            return super().start(positions_m, rng, radius_m, min_distance_m)

        def positions_at(self, t_s):
            return super().positions_at(t_s) + (self._shared.random() if t_s > 0 else 0.0)

    with pytest.raises(AssertionError, match="same seed, same positions in any query order"):
        check_component("mobility", Drifting(), client_counts=(2,))


def test_a_fast_client_passing_the_site_between_grid_points_stays_outside_the_exclusion_circle() -> None:
    """At 120 km/h a 1 s grid step is 33 m: the straight line between two grid points outside a 10 m
    exclusion circle can cut it (the conformance check found 8.4 m and refused gauss_markov at 120
    km/h); a position between grid points is pushed out to the circle as the grid points are."""
    from sfl_sim.channel.conformance import check_component
    from sfl_sim.channel.large_scale.mobility import MOBILITY

    fast = MOBILITY.build("gauss_markov", mean_speed_m_per_s=33.333)
    assert "stays outside min_distance_m" in check_component("mobility", fast)["checks"]
    fast.start(np.random.default_rng(1).uniform(-300, 300, (200, 2)), np.random.default_rng(2), radius_m=500.0,
               min_distance_m=10.0)
    for t in np.arange(0.0, 60.0, 0.05):
        assert np.hypot(*fast.positions_at(float(t)).T).min() >= 10.0 * (1 - 1e-12)
