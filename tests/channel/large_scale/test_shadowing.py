import numpy as np
import pytest

from sfl_sim.channel import SHADOWING, LogNormalShadowing, NoShadowing


def test_no_shadowing_is_zero():
    out = NoShadowing().sample_db(5, np.random.default_rng(0))
    np.testing.assert_array_equal(out, np.zeros(5))


def test_lognormal_sample_std_matches_sigma():
    out = LogNormalShadowing(sigma_db=8.0).sample_db(20000, np.random.default_rng(1))
    assert out.shape == (20000,)
    # Standard error of the sample std is sigma / sqrt(2n) ~ 0.04 dB; allow ~5 of them.
    assert out.std() == pytest.approx(8.0, abs=0.2)
    assert abs(out.mean()) < 0.2


def test_lognormal_same_seed_same_draws():
    a = LogNormalShadowing(4.0).sample_db(10, np.random.default_rng(7))
    b = LogNormalShadowing(4.0).sample_db(10, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)


def test_lognormal_zero_sigma_gives_zeros():
    np.testing.assert_array_equal(LogNormalShadowing(0.0).sample_db(3, np.random.default_rng(0)), np.zeros(3))


def test_negative_sigma_raises_naming_parameter():
    with pytest.raises(ValueError, match=r"sigma_db.*-1"):
        LogNormalShadowing(sigma_db=-1.0)


def test_registry_creates_with_params():
    model = SHADOWING.create("lognormal", sigma_db=6.0)
    assert isinstance(model, LogNormalShadowing) and model.params.sigma_db == 6.0
