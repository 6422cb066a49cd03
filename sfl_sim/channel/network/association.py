"""Which cell serves each client: RSRP, initial association, A3 handover, radio link failure.

Pure numpy, evaluated on given series; nothing here is wired into the
:class:`~sfl_sim.channel.Cell` or the engine yet.

RSRP
----
TS 38.215 clause 5.1.1 defines SS-RSRP as the linear average of the power of the resource
elements (REs) that carry the secondary synchronisation signal: a per-RE power.  With the cell's
power spread evenly over the 12 subcarriers of each resource block (TS 38.211 clause 4.4.4.1,
``N_sc^RB = 12``), :func:`rsrp_dbm` computes

    RSRP = P_RB - 10 log10(12) - CL,

``P_RB`` the transmit power per resource block (dBm) and ``CL`` the coupling loss (dB: path loss
plus shadowing less antenna gains, > 0 for a loss).  Initial association is to the cell of
strongest RSRP (:func:`strongest_cell`).

Event A3 (TS 38.331 clause 5.5.4.4)
----------------------------------
A neighbour ``n`` of the serving cell (SpCell) ``p`` enters the event when

    Mn + Ofn + Ocn - Hys > Mp + Ofp + Ocp + Off            (A3-1, entering)

and leaves it when ``Mn + Ofn + Ocn + Hys < Mp + Ofp + Ocp + Off`` (A3-2, leaving): ``M`` the RSRP
(dBm), ``Oc`` the cell individual offsets, ``Hys`` the hysteresis, ``Off`` the a3-Offset (dB).  The
measurement-object offsets ``Of`` of one frequency are equal and cancel (intra-frequency only).
The report is triggered (TS 38.331 clause 5.5.4.1) when the entering condition holds for all
measurements during ``timeToTrigger``: each neighbour has a timer that starts at the first sample
where A3-1 holds and is reset at any sample where it does not (a sample between A3-1 and A3-2,
inside the hysteresis band, resets it too: "for all measurements").  The leaving condition only
removes a cell that has already triggered from the report list; here a triggered cell is handed
over to at once, so :class:`A3Handover` never needs it (:func:`a3_conditions` returns both).

:class:`A3Handover` hands over at the sample where the timer reaches ``timeToTrigger`` (no
preparation delay between report and command: our simplification), to the triggered neighbour of
largest ``Mn + Ocn`` when several trigger together; the client then has no link for
``interruption_time_s`` and its timers restart.

Radio link failure
------------------
The UE declares radio link failure when T310 expires (TS 38.331 clause 5.3.10.3); T310 runs
from ``N310`` consecutive out-of-sync indications until ``N311`` in-sync ones, an out-of-sync
indication meaning the hypothetical PDCCH BLER is above ``Q_out`` (TS 38.133 clause 8.1, 10 %, as
read in secondary sources).  Here: the SINR of the serving link below ``q_out_db`` at every sample
for ``t310_s`` (the ``N310`` indications' own duration, one evaluation period each, is left to the
choice of ``t310_s``); then an ``rlf`` event, no link for ``reestablishment_time_s``, and
re-association to the cell of strongest RSRP at the first sample after it.  An RLF and an A3
trigger at the same sample: the RLF wins (the link is already lost).

Parameter values
----------------
The allowed ``timeToTrigger`` values are TS 38.331's ``TimeToTrigger`` enumeration (0, 40, 64, 80,
100, 128, 160, 256, 320, 480, 512, 640, 1024, 1280, 2560, 5120 ms) and the allowed T310 values its
``t310`` enumeration in ``RLF-TimersAndConstants`` (0, 50, 100, 200, 500, 1000, 2000, 4000, 6000 ms),
as open RRC implementations reproduce them (our reading; the ASN.1 itself was not read here).  The
hysteresis spans TS 38.331's ``Hysteresis`` (0 to 30 half-dB steps: 0 to 15 dB) and the a3-Offset
its ``MeasTriggerQuantityOffset`` (-30 to 30 half-dB steps: -15 to 15 dB), as ns-3's LTE RRC reads
the same fields of TS 36.331 clause 6.3.5; steps finer than 0.5 dB are accepted.  Defaults:
hysteresis 3 dB and timeToTrigger 256 ms are ns-3's ``A3RsrpHandoverAlgorithm`` defaults
(``src/lte/model/a3-rsrp-handover-algorithm.cc``, which calls 256 ms the median of the allowed
values); T310 1000 ms (a typical value in operator guides, our choice among the allowed ones);
the interruption time, re-establishment time and ``Q_out`` SINR are our choices (see their
fields): TS 38.133 clauses 6.1.1.2.2 (handover interruption time) and 6.2.1 (re-establishment
delay) give the requirements (not read here), and the SINR of 10 % PDCCH BLER depends on the
receiver.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from sfl_sim.channel.limits import SINR_MIN_DB
from sfl_sim.channel.network.protocols import NO_CELL, HandoverEvent, HandoverRule, HandoverTrace
from sfl_sim.kit.checks import invalid
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, Field, ParamsModel
from sfl_sim.kit.registry import Registry

__all__ = ["HANDOVER", "A3Handover", "A3State", "rsrp_dbm", "strongest_cell", "a3_conditions", "SUBCARRIERS_PER_RB",
           "TIME_TO_TRIGGER_S", "T310_S"]

HANDOVER = Registry("handover", protocol=HandoverRule)

#: Subcarriers per resource block (TS 38.211 clause 4.4.4.1).
SUBCARRIERS_PER_RB = 12
#: TS 38.331 ``TimeToTrigger`` values, seconds (see the module docstring for the source).
TIME_TO_TRIGGER_S = (0.0, 0.04, 0.064, 0.08, 0.1, 0.128, 0.16, 0.256, 0.32, 0.48, 0.512, 0.64, 1.024, 1.28, 2.56,
                     5.12)
#: TS 38.331 ``t310`` values, seconds (see the module docstring for the source).
T310_S = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 6.0)
#: Slack on a timer's expiry, seconds: sample times built as ``k * dt`` carry rounding errors far
#: below it, and no timer value is finer than 1 ms.
_TIME_TOLERANCE_S = 1e-9


def rsrp_dbm(coupling_loss_db: Any, tx_power_per_rb_dbm: Any) -> np.ndarray:
    """RSRP (per resource element) from coupling losses: ``P_RB - 10 log10(12) - CL``.

    Parameters
    ----------
    coupling_loss_db : array_like, shape (n_clients, n_cells[, n_times])
        Coupling loss of every (client, cell) in dB (path loss + shadowing - antenna gains).
    tx_power_per_rb_dbm : float or array_like, shape (n_cells,)
        Each cell's transmit power per resource block, dBm (broadcast over cells: axis 1).

    Returns
    -------
    numpy.ndarray
        RSRP in dBm, the shape of ``coupling_loss_db``.
    """
    loss = np.asarray(coupling_loss_db, dtype=float)
    if loss.ndim not in (2, 3) or not np.all(np.isfinite(loss)):
        raise ValueError(f"coupling_loss_db: got an array of shape {loss.shape}; allowed: finite dB values of "
                         "shape (n_clients, n_cells) or (n_clients, n_cells, n_times)")
    power = np.asarray(tx_power_per_rb_dbm, dtype=float)
    if power.ndim > 1 or (power.ndim == 1 and power.shape[0] != loss.shape[1]) or not np.all(np.isfinite(power)):
        raise invalid("tx_power_per_rb_dbm", tx_power_per_rb_dbm,
                      f"a finite dBm value, or one per cell ({loss.shape[1]})")
    per_re = power - 10.0 * math.log10(SUBCARRIERS_PER_RB)
    per_re = per_re.reshape((1, -1) + (1,) * (loss.ndim - 2)) if power.ndim == 1 else per_re
    return per_re - loss


def strongest_cell(rsrp_dbm: Any) -> np.ndarray:
    """The cell of strongest RSRP for each client (axis 1; ties to the lowest index).

    Parameters
    ----------
    rsrp_dbm : array_like, shape (n_clients, n_cells[, n_times])

    Returns
    -------
    numpy.ndarray of int, shape (n_clients[, n_times])
    """
    values = np.asarray(rsrp_dbm, dtype=float)
    if values.ndim not in (2, 3) or values.shape[1] == 0 or np.any(np.isnan(values)):
        raise ValueError(f"rsrp_dbm: got an array of shape {values.shape}; allowed: shape (n_clients, n_cells"
                         "[, n_times]) with at least one cell and no NaN")
    return np.argmax(values, axis=1)


def a3_conditions(neighbour_dbm: Any, serving_dbm: Any, hysteresis_db: float,
                  offset_db: float) -> tuple[np.ndarray, np.ndarray]:
    """TS 38.331 clause 5.5.4.4's inequalities A3-1 (entering) and A3-2 (leaving).

    Parameters
    ----------
    neighbour_dbm : array_like
        ``Mn + Ofn + Ocn`` (dBm).
    serving_dbm : array_like
        ``Mp + Ofp + Ocp`` (dBm), broadcast against ``neighbour_dbm``.
    hysteresis_db, offset_db : float
        ``Hys`` and ``Off`` (dB).

    Returns
    -------
    entering, leaving : numpy.ndarray of bool
        ``Mn' - Hys > Mp' + Off`` and ``Mn' + Hys < Mp' + Off``.
    """
    neighbour = np.asarray(neighbour_dbm, dtype=float)
    serving = np.asarray(serving_dbm, dtype=float)
    return neighbour - hysteresis_db > serving + offset_db, neighbour + hysteresis_db < serving + offset_db


@HANDOVER.register("a3")
class A3Handover(Component):
    """Strongest-RSRP initial association, A3 handover with hysteresis and time-to-trigger, and radio
    link failure after T310 (TS 38.331 clauses 5.5.4.4 and 5.3.10; see the module docstring).

    Raises
    ------
    ValueError
        One line naming the parameter for a value out of range or not one of TS 38.331's.
    """

    class Params(ParamsModel):
        hysteresis_db: Annotated[float, Field(ge=0.0, le=15.0, allow_inf_nan=False), Doc(
            "Hys of event A3 in dB, in [0, 15] (TS 38.331 Hysteresis: 0-30 half-dB steps).  Default 3 dB: ns-3's "
            "A3RsrpHandoverAlgorithm.")] = 3.0
        a3_offset_db: Annotated[float, Field(ge=-15.0, le=15.0, allow_inf_nan=False), Doc(
            "Off (a3-Offset) in dB, in [-15, 15] (TS 38.331: -30 to 30 half-dB steps).")] = 0.0
        time_to_trigger_s: Annotated[Literal[TIME_TO_TRIGGER_S], Doc(  # type: ignore[valid-type]
            "timeToTrigger in seconds, one of TS 38.331's TimeToTrigger values (0 to 5.12 s).  Default 0.256 s: "
            "ns-3's A3RsrpHandoverAlgorithm.")] = 0.256
        cell_individual_offsets_db: Annotated[Sequence[Annotated[float, Field(allow_inf_nan=False)]] | None, Doc(
            "Ocn / Ocp of every cell in dB (cellIndividualOffset), one per cell; null: all 0.")] = None
        interruption_time_s: Annotated[float, Field(ge=0.0, le=10.0, allow_inf_nan=False), Doc(
            "How long a client has no link after each handover, seconds, in [0, 10].  Default 0.05 s: our choice, a "
            "break-before-make handover of a few tens of ms; set it from TS 38.331 / TS 38.133 clause 6.1.1.2.2 "
            "for a calibrated study.")] = 0.05
        q_out_db: Annotated[float, SINR_MIN_DB, Doc(
            "SINR of the serving link below which the client is out of sync (Q_out), dB.  Default -8 dB: our "
            "choice (Q_out is the SINR of 10 % hypothetical PDCCH BLER, which depends on the receiver).")] = -8.0
        t310_s: Annotated[Literal[T310_S], Doc(  # type: ignore[valid-type]
            "T310 in seconds, one of TS 38.331's t310 values (0 to 6 s): out of sync that long is a radio link "
            "failure.  Default 1 s.")] = 1.0
        reestablishment_time_s: Annotated[float, Field(ge=0.0, le=60.0, allow_inf_nan=False), Doc(
            "How long a client has no link after a radio link failure before it joins the strongest cell, "
            "seconds, in [0, 60].  Default 0.5 s: our choice (TS 38.133 clause 6.2.1 states the "
            "re-establishment delay).")] = 0.5

    params: Params

    def evaluate(self, times_s: Any, rsrp_dbm: Any, sinr_db: Any = None,
                 initial_cell: Any = None) -> HandoverTrace:
        """Serving cells and handover events of every client over the sample times.

        Parameters
        ----------
        times_s : array_like, shape (n_times,)
            Strictly increasing, finite sample times, seconds.
        rsrp_dbm : array_like, shape (n_clients, n_cells, n_times)
            RSRP (after any layer-3 filtering), dBm, finite.
        sinr_db : array_like, shape (n_clients, n_cells, n_times), optional
            SINR of the link to each cell, dB (no NaN; -inf allowed); None: no radio link failure.
        initial_cell : array_like of int, shape (n_clients,), optional
            Serving cells at the first sample; None: :func:`strongest_cell` there.

        Returns
        -------
        HandoverTrace
        """
        t, rsrp, sinr, serving = _validated(times_s, rsrp_dbm, sinr_db, initial_cell)
        state = self.start(rsrp.shape[0], rsrp.shape[1], serving)
        serving_cell, connected, events = self._advance(state, t, rsrp, sinr)
        events.extend(self.pending(state))  # failed and not re-attached by the last sample
        events.sort(key=lambda e: (e.time_s, e.client))
        serving_cell.flags.writeable = False
        connected.flags.writeable = False
        return HandoverTrace(tuple(events), serving_cell, connected)

    # ------------------------------------------------------------ in chunks
    def start(self, n_clients: int, n_cells: int, initial_cell: Any) -> A3State:
        """The state before the first sample: serving cells ``initial_cell`` (shape (n_clients,)),
        no timer running, nobody blocked (what :meth:`evaluate` starts from)."""
        serving = np.array(initial_cell, dtype=int, copy=True).reshape(-1)
        if serving.shape != (n_clients,) or np.any((serving < 0) | (serving >= n_cells)):
            raise ValueError(f"initial_cell: got {initial_cell!r}; allowed: one integer cell index in "
                             f"[0, {n_cells - 1}] per client ({n_clients})")
        return A3State(serving=serving, blocked_until=np.full(n_clients, -np.inf),
                       ttt_start=np.full((n_clients, n_cells), np.nan), oos_start=np.full(n_clients, np.nan),
                       failed={})

    def advance(self, state: A3State, times_s: Any, rsrp_dbm: Any,
                sinr_db: Any = None) -> tuple[np.ndarray, np.ndarray, list[HandoverEvent]]:
        """Continue from ``state`` over more samples (changing ``state``): chunk by chunk, the same
        serving cells, connections and events as one :meth:`evaluate` over the whole series.

        Returns the serving cells and connections at these samples, shape (n_clients, n_times),
        and the events decided in them: A3 handovers at their sample, radio link failures when
        the client re-attaches (an RLF not re-attached yet is in :meth:`pending`).  Unsorted.
        """
        t, rsrp, sinr, _ = _validated(times_s, rsrp_dbm, sinr_db, state.serving.clip(0))
        if rsrp.shape[:2] != state.ttt_start.shape:
            raise ValueError(f"rsrp_dbm: got shape {rsrp.shape}; allowed: (n_clients, n_cells) = "
                             f"{state.ttt_start.shape} as the state was started with")
        return self._advance(state, t, rsrp, sinr)

    def pending(self, state: A3State) -> list[HandoverEvent]:
        """The radio link failures of ``state`` not re-attached yet (target :data:`NO_CELL`)."""
        return [HandoverEvent(time_s, client, source, NO_CELL, "rlf", float(self.params.reestablishment_time_s))
                for client, (time_s, source) in sorted(state.failed.items())]

    def _advance(self, state: A3State, t: np.ndarray, rsrp: np.ndarray,
                 sinr: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, list[HandoverEvent]]:
        p = self.params
        n_clients, n_cells, n_times = rsrp.shape
        ocn = np.zeros(n_cells)
        if p.cell_individual_offsets_db is not None:
            if len(p.cell_individual_offsets_db) != n_cells:
                raise invalid("cell_individual_offsets_db", list(p.cell_individual_offsets_db),
                              f"one offset per cell ({n_cells})")
            ocn = np.asarray(p.cell_individual_offsets_db, dtype=float)
        clients = np.arange(n_clients)
        serving_cell = np.empty((n_clients, n_times), dtype=int)
        connected = np.empty((n_clients, n_times), dtype=bool)
        serving, blocked_until, failed = state.serving, state.blocked_until, state.failed
        ttt_start, oos_start = state.ttt_start, state.oos_start  # replaced below, stored back at the end
        events: list[HandoverEvent] = []

        def reattach(k: int) -> None:
            due = (serving == NO_CELL) & (t[k] >= blocked_until - _TIME_TOLERANCE_S)
            for c in np.flatnonzero(due):
                serving[c] = int(np.argmax(rsrp[c, :, k]))
                time_s, source = failed.pop(int(c))
                events.append(HandoverEvent(time_s, int(c), source, int(serving[c]), "rlf",
                                            float(p.reestablishment_time_s)))

        for k in range(n_times):
            tk = t[k]
            reattach(k)
            active = (serving != NO_CELL) & (tk >= blocked_until - _TIME_TOLERANCE_S)
            cell = np.where(serving == NO_CELL, 0, serving)
            # Radio link monitoring: out of sync at every sample for T310 -> radio link failure.
            rlf = np.zeros(n_clients, dtype=bool)
            if sinr is not None:
                out_of_sync = active & (sinr[clients, cell, k] < p.q_out_db)
                oos_start = np.where(out_of_sync, np.where(np.isnan(oos_start), tk, oos_start), np.nan)
                rlf = out_of_sync & (tk - oos_start >= p.t310_s - _TIME_TOLERANCE_S)
            # Event A3 against every neighbour, with a time-to-trigger timer per (client, neighbour).
            measured = rsrp[:, :, k] + ocn[None, :]
            entering, _ = a3_conditions(measured, measured[clients, cell][:, None], p.hysteresis_db, p.a3_offset_db)
            entering &= active[:, None]
            entering[clients, cell] = False
            ttt_start = np.where(entering, np.where(np.isnan(ttt_start), tk, ttt_start), np.nan)
            fired = entering & (tk - ttt_start >= p.time_to_trigger_s - _TIME_TOLERANCE_S)
            handover = fired.any(axis=1) & ~rlf
            target = np.argmax(np.where(fired, measured, -np.inf), axis=1)
            for c in np.flatnonzero(handover):
                events.append(HandoverEvent(float(tk), int(c), int(serving[c]), int(target[c]), "a3",
                                            float(p.interruption_time_s)))
                serving[c] = target[c]
                blocked_until[c] = tk + p.interruption_time_s
            for c in np.flatnonzero(rlf):
                failed[int(c)] = (float(tk), int(serving[c]))
                serving[c] = NO_CELL
                blocked_until[c] = tk + p.reestablishment_time_s
            changed = handover | rlf
            ttt_start[changed] = np.nan
            oos_start[changed] = np.nan
            reattach(k)  # a zero re-establishment time joins at once
            serving_cell[:, k] = serving
            connected[:, k] = (serving != NO_CELL) & (tk >= blocked_until - _TIME_TOLERANCE_S)
        state.ttt_start, state.oos_start = ttt_start, oos_start
        return serving_cell, connected, events


@dataclass
class A3State:
    """What :class:`A3Handover` carries from one sample to the next (:meth:`A3Handover.advance`).

    Attributes
    ----------
    serving : numpy.ndarray of int, shape (n_clients,)
        The serving cell (:data:`NO_CELL` between a radio link failure and the re-attachment).
    blocked_until : numpy.ndarray, shape (n_clients,)
        No link while ``t < blocked_until``, s.
    ttt_start : numpy.ndarray, shape (n_clients, n_cells)
        When each neighbour's entering condition began to hold (NaN: not holding), s.
    oos_start : numpy.ndarray, shape (n_clients,)
        When the serving link went out of sync (NaN: in sync), s.
    failed : dict of int to (float, int)
        Client -> (the radio link failure's time, the failed cell) until it re-attaches.
    """

    serving: np.ndarray
    blocked_until: np.ndarray
    ttt_start: np.ndarray
    oos_start: np.ndarray
    failed: dict[int, tuple[float, int]]

    def state_dict(self) -> dict[str, Any]:
        """Plain data (copies)."""
        return {"serving": self.serving.copy(), "blocked_until": self.blocked_until.copy(),
                "ttt_start": self.ttt_start.copy(), "oos_start": self.oos_start.copy(),
                "failed": [[int(c), float(t), int(s)] for c, (t, s) in sorted(self.failed.items())]}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> A3State:
        """The state of :meth:`state_dict`."""
        return cls(serving=np.array(state["serving"], dtype=int), blocked_until=np.array(state["blocked_until"],
                                                                                         dtype=float),
                   ttt_start=np.array(state["ttt_start"], dtype=float),
                   oos_start=np.array(state["oos_start"], dtype=float),
                   failed={int(c): (float(t), int(s)) for c, t, s in state["failed"]})


def _validated(times_s: Any, rsrp_dbm: Any, sinr_db: Any,
               initial_cell: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """The inputs of :meth:`A3Handover.evaluate` as arrays, else one-line errors."""
    t = np.asarray(times_s, dtype=float)
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise ValueError(f"times_s: got an array of shape {t.shape}; allowed: a non-empty, finite, strictly "
                         "increasing 1-D array of seconds")
    rsrp = np.asarray(rsrp_dbm, dtype=float)
    if rsrp.ndim != 3 or rsrp.shape[2] != t.size or rsrp.shape[1] == 0 or not np.all(np.isfinite(rsrp)):
        raise ValueError(f"rsrp_dbm: got an array of shape {rsrp.shape}; allowed: finite dBm values of shape "
                         f"(n_clients, n_cells >= 1, n_times = {t.size})")
    sinr = None
    if sinr_db is not None:
        sinr = np.asarray(sinr_db, dtype=float)
        if sinr.shape != rsrp.shape or np.any(np.isnan(sinr)):
            raise ValueError(f"sinr_db: got an array of shape {sinr.shape}; allowed: dB values without NaN of the "
                             f"shape of rsrp_dbm {rsrp.shape}")
    if initial_cell is None:
        serving = np.argmax(rsrp[:, :, 0], axis=1)
    else:
        serving = np.array(initial_cell, copy=True)
        if serving.shape != (rsrp.shape[0],) or not np.issubdtype(serving.dtype, np.integer) or \
                np.any((serving < 0) | (serving >= rsrp.shape[1])):
            raise ValueError(f"initial_cell: got {initial_cell!r}; allowed: one integer cell index in "
                             f"[0, {rsrp.shape[1] - 1}] per client ({rsrp.shape[0]})")
    return t, rsrp, sinr, serving.astype(int)
