"""The client energy ledger: what each client of a round spent, from the engine's busy notes.

After each round the runner hands the round's :class:`~sfl_sim.engine.RoundContext` to
:meth:`EnergyLedger.charge_round`, which charges every client of the cohort:

* ``compute_j``: each ``compute`` interval's FLOPs through the model's ``compute_j`` (with the
  client's FLOP/s budget);
* ``uplink_j``: each ``uplink`` interval (every attempt, failed ones too) through ``transmit_j``
  at the power the cell chose for it;
* ``downlink_j``: each ``downlink`` interval through ``receive_j`` (a broadcast charges every
  cohort member for the broadcast's air time);
* ``idle_j``: ``idle_j(t_in_round - t_busy)`` plus the RRC tail the client's radio ran before the
  round, since the end of the last round it took part in (0 unless the model's ``rrc_tail`` is on;
  "RRC tail" below).

Rules the numbers follow:

* a client is in the round from the round's start to its end, or, when its payload was lost
  after outage (``RoundContext.left_s``), to that moment: it knows it failed and leaves.  A client
  the straggler policy dropped (``deadline``, ``over_selection``) does not know it was dropped and
  keeps working until the round ends, so it is charged until then;
* an interval that runs past the client's end (a process stopped at the round's end) is charged
  only up to the end; a compute interval so cut is charged for that fraction of its FLOPs;
* busy time is the length of the *union* of a client's intervals: overlapping intervals (a
  client computing while its upload is on the air) are each charged in full by their own kind,
  and the idle time counts the overlap once, so idle time is never negative.

RRC tail
--------
A client's tail runs once on the run's timeline: ``T_tail`` from the end of its last transfer,
cut by its next one.  Inside a round it takes part in, that time is idle already (charged by
``idle_j``); what the ledger adds is the part that runs *between* its rounds, while it is in no
cohort.  Rounds follow one another at once, so that part is known only when the client's next
round starts: it is charged then, in that round's ``idle_j``, as ``tail_j(gap, since)`` (``gap``
from the end of its previous round to this round's start, ``since`` from its last transfer to that
end).  A client in back-to-back rounds so pays no tail beyond its idle time; one that sits out
rounds pays the tail over the rounds it missed, up to ``T_tail``.  At the run's end
(:meth:`EnergyLedger.charge_run_end`) each client's pending tail is charged up to that end: a client
that sat out the last rounds ran its tail inside the run (the part past the run's end is not the
run's); it gets a row of the last round with that tail as its ``idle_j``, and a later round (a run
extended on resume) charges only the rest.  (Charging the whole remaining tail
at every round's end, as before, charged the same seconds again in the next round: ``T_tail`` per
round.)

Server energy is ``server FLOPs x server_j_per_flop`` (:meth:`EnergyLedger.server_energy_j`).
With edge servers (``server.edge``) the backhaul's is ``8 x backhaul bytes x backhaul_j_per_bit``
(:func:`backhaul_energy_j`), charged per round by the runner from the round's bytes.
The ledger's state (each client's cumulative joules) is checkpointed with the run.

Batteries (``capacity_j`` given; ``energy.battery``)
----------------------------------------------------
Each client starts with its drawn capacity and every round's charge is taken from it.

* Selection: a client is selectable (:meth:`EnergyLedger.selectable`) while its charge left covers
  its *expected round cost*: what it spent in the last round it took part in, or, for a client
  that never took part, the mean cost per client of the latest round (0 before the first round).
* During a round, before each upload (:meth:`EnergyLedger.upload_guard`; the engine is given the
  ledger as its ``battery``, :class:`sfl_sim.engine.Battery`): when the client's energy from the
  round's start to the end of that upload exceeds its charge, it empties at the moment the two are
  equal (found by bisection on the ledger's own sums); the upload resolves to ``Lost("battery")``
  there, the client leaves the round and the straggler accounting records it dropped with cause
  ``battery``.
* At the round's end, a client whose charge does not cover its round (it emptied after its last
  upload, or a retransmission the guard could not foresee took it over) is charged up to the
  moment it emptied; it keeps what it delivered.  Either way its charge is 0 from then on, it is
  counted in :attr:`EnergyLedger.depleted`, and it is never selectable again.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from sfl_sim.clients.energy.base import DeviceEnergy

__all__ = ["BUSY_KINDS", "BusyKind", "ClientEnergy", "EnergyLedger", "backhaul_energy_j", "busy_seconds"]

BusyKind = Literal["compute", "uplink", "downlink"]
"""What keeps a client busy in an interval the engine notes (:class:`sfl_sim.engine.Busy`): each
kind is charged through its own term of the device energy model (module docstring).  Defined here,
by the reader of the notes, so that the engine (a layer above) uses the same names."""

BUSY_KINDS: tuple[BusyKind, ...] = get_args(BusyKind)


@dataclass(frozen=True)
class ClientEnergy:
    """One client's energy in one round, J (one ``energy.csv`` row)."""

    round: int
    client: int
    compute_j: float
    uplink_j: float
    downlink_j: float
    idle_j: float

    @property
    def total_j(self) -> float:
        return self.compute_j + self.uplink_j + self.downlink_j + self.idle_j

    def row(self) -> dict[str, Any]:
        """The ``energy.csv`` row (without ``battery_j``)."""
        return {"round": self.round, "client": self.client, "compute_j": self.compute_j,
                "uplink_j": self.uplink_j, "downlink_j": self.downlink_j, "idle_j": self.idle_j,
                "total_j": self.total_j}


@dataclass(frozen=True)
class _Upload:
    """An upload about to start (the fields of :class:`~sfl_sim.engine.Busy`, which the ledger
    reads by name only, so that it needs no engine import)."""

    kind: BusyKind
    start_s: float
    end_s: float
    flops: float
    tx_power_w: float


def backhaul_energy_j(backhaul_bytes: float, j_per_bit: float) -> float:
    """The energy of ``backhaul_bytes`` over the edge servers' backhaul: ``8 x backhaul_bytes x
    j_per_bit``, J.

    Parameters
    ----------
    backhaul_bytes : float
        Bytes over the backhaul (``rounds.csv``'s ``backhaul_bytes``; a run's total).
    j_per_bit : float
        ``server.edge.backhaul_j_per_bit`` (its default and source:
        :data:`sfl_sim.clients.energy.models.BACKHAUL_J_PER_BIT`).
    """
    return 8.0 * backhaul_bytes * j_per_bit


def busy_seconds(intervals: Sequence[tuple[float, float]]) -> float:
    """Length of the union of ``(start, end)`` intervals (overlaps counted once)."""
    total, reach = 0.0, -math.inf
    for start, end in sorted(intervals):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total


class EnergyLedger:
    """Per-client energy of a run, round by round.

    Parameters
    ----------
    model : DeviceEnergy
        The clients' device energy model (kind ``energy``).
    client_flops_per_s : ndarray, shape (n_clients,)
        Each client's compute budget (the DVFS clock follows from it).
    server_j_per_flop : float
        The server profile, J/FLOP.
    """

    def __init__(self, model: DeviceEnergy, client_flops_per_s: np.ndarray, server_j_per_flop: float,
                 capacity_j: np.ndarray | None = None) -> None:
        self.model = model
        self.client_flops_per_s = np.asarray(client_flops_per_s, dtype=float)
        self.server_j_per_flop = float(server_j_per_flop)
        n = len(self.client_flops_per_s)
        self.spent_j = np.zeros(n)  # cumulative per client
        self.battery = capacity_j is not None
        self.remaining_j = np.array(capacity_j, dtype=float) if capacity_j is not None else np.full(n, np.inf)
        self.expected_j = np.zeros(n)  # expected round cost per client (see "Batteries")
        self.depleted = np.zeros(n, dtype=bool)
        self._emptied: set[int] = set()  # clients the upload guard found empty this round
        # the pending RRC tail of each client (see "RRC tail"): the end of the last round it took part
        # in, and the end of its last transfer before it (nan: none pending)
        self.tail_from_s = np.full(n, np.nan)
        self.last_transfer_end_s = np.full(n, np.nan)
        # how far past tail_from_s the pending tail was charged already (at a run's end), s
        self.tail_charged_s = np.zeros(n)

    def carried_tail_j(self, client: int, start_s: float) -> float:
        """The RRC tail ``client``'s radio ran between its previous round and a round starting at
        ``start_s``, J (see "RRC tail"), less what the run's end charged of it."""
        since, last = self.tail_from_s[client], self.last_transfer_end_s[client]
        if math.isnan(since) or math.isnan(last):
            return 0.0
        done = float(self.model.tail_j(float(self.tail_charged_s[client]), since - last))
        return max(0.0, float(self.model.tail_j(max(0.0, start_s - since), since - last)) - done)

    def charge_run_end(self, rnd: int, end_s: float,
                       busy_from_s: Mapping[int, float] | None = None) -> list[ClientEnergy]:
        """Charge each client's pending RRC tail up to the run's end ``end_s`` (see "RRC tail").

        Parameters
        ----------
        rnd : int
            The run's last round (aggregation).
        end_s : float
            The run's end, simulated s.
        busy_from_s : mapping of int to float, optional
            Clients still at work at the run's end (an asynchronous run's dispatches not yet
            back): their tail runs only up to the start of that work, which cut it.

        Returns
        -------
        list of ClientEnergy
            One row per client with a tail inside the run (round ``rnd``, the run's last; the tail
            as ``idle_j``), in client order; added to :attr:`spent_j` (and taken from a battery, at
            most its charge).
        """
        rows = []
        cut = {} if busy_from_s is None else busy_from_s
        for client in range(len(self.spent_j)):
            until_s = min(end_s, cut.get(client, end_s))
            tail_j = self.carried_tail_j(client, until_s)
            if tail_j <= 0.0:
                continue
            if self.battery and tail_j >= self.remaining_j[client]:
                tail_j = float(self.remaining_j[client])
                self.remaining_j[client] = 0.0
                self.depleted[client] = True
            elif self.battery:
                self.remaining_j[client] -= tail_j
            self.tail_charged_s[client] = max(0.0, until_s - float(self.tail_from_s[client]))
            self.spent_j[client] += tail_j
            rows.append(ClientEnergy(rnd, client, 0.0, 0.0, 0.0, tail_j))
        return rows

    def charge_round(self, rnd: int, ctx: Any, end_s: float) -> list[ClientEnergy]:
        """Charge every cohort member of the round ``ctx`` (a :class:`~sfl_sim.engine.RoundContext`)
        that ended at ``end_s``; returns the rows in cohort order and adds them to :attr:`spent_j`."""
        rows = []
        for client in ctx.cohort.tolist():
            busy = ctx.busy.get(client, [])
            until_s = min(end_s, ctx.left_s.get(client, end_s))
            carried = self.carried_tail_j(client, ctx.start_s)
            row = self._with_tail(self.charge_client(rnd, client, busy, ctx.start_s, until_s), carried)
            if self.battery and row.total_j > self.remaining_j[client]:
                if carried >= self.remaining_j[client]:  # it emptied in the tail before the round
                    row = ClientEnergy(rnd, client, 0.0, 0.0, 0.0, float(self.remaining_j[client]))
                else:
                    empty_s = self._empties_at(client, busy, ctx.start_s, until_s, carried)
                    row = self._with_tail(self.charge_client(rnd, client, busy, ctx.start_s, empty_s), carried)
                self._emptied.add(client)
            self._note_tail(client, busy, ctx.start_s, until_s)
            self.spent_j[client] += row.total_j
            rows.append(row)
        if self.battery:
            for row in rows:
                left = self.remaining_j[row.client] - row.total_j
                # at most a rounding error below 0 after a bisection: an empty battery is 0
                emptied = row.client in self._emptied or left <= 1e-9 * max(row.total_j, 1e-300)
                self.remaining_j[row.client] = 0.0 if emptied else left
                self.depleted[row.client] |= self.remaining_j[row.client] <= 0.0
                self.expected_j[row.client] = row.total_j
            self._emptied.clear()
            if rows:
                mean = math.fsum(r.total_j for r in rows) / len(rows)
                never = self.spent_j == 0.0
                self.expected_j[never] = mean
        return rows

    @staticmethod
    def _with_tail(row: ClientEnergy, tail_j: float) -> ClientEnergy:
        return dataclasses.replace(row, idle_j=row.idle_j + tail_j) if tail_j else row

    def _note_tail(self, client: int, busy: Sequence[Any], start_s: float, end_s: float) -> None:
        """After ``client``'s round over ``[start_s, end_s]``: its tail runs on from ``end_s``, from its
        last transfer in the round, or from the one before it when it made none."""
        ends = [min(b.end_s, end_s) for b in busy if b.kind != "compute" and min(b.end_s, end_s) >= start_s]
        if ends:
            self.last_transfer_end_s[client] = max(ends)
        self.tail_from_s[client] = end_s
        self.tail_charged_s[client] = 0.0

    def selectable(self) -> np.ndarray:
        """A bool per client: its battery's charge covers its expected round cost (all True without
        batteries)."""
        if not self.battery:
            return np.ones(len(self.remaining_j), dtype=bool)
        return (self.remaining_j > 0.0) & (self.remaining_j >= self.expected_j)

    def battery_j(self, client: int) -> float:
        """Charge left in ``client``'s battery, J (``inf`` without batteries)."""
        return float(self.remaining_j[client])

    def upload_guard(self, ctx: Any, client: int, duration_s: float, tx_power_w: float) -> float | None:
        """What the battery allows (the engine's :class:`sfl_sim.engine.Battery`; see "Batteries"):
        None when ``client``'s charge covers the round up to the end of an upload of ``duration_s``
        starting now, else when it empties."""
        now = ctx.now_s
        if ctx.left_s.get(client, math.inf) <= now:  # its part of the round is over
            return now
        busy = [*ctx.busy.get(client, []), _Upload("uplink", now, now + duration_s, 0.0, tx_power_w)]
        carried = self.carried_tail_j(client, ctx.start_s)
        if self.charge_client(0, client, busy, ctx.start_s, now + duration_s).total_j + carried \
                <= self.remaining_j[client]:
            return None
        self._emptied.add(client)
        return self._empties_at(client, busy, ctx.start_s, now + duration_s, carried)

    def _empties_at(self, client: int, busy: Sequence[Any], start_s: float, end_s: float,
                    carried_j: float = 0.0) -> float:
        """The time in ``[start_s, end_s]`` at which ``client``'s energy since ``start_s`` (after
        ``carried_j`` of tail before it) reaches its charge, ``end_s`` when it never does (energy
        grows with time, so bisection; 100 halvings reach float resolution)."""
        charge = self.remaining_j[client] - carried_j
        if self.charge_client(0, client, busy, start_s, end_s).total_j <= charge:
            return end_s  # the charge lasts the whole span
        lo, hi = start_s, end_s
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if self.charge_client(0, client, busy, start_s, mid).total_j > charge:
                hi = mid
            else:
                lo = mid
        return lo

    def charge_client(self, rnd: int, client: int, busy: Sequence[Any], start_s: float,
                      end_s: float) -> ClientEnergy:
        """One client's energy over ``[start_s, end_s]`` from its :class:`~sfl_sim.engine.Busy` notes
        (no RRC tail: that is charged between rounds, :meth:`carried_tail_j`)."""
        model = self.model
        compute = uplink = downlink = 0.0
        spans = []
        for b in busy:
            lo, hi = max(b.start_s, start_s), min(b.end_s, end_s)
            if hi < lo:
                continue
            length = hi - lo
            spans.append((lo, hi))
            if b.kind == "compute":
                full = b.end_s - b.start_s
                flops = b.flops if full <= 0 or hi >= b.end_s else b.flops * (length / full)
                compute += model.compute_j(flops, float(self.client_flops_per_s[client]))
            elif b.kind == "uplink":
                uplink += model.transmit_j(b.tx_power_w, length)
            elif b.kind == "downlink":
                downlink += model.receive_j(length)
            else:
                raise ValueError(f"busy kind {b.kind!r} of client {client}; allowed: {', '.join(BUSY_KINDS)}")
        idle_s = max(0.0, (end_s - start_s) - busy_seconds(spans))
        idle = model.idle_j(idle_s)
        row = ClientEnergy(rnd, client, compute, uplink, downlink, idle)
        if not math.isfinite(row.total_j):  # refused where it arises: never inf in energy.csv or summary.json
            parts = ", ".join(f"{k} {v!r}" for k, v in row.row().items() if k.endswith("_j"))
            raise ValueError(f"energy.device: client {client}'s energy in round {rnd} is not finite ({parts}) with "
                             f"{model!r}; allowed: a device model and parameters that give finite joules")
        return row

    def server_energy_j(self, server_flops: float) -> float:
        """``server_flops x server_j_per_flop``."""
        energy = float(server_flops) * self.server_j_per_flop
        if not math.isfinite(energy):
            raise ValueError(f"energy.server_j_per_flop: {server_flops!r} server FLOPs at {self.server_j_per_flop!r} "
                             f"J/FLOP is not finite; allowed: a J/FLOP that gives finite joules")
        return energy

    def summary(self, server_flops: float) -> dict[str, float]:
        """The ``summary.json`` fields: total client energy, the most any one client spent, server energy."""
        out = {"client_energy_j": float(self.spent_j.sum()),
               "client_energy_j_max": float(self.spent_j.max(initial=0.0)),
               "server_energy_j": self.server_energy_j(server_flops)}
        if self.battery:
            out["depleted_clients"] = int(self.depleted.sum())
        return out

    def state_dict(self) -> dict[str, Any]:
        """What a resume needs: each client's cumulative joules."""
        return {"spent_j": self.spent_j.copy(), "remaining_j": self.remaining_j.copy(),
                "expected_j": self.expected_j.copy(), "depleted": self.depleted.copy(),
                "tail_from_s": self.tail_from_s.copy(), "last_transfer_end_s": self.last_transfer_end_s.copy(),
                "tail_charged_s": self.tail_charged_s.copy()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.spent_j = np.asarray(state["spent_j"], dtype=float).copy()
        if "remaining_j" in state:
            self.remaining_j = np.asarray(state["remaining_j"], dtype=float).copy()
            self.expected_j = np.asarray(state["expected_j"], dtype=float).copy()
            self.depleted = np.asarray(state["depleted"], dtype=bool).copy()
        if "tail_from_s" in state:  # a checkpoint from before the tail was carried: none pending
            self.tail_from_s = np.asarray(state["tail_from_s"], dtype=float).copy()
            self.last_transfer_end_s = np.asarray(state["last_transfer_end_s"], dtype=float).copy()
        if "tail_charged_s" in state:  # a checkpoint from before the run's end charged tails: none charged
            self.tail_charged_s = np.asarray(state["tail_charged_s"], dtype=float).copy()
