import numpy as np
import pytest

from sfl_sim.channel import SHADOWING, CorrelatedShadowing, LogNormalShadowing, ShadowingSite

SPACING_M = 1e5  # pairs this far apart are uncorrelated (exp(-2000))


def pair_site(n_pairs, separation_m, los=None, sigma=None, dcorr=None):
    """n_pairs pairs of clients, ``separation_m`` apart within a pair, pairs far apart."""
    x = np.repeat(np.arange(n_pairs) * SPACING_M, 2)
    y = np.tile([0.0, separation_m], n_pairs)
    pos = np.column_stack((x, y))
    return ShadowingSite(pos, np.hypot(x, y), los, sigma, dcorr)


def test_correlated_marginal_sigma_and_pair_correlation():
    # Separation 20 m, d_corr 50 m: correlation exp(-20/50) = exp(-0.4) = 0.6703
    site = pair_site(200, 20.0)
    model = CorrelatedShadowing(sigma_db=6.0, decorrelation_m=50.0)
    values = np.concatenate([model.sample_site_db(site, np.random.default_rng(seed))[0] for seed in range(6)])
    assert values.shape == (2400,)
    # std of the sample std ~ 6 / sqrt(2 * 2400) ~ 0.09 dB (pairs are not independent: allow more)
    assert values.std() == pytest.approx(6.0, abs=0.35)
    a, b = values[0::2], values[1::2]
    # Standard error of a correlation estimate ~ (1 - rho^2) / sqrt(n) = 0.55 / 34.6 ~ 0.016
    assert np.corrcoef(a, b)[0, 1] == pytest.approx(np.exp(-0.4), abs=0.06)


def test_correlated_same_seed_same_values():
    site = pair_site(5, 10.0)
    model = CorrelatedShadowing(4.0, 30.0)
    a, _ = model.sample_site_db(site, np.random.default_rng(3))
    b, _ = model.sample_site_db(site, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


def test_gudmundson_update_of_a_moving_client():
    # Every client moves 30 m; new value correlates exp(-30/50) = 0.5488 with the old one, same sigma.
    n = 200
    pos = np.column_stack((np.arange(n) * SPACING_M, np.zeros(n)))
    old = ShadowingSite(pos, np.hypot(*pos.T))
    new_pos = pos + [0.0, 30.0]
    new = ShadowingSite(new_pos, np.hypot(*new_pos.T))
    model = CorrelatedShadowing(sigma_db=8.0, decorrelation_m=50.0)
    before, after = [], []
    for seed in range(6):
        b, state = model.sample_site_db(old, np.random.default_rng(seed))
        a, _ = model.update_site_db(state, old, new, np.random.default_rng(100 + seed))
        before.append(b)
        after.append(a)
    before, after = np.concatenate(before), np.concatenate(after)
    # 1200 samples: SE of the std ~ 8 / sqrt(2400) = 0.16 dB, of the correlation ~ 0.7 / 34.6 = 0.02
    assert after.std() == pytest.approx(8.0, abs=0.5)
    assert np.corrcoef(before, after)[0, 1] == pytest.approx(np.exp(-0.6), abs=0.06)


def test_unmoved_clients_keep_their_values_and_neighbours_stay_correlated():
    site = pair_site(3, 5.0)
    model = CorrelatedShadowing(sigma_db=5.0, decorrelation_m=20.0)
    before, state = model.sample_site_db(site, np.random.default_rng(4))
    after, _ = model.update_site_db(state, site, site, np.random.default_rng(5))
    np.testing.assert_allclose(after, before)


def test_model_sigma_per_los_state():
    # sigma "model": LOS clients get 4 dB, NLOS 7.82 dB (38.901 UMi), from separate fields.
    n = 400
    pos = np.column_stack((np.arange(n) * SPACING_M, np.zeros(n)))
    los = np.arange(n) % 2 == 0
    site = ShadowingSite(pos, np.hypot(*pos.T), los, np.where(los, 4.0, 7.82), np.where(los, 10.0, 13.0))
    values = np.concatenate([CorrelatedShadowing().sample_site_db(site, np.random.default_rng(s))[0] for s in range(5)])
    los = np.tile(los, 5)
    # 1000 samples per state: SE of the std ~ sigma / sqrt(2000) (0.09 dB, 0.17 dB)
    assert values[los].std() == pytest.approx(4.0, abs=0.3)
    assert values[~los].std() == pytest.approx(7.82, abs=0.55)


def test_lognormal_model_sigma_through_site():
    n = 4000
    pos = np.column_stack((np.arange(n) * 10.0, np.zeros(n)))
    site = ShadowingSite(pos, np.hypot(*pos.T), None, np.full(n, 3.0), None)
    values, z = LogNormalShadowing("model").sample_site_db(site, np.random.default_rng(0))
    assert values.std() == pytest.approx(3.0, abs=0.15)
    np.testing.assert_allclose(values, 3.0 * z)


def test_model_sigma_without_model_value_raises():
    site = pair_site(1, 5.0)
    with pytest.raises(ValueError, match="sigma_db='model'"):
        LogNormalShadowing("model").sample_site_db(site, np.random.default_rng(0))
    with pytest.raises(ValueError, match="sigma_db='model'"):
        LogNormalShadowing("model").sample_db(3, np.random.default_rng(0))


@pytest.mark.parametrize("kwargs, match", [({"sigma_db": "auto"}, r"sigma_db: got 'auto'.*'model'"),
                                           ({"decorrelation_m": 0.0}, r"decorrelation_m.*0"),
                                           ({"sigma_db": -1.0}, r"sigma_db.*-1")])
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CorrelatedShadowing(**kwargs)


def test_registered():
    assert isinstance(SHADOWING.create("correlated", sigma_db=4.0), CorrelatedShadowing)
