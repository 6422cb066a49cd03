import math

import numpy as np
import pytest

from sfl_sim.channel import RATES, ShannonRate
from tests.channel.helpers import N0_W_PER_HZ


def test_noise_figure_by_hand():
    # b = 1 MHz, p = 0.2 W, g = 1e-10, N0 = -174 dBm/Hz, NF = 7 dB:
    #   SNR = 23.0103 - 100 - (-114 + 7) = 30.0103 dB = 1002.374
    #   rate = 1e6 log2(1 + 1002.374) = 9.97066 Mbit/s
    model = ShannonRate(noise_figure_db=7.0)
    assert model.snr_db(1e6, 0.2, 1e-10, N0_W_PER_HZ) == pytest.approx(30.0103, abs=1e-4)
    assert model.rate_bps(1e6, 0.2, 1e-10, N0_W_PER_HZ) == pytest.approx(1e6 * math.log2(1 + 10 ** 3.00103), rel=1e-5)
    assert model.rate_bps(1e6, 0.2, 1e-10, N0_W_PER_HZ) == pytest.approx(9.97066e6, rel=1e-5)


def test_spectral_efficiency_cap_by_hand():
    # Uncapped: 12.2948 Mbit/s on 1 MHz (12.29 bit/s/Hz); cap 6 bit/s/Hz -> 6 Mbit/s.
    # A weak link (g = 1e-14: SNR = -2.99 dB, 0.70 bit/s/Hz) is below the cap and unchanged.
    model = ShannonRate(max_spectral_efficiency_bps_per_hz=6.0)
    out = model.rate_bps(1e6, 0.2, np.array([1e-10, 1e-14]), N0_W_PER_HZ)
    assert out[0] == pytest.approx(6e6)
    assert out[1] == pytest.approx(1e6 * math.log2(1 + 0.2 * 1e-14 / (1e6 * N0_W_PER_HZ)))


def test_defaults_keep_old_behaviour_and_signature():
    old = ShannonRate()
    assert repr(old) == "ShannonRate()"
    assert old.rate_bps(1e6, 0.2, 1e-10, N0_W_PER_HZ) == pytest.approx(12.2948e6, rel=1e-5)
    assert RATES.create("shannon", noise_figure_db=5.0).noise_figure_db == 5.0


@pytest.mark.parametrize("kwargs, match", [({"noise_figure_db": -1.0}, r"noise_figure_db.*-1"),
                                           ({"max_spectral_efficiency_bps_per_hz": 0.0},
                                            r"max_spectral_efficiency_bps_per_hz.*0")])
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ShannonRate(**kwargs)
