"""What the synchronous and the asynchronous loops of the runner share about one trained round:
its record before it is logged, the counters ``rounds.csv`` differences, the check of a
selector's pick and of the weights, and the simulated-time budget
(:mod:`sfl_sim.runs.runner`, :mod:`sfl_sim.runs.asynchronous`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from sfl_sim.clients.energy import backhaul_energy_j
from sfl_sim.config import Scenario
from sfl_sim.engine.client_rounds import ClientRound
from sfl_sim.runs.rundir.schema import CLIENT_KEPT

__all__ = ["ROUND_COUNTERS", "EDGE_COUNTERS", "Trained", "all_finite", "backhaul_energy", "check_cohort", "client_rows",
           "edge_counts", "time_budget_spent"]


def time_budget_spent(cfg: Scenario, now_s: float) -> bool:
    """Whether a run's simulated clock has reached the scenario's ``max_sim_time_s`` (never without
    one): the run stops at the end of the round that reached it, which is evaluated as its last."""
    return cfg.max_sim_time_s is not None and now_s >= cfg.max_sim_time_s


def all_finite(module: torch.nn.Module) -> bool:
    """Whether every parameter and float buffer is finite (one device sync for the whole model)."""
    flags = [torch.isfinite(t).all() for t in list(module.parameters()) + list(module.buffers())
             if torch.is_floating_point(t)]
    return bool(torch.stack(flags).all()) if flags else True


def check_cohort(cohort: Any, n_clients: int, n_selected: int, selector: Any) -> np.ndarray:
    """A selector's pick, checked: ``n_selected`` distinct client ids in range (a plug-in may err)."""
    arr = np.asarray(cohort)
    if arr.shape != (n_selected,) or not np.issubdtype(arr.dtype, np.integer) or \
            (arr.size and (arr.min() < 0 or arr.max() >= n_clients)) or len(np.unique(arr)) != arr.size:
        raise ValueError(f"clients.selection: {type(selector).__name__}.select returned {cohort!r}; allowed: "
                         f"{n_selected} distinct client ids in [0, {n_clients})")
    return arr.astype(np.int64)


def client_rows(rnd: int, clients: list[ClientRound]) -> list[dict[str, Any]]:
    """Round ``rnd``'s ``clients.csv`` rows from the engine's per-client record."""
    return [{"round": rnd, "outcome": c.dropped or CLIENT_KEPT, **c.fields()} for c in clients]


#: The per-round counters of ``rounds.csv`` (differences of the engine's cumulative counters).
ROUND_COUNTERS = ("uplink_bytes", "downlink_bytes", "client_flops", "server_flops", "retransmissions",
                  "dropped_transmissions", "dropped_clients", "harq_retransmissions")


#: ``rounds.csv``'s edge columns: each the difference of these :attr:`Counters.by_kind
#: <sfl_sim.engine.accounting.Counters.by_kind>` keys over the round (:mod:`sfl_sim.engine.edge`); a
#: key ending in ``/`` stands for every key it begins (``backhaul/``: migrations, the aggregation
#: and the payloads of the cloud's steps, ``backhaul/<kind>``).
EDGE_COUNTERS: dict[str, tuple[str, ...]] = {
    "handovers": ("handovers",), "handover_lost_s": ("handover_lost_s",), "migrations": ("migrations",),
    "handover_drops": ("handover_drops",), "backhaul_bytes": ("backhaul/",)}


def edge_counts(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    """The round's :data:`EDGE_COUNTERS` from the counters' :meth:`~sfl_sim.engine.Counters.as_dict`
    before and after it (whole numbers as int; 0 without ``server.edge``)."""
    out: dict[str, float] = {}
    for column, keys in EDGE_COUNTERS.items():
        names = {name for name in (*after["by_kind"], *before["by_kind"])
                 if any(name == k or (k.endswith("/") and name.startswith(k)) for k in keys)}
        value = sum(after["by_kind"].get(k, 0) - before["by_kind"].get(k, 0) for k in names)
        out[column] = value if column == "handover_lost_s" else int(value)
    return out


def backhaul_energy(cfg: Scenario, charged: bool, backhaul_bytes: int) -> float | str:
    """``rounds.csv``'s ``backhaul_energy_j`` of a round that sent ``backhaul_bytes`` over the
    backhaul: ``8 x backhaul_bytes x server.edge.backhaul_j_per_bit``
    (:func:`~sfl_sim.clients.energy.backhaul_energy_j`); 0 without ``server.edge``, ``""`` when the run
    has no energy ledger (``charged`` false: ``energy.enabled`` false), as ``client_energy_j``."""
    if not charged:
        return ""
    edge = cfg.server.edge
    return 0.0 if edge is None else backhaul_energy_j(backhaul_bytes, edge.backhaul_j_per_bit)


@dataclass
class Trained:
    """One trained round, before its row is logged."""

    round: int
    cohort: np.ndarray
    row: dict[str, Any]  # its rounds.csv row but the host time
    evaluate: bool  # at the cadence, the last round, or non-finite weights (to record the divergence)
    weights_finite: bool
    host_start_s: float
    energy_rows: list[dict[str, Any]]  # its energy.csv rows (none without a ledger)
    client_rows: list[dict[str, Any]]  # its clients.csv rows (none with metrics.client_record off)
    last: bool  # the run's last round: its rounds are done, or its clock reached max_sim_time_s
