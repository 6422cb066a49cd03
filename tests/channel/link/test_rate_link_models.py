"""The link-abstraction rate models: shannon_gap, attenuated_shannon, mcs_table."""
import math

import numpy as np
import pytest

from sfl_sim.channel import RATES, AttenuatedShannonRate, McsTableRate, ShannonGapRate, check_component
from sfl_sim.channel.link.cqi_tables import CQI_TABLES
from tests.channel.helpers import N0_W_PER_HZ, small_cell


def _sinr(db):
    return 10.0 ** (np.asarray(db, dtype=float) / 10.0)


def _gain_for_sinr_db(sinr_db, bandwidth_hz=1e6, power_w=0.2):
    """The channel gain that gives ``sinr_db`` on ``bandwidth_hz`` at ``power_w`` (N0 = -174 dBm/Hz)."""
    return _sinr(sinr_db) * bandwidth_hz * N0_W_PER_HZ / power_w


# ----------------------------------------------------------------------------- shannon_gap
def test_shannon_gap_matches_ns3_lte_amc_vectors():
    # ns-3 src/lte/test/lte-test-link-adaptation.cc: BER 5e-5, SE at SINR -5, 0, 5 dB.
    model = ShannonGapRate(ber_target=5e-5)
    np.testing.assert_allclose(model.spectral_efficiency_bps_per_hz(_sinr([-5.0, 0.0, 5.0])),
                               [0.08024, 0.23983, 0.65251], atol=1e-5)
    rate = model.rate_bps(1e6, 0.2, _gain_for_sinr_db(np.array([-5.0, 0.0, 5.0])), N0_W_PER_HZ)
    np.testing.assert_allclose(rate, [0.08024e6, 0.23983e6, 0.65251e6], atol=10.0)


def test_shannon_gap_from_db_and_default():
    # Gamma = 3 dB: SE = log2(1 + 10 / 10^0.3) at 10 dB.
    assert ShannonGapRate(gap_db=3.0).spectral_efficiency_bps_per_hz(10.0) == pytest.approx(
        math.log2(1 + 10 / 10 ** 0.3))
    default = ShannonGapRate()  # neither given: ns-3's default BER 5e-5, Gamma = -ln(2.5e-4) / 1.5
    assert default.gap_linear == pytest.approx(-math.log(5 * 5e-5) / 1.5) and "ber_target=5e-05" in repr(default)
    assert ShannonGapRate(gap_db=0.0).rate_bps(1e6, 0.2, 1e-12, N0_W_PER_HZ) == pytest.approx(
        RATES.create("shannon").rate_bps(1e6, 0.2, 1e-12, N0_W_PER_HZ))


# ----------------------------------------------------------------------------- attenuated_shannon
@pytest.mark.parametrize("link, alpha, cap", [("uplink", 0.4, 2.0), ("downlink", 0.6, 4.4)])
def test_attenuated_shannon_floor_slope_and_cap(link, alpha, cap):
    model = AttenuatedShannonRate(link=link)
    se = model.spectral_efficiency_bps_per_hz(_sinr([-10.5, -10.0, 0.0, 10.0, 60.0]))
    assert se[0] == 0.0  # below SINR_min = -10 dB
    assert se[1] == pytest.approx(alpha * math.log2(1 + 0.1))  # the floor itself carries data
    assert se[2] == pytest.approx(alpha * 1.0)
    assert se[3] == pytest.approx(min(alpha * math.log2(11.0), cap))
    assert se[4] == cap
    rate = model.rate_bps(2e6, 0.2, _gain_for_sinr_db(0.0, 2e6), N0_W_PER_HZ)
    assert rate == pytest.approx(2e6 * alpha)


def test_attenuated_shannon_overrides():
    model = AttenuatedShannonRate(alpha=0.75, sinr_min_db=-5.0, max_spectral_efficiency_bps_per_hz=6.0)
    se = model.spectral_efficiency_bps_per_hz(_sinr([-6.0, 0.0, 50.0]))
    np.testing.assert_allclose(se, [0.0, 0.75, 6.0])


# ----------------------------------------------------------------------------- CQI tables
_QM = {"QPSK": 2, "16QAM": 4, "64QAM": 6, "256QAM": 8}
# Spot rows written out from TS 38.214 Tables 5.2.2.1-2/-3/-4 (index, modulation, rate x 1024, efficiency).
_SPOT = {
    "cqi_table1": [(1, "QPSK", 78, 0.1523), (6, "QPSK", 602, 1.1758), (7, "16QAM", 378, 1.4766),
                   (10, "64QAM", 466, 2.7305), (15, "64QAM", 948, 5.5547)],
    "cqi_table2": [(1, "QPSK", 78, 0.1523), (3, "QPSK", 449, 0.8770), (11, "64QAM", 873, 5.1152),
                   (12, "256QAM", 711, 5.5547), (15, "256QAM", 948, 7.4063)],
    "cqi_table3": [(1, "QPSK", 30, 0.0586), (2, "QPSK", 50, 0.0977), (8, "QPSK", 602, 1.1758),
                   (9, "16QAM", 378, 1.4766), (15, "64QAM", 772, 4.5234)],
}
# The modulation of each row, per table, as the spec prints it (counts of rows per modulation).
_MODULATIONS = {
    "cqi_table1": ["QPSK"] * 6 + ["16QAM"] * 3 + ["64QAM"] * 6,
    "cqi_table2": ["QPSK"] * 3 + ["16QAM"] * 3 + ["64QAM"] * 5 + ["256QAM"] * 4,
    "cqi_table3": ["QPSK"] * 8 + ["16QAM"] * 3 + ["64QAM"] * 4,
}


@pytest.mark.parametrize("table", sorted(CQI_TABLES))
def test_cqi_table_rows_match_the_spec(table):
    rows = CQI_TABLES[table]
    assert [r[0] for r in rows] == list(range(1, 16))
    assert [r[1] for r in rows] == [_QM[m] for m in _MODULATIONS[table]]
    for index, qm, rate_x1024, eff in rows:
        # The spec's efficiency is Q_m x R / 1024 to 4 decimals.
        assert abs(eff - qm * rate_x1024 / 1024) <= 0.5e-4 + 1e-12, (table, index)
    effs = [r[3] for r in rows]
    assert effs == sorted(effs) and len(set(effs)) == 15
    for index, mod, rate_x1024, eff in _SPOT[table]:
        assert rows[index - 1] == (index, _QM[mod], rate_x1024, eff)


# ----------------------------------------------------------------------------- mcs_table
@pytest.mark.parametrize("table", sorted(CQI_TABLES))
@pytest.mark.parametrize("overhead", [0.0, 0.14])
def test_mcs_table_rate_is_the_highest_allowed_efficiency(table, overhead):
    model = McsTableRate(table=table, ber_target=5e-5, overhead_fraction=overhead)
    effs = np.array([r[3] for r in CQI_TABLES[table]])
    sinr_db = np.linspace(-15.0, 35.0, 501)
    gains = _gain_for_sinr_db(sinr_db, 5e6)
    rate = model.rate_bps(5e6, 0.2, gains, N0_W_PER_HZ)
    gap_se = ShannonGapRate(ber_target=5e-5).spectral_efficiency_bps_per_hz(_sinr(sinr_db))
    for r, se in zip(rate, gap_se, strict=True):
        allowed = effs[effs <= se]
        expect = allowed.max() * 5e6 * (1 - overhead) if allowed.size else 0.0
        assert r == pytest.approx(expect, rel=1e-9, abs=1e-9)
    assert rate[0] == 0.0 and rate[-1] == pytest.approx(effs[-1] * 5e6 * (1 - overhead))


def test_mcs_table_cqi_by_hand():
    # Gamma(5e-5) = 5.5294; CQI 1 of table 1 (0.1523) needs SINR >= Gamma (2^0.1523 - 1) = 0.6144 (-2.115 dB).
    model = McsTableRate()
    threshold = 5.529383 * (2 ** 0.1523 - 1)
    np.testing.assert_array_equal(model.cqi([threshold * 0.999, threshold * 1.001]), [0, 1])
    assert model.spectral_efficiency_bps_per_hz(threshold * 0.999) == 0.0


def test_zero_rate_below_cqi1_is_an_outage_not_a_division_by_zero():
    # At 10 uW the SNRs are about -0.5, -14 and -23 dB: CQI >= 1, then two clients out of range.
    cell = small_cell(rate=McsTableRate(), n_clients=3, tx_power_w=1e-5)
    link = cell.uplink_link(np.arange(3))
    assert np.all(np.isfinite(link.rate_bps)) and link.rate_bps[-1] == 0.0 and link.rate_bps[0] > 0


# ----------------------------------------------------------------------------- registry, conformance, errors
@pytest.mark.parametrize("name, params", [
    ("shannon_gap", {}), ("shannon_gap", {"gap_db": 6.0}), ("attenuated_shannon", {"link": "downlink"}),
    ("mcs_table", {"table": "cqi_table2", "overhead_fraction": 0.08}), ("mcs_table", {"table": "cqi_table3"}),
    ("mcs_table", {"mapping": "bler"}), ("mcs_table", {"table": "cqi_table2", "mapping": "bler", "bler_target": 0.01}),
])
def test_conformance(name, params):
    report = check_component("rate", RATES.create(name, **params))
    assert "rate = bandwidth x SE(SINR)" in report["checks"]


@pytest.mark.parametrize("cls, kwargs, field", [
    (ShannonGapRate, {"ber_target": 0.6}, "ber_target"),
    (ShannonGapRate, {"ber_target": 0.0}, "ber_target"),
    (ShannonGapRate, {"gap_db": 3.0, "ber_target": 1e-5}, "gap_db and ber_target"),
    (ShannonGapRate, {"gap_db": -1.0}, "gap_db"),
    (McsTableRate, {"overhead_fraction": 1.0}, "overhead_fraction"),
    (McsTableRate, {"overhead_fraction": -0.1}, "overhead_fraction"),
    (McsTableRate, {"table": "cqi_table4"}, "table"),
    (McsTableRate, {"mapping": "snr"}, "mapping"),
    (McsTableRate, {"mapping": "bler", "bler_target": 0.0}, "bler_target"),
    (McsTableRate, {"mapping": "bler", "bler_target": 1.0}, "bler_target"),
    (McsTableRate, {"mapping": "bler", "code_block_bits": 10}, "code_block_bits"),
    (McsTableRate, {"ber_target": 0.6}, "ber_target"),
    (AttenuatedShannonRate, {"link": "sidelink"}, "link"),
    (AttenuatedShannonRate, {"alpha": 1.5}, "alpha"),
])
def test_bad_parameters_give_one_line_naming_the_field(cls, kwargs, field):
    with pytest.raises(ValueError) as info:
        cls(**kwargs)
    message = str(info.value)
    assert message.startswith(field) and "\n" not in message


@pytest.mark.parametrize("link, sinr_max_db", [
    # SINR_max is where alpha log2(1 + SINR) reaches Thr_max (TR 36.942 Annex A: the bound is
    # truncated there), by hand: UL 0.4 log2(1 + s) = 2.0 -> s = 2^5 - 1 = 31 = 14.914 dB;
    # DL 0.6 log2(1 + s) = 4.4 -> s = 2^(22/3) - 1 = 160.27 = 22.049 dB.
    ("uplink", 10 * math.log10(31.0)), ("downlink", 10 * math.log10(2 ** (4.4 / 0.6) - 1)),
])
def test_attenuated_shannon_reaches_thr_max_at_sinr_max(link, sinr_max_db):
    model = AttenuatedShannonRate(link=link)
    alpha, cap = model.alpha, model.max_spectral_efficiency_bps_per_hz
    assert sinr_max_db == pytest.approx(14.914 if link == "uplink" else 22.049, abs=1e-3)
    se = model.spectral_efficiency_bps_per_hz(_sinr([sinr_max_db - 1.0, sinr_max_db, sinr_max_db + 1.0]))
    assert se[0] < cap and se[1] == pytest.approx(cap) and se[2] == cap
    assert se[0] == pytest.approx(alpha * math.log2(1 + 10 ** ((sinr_max_db - 1.0) / 10)))
