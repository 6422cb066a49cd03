"""The per-client record of one round: what the radio did for each cohort client, and where its time went.

:func:`client_rounds` reads a round just run (:attr:`sfl_sim.engine.Simulator.last_round`, before
the cell moves) and returns one :class:`ClientRound` per cohort client; the runner writes them to
``clients.csv`` (:data:`sfl_sim.runs.rundir.schema.CLIENTS_COLUMNS`, whose names the fields carry).
It only reads: no random draw, no event, nothing the engine times or counts changes.

The time split
--------------
A client's *span* runs from the round's start — before any wait for clients to come online, so
that it is measured like ``rounds.csv``'s ``round_sim_time_s`` — to the end of its part of the
round: the moment it left (:attr:`RoundNotes.left_s <sfl_sim.engine.RoundNotes>`: payload lost
after outage, battery empty, gone offline), else the round's end (a client the straggler policy
dropped does not know it was dropped and stays to the end, as the energy ledger charges it).  The
span is cut into parts from what the engine noted, each instant counted once, for the first of:

1. ``compute_s``: one of the client's ``compute`` intervals;
2. ``uplink_air_s``: one of its ``uplink`` intervals (every attempt; a HARQ transfer's copies);
3. ``harq_wait_s``: one of its HARQ waits (:attr:`RoundNotes.harq_waits`);
4. ``downlink_s``: one of its ``downlink`` intervals;
5. ``wait_server_s``: none of those, while the server computes (:attr:`RoundNotes.server_busy`);
6. ``wait_others_s``: none of those, the server idle: it waits for the other clients;

and ``availability_wait_s``, the wait before the round's clients were selected.  Intervals are
cut at the span's ends (a process stopped at the round's end noted its full length).  So the
parts add up to the span (to float rounding of the sums), and the longest span of a round equals
its duration whenever a client stayed to the end.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sfl_sim.channel.radio_time import doppler_speed_m_per_s, fading_doppler_hz
from sfl_sim.channel.units import linear_to_db
from sfl_sim.engine.accounting import Busy, ClientTraffic, Interval, RoundNotes
from sfl_sim.engine.band import Grants
from sfl_sim.engine.outcome import LossReason

if TYPE_CHECKING:
    from sfl_sim.channel import Cell
    from sfl_sim.engine.simulator import RoundContext, Simulator

__all__ = ["TIME_PARTS", "ClientRound", "client_rounds", "context_clients", "time_split", "uploads_fading_gain"]

#: The parts of a client's span, in the order an instant is given to the first that applies.
TIME_PARTS: tuple[str, ...] = ("compute_s", "uplink_air_s", "harq_wait_s", "downlink_s", "wait_server_s",
                               "wait_others_s", "availability_wait_s")

#: The part each busy kind's intervals count for (its rank in :data:`TIME_PARTS`).
_RANK_OF_KIND = {"compute": 0, "uplink": 1, "downlink": 3}
_HARQ_WAIT_RANK = 2
_OWN_PARTS = 4  # compute, uplink air, HARQ wait, downlink: the client's own activity


@dataclass(frozen=True)
class ClientRound:
    """One cohort client in one round (a ``clients.csv`` row without its round; names as there).

    Attributes
    ----------
    client : int
    dropped : str or None
        Why it left the round (a :data:`~sfl_sim.engine.outcome.LossReason`), None when kept.
    distance_m, pathloss_db, shadowing_db : float
        Its large-scale channel in the round.
    los : int
        1 LOS, 0 NLOS, -1 when the path-loss model has no LOS state.
    fading_gain_db, snr_db, sinr_db : float
        The fading draw its uplink rate was last computed with, and the SNR (thermal noise only)
        and SINR there, dB.
    cqi : int or None
        The CQI at that SINR (None unless the rate model has CQIs).
    spectral_efficiency_bps_per_hz : float
        ``uplink_rate_bps / uplink_share_hz`` (NaN on a zero share).
    uplink_share_hz, tx_power_w, uplink_rate_bps : float
        Its share of the uplink, its transmit power on it, its rate there.
    downlink_rate_bps : float
        Its unicast downlink rate (NaN with the ``ideal`` downlink).
    traffic : ClientTraffic
        What it sent and received.
    client_flops : float
        FLOPs it computed (its ``compute`` notes).
    span_s : float
        Its span in the round (module docstring), s.
    parts_s : dict of str to float
        The span's parts, keyed by :data:`TIME_PARTS`, s.
    uplink_granted_rb_mean, uplink_rb_s : float
        Under a dynamic scheduler: the RBs it was granted, on average over its time in the band
        (0 while it waited for a grant), and in all (RB-seconds); NaN with the static split.
    uplink_transport_blocks : int or None
        Transport blocks it was granted (a slot-form scheduler); None otherwise.
    uplink_scheduled_rate_bps : float
        The bits it sent on its grants over its time in the band (the rate the scheduler gave it,
        waits for a grant included); NaN with the static split.
    uplink_sinr_used_db : float
        The SINR of its grants (its power on the granted RBs), the time-weighted mean of the dB
        values over the time it held RBs; NaN with the static split or without a grant.
    speed_m_per_s : float
        The speed its fading's Doppler is computed from (:func:`doppler_speed_m_per_s`), m/s.
    doppler_hz : float
        Its time-varying fading's maximum Doppler ``f_D = v f_c / c``, Hz; NaN without one.
    fading_gain_uploads_db : float
        The fading power gain at the start of each of its uplink transfers in the round, the
        linear mean over them, dB (:func:`uploads_fading_gain`).
    cell : int
        Its serving cell at the round's start (0 with one cell; ``NO_CELL``, -1, while it had no link).
    """

    client: int
    dropped: LossReason | None
    distance_m: float
    los: int
    pathloss_db: float
    shadowing_db: float
    fading_gain_db: float
    snr_db: float
    sinr_db: float
    cqi: int | None
    spectral_efficiency_bps_per_hz: float
    uplink_share_hz: float
    tx_power_w: float
    uplink_rate_bps: float
    downlink_rate_bps: float
    traffic: ClientTraffic
    client_flops: float
    span_s: float
    parts_s: dict[str, float]
    uplink_granted_rb_mean: float = math.nan
    uplink_rb_s: float = math.nan
    uplink_transport_blocks: int | None = None
    uplink_scheduled_rate_bps: float = math.nan
    uplink_sinr_used_db: float = math.nan
    speed_m_per_s: float = math.nan
    doppler_hz: float = math.nan
    fading_gain_uploads_db: float = math.nan
    cell: int = 0

    def fields(self) -> dict[str, float | int | None]:
        """Every numeric field by its ``clients.csv`` name (traffic and parts spread out)."""
        t = self.traffic
        return {"client": self.client, "cell": self.cell, "distance_m": self.distance_m, "los": self.los,
                "pathloss_db": self.pathloss_db, "shadowing_db": self.shadowing_db,
                "fading_gain_db": self.fading_gain_db, "snr_db": self.snr_db, "sinr_db": self.sinr_db,
                "cqi": self.cqi, "spectral_efficiency_bps_per_hz": self.spectral_efficiency_bps_per_hz,
                "uplink_share_hz": self.uplink_share_hz, "tx_power_w": self.tx_power_w,
                "uplink_rate_bps": self.uplink_rate_bps, "downlink_rate_bps": self.downlink_rate_bps,
                "uplink_granted_rb_mean": self.uplink_granted_rb_mean, "uplink_rb_s": self.uplink_rb_s,
                "uplink_transport_blocks": self.uplink_transport_blocks,
                "uplink_scheduled_rate_bps": self.uplink_scheduled_rate_bps,
                "uplink_sinr_used_db": self.uplink_sinr_used_db,
                "speed_m_per_s": self.speed_m_per_s, "doppler_hz": self.doppler_hz,
                "fading_gain_uploads_db": self.fading_gain_uploads_db,
                "uplink_attempts": t.uplink_attempts, "retransmissions": t.retransmissions,
                "dropped_transmissions": t.dropped_transmissions, "harq_retransmissions": t.harq_retransmissions,
                "uplink_bytes": t.uplink_bytes, "downlink_bytes": t.downlink_bytes,
                "client_flops": self.client_flops, "span_s": self.span_s, **self.parts_s}


class _ServerBusy:
    """The server's computing time as a sorted union of intervals, to measure its overlap with any stretch."""

    def __init__(self, intervals: list[Interval]) -> None:
        starts: list[float] = []
        ends: list[float] = []
        for start, end in sorted(intervals):
            if end <= start:
                continue
            if ends and start <= ends[-1]:
                ends[-1] = max(ends[-1], end)
            else:
                starts.append(start)
                ends.append(end)
        self._starts, self._ends = starts, ends
        self._before = [0.0]  # busy seconds before each interval starts
        for start, end in zip(starts, ends, strict=True):
            self._before.append(self._before[-1] + (end - start))

    def _busy_until(self, t: float) -> float:
        """Seconds the server computed before ``t``."""
        i = bisect.bisect_right(self._starts, t) - 1
        if i < 0:
            return 0.0
        return self._before[i] + (min(t, self._ends[i]) - self._starts[i])

    def overlap_s(self, start_s: float, end_s: float) -> float:
        """Seconds of ``[start_s, end_s]`` the server computed."""
        if not self._starts or end_s <= self._starts[0] or start_s >= self._ends[-1]:
            return 0.0
        return self._busy_until(end_s) - self._busy_until(start_s)


def time_split(busy: list[Busy], harq_waits: list[Interval], server: _ServerBusy | list[Interval],
               start_s: float, end_s: float) -> dict[str, float]:
    """The parts of a client's time in ``[start_s, end_s]`` (all of :data:`TIME_PARTS` but
    ``availability_wait_s``), from its busy notes, HARQ waits and the server's computing intervals.

    Parameters
    ----------
    busy : list of Busy
        The client's busy intervals in the round.
    harq_waits : list of (float, float)
        Its HARQ waits.
    server : list of (float, float), or the round's server intervals already merged
        When the server computed.
    start_s, end_s : float
        The stretch to split (``end_s >= start_s``).

    Returns
    -------
    dict of str to float
        Seconds per part; they add up to ``end_s - start_s`` (to float rounding).
    """
    server_busy = server if isinstance(server, _ServerBusy) else _ServerBusy(server)
    events: list[tuple[float, int, int]] = []  # (time, +1 start / -1 end, rank)
    for rank, lo, hi in [*((_RANK_OF_KIND[b.kind], b.start_s, b.end_s) for b in busy),
                         *((_HARQ_WAIT_RANK, lo, hi) for lo, hi in harq_waits)]:
        lo, hi = max(lo, start_s), min(hi, end_s)
        if hi > lo:
            events += [(lo, 1, rank), (hi, -1, rank)]
    events.sort()
    own = [0.0] * _OWN_PARTS
    active = [0] * _OWN_PARTS
    wait_server = wait_others = 0.0
    now = start_s
    for t, step, rank in [*events, (end_s, 0, 0)]:
        if t > now:
            first = next((r for r in range(_OWN_PARTS) if active[r]), None)
            if first is not None:
                own[first] += t - now
            else:  # idle: waiting for the server while it computes, else for the others
                on_server = server_busy.overlap_s(now, t)
                wait_server += on_server
                wait_others += (t - now) - on_server
            now = t
        active[rank] += step
    return {"compute_s": own[0], "uplink_air_s": own[1], "harq_wait_s": own[2], "downlink_s": own[3],
            "wait_server_s": wait_server, "wait_others_s": wait_others}


def client_rounds(sim: Simulator, waited_s: float = 0.0) -> list[ClientRound]:
    """The per-client record of the round ``sim`` just ran (its :attr:`~Simulator.last_round`),
    read before the cell moves on; in cohort order.

    Parameters
    ----------
    sim : Simulator
    waited_s : float
        How long the clock waited, before the round, for anyone to come online (it belongs to the
        round: every client's span starts before it).

    Returns
    -------
    list of ClientRound
    """
    return context_clients(sim.last_round, sim.cell, sim.now_s, waited_s)


def context_clients(ctx: RoundContext, cell: Cell, end_s: float, waited_s: float = 0.0) -> list[ClientRound]:
    """The per-client record of one round context ``ctx`` that ended at ``end_s`` (a synchronous
    round, or an asynchronous run's dispatch group once its last client arrived), with the large-scale
    channel ``cell`` holds now; in cohort order.

    Parameters
    ----------
    ctx : RoundContext
    cell : Cell
    end_s : float
        When the context ended (a client that never left stays to it).
    waited_s : float
        The wait for anyone to come online before it (:func:`client_rounds`).

    Returns
    -------
    list of ClientRound
    """
    notes: RoundNotes = ctx.notes
    ids = ctx.cohort
    server = _ServerBusy(notes.server_busy)
    los = cell.los
    distance, pathloss, shadowing = cell.distance_m[ids], cell.pathloss_db[ids], cell.shadowing_db[ids]
    los_of = np.full(ids.shape, -1) if los is None else los[ids].astype(int)
    cohort = ids.tolist()
    sinr_db = np.array([ctx.uplink_snr_db(k) for k in cohort], dtype=float)
    # The rate model saw the noise PSD times the noise rise, so its SNR is the SINR; the SNR over
    # thermal noise alone is that times the noise rise (the link budget, sfl_sim.channel.link.budget).
    snr_db = sinr_db + float(linear_to_db(cell.noise_rise_linear))
    fading = np.array([ctx.uplink_fading_gain(k) for k in cohort], dtype=float)
    fading_db = linear_to_db(fading)
    cqi_of = getattr(cell.rate, "cqi", None)
    cqi = None if cqi_of is None else np.asarray(cqi_of(10.0 ** (sinr_db / 10.0)), dtype=int)
    scheduled = ctx.uplink_scheduled
    speed = doppler_speed_m_per_s(cell.radio)[ids]
    doppler = fading_doppler_hz(cell.radio)[ids]
    serving = ctx.start_cells  # each client's serving cell at the round's start
    out = []
    for i, k in enumerate(cohort):
        until_s = max(ctx.start_s, min(end_s, notes.left_s.get(k, math.inf)))
        busy = notes.busy.get(k, [])
        parts = time_split(busy, notes.harq_waits.get(k, []), server, ctx.start_s, until_s)
        parts["availability_wait_s"] = waited_s
        share_hz, rate_bps = ctx.uplink_share_hz(k), ctx.uplink_rate_bps(k)
        downlink_bps = ctx.downlink_rate_bps(k)
        granted = _granted(ctx.uplink_grants(k)) if scheduled else {}
        uploads = uploads_fading_gain(cell, k, busy, float(fading[i]))
        uploads_db = math.nan if math.isnan(uploads) else float(linear_to_db(uploads))
        out.append(ClientRound(
            client=k, dropped=notes.dropped.get(k), distance_m=float(distance[i]), los=int(los_of[i]),
            pathloss_db=float(pathloss[i]), shadowing_db=float(shadowing[i]), fading_gain_db=float(fading_db[i]),
            snr_db=float(snr_db[i]), sinr_db=float(sinr_db[i]), cqi=None if cqi is None else int(cqi[i]),
            spectral_efficiency_bps_per_hz=rate_bps / share_hz if share_hz > 0 else math.nan,
            uplink_share_hz=share_hz, tx_power_w=ctx.uplink_tx_power_w(k), uplink_rate_bps=rate_bps,
            downlink_rate_bps=math.nan if downlink_bps is None else downlink_bps,
            traffic=notes.traffic.get(k, ClientTraffic()),
            client_flops=float(sum(b.flops for b in busy if b.kind == "compute")),
            span_s=waited_s + (until_s - ctx.start_s), parts_s=parts, speed_m_per_s=float(speed[i]),
            doppler_hz=float(doppler[i]), fading_gain_uploads_db=uploads_db, cell=int(serving[i]), **granted))
    return out


def uploads_fading_gain(cell: Cell, client: int, busy: list[Busy], last_gain: float) -> float:
    """The fading power gain of ``client`` at the start of each of its uplink transfers in the round
    (every ``uplink`` interval: each attempt, each HARQ copy), the linear mean over them.

    Under a time-varying fading the gains are the radio state's at those times
    (:meth:`RadioState.fading_at <sfl_sim.channel.radio_state.RadioState.fading_at>`: a deterministic
    function of the time, so reading them draws nothing and changes nothing); NaN when it sent
    nothing.  Otherwise the gains drawn per transfer are not kept: ``last_gain``, the draw its rate
    was last computed with (``fading_gain_db``), as the round's record has it.
    """
    radio = cell.radio
    if not radio.time_varying:
        return last_gain
    starts = [b.start_s for b in busy if b.kind == "uplink"]
    if not starts:
        return math.nan
    return float(np.mean(radio.fading_at(np.full(len(starts), client), np.array(starts))))


def _granted(grants: Grants | None) -> dict[str, Any]:
    """A client's grant columns under a dynamic scheduler (:class:`ClientRound`); a client that
    sent nothing through the band was granted nothing (rates and SINR undefined)."""
    if grants is None:
        return {"uplink_rb_s": 0.0}
    in_band_s, granted_s = grants.in_band_s, grants.granted_s
    return {"uplink_granted_rb_mean": grants.rb_s / in_band_s if in_band_s > 0 else math.nan,
            "uplink_rb_s": grants.rb_s, "uplink_transport_blocks": grants.transport_blocks,
            "uplink_scheduled_rate_bps": grants.bits / in_band_s if in_band_s > 0 else math.nan,
            "uplink_sinr_used_db": grants.sinr_db_s / granted_s if granted_s > 0 else math.nan}
