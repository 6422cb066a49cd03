"""The SimPy engine: it owns the simulated clock and times and counts every step.

Algorithms describe one round as a SimPy generator written with the primitives of
:class:`RoundContext` (``compute``, ``upload``, ``download``, ``broadcast``).  Each primitive is
a timeout whose length comes from the cell and the compute budgets, and it adds to the run's
counters what crossed the air or was computed.  The real torch work runs in the algorithm's
generator between the yields, i.e. when its event fires.

Time model
----------
* compute on client k: ``flops / client_flops_per_s[k]``; clients never share a device.
* compute on the server: ``flops / server_flops_per_s``; the server is one device, so concurrent
  server jobs queue (a SimPy resource of capacity 1) and run one after another at full speed.
* upload by client k: ``8 * nbytes / r_k``, with ``r_k`` the uplink rate of client k when the
  uplink band is shared by the round's cohort (they transmit in the same phases).
* downlink: ``ideal`` (zero time) or ``broadcast``: a model sent to the whole cohort goes out once
  at the rate of the worst receiver on the whole band; a unicast payload (an activation gradient)
  goes at client k's rate on its share of the downlink band.
* bytes are counted per receiving client, whatever the downlink mode, so byte columns compare
  across modes: a broadcast of N bytes to 10 clients adds 10 N downlink bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Generator, Iterable, Sequence

import numpy as np
import simpy

SERVER = -1
"""``who`` value of :meth:`RoundContext.compute` for the server."""


@dataclass
class Counters:
    """Cumulative traffic and computation since the start of the run.

    Attributes
    ----------
    uplink_bytes, downlink_bytes : int
        Bytes delivered over each direction (downlink per receiving client).
    client_flops, server_flops : float
        FLOPs computed by all clients together and by the server.
    by_kind : dict
        Bytes per ``"uplink/<what>"`` / ``"downlink/<what>"`` and FLOPs per ``"client"``/``"server"``
        with the step kind, e.g. ``"uplink/activations"``.
    """

    uplink_bytes: int = 0
    downlink_bytes: int = 0
    client_flops: float = 0.0
    server_flops: float = 0.0
    by_kind: Dict[str, float] = field(default_factory=dict)

    def add(self, key: str, amount: float) -> None:
        self.by_kind[key] = self.by_kind.get(key, 0) + amount

    def as_dict(self) -> Dict[str, Any]:
        return {"uplink_bytes": self.uplink_bytes, "downlink_bytes": self.downlink_bytes,
                "client_flops": self.client_flops, "server_flops": self.server_flops,
                "by_kind": dict(self.by_kind)}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Counters":
        return cls(int(data["uplink_bytes"]), int(data["downlink_bytes"]), float(data["client_flops"]),
                   float(data["server_flops"]), dict(data.get("by_kind", {})))


class Simulator:
    """Simulated clock, cell and compute budgets of one run.

    Parameters
    ----------
    cell : channel.Cell
        Large-scale channel state; gives uplink, downlink and broadcast rates in bit/s.
    client_flops_per_s : ndarray, shape (n_clients,)
        Compute budget of each client in FLOP/s.
    server_flops_per_s : float
        Compute budget of the server in FLOP/s.
    downlink_mode : {"ideal", "broadcast"}
    start_time_s : float
        Initial simulated time (non-zero when a run resumes).
    counters : Counters, optional
        Counters to continue from (resume).
    """

    def __init__(self, cell: Any, client_flops_per_s: np.ndarray, server_flops_per_s: float,
                 downlink_mode: str = "ideal", start_time_s: float = 0.0,
                 counters: Counters | None = None) -> None:
        if downlink_mode not in ("ideal", "broadcast"):
            raise ValueError(f"downlink_mode={downlink_mode!r}; allowed: ideal, broadcast")
        self.cell = cell
        self.client_flops_per_s = np.asarray(client_flops_per_s, dtype=float)
        self.server_flops_per_s = float(server_flops_per_s)
        self.downlink_mode = downlink_mode
        self.env = simpy.Environment(initial_time=start_time_s)
        self.server = simpy.Resource(self.env, capacity=1)
        self.counters = counters if counters is not None else Counters()

    @property
    def now_s(self) -> float:
        """Current simulated time in seconds."""
        return float(self.env.now)

    def run_round(self, round_process: Any, cohort: Sequence[int]) -> float:
        """Run one round to completion on the simulated clock.

        Parameters
        ----------
        round_process : callable
            ``round_process(ctx) -> generator``, the algorithm's round.
        cohort : sequence of int
            Clients taking part in the round.

        Returns
        -------
        float
            Simulated duration of the round in seconds.
        """
        start = self.now_s
        ctx = RoundContext(self, np.asarray(cohort, dtype=np.int64))
        self.env.run(until=self.env.process(round_process(ctx)))
        return self.now_s - start


class RoundContext:
    """What an algorithm's round may do on the simulated clock (see module docstring)."""

    def __init__(self, sim: Simulator, cohort: np.ndarray) -> None:
        self._sim = sim
        self.cohort = cohort
        cell = sim.cell
        self._uplink_bps = dict(zip(cohort.tolist(), cell.uplink_rates_bps(cohort).tolist()))
        if sim.downlink_mode == "broadcast":
            self._downlink_bps = dict(zip(cohort.tolist(), cell.downlink_rates_bps(cohort).tolist()))
            self._broadcast_bps = float(cell.broadcast_rate_bps(cohort))

    @property
    def env(self) -> simpy.Environment:
        return self._sim.env

    @property
    def now_s(self) -> float:
        return self._sim.now_s

    def uplink_rate_bps(self, client: int) -> float:
        """Uplink rate of ``client`` in this round, bit/s."""
        return self._uplink_bps[client]

    def compute(self, who: int, flops: float, what: str = "compute") -> Generator:
        """Spend ``flops`` on client ``who`` (or :data:`SERVER`); use as ``yield from``."""
        counters = self._sim.counters
        if who == SERVER:
            counters.server_flops += flops
            counters.add(f"server/{what}", flops)
            with self._sim.server.request() as slot:
                yield slot
                yield self.env.timeout(flops / self._sim.server_flops_per_s)
        else:
            counters.client_flops += flops
            counters.add(f"client/{what}", flops)
            yield self.env.timeout(flops / self._sim.client_flops_per_s[who])

    def upload(self, client: int, nbytes: int, what: str) -> simpy.Timeout:
        """Client → server transfer of ``nbytes``; ``yield`` it."""
        counters = self._sim.counters
        counters.uplink_bytes += nbytes
        counters.add(f"uplink/{what}", nbytes)
        return self.env.timeout(8.0 * nbytes / self._uplink_bps[client])

    def download(self, client: int, nbytes: int, what: str) -> simpy.Timeout:
        """Server → client unicast of ``nbytes``; ``yield`` it."""
        counters = self._sim.counters
        counters.downlink_bytes += nbytes
        counters.add(f"downlink/{what}", nbytes)
        if self._sim.downlink_mode == "ideal":
            return self.env.timeout(0.0)
        return self.env.timeout(8.0 * nbytes / self._downlink_bps[client])

    def broadcast(self, nbytes: int, what: str) -> simpy.Timeout:
        """Server → whole cohort transfer of the same ``nbytes``; ``yield`` it."""
        counters = self._sim.counters
        total = nbytes * len(self.cohort)
        counters.downlink_bytes += total
        counters.add(f"downlink/{what}", total)
        if self._sim.downlink_mode == "ideal":
            return self.env.timeout(0.0)
        return self.env.timeout(8.0 * nbytes / self._broadcast_bps)

    def process(self, generator: Generator) -> simpy.Process:
        """Start a concurrent process (e.g. one per client)."""
        return self.env.process(generator)

    def all_of(self, events: Iterable[simpy.Event]) -> simpy.Event:
        """Event that fires when all ``events`` have fired."""
        return simpy.AllOf(self.env, list(events))

    def event(self) -> simpy.Event:
        """A fresh event an algorithm triggers itself (e.g. 'gradient ready for client k')."""
        return self.env.event()
