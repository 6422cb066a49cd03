"""LargeScale on its own: placement, LOS latent, path loss and shadowing composed, their draws, moves and state."""
import numpy as np
import pytest
import scipy.special

from sfl_sim.channel import (
    CorrelatedShadowing,
    FixedDistancePlacement,
    LargeScale,
    LogNormalShadowing,
    NoShadowing,
    RandomWaypointMobility,
    StaticMobility,
    TR36814Macro,
    TR38901UMa,
    TR38901UMi,
    UniformDiscPlacement,
)
from sfl_sim.channel.large_scale.model import ModelValidityWarning
from tests.channel.helpers import small_cell


def build(placement=None, pathloss=None, shadowing=None, mobility=None, n_clients=20, seed=0, **kwargs):
    """Streams: placement ``seed``, LOS ``seed + 2``, shadowing ``seed + 1`` (as tests.channel.helpers.small_cell)."""
    return LargeScale(
        placement or UniformDiscPlacement(400.0, 35.0), pathloss or TR38901UMa(),
        shadowing or LogNormalShadowing("model"), mobility or StaticMobility(), n_clients=n_clients,
        placement_rng=np.random.default_rng(seed),
        los_rng=np.random.default_rng(seed + 2), shadowing_rng=np.random.default_rng(seed + 1), **kwargs)


def test_the_drop_takes_each_quantity_from_its_own_stream_in_order():
    ls = build()
    now = ls.snapshot
    positions = UniformDiscPlacement(400.0, 35.0).sample_positions_m(20, np.random.default_rng(0))
    np.testing.assert_array_equal(now.positions_m, positions)
    np.testing.assert_array_equal(now.distance_m, np.hypot(*positions.T))
    # LOS: one latent normal per client from the LOS stream, in LOS while Phi(z) < Pr_LOS(d).
    latent = np.random.default_rng(2).standard_normal(20)
    los = scipy.special.ndtr(latent) < TR38901UMa().los_probability(now.distance_m)
    np.testing.assert_array_equal(now.los, los)
    np.testing.assert_array_equal(now.pathloss_db, TR38901UMa().loss_db(now.distance_m, los=los))
    # Shadowing after the LOS state: its sigma is the model's, 4 dB in LOS and 6 dB in NLOS.
    z = np.random.default_rng(1).standard_normal(20)
    np.testing.assert_array_equal(now.shadowing_db, np.where(los, 4.0, 6.0) * z)
    np.testing.assert_array_equal(now.coupling_loss_db, now.pathloss_db + now.shadowing_db)
    np.testing.assert_allclose(now.gain_linear, 10 ** (-now.coupling_loss_db / 10), rtol=1e-15)
    assert now.site.model_decorrelation_m is not None


def test_it_is_what_the_cell_holds():
    cell = small_cell(UniformDiscPlacement(400.0, 35.0), TR38901UMa(), LogNormalShadowing("model"), n_clients=20)
    now = build().snapshot
    for name in ("positions_m", "distance_m", "los", "pathloss_db", "shadowing_db", "gain_linear"):
        np.testing.assert_array_equal(getattr(cell, name), getattr(now, name), err_msg=name)
    assert cell.large_scale.snapshot is cell.large_scale.snapshot  # one snapshot until the clients move


def test_a_path_loss_with_loss_db_only_gets_no_los_and_no_model_values():
    class Plain:
        def loss_db(self, distance_m):
            return 100.0 + 20.0 * np.log10(np.asarray(distance_m))

    ls = build(FixedDistancePlacement([50.0, 200.0]), Plain(), NoShadowing(), n_clients=2)
    now = ls.snapshot
    assert now.los is None and now.site.model_sigma_db is None and now.site.model_decorrelation_m is None
    np.testing.assert_allclose(now.pathloss_db, [100 + 20 * np.log10(50.0), 100 + 20 * np.log10(200.0)])
    assert ls.radius_m == 200.0 and ls.min_distance_m == 1.0  # the farthest client; at least 1 m
    assert ls.state_dict()["los_latent"] is None


def test_arrays_are_read_only():
    now = build().snapshot
    for name in ("positions_m", "distance_m", "los", "pathloss_db", "shadowing_db", "coupling_loss_db", "gain_linear"):
        with pytest.raises(ValueError):
            getattr(now, name)[0] = 0


def test_nobody_moving_changes_nothing_and_draws_nothing():
    ls = build(shadowing=CorrelatedShadowing())
    before, state = ls.snapshot, ls.state_dict()
    assert not ls.move(30.0, np.random.default_rng(5)).any()
    assert ls.snapshot is before
    after = ls.state_dict()
    assert after["los_rng"] == state["los_rng"] and after["shadowing_rng"] == state["shadowing_rng"]


def test_a_move_updates_every_quantity_together():
    ls = build(pathloss=TR38901UMi(), shadowing=CorrelatedShadowing(), mobility=RandomWaypointMobility(1.0, 10.0))
    before = ls.snapshot
    moved = ls.move(60.0, np.random.default_rng(5))
    now = ls.snapshot
    np.testing.assert_allclose(moved, np.hypot(*(now.positions_m - before.positions_m).T))
    assert moved.max() > 0 and np.all(moved <= 10.0 * 60.0 + 1e-9)
    np.testing.assert_array_equal(now.distance_m, np.hypot(*now.positions_m.T))
    np.testing.assert_array_equal(now.pathloss_db, TR38901UMi().loss_db(now.distance_m, los=now.los))
    np.testing.assert_array_equal(now.coupling_loss_db, now.pathloss_db + now.shadowing_db)
    assert not np.array_equal(now.shadowing_db, before.shadowing_db)  # correlated shadowing follows the clients
    assert np.all(now.distance_m <= ls.radius_m + 1e-9) and np.all(now.distance_m >= ls.min_distance_m - 1e-9)


def test_the_los_latent_decorrelates_over_the_models_distance():
    # rho = exp(-dd / 50 m) (TR 38.901 Table 7.6.3.1-2): after 0.1 m the latent has barely changed.
    ls = build(pathloss=TR38901UMi(), n_clients=300, mobility=RandomWaypointMobility(0.1, 0.1))
    latent0 = ls.state_dict()["los_latent"]
    moved = ls.move(1.0, np.random.default_rng(0))
    latent1 = ls.state_dict()["los_latent"]
    rho = np.exp(-moved / 50.0)
    w = np.random.default_rng(2)
    w.standard_normal(300)  # the drop's draw
    np.testing.assert_allclose(latent1, rho * latent0 + np.sqrt(1 - rho**2) * w.standard_normal(300), rtol=1e-12)


def test_state_restores_a_fresh_object_bit_identically():
    def make(seed):
        return build(pathloss=TR38901UMa(), shadowing=CorrelatedShadowing(),
                     mobility=RandomWaypointMobility(2.0, 15.0, pause_s=4.0), seed=seed)

    a, move_a = make(0), np.random.default_rng(9)
    a.move(20.0, move_a)
    state = dict(a.state_dict(), mobility=a.mobility.state_dict())
    b, move_b = make(7), np.random.default_rng(9)
    restore = b.prepare_load(state)
    assert not np.array_equal(b.snapshot.positions_m, a.snapshot.positions_m)  # nothing changes before the call
    restore()
    b.mobility.load_state_dict(state["mobility"])
    move_b.bit_generator.state = move_a.bit_generator.state
    for _ in range(3):
        np.testing.assert_array_equal(a.move(30.0, move_a), b.move(30.0, move_b))
        for name in ("positions_m", "los", "pathloss_db", "shadowing_db", "gain_linear"):
            np.testing.assert_array_equal(getattr(a.snapshot, name), getattr(b.snapshot, name), err_msg=name)


def test_a_state_of_the_wrong_shape_is_refused_before_anything_changes():
    ls = build()
    state = ls.state_dict()
    state["shadowing_db"] = np.zeros(3)
    before = ls.snapshot
    with pytest.raises(ValueError, match="shadowing_db"):
        ls.prepare_load(state)
    assert ls.snapshot is before


def test_clients_outside_the_models_range_warn_once_or_are_refused():
    with pytest.warns(ModelValidityWarning, match="1 of 2 clients are placed at 20 m, outside .*TR36814Macro"):
        build(FixedDistancePlacement([20.0, 100.0]), TR36814Macro(), NoShadowing(), n_clients=2)
    with pytest.raises(ValueError, match="1 of 2 clients are placed at 20 m"):
        build(FixedDistancePlacement([20.0, 100.0]), TR36814Macro(), NoShadowing(), n_clients=2, out_of_range="error")
    with pytest.raises(ValueError, match="out_of_range must be one of warn, error"):
        build(out_of_range="never")
