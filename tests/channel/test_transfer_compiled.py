"""The compiled integration of a smooth fading's transfers (:mod:`sfl_sim.channel.transfer_compiled`)
against the numpy path, and when it runs."""
from __future__ import annotations

import numpy as np
import pytest

from sfl_sim.channel import FixedDistancePlacement, transfer_compiled
from sfl_sim.channel.link.fading_time import JakesFading, RicianJakesFading
from sfl_sim.channel.link.link_rate import McsTableRate
from sfl_sim.channel.link.rate import ShannonRate
from sfl_sim.channel.radio_state import _GL_NODES, RadioState
from tests.channel.helpers import small_cell

pytestmark = pytest.mark.skipif(not transfer_compiled.AVAILABLE, reason="numba is not installed")


def _cell(fading, rate, n=12, seed=0):
    return small_cell(FixedDistancePlacement(list(np.geomspace(145.0, 2300.0, n))), rate=rate, n_clients=n,
                      fading=fading, min_distance_m=35.0, radius_m=5000.0,
                      fading_process_rng=np.random.default_rng(seed + 10))


def _moving_cell(speed_kmh, rate=None):
    """The scenario's cell (100 clients) with Jakes fading and Gauss-Markov mobility at ``speed_kmh``."""
    from sfl_sim.config import load_scenario
    from sfl_sim.config.scenario_files import resolve_scenario
    from sfl_sim.runs.build import build_cell

    v = speed_kmh / 3.6
    extra = {"clients": {"count": 100, "participation": 0.1},
             "cell": {"fading": {"name": "jakes", "speed_m_per_s": v},
                      "mobility": {"name": "gauss_markov", "mean_speed_m_per_s": v}}}
    if rate is not None:
        extra["cell"]["rate"] = rate
    return build_cell(load_scenario(resolve_scenario("cellular_100clients"), extra=extra))


def _transfers(radio, k, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, radio.n_clients, k)
    t0 = rng.uniform(0.0, 3.0, k)
    mean = radio.links(ids, t0, np.full(k, 1e6), fading=np.ones(k)).rate_bps
    bits = np.maximum(mean, 1e4) * rng.uniform(0.005, 1.5, k)  # from within a panel to a few hundred panels
    return ids, bits, t0


def _both(radio, ids, bits, t0, monkeypatch, direction="uplink"):
    monkeypatch.setenv("SFL_SIM_RADIO_NUMPY", "1")
    numpy_ends = radio.transfer_ends_s(ids, bits, t0, 1e6, direction)
    monkeypatch.delenv("SFL_SIM_RADIO_NUMPY")
    return numpy_ends, radio.transfer_ends_s(ids, bits, t0, 1e6, direction)


@pytest.mark.parametrize("fading", [JakesFading(speed_m_per_s=8.33), RicianJakesFading(speed_m_per_s=8.33)],
                         ids=["jakes", "rician_jakes"])
@pytest.mark.parametrize("rate", [ShannonRate(), ShannonRate(max_spectral_efficiency_bps_per_hz=4.0)],
                         ids=["shannon", "capped"])
def test_compiled_ends_agree_with_the_numpy_path(fading, rate, monkeypatch):
    """300 random transfers (a fixed cell, SNRs -5 to 40 dB): the compiled ends are the numpy
    path's within NUMPY_AGREEMENT of each transfer's duration, up- and downlink."""
    radio = _cell(fading, rate).radio
    assert radio._compiled_terms("uplink") is not None
    ids, bits, t0 = _transfers(radio, 300, 1)
    for direction in ("uplink", "downlink"):
        numpy_ends, ends = _both(radio, ids, bits, t0, monkeypatch, direction)
        assert not np.array_equal(ends, numpy_ends)  # another evaluation of the gains: not the same bits
        assert np.max(np.abs(ends - numpy_ends) / (numpy_ends - t0)) <= transfer_compiled.NUMPY_AGREEMENT


def test_compiled_table_rate_agrees_where_no_node_sits_on_a_threshold(monkeypatch):
    """The MCS table's gap mapping: the same ends within NUMPY_AGREEMENT on these seeded transfers
    (a node within rounding of a CQI threshold could pick the neighbouring CQI; none here)."""
    radio = _cell(JakesFading(speed_m_per_s=8.33), McsTableRate()).radio
    assert radio._compiled_terms("uplink") is not None
    ids, bits, t0 = _transfers(radio, 300, 2)
    numpy_ends, ends = _both(radio, ids, bits, t0, monkeypatch)
    assert np.max(np.abs(ends - numpy_ends) / (numpy_ends - t0)) <= transfer_compiled.NUMPY_AGREEMENT


@pytest.mark.parametrize("speed_kmh", [3.0, 120.0])
def test_compiled_ends_agree_with_a_timed_mobility(speed_kmh, monkeypatch):
    """In-round mobility (the large-scale gain per position grid time, handed in as tables)."""
    radio = _moving_cell(speed_kmh).radio
    assert radio._timed_mobility is not None and radio._compiled_terms("uplink") is not None
    ids, bits, t0 = _transfers(radio, 120, 3)
    numpy_ends, ends = _both(radio, ids, bits, t0, monkeypatch)
    assert np.max(np.abs(ends - numpy_ends) / (numpy_ends - t0)) <= transfer_compiled.NUMPY_AGREEMENT


def test_an_end_is_the_same_alone_batched_and_in_any_chunks():
    """Every transfer on its own: alone, with others, and walked in chunks of 1 or 4096 panels
    (each chunk restarting from its anchor) give the same number."""
    radio = _moving_cell(30.0).radio
    ids, bits, t0 = _transfers(radio, 40, 4)
    ends = radio.transfer_ends_s(ids, bits, t0, 1e6)
    # some walk past several anchors (the chunks below restart between them)
    assert np.max((ends - t0) / radio._panel_s[ids]) > 4 * transfer_compiled.ANCHOR_PANELS
    alone = np.array([radio.transfer_end_s(int(k), float(b), float(t), 1e6)
                      for k, b, t in zip(ids, bits, t0, strict=True)])
    assert np.array_equal(alone, ends)
    panel, share = radio._panel_s[ids], np.full(ids.size, 1e6)
    terms = radio._compiled_terms("uplink")
    for count in (1, 3, 4096):
        chunked = radio._integrate_compiled(ids, bits, t0, share, panel, "uplink",
                                            np.full(ids.size, count, dtype=np.int64), terms)
        # the ones through within their first span are ended by the start's rate in transfer_ends_s
        first = radio.start_links(ids, t0, share)[1]
        quick = bits <= first * radio._first_span_s[ids]
        assert np.any(~quick) and np.array_equal(chunked[~quick], ends[~quick])


@pytest.mark.parametrize("moving", [False, True], ids=["fixed", "gauss_markov"])
@pytest.mark.parametrize("direction", ["uplink", "downlink"])
def test_a_lone_transfer_with_its_start_rate_is_its_batched_end_without_the_batch(moving, direction, monkeypatch):
    """One transfer with its start's rate (the engine's lone transfer) takes the state's path for
    one (no call of the batch's ``transfer_ends_s``) and ends where the batch ends it, bit for
    bit: through within its first span, and walked over one or many tables of grid times."""
    radio = (_moving_cell(30.0) if moving else _cell(JakesFading(speed_m_per_s=8.33), ShannonRate())).radio
    ids, bits, t0 = _transfers(radio, 60, 5)
    bits[:3] = bits[:3] * 400.0  # a few long ones: several tables of grid times (the chunks doubled)
    share = np.full(ids.size, 1e6)
    first = radio.start_links(ids, t0, share, direction)[1]
    bits[-3:] = first[-3:] * radio._first_span_s[ids[-3:]] / 2  # through within the first span
    ends = radio.transfer_ends_s(ids, bits, t0, share, direction, start_rate_bps=first)

    def refuse(*args, **kwargs):
        raise AssertionError("a lone transfer went through the batch")

    monkeypatch.setattr(radio, "transfer_ends_s", refuse)
    alone = np.array([radio.transfer_end_s(int(k), float(b), float(t), 1e6, direction, start_rate_bps=float(r))
                      for k, b, t, r in zip(ids, bits, t0, first, strict=True)])
    quick = bits <= first * radio._first_span_s[ids]
    assert np.any(quick) and np.any(~quick)
    assert np.array_equal(alone, ends)


def test_the_numpy_switch_and_unknown_components_take_the_numpy_path(monkeypatch):
    """``SFL_SIM_RADIO_NUMPY=1``, a fading subclass (its gain may differ) and a rate model the
    kernel does not know all keep the numpy path: the kernel is never called."""
    def refuse(*args, **kwargs):
        raise AssertionError("the compiled kernel was called")

    class MyJakes(JakesFading):
        pass

    class MyRate(ShannonRate):
        pass

    cases = [(JakesFading(speed_m_per_s=8.33), ShannonRate(), "1"), (MyJakes(speed_m_per_s=8.33), ShannonRate(), ""),
             (JakesFading(speed_m_per_s=8.33), MyRate(), ""),
             (JakesFading(speed_m_per_s=8.33), McsTableRate(mapping="bler"), "")]
    for fading, rate, switch in cases:
        radio = _cell(fading, rate).radio
        ids, bits, t0 = _transfers(radio, 20, 5)
        monkeypatch.setenv("SFL_SIM_RADIO_NUMPY", switch)
        monkeypatch.setattr(transfer_compiled, "integrate", refuse)
        radio.transfer_ends_s(ids, bits, t0, 1e6)
        monkeypatch.undo()
    radio = _cell(JakesFading(speed_m_per_s=8.33), ShannonRate()).radio
    monkeypatch.setattr(transfer_compiled, "integrate", refuse)
    with pytest.raises(AssertionError, match="compiled kernel"):
        radio.transfer_ends_s(*_transfers(radio, 20, 5), 1e6)


def test_within_panel_is_the_numpy_rule_bit_for_bit():
    """The compiled place of the last bit in its panel is :meth:`RadioState._within_panel`'s
    number on random lines (rising from 0, falling to 0, flat, positive)."""
    rng = np.random.default_rng(6)
    n = 2000
    r = rng.choice([-1.0, 0.0, 1.0], (n, 2)) * rng.uniform(0, 1e7, (n, 2))
    r[::7, 1] = r[::7, 0]
    panel = rng.uniform(1e-4, 1e-2, n)
    bits = np.abs((r[:, 0] + r[:, 1]) / 2 * panel)
    remaining = bits * rng.uniform(0.0, 1.0, n)
    expected = RadioState._within_panel(remaining, bits, r, panel)
    got = [transfer_compiled._within_panel(float(remaining[i]), float(bits[i]), float(r[i, 0]), float(r[i, 1]),
                                           float(_GL_NODES[0]), float(_GL_NODES[1]), float(panel[i]))
           for i in range(n)]
    np.testing.assert_array_equal(np.array(got), expected)


@pytest.mark.parametrize("lone", [True, False], ids=["lone", "batched"])
def test_a_chunk_sized_for_a_fade_computes_only_the_grid_times_it_walks(lone):
    """A transfer whose start's rate is far below its rate later (it starts in a fade) gets a
    chunk of thousands of panels; the tables handed to the kernel stop at TABLE_GRID_TIMES grid
    times, so the coupling losses of grid times it never reaches are not computed (they were,
    30 s ahead at 3 km/h, and forgotten at the next large-scale update), and the end is the same."""
    from sfl_sim.channel.radio_state import LOSS_BLOCK, TABLE_GRID_TIMES

    assert TABLE_GRID_TIMES <= LOSS_BLOCK
    radio = _moving_cell(3.0).radio
    ids, bits, t0 = _transfers(radio, 4, 6)
    share = np.full(ids.size, 1e6)
    first = radio.start_links(ids, t0, share)[1]
    reference = radio.transfer_ends_s(ids, bits, t0, share, start_rate_bps=first)
    step = radio.position_step_s
    for r in range(ids.size):
        radio._loss_at.clear()
        slow = float(first[r]) * 1e-4  # the chunk: 4096 panels of 8.7 ms, 36 s, 360 grid times
        if lone:
            end = radio.transfer_end_s(int(ids[r]), float(bits[r]), float(t0[r]), 1e6, start_rate_bps=slow)
        else:
            end = radio.transfer_ends_s(ids[r:r + 1].repeat(2), bits[r], t0[r], 1e6,
                                        start_rate_bps=np.array([slow, slow]))[0]
        assert end == reference[r]
        walked = int(np.floor(reference[r] / step)) - int(np.floor(t0[r] / step)) + 1
        # the grid times walked, rounded out to whole blocks, and at most one table past them
        assert len(radio._loss_at) <= walked + 3 * LOSS_BLOCK


def test_the_kernel_terms_are_kept_until_the_fading_is_loaded_anew():
    """The terms handed to the kernel are kept per direction (a lone transfer asks at every
    start), and taken anew when the fading's state is loaded (its sinusoids replaced): a
    resumed run's transfers use the loaded phases, not the ones before."""
    radio = _cell(JakesFading(speed_m_per_s=8.33), ShannonRate()).radio
    up, down = radio._compiled_terms("uplink"), radio._compiled_terms("downlink")
    assert radio._compiled_terms("uplink") is up and radio._compiled_terms("downlink") is down
    other = _cell(JakesFading(speed_m_per_s=8.33), ShannonRate(), seed=5).radio
    radio._tv_fading.load_state_dict(other._tv_fading.state_dict())
    again = radio._compiled_terms("uplink")
    assert again is not up
    assert np.array_equal(again[0][1], other._compiled_terms("uplink")[0][1])  # the loaded phases
    assert not np.array_equal(again[0][1], up[0][1])


def test_a_long_transfer_at_speed_leaves_its_grid_times_kept_for_the_next():
    """A 5 s transfer at 120 km/h walks ~330 position grid times of 15 ms; a second transfer
    over the same span (another client, the same large-scale state) finds every client's
    positions and coupling losses there kept (KEPT_NUMBERS) and computes none again (with 64
    positions and 256 losses kept, it computed all of them again)."""
    radio = _moving_cell(120.0).radio
    mobility = radio._timed_mobility
    asked = []
    positions_at = mobility.positions_at
    mobility.positions_at = lambda t: asked.append(t) or positions_at(t)
    share = np.full(2, 1e6)
    ids, t0 = np.array([3, 7]), np.array([0.01, 0.01])
    first = radio.start_links(ids, t0, share)[1]
    bits = first * 5.0
    walked = []
    for r in range(2):
        before = len(asked)
        end = radio.transfer_end_s(int(ids[r]), float(bits[r]), float(t0[r]), 1e6, start_rate_bps=float(first[r]))
        walked.append((end - t0[r]) / radio.position_step_s)
        if r == 0:
            assert len(asked) - before >= 0.9 * walked[0] > 256
        else:
            assert len(asked) == before
