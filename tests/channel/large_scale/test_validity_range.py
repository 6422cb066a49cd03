"""Path-loss models state the distances they are valid for."""
import math

import numpy as np
import pytest

from sfl_sim import channel
from sfl_sim.channel.protocols import RangedPathLoss


def test_tr36814_macro_is_valid_from_35_m():
    assert channel.TR36814Macro().valid_distance_m == (35.0, math.inf)
    # Closer in, the formula falls below free-space loss (the reason for the bound).
    assert channel.TR36814Macro().loss_db(10.0) < channel.FreeSpace(2e9).loss_db(10.0)
    assert channel.TR36814Macro().loss_db(35.0) > channel.FreeSpace(2e9).loss_db(35.0)


@pytest.mark.parametrize("model", [channel.TR38901UMa(), channel.TR38901UMi()])
def test_tr38901_models_are_valid_from_10_m_to_5_km(model):
    assert model.valid_distance_m == (10.0, 5000.0)


def test_free_space_is_valid_in_the_far_field_from_one_wavelength():
    low, high = channel.FreeSpace(3e9).valid_distance_m
    assert low == pytest.approx(0.1, rel=1e-3) and high == math.inf


def test_log_distance_is_valid_from_its_reference_distance():
    assert channel.LogDistance(reference_distance_m=20.0).valid_distance_m == (20.0, math.inf)


def test_every_builtin_path_loss_states_a_range():
    for name in channel.PATHLOSS.names():
        model = channel.PATHLOSS.create(name)
        assert isinstance(model, RangedPathLoss), name
        low, high = model.valid_distance_m
        assert 0 < low < high, name
        ends = np.array([low, min(high, 1e4)])
        loss = (model.loss_db(ends, los=np.array([True, False])) if hasattr(model, "los_probability")
                else model.loss_db(ends))
        assert np.all(np.isfinite(loss)), name


def test_default_placement_is_valid_for_the_default_path_loss():
    low, _ = channel.TR36814Macro().valid_distance_m
    assert channel.UniformDiscPlacement().min_distance_m >= low
