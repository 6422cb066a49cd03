"""Uplink power control (TS 38.213 7.1.1 open loop): hand calculations, Sionna's formula, the cell."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.channel import POWER_CONTROL, check_component
from sfl_sim.channel.link.power_control import FixedPower, OpenLoopPowerControl, resource_blocks
from tests.channel.helpers import N0_W_PER_HZ, small_cell


def _dbm_to_w(dbm: float) -> float:
    return 10.0 ** ((dbm - 30.0) / 10.0)


def _pl_db(distance_m: float) -> float:
    return 128.1 + 37.6 * math.log10(distance_m / 1000.0)


def test_open_loop_matches_hand_calculation() -> None:
    pc = OpenLoopPowerControl(p0_dbm=-90.0, alpha=0.8, p_max_dbm=23.0, subcarrier_spacing_hz=30e3)
    # 1.8 MHz at 30 kHz = 60 subcarriers = 5 RBs.  PL 110 dB: -90 + 10 log10(5) + 0.8 x 110 = 4.98970 dBm.
    # PL 140 dB: -90 + 6.98970 + 112 = 28.99 dBm > 23 dBm, so P_max.
    got = pc.tx_power_w(0.2, np.array([1.8e6, 1.8e6]), np.array([110.0, 140.0]))
    assert got[0] == pytest.approx(_dbm_to_w(-90.0 + 10.0 * math.log10(5.0) + 88.0), rel=1e-12)
    assert got[0] == pytest.approx(3.1548e-3, rel=1e-4)
    assert got[1] == pytest.approx(_dbm_to_w(23.0), rel=1e-12)
    # A share of 5.5 RBs touches 6; a zero share sends nothing.
    assert resource_blocks([1.98e6, 1.8e6, 0.0], 30e3).tolist() == [6.0, 5.0, 0.0]
    assert pc.tx_power_w(0.2, 0.0, 110.0) == 0.0


def test_fixed_power_is_the_configured_power() -> None:
    assert FixedPower().tx_power_w(np.array([0.2, 0.1]), np.array([1e6, 0.0]), np.array([100.0, 150.0])).tolist() \
        == [0.2, 0.1]


def test_open_loop_equals_sionna() -> None:
    sys_module = pytest.importorskip("sionna.sys", reason="sionna-no-rt is not installed (pip install sionna-no-rt)")
    import torch

    rng = np.random.default_rng(3)
    pathloss_db = rng.uniform(70.0, 150.0, 200)
    subcarriers = rng.integers(1, 600, 200)
    scs = 30e3
    for p0, alpha, p_max in ((-90.0, 1.0, 23.0), (-75.0, 0.8, 26.0), (-100.0, 0.4, 20.0), (-60.0, 0.0, 23.0)):
        ours = OpenLoopPowerControl(p0, alpha, p_max, scs).tx_power_w(0.2, subcarriers * scs, pathloss_db)
        theirs = sys_module.open_loop_uplink_power_control(
            torch.tensor(10.0 ** (pathloss_db / 10.0), dtype=torch.float64), torch.tensor(subcarriers),
            alpha=alpha, p0_dbm=p0, ut_max_power_dbm=p_max, precision="double").numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0.0)


def test_cell_uses_the_controlled_power_for_its_rate() -> None:
    pc = OpenLoopPowerControl(p0_dbm=-100.0, alpha=1.0, p_max_dbm=23.0, subcarrier_spacing_hz=15e3)
    cell = small_cell(power_control=pc)  # 100, 300, 500 m; 3 MHz by three: 1 MHz = 5.56 RBs of 180 kHz -> 6
    link = cell.uplink_link([0, 1, 2])
    for k, d in enumerate((100.0, 300.0, 500.0)):
        p_w = min(_dbm_to_w(-100.0 + 10.0 * math.log10(6.0) + _pl_db(d)), _dbm_to_w(23.0))
        assert link.tx_power_w[k] == pytest.approx(p_w, rel=1e-12)
        gain = 10.0 ** (-_pl_db(d) / 10.0)
        assert link.rate_bps[k] == pytest.approx(1e6 * math.log2(1.0 + p_w * gain / (1e6 * N0_W_PER_HZ)), rel=1e-12)
    # Full compensation: every client under P_max arrives at P0 per RB, so the same SNR.
    assert link.snr_db[0] == pytest.approx(link.snr_db[1], abs=1e-9)
    assert cell.uplink_tx_power_w([0, 1, 2], 1e6).tolist() == link.tx_power_w.tolist()
    assert cell.describe()["tx_power_w"].tolist() == link.tx_power_w.tolist()


@pytest.mark.parametrize("name", ["fixed", "open_loop"])
def test_builtin_power_controls_pass_conformance(name) -> None:
    assert check_component("power_control", POWER_CONTROL.create(name))["checks"]


@pytest.mark.parametrize("kwargs, words", [
    (dict(alpha=0.3), ["alpha", "0.3", "0.0, 0.4, 0.5"]),
    (dict(alpha=True), ["alpha", "True"]),
    (dict(p0_dbm=50.0), ["p0_dbm", "50"]),
    (dict(p_max_dbm=60.0), ["p_max_dbm", "60"]),
    (dict(subcarrier_spacing_hz=20e3), ["subcarrier_spacing_hz", "20000", "15000"]),
])
def test_bad_parameter_is_one_line(kwargs, words) -> None:
    with pytest.raises(ValueError) as err:
        OpenLoopPowerControl(**kwargs)
    message = str(err.value)
    assert "\n" not in message
    for w in words:
        assert w in message, (w, message)
