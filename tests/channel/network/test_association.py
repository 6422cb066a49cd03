"""RSRP, strongest-cell association, A3 handover with hysteresis and time-to-trigger, radio link failure:
the instants against hand calculations."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.channel.large_scale.pathloss import LogDistance
from sfl_sim.channel.network import (
    HANDOVER,
    NO_CELL,
    A3Handover,
    HandoverConformanceError,
    HandoverTrace,
    HexGrid,
    a3_conditions,
    check_handover,
    rsrp_dbm,
    strongest_cell,
)

DT = 0.01


def _times(n: int, dt: float = DT) -> np.ndarray:
    return np.arange(n) * dt


def test_rsrp_is_per_resource_element():
    # RSRP = P_RB - 10 log10(12) - CL: 10 dBm per RB, 100 dB coupling loss -> -100.7918 dBm.
    out = rsrp_dbm([[100.0, 90.0]], 10.0)
    assert out[0, 0] == pytest.approx(10.0 - 10.0 * math.log10(12.0) - 100.0)
    assert out[0, 0] == pytest.approx(-100.7918, abs=1e-4)
    per_cell = rsrp_dbm(np.full((1, 2, 3), 100.0), [10.0, 13.0])
    assert np.allclose(per_cell[0, 1] - per_cell[0, 0], 3.0)
    with pytest.raises(ValueError, match="tx_power_per_rb_dbm"):
        rsrp_dbm([[100.0, 90.0]], [1.0, 2.0, 3.0])


def test_strongest_cell_and_the_a3_inequalities():
    assert strongest_cell([[-90.0, -80.0, -85.0], [-70.0, -70.0, -75.0]]).tolist() == [1, 0]
    entering, leaving = a3_conditions([-86.0, -88.0, -94.0], -90.0, hysteresis_db=2.0, offset_db=1.0)
    # -86 - 2 > -89 (enters); -88 - 2 = -90 is not > -89 and -88 + 2 = -86 is not < -89 (neither);
    # -94 + 2 < -89 (leaves).
    assert entering.tolist() == [True, False, False]
    assert leaving.tolist() == [False, False, True]


def _two_cells(margin_db: np.ndarray) -> np.ndarray:
    """One client, cell 0 at -90 dBm, cell 1 at -90 + margin."""
    rsrp = np.full((1, 2, margin_db.size), -90.0)
    rsrp[0, 1] += margin_db
    return rsrp


def test_ttt_counts_from_the_first_sample_the_entering_condition_holds():
    # Neighbour 5 dB better from t = 1.00 s; Hys 3 dB: A3-1 holds from 1.00; TTT 0.256 s -> the first sample
    # at or after 1.256 s is 1.26 s.
    times = _times(300)
    trace = A3Handover(hysteresis_db=3.0, time_to_trigger_s=0.256, interruption_time_s=0.05).evaluate(
        times, _two_cells(np.where(times >= 1.0 - 1e-9, 5.0, 0.0)))
    (event,) = trace.events
    assert (event.time_s, event.source_cell, event.target_cell, event.cause) == (pytest.approx(1.26), 0, 1, "a3")
    k = int(round(1.26 / DT))
    assert trace.serving_cell[0, k - 1] == 0 and trace.serving_cell[0, k] == 1
    # No link for 50 ms from 1.26 s: samples 1.26 .. 1.30 are down, 1.31 is up.
    assert trace.connected[0, :k].all() and not trace.connected[0, k:k + 5].any() and trace.connected[0, k + 5:].all()
    assert trace.counts() == {"a3": 1, "rlf": 0}
    assert trace.rows()[0]["cause"] == "a3"


def test_a_dip_resets_the_ttt_timer():
    # As above, but at 1.10 s the margin dips to 2 dB (inside the hysteresis band: A3-1 fails, A3-2 does not
    # hold either): the timer restarts at 1.11 s and fires at the first sample >= 1.366 s, 1.37 s.
    times = _times(300)
    margin = np.where(times >= 1.0 - 1e-9, 5.0, 0.0)
    margin[int(round(1.10 / DT))] = 2.0
    trace = A3Handover(hysteresis_db=3.0, time_to_trigger_s=0.256).evaluate(times, _two_cells(margin))
    assert [e.time_s for e in trace.events] == [pytest.approx(1.37)]


def test_zero_ttt_hands_over_at_the_first_entering_sample_and_offsets_shift_it():
    times = _times(200)
    ramp = 10.0 * times - 5.0  # margin crosses 0 at 0.5 s, 1 dB per 0.1 s
    trace = A3Handover(hysteresis_db=1.0, a3_offset_db=2.0, time_to_trigger_s=0.0).evaluate(times, _two_cells(ramp))
    # Enters when margin - 1 > 2, i.e. margin > 3 dB: t > 0.8 s -> 0.81 s.
    assert [e.time_s for e in trace.events] == [pytest.approx(0.81)]
    # A cell individual offset of +2 dB on the neighbour brings it 0.2 s earlier.
    early = A3Handover(hysteresis_db=1.0, a3_offset_db=2.0, time_to_trigger_s=0.0,
                       cell_individual_offsets_db=[0.0, 2.0]).evaluate(times, _two_cells(ramp))
    assert [e.time_s for e in early.events] == [pytest.approx(0.61)]


def test_no_ping_pong_inside_the_hysteresis():
    times = _times(400)
    margin = 2.5 * np.sin(2 * np.pi * times)  # never beyond +-3 dB: no event either way
    trace = A3Handover(hysteresis_db=3.0, time_to_trigger_s=0.0).evaluate(times, _two_cells(margin))
    assert trace.events == () and np.all(trace.serving_cell == 0)


def test_rlf_after_t310_and_reestablishment_to_the_strongest_cell():
    # Serving SINR below Q_out = -8 dB from 2.00 s on: T310 = 1 s -> RLF at 3.00 s; no link for 0.5 s; at 3.50 s
    # the client joins the strongest cell (cell 1 by then, 1 dB ahead: no A3 event before, Hys 3 dB).
    times = _times(500)
    rsrp = _two_cells(np.where(times >= 2.5, 1.0, -1.0))
    sinr = np.full(rsrp.shape, 5.0)
    sinr[0, 0, times >= 2.0 - 1e-9] = -10.0
    rule = A3Handover(q_out_db=-8.0, t310_s=1.0, reestablishment_time_s=0.5)
    trace = rule.evaluate(times, rsrp, sinr_db=sinr)
    (event,) = trace.events
    assert (event.time_s, event.source_cell, event.target_cell, event.cause, event.interruption_s) == (
        pytest.approx(3.0), 0, 1, "rlf", 0.5)
    k_rlf, k_back = int(round(3.0 / DT)), int(round(3.5 / DT))
    assert np.all(trace.serving_cell[0, k_rlf:k_back] == NO_CELL) and np.all(trace.serving_cell[0, k_back:] == 1)
    assert trace.connected[0, :k_rlf].all() and not trace.connected[0, k_rlf:k_back].any()
    assert trace.connected[0, k_back:].all()
    assert trace.counts() == {"a3": 0, "rlf": 1}


def test_a_moment_in_sync_resets_t310():
    times = _times(500)
    sinr = np.full((1, 2, times.size), -10.0)
    sinr[0, 0, :int(round(1.0 / DT))] = 5.0
    sinr[0, 0, int(round(1.5 / DT))] = 0.0  # back in sync for one sample at 1.50 s
    trace = A3Handover(t310_s=1.0, reestablishment_time_s=0.0).evaluate(times, _two_cells(np.zeros(times.size)),
                                                                        sinr_db=sinr)
    # Out of sync from 1.00 s, reset at 1.50 s, again from 1.51 s: RLF at 2.51 s, re-established at once (to cell
    # 0, the strongest on a tie); the new link is monitored from the next sample, 2.52 s, still out of sync: the
    # next RLF is T310 later, 3.52 s, then 4.53 s.
    assert [(e.time_s, e.cause, e.target_cell) for e in trace.events] == [
        (pytest.approx(2.51), "rlf", 0), (pytest.approx(3.52), "rlf", 0), (pytest.approx(4.53), "rlf", 0)]


def _hand_crossing_m(isd_m: float, height_m: float, exponent: float, margin_db: float) -> float:
    """Where along the line from site A to site B (distance s from A) the RSRP of B exceeds A's by
    ``margin_db`` under a log-distance law on 3-D distances: (s^2 + h^2) = rho^2 ((L - s)^2 + h^2),
    rho = 10^(margin / (10 gamma)); the root in (L/2, L)."""
    rho = 10.0 ** (margin_db / (10.0 * exponent))
    a = 1.0 - rho**2
    b = 2.0 * rho**2 * isd_m
    c = -(rho**2) * isd_m**2 + a * height_m**2
    return (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)


def test_straight_line_through_three_cells_hands_over_at_the_hand_computed_instants():
    """Held-out style scenario: 7 omni sites, ISD 500 m, a client at 10 m/s from site A (-433, -250) through
    the centre site B to site C (433, 250); log-distance path loss (exponent 3.5) on 3-D distances with a
    25 m height difference and wrap-around; Hys 3 dB, Off 0, TTT 320 ms, 20 ms samples."""
    isd, height, exponent, speed, dt, ttt = 500.0, 25.0, 3.5, 10.0, 0.02, 0.32
    grid = HexGrid(n_sites=7, isd_m=isd, sectors_per_site=1)
    start = np.array([-isd * math.sqrt(3) / 2, -isd / 2])
    heading = np.array([math.cos(math.pi / 6), math.sin(math.pi / 6)])
    times = np.arange(int(round(2 * isd / speed / dt)) + 1) * dt
    positions = start + speed * times[:, None] * heading
    d2 = grid.wraparound_distances_m(positions)                          # (n_times, 7)
    loss = LogDistance(exponent=exponent).loss_db(np.hypot(d2, height))
    rsrp = rsrp_dbm(loss.T[None, :, :], 10.0)                           # (1, 7, n_times)
    trace = A3Handover(hysteresis_db=3.0, a3_offset_db=0.0, time_to_trigger_s=ttt,
                       interruption_time_s=0.05).evaluate(times, rsrp)
    site_a = int(np.argmin(np.hypot(*(grid.site_positions_m - start).T)))
    site_c = int(np.argmin(np.hypot(*(grid.site_positions_m + start).T)))
    # By hand: B - A exceeds Hys + Off = 3 dB beyond s* = 274.839 m from A (t = 27.4839 s); the first sample after
    # it is 27.50 s, plus TTT 0.32 s: 27.82 s.  B -> C: by symmetry s* + 500 m, at 77.82 s.
    s_star = _hand_crossing_m(isd, height, exponent, 3.0)
    assert s_star == pytest.approx(274.8391, abs=1e-4)
    first = (math.floor(s_star / (speed * dt)) + 1) * dt + ttt
    second = (math.floor((s_star + isd) / (speed * dt)) + 1) * dt + ttt
    assert (first, second) == (pytest.approx(27.82), pytest.approx(77.82))
    assert [(e.time_s, e.source_cell, e.target_cell, e.cause) for e in trace.events] == [
        (pytest.approx(first, abs=1e-9), site_a, 0, "a3"), (pytest.approx(second, abs=1e-9), 0, site_c, "a3")]
    assert trace.serving_cell[0, 0] == site_a


def test_the_registry_builds_a3_and_the_conformance_check_passes():
    rule = HANDOVER.build("a3", time_to_trigger_s=0.04)
    assert isinstance(rule, A3Handover)
    report = check_handover(rule)
    assert "deterministic" in report.passed and "a dominant cell keeps its client" in report.passed


def test_the_conformance_check_catches_a_rule_that_hands_over_the_dominant_client():
    class Flipper:
        def evaluate(self, times_s, rsrp_dbm, sinr_db=None, initial_cell=None):
            n_clients, n_cells, n_times = np.shape(rsrp_dbm)
            serving = np.repeat(np.argmax(np.asarray(rsrp_dbm)[:, :, 0], axis=1)[:, None], n_times, axis=1)
            serving[0, n_times // 2:] = 1  # client 0's cell 0 stays 20 dB ahead, yet it moves
            return HandoverTrace((), serving, np.ones((n_clients, n_times), dtype=bool))

    with pytest.raises(HandoverConformanceError, match="a dominant cell keeps its client"):
        check_handover(Flipper())


@pytest.mark.parametrize(("params", "message"), [
    ({"time_to_trigger_s": 0.3}, r"time_to_trigger_s: got 0.3; allowed: one of 0.0, 0.04, 0.064"),
    ({"t310_s": 0.3}, r"t310_s: got 0.3; allowed: one of 0.0, 0.05"),
    ({"hysteresis_db": -1.0}, "hysteresis_db: got -1.0"),
    ({"a3_offset_db": 20.0}, "a3_offset_db: got 20.0"),
    ({"interruption_time_s": -0.1}, "interruption_time_s"),
])
def test_bad_parameters_are_one_line(params, message):
    with pytest.raises(ValueError, match=message) as info:
        A3Handover(**params)
    assert "\n" not in str(info.value)


def test_bad_inputs_are_one_line():
    rule = A3Handover()
    with pytest.raises(ValueError, match="times_s"):
        rule.evaluate([0.0, 0.0], np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match="rsrp_dbm"):
        rule.evaluate([0.0, 1.0], np.zeros((1, 2, 3)))
    with pytest.raises(ValueError, match="initial_cell"):
        rule.evaluate([0.0, 1.0], np.zeros((1, 2, 2)), initial_cell=[2])
    with pytest.raises(ValueError, match="cell_individual_offsets_db"):
        A3Handover(cell_individual_offsets_db=[1.0]).evaluate([0.0, 1.0], np.zeros((1, 2, 2)))
