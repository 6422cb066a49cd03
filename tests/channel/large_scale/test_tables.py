"""The 3GPP scenarios' constants are data: each model reads its row, and a row is all a scenario needs."""
import dataclasses
import math

import numpy as np
import pytest

from sfl_sim.channel import TR36814Macro, TR38901UMa, TR38901UMi
from sfl_sim.channel.large_scale.tables import TR36814_MACRO, TR38901_UMA, TR38901_UMI


@pytest.mark.parametrize("model, row", [(TR38901UMa(), TR38901_UMA), (TR38901UMi(), TR38901_UMI)])
def test_a_tr38901_model_reads_its_row(model, row):
    assert model.bs_height_m == row.default_bs_height_m
    assert model.valid_distance_m == row.valid_distance_m
    assert model.los_decorrelation_m == row.los_decorrelation_m
    los = np.array([True, False])
    np.testing.assert_array_equal(model.shadowing_sigma_db(los),
                                  [row.shadowing_sigma_los_db, row.shadowing_sigma_nlos_db])
    np.testing.assert_array_equal(model.shadowing_decorrelation_m(los),
                                  [row.shadowing_decorrelation_los_m, row.shadowing_decorrelation_nlos_m])
    with pytest.raises(ValueError, match=f"<= {row.max_ut_height_m:g} m for {row.name}"):
        type(model)(ut_height_m=row.max_ut_height_m + 0.5)


def test_the_rows_hold_the_tables_values():
    # TR 38.901 Table 7.4.1-1 (sigma_SF), Table 7.5-6 (decorrelation), as the models' docstrings state them.
    assert (TR38901_UMA.shadowing_sigma_los_db, TR38901_UMA.shadowing_sigma_nlos_db) == (4.0, 6.0)
    assert (TR38901_UMI.shadowing_sigma_los_db, TR38901_UMI.shadowing_sigma_nlos_db) == (4.0, 7.82)
    assert (TR38901_UMA.shadowing_decorrelation_los_m, TR38901_UMA.shadowing_decorrelation_nlos_m) == (37.0, 50.0)
    assert (TR38901_UMI.shadowing_decorrelation_los_m, TR38901_UMI.shadowing_decorrelation_nlos_m) == (10.0, 13.0)
    assert TR36814Macro().valid_distance_m == TR36814_MACRO.valid_distance_m == (35.0, math.inf)
    with pytest.raises(dataclasses.FrozenInstanceError):
        TR38901_UMA.default_bs_height_m = 30.0  # type: ignore[misc]


def test_a_row_drives_the_path_loss_formulas():
    # A scenario whose NLOS formula is the UMa one with another intercept: the loss moves by the difference.
    row = dataclasses.replace(TR38901_UMA, name="UMa + 10 dB", nlos_db=(23.54, 39.08, 20.0, 0.6))

    class Shifted(TR38901UMa):
        constants = row

    d = np.array([50.0, 300.0, 2000.0])
    base, shifted = TR38901UMa(los="nlos"), Shifted(los="nlos")
    np.testing.assert_allclose(shifted._nlos_prime_db(base.distance_3d_m(d)),
                               base._nlos_prime_db(base.distance_3d_m(d)) + 10.0, rtol=1e-12)
    np.testing.assert_array_equal(shifted.loss_los_db(d), base.loss_los_db(d))
