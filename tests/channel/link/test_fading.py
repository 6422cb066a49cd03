import numpy as np
import pytest
from scipy import stats

from sfl_sim.channel import FADING, NakagamiFading, NoFading, RayleighFading, RicianFading

N = 20000


def test_no_fading_is_one_and_consumes_nothing():
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(NoFading().sample_power_gain(4, rng), np.ones(4))
    assert rng.random() == np.random.default_rng(0).random()


def test_rayleigh_power_is_exponential_mean_one():
    g = RayleighFading().sample_power_gain(N, np.random.default_rng(1))
    assert g.mean() == pytest.approx(1.0, abs=0.03)
    assert stats.kstest(g, stats.expon().cdf).pvalue > 0.01


@pytest.mark.parametrize("k_db", [0.0, 9.0])
def test_rician_amplitude_is_rice_with_unit_power(k_db):
    # K = nu^2 / (2 s^2), nu^2 + 2 s^2 = 1  =>  s^2 = 1 / (2 (K + 1)), nu = sqrt(K / (K + 1))
    k = 10 ** (k_db / 10)
    s = np.sqrt(1 / (2 * (k + 1)))
    nu = np.sqrt(k / (k + 1))
    g = RicianFading(k_factor_db=k_db).sample_power_gain(N, np.random.default_rng(2))
    assert g.mean() == pytest.approx(1.0, abs=0.03)
    assert stats.kstest(np.sqrt(g), stats.rice(nu / s, scale=s).cdf).pvalue > 0.01


@pytest.mark.parametrize("m", [0.5, 1.0, 3.0])
def test_nakagami_power_is_gamma(m):
    g = NakagamiFading(m).sample_power_gain(N, np.random.default_rng(3))
    assert g.mean() == pytest.approx(1.0, abs=0.03)
    assert g.var() == pytest.approx(1.0 / m, rel=0.1)
    assert stats.kstest(g, stats.gamma(m, scale=1.0 / m).cdf).pvalue > 0.01


def test_same_seed_same_draws():
    a = RicianFading(3.0).sample_power_gain(7, np.random.default_rng(9))
    b = RicianFading(3.0).sample_power_gain(7, np.random.default_rng(9))
    np.testing.assert_array_equal(a, b)


def test_nakagami_m_below_half_raises():
    with pytest.raises(ValueError, match=r"m: got 0.3; allowed: a finite number >= 0.5"):
        NakagamiFading(0.3)


def test_rician_bad_k_raises():
    with pytest.raises(ValueError, match="k_factor_db"):
        RicianFading(float("nan"))


def test_registered():
    assert set(FADING.names()) >= {"none", "rayleigh", "rician", "nakagami"}
    assert FADING.create("nakagami", m=2.0).params.m == 2.0
