"""Cell.state_dict / load_state_dict: plain data that restores a fresh cell bit-identically."""
import copy

import numpy as np
import pytest

from sfl_sim.channel import (
    Cell,
    CorrelatedShadowing,
    EqualAllocation,
    FixedDistancePlacement,
    LogNormalShadowing,
    NoShadowing,
    RandomDirectionMobility,
    RandomWaypointMobility,
    RayleighFading,
    ShannonRate,
    TR36814Macro,
    TR38901UMa,
    UniformDiscPlacement,
)


def build(mobility=None, shadowing=None, pathloss=None, n_clients=15, seed=0):
    """Same arguments, same scenario: a fresh cell each call."""
    return Cell(
        UniformDiscPlacement(400.0, 35.0),
        pathloss or TR38901UMa(los="stochastic"),
        shadowing or CorrelatedShadowing(),
        ShannonRate(),
        EqualAllocation(),
        n_clients=n_clients,
        tx_power_w=0.2,
        noise_psd_dbm_per_hz=-174.0,
        uplink_bandwidth_hz=10e6,
        downlink_bandwidth_hz=20e6,
        server_tx_power_w=20.0,
        placement_rng=np.random.default_rng(seed + 1),
        shadowing_rng=np.random.default_rng(seed + 2),
        los_rng=np.random.default_rng(seed + 3),
        fading=RayleighFading(),
        mobility=mobility if mobility is not None else RandomWaypointMobility(2.0, 15.0, pause_s=4.0),
    )


PROPERTIES = ("positions_m", "distance_m", "pathloss_db", "shadowing_db", "los", "gain_linear")


def assert_same(a, b):
    for name in PROPERTIES:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    ids = np.arange(a.n_clients)
    for x, y in zip((a.uplink_link(ids, 1e6), a.downlink_rates_bps(ids[:4], 1e5)),
                    (b.uplink_link(ids, 1e6), b.downlink_rates_bps(ids[:4], 1e5)), strict=True):
        if hasattr(x, "rate_bps"):
            np.testing.assert_array_equal(x.rate_bps, y.rate_bps)
            np.testing.assert_array_equal(x.snr_db, y.snr_db)
        else:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("mobility", [lambda: RandomWaypointMobility(2.0, 15.0, pause_s=4.0),
                                      lambda: RandomDirectionMobility(12.0)])
def test_loaded_cell_continues_bit_identically(mobility):
    a, move_a = build(mobility()), np.random.default_rng(9)
    for dt in (3.0, 20.0, 45.0):
        a.move(dt, move_a)
    state = a.state_dict()
    b, move_b = build(mobility()), np.random.default_rng()
    assert not np.array_equal(b.positions_m, a.positions_m)  # b starts where a started
    b.load_state_dict(state)
    move_b.bit_generator.state = move_a.bit_generator.state
    assert_same(a, b)
    for dt in (5.0, 60.0, 0.0, 300.0):
        np.testing.assert_array_equal(a.move(dt, move_a), b.move(dt, move_b))
        assert_same(a, b)
    fa, fb = np.random.default_rng(4), np.random.default_rng(4)
    np.testing.assert_array_equal(a.sample_fading(np.arange(15), fa), b.sample_fading(np.arange(15), fb))


def test_state_of_a_static_cell_without_los_round_trips():
    make = lambda: build(mobility=RandomWaypointMobility(), shadowing=LogNormalShadowing(8.0),  # noqa: E731
                         pathloss=TR36814Macro())
    a = make()
    state = a.state_dict()
    assert state["los_latent"] is None
    b = build(mobility=RandomWaypointMobility(), shadowing=LogNormalShadowing(8.0), pathloss=TR36814Macro(), seed=5)
    b.load_state_dict(state)
    assert_same(a, b)


def _is_plain(value):
    if value is None or type(value) in (bool, int, float, str):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype != object
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_is_plain(v) for v in value)
    return False


def test_state_dict_holds_only_plain_data_and_copies():
    cell = build()
    cell.move(30.0, np.random.default_rng(1))
    state = cell.state_dict()
    assert _is_plain(state)
    assert set(state["component_states"]) == {"mobility"}
    assert state["component_types"]["pathloss"] == "sfl_sim.channel.large_scale.tr38901.TR38901UMa"
    state["positions_m"][:] = 0.0
    assert np.all(cell.positions_m != 0.0)


def test_state_dict_refuses_a_shadowing_state_that_is_not_plain_data():
    class OpaqueShadowing:
        def sample_db(self, n_clients, rng):
            return np.zeros(n_clients)

        def sample_site_db(self, site, rng):
            return np.zeros(site.n_clients), object()

    cell = build(shadowing=OpaqueShadowing())
    with pytest.raises(ValueError, match="shadowing .*OpaqueShadowing.* state must hold only numpy arrays"):
        cell.state_dict()


def test_state_with_lists_for_arrays_loads_like_tensors_would():
    a = build()
    a.move(30.0, np.random.default_rng(1))

    def to_lists(value):
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, dict):
            return {k: to_lists(v) for k, v in value.items()}
        return value

    b = build()
    b.load_state_dict(to_lists(a.state_dict()))
    assert_same(a, b)


@pytest.mark.parametrize("mutate, match", [
    (lambda s: s.pop("positions_m"), r"missing \['positions_m'\]"),
    (lambda s: s.update(extra=1), r"unexpected \['extra'\]"),
    (lambda s: s.update(version=99), "version must be 2"),
    (lambda s: s.update(n_clients=3), "is for 3 clients, this cell has 15"),
    (lambda s: s.update(positions_m=np.zeros((14, 2))), r"positions_m.*shape \(15, 2\)"),
    (lambda s: s.update(positions_m=np.full((15, 2), np.nan)), "positions_m.*finite"),
    (lambda s: s.update(positions_m=np.zeros((15, 2))), "distance_m"),
    (lambda s: s.update(los_latent=None), "los_latent"),
    (lambda s: s.update(shadowing_db=np.zeros(3)), "shadowing_db"),
    (lambda s: s.update(los_rng={"bit_generator": "MT19937"}), "los_rng"),
    (lambda s: s.update(component_states={}), "component_states"),
    (lambda s: s["component_states"].update(mobility={"heading_rad": None}), "keys"),
    (lambda s: s["component_types"].update(pathloss="my.Other"), "other components .*pathloss"),
])
def test_wrong_state_is_refused_and_leaves_the_cell_unchanged(mutate, match):
    a = build()
    a.move(30.0, np.random.default_rng(1))
    state = copy.deepcopy(a.state_dict())
    mutate(state)
    b = build()
    before = b.state_dict()
    with pytest.raises(ValueError, match=match):
        b.load_state_dict(state)
    after = b.state_dict()
    np.testing.assert_array_equal(after["positions_m"], before["positions_m"])
    assert after["los_rng"] == before["los_rng"] and after["shadowing_rng"] == before["shadowing_rng"]


def test_los_latent_must_be_none_for_a_path_loss_without_los():
    a = build(pathloss=TR36814Macro(), shadowing=NoShadowing())
    state = a.state_dict()
    state["los_latent"] = np.zeros(15)
    with pytest.raises(ValueError, match="los_latent.*must be None"):
        build(pathloss=TR36814Macro(), shadowing=NoShadowing()).load_state_dict(state)


def test_fixed_placement_cell_state_round_trips():
    def make():
        return Cell(FixedDistancePlacement([50.0, 120.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                    EqualAllocation(), n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                    uplink_bandwidth_hz=1e6, placement_rng=np.random.default_rng(0),
                    shadowing_rng=np.random.default_rng(1))

    a, b = make(), make()
    state = a.state_dict()
    assert state["component_states"] == {}
    b.load_state_dict(state)
    assert_same_simple = [np.array_equal(getattr(a, p), getattr(b, p)) for p in PROPERTIES if p != "los"]
    assert all(assert_same_simple) and b.los is None


def test_numpy_scalars_become_python_scalars_and_other_types_are_refused():
    import enum

    class Level(enum.IntEnum):
        HIGH = 1

    class CountingFading(RayleighFading):
        def __init__(self, value):
            self.value = value

        def state_dict(self):
            return {"draws": self.value}

        def load_state_dict(self, state):
            self.value = state["draws"]

    cell_with = Cell(UniformDiscPlacement(400.0, 35.0), TR36814Macro(), NoShadowing(), ShannonRate(),
                     EqualAllocation(), n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                     uplink_bandwidth_hz=1e6, placement_rng=np.random.default_rng(0),
                     shadowing_rng=np.random.default_rng(1), fading=CountingFading(np.float64(3.0)))
    saved = cell_with.state_dict()["component_states"]["fading"]["draws"]
    assert type(saved) is float and saved == 3.0
    cell_with.fading.value = Level.HIGH
    with pytest.raises(ValueError, match="fading .* state_dict\\(\\)\\['draws'\\] must hold only numpy arrays.*Level"):
        cell_with.state_dict()
