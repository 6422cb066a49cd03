import math

import numpy as np
import pytest

from sfl_sim.channel import RATES, ShannonRate
from tests.channel.helpers import N0_W_PER_HZ


def test_shannon_hand_computation():
    # b = 1 MHz, p = 0.2 W, path loss 100 dB, N0 = -174 dBm/Hz.
    #   p       = 10 log10(0.2 W / 1 mW)            = 23.0103 dBm
    #   noise   = -174 dBm/Hz + 10 log10(1e6 Hz)    = -114 dBm
    #   SNR     = 23.0103 - 100 - (-114)            = 37.0103 dB = 5023.77
    #   rate    = 1e6 * log2(1 + 5023.77)           = 12.2948 Mbit/s
    rate = ShannonRate().rate_bps(1e6, 0.2, 1e-10, N0_W_PER_HZ)
    assert rate == pytest.approx(1e6 * math.log2(1 + 10 ** (37.0103 / 10)), rel=1e-5)
    assert rate == pytest.approx(12.2948e6, rel=1e-5)


def test_snr_db_hand_computation():
    assert ShannonRate().snr_db(1e6, 0.2, 1e-10, N0_W_PER_HZ) == pytest.approx(37.0103, abs=1e-4)


def test_zero_bandwidth_gives_zero_rate_not_nan():
    out = ShannonRate().rate_bps(np.array([0.0, 1e6]), 0.2, 1e-10, N0_W_PER_HZ)
    assert out[0] == 0.0
    assert np.all(np.isfinite(out)) and out[1] > 0


def test_rate_broadcasts_over_clients():
    gains = np.array([1e-10, 1e-11, 1e-12])
    out = ShannonRate().rate_bps(1e6, 0.2, gains, N0_W_PER_HZ)
    assert out.shape == (3,)
    assert np.all(np.diff(out) < 0)  # weaker channel, lower rate


def test_negative_bandwidth_raises_naming_parameter():
    with pytest.raises(ValueError, match=r"bandwidth_hz.*-1"):
        ShannonRate().rate_bps(-1.0, 0.2, 1e-10, N0_W_PER_HZ)


def test_zero_noise_raises():
    with pytest.raises(ValueError, match="noise_psd_w_per_hz"):
        ShannonRate().rate_bps(1e6, 0.2, 1e-10, 0.0)


def test_registered_as_shannon():
    assert RATES.get("shannon") is ShannonRate
