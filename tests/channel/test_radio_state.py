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


def test_a_time_behind_by_the_clocks_rounding_is_the_same_instant():
    """The engine's clock 7.671844131326837 and the cell's sum of round durations 7.6718441313268375
    (a study run failed on these): the same instant, not a step back; a real step back is refused."""
    cell = _cell(mobility=CircleMobility(speed_m_per_s=5.0))
    radio = cell.radio
    radio.advance_to(7.6718441313268375)
    radio.advance_to(7.671844131326837)
    assert radio.t_s == 7.6718441313268375
    with pytest.raises(ValueError, match="only moves forward"):
        radio.advance_to(7.6718)


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


# ---------------------------------------------------------------------- the fast paths
def _jakes_cell(n=6, speed_m_per_s=8.33, seed=0):
    from sfl_sim.channel.large_scale.timed_mobility import GaussMarkovMobility
    from sfl_sim.channel.link.fading_time import JakesFading

    return small_cell(FixedDistancePlacement([100.0 + 80.0 * i for i in range(n)]), n_clients=n,
                      fading=JakesFading(speed_m_per_s=speed_m_per_s),
                      mobility=GaussMarkovMobility(mean_speed_m_per_s=speed_m_per_s, step_s=0.5),
                      min_distance_m=35.0, fading_process_rng=np.random.default_rng(seed + 10),
                      mobility_rng=np.random.default_rng(seed + 20))


@pytest.mark.parametrize("direction", ["uplink", "downlink", "broadcast"])
def test_the_unchecked_link_gives_the_checked_links_numbers(direction):
    cell = _jakes_cell()
    radio, budget = cell.radio, cell.link_budget
    ids = np.array([0, 3, 3, 5])
    t = np.array([0.0, 0.1, 0.2, 0.7])
    share = np.array([1e6, 5e5, 5e5, 2e5])
    coupling, gain = radio._large_scale_at(ids, t)
    fading = radio.fading_at(ids, t)
    checked = radio.links(ids, t, share, fading=fading, direction=direction)
    rate, snr, power = budget.link_unchecked(direction, share, gain * fading, coupling, radio.tx_power_w[ids],
                                             radio.noise_rise.linear, with_snr=True)
    np.testing.assert_array_equal(rate, checked.rate_bps)
    np.testing.assert_array_equal(snr, checked.snr_db)
    np.testing.assert_array_equal(power, checked.tx_power_w)
    gains, rate2, snr2, power2 = radio.start_links(ids, t, share, direction)
    np.testing.assert_array_equal(gains, fading)
    np.testing.assert_array_equal(rate2, checked.rate_bps)
    np.testing.assert_array_equal(snr2, checked.snr_db)
    for i in range(ids.size):  # one link at a time (a lone start: slices, its grid time in floats)
        one = radio.start_links(ids[i:i + 1], t[i:i + 1], share[i:i + 1], direction)
        assert [float(a[0]) for a in one] == [fading[i], checked.rate_bps[i], checked.snr_db[i],
                                              checked.tx_power_w[i]]


def test_a_start_on_a_zero_share_is_the_checked_links():
    """A 0 Hz share (no rate, an infinite SNR) alone and among others: :meth:`links`' numbers."""
    radio = _jakes_cell().radio
    ids, t, share = np.array([1, 2]), np.array([0.3, 0.3]), np.array([0.0, 5e5])
    checked = radio.links(ids, t, share, fading=radio.fading_at(ids, t))
    for at in ([0, 1], [0], [1]):
        _, rate, snr, power = radio.start_links(ids[at], t[at], share[at])
        np.testing.assert_array_equal(rate, checked.rate_bps[at])
        np.testing.assert_array_equal(snr, checked.snr_db[at])
        np.testing.assert_array_equal(power, checked.tx_power_w[at])


def test_a_starts_nan_snr_names_the_rate_model():
    from sfl_sim.channel.link.fading_time import JakesFading
    from tests.channel.test_cell_checks import NanSnrRate

    radio = small_cell(rate=NanSnrRate(), fading=JakesFading(speed_m_per_s=8.33),
                       fading_process_rng=np.random.default_rng(1)).radio
    with pytest.raises(ValueError, match=r"rate .*NanSnrRate.* gave a SNR \(linear\)"):
        radio.start_links(np.array([0]), np.array([0.1]), np.array([1e6]))


@pytest.mark.parametrize("name", ["jakes", "rician_jakes"])
def test_a_fadings_gains_over_steps_are_its_gains_at_those_times(name):
    """power_gain_steps turns each anchor's phases by w dt i (cos(a + b) = cos a cos b - sin a sin b):
    up to float rounding of the phase and the sum's order.  Measured: at most
    3e-12 absolute at t0 = 123 s; the bound below (1e-9 at t0 = 1000 s) leaves room for the phase's
    rounding, ulp(w t), which grows with t."""
    from sfl_sim.channel.link.fading_time import FADING

    fading = FADING.create(name, speed_m_per_s=33.3)
    fading.start(5, np.full(5, 222.0), np.random.default_rng(3))
    ids = np.array([4, 0, 2])
    dt = np.array([1.1e-4, 1.1e-4, 3e-4])
    first = np.array([0, 7, 100])
    count = np.array([1, 70, 333])
    t0 = 1000.0
    row = np.repeat(np.arange(3), count)
    local = np.arange(row.size) - np.repeat(np.cumsum(count) - count, count)
    times = t0 + dt[row] * (first[row] + local)
    exact = fading.power_gain_at(ids[row], times)
    steps = fading.power_gain_steps(ids, t0, dt, first, count)
    assert steps.shape == exact.shape
    np.testing.assert_allclose(steps, exact, rtol=0, atol=1e-9)
    # a row asked in two chunks gives the same gains as in one (anchors on the row's own grid)
    split = np.concatenate([fading.power_gain_steps(ids[1:2], t0, dt[1:2], np.array([7]), np.array([20])),
                            fading.power_gain_steps(ids[1:2], t0, dt[1:2], np.array([27]), np.array([50]))])
    np.testing.assert_array_equal(split, steps[1:71])


def test_transfers_ends_at_once_are_each_alone_and_follow_the_rate():
    cell = _jakes_cell()
    radio = cell.radio
    radio.advance_to(0.3)
    ids = np.arange(6)
    bits = np.array([2e6, 2e6, 5e5, 3e6, 1e3, 2e6])
    share = np.full(6, 5e5)
    together = radio.transfer_ends_s(ids, bits, 0.3, share)
    alone = [radio.transfer_end_s(k, b, 0.3, 5e5) for k, b in zip(ids.tolist(), bits.tolist(), strict=True)]
    np.testing.assert_array_equal(together, alone)
    # the end of the checked links' rates at the panels' Gauss-Legendre nodes (the fading's exact
    # gains, the moving clients' positions), as tests/channel/test_radio_state_quadrature.py
    # computes it: the same up to float rounding (the gains by angle addition)
    from sfl_sim.channel.radio_state import _GL_NODES, _GL_WEIGHTS, PANEL_FRACTION

    for k in (0, 3):
        h = PANEL_FRACTION * float(radio.coherence_time_s[k])
        n = int(np.ceil((together[k] - 0.3) / h)) + 1
        times = 0.3 + h * (np.arange(n)[:, None] + _GL_NODES[None, :])
        rates = radio.links(np.full(2 * n, k), times.reshape(-1), 5e5, fading="at_time").rate_bps.reshape(-1, 2)
        cum = np.cumsum(h * (rates[:, 0] * _GL_WEIGHTS[0] + rates[:, 1] * _GL_WEIGHTS[1]))
        j = int(np.searchsorted(cum, bits[k]))
        slope = (rates[j, 1] - rates[j, 0]) / (_GL_NODES[1] - _GL_NODES[0])
        a = rates[j, 0] - slope * _GL_NODES[0]
        x = (bits[k] - cum[j - 1]) / h
        u = 2 * x / (a + np.sqrt(a * a + 2 * slope * x))
        assert together[k] == pytest.approx(0.3 + h * j + h * u, rel=1e-12)


def _scenario_moving_cell(speed_kmh=3.0, n=100):
    """The scenario's cell (``n`` clients) with Jakes fading and Gauss-Markov mobility."""
    from sfl_sim.config import load_scenario
    from sfl_sim.config.scenario_files import resolve_scenario
    from sfl_sim.runs.build import build_cell

    v = speed_kmh / 3.6
    extra = {"clients": {"count": n, "participation": 0.1},
             "cell": {"fading": {"name": "jakes", "speed_m_per_s": v},
                      "mobility": {"name": "gauss_markov", "mean_speed_m_per_s": v}}}
    return build_cell(load_scenario(resolve_scenario("cellular_100clients"), extra=extra))


def test_the_coupling_losses_of_a_block_of_grid_times_are_each_grid_times_alone(monkeypatch):
    """A grid time's coupling losses are computed with the rest of its block in one call of the
    large-scale model (LOSS_BLOCK grid times), the same numbers as that grid time alone."""
    from sfl_sim.channel.radio_state import LOSS_BLOCK

    radio = _scenario_moving_cell().radio
    large_scale, mobility = radio.large_scale, radio._timed_mobility
    step, n = radio.position_step_s, radio.n_clients
    calls = []
    real = large_scale.coupling_loss_db_at
    monkeypatch.setattr(large_scale, "coupling_loss_db_at", lambda ids, pos: calls.append(ids.size) or real(ids, pos))
    grid = 2 * LOSS_BLOCK + 5
    every = np.arange(n)
    for i in range(grid):  # every grid time in turn, as a round asks them
        t = (i + 0.5) * step
        alone = real(every, mobility.positions_at(i * step))
        assert np.array_equal(radio.coupling_loss_db(every, t), alone)
        assert np.array_equal(radio._large_scale_at(every[::7], np.full(every[::7].size, t))[1],
                              np.power(10.0, -alone[::7] / 10.0))
    assert calls == [LOSS_BLOCK * n] * 3  # three blocks, one call each
