"""The client energy ledger: what each client of a round spent, from the engine's busy notes.

After each round the runner hands the round's :class:`~sfl_sim.engine.RoundContext` to
:meth:`EnergyLedger.charge_round`, which charges every client of the cohort:

* ``compute_j``: each ``compute`` interval's FLOPs through the model's ``compute_j`` (with the
  client's FLOP/s budget);
* ``uplink_j``: each ``uplink`` interval (every attempt, failed ones too) through ``transmit_j``
  at the power the cell chose for it;
* ``downlink_j``: each ``downlink`` interval through ``receive_j`` (a broadcast charges every
  cohort member for the broadcast's air time);
* ``idle_j``: ``idle_j(t_in_round - t_busy)`` plus the RRC tail past the round's end (0 unless
  the model's ``rrc_tail`` is on).

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

Server energy is ``server FLOPs x server_j_per_flop`` (:meth:`EnergyLedger.server_energy_j`).
The ledger's state (each client's cumulative joules) is checkpointed with the run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence

import numpy as np

from sfl_sim.energy.base import DeviceEnergy

__all__ = ["ClientEnergy", "EnergyLedger", "busy_seconds"]


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

    def row(self) -> Dict[str, Any]:
        """The ``energy.csv`` row (without ``battery_j``)."""
        return {"round": self.round, "client": self.client, "compute_j": self.compute_j,
                "uplink_j": self.uplink_j, "downlink_j": self.downlink_j, "idle_j": self.idle_j,
                "total_j": self.total_j}


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

    def __init__(self, model: DeviceEnergy, client_flops_per_s: np.ndarray, server_j_per_flop: float) -> None:
        self.model = model
        self.client_flops_per_s = np.asarray(client_flops_per_s, dtype=float)
        self.server_j_per_flop = float(server_j_per_flop)
        self.spent_j = np.zeros(len(self.client_flops_per_s))  # cumulative per client

    def charge_round(self, rnd: int, ctx: Any, end_s: float) -> List[ClientEnergy]:
        """Charge every cohort member of the round ``ctx`` (a :class:`~sfl_sim.engine.RoundContext`)
        that ended at ``end_s``; returns the rows in cohort order and adds them to :attr:`spent_j`."""
        rows = []
        for client in ctx.cohort.tolist():
            row = self.charge_client(rnd, client, ctx.busy.get(client, []), ctx.start_s,
                                     min(end_s, ctx.left_s.get(client, end_s)))
            self.spent_j[client] += row.total_j
            rows.append(row)
        return rows

    def charge_client(self, rnd: int, client: int, busy: Sequence[Any], start_s: float, end_s: float) -> ClientEnergy:
        """One client's energy over ``[start_s, end_s]`` from its :class:`~sfl_sim.engine.Busy` notes."""
        model = self.model
        compute = uplink = downlink = 0.0
        spans = []
        last_transfer_end = -math.inf
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
                last_transfer_end = max(last_transfer_end, hi)
            elif b.kind == "downlink":
                downlink += model.receive_j(length)
                last_transfer_end = max(last_transfer_end, hi)
            else:
                raise ValueError(f"busy kind {b.kind!r} of client {client}; allowed: compute, uplink, downlink")
        idle_s = max(0.0, (end_s - start_s) - busy_seconds(spans))
        idle = model.idle_j(idle_s)
        if last_transfer_end > -math.inf:
            idle += model.tail_j(math.inf, end_s - last_transfer_end)
        return ClientEnergy(rnd, client, compute, uplink, downlink, idle)

    def server_energy_j(self, server_flops: float) -> float:
        """``server_flops x server_j_per_flop``."""
        return float(server_flops) * self.server_j_per_flop

    def summary(self, server_flops: float) -> Dict[str, float]:
        """The ``summary.json`` fields: total client energy, the most any one client spent, server energy."""
        return {"client_energy_j": float(self.spent_j.sum()),
                "client_energy_j_max": float(self.spent_j.max(initial=0.0)),
                "server_energy_j": self.server_energy_j(server_flops)}

    def state_dict(self) -> Dict[str, Any]:
        """What a resume needs: each client's cumulative joules."""
        return {"spent_j": self.spent_j.copy()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.spent_j = np.asarray(state["spent_j"], dtype=float).copy()
