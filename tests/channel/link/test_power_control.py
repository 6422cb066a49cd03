"""Uplink power control (TS 38.213 7.1.1 open loop): hand calculations, Sionna's formula, the cell."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.channel import POWER_CONTROL, check_component
from sfl_sim.channel.link.power_control import FixedPower, OpenLoopPowerControl, numerology, resource_blocks
from sfl_sim.channel.link.resource_grid import N_RB_FR1, n_rb
from tests.channel.helpers import N0_W_PER_HZ, small_cell


def _dbm_to_w(dbm: float) -> float:
    return 10.0 ** ((dbm - 30.0) / 10.0)


def _pl_db(distance_m: float) -> float:
    return 128.1 + 37.6 * math.log10(distance_m / 1000.0)


def test_open_loop_matches_hand_calculation() -> None:
    pc = OpenLoopPowerControl(p0_dbm=-90.0, alpha=0.8, p_max_dbm=23.0, subcarrier_spacing_hz=30e3)
    # TS 38.213 eq. (7.1.1): P0 + 10 log10(2^mu M_RB) + alpha PL.  1.8 MHz at 30 kHz (mu = 1) = 60 subcarriers
    # = 5 RBs.  PL 110 dB: -90 + 10 log10(2 x 5) + 0.8 x 110 = 8 dBm.
    # PL 140 dB: -90 + 10 + 112 = 32 dBm > 23 dBm, so P_max.
    got = pc.tx_power_w(0.2, np.array([1.8e6, 1.8e6]), np.array([110.0, 140.0]))
    assert got[0] == pytest.approx(_dbm_to_w(8.0), rel=1e-12)
    assert got[0] == pytest.approx(6.3096e-3, rel=1e-4)
    assert got[1] == pytest.approx(_dbm_to_w(23.0), rel=1e-12)
    # A share of 5.5 RBs touches 6; a zero share sends nothing.
    assert resource_blocks([1.98e6, 1.8e6, 0.0], 30e3).tolist() == [6.0, 5.0, 0.0]
    assert pc.tx_power_w(0.2, 0.0, 110.0) == 0.0


@pytest.mark.parametrize("mhz, scs_hz, want", [(20, 30e3, 51), (20, 15e3, 106), (100, 30e3, 273), (5, 15e3, 25),
                                                (10, 60e3, 11), (40, 30e3, 106)])
def test_n_rb_is_ts_38_101_1_table_5_3_2_1(mhz, scs_hz, want) -> None:
    """Spot values of TS 38.101-1 Table 5.3.2-1 (FR1), as OpenAirInterface's ``tables_5_3_2`` carries it."""
    assert n_rb(mhz * 1e6, scs_hz) == want


def test_the_nrb_table_leaves_guard_bands_and_grows_with_the_channel() -> None:
    for scs_hz, row in N_RB_FR1.items():
        mhz = sorted(row)
        assert [row[m] for m in mhz] == sorted(row[m] for m in mhz)
        for m in mhz:  # the RBs fit in the channel, and fill at least 75 % of it (guard bands)
            assert 0.75 * m * 1e6 < row[m] * 12 * scs_hz < m * 1e6


@pytest.mark.parametrize("bandwidth_hz, scs_hz, field", [(21e6, 30e3, "bandwidth_hz"), (5e6, 60e3, "bandwidth_hz"),
                                                        (20e6, 120e3, "scs_hz")])
def test_n_rb_refuses_a_pair_the_table_lacks_in_one_line(bandwidth_hz, scs_hz, field) -> None:
    with pytest.raises(ValueError, match=rf"^{field}: got .*; allowed: .*TS 38.101-1") as info:
        n_rb(bandwidth_hz, scs_hz)
    assert "\n" not in str(info.value)


def test_the_whole_band_is_the_tables_n_rb_and_a_share_its_part() -> None:
    """20 MHz at 30 kHz is 51 RBs (not ceil(20 MHz / 360 kHz) = 56); a tenth of it touches ceil(5.1) = 6."""
    assert resource_blocks(20e6, 30e3, channel_bandwidth_hz=20e6) == 51.0
    assert resource_blocks(20e6, 30e3) == 56.0  # no channel given: no guard band
    assert resource_blocks([2e6, 0.0], 30e3, channel_bandwidth_hz=20e6).tolist() == [6.0, 0.0]
    assert resource_blocks(2e6, 30e3, channel_bandwidth_hz=21e6) == 6.0  # not in the table: ceil(5.56)
    pc = OpenLoopPowerControl(p0_dbm=-100.0, alpha=1.0, p_max_dbm=23.0, subcarrier_spacing_hz=30e3)
    assert pc.tx_power_dbm(20e6, 80.0, 20e6) == pytest.approx(-100.0 + 10 * math.log10(2 * 51) + 80.0, abs=1e-12)


def test_fixed_power_is_the_configured_power() -> None:
    assert FixedPower().tx_power_w(np.array([0.2, 0.1]), np.array([1e6, 0.0]), np.array([100.0, 150.0])).tolist() \
        == [0.2, 0.1]


@pytest.mark.parametrize("scs_hz, mu", [(15e3, 0), (30e3, 1), (60e3, 2), (120e3, 3)])
def test_open_loop_has_the_2_mu_term_of_ts_38_213(scs_hz, mu) -> None:
    """The same 4 RBs at 15 x 2^mu kHz: 10 log10(2^mu) dB more per step of mu (3.01 dB at 30 kHz, 6.02 dB at
    60 kHz), as TS 38.213 eq. (7.1.1) writes it; far below P_max."""
    pc = OpenLoopPowerControl(p0_dbm=-100.0, alpha=1.0, p_max_dbm=23.0, subcarrier_spacing_hz=scs_hz)
    assert numerology(scs_hz) == mu
    got = pc.tx_power_dbm(4 * 12 * scs_hz, 80.0)
    assert got == pytest.approx(-100.0 + 10.0 * math.log10(2 ** mu * 4) + 80.0, abs=1e-12)


def test_open_loop_equals_sionna_but_for_its_missing_2_mu() -> None:
    """Sionna's ``open_loop_uplink_power_control`` is TS 38.213 eq. (7.1.1) without 2^mu (its known deviation):
    ours is its value times 2^mu below P_max, and both are P_max above."""
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
        spec = np.minimum(theirs * 2 ** numerology(scs), _dbm_to_w(p_max))  # Sionna + the 2^mu it drops
        np.testing.assert_allclose(ours, spec, rtol=1e-12, atol=0.0)
        assert np.any(ours > theirs)


def test_cell_uses_the_controlled_power_for_its_rate() -> None:
    pc = OpenLoopPowerControl(p0_dbm=-100.0, alpha=1.0, p_max_dbm=23.0, subcarrier_spacing_hz=15e3)
    # 100, 300, 500 m; 3 MHz by three (3 MHz: not a TS 38.101-1 channel): 1 MHz = 5.56 RBs of 180 kHz -> 6; mu = 0
    cell = small_cell(power_control=pc)
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


def test_fixed_power_is_a_copy_of_the_configured_power_per_link():
    nominal = np.array([0.2, 0.1])
    power = FixedPower().tx_power_w(nominal, np.array([1e6, 2e6]), np.array([100.0, 110.0]))
    np.testing.assert_array_equal(power, nominal)
    power[0] = 1.0  # the caller's array, not the configured one
    assert nominal[0] == 0.2
    np.testing.assert_array_equal(FixedPower().tx_power_w(0.2, np.array([1e6, 2e6]), 100.0), [0.2, 0.2])
