"""BLER curves (sfl_sim.channel.link.bler): the vendored Sionna tables, the lookup against Sionna's own, the CQI to
MCS matching, transport-block segmentation, and mcs_table's ``mapping: bler``."""
import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from sfl_sim.channel import McsTableRate
from sfl_sim.channel.link.bler import CURVE_OF_CQI_RATE, bler_curve, code_blocks, cqi_curves, transport_block_error_rate
from sfl_sim.channel.link.cqi_tables import CQI_TABLES
from tests.channel.helpers import N0_W_PER_HZ

DATA = Path(__file__).resolve().parents[3] / "sfl_sim" / "channel" / "link" / "data" / "sionna_bler"
HASHES = {
    "PUSCH_table1.json": "f9c4f7be878cdab5b9c20a082f6dc568cd513b9df0c130a0d0c7d964fb1c6c06",
    "PUSCH_table2.json": "1ef2dfa50fc072654b4066d0a2deb036065fcfca1df29dee9dae2a6c73b82958",
    "PDSCH_table1.json": "cf37d854d13c71a66da439982ff4918f22fd32d425248be0f77429776116b43a",
}
_KEYS = {"PUSCH_table1": ("0", "1"), "PUSCH_table2": ("0", "2"), "PDSCH_table1": ("1", "1")}
_SIONNA = importlib.util.find_spec("sionna") is not None  # finds the package without importing it (or torch)
needs_sionna = pytest.mark.skipif(not _SIONNA, reason="sionna-no-rt is not installed: pip install -e '.[sionna]'")


def _entry(table, mcs):
    category, index = _KEYS[table]
    return json.loads((DATA / f"{table}.json").read_text())["category"][category]["index"][index]["MCS"][str(mcs)]


def _curves_used():
    return sorted({v[:2] for v in CURVE_OF_CQI_RATE.values()})


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
        np.testing.assert_allclose(curve.bler(snr_db, cbs), theirs, rtol=1e-5, atol=1e-7)  # Sionna keeps float32


# ----------------------------------------------------------------------------- CQI -> MCS
def test_every_cqi_row_has_a_curve():
    for table, rows in CQI_TABLES.items():
        curves = cqi_curves(table)
        assert len(curves) == len(rows)
        for (_, qm, rate, _), curve in zip(rows, curves, strict=True):
            name, mcs, how = CURVE_OF_CQI_RATE[(qm, rate)]
            assert curve.label == f"{name} MCS {mcs}"
            assert how == "same" or how.startswith("bound") or "PDSCH" in how


@needs_sionna
def test_cqi_rows_match_sionnas_mcs_tables():
    import torch
    from sionna.phy.nr.utils import MCSDecoderNR

    decode = MCSDecoderNR()
    for (qm, rate), (table, mcs, how) in CURVE_OF_CQI_RATE.items():
        category, index = (int(k) for k in _KEYS[table])
        got_qm, got_r = decode(torch.tensor(mcs), torch.tensor(index), torch.tensor(category))
        got = (int(got_qm), round(float(got_r) * 1024, 1))
        if how.startswith("bound"):  # same modulation, a higher code rate: an upper bound on the BLER
            assert got[0] == qm and got[1] > rate, (qm, rate, got)
        else:
            assert got == (qm, float(rate)), (qm, rate, got)


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
@pytest.mark.parametrize("table", sorted(CQI_TABLES))
@pytest.mark.parametrize("target", [0.1, 0.01])
def test_bler_mapping_picks_the_highest_cqi_meeting_the_target_at_table_points(table, target):
    # At the tables' own SINR points the lookup is the table value: read the rows of the JSON directly.
    model = McsTableRate(table=table, mapping="bler", bler_target=target)
    snr_db = _entry("PUSCH_table1", 11)["SNR_db"]
    rows = CQI_TABLES[table]
    for k, s in enumerate(snr_db):
        meets = [r[0] for r in rows
                 if _entry(*CURVE_OF_CQI_RATE[(r[1], r[2])][:2])["CBS"]["2000"]["BLER"][k] <= target]
        want = max(meets, default=0)
        assert int(model.cqi(10 ** (s / 10))) == want, (s, meets)
        eff = dict((r[0], r[3]) for r in rows).get(want, 0.0)
        gain = 10 ** (s / 10) * 1e6 * N0_W_PER_HZ / 0.2
        assert model.rate_bps(1e6, 0.2, gain, N0_W_PER_HZ) == pytest.approx(eff * 1e6, rel=1e-9)
    assert model.cqi(10 ** (30 / 10)) == 15 and model.cqi(10 ** (-8 / 10)) == 0


def test_bler_mapping_one_hand_row():
    # CQI table 1 at 5.714 dB (grid point 6), 2000-bit blocks: CQI 7 (16QAM 378, MCS 11) has BLER 0 <= 0.1 and
    # CQI 8 (16QAM 490, MCS 13) 0.6275 > 0.1 (higher CQIs 1): CQI 7 is the highest to meet 0.1.
    s = _entry("PUSCH_table1", 11)["SNR_db"][6]
    assert _entry("PUSCH_table1", 11)["CBS"]["2000"]["BLER"][6] <= 0.1 < _entry("PUSCH_table1", 13)["CBS"]["2000"][
        "BLER"][6]
    assert McsTableRate(mapping="bler").cqi(10 ** (s / 10)) == 7
