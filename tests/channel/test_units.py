import numpy as np
import pytest

from sfl_sim.channel import db_to_linear, dbm_to_w, linear_to_db, w_to_dbm


def test_db_to_linear_known_values():
    np.testing.assert_allclose(db_to_linear([0.0, 10.0, -30.0, 3.0]), [1.0, 10.0, 1e-3, 1.9952623], rtol=1e-7)


def test_linear_db_round_trip_on_arrays():
    x = np.array([[1e-12, 0.5], [2.0, 1e6]])
    np.testing.assert_allclose(db_to_linear(linear_to_db(x)), x, rtol=1e-12)


def test_dbm_to_w_known_values():
    # 30 dBm = 1 W, 0 dBm = 1 mW, -174 dBm/Hz = 10^(-20.4) W/Hz.
    np.testing.assert_allclose(dbm_to_w([30.0, 0.0, -174.0]), [1.0, 1e-3, 10 ** -20.4], rtol=1e-12)


def test_w_to_dbm_inverts_dbm_to_w():
    p_dbm = np.array([-174.0, 0.0, 23.0, 46.0])
    np.testing.assert_allclose(w_to_dbm(dbm_to_w(p_dbm)), p_dbm, atol=1e-10)


def test_zero_power_is_minus_infinity_dbm():
    assert w_to_dbm(0.0) == -np.inf


def test_negative_linear_value_raises():
    with pytest.raises(ValueError, match="value_linear"):
        linear_to_db([1.0, -1.0])


def test_negative_power_raises():
    with pytest.raises(ValueError, match="power_w"):
        w_to_dbm(-0.1)


def test_linear_to_db_unchecked_is_linear_to_db_without_the_check():
    from sfl_sim.channel.units import linear_to_db_unchecked

    x = np.array([0.0, 1e-300, 0.37, 1.0, 2.5e7, np.inf])
    np.testing.assert_array_equal(linear_to_db_unchecked(x), linear_to_db(x))
    with np.errstate(all="raise"):  # no warning escapes: 0 gives -inf, a negative nan
        assert np.isnan(linear_to_db_unchecked(np.array([-1.0, np.nan]))).all()
