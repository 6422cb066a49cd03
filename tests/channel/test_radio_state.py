"""The radio state: one state of the clients' radio advanced in time, and its batched links."""
from __future__ import annotations

import numpy as np
import pytest

from sfl_sim.channel import FixedDistancePlacement, RayleighFading
from sfl_sim.channel.link.fading_time import doppler_hz
from sfl_sim.channel.radio_state import MAX_STEP_S, STEP_FRACTION
from tests.channel.helpers import small_cell
from tests.channel.radio_standins import CircleMobility, SumOfSinusoidsFading


def _cell(fading=None, mobility=None, seed=0):
    return small_cell(FixedDistancePlacement([100.0, 300.0, 500.0]), n_clients=3, fading=fading, mobility=mobility,
                      fading_process_rng=np.random.default_rng(seed + 10),
                      mobility_rng=np.random.default_rng(seed + 20))


def test_a_cell_without_time_gives_the_links_of_today():
    cell = _cell(RayleighFading())
    radio = cell.radio
    assert not radio.in_time
    gains = np.array([0.5, 1.0, 2.0])
    ids = np.array([0, 1, 2])
    old = cell.link_budget.uplink(ids, cell.gain_linear, cell.pathloss_db + cell.shadowing_db, cell.tx_power_w, 1.0,
                                  None, gains)
    new = radio.links(ids, 0.0, fading=gains)
    np.testing.assert_array_equal(new.rate_bps, old.rate_bps)
    np.testing.assert_array_equal(new.bandwidth_hz, old.bandwidth_hz)


def test_links_are_batched_with_repeated_ids_and_times():
    cell = _cell(SumOfSinusoidsFading(), CircleMobility(3.0))
    radio = cell.radio
    ids = np.array([1, 1, 2, 1])
    t = np.array([0.0, 0.01, 0.0, 0.0])
    batch = radio.links(ids, t, 1e6, fading="at_time")
    one = [float(radio.links([k], tk, 1e6, fading="at_time").rate_bps[0]) for k, tk in zip(ids, t, strict=True)]
    np.testing.assert_array_equal(batch.rate_bps, one)
    assert batch.rate_bps[0] == batch.rate_bps[3] and batch.rate_bps[0] != batch.rate_bps[1]


def test_the_time_varying_fading_is_started_once_with_each_clients_doppler():
    fading = SumOfSinusoidsFading()
    cell = _cell(fading, CircleMobility(speed_m_per_s=3.0))
    # TR 36.814 macro has no carrier parameter: the 2 GHz it is defined for
    np.testing.assert_array_equal(fading._fd, doppler_hz(np.full(3, 3.0), 2.0e9))
    assert fading._fd[0] == pytest.approx(3.0 * 2.0e9 / 299_792_458.0)
    # the step: a tenth of the coherence time, at most MAX_STEP_S
    np.testing.assert_allclose(cell.radio.step_s([0]), np.minimum(STEP_FRACTION * 0.423 / fading._fd[:1], MAX_STEP_S),
                               rtol=1e-12)


def test_a_cell_in_time_without_its_stream_is_refused():
    with pytest.raises(ValueError, match="time-varying: the cell needs its stream"):
        small_cell(fading=SumOfSinusoidsFading())


def test_advance_to_moves_timed_clients_and_is_monotone():
    cell = _cell(mobility=CircleMobility(speed_m_per_s=5.0))
    radio = cell.radio
    start = np.array(cell.positions_m)
    radio.advance_to(10.0)
    grid = radio.large_scale_step_s * np.floor(10.0 / radio.large_scale_step_s)
    np.testing.assert_allclose(cell.positions_m, cell.mobility.positions_at(grid))
    assert np.all(np.hypot(*(cell.positions_m - start).T) > 0)
    with pytest.raises(ValueError, match=r"t_s: got 5.0; allowed: >= 10.0"):
        radio.advance_to(5.0)


def test_the_large_scale_grid_draws_the_same_whatever_times_are_asked():
    a, b = _cell(mobility=CircleMobility(5.0)), _cell(mobility=CircleMobility(5.0))
    for t in (0.3, 1.7, 2.2, 9.9, 30.0):
        a.radio.advance_to(t)
    b.radio.advance_to(30.0)
    np.testing.assert_array_equal(a.shadowing_db, b.shadowing_db)
    np.testing.assert_array_equal(a.positions_m, b.positions_m)


def test_a_transfer_integrates_its_bits_over_the_changing_rate():
    cell = _cell(SumOfSinusoidsFading(), CircleMobility(3.0))
    radio = cell.radio
    bits, t0, share = 2e6, 0.25, 1e6
    end = radio.transfer_end_s(0, bits, t0, share)
    dt = float(radio.step_s([0])[0])
    n = int(np.ceil((end - t0) / dt)) + 1
    times = t0 + dt * np.arange(n)
    rates = radio.links(np.zeros(n, dtype=int), times, share, fading="at_time").rate_bps
    full = int(np.floor((end - t0) / dt + 1e-9))
    carried = rates[:full].sum() * dt + rates[full] * (end - times[full])
    assert carried == pytest.approx(bits, rel=1e-9)
    assert rates.std() > 0  # the rate changed within the transfer
    assert end - t0 != pytest.approx(bits / rates[0], rel=1e-3)  # not bits / (the start's rate)


def test_the_state_of_a_cell_in_time_round_trips_and_continues_bit_for_bit():
    cell = _cell(SumOfSinusoidsFading(), CircleMobility(4.0))
    cell.move(3.3, np.random.default_rng(0))
    state = cell.state_dict()
    assert state["radio_time_s"] == 3.3 and state["moved_s"] == 3.3
    assert set(state["component_states"]) == {"fading", "mobility"}
    fresh = small_cell(FixedDistancePlacement([100.0, 300.0, 500.0]), n_clients=3, fading=SumOfSinusoidsFading(),
                       mobility=CircleMobility(4.0), fading_process_rng=np.random.default_rng(99),
                       mobility_rng=np.random.default_rng(98))
    fresh.load_state_dict(state)
    for c in (cell, fresh):
        c.move(2.0, np.random.default_rng(0))
    np.testing.assert_array_equal(fresh.positions_m, cell.positions_m)
    np.testing.assert_array_equal(fresh.shadowing_db, cell.shadowing_db)
    np.testing.assert_array_equal(fresh.radio.links([0, 1], 5.4, 1e6, fading="at_time").rate_bps,
                                  cell.radio.links([0, 1], 5.4, 1e6, fading="at_time").rate_bps)


def test_a_cell_not_in_time_keeps_its_state_keys():
    assert "radio_time_s" not in _cell(RayleighFading()).state_dict()


def test_a_fading_may_fix_the_speed_of_its_doppler_for_clients_that_stay_put():
    """A drop-based evaluation: static clients, Jakes fading at 120 km/h.  f_D = v f_c / c at the
    cell's 2 GHz (TR 36.814 macro): 33.33 m/s -> 222.4 Hz; the gain changes within a round."""
    from sfl_sim.channel.link.fading_time import JakesFading

    fading = JakesFading(speed_m_per_s=120 / 3.6)
    cell = _cell(fading)
    radio = cell.radio
    assert radio.in_time
    np.testing.assert_allclose(fading._doppler_hz, np.full(3, 120 / 3.6 * 2.0e9 / 299_792_458.0), rtol=1e-15)
    assert 222.0 < fading._doppler_hz[0] < 223.0
    first = radio.fading_at(np.array([0]), 0.0)
    later = radio.fading_at(np.array([0]), 0.05)
    assert first[0] != later[0]
    # without the parameter the static clients' Doppler is 0: a frozen channel
    frozen = JakesFading()
    _cell(frozen)
    assert np.all(frozen._doppler_hz == 0.0)
