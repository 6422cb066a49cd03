"""Sionna's BLER tables that we vendor, and the modulation and code rate each MCS index stands for.

Each file of ``sfl_sim/channel/link/data/sionna_bler/`` holds, per MCS index of one TS 38.214 MCS
table, the code-block error rate of the NR LDPC chain on an AWGN channel (see that folder's
README).  An index means nothing without its table: Sionna's ``PHYAbstraction.new_bler_table``
decodes every simulated index to a modulation order ``Q_m`` and a code rate ``R`` with its
``MCSDecoderNR`` and simulates that pair.  The files were made by the TensorFlow releases of
Sionna (the tables entered the repository in v1.0.1 and are unchanged since), whose
``MCSDecoderNR.call`` defaults to ``transform_precoding=True`` (``sionna/phy/nr/utils.py`` of
v1.0.1-v1.2.1): so the PUSCH files are indexed by TS 38.214 Tables 6.1.4.1-1/-2 (PUSCH with
transform precoding) and the PDSCH files by Tables 5.1.3.1-1/-2.  (The torch release 2.2.0 that
the ``[sionna]`` extra installs defaults to ``transform_precoding=False``: decoding a PUSCH file
with its default would read the wrong table; the tests decode with ``transform_precoding=True``.)
The tables' own BLER confirm it: ``PUSCH_table1`` MCS ``k`` and ``PDSCH_table1`` MCS ``k + 1``
coincide over the 64QAM rows, which is where Tables 6.1.4.1-1 and 5.1.3.1-1 differ by one row.

:data:`MCS_ROWS` is each file's ``index -> (Q_m, R x 1024)`` as Sionna's decoder gives it
(``sionna.phy.nr.utils.decode_mcs_index``, the 3GPP TS 38.214 tables named above), for the
indices the file holds; ``tests/channel/link/test_bler.py`` decodes every one of them with
Sionna's own ``MCSDecoderNR`` and compares.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BlerTableFile", "BLER_TABLE_FILES", "MCS_ROWS", "McsRow"]

#: ``(Q_m, code rate x 1024)``: bits per symbol and the target code rate of one MCS.
McsRow = tuple[int, float]


@dataclass(frozen=True)
class BlerTableFile:
    """One vendored Sionna BLER file.

    Attributes
    ----------
    name : str
        File stem (``"PUSCH_table1"``).
    category : int
        Sionna's ``mcs_category``: 0 PUSCH, 1 PDSCH (the key inside the file).
    table_index : int
        Sionna's ``mcs_table_index`` (the key inside the file).
    transform_precoding : bool
        Whether its indices decode through the transform-precoding tables (TS 38.214 clause
        6.1.4.1: PUSCH only).
    spec_table : str
        The TS 38.214 table that decodes its indices.
    """

    name: str
    category: int
    table_index: int
    transform_precoding: bool
    spec_table: str

    @property
    def link(self) -> str:
        """``"uplink"`` for a PUSCH table, ``"downlink"`` for a PDSCH table."""
        return "uplink" if self.category == 0 else "downlink"


#: The vendored files, by name.
BLER_TABLE_FILES: dict[str, BlerTableFile] = {f.name: f for f in (
    BlerTableFile("PUSCH_table1", 0, 1, True, "TS 38.214 Table 6.1.4.1-1"),
    BlerTableFile("PUSCH_table2", 0, 2, True, "TS 38.214 Table 6.1.4.1-2"),
    BlerTableFile("PDSCH_table1", 1, 1, False, "TS 38.214 Table 5.1.3.1-1"),
    BlerTableFile("PDSCH_table2", 1, 2, False, "TS 38.214 Table 5.1.3.1-2"),
)}

#: ``index -> (Q_m, R x 1024)`` of every MCS index each vendored file holds (Sionna's decoder).
MCS_ROWS: dict[str, dict[int, McsRow]] = {
    "PUSCH_table1": {
        3: (2, 251.0), 4: (2, 308.0), 5: (2, 379.0), 6: (2, 449.0), 7: (2, 526.0), 8: (2, 602.0), 9: (2, 679.0),
        10: (4, 340.0), 11: (4, 378.0), 12: (4, 434.0), 13: (4, 490.0), 14: (4, 553.0), 15: (4, 616.0),
        16: (4, 658.0), 17: (6, 466.0), 18: (6, 517.0), 19: (6, 567.0), 20: (6, 616.0), 21: (6, 666.0),
        22: (6, 719.0), 23: (6, 772.0), 24: (6, 822.0), 25: (6, 873.0), 26: (6, 910.0), 27: (6, 948.0),
    },
    "PUSCH_table2": {
        9: (2, 251.0), 10: (2, 308.0), 11: (2, 379.0), 12: (2, 449.0), 13: (2, 526.0), 14: (2, 602.0),
        15: (2, 679.0), 16: (4, 378.0), 17: (4, 434.0), 18: (4, 490.0), 19: (4, 553.0), 20: (4, 616.0),
        21: (4, 658.0), 22: (4, 699.0), 23: (4, 772.0), 24: (6, 567.0), 25: (6, 616.0), 26: (6, 666.0),
        27: (6, 772.0),
    },
    "PDSCH_table1": {
        3: (2, 251.0), 4: (2, 308.0), 5: (2, 379.0), 6: (2, 449.0), 7: (2, 526.0), 8: (2, 602.0), 9: (2, 679.0),
        10: (4, 340.0), 11: (4, 378.0), 12: (4, 434.0), 13: (4, 490.0), 14: (4, 553.0), 15: (4, 616.0),
        16: (4, 658.0), 17: (6, 438.0), 18: (6, 466.0), 19: (6, 517.0), 20: (6, 567.0), 21: (6, 616.0),
        22: (6, 666.0), 23: (6, 719.0), 24: (6, 772.0), 25: (6, 822.0), 26: (6, 873.0), 27: (6, 910.0),
        28: (6, 948.0),
    },
    "PDSCH_table2": {
        2: (2, 308.0), 3: (2, 449.0), 4: (2, 602.0), 5: (4, 378.0), 6: (4, 434.0), 7: (4, 490.0), 8: (4, 553.0),
        9: (4, 616.0), 10: (4, 658.0), 11: (6, 466.0), 12: (6, 517.0), 13: (6, 567.0), 14: (6, 616.0),
        15: (6, 666.0), 16: (6, 719.0), 17: (6, 772.0), 18: (6, 822.0), 19: (6, 873.0), 20: (8, 682.5),
        21: (8, 711.0), 22: (8, 754.0), 23: (8, 797.0), 24: (8, 841.0), 25: (8, 885.0), 26: (8, 916.5),
        27: (8, 948.0),
    },
}
