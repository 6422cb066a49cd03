"""The link budget as a pure function of plain arrays, against hand calculations.

Thermal noise -174 dBm/Hz = 10^(-20.4) W/Hz.  Two clients with gains 1e-9 and 1e-11 (90 and
110 dB of coupling loss) at 0.2 W on 1 MHz each: SNR = 0.2 g / (1e6 x 10^(-20.4)), i.e.
10 log10(2e-16 g / 1e-9) + 204 = 47.0103 dB and 27.0103 dB; Shannon gives b log2(1 + SNR).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.channel import (
    EqualAllocation,
    EqualFinishTimeAllocation,
    FixedPower,
    LinkBudgetModel,
    OpenLoopPowerControl,
    ShannonRate,
)

N0_W_PER_HZ = 10.0 ** -20.4
IDS = np.array([4, 7])
GAIN = np.array([1e-9, 1e-11])
COUPLING_DB = np.array([90.0, 110.0])
NOMINAL_W = np.array([0.2, 0.2])


def model(rate=None, allocator=None, power_control=None, **kwargs) -> LinkBudgetModel:
    config = dict(noise_psd_dbm_per_hz=-174.0, uplink_bandwidth_hz=2e6, downlink_bandwidth_hz=20e6,
                  server_tx_power_w=1.0)
    config.update(kwargs)
    return LinkBudgetModel(rate or ShannonRate(), allocator or EqualAllocation(), power_control or FixedPower(),
                           **config)


def shannon_bps(bandwidth_hz, snr_linear):
    return bandwidth_hz * np.log2(1.0 + snr_linear)


def test_uplink_by_hand():
    link = model().uplink(IDS, GAIN, COUPLING_DB, NOMINAL_W, noise_rise_linear=1.0)
    np.testing.assert_array_equal(link.client_ids, IDS)
    np.testing.assert_array_equal(link.bandwidth_hz, [1e6, 1e6])
    np.testing.assert_array_equal(link.tx_power_w, [0.2, 0.2])
    np.testing.assert_array_equal(link.gain_linear, GAIN)
    np.testing.assert_allclose(link.snr_db, [47.0103, 27.0103], atol=1e-4)
    snr = 0.2 * GAIN / (1e6 * N0_W_PER_HZ)
    np.testing.assert_allclose(link.rate_bps, shannon_bps(1e6, snr), rtol=1e-12)
    assert link.rate_bps[0] == pytest.approx(1e6 * math.log2(1 + 10 ** 4.70103), rel=1e-5)  # 15.62 Mbit/s


def test_a_noise_rise_turns_the_snr_into_the_sinr():
    # IoT = 2 (3.0103 dB): the rate model sees N0 x 2, so every SINR is 3.0103 dB below the SNR.
    clean = model().uplink(IDS, GAIN, COUPLING_DB, NOMINAL_W, noise_rise_linear=1.0)
    loaded = model().uplink(IDS, GAIN, COUPLING_DB, NOMINAL_W, noise_rise_linear=2.0)
    np.testing.assert_allclose(loaded.snr_db, clean.snr_db - 10 * math.log10(2.0), rtol=1e-12)
    np.testing.assert_allclose(loaded.rate_bps, shannon_bps(1e6, 0.2 * GAIN / (1e6 * 2 * N0_W_PER_HZ)), rtol=1e-12)


def test_fading_multiplies_the_large_scale_gain():
    link = model().uplink(IDS, GAIN, COUPLING_DB, NOMINAL_W, 1.0, fading_gain=[0.5, 4.0])
    np.testing.assert_array_equal(link.gain_linear, GAIN * [0.5, 4.0])
    np.testing.assert_allclose(link.snr_db, [47.0103 - 3.0103, 27.0103 + 6.0206], atol=1e-4)


def test_power_control_sets_the_uplink_power():
    # Open loop, TS 38.213 7.1.1: P = P0 + 10 log10(2^mu M_RB) + alpha PL, capped at P_max.  1 MHz at
    # 30 kHz (mu = 1) is 33.3 subcarriers = 2.78 RBs, counted as 3: -90 + 10 log10(6) + 0.8 x 90 = -10.2185 dBm.
    pc = OpenLoopPowerControl(p0_dbm=-90.0, alpha=0.8, p_max_dbm=23.0, subcarrier_spacing_hz=30e3)
    link = model(power_control=pc).uplink(IDS, GAIN, COUPLING_DB, NOMINAL_W, 1.0)
    p0_w = 10 ** ((-90.0 + 10 * math.log10(2 * 3) + 0.8 * 90.0 - 30.0) / 10)
    assert link.tx_power_w[0] == pytest.approx(p0_w, rel=1e-12)
    np.testing.assert_allclose(link.snr_db, 10 * np.log10(link.tx_power_w * GAIN / (1e6 * N0_W_PER_HZ)), rtol=1e-12)


def test_the_uplink_at_given_shares_bypasses_the_allocator():
    link = model(allocator=EqualFinishTimeAllocation()).uplink_at_bandwidth(IDS, [0.0, 5e5], GAIN, COUPLING_DB,
                                                                           NOMINAL_W, 1.0)
    assert math.isinf(link.snr_db[0]) and link.rate_bps[0] == 0.0  # 0 Hz: no noise, no rate
    assert link.rate_bps[1] == pytest.approx(shannon_bps(5e5, 0.2 * 1e-11 / (5e5 * N0_W_PER_HZ)), rel=1e-12)


def test_a_link_aware_allocator_gets_the_links_rate():
    payload = np.array([1e6, 1e6])
    link = model(allocator=EqualFinishTimeAllocation()).uplink(IDS, GAIN, COUPLING_DB, NOMINAL_W, 1.0, payload)
    assert link.bandwidth_hz.sum() == pytest.approx(2e6)
    finish_s = payload / link.rate_bps
    assert finish_s[0] == pytest.approx(finish_s[1], rel=1e-6)  # the weak client gets the wider share
    assert link.bandwidth_hz[1] > link.bandwidth_hz[0]


def test_downlink_spreads_the_server_power_over_the_band():
    # 20 MHz, 1 W: two receivers on 10 MHz carry 0.5 W each.
    link = model().downlink(IDS, GAIN)
    np.testing.assert_array_equal(link.bandwidth_hz, [10e6, 10e6])
    np.testing.assert_array_equal(link.tx_power_w, [0.5, 0.5])
    np.testing.assert_allclose(link.rate_bps, shannon_bps(10e6, 0.5 * GAIN / (10e6 * N0_W_PER_HZ)), rtol=1e-12)


def test_broadcast_is_the_worst_receivers_full_band_rate():
    rate = model().broadcast_rate_bps(IDS, GAIN)
    assert rate == pytest.approx(shannon_bps(20e6, 1.0 * 1e-11 / (20e6 * N0_W_PER_HZ)), rel=1e-12)
    with pytest.raises(ValueError, match="at least one receiver"):
        model().broadcast_rate_bps(np.array([], dtype=int), np.array([]))


def test_the_noise_floor_holds_the_rate_models_noise_figure():
    assert model().noise_floor_w_per_hz == model().noise_psd_w_per_hz == pytest.approx(N0_W_PER_HZ, rel=1e-12)
    assert model(ShannonRate(noise_figure_db=7.0)).noise_floor_w_per_hz == pytest.approx(N0_W_PER_HZ * 10 ** 0.7,
                                                                                       rel=1e-12)


def test_an_empty_group_gets_an_empty_budget():
    link = model().uplink(np.array([], dtype=int), np.array([]), np.array([]), np.array([]), 1.0)
    assert link.rate_bps.shape == (0,) and link.bandwidth_hz.shape == (0,)


def test_without_a_downlink_the_downlink_is_refused():
    with pytest.raises(ValueError, match="downlink_rates_bps needs downlink_bandwidth_hz and server_tx_power_w"):
        model(downlink_bandwidth_hz=None).downlink(IDS, GAIN)


@pytest.mark.parametrize("field, value", [("uplink_bandwidth_hz", 0.0), ("noise_psd_dbm_per_hz", 1e6),
                                          ("server_tx_power_w", 1e308)])
def test_numbers_out_of_range_are_refused_by_name(field, value):
    with pytest.raises(ValueError, match=f"^{field} must be a finite number in "):
        model(**{field: value})


# -- the rate is on the resource blocks, not the whole channel (issue 51 item 1) -------------------------
@pytest.mark.parametrize("bandwidth_hz, mu, n_rb, want", [
    (20e6, 1, 51, 0.918),   # 51 x 12 x 30 kHz = 18.36 MHz of 20 MHz (TS 38.101-1 Table 5.3.2-1)
    (5e6, 1, 11, 0.792),    # 11 x 360 kHz = 3.96 MHz of 5 MHz
    (20e6, 0, 106, 0.954),  # 106 x 12 x 15 kHz = 19.08 MHz of 20 MHz
    (3e6, 1, None, 1.0),    # no row: the whole share (our choice)
])
def test_occupied_fraction_is_n_rb_times_12_scs_over_the_channel(bandwidth_hz, mu, n_rb, want):
    from sfl_sim.channel.link.resource_grid import N_RB_FR1, occupied_fraction

    if n_rb is not None:
        assert N_RB_FR1[15e3 * 2 ** mu][int(bandwidth_hz / 1e6)] == n_rb
    assert occupied_fraction(bandwidth_hz, mu) == pytest.approx(want, rel=1e-12)
    assert occupied_fraction(bandwidth_hz, None) == 1.0


def test_uplink_rate_on_the_resource_blocks_by_hand():
    """20 MHz at 30 kHz, two clients on equal 10 MHz shares: each share holds 25.5 of the 51 RBs,
    25.5 x 12 x 30 kHz = 9.18 MHz, on which the rate model sees its noise and gives its rate:
    SNR = 0.2 g / (9.18e6 N0), rate = 9.18e6 log2(1 + SNR) (TS 38.306 clause 4.1.2's N_PRB x 12 x SCS)."""
    budget = model(uplink_bandwidth_hz=20e6, numerology=1)
    link = budget.uplink(IDS, GAIN, COUPLING_DB, NOMINAL_W, noise_rise_linear=1.0)
    np.testing.assert_array_equal(link.bandwidth_hz, [10e6, 10e6])  # the shares stay the channel's
    b = 25.5 * 12 * 30e3
    assert b == pytest.approx(9.18e6)
    snr = 0.2 * GAIN / (b * N0_W_PER_HZ)
    np.testing.assert_allclose(link.snr_db, 10 * np.log10(snr), rtol=1e-12)
    np.testing.assert_allclose(link.rate_bps, shannon_bps(b, snr), rtol=1e-12)
    # the first client: 9.18e6 x log2(1 + 0.2e-9 / (9.18e6 x 10^-20.4)) = 147.2 Mbit/s (uncapped Shannon)
    assert link.rate_bps[0] == pytest.approx(9.18e6 * math.log2(1 + 2e-10 / (9.18e6 * 10 ** -20.4)), rel=1e-12)
    without = model(uplink_bandwidth_hz=20e6).uplink(IDS, GAIN, COUPLING_DB, NOMINAL_W, noise_rise_linear=1.0)
    np.testing.assert_allclose(without.rate_bps, shannon_bps(10e6, 0.2 * GAIN / (10e6 * N0_W_PER_HZ)), rtol=1e-12)


def test_downlink_and_broadcast_on_the_resource_blocks_by_hand():
    """A 20 MHz downlink at 30 kHz from a 1 W server: the broadcast's whole band is 18.36 MHz of RBs,
    carrying the whole power; a share b of it carries P b / B on b x 0.918 Hz."""
    budget = model(numerology=1)
    b = 51 * 12 * 30e3
    whole = budget.broadcast(IDS, GAIN)
    np.testing.assert_allclose(whole.rate_bps, shannon_bps(b, 1.0 * GAIN / (b * N0_W_PER_HZ)), rtol=1e-12)
    assert budget.broadcast_rate_bps(IDS, GAIN) == pytest.approx(float(whole.rate_bps.min()), rel=1e-12)
    share = budget.downlink_at_bandwidth(IDS, 10e6, GAIN)
    np.testing.assert_allclose(share.rate_bps, shannon_bps(b / 2, 0.5 * GAIN / (b / 2 * N0_W_PER_HZ)), rtol=1e-12)


def test_a_run_rates_the_cells_resource_blocks():
    """build_cell passes cell.numerology: the default 20 MHz at 30 kHz is rated on 18.36 MHz."""
    from sfl_sim.config import validate
    from sfl_sim.runs.build import build_cell
    from tests.helpers import small_scenario

    cfg = validate(small_scenario())
    cell = build_cell(cfg)
    assert cell.link_budget.numerology == 1
    assert cell.link_budget.occupied_fraction("uplink") == pytest.approx(51 * 360e3 / 20e6, rel=1e-12)
    assert cell.link_budget.occupied_fraction("downlink") == pytest.approx(51 * 360e3 / 20e6, rel=1e-12)


def test_mcs_table_overhead_defaults_to_ts38306_fr1_values():
    """TS 38.306 clause 4.1.2: OH = 0.08 for FR1 uplink, 0.14 for FR1 downlink."""
    from sfl_sim.channel import McsTableRate

    assert McsTableRate().overhead_fraction == 0.08
    assert McsTableRate(link="downlink").overhead_fraction == 0.14
    assert McsTableRate(overhead_fraction=0.0).overhead_fraction == 0.0
    sinr = 10.0 ** 2.0  # 20 dB: the gap mapping picks the same CQI whatever the overhead
    full = float(McsTableRate(overhead_fraction=0.0).spectral_efficiency_bps_per_hz(sinr))
    assert float(McsTableRate().spectral_efficiency_bps_per_hz(sinr)) == pytest.approx(full * 0.92, rel=1e-12)


# -- the gNB's receiver noise figure (issue 51 item 2) ----------------------------------------------------
def _cell_of(**cell):
    from sfl_sim.config import validate
    from sfl_sim.runs.build import build_cell
    from tests.helpers import small_scenario

    data = small_scenario()
    data["cell"] = cell
    return build_cell(validate(data))


def test_the_default_scenarios_link_budget_by_hand():
    """The default cell: 0.2 W clients, -174 dBm/Hz, a 5 dB gNB noise figure (5G-LENA's NrPhy
    NoiseFigure), Shannon on the resource blocks of 20 MHz at 30 kHz (51 x 12 x 30 kHz = 18.36 MHz),
    equal shares among the cohort.  A client at path loss PL dB on a share b of 20 MHz:
    SNR = 0.2 x 10^(-PL/10) / (b 18.36/20 x 10^(-20.4) x 10^0.5), rate = b 0.918 log2(1 + SNR)."""
    cell = _cell_of()
    assert cell.rate.noise_figure_db == 5.0 and cell.downlink_rate.noise_figure_db == 5.0  # type: ignore[attr-defined]
    link = cell.uplink_link_at_bandwidth(np.arange(cell.n_clients), 20e6 / 3)
    pl_db = cell.pathloss_db
    b = 20e6 / 3 * 51 * 12 * 30e3 / 20e6  # 6.12 MHz
    snr = 0.2 * 10 ** (-pl_db / 10) / (b * 10 ** -20.4 * 10 ** 0.5)
    np.testing.assert_allclose(link.snr_db, 10 * np.log10(snr), rtol=1e-12)
    np.testing.assert_allclose(link.rate_bps, b * np.log2(1 + snr), rtol=1e-12)
    # a client at 500 m: PL = 128.1 + 37.6 log10(0.5) = 116.78 dB; 0.2 W = 23.01 dBm, 10 log10(6.12e6) = 67.87:
    # SNR = 23.01 - 116.78 + 174 - 67.87 - 5 = 7.36 dB
    at_500 = 0.2 * 10 ** (-(128.1 + 37.6 * math.log10(0.5)) / 10) / (6.12e6 * 10 ** -20.4 * 10 ** 0.5)
    assert 10 * math.log10(at_500) == pytest.approx(7.36, abs=0.01)


def test_the_gnb_noise_figure_is_the_uplinks_unless_cell_rate_gives_one():
    assert _cell_of(gnb_noise_figure_db=7.0).rate.noise_figure_db == 7.0  # type: ignore[attr-defined]
    given = _cell_of(rate={"name": "shannon", "noise_figure_db": 0.0})
    assert given.rate.noise_figure_db == 0.0  # type: ignore[attr-defined]
    mcs = _cell_of(rate={"name": "mcs_table"}, downlink={"ue_noise_figure_db": 9.0})
    assert mcs.rate.noise_figure_db == 5.0 and mcs.downlink_rate.noise_figure_db == 9.0  # type: ignore[attr-defined]


def test_the_run_record_names_the_noise_figure_it_used():
    from sfl_sim.config import validate
    from sfl_sim.runs.resolved import resolve_run
    from tests.helpers import small_scenario

    record = resolve_run(validate(small_scenario()), "fedavg").record
    assert record["components"]["cell.rate"]["params"]["noise_figure_db"] == 5.0
