"""The 5G NR CQI tables of 3GPP TS 38.214 (V17), clause 5.2.2.1, as data.

Each row is ``(cqi_index, modulation_order, code_rate_x1024, efficiency_bps_per_hz)``, copied
from the spec; CQI 0 ("out of range") has no row.  The modulation order ``Q_m`` is the bits per
symbol (2 = QPSK, 4 = 16QAM, 6 = 64QAM, 8 = 256QAM); the spec prints the modulation name, and its
efficiency column is ``Q_m x code rate / 1024`` rounded to 4 decimals.

- :data:`CQI_TABLE1`: Table 5.2.2.1-2, 4-bit CQI Table 1 (up to 64QAM).
- :data:`CQI_TABLE2`: Table 5.2.2.1-3, 4-bit CQI Table 2 (up to 256QAM).
- :data:`CQI_TABLE3`: Table 5.2.2.1-4, 4-bit CQI Table 3 (low spectral efficiency, URLLC).
"""
from __future__ import annotations

__all__ = ["CqiRow", "CQI_TABLE1", "CQI_TABLE2", "CQI_TABLE3", "CQI_TABLES"]

#: ``(cqi_index, modulation_order, code_rate_x1024, efficiency_bps_per_hz)``.
CqiRow = tuple[int, int, int, float]

#: TS 38.214 Table 5.2.2.1-2: 4-bit CQI Table 1.
CQI_TABLE1: tuple[CqiRow, ...] = (
    (1, 2, 78, 0.1523),
    (2, 2, 120, 0.2344),
    (3, 2, 193, 0.3770),
    (4, 2, 308, 0.6016),
    (5, 2, 449, 0.8770),
    (6, 2, 602, 1.1758),
    (7, 4, 378, 1.4766),
    (8, 4, 490, 1.9141),
    (9, 4, 616, 2.4063),
    (10, 6, 466, 2.7305),
    (11, 6, 567, 3.3223),
    (12, 6, 666, 3.9023),
    (13, 6, 772, 4.5234),
    (14, 6, 873, 5.1152),
    (15, 6, 948, 5.5547),
)

#: TS 38.214 Table 5.2.2.1-3: 4-bit CQI Table 2.
CQI_TABLE2: tuple[CqiRow, ...] = (
    (1, 2, 78, 0.1523),
    (2, 2, 193, 0.3770),
    (3, 2, 449, 0.8770),
    (4, 4, 378, 1.4766),
    (5, 4, 490, 1.9141),
    (6, 4, 616, 2.4063),
    (7, 6, 466, 2.7305),
    (8, 6, 567, 3.3223),
    (9, 6, 666, 3.9023),
    (10, 6, 772, 4.5234),
    (11, 6, 873, 5.1152),
    (12, 8, 711, 5.5547),
    (13, 8, 797, 6.2266),
    (14, 8, 885, 6.9141),
    (15, 8, 948, 7.4063),
)

#: TS 38.214 Table 5.2.2.1-4: 4-bit CQI Table 3.
CQI_TABLE3: tuple[CqiRow, ...] = (
    (1, 2, 30, 0.0586),
    (2, 2, 50, 0.0977),
    (3, 2, 78, 0.1523),
    (4, 2, 120, 0.2344),
    (5, 2, 193, 0.3770),
    (6, 2, 308, 0.6016),
    (7, 2, 449, 0.8770),
    (8, 2, 602, 1.1758),
    (9, 4, 378, 1.4766),
    (10, 4, 490, 1.9141),
    (11, 4, 616, 2.4063),
    (12, 6, 466, 2.7305),
    (13, 6, 567, 3.3223),
    (14, 6, 666, 3.9023),
    (15, 6, 772, 4.5234),
)

#: The tables by the name a scenario uses (``mcs_table``'s ``table``).
CQI_TABLES: dict[str, tuple[CqiRow, ...]] = {
    "cqi_table1": CQI_TABLE1,
    "cqi_table2": CQI_TABLE2,
    "cqi_table3": CQI_TABLE3,
}
