import csv
import io

import numpy as np
import pytest

from sfl_sim.channel import ShannonRate, TR36814Macro, dbm_to_w
from sfl_sim.config import validate
from sfl_sim.reports.channel import DRAW_SUMMARY_COLUMNS, SUMMARY_COLUMNS, channel_report, summary_statistics
from sfl_sim.runs.rundir.schema import CELL_REPORT_COLUMNS as REPORT_COLUMNS


def small_cfg(**cell):
    return validate({
        "seed": 3,
        "clients": {"count": 8, "participation": 0.5},
        "cell": {"uplink_bandwidth_hz": 10e6, "client_tx_power_w": 0.2, **cell},
    })


def test_report_writes_files_and_matches_the_models(tmp_path):
    out = io.StringIO()
    table = channel_report(small_cfg(), tmp_path, stream=out)
    assert (tmp_path / "cell.png").stat().st_size > 1000
    with open(tmp_path / "cell.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 and list(rows[0]) == list(REPORT_COLUMNS)
    n0 = dbm_to_w(-174.0)
    d = np.hypot(table["x_m"], table["y_m"])
    np.testing.assert_allclose(table["distance_m"], d)
    assert np.all((d >= 10.0) & (d <= 500.0))
    np.testing.assert_allclose(table["pathloss_db"], TR36814Macro().loss_db(d))
    np.testing.assert_array_equal(table["shadowing_db"], 0.0)
    np.testing.assert_array_equal(table["los"], -1)
    gain = 10 ** (-table["pathloss_db"] / 10)
    # Cohort = round(8 * 0.5) = 4 clients: share 2.5 MHz of the 10 MHz band.  At 30 kHz (cell.numerology 1)
    # 10 MHz holds 24 RBs (TS 38.101-1 Table 5.3.2-1): the rate is on 24 x 12 x 30 kHz = 8.64 MHz of them,
    # a quarter share on 2.16 MHz (TS 38.306 clause 4.1.2's N_PRB x 12 x SCS).
    share_hz, whole_hz = 2.5e6 * 24 * 360e3 / 10e6, 24 * 360e3
    assert share_hz == pytest.approx(2.16e6)
    # The gNB receiver's noise figure: cell.gnb_noise_figure_db, 5 dB by default.
    rate = ShannonRate(noise_figure_db=5.0)
    np.testing.assert_allclose(table["uplink_rate_cohort_share_bps"], rate.rate_bps(share_hz, 0.2, gain, n0))
    np.testing.assert_allclose(table["uplink_rate_full_band_bps"], rate.rate_bps(whole_hz, 0.2, gain, n0))
    np.testing.assert_allclose(table["snr_db"], 10 * np.log10(0.2 * gain / (share_hz * n0 * 10 ** 0.5)))
    assert float(rows[5]["uplink_rate_full_band_bps"]) == pytest.approx(table["uplink_rate_full_band_bps"][5])
    printed = out.getvalue().splitlines()
    # + 1: the uplink grid and who hands it out (reports.channel.grid_line)
    assert len(printed) == 2 + 1 + 8 + 1 + len(SUMMARY_COLUMNS) + 1 + 1 + 1 + 1 + len(DRAW_SUMMARY_COLUMNS) + 1
    assert "client" in printed[2]
    # the default shannon is uncapped: the report says its rates may pass TS 38.306's peak, and how many do
    se = np.log2(1 + 0.2 * gain / (whole_hz * n0 * 10 ** 0.5))
    assert printed[2 + 1 + 8 + 1 + len(SUMMARY_COLUMNS)] == (
        "uplink grid: numerology 1 (30 kHz subcarriers, 0.5 ms slots), 24 RBs of 360 kHz in 10 MHz; scheduler "
        "static (each round's equal shares of the band, cell.allocation)")  # TS 38.101-1: 10 MHz at 30 kHz
    assert printed[2 + 1 + 8 + 1 + len(SUMMARY_COLUMNS) + 1] == (
        "cell.rate shannon is uncapped: a rate may exceed TS 38.306 clause 4.1.2's single-layer uplink peak "
        f"(6.3595 bit/s/Hz of the RBs; {np.count_nonzero(se > 6.3595)} of 8 clients do on the full band); cap it "
        "with cell.rate.max_spectral_efficiency_bps_per_hz: ts38306_uplink, or use attenuated_shannon")
    assert printed[2 + 1 + 8 + 1 + len(SUMMARY_COLUMNS) + 2].startswith(
        "downlink (ideal): 0 of 8 clients in downlink outage")
    assert all(line.split()[-2:] == ["-", "-"] for line in printed[3:11])  # no BLER without a CQI table: '-'
    stats = summary_statistics(table)
    p5, p50, p95 = stats["snr_db"]
    assert p50 == pytest.approx(np.median(table["snr_db"])) and p5 <= p50 <= p95
    assert printed[11].startswith("over the 8 clients: median [5th, 95th percentile]")
    assert f"{p50:.2f} [{p5:.2f}, {p95:.2f}]" in printed[12 + 2]  # the SNR row


@pytest.mark.slow
def test_report_is_seeded_and_shows_los(tmp_path):
    cfg = small_cfg(pathloss={"name": "tr38901_umi", "los": "stochastic"},
                    shadowing={"name": "correlated"})
    a = channel_report(cfg, tmp_path / "a", stream=io.StringIO())
    b = channel_report(cfg, tmp_path / "b", stream=io.StringIO())
    for column in REPORT_COLUMNS:
        np.testing.assert_array_equal(a[column], b[column])
    assert set(np.unique(a["los"])) <= {0, 1}
    assert (tmp_path / "a" / "cell.csv").read_text() == (tmp_path / "b" / "cell.csv").read_text()


@pytest.mark.slow
def test_report_bler_and_expected_transmissions(tmp_path):
    from sfl_sim.channel import Harq, McsTableRate

    table = channel_report(small_cfg(), tmp_path / "shannon", stream=io.StringIO())
    assert np.all(np.isnan(table["bler"])) and np.all(np.isnan(table["expected_transmissions"]))
    cfg = small_cfg(rate={"name": "mcs_table", "mapping": "bler"}, client_tx_power_w=0.002,
                    harq={"max_transmissions": 3, "chase_combining": True})
    table = channel_report(cfg, tmp_path / "mcs", stream=io.StringIO())
    harq = Harq(McsTableRate(mapping="bler"), max_transmissions=3, chase_combining=True)
    first, mean = harq.slot_block(table["uplink_rate_cohort_share_bps"], table["snr_db"])
    np.testing.assert_array_equal(table["bler"], first)
    np.testing.assert_array_equal(table["expected_transmissions"], mean)
    served = table["uplink_rate_cohort_share_bps"] > 0
    assert served.any() and np.all((mean[served] >= 1) & (mean[served] <= 3))
    assert np.all(np.isnan(first[~served]))
    with open(tmp_path / "mcs" / "cell.csv") as f:
        rows = list(csv.DictReader(f))
    k = int(np.flatnonzero(served)[0])  # a served client (an unserved one's cell is empty)
    assert float(rows[k]["expected_transmissions"]) == pytest.approx(mean[k])


def test_report_gives_sinr_cqi_efficiency_and_power(tmp_path):
    from sfl_sim.channel import McsTableRate
    from sfl_sim.channel.link.cqi_tables import CQI_TABLES

    cfg = small_cfg(rate={"name": "mcs_table", "table": "cqi_table2"},
                    power_control={"name": "open_loop", "p0_dbm": -85.0, "alpha": 0.8},
                    interference={"name": "noise_rise", "noise_rise_db": 4.0})
    table = channel_report(cfg, tmp_path, stream=io.StringIO(), colour_by="cqi")
    assert (tmp_path / "cell.png").stat().st_size > 1000
    np.testing.assert_allclose(table["sinr_db"], table["snr_db"] - 4.0, atol=1e-9)
    cqi = McsTableRate(table="cqi_table2").cqi(10 ** (table["sinr_db"] / 10))
    np.testing.assert_array_equal(table["cqi"], cqi)
    efficiency = {row[0]: row[3] for row in CQI_TABLES["cqi_table2"]}
    np.testing.assert_array_equal(table["mcs_efficiency_bps_per_hz"], [efficiency.get(c, 0.0) for c in cqi])
    # Rate = table efficiency x (1 - 0.08) (TS 38.306 4.1.2's FR1 uplink overhead, the default) on the cohort's
    # 2.5 MHz share of 10 MHz, whose resource blocks occupy 2.5 MHz x 24 x 360 kHz / 10 MHz = 2.16 MHz.
    np.testing.assert_allclose(table["uplink_rate_cohort_share_bps"],
                               table["mcs_efficiency_bps_per_hz"] * (1 - 0.08) * 2.16e6)
    # Open loop (TS 38.213 7.1.1): P0 + 10 log10(2^mu M_RB) + 0.8 PL, mu = 1 at 30 kHz; 2.5 MHz of the 10 MHz
    # channel's 24 RBs (TS 38.101-1 Table 5.3.2-1) = 6 RBs; capped at 23 dBm.
    p_dbm = np.minimum(23.0, -85.0 + 10 * np.log10(2 * 6) + 0.8 * table["pathloss_db"])
    np.testing.assert_allclose(table["tx_power_w"], 10 ** ((p_dbm - 30) / 10), rtol=1e-12)


def test_report_leaves_cqi_empty_without_a_cqi_table(tmp_path):
    from sfl_sim.errors import ConfigError

    table = channel_report(small_cfg(), tmp_path, stream=io.StringIO())
    assert np.all(np.isnan(table["cqi"])) and np.all(np.isnan(table["mcs_efficiency_bps_per_hz"]))
    np.testing.assert_array_equal(table["sinr_db"], table["snr_db"])
    np.testing.assert_array_equal(table["tx_power_w"], 0.2)
    with open(tmp_path / "cell.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["cqi"] == "" and rows[0]["mcs_efficiency_bps_per_hz"] == ""
    with pytest.raises(ConfigError) as err:
        channel_report(small_cfg(), tmp_path / "x", stream=io.StringIO(), colour_by="cqi")
    assert "\n" not in str(err.value) and "colour_by" in str(err.value) and "mcs_table" in str(err.value)


def test_the_report_says_the_grid_and_who_hands_it_out() -> None:
    """Numerology 1 on 20 MHz: 30 kHz subcarriers, 0.5 ms slots, 51 RBs (TS 38.101-1 Table 5.3.2-1's
    20 MHz / 30 kHz entry) of 12 x 30 kHz; the static split or the scheduler and its form."""
    import sfl_sim
    from sfl_sim.reports.channel import grid_line

    cfg = sfl_sim.load_scenario("cellular_100clients", {"cell.uplink_bandwidth_hz": 20e6, "cell.numerology": 1})
    assert grid_line(cfg) == ("uplink grid: numerology 1 (30 kHz subcarriers, 0.5 ms slots), 51 RBs of 360 kHz in "
                              "20 MHz; scheduler static (each round's equal shares of the band, cell.allocation)")
    pf = sfl_sim.load_scenario("cellular_100clients", {
        "cell.uplink_bandwidth_hz": 5e6, "cell.numerology": 0, "cell.power_control": {"name": "fixed"},
        "cell.scheduler": {"name": "proportional_fair", "fidelity": "slot"}})
    assert grid_line(pf) == ("uplink grid: numerology 0 (15 kHz subcarriers, 1 ms slots), 25 RBs of 180 kHz in "
                             "5 MHz; scheduler proportional_fair (slot form)")
