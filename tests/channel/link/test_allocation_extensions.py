import numpy as np
import pytest

from sfl_sim.channel import (
    ALLOCATORS,
    EqualFinishTimeAllocation,
    ProportionalPayloadAllocation,
    ShannonRate,
)
from sfl_sim.channel.link.allocation import accepts_rate_of
from tests.channel.helpers import N0_W_PER_HZ

BAND_HZ = 20e6


def rate_of_for(gains, power_w=0.2, model=None):
    model = model or ShannonRate()
    return lambda b: model.rate_bps(b, power_w, gains, N0_W_PER_HZ)


def test_proportional_payload_sums_to_band_and_is_proportional():
    shares = ProportionalPayloadAllocation().allocate_hz(BAND_HZ, [1.0, 3.0, 6.0], np.ones(3))
    np.testing.assert_allclose(shares, [2e6, 6e6, 12e6])
    assert shares.sum() == pytest.approx(BAND_HZ)


def test_proportional_payload_without_payload_is_equal():
    np.testing.assert_allclose(ProportionalPayloadAllocation().allocate_hz(9.0, None, np.ones(3)), [3.0] * 3)
    np.testing.assert_allclose(ProportionalPayloadAllocation().allocate_hz(9.0, [0, 0, 0], np.ones(3)), [3.0] * 3)


def test_equal_finish_time_equalises_and_uses_whole_band():
    gains = np.array([1e-9, 1e-11, 1e-12, 3e-13])
    payload = np.array([8e6, 2e6, 5e6, 1e6])
    rate_of = rate_of_for(gains)
    shares = EqualFinishTimeAllocation().allocate_hz(BAND_HZ, payload, gains, rate_of=rate_of)
    assert shares.sum() == pytest.approx(BAND_HZ, rel=1e-9)
    finish_s = payload / rate_of(shares)
    np.testing.assert_allclose(finish_s, finish_s[0], rtol=1e-6)
    # Better than the equal split for the slowest client.
    equal = payload / rate_of(np.full(4, BAND_HZ / 4))
    assert finish_s.max() < equal.max()


def test_equal_finish_time_with_rate_cap():
    gains = np.array([1e-8, 1e-12])
    model = ShannonRate(max_spectral_efficiency_bps_per_hz=4.0)
    rate_of = rate_of_for(gains, model=model)
    shares = EqualFinishTimeAllocation().allocate_hz(BAND_HZ, [4e6, 4e6], gains, rate_of=rate_of)
    np.testing.assert_allclose(4e6 / rate_of(shares), (4e6 / rate_of(shares))[0], rtol=1e-6)
    assert shares.sum() == pytest.approx(BAND_HZ)


def test_equal_finish_time_without_payload_equalises_rates():
    gains = np.array([1e-10, 1e-12, 1e-13])
    rate_of = rate_of_for(gains)
    shares = EqualFinishTimeAllocation().allocate_hz(BAND_HZ, None, gains, rate_of=rate_of)
    r = rate_of(shares)
    np.testing.assert_allclose(r, r[0], rtol=1e-6)


def test_equal_finish_time_identical_clients_split_equally():
    gains = np.full(5, 1e-11)
    shares = EqualFinishTimeAllocation().allocate_hz(BAND_HZ, np.full(5, 1e6), gains, rate_of=rate_of_for(gains))
    np.testing.assert_allclose(shares, BAND_HZ / 5, rtol=1e-9)


def test_equal_finish_time_zero_payload_gets_nothing():
    gains = np.array([1e-10, 1e-11, 1e-12])
    shares = EqualFinishTimeAllocation().allocate_hz(BAND_HZ, [1e6, 0.0, 2e6], gains, rate_of=rate_of_for(gains))
    assert shares[1] == 0.0
    assert shares.sum() == pytest.approx(BAND_HZ)


def test_equal_finish_time_needs_rate_of():
    assert accepts_rate_of(EqualFinishTimeAllocation())
    assert not accepts_rate_of(ALLOCATORS.create("equal"))
    with pytest.raises(ValueError, match="rate_of"):
        EqualFinishTimeAllocation().allocate_hz(BAND_HZ, [1.0], np.ones(1))


def test_registered():
    assert {"equal", "proportional_payload", "equal_finish_time"} <= set(ALLOCATORS.names())
