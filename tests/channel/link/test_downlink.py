"""The downlink's own link (issue 36, item 4): its rate model's parameters (TS 38.306's downlink
overhead, the PDSCH curves, the UE's noise figure), used by every downlink method of the cell, and
the count of clients in downlink outage."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.channel import (
    Cell,
    EqualAllocation,
    FixedDistancePlacement,
    McsTableRate,
    NoShadowing,
    ShannonRate,
    TR36814Macro,
)
from sfl_sim.channel.link.bler import bler_curve, cqi_curves, curve_of
from sfl_sim.channel.link.cqi_tables import CQI_TABLES
from sfl_sim.channel.link.downlink import DOWNLINK_OVERHEAD_FRACTION, downlink_outage, downlink_rate_params
from sfl_sim.kit.registry import accepted_params


def _cell(rate, downlink_rate=None, server_tx_power_w=1.0) -> Cell:
    rng = np.random.default_rng(0)
    return Cell(FixedDistancePlacement([100.0, 450.0]), TR36814Macro(), NoShadowing(), rate, EqualAllocation(),
                n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0, uplink_bandwidth_hz=1e6,
                downlink_bandwidth_hz=20e6, server_tx_power_w=server_tx_power_w, placement_rng=rng,
                shadowing_rng=rng, downlink_rate=downlink_rate)


def test_derived_parameters_are_the_downlinks_own_where_the_model_declares_them() -> None:
    uplink = {"table": "cqi_table2", "mapping": "bler", "overhead_fraction": 0.08, "noise_figure_db": 5.0}
    down = downlink_rate_params(uplink, accepted_params(McsTableRate))
    assert down == {**uplink, "link": "downlink", "overhead_fraction": 0.14}  # TS 38.306 4.1.2, FR1 DL
    assert downlink_rate_params(uplink, accepted_params(McsTableRate), ue_noise_figure_db=9.0)["noise_figure_db"] == 9
    # shannon declares none of link/overhead: the uplink's model and parameters, unchanged
    assert downlink_rate_params({}, accepted_params(ShannonRate)) == {}
    assert downlink_rate_params({}, accepted_params(ShannonRate), 7.0) == {"noise_figure_db": 7.0}
    assert downlink_rate_params({"x": 1}, None, 7.0) == {"x": 1}  # **kwargs: nothing is guessed
    assert DOWNLINK_OVERHEAD_FRACTION == 0.14


def test_the_downlink_bler_mapping_reads_the_pdsch_curves() -> None:
    for table in CQI_TABLES:
        curves = cqi_curves(table, "downlink")
        for (_, qm, rate_x1024, _), curve in zip(CQI_TABLES[table], curves, strict=True):
            choice = curve_of(qm, rate_x1024, "downlink")
            assert choice.table.startswith("PDSCH") and curve is bler_curve(choice.table, choice.mcs_index)
    up = McsTableRate(table="cqi_table1", mapping="bler")
    down = McsTableRate(table="cqi_table1", mapping="bler", link="downlink")
    sinr = 10.0 ** (np.arange(-10.0, 30.0, 0.25) / 10.0)
    # the same CQI table, chosen from other curves somewhere (PUSCH with transform precoding vs PDSCH)
    assert np.any(up.cqi(sinr) != down.cqi(sinr))
    assert np.all(np.diff(down.cqi(sinr)) >= 0)  # monotone in SINR


def test_every_downlink_method_uses_the_downlink_rate_model_by_hand() -> None:
    # Shannon with a 9 dB UE noise figure on the downlink, none on the uplink.
    cell = _cell(ShannonRate(), ShannonRate(noise_figure_db=9.0))
    gain = cell.gain_linear
    n0_w_per_hz = 10.0 ** ((-174.0 - 30.0) / 10.0)
    whole = 20e6 * np.log2(1.0 + 1.0 * gain / (20e6 * n0_w_per_hz * 10.0 ** 0.9))
    np.testing.assert_allclose(cell.broadcast_link([0, 1]).rate_bps, whole, rtol=1e-12)
    assert cell.broadcast_rate_bps([0, 1]) == pytest.approx(whole.min(), rel=1e-12)
    half = 10e6 * np.log2(1.0 + 0.5 * gain / (10e6 * n0_w_per_hz * 10.0 ** 0.9))
    np.testing.assert_allclose(cell.downlink_rates_bps([0, 1]), half, rtol=1e-12)
    np.testing.assert_allclose(cell.downlink_link_at_bandwidth([0, 1], [10e6, 10e6]).rate_bps, half, rtol=1e-12)
    # the uplink keeps its own model (no noise figure)
    up = 0.5e6 * np.log2(1.0 + 0.2 * gain / (0.5e6 * n0_w_per_hz))
    np.testing.assert_allclose(cell.uplink_rates_bps([0, 1]), up, rtol=1e-12)
    assert cell.downlink_rate.noise_figure_db == 9.0 and cell.rate.noise_figure_db == 0.0


def test_without_a_downlink_model_the_cell_uses_the_uplinks() -> None:
    rate = ShannonRate()
    cell = _cell(rate)
    assert cell.downlink_rate is rate


def test_downlink_overhead_scales_the_rate() -> None:
    up = McsTableRate(overhead_fraction=0.08)
    down = McsTableRate(overhead_fraction=0.14)
    cell = _cell(up, down)
    ref = _cell(up, up)
    ratio = cell.broadcast_link([0]).rate_bps[0] / ref.broadcast_link([0]).rate_bps[0]
    assert ratio == pytest.approx((1 - 0.14) / (1 - 0.08), rel=1e-12)


def test_downlink_outage_counts_the_clients_without_a_rate() -> None:
    # mcs_table (gap): 100 uW puts the client at 450 m below CQI 1 on any share, the one at 100 m not.
    out = downlink_outage(_cell(McsTableRate(), server_tx_power_w=1e-4))
    assert out.unicast.tolist() == [1] and out.broadcast.tolist() == [1]
    assert out.line("broadcast").startswith("downlink (broadcast): 1 of 2 clients in downlink outage")
    assert out.line("unicast").startswith("downlink (unicast): 1 of 2 clients in downlink outage")
    none = downlink_outage(_cell(McsTableRate(), server_tx_power_w=10.0))
    assert none.unicast.size == 0 and math.isfinite(float(np.median(none.unicast_rate_bps)))
