"""A transfer's bits on a smooth (sum-of-sinusoids) fading: Gauss-Legendre panels against the true
integral of the rate, and the same end alone or with others."""
from __future__ import annotations

import numpy as np
import pytest

from sfl_sim.channel import FixedDistancePlacement
from sfl_sim.channel.link.fading_time import GaussMarkovFading, JakesFading
from sfl_sim.channel.link.link_rate import McsTableRate
from sfl_sim.channel.link.rate import ShannonRate
from sfl_sim.channel.radio_state import _GL_NODES, _GL_WEIGHTS, PANEL_FRACTION, STEP_FRACTION
from tests.channel.helpers import small_cell

SHARE_HZ = 1e6


def _cell(fading, n=6, rate=None, seed=0, distances=None):
    d = np.linspace(100.0, 500.0, n) if distances is None else distances
    return small_cell(FixedDistancePlacement(list(d)), rate=rate, n_clients=n, fading=fading, min_distance_m=35.0,
                      radius_m=5000.0, fading_process_rng=np.random.default_rng(seed + 10))


def _true_end(radio, k, bits, t0, tc, per_tc=200, span_tc=40):
    """The end of ``bits`` from ``t0`` on the rate's trapezoid integral at ``tc / per_tc`` (the
    reference: its own error is far below the rules' at this step)."""
    h = tc / per_tc
    done, start = 0.0, t0
    while True:
        t = start + h * np.arange(span_tc * per_tc + 1)
        r = radio.links(np.full(t.size, k), t, np.full(t.size, SHARE_HZ), fading="at_time").rate_bps
        cum = done + np.concatenate(([0.0], np.cumsum((r[1:] + r[:-1]) * (h / 2))))
        j = int(np.searchsorted(cum, bits))
        if j <= t.size - 1:
            return t[j - 1] + (bits - cum[j - 1]) / (cum[j] - cum[j - 1]) * h
        done, start = cum[-1], t[-1]


def _held_end(radio, k, bits, t0, dt):
    """The rule before the panels: the rate at ``t0 + j dt`` held over each step."""
    n = 64
    done = 0.0
    for first in range(0, 10_000_000, n):
        t = t0 + dt * np.arange(first, first + n)
        r = radio.links(np.full(n, k), t, np.full(n, SHARE_HZ), fading="at_time").rate_bps
        cum = done + np.cumsum(r * dt)
        j = int(np.searchsorted(cum, bits))
        if j < n:
            return t[j] + (bits - (cum[j - 1] if j else done)) / r[j]
        done = cum[-1]
    raise AssertionError("not through")


@pytest.mark.parametrize("rate", ["shannon", "mcs_table"])
def test_the_panels_are_closer_to_the_true_integral_than_the_held_steps(rate):
    """Seeded Jakes channels at mean SNRs from -5 to 40 dB (clients from 145 to 2300 m), transfers of
    1 to 45 coherence times: the panel rule's end times are no further from the true integral's
    than the held steps' (relative to the transfer's duration; the largest and the 99th
    percentile over every client, length and seed)."""
    old, new = [], []
    for seed in (0, 1):
        n = 16
        cell = _cell(JakesFading(speed_m_per_s=8.33), n=n, rate=ShannonRate() if rate == "shannon" else McsTableRate(),
                     seed=seed, distances=np.geomspace(145.0, 2300.0, n))
        radio = cell.radio
        ids = np.arange(n)
        snr = radio.links(ids, 0.0, np.full(n, SHARE_HZ), fading=np.ones(n)).snr_db
        assert snr.min() == pytest.approx(-5, abs=1.5) and snr.max() == pytest.approx(40, abs=1.5)
        mean_rate = radio.links(ids, 0.0, np.full(n, SHARE_HZ), fading=np.ones(n)).rate_bps
        tc = float(radio.coherence_time_s[0])
        rng = np.random.default_rng(seed + 99)
        for length in (1, 3, 10, 45):
            t0 = rng.uniform(0.0, 5.0, n)
            bits = np.maximum(mean_rate, 1e4) * length * tc
            ends = radio.transfer_ends_s(ids, bits, t0, SHARE_HZ)
            for k in range(n):
                true = _true_end(radio, k, bits[k], t0[k], tc)
                held = _held_end(radio, k, bits[k], t0[k], STEP_FRACTION * tc)
                old.append(abs(held - true) / (true - t0[k]))
                new.append(abs(ends[k] - true) / (true - t0[k]))
    old, new = np.array(old), np.array(new)
    assert new.max() <= old.max()
    assert np.percentile(new, 99) <= np.percentile(old, 99)


def test_a_panel_transfer_ends_where_its_nodes_rates_say():
    """Hand-computed: each panel's bits are the mean of its two Gauss-Legendre nodes' rates times
    the panel, summed in order; in the last panel the line through its nodes' rates is integrated."""
    cell = _cell(JakesFading(speed_m_per_s=8.33))
    radio = cell.radio
    k, bits, t0 = 2, 3e5, 0.7
    end = radio.transfer_end_s(k, bits, t0, SHARE_HZ)
    h = PANEL_FRACTION * float(radio.coherence_time_s[k])
    panels = int(np.ceil((end - t0) / h)) + 1
    t = t0 + h * (np.arange(panels)[:, None] + _GL_NODES[None, :])
    r = radio.links(np.full(t.size, k), t.reshape(-1), SHARE_HZ, fading="at_time").rate_bps.reshape(-1, 2)
    per = h * (r[:, 0] * _GL_WEIGHTS[0] + r[:, 1] * _GL_WEIGHTS[1])
    cum = np.cumsum(per)
    j = int(np.searchsorted(cum, bits))
    u1, u2 = _GL_NODES
    b = (r[j, 1] - r[j, 0]) / (u2 - u1)
    a = r[j, 0] - b * u1
    x = (bits - cum[j - 1]) / h
    u = (-a + np.sqrt(a * a + 2 * b * x)) / b
    assert end == pytest.approx(t0 + h * (j + u), rel=1e-12)
    assert end - t0 != pytest.approx(bits / r[0, 0], rel=1e-3)  # not the start's rate held


def test_panel_ends_are_the_same_alone_with_others_and_from_other_starts():
    """Grouping invariance: a transfer's end is the same number (bit for bit) computed alone, with
    others starting then, or with others starting at other times."""
    cell = _cell(JakesFading(speed_m_per_s=30.0), n=6)
    radio = cell.radio
    ids = np.arange(6)
    bits = np.array([2e6, 2e6, 5e5, 3e6, 1e3, 8e6])
    t0 = np.array([0.3, 0.3, 0.31, 1.7, 0.3, 2.25])
    together = radio.transfer_ends_s(ids, bits, t0, SHARE_HZ)
    alone = [radio.transfer_end_s(k, b, t, SHARE_HZ) for k, b, t in zip(ids.tolist(), bits.tolist(), t0.tolist(),
                                                                       strict=True)]
    np.testing.assert_array_equal(together, alone)
    pairs = np.concatenate([radio.transfer_ends_s(ids[[i, 5 - i]], bits[[i, 5 - i]], t0[[i, 5 - i]], SHARE_HZ)[:1]
                            for i in range(6)])
    np.testing.assert_array_equal(pairs, together)
    # the same client twice at once (its chunks of panels evaluated side by side)
    twice = radio.transfer_ends_s([5, 5], [8e6, 8e6], [2.25, 2.25], SHARE_HZ)
    assert twice[0] == twice[1] == together[5]


def test_a_piecewise_constant_fading_keeps_the_held_steps():
    """AR(1) fading is constant between its grid points: its transfers keep the rate held over
    each step (the panels would sample its jumps)."""
    cell = _cell(GaussMarkovFading(speed_m_per_s=8.33), n=3)
    radio = cell.radio
    k, bits, t0 = 1, 2e6, 0.25
    end = radio.transfer_end_s(k, bits, t0, SHARE_HZ)
    dt = float(radio.step_s([k])[0])
    assert end == pytest.approx(_held_end(radio, k, bits, t0, dt), rel=1e-12)


@pytest.mark.parametrize("name", ["jakes", "rician_jakes"])
def test_a_fadings_gains_at_panel_nodes_are_its_gains_at_those_times(name):
    """``power_gain_panels``: the gains at ``t0 + h (first + j + node)``, as ``power_gain_at`` gives
    them up to float rounding, and the same however the panels are asked in chunks."""
    from sfl_sim.channel.link.fading_time import RicianJakesFading

    fading = JakesFading() if name == "jakes" else RicianJakesFading()
    fading.start(3, np.array([55.6, 222.0, 5.6]), np.random.default_rng(4))
    ids, t0, h = np.array([0, 1, 2]), np.array([0.3, 1.25, 0.0]), np.array([8.7e-4, 2.2e-4, 8.7e-3])
    first, count = np.array([0, 5, 40]), np.array([70, 33, 9])
    got = fading.power_gain_panels(ids, t0, h, first, count, _GL_NODES)
    row = np.repeat(np.arange(3), count)
    j = np.concatenate([f + np.arange(c) for f, c in zip(first, count, strict=True)]).astype(float)
    t = t0[row][:, None] + h[row][:, None] * (j[:, None] + _GL_NODES[None, :])
    exact = fading.power_gain_at(np.repeat(ids[row], 2), t.reshape(-1)).reshape(-1, 2)
    np.testing.assert_allclose(got, exact, rtol=1e-9, atol=1e-12)
    chunks = [fading.power_gain_panels(ids[:1], t0[:1], h[:1], np.array([a]), np.array([n]), _GL_NODES)
              for a, n in ((0, 20), (20, 50))]
    split = np.concatenate(chunks)
    np.testing.assert_array_equal(split, got[:70])
