"""BLER curves (sfl_sim.channel.link.bler): the vendored Sionna tables, the lookup against Sionna's own, the CQI to
MCS matching, transport-block segmentation, and mcs_table's ``mapping: bler``."""
import hashlib
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from sfl_sim.channel import McsTableRate
from sfl_sim.channel.link.bler import (
    LINKS,
    bler_curve,
    code_blocks,
    cqi_curves,
    curve_of,
    transport_block_error_rate,
)
from sfl_sim.channel.link.bler_tables import BLER_TABLE_FILES, MCS_ROWS
from sfl_sim.channel.link.cqi_tables import CQI_TABLES
from tests.channel.helpers import N0_W_PER_HZ

DATA = Path(__file__).resolve().parents[3] / "sfl_sim" / "channel" / "link" / "data" / "sionna_bler"
HASHES = {
    "PUSCH_table1.json": "f9c4f7be878cdab5b9c20a082f6dc568cd513b9df0c130a0d0c7d964fb1c6c06",
    "PUSCH_table2.json": "1ef2dfa50fc072654b4066d0a2deb036065fcfca1df29dee9dae2a6c73b82958",
    "PDSCH_table1.json": "cf37d854d13c71a66da439982ff4918f22fd32d425248be0f77429776116b43a",
    "PDSCH_table2.json": "c00b608a5f04d8f76e0f50fdf3524e5ce5129936078e5ad2d7db570ec80758e3",
}
_KEYS = {name: (str(f.category), str(f.table_index)) for name, f in BLER_TABLE_FILES.items()}
_SIONNA = importlib.util.find_spec("sionna") is not None  # finds the package without importing it (or torch)
needs_sionna = pytest.mark.skipif(not _SIONNA, reason="sionna-no-rt is not installed: pip install -e '.[sionna]'")


def _entry(table, mcs):
    category, index = _KEYS[table]
    return json.loads((DATA / f"{table}.json").read_text())["category"][category]["index"][index]["MCS"][str(mcs)]


def _choices():
    """Every (CQI table, link, CQI row, the curve it takes)."""
    return [(table, link, row, curve_of(row[1], row[2], link))
            for table, rows in CQI_TABLES.items() for link in LINKS for row in rows]


def _curves_used():
    return sorted({(c.table, c.mcs_index) for *_, c in _choices()})


# ----------------------------------------------------------------------------- the vendored data
@pytest.mark.parametrize("name", sorted(HASHES))
def test_vendored_tables_are_sionnas_files_unmodified(name):
    assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == HASHES[name]
    assert HASHES[name] in (DATA / "README.md").read_text()
    assert "Apache License" in (DATA / "LICENSE").read_text()


@needs_sionna
@pytest.mark.parametrize("name", sorted(HASHES))
def test_vendored_tables_equal_the_installed_sionnas(name):
    root = Path(importlib.util.find_spec("sionna").submodule_search_locations[0])
    assert (root / "sys" / "bler_tables" / name).read_bytes() == (DATA / name).read_bytes()


# ----------------------------------------------------------------------------- lookup
@pytest.mark.parametrize("table, mcs", _curves_used())
def test_lookup_returns_the_table_values_at_its_points(table, mcs):
    entry = _entry(table, mcs)
    curve = bler_curve(table, mcs)
    for cbs, row in entry["CBS"].items():
        np.testing.assert_allclose(curve.bler(entry["SNR_db"], int(cbs)), row["BLER"], rtol=1e-9, atol=0.0)


def test_lookup_interpolates_log_bler_in_db_and_clamps_outside():
    curve = bler_curve("PUSCH_table1", 3)
    entry = _entry("PUSCH_table1", 3)
    snr, row = entry["SNR_db"], entry["CBS"]["24"]["BLER"]  # 0.928, 0.610, 0.170, ... over -5, -3.2, -1.4 dB
    assert 0 < row[2] < row[1] < 1
    mid = 0.5 * (snr[1] + snr[2])
    assert curve.bler(mid, 24) == pytest.approx(np.sqrt(row[1] * row[2]), rel=1e-9)  # linear in dB of log BLER
    assert curve.bler(-30.0, 24) == pytest.approx(row[0])  # below -5 dB: the -5 dB value
    big = entry["CBS"]["2000"]["BLER"]
    np.testing.assert_allclose(curve.bler(snr, 8448), big, rtol=1e-9)  # above 2000 bits: the 2000-bit curve
    assert curve.bler(np.array([[0.0, 5.0]]), 500).shape == (1, 2)


@pytest.fixture(scope="module")
def sionna_phy():
    sys_module = pytest.importorskip("sionna.sys", reason="sionna-no-rt is not installed: pip install -e '.[sionna]'")
    return sys_module.PHYAbstraction()


@pytest.mark.slow
@needs_sionna
@pytest.mark.parametrize("table, mcs", _curves_used())
def test_lookup_equals_sionna_get_bler(sionna_phy, table, mcs):
    import torch

    category, index = (int(k) for k in _KEYS[table])
    snr_db = -5.0 + 0.1 * np.arange(0, 281)  # Sionna's grid (0.1 dB) from -5 to 23 dB: no quantisation
    curve = bler_curve(table, mcs)
    for cbs in (24, 124, 524, 1024, 1924, 4024):  # on Sionna's 100-bit grid; 4024: clamped to 2000
        theirs = sionna_phy.get_bler(mcs, index, category, cbs,
                                     torch.tensor(10 ** (snr_db / 10), dtype=torch.float64)).double().numpy()
        ours = curve.bler(snr_db, cbs)
        # Between two equal smallest non-zero table values (PUSCH_table1 MCS 17 at 24 bits, 16.4-18.2 dB)
        # the interpolated value is that value up to rounding: Sionna (float32) and we read it as 0 or as
        # itself at different points of the stretch; compare everywhere else.
        tie = np.isclose(np.maximum(ours, theirs), curve.smallest_bler) & (np.minimum(ours, theirs) == 0)
        np.testing.assert_allclose(ours[~tie], theirs[~tie], rtol=1e-5, atol=1e-7)  # Sionna keeps float32


# ----------------------------------------------------------------------------- CQI -> curve
def test_the_files_hold_every_index_bler_tables_lists():
    for name, rows in MCS_ROWS.items():
        category, index = _KEYS[name]
        held = json.loads((DATA / f"{name}.json").read_text())["category"][category]["index"][index]["MCS"]
        assert sorted(int(k) for k in held) == sorted(rows), name


@needs_sionna
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MCS_ROWS))
def test_every_vendored_index_decodes_as_sionnas_decoder_says(name):
    """The (Q_m, R) of each index is what Sionna's own ``MCSDecoderNR`` gives, with transform precoding
    for the PUSCH files (the TensorFlow releases that made them defaulted to it; 38.214 Tables 6.1.4.1-x)."""
    import torch
    from sionna.phy.nr.utils import MCSDecoderNR

    file, decode = BLER_TABLE_FILES[name], MCSDecoderNR()
    for mcs, want in MCS_ROWS[name].items():
        qm, r = decode(torch.tensor(mcs), torch.tensor(file.table_index), torch.tensor(file.category),
                       transform_precoding=file.transform_precoding)
        assert (int(qm), round(float(r) * 1024, 1)) == want, (name, mcs)


def test_the_pusch_files_are_indexed_with_transform_precoding():
    """The tables' own numbers: over the 64QAM rows PUSCH_table1 MCS k is PDSCH_table1 MCS k + 1 (where
    Tables 6.1.4.1-1 and 5.1.3.1-1 differ by one row), so CQI 15 (64QAM 948) is PUSCH MCS 27."""
    for k in range(17, 28):
        assert MCS_ROWS["PUSCH_table1"][k] == MCS_ROWS["PDSCH_table1"][k + 1]
        np.testing.assert_allclose(_entry("PUSCH_table1", k)["CBS"]["2000"]["BLER"],
                                   _entry("PDSCH_table1", k + 1)["CBS"]["2000"]["BLER"], atol=0.05)
    assert curve_of(6, 948, "uplink").table == "PUSCH_table1" and curve_of(6, 948).mcs_index == 27


@pytest.mark.parametrize("table, link, row, choice", _choices(),
                         ids=lambda v: v if isinstance(v, str) else None)
def test_every_cqi_row_takes_a_curve_of_its_own_modulation_and_code_rate(table, link, row, choice):
    _, qm, rate, _ = row
    got_qm, got_rate = MCS_ROWS[choice.table][choice.mcs_index]
    assert BLER_TABLE_FILES[choice.table].link == link or (link == "uplink" and qm == 8)  # 256QAM: PDSCH only
    if choice.how == "same":
        assert (got_qm, got_rate) == (qm, float(rate))
    else:  # same modulation, the lowest higher code rate simulated: an upper bound on the BLER
        assert choice.how.startswith("bound") and got_qm == qm and got_rate > rate
        assert got_rate == min(r for q, r in MCS_ROWS[choice.table].values() if q == qm)


def test_every_cqi_table_has_a_curve_per_row():
    for table, rows in CQI_TABLES.items():
        for link in LINKS:
            curves = cqi_curves(table, link)
            assert len(curves) == len(rows)
            assert [c.label for c in curves] == [f"{c.table} MCS {c.mcs_index}"
                                                 for c in (curve_of(r[1], r[2], link) for r in rows)]


_SINR_DB = np.arange(-10.0, 40.0 + 1e-9, 0.01)


@pytest.mark.parametrize("table", sorted(CQI_TABLES))
@pytest.mark.parametrize("mapping, target", [("gap", 5e-5), ("gap", 1e-2), ("bler", 0.1), ("bler", 0.01)])
@pytest.mark.parametrize("overhead", [0.0, 0.14])
def test_no_mapping_beats_capacity_and_thresholds_rise_with_the_cqi(table, mapping, target, overhead):
    """Every table and mapping: at every SINR in [-10, 40] dB the chosen efficiency x (1 - overhead) is at
    most log2(1 + SINR), and the SINR from which each CQI is chosen rises with the CQI."""
    kwargs = {"ber_target": target} if mapping == "gap" else {"bler_target": target}
    model = McsTableRate(table=table, mapping=mapping, overhead_fraction=overhead, **kwargs)
    sinr = 10.0 ** (_SINR_DB / 10.0)
    assert np.all(model.spectral_efficiency_bps_per_hz(sinr) <= np.log2(1.0 + sinr))
    cqi = model.cqi(sinr)
    assert np.all(np.diff(cqi) >= 0)  # a higher SINR never picks a lower CQI: thresholds rise with it
    assert cqi[-1] >= 14  # (table 2's CQI 15, 256QAM 948, has 15 % BLER at 25 dB, the curve's end)


@pytest.mark.parametrize("cqi, lo_db, hi_db", [(11, 15.0, 19.0), (12, 17.0, 21.0), (14, 21.0, 25.0)])
def test_cqi_table2_256qam_rows_need_the_sinr_of_their_own_curves(cqi, lo_db, hi_db):
    """The issue's case: CQI table 2 with ``mapping: bler`` gave 5.55 bit/s/Hz at 9.3 dB (capacity 3.25).
    Each 256QAM row is now chosen only from its own curve's 10 % point (PDSCH_table2), in ascending order."""
    model = McsTableRate(table="cqi_table2", mapping="bler")
    assert model.spectral_efficiency_bps_per_hz(10 ** 0.93) <= np.log2(1 + 10 ** 0.93)
    first_db = _SINR_DB[np.argmax(model.cqi(10.0 ** (_SINR_DB / 10.0)) >= cqi)]
    assert lo_db <= first_db <= hi_db


# ----------------------------------------------------------------------------- transport blocks
@pytest.mark.parametrize("tb, rate, want", [
    (1000, 0.5, (1016, 1)), (3824, 0.5, (3840, 1)), (3840, 0.2, (1956, 2)), (8000, 0.5, (8024, 1)),
    (20000, 0.8, (6698, 3)),
])
def test_code_blocks_by_hand(tb, rate, want):
    # <= 3824: one block + 16-bit CRC; R <= 1/4: ceil((tb + 24) / 3816); > 8424: ceil((tb + 24) / 8424)
    assert code_blocks(tb, rate) == want


@needs_sionna
def test_code_blocks_equal_sionnas_segmentation():
    from sionna.phy.nr.utils import calculate_tb_size

    for qm, rate in ((2, 0.12), (2, 0.3), (4, 0.48), (6, 0.75), (8, 0.93)):
        for target in (100, 900, 3000, 3900, 5000, 8500, 20000, 60000, 150000):
            tb, cb, n_cb, *_ = calculate_tb_size(qm, rate, target_tb_size=target, num_coded_bits=10 ** 6,
                                                 return_cw_length=False)
            assert code_blocks(int(tb), rate) == (int(cb), int(n_cb)), (qm, rate, target)


def test_transport_block_error_rate():
    assert transport_block_error_rate(0.1, 1) == pytest.approx(0.1)
    assert transport_block_error_rate(0.1, 3) == pytest.approx(1 - 0.9 ** 3)


# ----------------------------------------------------------------------------- mapping: bler
def _curve(row):
    choice = curve_of(row[1], row[2])
    return choice.table, choice.mcs_index


def _bler_2000(curve, k, snr_db):
    """The 2000-bit BLER of ``curve`` at point ``k`` of the 15-point grid, read from the JSON; PDSCH_table2 has
    its own grid (20 points to 25 dB) and is read through the lookup there."""
    entry = _entry(*curve)
    if np.isclose(entry["SNR_db"][k], snr_db):
        return entry["CBS"]["2000"]["BLER"][k]
    return float(bler_curve(*curve).bler(snr_db, 2000))


@pytest.mark.parametrize("table", sorted(CQI_TABLES))
@pytest.mark.parametrize("target", [0.1, 0.01])
def test_bler_mapping_picks_the_highest_cqi_meeting_the_target_at_table_points(table, target):
    # At the tables' own SINR points the lookup is the table value: read the rows of the JSON directly.
    # code_block_bits: the code-block rule on 2000-bit blocks (the transport-block rule's tests are below).
    model = McsTableRate(table=table, mapping="bler", bler_target=target, code_block_bits=2000)
    snr_db = _entry("PUSCH_table1", 11)["SNR_db"]
    rows = CQI_TABLES[table]
    for k, s in enumerate(snr_db):
        meets = [r[0] for r in rows if _bler_2000(_curve(r), k, s) <= target]
        want = max(meets, default=0)
        assert int(model.cqi(10 ** (s / 10))) == want, (s, meets)
        eff = dict((r[0], r[3]) for r in rows).get(want, 0.0)
        gain = 10 ** (s / 10) * 1e6 * N0_W_PER_HZ / 0.2
        # the default overhead: TS 38.306 clause 4.1.2, FR1 uplink, 0.08
        assert model.rate_bps(1e6, 0.2, gain, N0_W_PER_HZ) == pytest.approx(eff * (1 - 0.08) * 1e6, rel=1e-9)
    top = 14 if table == "cqi_table2" else 15  # table 2's CQI 15 has 15 % BLER at 25 dB, its curve's end
    assert model.cqi(10 ** (30 / 10)) == top and model.cqi(10 ** (-8 / 10)) == 0


def test_bler_mapping_one_hand_row():
    # CQI table 1 at 5.714 dB (grid point 6), 2000-bit blocks: CQI 7 (16QAM 378, MCS 11) has BLER 0 <= 0.1 and
    # CQI 8 (16QAM 490, MCS 13) 0.6275 > 0.1 (higher CQIs 1): CQI 7 is the highest to meet 0.1.
    s = _entry("PUSCH_table1", 11)["SNR_db"][6]
    assert _entry("PUSCH_table1", 11)["CBS"]["2000"]["BLER"][6] <= 0.1 < _entry("PUSCH_table1", 13)["CBS"]["2000"][
        "BLER"][6]
    assert McsTableRate(mapping="bler", code_block_bits=2000).cqi(10 ** (s / 10)) == 7
    assert McsTableRate(mapping="bler").cqi(10 ** (s / 10)) == 7  # without a bandwidth: one 2000-bit block


# ----------------------------------------------------------------------------- CQI on the transport block
def test_cqi_is_chosen_on_the_transport_block_by_hand():
    # 20 MHz at 30 kHz, the whole band: 51 RBs, b = 18.36 MHz; SINR 19.25 dB; CQI table 1, slot 0.5 ms, OH 0.08.
    # CQI 15 (64QAM 948/1024, PUSCH_table1 MCS 27): TB = 18.36e6 x 5.5547 x 0.92 x 0.5e-3 = 46912.77 -> 46913 bits;
    #   TS 38.212 5.2.2 (Sionna's segmentation): R > 1/4 and TB > 8424, C = ceil((46913 + 24) / 8424) = 6 code
    #   blocks of (46913 + 24) // 6 + 24 = 7846 bits, read on the 2000-bit curve (the largest the tables hold).
    #   That curve at 18.214 and 20 dB: 0.99667 and 0.0036667; log-linear at 19.25 dB:
    #   log10 BLER = log10 0.99667 + (1.0357 / 1.7857) (log10 0.0036667 - log10 0.99667) = -1.4133 -> 0.03861,
    #   <= 0.1: the code-block rule takes CQI 15; but TBLER = 1 - (1 - 0.03861)^6 = 0.2104 > 0.1.
    # CQI 14 (64QAM 873, MCS 25): TB = 43200.93 -> 43201 bits, C = ceil(43225 / 8424) = 6 blocks of 7228 bits; its
    #   2000-bit BLER is 0.00133 at 18.214 dB and 0 at 20 dB, so <= 0.00133 between: TBLER <= 1 - (1 - 0.00133)^6
    #   = 0.008 <= 0.1.  The transport-block rule takes CQI 14.
    s = 19.25
    sinr = 10 ** (s / 10)
    tb15 = 18.36e6 * 5.5547 * 0.92 * 0.5e-3
    assert math.ceil(tb15) == 46913 and code_blocks(tb15, 948 / 1024) == (7846, 6)
    assert code_blocks(18.36e6 * 5.1152 * 0.92 * 0.5e-3, 873 / 1024) == (7228, 6)
    e27 = _entry("PUSCH_table1", 27)
    lo, hi = e27["SNR_db"][13], e27["SNR_db"][14]
    b_lo, b_hi = e27["CBS"]["2000"]["BLER"][13], e27["CBS"]["2000"]["BLER"][14]
    log_bler = math.log10(b_lo) + (s - lo) / (hi - lo) * (math.log10(b_hi) - math.log10(b_lo))
    assert 10 ** log_bler == pytest.approx(0.03861, abs=5e-5)
    assert float(bler_curve("PUSCH_table1", 27).bler(s, 7846)) == pytest.approx(10 ** log_bler, rel=1e-9)
    assert 1 - (1 - 10 ** log_bler) ** 6 == pytest.approx(0.2104, abs=5e-4)
    assert _entry("PUSCH_table1", 25)["CBS"]["2000"]["BLER"][13:15] == pytest.approx([0.0013333, 0.0], abs=1e-7)
    assert McsTableRate(mapping="bler", code_block_bits=2000).cqi(sinr) == 15  # the code-block rule
    model = McsTableRate(mapping="bler")
    assert model.cqi(sinr, 18.36e6) == 14
    gain = sinr * 18.36e6 * N0_W_PER_HZ / 0.2
    rate = float(model.rate_bps(18.36e6, 0.2, gain, N0_W_PER_HZ))
    assert rate == pytest.approx(18.36e6 * 5.1152 * 0.92)
    assert model.cqi_of_rate(sinr, rate) == 14  # what HARQ and the channel report read back from the rate


def test_one_code_block_of_2000_bits_or_more_changes_nothing():
    # A transport block of 1984..3824 bits is one code block (C = 1) of TB + 16 >= 2000 bits: its TBLER is the
    # 2000-bit code-block BLER, the code-block rule's.  CQI 7 (16QAM 378, 1.4766 bit/s/Hz) on b Hz carries
    # b x 1.4766 x 0.92 x 0.5e-3 bits: 3000 bits at b = 4.4171 MHz.
    model, old = McsTableRate(mapping="bler"), McsTableRate(mapping="bler", code_block_bits=2000)
    b = 3000 / (1.4766 * 0.92 * 0.5e-3)
    assert code_blocks(3000, 378 / 1024) == (3016, 1)
    sinr_db = np.linspace(-5.0, 20.0, 101)
    np.testing.assert_allclose(model._block_error(6, sinr_db, b), old._block_error(6, sinr_db, None),
                               rtol=1e-12, atol=1e-15)


def test_cqi_table3_targets_1e_5_on_the_block():
    assert McsTableRate(table="cqi_table3").bler_target == 1e-5
    assert McsTableRate().bler_target == 0.1 and McsTableRate(table="cqi_table2").bler_target == 0.1
    assert McsTableRate(table="cqi_table3", bler_target=0.1).bler_target == 0.1
    s = 10 ** (4.5 / 10)  # at 4.5 dB on 1 MHz: CQI 8 at 1e-5, CQI 9 at 0.1
    strict, loose = McsTableRate(table="cqi_table3", mapping="bler"), McsTableRate(
        table="cqi_table3", mapping="bler", bler_target=0.1)
    assert (strict.cqi(s, 1e6), loose.cqi(s, 1e6)) == (8, 9)
