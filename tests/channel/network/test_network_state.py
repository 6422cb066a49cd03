"""A network of cells inside the radio: A3 in chunks, a scripted trajectory through three cells,
a transfer paused by an interruption, the 1-site network against today's cell, the scenario's refusals."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from sfl_sim.channel import Cell
from sfl_sim.channel.large_scale.pathloss import PATHLOSS
from sfl_sim.channel.large_scale.shadowing import SHADOWING
from sfl_sim.channel.link.allocation import ALLOCATORS
from sfl_sim.channel.link.rate import RATES
from sfl_sim.channel.network import NO_CELL, A3Handover, HexGrid
from sfl_sim.channel.network.state import (
    MEASUREMENT_STEP_S,
    NetworkPlacement,
    NetworkRadio,
    layout_radius_m,
    torus_positions_m,
)
from sfl_sim.config.loading import validate
from tests.helpers import line_three_cells_scenario, small_scenario


def test_a3_in_chunks_equals_one_whole_series_evaluation() -> None:
    rng = np.random.default_rng(3)
    n_clients, n_cells, n_times = 12, 4, 400
    times = np.arange(n_times) * 0.02
    walk = np.cumsum(rng.normal(0.0, 1.5, (n_clients, n_cells, n_times)), axis=2) - 80.0
    # a slow walk of the SINR: long spells below Q_out, some radio link failures
    sinr = np.broadcast_to(np.cumsum(rng.normal(0.0, 1.0, (n_clients, 1, n_times)), axis=2), walk.shape)
    rule = A3Handover(time_to_trigger_s=0.1, t310_s=0.2, reestablishment_time_s=0.1)
    whole = rule.evaluate(times, walk, sinr)
    state = rule.start(n_clients, n_cells, np.argmax(walk[:, :, 0], axis=1))
    serving, connected, events = [], [], []
    for lo, hi in ((0, 1), (1, 37), (37, 200), (200, 201), (201, 400)):
        s, c, e = rule.advance(state, times[lo:hi], walk[:, :, lo:hi], sinr[:, :, lo:hi])
        serving.append(s)
        connected.append(c)
        events += e
    events += rule.pending(state)
    assert whole.counts()["rlf"] > 0 and whole.counts()["a3"] > 0
    np.testing.assert_array_equal(np.concatenate(serving, axis=1), whole.serving_cell)
    np.testing.assert_array_equal(np.concatenate(connected, axis=1), whole.connected)
    assert sorted(events, key=lambda e: (e.time_s, e.client)) == list(whole.events)


class _Line:
    """A timed mobility of one client on a straight line: ``p0 + v t u``."""

    timed = True

    def __init__(self, p0: np.ndarray, velocity: np.ndarray) -> None:
        self.p0, self.v = p0, velocity

    def positions_at(self, t_s: float) -> np.ndarray:
        return (self.p0 + self.v * t_s)[None, :]


def _line_network(rule: A3Handover) -> tuple[NetworkRadio, HexGrid, np.ndarray]:
    grid = HexGrid(n_sites=7, isd_m=500.0, sectors_per_site=1)
    u = np.array([math.cos(math.radians(30.0)), math.sin(math.radians(30.0))])
    large_scale = SimpleNamespace(n_clients=1, pathloss=PATHLOSS.build("log_distance", exponent=3.5),
                                  shadowing=SHADOWING.build("none"))
    budget = SimpleNamespace(server_tx_power_w=None, downlink_bandwidth_hz=None, numerology=None,
                             uplink_bandwidth_hz=20e6, noise_floor_w_per_hz=1e-20)
    net = NetworkRadio(grid, rule, large_scale, budget, np.array([0.2]), np.random.default_rng(0),
                       timed_mobility=_Line(100.0 * u, 10.0 * u), large_scale_step_s=1.0, position_step_s=0.1)
    return net, grid, u


def test_a3_on_a_straight_line_through_three_cells_hands_over_at_the_hand_computed_instants() -> None:
    """7 sites, ISD 500 m, log-distance exponent 3.5 on 2-D distances (no shadowing); the client
    starts 100 m from site A (the centre) and moves at 10 m/s along the 30 deg lattice line
    through site B (at 500 m) and site C (at 1000 m: a lattice site, on the torus one of the 7).

    A3-1 with Hys 3 dB, Off 0: 35 log10(dA / dB) > 3, i.e. dA / dB > rho = 10^(3/35) = 1.21798;
    with dA = s, dB = 500 - s: s > 500 rho / (1 + rho) = 274.572 m, reached at
    t = (274.572 - 100) / 10 = 17.457 s.  Samples every 40 ms: the first with the condition is
    437 x 0.04 = 17.48 s; timeToTrigger 320 ms: the handover A -> B at 17.48 + 0.32 = 17.80 s.
    B -> C: the same geometry 500 m later, at 67.80 s.  The neighbours off the line are at
    >= 433 m, 6.9 dB or more below the serving site there: they never trigger.  After each
    handover the client has no link for 50 ms.
    """
    rule = A3Handover(hysteresis_db=3.0, time_to_trigger_s=0.32, interruption_time_s=0.05)
    net, grid, u = _line_network(rule)
    rho = 10 ** (3.0 / 35.0)
    s_star = 500.0 * rho / (1 + rho)
    first = math.ceil((s_star - 100.0) / 10.0 / MEASUREMENT_STEP_S) * MEASUREMENT_STEP_S + 0.32
    assert first == pytest.approx(17.80)
    site_b = int(np.argmin(grid.wraparound_distances_m((500.0 * u)[None, :])))
    site_c = int(np.argmin(grid.wraparound_distances_m((1000.0 * u)[None, :])))
    events = net.handovers_between(0.0, 80.0)
    assert [(e.source_cell, e.target_cell, e.cause) for e in events] == [(0, site_b, "a3"), (site_b, site_c, "a3")]
    assert events[0].time_s == pytest.approx(17.80, abs=1e-9)
    assert events[1].time_s == pytest.approx(67.80, abs=1e-9)
    # the same events asked in pieces, by another network from scratch
    again, _, _ = _line_network(rule)
    spans = ((0.0, 3.3), (3.3, 17.81), (17.81, 50.0), (50.0, 80.0))
    pieces = [e for a, b in spans for e in again.handovers_between(a, b)]
    assert pieces == list(events)
    t = np.array([17.79, 17.80, 17.849, 17.851])
    assert net.connected(np.zeros(4, dtype=int), t).tolist() == [True, False, False, True]
    assert net.serving_cell(np.zeros(4, dtype=int), t).tolist() == [0, NO_CELL, NO_CELL, site_b]


def _cell(grid: HexGrid, network: bool, seed: int = 1) -> Cell:
    r = np.random.default_rng
    return Cell(NetworkPlacement(grid), PATHLOSS.build("tr36814_macro"), SHADOWING.build("none"),
                RATES.build("shannon"), ALLOCATORS.build("equal"),
                n_clients=20, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=20e6, downlink_bandwidth_hz=20e6, server_tx_power_w=40.0, placement_rng=r(seed),
                shadowing_rng=r(2), los_rng=r(3), interference_rng=r(4), radius_m=layout_radius_m(grid),
                **({"network": grid, "network_rng": r(5)} if network else {}))


def test_a_transfer_spanning_an_interruption_ends_the_interruption_later() -> None:
    cell = _cell(HexGrid(n_sites=7, isd_m=500.0, sectors_per_site=1), network=True)
    radio, net = cell.radio, cell.radio.network
    assert net is not None
    share = radio.links(np.arange(20), 0.0, payload_bits=1e6).bandwidth_hz[3]
    rate = float(radio.links(np.array([3]), 0.0, np.array([share])).rate_bps[0])
    bits = rate * 1.0  # one second on the air
    assert radio.transfer_end_s(3, bits, 0.0, share) == pytest.approx(1.0, rel=1e-12)
    net._out.append((3, 0.5, 0.55))  # a handover's interruption of 50 ms in the middle
    assert not radio.connected([3], 0.52)[0] and radio.serving_cell([3], 0.52)[0] == NO_CELL
    assert radio.transfer_end_s(3, bits, 0.0, share) == pytest.approx(1.05, rel=1e-9)


def test_on_a_network_that_does_not_change_in_time_a_transfer_is_its_bits_over_its_rate() -> None:
    """Static clients, no fading: a link's rate is constant while its client keeps its cell, so a
    transfer is through at exactly t0 + bits / rate (not a sum over 10 ms steps), 3 s or 0.1 s."""
    cell = _cell(HexGrid(n_sites=7, isd_m=500.0, sectors_per_site=1), network=True)
    radio = cell.radio
    share = radio.links(np.arange(20), 0.0, payload_bits=1e6).bandwidth_hz
    rate = radio.links(np.arange(20), 0.25, share).rate_bps
    for seconds in (3.0, 0.1):
        bits = rate * seconds
        ends = radio.transfer_ends_s(np.arange(20), bits, 0.25, share)
        np.testing.assert_array_equal(ends, 0.25 + bits / rate)


def test_the_one_site_network_gives_the_links_of_the_single_cell_at_the_same_positions() -> None:
    """The 1-site network's clients are dropped in its hexagon (not today's disc: a scenario
    without cell.network keeps the disc); at the same positions its links are the cell's."""
    grid = HexGrid(n_sites=1, isd_m=500.0, sectors_per_site=1)
    one, single = _cell(grid, network=True), _cell(grid, network=False)
    np.testing.assert_array_equal(one.positions_m, single.positions_m)
    ids = np.arange(20)
    a, b = one.radio.links(ids, 0.0, payload_bits=1e6), single.radio.links(ids, 0.0, payload_bits=1e6)
    np.testing.assert_allclose(a.rate_bps, b.rate_bps, rtol=1e-12)
    np.testing.assert_array_equal(a.bandwidth_hz, b.bandwidth_hz)
    assert one.radio.n_cells == 1 and single.radio.n_cells == 1
    assert one.radio.serving_cell(ids, 30.0).tolist() == [0] * 20
    assert one.radio.handovers_between(0.0, 30.0) == () == single.radio.handovers_between(0.0, 30.0)


def test_the_network_state_survives_a_kill_and_resume() -> None:
    grid = HexGrid(n_sites=7, isd_m=500.0, sectors_per_site=1)
    cell = _cell(grid, network=True)
    cell.radio.advance_to(1.0)
    cell.radio.set_transmitting(2, True)
    saved = cell.state_dict()
    other = _cell(grid, network=True)
    other.load_state_dict(saved)
    ids = np.arange(20)
    np.testing.assert_array_equal(other.radio.links(ids, 1.0, payload_bits=1e6).rate_bps,
                                  cell.radio.links(ids, 1.0, payload_bits=1e6).rate_bps)


@pytest.mark.parametrize(("cell", "message"), [
    ({"handover": {"name": "a3", "hysteresis_db": 1.0}}, "cell.handover"),
    ({"network": {"name": "hexgrid", "n_sites": 7, "sectors_per_site": 1}, "interference": {"name": "first_tier"}},
     "cell.interference"),
    ({"network": {"name": "hexgrid", "n_sites": 7, "sectors_per_site": 1},
      "placement": {"name": "uniform_disc", "radius_m": 800.0}}, "cell.placement"),
])
def test_the_scenario_refuses_what_a_network_does_not_build(cell: dict, message: str) -> None:
    with pytest.raises(Exception, match=message):
        validate({**small_scenario(), "cell": cell})


@pytest.mark.slow
@pytest.mark.parametrize("scheduler", [{"name": "round_robin"}, {"name": "proportional_fair", "fidelity": "slot"}])
def test_a_dynamic_scheduler_on_a_network_runs(tmp_path, scheduler: dict) -> None:
    """Once refused ('one fluid/slot band per cell is not built yet'): a scenario with cell.network and a
    dynamic cell.scheduler validates and runs a round (one band per cell, sfl_sim.engine.band.cells)."""
    import csv

    import yaml

    from sfl_sim.cli import main
    from tests.runs.test_end_to_end import SMALL

    cell = {**SMALL.get("cell", {}), "network": {"name": "hexgrid", "n_sites": 7, "sectors_per_site": 1},
            "scheduler": scheduler}
    cell.pop("placement", None)
    data = {**SMALL, "rounds": 1, "algorithms": [{"name": "fedavg"}], "cell": cell}
    assert validate(data).cell.scheduler.name == scheduler["name"]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["scenario", str(path), "-o", str(tmp_path / "o"), "--no-progress"]) == 0
    with (tmp_path / "o" / "fedavg" / "rounds.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 1


def test_the_default_placement_written_out_is_accepted_with_a_network() -> None:
    """The shipped scenarios write cell.placement's default out; a study that sets cell.network on them runs."""
    placement = {"name": "uniform_disc", "radius_m": 500.0, "min_distance_m": 35.0}
    cfg = validate({**small_scenario(), "cell": {"network": {"name": "hexgrid", "n_sites": 7, "sectors_per_site": 1},
                                                 "placement": placement}})
    assert cfg.cell.network is not None


def test_uplink_interference_lowers_the_rates_of_other_cells_only() -> None:
    cell = _cell(HexGrid(n_sites=7, isd_m=500.0, sectors_per_site=1), network=True)
    radio = cell.radio
    ids = np.arange(20)
    quiet = radio.links(ids, 0.0, payload_bits=1e6)
    cells = radio.serving_cell(ids, 0.0)
    talker = 0
    radio.set_transmitting(talker, True)
    loud = radio.links(ids, 0.0, payload_bits=1e6)
    same = cells == cells[talker]
    np.testing.assert_array_equal(loud.rate_bps[same], quiet.rate_bps[same])
    assert np.all(loud.rate_bps[~same] < quiet.rate_bps[~same])
    radio.set_transmitting(talker, False)
    np.testing.assert_array_equal(radio.links(ids, 0.0, payload_bits=1e6).rate_bps, quiet.rate_bps)


def test_a_scenario_dump_validates_again_and_without_a_network_names_none_of_its_fields() -> None:
    """A run's scenario.yaml is the scenario's dump, validated again on resume and re-timing: without a
    network it is as before (no network, no handover), with one it round-trips."""
    plain = validate(small_scenario()).model_dump(mode="json")
    assert "network" not in plain["cell"] and "handover" not in plain["cell"]
    assert validate(plain).cell.network is None
    networked = validate({**small_scenario(), "cell": {"network": {"name": "hexgrid", "n_sites": 7,
                                                                   "sectors_per_site": 1}}}).model_dump(mode="json")
    assert validate(networked).cell.network is not None


class _Wander:
    """A timed mobility: clients on circles of different radii and speeds around the centre."""

    timed = True

    def __init__(self, n: int) -> None:
        self.r = np.linspace(50.0, 900.0, n)
        self.w = np.linspace(0.01, 0.05, n)

    def positions_at(self, t_s: float) -> np.ndarray:
        a = self.w * t_s
        return np.stack([self.r * np.cos(a), self.r * np.sin(a)], axis=1)


def _wander_network(n: int = 30) -> NetworkRadio:
    grid = HexGrid(n_sites=7, isd_m=500.0, sectors_per_site=1)
    large_scale = SimpleNamespace(n_clients=n, pathloss=PATHLOSS.build("tr36814_macro"),
                                  shadowing=SHADOWING.build("lognormal", sigma_db=8.0))
    budget = SimpleNamespace(server_tx_power_w=None, downlink_bandwidth_hz=None, numerology=None,
                             uplink_bandwidth_hz=20e6, noise_floor_w_per_hz=1e-20)
    rule = A3Handover(time_to_trigger_s=0.04, interruption_time_s=0.05)
    return NetworkRadio(grid, rule, large_scale, budget, np.full(n, 0.2), np.random.default_rng(7),
                        timed_mobility=_Wander(n), large_scale_step_s=0.5, position_step_s=0.05)


def test_the_rsrp_of_a_chunk_at_once_equals_the_samples_one_by_one() -> None:
    """The losses of a chunk's samples are computed together, per epoch: the same numbers as
    each sample alone (a sample's numbers do not depend on what it is computed with)."""
    net = _wander_network()
    times = np.arange(0, 80) * MEASUREMENT_STEP_S  # four epochs of 0.5 s
    together = net._rsrp_at(times)
    for j, t in enumerate(times.tolist()):
        np.testing.assert_array_equal(net._rsrp_at(np.array([t]))[:, :, 0], together[:, :, j])


def test_torus_reduction_of_a_point_does_not_depend_on_its_batch() -> None:
    grid = HexGrid(n_sites=7, isd_m=500.0, sectors_per_site=1)
    points = np.random.default_rng(0).uniform(-3000.0, 3000.0, (257, 2))
    together = torus_positions_m(grid, points)
    one_by_one = np.vstack([torus_positions_m(grid, p[None, :]) for p in points])
    np.testing.assert_array_equal(together, one_by_one)
    # on the torus, within the layout's circumradius of the centre ring... and every image the same point
    t = grid.wraparound_translations_m[3]
    np.testing.assert_allclose(torus_positions_m(grid, points + t), together, atol=1e-6)


def test_the_intervals_without_a_link_are_forgotten_once_the_clock_passes_them() -> None:
    """``connected`` keeps only the interruptions still open after the clock (and those evaluated
    ahead, a chunk of samples): the list does not grow with the run's history."""
    net = _wander_network(60)
    kept = []
    for t in np.arange(0.0, 60.0, 0.5):
        net.advance_to(float(t))
        net.connected(np.arange(60), float(t))
        kept.append(len(net._out))
        assert all(end > t for _, _, end in net._out)
    events = net.handover_events()
    assert len(events) > 200
    assert max(kept) < len(events) / 4
    # an interruption ahead of the clock answers as before
    e = next(e for e in net.handovers_between(60.0, 70.0) if e.cause == "a3")
    net.advance_to(e.time_s - 0.01)
    assert net.connected([e.client], e.time_s - 0.001)[0]
    assert not net.connected([e.client], e.time_s)[0]
    assert net.connected([e.client], e.time_s + e.interruption_s + 0.001)[0]


def test_a_long_silence_keeps_what_the_rule_still_has_to_walk() -> None:
    """Nobody asks for 20 s while the clock moves on: the rule still evaluates every measurement
    sample from where it stopped (the latents of those epochs are kept), and the answers are those
    of a network asked all along."""
    quiet, busy = _wander_network(), _wander_network()
    quiet.connected(np.arange(30), 0.0)
    for t in np.arange(0.0, 20.0, 0.25):
        busy.advance_to(float(t))
        busy.connected(np.arange(30), float(t))
    quiet.advance_to(20.0)
    busy.advance_to(20.0)
    loss, _ = quiet.losses(np.arange(30), 20.0)  # the losses at the clock first (a link's question)
    np.testing.assert_array_equal(loss, busy.losses(np.arange(30), 20.0)[0])
    np.testing.assert_array_equal(quiet.serving_cell(np.arange(30), 20.0), busy.serving_cell(np.arange(30), 20.0))
    assert quiet.handovers_between(0.0, 20.0) == busy.handovers_between(0.0, 20.0)
    assert len(quiet.handovers_between(0.0, 20.0)) > 50


def test_a_trace_through_three_cells_in_a_built_cell_hands_over_at_the_hand_computed_instants() -> None:
    """The straight line of the hand calculation above (``test_a3_on_a_straight_line...``: 17.80 s
    A -> B, 67.80 s B -> C) as an ns-2 movement file in a scenario's cell: the trace is not pulled
    into the cell's annulus (at 67.8 s the client is 778 m from the centre, beyond the layout's
    763.8 m circumradius: on the torus it is near site C)."""

    from sfl_sim.runs.build import build_cell

    cell = build_cell(validate(line_three_cells_scenario()))
    radio = cell.radio
    events = radio.handovers_between(0.0, 80.0)
    grid = radio.network.grid
    u = np.array([math.cos(math.radians(30.0)), math.sin(math.radians(30.0))])
    site_b = int(np.argmin(grid.wraparound_distances_m((500.0 * u)[None, :])))
    site_c = int(np.argmin(grid.wraparound_distances_m((1000.0 * u)[None, :])))
    assert [(e.source_cell, e.target_cell, e.cause) for e in events] == [(0, site_b, "a3"), (site_b, site_c, "a3")]
    assert [e.time_s for e in events] == pytest.approx([17.80, 67.80], abs=1e-9)
    assert radio.network.positions_at(67.8) == pytest.approx(
        torus_positions_m(grid, (778.0 * u)[None, :]), abs=1e-6)


@pytest.mark.parametrize("isd_m", [200.0, 500.0])
def test_the_mobility_range_warning_on_a_network_says_what_happens_and_what_helps(isd_m: float) -> None:
    import warnings

    from sfl_sim.channel import GaussMarkovMobility
    from sfl_sim.channel.large_scale.model import ModelValidityWarning

    grid = HexGrid(n_sites=7, isd_m=isd_m, sectors_per_site=1)
    r = np.random.default_rng
    parts = (NetworkPlacement(grid), PATHLOSS.build("tr36814_macro"), SHADOWING.build("none"),
             RATES.build("shannon"), ALLOCATORS.build("equal"))
    kwargs = dict(n_clients=20, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0, uplink_bandwidth_hz=20e6,
                  downlink_bandwidth_hz=20e6, server_tx_power_w=40.0, placement_rng=r(1), shadowing_rng=r(2),
                  los_rng=r(3), interference_rng=r(4), radius_m=layout_radius_m(grid), network=grid,
                  network_rng=r(5), mobility_rng=r(6))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # min_distance_m set to the model's 35 m: on a network it keeps clients off no site but the centre one
        Cell(*parts, mobility=GaussMarkovMobility(min_distance_m=35.0), **kwargs)
    (message,) = [str(w.message) for w in caught if issubclass(w.category, ModelValidityWarning)]
    assert "set min_distance_m" not in message  # no setting of it helps on a network
    assert "takes clients past every site, as near as 1 m" in message
    assert "evaluated at max(d, 1 m)" in message and "[35, inf] m of pathloss TR36814Macro()" in message
    # by hand: pi 35^2 / ((sqrt(3) / 2) isd^2): 11.1 % at 200 m, 1.78 % at 500 m
    share = math.pi * 35.0**2 / (math.sqrt(3.0) / 2.0 * isd_m**2)
    assert f"about {100 * share:.3g} % of the layout's area lies within 35 m of a site" in message
    assert {200.0: "11.1 %", 500.0: "1.78 %"}[isd_m] in message
    assert f"a path-loss model valid over [1, {layout_radius_m(grid):g}] m avoids it" in message
    with pytest.raises(ValueError, match="as near as 1 m"):  # out_of_range: error refuses with the same words
        Cell(*parts, mobility=GaussMarkovMobility(min_distance_m=35.0), out_of_range="error", **kwargs)


def test_serving_cells_before_the_kept_samples_are_refused_not_read_from_a_later_sample() -> None:
    """Once the clock has moved on, the samples before it are forgotten: asking for a serving cell
    then is an error naming the time (a negative column would read a later sample's cell)."""
    net = _wander_network(30)
    for t in np.arange(0.0, 20.0, 0.5):
        net.advance_to(float(t))
        net.attached_cell(np.arange(30), float(t))
    assert net._k_base > 0
    with pytest.raises(ValueError, match=r"network: the serving cells at 1\.0 s were asked after they were forgotten"):
        net.attached_cell(np.arange(30), 1.0)
    with pytest.raises(ValueError, match="forgotten"):
        net.attached_cell(np.arange(3), np.array([19.6, 1.0, 19.7]))
    assert net.attached_cell(np.arange(30), 19.6).shape == (30,)
