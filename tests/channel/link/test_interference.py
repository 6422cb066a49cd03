"""Uplink interference: a noise rise adds exactly, the first tier of a hexagonal layout by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.channel import (
    INTERFERENCE,
    FirstTierInterference,
    FixedDistancePlacement,
    NoiseRise,
    OpenLoopPowerControl,
    ShannonRate,
    check_component,
)
from sfl_sim.channel.link.interference import first_tier_sites_m
from tests.channel.helpers import N0_W_PER_HZ, small_cell

BAND_HZ = 3e6  # small_cell's uplink


def _gain(distance_m: float) -> float:
    return 10.0 ** (-(128.1 + 37.6 * math.log10(distance_m / 1000.0)) / 10.0)


def test_noise_rise_adds_exactly_to_the_noise() -> None:
    rate = ShannonRate(noise_figure_db=5.0)
    quiet = small_cell(rate=rate)
    loud = small_cell(rate=ShannonRate(noise_figure_db=5.0), interference=NoiseRise(noise_rise_db=6.0))
    assert quiet.noise_rise_linear == 1.0
    assert loud.noise_rise_linear == pytest.approx(10 ** 0.6, rel=1e-15)
    a, b = quiet.uplink_link([0, 1, 2]), loud.uplink_link([0, 1, 2])
    np.testing.assert_allclose(b.snr_db, a.snr_db - 6.0, rtol=0, atol=1e-12)
    # I = N0 F (IoT - 1) joins the thermal noise N0 F: rate = b log2(1 + p g / (b (N0 F + I))).
    noise_f = N0_W_PER_HZ * 10 ** 0.5
    interference = noise_f * (10 ** 0.6 - 1.0)
    for k, d in enumerate((100.0, 300.0, 500.0)):
        expect = 1e6 * math.log2(1.0 + 0.2 * _gain(d) / (1e6 * (noise_f + interference)))
        assert b.rate_bps[k] == pytest.approx(expect, rel=1e-12)
    info = loud.describe()
    np.testing.assert_allclose(info["snr_db"], quiet.describe()["snr_db"], rtol=0, atol=0)
    np.testing.assert_allclose(info["sinr_db"], info["snr_db"] - 6.0, atol=1e-12)
    # The downlink is not disturbed.
    assert loud.downlink_rates_bps([0, 1, 2]).tolist() == quiet.downlink_rates_bps([0, 1, 2]).tolist()


def test_first_tier_sites_are_the_hexagonal_ring() -> None:
    sites = first_tier_sites_m(866.0)
    np.testing.assert_allclose(np.hypot(*sites.T), 866.0, rtol=1e-12)
    # Neighbours are one ISD from each other too (a hexagonal ring), and 2 R cos 30 = sqrt(3) R.
    np.testing.assert_allclose(np.hypot(*(sites - np.roll(sites, 1, axis=0)).T), 866.0, rtol=1e-12)
    assert 2 * 500.0 * math.cos(math.radians(30)) == pytest.approx(math.sqrt(3) * 500.0)


def _hand_noise_rise(distances: list, isd: float, power_of) -> float:
    """1 + sum_j p_j g_j / (B N0): every neighbour client at (d, 0) around its site, all active."""
    total_w = 0.0
    for cx, cy in first_tier_sites_m(isd):
        for d in distances:
            total_w += power_of(d) * _gain(math.hypot(cx + d, cy))
    return 1.0 + total_w / BAND_HZ / N0_W_PER_HZ


def test_first_tier_matches_a_hand_computation_for_a_fixed_placement() -> None:
    distances = [100.0, 300.0, 500.0]
    cell = small_cell(interference=FirstTierInterference(activity=1.0, inter_site_distance_m=1000.0),
                      interference_rng=np.random.default_rng(7))
    rise = _hand_noise_rise(distances, 1000.0, lambda d: 0.2)
    assert cell.noise_rise_linear == pytest.approx(rise, rel=1e-12)
    info = cell.describe()
    assert np.all(info["sinr_db"] < info["snr_db"])
    np.testing.assert_allclose(info["sinr_db"], info["snr_db"] - 10 * math.log10(rise), atol=1e-9)


@pytest.mark.parametrize("rb_load", [0.0, 0.25, 1.0])
def test_first_tier_interference_follows_the_neighbours_rb_load(rb_load: float) -> None:
    # Hand calculation: a neighbour with a fraction rho of its RBs busy hits ours with probability
    # rho, so the interference PSD is rho x the fully loaded one: IoT = 1 + rho (IoT_full - 1).
    cell = small_cell(interference=FirstTierInterference(activity=1.0, inter_site_distance_m=1000.0,
                                                         rb_load=rb_load),
                      interference_rng=np.random.default_rng(7))
    full = _hand_noise_rise([100.0, 300.0, 500.0], 1000.0, lambda d: 0.2)
    assert cell.noise_rise_linear == pytest.approx(1.0 + rb_load * (full - 1.0), rel=1e-12)


def test_first_tier_interferers_use_the_cells_power_control() -> None:
    distances = [100.0, 300.0, 500.0]
    pc = OpenLoopPowerControl(p0_dbm=-100.0, alpha=0.8, p_max_dbm=23.0, subcarrier_spacing_hz=15e3)
    cell = small_cell(power_control=pc, interference=FirstTierInterference(1.0, inter_site_distance_m=1000.0),
                      interference_rng=np.random.default_rng(7))

    def power(d: float) -> float:  # all three active: 1 MHz each = 6 RBs at 15 kHz
        pl = 128.1 + 37.6 * math.log10(d / 1000.0)
        return 10 ** ((min(23.0, -100.0 + 10 * math.log10(6.0) + 0.8 * pl) - 30.0) / 10)

    assert cell.noise_rise_linear == pytest.approx(_hand_noise_rise(distances, 1000.0, power), rel=1e-12)


def test_activity_draws_from_the_interference_stream() -> None:
    def make(seed: int, activity: float):
        return small_cell(placement=FixedDistancePlacement([100.0, 300.0, 500.0]),
                          interference=FirstTierInterference(activity=activity),
                          interference_rng=np.random.default_rng(seed))

    assert make(1, 0.0).noise_rise_linear == 1.0
    a, b = make(5, 0.5), make(5, 0.5)
    rises_a, rises_b = [a.noise_rise_linear], [b.noise_rise_linear]
    for _ in range(20):
        a.move(1.0, np.random.default_rng(0))
        b.move(1.0, np.random.default_rng(0))
        rises_a.append(a.noise_rise_linear)
        rises_b.append(b.noise_rise_linear)
    assert rises_a == rises_b  # same stream, same draws
    assert len(set(rises_a)) > 1  # a new draw every round
    full = make(5, 1.0).noise_rise_linear
    assert all(1.0 <= r <= full for r in rises_a)
    # The default scene (placement stream untouched) keeps the cell's own clients where they were.
    assert make(5, 0.5).positions_m.tolist() == small_cell().positions_m.tolist()


def test_a_checkpointed_cell_continues_the_interference_draws() -> None:
    def make():
        return small_cell(interference=FirstTierInterference(activity=0.5), interference_rng=np.random.default_rng(3))

    a = make()
    a.move(1.0, np.random.default_rng(0))
    state = a.state_dict()
    b = make()
    b.load_state_dict(state)
    assert b.noise_rise_linear == a.noise_rise_linear
    a.move(1.0, np.random.default_rng(0))
    b.move(1.0, np.random.default_rng(0))
    assert b.noise_rise_linear == a.noise_rise_linear


@pytest.mark.parametrize("name, params", [("none", {}), ("noise_rise", {"noise_rise_db": 3.0}),
                                          ("first_tier", {"activity": 1.0}), ("first_tier", {"activity": 0.2})])
def test_builtin_interference_models_pass_conformance(name, params) -> None:
    assert check_component("interference", INTERFERENCE.create(name, **params))["checks"]


@pytest.mark.parametrize("make, words", [
    (lambda: FirstTierInterference(activity=1.5), ["activity", "1.5", "[0, 1]"]),
    (lambda: FirstTierInterference(activity=-0.1), ["activity", "-0.1"]),
    (lambda: FirstTierInterference(0.5, inter_site_distance_m=0.0), ["inter_site_distance_m", "0"]),
    (lambda: NoiseRise(noise_rise_db=-3.0), ["noise_rise_db", "-3"]),
])
def test_bad_parameter_is_one_line(make, words) -> None:
    with pytest.raises(ValueError) as err:
        make()
    message = str(err.value)
    assert "\n" not in message
    for w in words:
        assert w in message, (w, message)


def test_a_cell_takes_only_a_state_of_its_own_version() -> None:
    """A state saved by an older cell is upgraded by whoever reads it (the checkpoint reader:
    tests/runs/rundir/test_upgrade.py); the cell itself refuses it."""
    state = small_cell().state_dict()
    old = {k: v for k, v in state.items() if k not in ("interference_rng", "noise_rise")}
    old["version"] = 1
    with pytest.raises(ValueError, match="version must be 2, got 1"):
        small_cell().load_state_dict(old)


def test_first_tier_sites_equal_sionnas_hexagonal_grid() -> None:
    sys_module = pytest.importorskip("sionna.sys", reason="sionna-no-rt is not installed (pip install sionna-no-rt)")
    grid = sys_module.HexGrid(num_rings=1, isd=866.0, precision="double", device="cpu")
    theirs = grid.cell_loc[1:, :2].numpy()  # the centre cell first, then the first ring
    ours = first_tier_sites_m(866.0)

    def by_angle(points):
        return points[np.argsort(np.arctan2(points[:, 1], points[:, 0]))]

    np.testing.assert_allclose(by_angle(ours), by_angle(theirs), rtol=0, atol=1e-9)
    # Their cell radius is the hexagon's circumradius: ISD = sqrt(3) R.
    assert float(grid.cell_radius) * math.sqrt(3) == pytest.approx(866.0)


def test_a_neighbours_clients_stay_in_its_own_hexagon() -> None:
    """Issue 36, item 6: a disc of radius R around a site at sqrt(3) R put about 3 % of a neighbour's clients
    nearer our base station than their own; each is now dropped in its own hexagon (nearer its site than any
    other of the grid)."""
    from sfl_sim.channel import UniformDiscPlacement
    from sfl_sim.channel.link.interference import in_own_hexagon

    radius = 500.0
    isd = math.sqrt(3.0) * radius
    disc = UniformDiscPlacement(radius_m=radius, min_distance_m=35.0).sample_positions_m(20000,
                                                                                        np.random.default_rng(1))
    outside = ~in_own_hexagon(disc, isd)
    assert 0.1 < outside.mean() < 0.25  # the disc's caps beyond the hexagon's sides (1 - 3 sqrt(3) / (2 pi))
    cell = small_cell(UniformDiscPlacement(radius_m=radius, min_distance_m=35.0), n_clients=200,
                      interference=FirstTierInterference(activity=1.0), interference_rng=np.random.default_rng(7))
    layout = cell.interference_layout
    sites = first_tier_sites_m(isd)
    local = layout["positions_m"] - sites[layout["cell"]]
    assert np.all(in_own_hexagon(local, isd))
    ours = np.hypot(*layout["positions_m"].T)
    assert np.all(ours >= np.hypot(*local.T))  # none nearer our base station than its own


def test_model_sigma_shadowing_works_with_the_first_tier() -> None:
    """Issue 36, item 7: ``shadowing: {name: lognormal, sigma_db: model}`` with ``interference: first_tier`` was
    refused (``use sample_site_db``); the neighbours' links now take the path-loss model's sigma (8 dB)."""
    from sfl_sim.channel import LogNormalShadowing, UniformDiscPlacement

    def cell(shadowing):
        return small_cell(UniformDiscPlacement(radius_m=500.0, min_distance_m=35.0), n_clients=50,
                          shadowing=shadowing, interference=FirstTierInterference(activity=1.0),
                          interference_rng=np.random.default_rng(7))

    model, number = cell(LogNormalShadowing(sigma_db="model")), cell(LogNormalShadowing(sigma_db=8.0))
    assert model.noise_rise_linear > 1.0
    assert model.noise_rise_linear == pytest.approx(number.noise_rise_linear, rel=1e-12)  # TR 36.814: 8 dB


def test_own_cell_load_drives_the_neighbours_from_the_second_draw() -> None:
    # Before any round the neighbours are fully loaded; cell.move hands each draw the load the
    # cell's uplink had in the round before, and IoT = 1 + rho (IoT_full - 1) with that rho.
    cell = small_cell(interference=FirstTierInterference(activity=1.0, inter_site_distance_m=1000.0,
                                                         rb_load="own_cell"),
                      interference_rng=np.random.default_rng(7))
    full = _hand_noise_rise([100.0, 300.0, 500.0], 1000.0, lambda d: 0.2)
    assert cell.noise_rise_linear == pytest.approx(full, rel=1e-12)
    for rho in (0.3, 0.0, 1.0):
        cell.move(1.0, np.random.default_rng(0), uplink_load=rho)
        assert cell.noise_rise_linear == pytest.approx(1.0 + rho * (full - 1.0), rel=1e-12)
    cell.move(1.0, np.random.default_rng(0))  # not measured: fully loaded neighbours
    assert cell.noise_rise_linear == pytest.approx(full, rel=1e-12)
    with pytest.raises(ValueError, match=r"^uplink_load: got 1.5; allowed: a fraction in \[0, 1\]$"):
        cell.move(1.0, np.random.default_rng(0), uplink_load=1.5)


def test_a_fixed_rb_load_ignores_the_cells_own_load() -> None:
    cell = small_cell(interference=FirstTierInterference(activity=1.0, inter_site_distance_m=1000.0, rb_load=0.25),
                      interference_rng=np.random.default_rng(7))
    before = cell.noise_rise_linear
    cell.move(1.0, np.random.default_rng(0), uplink_load=0.9)
    assert cell.noise_rise_linear == pytest.approx(before, rel=1e-12)


def test_first_tier_states_the_load_following_protocol() -> None:
    from sfl_sim.channel.protocols import LoadFollowingInterference

    assert isinstance(FirstTierInterference(activity=0.1, rb_load="own_cell"), LoadFollowingInterference)
    assert FirstTierInterference(activity=0.1, rb_load="own_cell").follows_own_load
    assert not FirstTierInterference(activity=0.1, rb_load=0.5).follows_own_load
    assert not isinstance(NoiseRise(noise_rise_db=3.0), LoadFollowingInterference)
