"""Block-error rate of the 5G NR links per CQI: Sionna's BLER tables, read as data.

Source
------
The curves are Sionna's (NVIDIA, Apache-2.0): ``sionna/sys/bler_tables/*.json`` of the
``sionna-no-rt`` 2.2.0 wheel, the code-block error rate of the NR LDPC chain on an AWGN channel per
MCS index of a TS 38.214 MCS table, at 15 SINR points from -5 to 20 dB (``PDSCH_table2``: 20 points
to 25 dB) and code-block sizes 24, 100, 500, 1000 and 2000 bits. The four tables this module needs
(``PUSCH_table1``, ``PUSCH_table2``, ``PDSCH_table1``, ``PDSCH_table2``) are vendored unmodified in
``sfl_sim/channel/link/data/sionna_bler/`` with Sionna's licence and their hashes, rather than
located in an installed Sionna: Sionna requires torch >= 2.9.1 and numpy >= 2.2.6 (ours: torch >=
2.3, numpy >= 1.24) and :mod:`sfl_sim.channel` imports only numpy and scipy, so the tables are data
we carry, and the optional extra ``[sionna]`` exists only for the tests that check this module
against Sionna's own functions (``tests/channel/link/test_bler.py``). Which modulation and code rate
each file's MCS index stands for is :mod:`sfl_sim.channel.link.bler_tables` (the PUSCH files are
indexed by the tables with transform precoding, TS 38.214 Tables 6.1.4.1-1/-2).

Lookup
------
:meth:`BlerCurve.bler` is Sionna's ``PHYAbstraction`` lookup without its quantisation to a
0.1 dB x 100-bit grid: bilinear interpolation of ``log10(BLER)`` over (code-block size, SINR in dB)
(``scipy.interpolate.RectBivariateSpline`` of degree 1, as Sionna's
``SplineGriddataInterpolation.struct``), table zeros entering as ``min log10(BLER) - 2`` and results
below the smallest non-zero table value read as 0.  Outside the table the value at the nearest edge
is used (clamp): code blocks above 2000 bits use the 2000-bit curve (Sionna does the same), SINRs
below -5 dB the -5 dB value and above the last point (20 or 25 dB) its value.  (So a row whose
curve has not fallen to the target at its last point is never chosen: CQI table 2's CQI 15,
256QAM 948/1024, has a 2000-bit BLER of 0.15 at 25 dB and is not picked at a 10 % target.)

CQI to curve
------------
A CQI row of TS 38.214 Tables 5.2.2.1-2/-3/-4 is a modulation order ``Q_m`` and a code rate
``R x 1024``; its curve (:func:`curve_of`) is the curve of an MCS with the same ``(Q_m, R)``,
looked up in the link's own tables first: the uplink's PUSCH tables, then the PDSCH tables; the
downlink's PDSCH tables only.  A PDSCH curve on the uplink is the same LDPC code and modulation on
the same AWGN channel (Sionna's PUSCH tables, indexed with transform precoding, stop at 64QAM:
the uplink's 256QAM rows of CQI table 2 take PDSCH Table 5.1.3.1-2's curves).  A pair no table
holds (QPSK at code rates 30, 50, 78, 120 and 193/1024, the lowest CQIs) takes the curve of the
lowest code rate simulated with the same modulation (QPSK 251/1024): a lower code rate of the same
code decodes at least as well, so that curve is an upper bound on their BLER (``mapping: bler``
picks them only where that bound meets the target: conservative).

Transport blocks
----------------
:func:`code_blocks` segments a transport block of ``tb_bits`` information bits as Sionna's
``calculate_tb_size`` does after its TBS quantisation (TS 38.214 clause 5.1.3.2 and TS 38.212 clause
5.2.2): one code block up to 3824 bits, else ``ceil((tb + 24) / 3816)`` blocks at code rate
<= 1/4 and ``ceil((tb + 24) / 8424)`` above 8424 bits; a CRC of 16 (<= 3824 bits) or 24 bits on the
block and 24 more per code block when there are several.  A block decodes when all its code blocks
do: ``TBLER = 1 - (1 - BLER)^C`` (:func:`transport_block_error_rate`, Sionna's TBLER).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import numpy as np
from scipy.interpolate import RectBivariateSpline

from sfl_sim.channel.link.bler_tables import BLER_TABLE_FILES, MCS_ROWS
from sfl_sim.channel.link.cqi_tables import CQI_TABLES

__all__ = ["BlerCurve", "CurveChoice", "Link", "LINKS", "bler_curve", "curve_of", "cqi_curves", "code_blocks",
           "code_blocks_array", "transport_block_error_rate", "TABLE_CODE_BLOCK_BITS_MAX"]

#: The largest code-block size the tables were simulated at (bits); larger blocks use its curve.
TABLE_CODE_BLOCK_BITS_MAX = 2000

#: Which link a rate model serves: the clients' uplink (PUSCH) or the server's downlink (PDSCH).
Link = Literal["uplink", "downlink"]
LINKS: tuple[Link, ...] = ("uplink", "downlink")

#: The tables searched for a curve, in order, per link (see "CQI to curve").
_SEARCH_ORDER: dict[str, tuple[str, ...]] = {
    "uplink": ("PUSCH_table1", "PUSCH_table2", "PDSCH_table1", "PDSCH_table2"),
    "downlink": ("PDSCH_table1", "PDSCH_table2"),
}


_MODULATIONS = {2: "QPSK", 4: "16QAM", 6: "64QAM", 8: "256QAM"}


@dataclass(frozen=True)
class CurveChoice:
    """The curve a CQI row takes, and how it was matched.

    Attributes
    ----------
    table : str
        The Sionna file (``"PUSCH_table1"``).
    mcs_index : int
        The MCS index in that file.
    how : str
        ``"same"`` (the same ``(Q_m, R)``) or ``"bound: ..."`` (same modulation, a higher code rate).
    """

    table: str
    mcs_index: int
    how: str


def curve_of(modulation_order: int, code_rate_x1024: float, link: Link = "uplink") -> CurveChoice:
    """The curve of the MCS with this modulation and code rate on ``link`` (see "CQI to curve").

    Raises
    ------
    ValueError
        When no table holds the modulation at all (or at a code rate as high).
    """
    order = _SEARCH_ORDER[link]
    for name in order:
        for index, row in MCS_ROWS[name].items():
            if row == (modulation_order, float(code_rate_x1024)):
                return CurveChoice(name, index, "same")
    above = [(row[1], order.index(name), name, index) for name in order for index, row in MCS_ROWS[name].items()
             if row[0] == modulation_order and row[1] > code_rate_x1024]
    if not above:
        raise ValueError(f"modulation_order: got {modulation_order} at code rate {code_rate_x1024}/1024 on the "
                         f"{link}; allowed: a pair the tables {', '.join(order)} hold or bound")
    rate, _, name, index = min(above)
    return CurveChoice(name, index, f"bound: {_MODULATIONS.get(modulation_order, modulation_order)} {rate:g}/1024, "
                                    f"the lowest code rate simulated for it")


@functools.cache
def _table(name: str) -> dict[str, Any]:
    """The MCS entries of one vendored Sionna file (``{"MCS": {index: {"CBS": ..., "SNR_db": ...}}}``)."""
    file = BLER_TABLE_FILES[name]
    category, index = str(file.category), str(file.table_index)
    text = resources.files("sfl_sim.channel.link").joinpath(f"data/sionna_bler/{name}.json").read_text("utf-8")
    return dict(json.loads(text)["category"][category]["index"][index])


class BlerCurve:
    """Code-block error rate of one MCS over (code-block size, SINR): a Sionna table entry.

    Parameters
    ----------
    cb_bits : array_like, shape (n,)
        Code-block sizes of the table, bits, increasing.
    snr_db : array_like, shape (m,)
        SINRs of the table, dB, increasing.
    bler : array_like, shape (n, m)
        Code-block error rate at each (size, SINR), in [0, 1].
    label : str
        Where it comes from (``"PUSCH_table1 MCS 11"``).
    """

    def __init__(self, cb_bits: Any, snr_db: Any, bler: Any, label: str) -> None:
        self.cb_bits = np.asarray(cb_bits, dtype=float)
        self.snr_db = np.asarray(snr_db, dtype=float)
        table = np.asarray(bler, dtype=float)
        self.label = label
        zero = table == 0
        self._all_zero = bool(zero.all())
        self.smallest_bler = 0.0  # the smallest non-zero value of the table (0: none)
        if self._all_zero:
            return
        logs = np.log10(np.where(zero, 1.0, table))
        self._min_log = float(logs[~zero].min())
        self.smallest_bler = float(table[~zero].min())
        logs[zero] = self._min_log - 2.0
        self._spline = RectBivariateSpline(self.cb_bits, self.snr_db, logs, kx=1, ky=1)

    def __repr__(self) -> str:
        return f"BlerCurve({self.label})"

    def bler(self, sinr_db: Any, cb_bits: Any) -> np.ndarray:
        """Code-block error rate at SINR(s) in dB and code-block size(s) in bits (broadcast).

        Outside the table the nearest edge's value is used (see the module docstring).

        Returns
        -------
        numpy.ndarray
            BLER in [0, 1], the broadcast shape of the arguments.
        """
        s, k = np.broadcast_arrays(np.asarray(sinr_db, dtype=float), np.asarray(cb_bits, dtype=float))
        if self._all_zero:
            return np.zeros(s.shape)
        s = np.clip(s, self.snr_db[0], self.snr_db[-1])
        k = np.clip(k, self.cb_bits[0], self.cb_bits[-1])
        logs = self._spline(k.ravel(), s.ravel(), grid=False).reshape(s.shape)
        # below the smallest non-zero value read as 0; the tolerance keeps a stretch between two equal
        # smallest values (interpolated in floating point) at that value
        out = np.where(logs < self._min_log - 1e-9, 0.0, np.power(10.0, logs))
        return np.asarray(np.clip(out, 0.0, 1.0))


@functools.cache
def bler_curve(table: str, mcs_index: int) -> BlerCurve:
    """The curve of MCS ``mcs_index`` in Sionna's ``table`` (``"PUSCH_table1"``...)."""
    entry = _table(table)["MCS"][str(mcs_index)]
    cbs = sorted(entry["CBS"], key=int)
    return BlerCurve([int(c) for c in cbs], entry["SNR_db"], [entry["CBS"][c]["BLER"] for c in cbs],
                     f"{table} MCS {mcs_index}")


@functools.cache
def cqi_curves(table: str, link: Link = "uplink") -> tuple[BlerCurve, ...]:
    """The BLER curve of each row of a CQI table (``"cqi_table1"``...) on ``link``, in CQI order."""
    choices = (curve_of(qm, rate, link) for _, qm, rate, _ in CQI_TABLES[table])
    return tuple(bler_curve(c.table, c.mcs_index) for c in choices)


def code_blocks(tb_bits: float, code_rate: float) -> tuple[int, int]:
    """Code-block size (bits, CRCs included) and count of a transport block (see module docstring).

    Parameters
    ----------
    tb_bits : float
        Information bits of the transport block (>= 1; rounded up to whole bits).
    code_rate : float
        Code rate of its MCS, in (0, 1).

    Returns
    -------
    (int, int)
        ``(cb_bits, n_code_blocks)``.
    """
    cb, n = code_blocks_array(tb_bits, code_rate)
    return int(cb), int(n)


def code_blocks_array(tb_bits: Any, code_rate: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`code_blocks` over an array of transport-block sizes: ``(cb_bits, n_code_blocks)``, int arrays."""
    tb = np.maximum(1, np.ceil(np.asarray(tb_bits, dtype=float))).astype(np.int64)
    if code_rate <= 0.25:
        several = np.ceil((tb + 24) / 3816).astype(np.int64)
    else:
        several = np.where(tb > 8424, np.ceil((tb + 24) / 8424), 1).astype(np.int64)
    n = np.where(tb <= 3824, 1, several)
    tb_crc = np.where(tb > 3824, 24, 16)
    cb_crc = np.where(n > 1, 24, 0)
    return (tb + tb_crc) // n + cb_crc, n


def transport_block_error_rate(bler: Any, n_code_blocks: Any) -> np.ndarray:
    """``1 - (1 - BLER)^C``: a transport block fails when any of its ``C`` code blocks does."""
    return 1.0 - np.power(1.0 - np.asarray(bler, dtype=float), np.asarray(n_code_blocks, dtype=float))
