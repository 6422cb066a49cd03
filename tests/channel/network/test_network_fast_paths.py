"""The network's per-transfer fast paths give the checked numbers: one link at a time
(``RadioState.uplink_of``) equals :meth:`RadioState.links`; a transfer through within one position
grid step ends at ``t0 + bits / rate``, what the held steps give; the budget's unchecked rate
never bypasses a subclass that overrides ``rate_bps``."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from sfl_sim.channel.link.budget import _unchecked
from sfl_sim.channel.link.rate import ShannonRate
from sfl_sim.config.loading import validate
from sfl_sim.runs.build import build_cell
from tests.helpers import small_scenario


def _moving_network_cell(speed_kmh: float = 30.0, rate: dict | None = None):
    raw = small_scenario(clients=60, participation=0.5)
    raw["cell"] = {"network": {"name": "hexgrid", "n_sites": 7, "isd_m": 500.0, "sectors_per_site": 1},
                   "mobility": {"name": "gauss_markov", "mean_speed_m_per_s": speed_kmh / 3.6}}
    if rate is not None:
        raw["cell"]["rate"] = rate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_cell(validate(raw))


@pytest.mark.parametrize("rate", [None, {"name": "mcs_table"}])
def test_one_link_at_a_time_equals_the_checked_links(rate: dict | None) -> None:
    radio = _moving_network_cell(rate=rate).radio
    rng = np.random.default_rng(1)
    for t in (0.0, 0.37, 2.5, 7.9):
        radio.advance_to(t)
        for k in rng.choice(60, 12, replace=False).tolist():  # some in flight: other cells' interference
            radio.set_transmitting(k, True)
        ids = rng.choice(60, 20, replace=False)
        shares = rng.uniform(0.2e6, 5e6, ids.size)
        gains = rng.exponential(1.0, ids.size)
        link = radio.links(ids, t, shares, fading=gains)
        for i, k in enumerate(ids.tolist()):
            got = radio.uplink_of(k, t, float(shares[i]), float(gains[i]))
            assert got == (link.rate_bps[i], link.snr_db[i], link.tx_power_w[i])
        assert np.unique(radio.network.noise_rise(ids, t)).size > 1  # interference did differ


def test_a_transfer_within_one_position_step_ends_at_bits_over_rate_as_the_steps_give() -> None:
    radio = _moving_network_cell().radio
    t0 = 1.234
    radio.advance_to(t0)
    ids = np.arange(40)
    share = np.full(ids.size, 2e6)
    rate = radio.links(ids, t0, share).rate_bps * radio.connected(ids, t0)
    step = radio.position_step_s
    # bits that end before the next position step (the fast path) and, for the same links, the
    # held steps' integration of those bits (the rule the fast path stands in for)
    room = (np.floor(t0 / step + 1e-9) + 1) * step - t0
    bits = rate * room * 0.9
    assert np.all(bits > rate * radio.step_s(ids))  # longer than one held step: not the first-step rule
    fast = radio.transfer_ends_s(ids, bits, t0, share)
    held = radio._integrate(ids, bits, t0, share, None, radio.step_s(ids), "uplink", np.full(ids.size, 16))
    quiet = ~radio.network.changes_within(ids, t0, fast)
    assert quiet.sum() >= 30
    np.testing.assert_allclose(fast[quiet], held[quiet], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(fast[quiet], t0 + bits[quiet] / rate[quiet])


class _Halved(ShannonRate):
    """A user's subclass that overrides rate_bps only."""

    def rate_bps(self, bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz):  # noqa: ANN001, ANN201
        return 0.5 * super().rate_bps(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz)


def test_an_unchecked_rate_is_used_only_where_its_class_defines_rate_bps() -> None:
    plain, halved = ShannonRate(), _Halved()
    assert _unchecked(plain, "rate_bps") == plain.rate_bps_unchecked
    assert _unchecked(halved, "rate_bps") == halved.rate_bps  # the override, not the parent's fast path
    args = (np.array([1e6]), np.array([0.2]), np.array([1e-10]), np.array([4e-21]))
    assert _unchecked(halved, "rate_bps")(*args)[0] == 0.5 * plain.rate_bps(*args)[0]


def _moving_cell(speed_kmh: float = 120.0):
    raw = small_scenario(clients=60, participation=0.5)
    raw["cell"] = {"mobility": {"name": "gauss_markov", "mean_speed_m_per_s": speed_kmh / 3.6}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_cell(validate(raw))


@pytest.mark.parametrize("network", [True, False])
def test_a_transfer_walked_piece_by_piece_is_the_limit_of_ever_finer_held_steps(network: bool) -> None:
    """Without a time-varying fading the rate is piecewise constant (the position grid; on a
    network the handovers and interruptions): the pieces give the exact integral, which held steps
    of dt approach within about dt per change of rate."""
    radio = (_moving_network_cell(120.0) if network else _moving_cell(120.0)).radio
    t0 = 0.5
    radio.advance_to(t0)
    ids = np.arange(0, 60, 2)
    share = np.full(ids.size, 1e6)
    rate = radio.links(ids, t0, share).rate_bps
    bits = rate * np.linspace(0.05, 2.0, ids.size)  # from within one position step to many
    ends = radio.transfer_ends_s(ids, bits, t0, share)
    fine_dt = 1e-5
    fine = radio._integrate(ids, bits, t0, share, None, np.full(ids.size, fine_dt), "uplink", np.full(ids.size, 4096))
    steps = (ends - t0) / radio.position_step_s + 2
    changes = np.zeros(ids.size)
    if network:
        changes = np.array([len(radio.network.change_times(int(k), t0, float(e)))
                            for k, e in zip(ids, ends, strict=True)])
    assert np.all(np.abs(ends - fine) <= 2 * fine_dt * (steps + changes))
    assert np.any(steps > 5)  # some transfers cross many position steps
    # a transfer is the same number alone
    for r in (0, ids.size // 2, ids.size - 1):
        assert radio.transfer_ends_s(ids[r:r + 1], bits[r:r + 1], t0, share[r:r + 1])[0] == ends[r]
