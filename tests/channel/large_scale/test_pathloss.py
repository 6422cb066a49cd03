import math

import numpy as np
import pytest

from sfl_sim.channel import PATHLOSS, TR36814Macro


def test_tr36814_at_100_m():
    # 128.1 + 37.6 * log10(0.1 km) = 128.1 - 37.6 = 90.5 dB
    assert TR36814Macro().loss_db(100.0) == pytest.approx(90.5)


def test_tr36814_at_500_m():
    # 128.1 + 37.6 * log10(0.5) = 128.1 + 37.6 * (-0.30103) = 116.781 dB
    assert TR36814Macro().loss_db(500.0) == pytest.approx(128.1 + 37.6 * math.log10(0.5))
    assert TR36814Macro().loss_db(500.0) == pytest.approx(116.781, abs=1e-3)


def test_tr36814_at_1_km_is_intercept():
    assert TR36814Macro().loss_db(1000.0) == pytest.approx(128.1)


def test_tr36814_is_vectorized():
    out = TR36814Macro().loss_db(np.array([100.0, 1000.0, 10000.0]))
    assert out.shape == (3,)
    np.testing.assert_allclose(out, [90.5, 128.1, 165.7])


def test_tr36814_rejects_zero_distance():
    with pytest.raises(ValueError, match="distance_m"):
        TR36814Macro().loss_db([100.0, 0.0])


def test_registered_name_creates_model():
    assert isinstance(PATHLOSS.create("tr36814_macro"), TR36814Macro)
