"""HARQ (sfl_sim.channel.link.harq): expected mode equals its closed form, sampled mode converges to it, chase
combining, bad input."""
import math

import numpy as np
import pytest

from sfl_sim.channel import Harq, McsTableRate, ShannonRate
from sfl_sim.channel.link.bler import code_blocks, cqi_curves
from sfl_sim.channel.link.cqi_tables import CQI_TABLES

RATE = McsTableRate(mapping="bler")
SINR_DB = -2.0  # CQI 4 (QPSK 308/1024) under the bler mapping, with a block error rate of a few per cent
RATE_BPS, PAYLOAD_BITS = 8e6, 1.2e5  # 4000-bit blocks (two code blocks each), 30 blocks
SLOT_S = 0.5e-3  # a Harq built without slot_s: numerology 1's slot, 1 ms / 2^1 (TS 38.211 clause 4.3.2)


def _p_first():
    """The first-copy transport-block error rate, from the curve and the segmentation directly."""
    cqi = int(RATE.cqi(10 ** (SINR_DB / 10)))
    n = math.ceil(PAYLOAD_BITS / (RATE_BPS * SLOT_S))
    cb, n_cb = code_blocks(PAYLOAD_BITS / n, CQI_TABLES["cqi_table1"][cqi - 1][2] / 1024)
    bler = float(cqi_curves("cqi_table1")[cqi - 1].bler(SINR_DB, cb))
    return 1 - (1 - bler) ** n_cb, n


def test_setting_is_what_the_test_assumes():
    p, n = _p_first()
    assert int(RATE.cqi(10 ** (SINR_DB / 10))) == 4 and n == 30 and 0.01 < p < 0.5


@pytest.mark.parametrize("max_tx", [1, 2, 4])
def test_expected_mode_equals_its_closed_form(max_tx):
    p, n = _p_first()
    harq = Harq(RATE, max_transmissions=max_tx, harq_rtt_s=8e-3)
    got = harq.send(PAYLOAD_BITS, RATE_BPS, SINR_DB)
    mean_n = (1 - p ** max_tx) / (1 - p)  # no combining: geometric, truncated at M copies
    mean_max = sum(1 - (1 - p ** m) ** n for m in range(max_tx))
    assert got.blocks == n
    assert got.retransmissions == pytest.approx(n * (mean_n - 1), rel=1e-12)
    assert got.time_s == pytest.approx(mean_n * PAYLOAD_BITS / RATE_BPS + (mean_max - 1) * 8e-3, rel=1e-12)
    assert got.delivered == (1 - (1 - p ** max_tx) ** n < 0.5)


def test_without_errors_the_time_is_bits_over_rate():
    got = Harq(RATE).send(PAYLOAD_BITS, RATE_BPS, 11.0)  # BLER 0 at the chosen CQI (CQI 10, 64QAM 466)
    assert got.time_s == PAYLOAD_BITS / RATE_BPS and got.retransmissions == 0.0 and got.delivered


def test_chase_combining_adds_the_sinrs_and_nests_the_failures():
    """q_m = TBLER(m gamma): after m combined copies the block has failed when their combined decode fails
    (not the product of the TBLERs, which treats the combined decodes as independent)."""
    harq = Harq(RATE, chase_combining=True, max_transmissions=3)
    q = harq.failure_chain(PAYLOAD_BITS, RATE_BPS, SINR_DB)
    plain = Harq(RATE, max_transmissions=3)
    _, n = _p_first()
    cb, n_cb = code_blocks(PAYLOAD_BITS / n, 308 / 1024)  # CQI 4's code rate, kept for every copy
    curve = cqi_curves("cqi_table1")[3]
    p = [1 - (1 - float(curve.bler(SINR_DB + 10 * math.log10(m), cb))) ** n_cb for m in (1, 2, 3)]
    np.testing.assert_allclose(q, [1.0, p[0], p[1], p[2]], rtol=1e-12)
    assert q[1] > 0 and q[2] < plain.failure_chain(PAYLOAD_BITS, RATE_BPS, SINR_DB)[2]
    assert q[2] >= p[0] * p[1]  # never below the product of the TBLERs (which was optimistic)


@pytest.mark.slow
@pytest.mark.parametrize("max_tx, combining", [(2, False), (4, True)])
def test_sampled_mode_converges_to_the_expected(max_tx, combining):
    kw = dict(max_transmissions=max_tx, chase_combining=combining, harq_rtt_s=0.0)
    expected = Harq(RATE, mode="expected", **kw)
    sampled = Harq(RATE, mode="sampled", **kw)
    q = expected.failure_chain(PAYLOAD_BITS, RATE_BPS, SINR_DB)
    n = expected.blocks(PAYLOAD_BITS, RATE_BPS)
    mean_n = q[:max_tx].sum()
    var_n = sum((2 * m + 1) * q[m] for m in range(max_tx)) - mean_n ** 2  # E[N^2] - E[N]^2
    draws = 4000
    rng = np.random.default_rng(7)
    sent = [sampled.send(PAYLOAD_BITS, RATE_BPS, SINR_DB, rng) for _ in range(draws)]
    retx = np.array([s.retransmissions for s in sent])
    # retransmissions = sum over n independent blocks of N_i - 1: mean n (E[N] - 1), variance n Var(N)
    assert abs(retx.mean() - n * (mean_n - 1)) < 4 * math.sqrt(n * var_n / draws)
    assert expected.send(PAYLOAD_BITS, RATE_BPS, SINR_DB).retransmissions == pytest.approx(n * (mean_n - 1))
    # with no round trip the time is the copies' air time: its mean is the expected mode's time
    times = np.array([s.time_s for s in sent])
    assert abs(times.mean() - expected.send(PAYLOAD_BITS, RATE_BPS, SINR_DB).time_s) < \
        4 * math.sqrt(n * var_n / draws) * PAYLOAD_BITS / (n * RATE_BPS)
    # a payload is lost with probability 1 - (1 - q_M)^n: binomial over the draws
    loss = 1 - (1 - q[max_tx]) ** n
    lost = np.mean([not s.delivered for s in sent])
    assert abs(lost - loss) < 4 * math.sqrt(loss * (1 - loss) / draws) + 1e-12


def test_sampled_mode_is_seeded():
    h = Harq(RATE, mode="sampled")
    a = [h.send(PAYLOAD_BITS, RATE_BPS, SINR_DB, np.random.default_rng(3)) for _ in range(3)]
    assert a[0] == a[1] == a[2]


def test_out_of_range_link_always_fails():
    h = Harq(RATE, max_transmissions=2)
    np.testing.assert_array_equal(h.failure_chain(1e4, 1e6, -20.0), [1.0, 1.0, 1.0])
    assert not h.send(1e4, 1e6, -20.0).delivered


def test_slot_block_columns():
    h = Harq(RATE, max_transmissions=4)
    first, mean = h.slot_block([RATE_BPS, 0.0], [SINR_DB, SINR_DB])
    q = h.failure_chain(RATE_BPS * SLOT_S, RATE_BPS, SINR_DB)
    assert first[0] == pytest.approx(q[1]) and mean[0] == pytest.approx(q[:4].sum())
    assert np.isnan(first[1]) and np.isnan(mean[1])


@pytest.mark.parametrize("kwargs, field", [
    ({"mode": "average"}, "mode"),
    ({"max_transmissions": 0}, "max_transmissions"),
    ({"max_transmissions": 2.0}, "max_transmissions"),
    ({"harq_rtt_s": -1e-3}, "harq_rtt_s"),
    ({"slot_s": 0.0}, "slot_s"),
    ({"chase_combining": 1}, "chase_combining"),
])
def test_bad_parameters_give_one_line_naming_the_field(kwargs, field):
    with pytest.raises(ValueError) as info:
        Harq(RATE, **kwargs)
    assert str(info.value).startswith(field) and "\n" not in str(info.value)


def test_harq_needs_an_mcs_rate_model():
    with pytest.raises(ValueError, match=r"^rate: HARQ needs an MCS rate model \(cell.rate: mcs_table\)"):
        Harq(ShannonRate())


def test_combined_sinr_past_the_table_continues_the_last_slope_by_hand():
    """Our reading past a curve's last tabulated SINR: log10 BLER goes on at the slope of its last step."""
    from sfl_sim.channel.link.harq import _beyond_the_table

    curve = cqi_curves("cqi_table1")[14]  # CQI 15: 64QAM 948/1024, the curve that ends highest
    last, prev = float(curve.snr_db[-1]), float(curve.snr_db[-2])
    b_last, b_prev = float(curve.bler(last, 2000.0)), float(curve.bler(prev, 2000.0))
    assert 0 < b_last < b_prev  # still falling where the table stops
    slope = (math.log10(b_last) - math.log10(b_prev)) / (last - prev)
    s = np.array([prev, last, last + 3.0, last + 6.0])
    got = _beyond_the_table(curve, s, 2000.0)
    np.testing.assert_allclose(got, [b_prev, b_last, b_last * 10 ** (3 * slope), b_last * 10 ** (6 * slope)],
                               rtol=1e-12)
    assert np.all(np.diff(got) < 0)
    # within the table it is the curve itself
    inside = np.linspace(float(curve.snr_db[0]), last, 7)
    np.testing.assert_array_equal(_beyond_the_table(curve, inside, 2000.0), curve.bler(inside, 2000.0))


def test_past_the_table_the_first_copy_reads_the_curve_and_combined_copies_keep_helping():
    rate = McsTableRate(mapping="gap")  # the gap mapping picks CQI 15 where its curve has not reached 0
    harq = Harq(rate, chase_combining=True, max_transmissions=4)
    curve = cqi_curves("cqi_table1")[14]
    sinr_db = float(curve.snr_db[-1]) + 6.0
    assert int(rate.cqi(10 ** (sinr_db / 10))) == 15
    q = harq.failure_chain(1e3, 2e6, sinr_db)  # one 1000-bit block per 0.5 ms slot
    cb, n_cb = code_blocks(1e3, 948 / 1024)
    held = 1 - (1 - float(curve.bler(sinr_db, cb))) ** n_cb
    assert q[1] == pytest.approx(held, rel=1e-12) and held > 0
    assert np.all(np.diff(q[1:]) < 0)  # each combined copy lowers the failure probability
