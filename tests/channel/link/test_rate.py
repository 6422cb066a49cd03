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


# ----------------------------------------------------------------------------- the TS 38.306 cap
def test_ts38306_single_layer_uplink_peak_by_hand():
    # TS 38.306 clause 4.1.2: 1e-6 v Q_m f R_max N_PRB 12 / T_s (1 - OH) Mbit/s, T_s = 1e-3 / (14 2^mu).
    # 20 MHz at 30 kHz (mu = 1): N_PRB = 51 (TS 38.101-1 Table 5.3.2-1); v = 1, Q_m = 8, f = 1,
    # R_max = 948/1024, OH = 0.08 (FR1 UL) -- our reading of a single-layer 256QAM handset:
    #   8 x 0.92578125 x 612 / 35.714 us x 0.92 = 116.76042 Mbit/s,
    # per Hz of the RBs (51 x 12 x 30 kHz = 18.36 MHz): 6.3595 bit/s/Hz.
    from sfl_sim.channel.link.peak import PEAK_CAPS, peak_spectral_efficiency_bps_per_hz

    peak_bps = 1 * 8 * 1 * (948 / 1024) * 51 * 12 / (1e-3 / (14 * 2)) * (1 - 0.08)
    assert peak_bps == pytest.approx(116.76042e6, rel=1e-7)
    assert PEAK_CAPS["ts38306_uplink"] == pytest.approx(6.3595, abs=1e-12)
    assert PEAK_CAPS["ts38306_uplink"] * 18.36e6 == pytest.approx(peak_bps, rel=1e-12)
    assert PEAK_CAPS["ts38306_downlink"] == pytest.approx(8 * 948 / 1024 * 0.86 * 14 / 15)
    assert peak_spectral_efficiency_bps_per_hz(0.08, modulation_order=6) == pytest.approx(6.3595 * 6 / 8)


def test_shannon_capped_at_the_ts38306_peak_and_uncapped_above_it():
    # A client at 40 dB SNR on 18.36 MHz: log2(1 + 1e4) = 13.29 bit/s/Hz, twice the peak.
    gain = 1e4 * 18.36e6 * N0_W_PER_HZ / 0.2
    plain = ShannonRate().rate_bps(18.36e6, 0.2, gain, N0_W_PER_HZ)
    capped = ShannonRate(max_spectral_efficiency_bps_per_hz="ts38306_uplink").rate_bps(18.36e6, 0.2, gain, N0_W_PER_HZ)
    assert plain == pytest.approx(18.36e6 * math.log2(1 + 1e4)) and plain > 116.77e6
    assert capped == pytest.approx(116.76042e6, rel=1e-7)
    # below the cap it is plain Shannon: 10 dB gives 3.46 bit/s/Hz
    low = 10.0 * 18.36e6 * N0_W_PER_HZ / 0.2
    assert ShannonRate(max_spectral_efficiency_bps_per_hz="ts38306_uplink").rate_bps(
        18.36e6, 0.2, low, N0_W_PER_HZ) == pytest.approx(18.36e6 * math.log2(11.0))


def test_shannon_cap_by_an_unknown_name_is_one_line():
    with pytest.raises(ValueError) as err:
        ShannonRate(max_spectral_efficiency_bps_per_hz="ts38306")
    msg = str(err.value)
    assert "\n" not in msg and "max_spectral_efficiency_bps_per_hz: got 'ts38306'" in msg and "ts38306_uplink" in msg


def test_shannon_without_a_zero_share_is_the_masked_formula():
    """No 0 Hz share skips the masks (a transfer's start): each rate as among shares with a 0 Hz
    one, bit for bit, capped or not; a 0-d argument still gives an array."""
    b = np.array([1e5, 3.7e5, 2e7])
    p, g = np.array([0.2, 0.1, 0.05]), np.array([1e-9, 3e-12, 1e-14])
    for model in (ShannonRate(), ShannonRate(max_spectral_efficiency_bps_per_hz=2.0)):
        alone = model.rate_bps(b, p, g, N0_W_PER_HZ)
        among = model.rate_bps(np.append(b, 0.0), np.append(p, 0.2), np.append(g, 1e-9), N0_W_PER_HZ)
        np.testing.assert_array_equal(alone, among[:3])
        assert among[3] == 0.0
        scalar = model.rate_bps(1e5, 0.2, 1e-9, N0_W_PER_HZ)
        assert isinstance(scalar, np.ndarray) and scalar.shape == () and scalar == alone[0]
