"""HARQ on the uplink: transport blocks that fail with their BLER and are sent again.

Model
-----
A payload of ``B`` bits sent at rate ``r`` (bit/s) by a client whose link has SINR ``gamma`` is
split into ``n = ceil(B / max(r tau, 24))`` transport blocks of ``B / n`` bits, ``tau`` the slot
(``slot_s``: the allocation carries ``r tau`` information bits per slot, and a transport block is
what one slot carries).  The slot is the cell's: ``1 ms / 2^mu`` for ``cell.numerology`` ``mu``
(TS 38.211 clause 4.3.2; 0.5 ms at the default 30 kHz), which the run passes; a ``slot_s`` given
in the scenario must equal it (a cell has one numerology).  The rate model (``mcs_table``) picks
the CQI at ``gamma``; its BLER curve (:mod:`sfl_sim.channel.link.bler`) and the block's code-block
segmentation give ``TBLER(gamma)``, the probability that a block decoded at SINR ``gamma`` fails.
All copies of a block see the same ``gamma``: a HARQ round trip (milliseconds) is short against the
fading's coherence block.  ``q_m``, the probability that the first ``m`` copies of a block all fail, is

- without combining, ``q_m = TBLER(gamma)^m``: each copy is decoded on its own, with its own
  noise, so the copies fail independently;
- with chase combining, ``q_m = TBLER(m gamma)``: the receiver adds the copies' soft bits, so the
  SINRs add (linear), and after ``m`` copies the block has failed exactly when the decode of the
  ``m`` combined copies fails (the events are nested: a copy that adds SINR does not undo an
  earlier success).  Multiplying ``TBLER(k gamma)`` over ``k <= m`` instead would treat the
  combined decodes as independent, which they are not (they share the first copies' noise): with
  ``TBLER(gamma) = 0.5`` and ``TBLER(2 gamma) = 0.1`` it gives 0.05 where the block still fails
  after two copies with probability 0.1.  (5G-LENA computes that product: ``NrEesmCc::ComputeSINR``
  sums the copies' SINRs, model/nr-eesm-cc.cc, and ``NrSpectrumPhy`` draws a fresh uniform per
  reception against the resulting TBLER, model/nr-spectrum-phy.cc; we take the nested view.)

A block is sent until it decodes, at most ``M`` (``max_transmissions``) times.  With ``q_0 = 1``:

- ``P(N > m) = q_m`` for the transmissions ``N`` of a block, ``m < M``;
- expected transmissions per block ``E[N] = sum_{m=0}^{M-1} q_m`` (without combining
  ``(1 - p^M) / (1 - p)``);
- a block still fails after ``M`` copies with probability ``q_M``; the payload is lost when any of
  its blocks is: ``P_loss = 1 - (1 - q_M)^n``.

Time.  NR runs several HARQ processes in parallel (up to 16 per cell, TS 38.321 clause 5.4.2.1), so
a client keeps sending new blocks while earlier ones wait for their acknowledgement: a copy costs
its air time ``B / (n r)``, and the round trip ``harq_rtt_s`` (send, decode, feedback, resend)
delays the payload only by the retransmission rounds of its slowest block::

    T = (sum_i N_i) B / (n r) + (max_i N_i - 1) harq_rtt_s.

``mode: sampled`` draws each block's ``N_i`` and failure from one uniform per block of the named
``harq`` stream (inverse CDF: ``N_i = 1 + #{1 <= m < M : u_i < q_m}``, failed when
``u_i < q_M``).  ``mode: expected`` is deterministic: ``T = E[N] B / r + (E[max_i N_i] - 1)
harq_rtt_s`` with ``E[max_i N_i] = sum_{m=0}^{M-1} (1 - (1 - q_m)^n)``, ``n (E[N] - 1)``
retransmissions (a real number), and the payload lost when that is more likely than not
(``P_loss >= 1/2``).  A lost payload is an outage: the cell's outage policy decides what follows.
The default ``harq_rtt_s`` is LTE's synchronous uplink HARQ round trip of 8 subframes (8 ms,
TS 36.213 clause 8), a common value for NR FR1 at 15 kHz as well.

Kind
----
HARQ is a component kind (``harq``, :data:`HARQ`, protocol :class:`sfl_sim.channel.protocols.HarqModel`),
named by ``cell.harq``; the engine builds it with the cell's rate model as its first argument.

- ``none``: :class:`NoHarq`, each payload goes once at the link rate (the default: no HARQ; the
  engine then takes its plain upload path, the outage policy alone decides a failure).
- ``harq``: :class:`Harq`, the model above (needs ``cell.rate: mcs_table``).
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np

from sfl_sim.channel.limits import HARQ_RTT_S, MAX_TRANSMISSIONS, SLOT_S
from sfl_sim.channel.link.bler import BlerCurve, code_blocks, cqi_curves, transport_block_error_rate
from sfl_sim.channel.link.cqi_tables import CQI_TABLES
from sfl_sim.channel.link.resource_grid import DEFAULT_NUMEROLOGY, slot_duration_s
from sfl_sim.channel.protocols import HarqModel, HarqSend
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel
from sfl_sim.kit.registry import Registry

__all__ = ["HARQ", "Harq", "NoHarq", "HarqSend", "HARQ_MODES"]

#: The HARQ models; ``rate`` (the cell's rate model) is passed by the engine, never by a scenario.
HARQ = Registry("harq", protocol=HarqModel, supplied=("rate",))

HARQ_MODES = ("expected", "sampled")
_MIN_TB_BITS = 24.0


@HARQ.register("none")
class NoHarq(Component):
    """No HARQ: each payload goes once at the link rate, and arrives (the default).

    A link abstraction without block errors (Shannon capacity): the outage policy alone decides
    whether an upload fails.  The engine does not call it: with ``none`` it takes its plain upload
    path, which times a payload the same way.

    Parameters
    ----------
    rate : object, optional
        The cell's rate model (not used).
    """

    supplied_args = ("rate",)

    def __init__(self, rate: Any = None, **params: Any) -> None:
        super().__init__(**params)
        self.rate = rate

    def send(self, payload_bits: float, rate_bps: float, sinr_db: float,
             rng: np.random.Generator | None = None) -> HarqSend:
        """``payload_bits / rate_bps`` seconds, no retransmission, delivered, one block."""
        return HarqSend(payload_bits / rate_bps, 0.0, True, 1)

    def slot_block(self, rate_bps: Any, sinr_db: Any) -> tuple[np.ndarray, np.ndarray]:
        """Error rate 0 and one transmission per link (NaN where the rate is 0)."""
        rates = np.asarray(rate_bps, dtype=float).ravel()
        on = rates > 0
        return np.where(on, 0.0, np.nan), np.where(on, 1.0, np.nan)


@HARQ.register("harq")
class Harq(Component):
    """Uplink HARQ over an ``mcs_table`` rate: transport blocks fail with their BLER and are resent.

    Parameters
    ----------
    rate : channel.McsTableRate
        The cell's rate model: it picks the CQI at each SINR (and so the BLER curve).

    Attributes
    ----------
    slot_s : float
        The slot in use, s: ``slot_s`` when given, else numerology 1's (a run passes its cell's).

    Raises
    ------
    ValueError
        For a parameter out of range or a rate model without CQIs.
    """

    supplied_args = ("rate",)

    class Params(ParamsModel):
        mode: Annotated[Literal["expected", "sampled"], Doc(
            "``expected``: deterministic expected transmissions; ``sampled``: draws from the ``harq`` stream.")] = \
            "expected"
        max_transmissions: Annotated[int, MAX_TRANSMISSIONS, Doc(
            "Copies per transport block in all, in [1, 64] (1: no retransmission).")] = 4
        harq_rtt_s: Annotated[float, HARQ_RTT_S, Doc("HARQ round-trip time, s, in [0, 1].")] = 8e-3
        chase_combining: Annotated[bool, Doc(
            "Whether the receiver combines the copies of a block (their SINRs add, linear).")] = False
        slot_s: Annotated[Annotated[float, SLOT_S] | None, Doc(
            "Slot duration, s, in [1/32 ms, 10 ms]: a transport block is what the allocation carries in one slot; "
            "null: the cell's slot, 1 ms / 2^mu for cell.numerology mu (TS 38.211 clause 4.3.2), which a run "
            "passes (a value given must equal it); built without one, numerology 1's 0.5 ms.")] = None

    params: Params

    def __init__(self, rate: Any, **params: Any) -> None:
        if not (hasattr(rate, "cqi") and getattr(rate, "table", None) in CQI_TABLES):
            raise ValueError(f"rate: HARQ needs an MCS rate model (cell.rate: mcs_table), whose CQIs have BLER "
                             f"curves; got {rate!r}")
        super().__init__(**params)
        self.rate = rate
        rows = CQI_TABLES[rate.table]
        self._curves = cqi_curves(rate.table)
        self._code_rate = [r[2] / 1024.0 for r in rows]
        given = self.params.slot_s
        self.slot_s = slot_duration_s(DEFAULT_NUMEROLOGY) if given is None else given

    def __repr__(self) -> str:
        p = self.params
        return (f"Harq(mode={p.mode!r}, max_transmissions={p.max_transmissions!r}, "
                f"harq_rtt_s={p.harq_rtt_s!r}, chase_combining={p.chase_combining!r}, slot_s={self.slot_s!r})")

    def blocks(self, payload_bits: float, rate_bps: float) -> int:
        """Transport blocks of a payload: ``ceil(B / max(r slot_s, 24))`` (>= 1; 24 bits is NR's
        smallest transport block, TS 38.214 Table 5.1.3.2-1)."""
        return max(1, math.ceil(payload_bits / max(rate_bps * self.slot_s, _MIN_TB_BITS)))

    def failure_chain(self, payload_bits: float, rate_bps: float, sinr_db: float) -> np.ndarray:
        """``q_0 .. q_M``: probability that the first ``m`` copies of a block all fail.

        Parameters
        ----------
        payload_bits, rate_bps : float
            The payload (bits, > 0) and its rate (bit/s, > 0).
        sinr_db : float
            SINR of the link, dB.

        Returns
        -------
        numpy.ndarray, shape (max_transmissions + 1,)
            Non-increasing, ``q_0 = 1``; all ones where the SINR is below CQI 1.
        """
        sinr = 10.0 ** (sinr_db / 10.0)
        # the CQI behind the rate: with the transport-block rule it depends on the share, which the rate tells
        cqi = int(self.rate.cqi_of_rate(sinr, rate_bps)) if hasattr(self.rate, "cqi_of_rate") \
            else int(self.rate.cqi(sinr))
        m = np.arange(1, self.params.max_transmissions + 1)
        if cqi < 1:
            return np.ones(self.params.max_transmissions + 1)
        n = self.blocks(payload_bits, rate_bps)
        cb_bits, n_cb = code_blocks(payload_bits / n, self._code_rate[cqi - 1])
        curve = self._curves[cqi - 1]
        if not self.params.chase_combining:  # independent copies: TBLER(gamma)^m
            p = transport_block_error_rate(float(curve.bler(sinr_db, cb_bits)), n_cb)
            return np.concatenate(([1.0], np.cumprod(np.full(m.size, p))))
        with np.errstate(divide="ignore"):
            sinr_m_db = 10.0 * np.log10(10.0 ** (sinr_db / 10.0) * m)
        # nested: q_m = TBLER(m gamma); the first copy reads the curve as the rate model does (held at
        # the table's end), combined copies continue it past the end
        bler = _beyond_the_table(curve, sinr_m_db, cb_bits)
        bler[0] = float(curve.bler(sinr_db, cb_bits))
        q = transport_block_error_rate(bler, n_cb)
        return np.concatenate(([1.0], np.minimum.accumulate(q)))

    def slot_block(self, rate_bps: Any, sinr_db: Any) -> tuple[np.ndarray, np.ndarray]:
        """Error rate of a first transmission and expected transmissions of one slot's transport block.

        Parameters
        ----------
        rate_bps, sinr_db : array_like, shape (k,)
            Rate (bit/s) and SINR (dB) of each link.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray), each shape (k,)
            ``p_1`` (the transport-block error rate at the link's CQI) and ``E[N]`` of a block of
            ``rate x slot_s`` bits; NaN where the rate is 0 (no CQI: out of range).
        """
        rates = np.asarray(rate_bps, dtype=float).ravel()
        sinrs = np.asarray(sinr_db, dtype=float).ravel()
        first = np.full(rates.shape, np.nan)
        mean = np.full(rates.shape, np.nan)
        for i, (r, s) in enumerate(zip(rates.tolist(), sinrs.tolist(), strict=True)):
            if r > 0:
                q = self.failure_chain(max(r * self.slot_s, _MIN_TB_BITS), r, s)
                first[i], mean[i] = q[1], q[:self.params.max_transmissions].sum()
        return first, mean

    def send(self, payload_bits: float, rate_bps: float, sinr_db: float,
             rng: np.random.Generator | None = None) -> HarqSend:
        """Time, retransmissions and fate of one payload (see the module docstring).

        Parameters
        ----------
        payload_bits : float
            Payload, bits (> 0).
        rate_bps : float
            Its rate on the allocation, bit/s (> 0).
        sinr_db : float
            SINR of the link, dB.
        rng : numpy.random.Generator, optional
            The ``harq`` stream; required in ``sampled`` mode.

        Returns
        -------
        HarqSend
        """
        n = self.blocks(payload_bits, rate_bps)
        q = self.failure_chain(payload_bits, rate_bps, sinr_db)
        copy_s = payload_bits / (n * rate_bps)
        big_m = self.params.max_transmissions
        if self.params.mode == "expected":
            mean_n = float(q[:big_m].sum())
            mean_max = float((1.0 - (1.0 - q[:big_m]) ** n).sum())
            lost = 1.0 - (1.0 - q[big_m]) ** n >= 0.5
            return HarqSend(n * mean_n * copy_s + (mean_max - 1.0) * self.params.harq_rtt_s, n * (mean_n - 1.0),
                            not lost, n)
        if rng is None:
            raise ValueError("rng: HARQ mode sampled draws from the harq stream; pass a numpy Generator")
        u = rng.random(n)
        # q is non-increasing: the copies of block i are 1 + #{1 <= m < M : u_i < q_m}.
        copies = 1 + np.searchsorted(-q[1:big_m], -u, side="left")
        failed = bool(np.any(u < q[big_m]))
        total = int(copies.sum())
        return HarqSend(total * copy_s + (int(copies.max()) - 1) * self.params.harq_rtt_s, float(total - n),
                        not failed, n)


def _beyond_the_table(curve: BlerCurve, sinr_db: np.ndarray, cb_bits: float) -> np.ndarray:
    """The curve's BLER at combined SINRs, continued past its last tabulated SINR.

    The tables stop at 20 or 25 dB, where a high-rate curve may not have fallen to zero; held flat
    there (as the rate model and a first copy read it), combining copies would stop helping at the
    table's end.  Our reading (no source gives
    the curves beyond their last point): past it the waterfall goes on at the slope, in log10 BLER
    per dB, of its last tabulated step (never rising; a flat end stays flat).
    """
    last_db = float(curve.snr_db[-1])
    out = np.asarray(curve.bler(sinr_db, cb_bits), dtype=float)
    beyond = sinr_db > last_db
    if not np.any(beyond) or curve.snr_db.size < 2:
        return out
    step_db = last_db - float(curve.snr_db[-2])
    at_end, before = (float(curve.bler(x, cb_bits)) for x in (last_db, last_db - step_db))
    if at_end <= 0.0 or before <= 0.0:
        return out
    slope = min(0.0, (np.log10(at_end) - np.log10(before)) / step_db)
    out[beyond] = at_end * np.power(10.0, slope * (sinr_db[beyond] - last_db))
    return out
