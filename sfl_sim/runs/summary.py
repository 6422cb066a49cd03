"""A run's ``summary.json``: built from its ``metrics.csv`` rows and its engine counters.

The status is ``running`` until the last round, then ``complete``; ``diverged`` (a non-finite
weight or test loss) and ``failed`` (an error during training) carry an ``error`` line.  The
best accuracy is :func:`sfl_sim.runs.rundir.schema.best_trained_accuracy`, time to accuracy
:func:`sfl_sim.runs.rundir.schema.first_time_reaching_s` — the definitions the report uses.  With an energy ledger
it carries ``client_energy_j`` (all clients, all rounds so far), ``client_energy_j_max`` (the
most any one client spent) and ``server_energy_j`` (:meth:`sfl_sim.clients.energy.EnergyLedger.summary`).

What the radio lost (:class:`Drops`, kept from the rows of ``rounds.csv``, so a resume rebuilds
it from the file):

``client_rounds``
    Cohort clients summed over the rounds so far (the selected client-rounds).
``dropped_clients_by_cause``
    Client-rounds dropped, by cause (``outage``, ``deadline``, ``over_selection``, ``unavailable``,
    ``battery``), and ``drop_rate``, their sum over ``client_rounds``.
``client_updates``
    Client-rounds whose update the server used: ``client_rounds`` less the dropped ones (the
    ``clients.csv`` rows with outcome ``kept``).  An asynchronous run's round is one aggregation, a
    synchronous run's a cohort's updates: compare runs by this, not by rounds.
``uplink_attempts``, ``outage_rate``
    Uplink transmissions started, and the fraction that failed (``(retransmissions +
    dropped_transmissions) / uplink_attempts``); None when a row has it empty (:mod:`~sfl_sim.runs.rundir.upgrade`).
``harq_retransmissions``
    HARQ copies beyond the first.
``rounds_all_lost``
    Rounds in which every selected client was dropped (nothing of a client reached the server).
``warnings``
    One line each: a run whose every round lost every selected client says so (it ends
    ``complete``: it ran its rounds, but no client's work ever reached the server).

With ``server.edge`` (only then), the run's totals of ``rounds.csv``'s edge columns
(:data:`sfl_sim.runs.round_steps.EDGE_COUNTERS`): ``handovers``, ``handover_lost_s``,
``migrations``, ``handover_drops`` and ``backhaul_bytes``, and with an energy ledger
``backhaul_energy_j``, the backhaul's energy, ``8 x backhaul_bytes x server.edge.backhaul_j_per_bit``
(:func:`sfl_sim.clients.energy.backhaul_energy_j`, of the run's total bytes: the sum of the rounds'
``backhaul_energy_j`` up to rounding), beside the ledger's ``server_energy_j``; the clients a
handover dropped are also in ``dropped_clients_by_cause`` (cause ``handover``).

With ``cell.network`` (only then), ``cells``: one entry per cell (:func:`cell_load`), the load it
carried: the client-rounds it served (by ``clients.csv``'s ``cell``, the serving cell at the
round's start), their uplink bytes and air time, and the handovers into and out of it (every
client's, from the network's events up to the last evaluated round's clock).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sfl_sim.channel.network.protocols import event_counts
from sfl_sim.clients.energy import backhaul_energy_j
from sfl_sim.engine import Counters
from sfl_sim.runs.build import Run
from sfl_sim.runs.round_steps import edge_counts
from sfl_sim.runs.rundir.schema import (
    BEST_ACCURACY_DEFINITION,
    DIVERGED,
    FAILED,
    GLOBAL_MODEL_EVALUATION,
    RunStatus,
    best_trained_accuracy,
    first_time_reaching_s,
)

__all__ = ["Drops", "summary", "diverged", "failed", "time_to_accuracy"]

Rows = list[dict[str, float]]


@dataclass
class Drops:
    """The run's dropped clients by cause, and what they are out of, round by round.

    Attributes
    ----------
    rounds : int
        Rounds counted.
    client_rounds : int
        Cohort clients summed over them.
    by_cause : dict of str to int
        Client-rounds dropped, per cause.
    rounds_all_lost : int
        Rounds that dropped every cohort client.
    uplink_attempts : int or None
        Uplink transmissions started; None once a round did not record its count.
    """

    rounds: int = 0
    client_rounds: int = 0
    by_cause: dict[str, int] = field(default_factory=dict)
    rounds_all_lost: int = 0
    uplink_attempts: int | None = 0

    def add(self, cohort_size: int, dropped: Iterable[str], uplink_attempts: int | None) -> None:
        """One round of ``cohort_size`` clients that dropped clients for the causes ``dropped``
        (one per client) after ``uplink_attempts`` uplink transmissions (None: not recorded)."""
        causes = list(dropped)
        self.rounds += 1
        self.client_rounds += cohort_size
        for cause in causes:
            self.by_cause[cause] = self.by_cause.get(cause, 0) + 1
        self.rounds_all_lost += int(cohort_size > 0 and len(causes) >= cohort_size)
        self.uplink_attempts = None if self.uplink_attempts is None or uplink_attempts is None \
            else self.uplink_attempts + uplink_attempts

    @classmethod
    def of_rounds(cls, rows: Iterable[Mapping[str, str]]) -> Drops:
        """The tally of ``rounds.csv`` rows as text (:meth:`sfl_sim.runs.rundir.files.RunDir.read_rounds_rows`)."""
        drops = cls()
        for row in rows:
            attempts = row.get("uplink_attempts", "")
            drops.add(len(row["cohort"].split()), (entry.rpartition(":")[2] for entry in row["dropped"].split()),
                      int(attempts) if attempts != "" else None)
        return drops

    @property
    def dropped(self) -> int:
        """Client-rounds dropped, all causes."""
        return sum(self.by_cause.values())

    @property
    def client_updates(self) -> int:
        """Client-rounds whose update the server used (not dropped)."""
        return self.client_rounds - self.dropped

    def fields(self, counters: Counters) -> dict[str, Any]:
        """The ``summary.json`` fields (module docstring) with the run's ``counters``."""
        attempts = self.uplink_attempts
        failed = counters.retransmissions + counters.dropped_transmissions
        return {
            "client_rounds": self.client_rounds,
            "client_updates": self.client_updates,
            "dropped_clients_by_cause": dict(sorted(self.by_cause.items())),
            "drop_rate": self.dropped / self.client_rounds if self.client_rounds else None,
            "uplink_attempts": attempts,
            "outage_rate": failed / attempts if attempts else None,
            "harq_retransmissions": counters.harq_retransmissions,
            "rounds_all_lost": self.rounds_all_lost,
            "warnings": self.warnings(),
        }

    def warnings(self) -> list[str]:
        """One line each for what the run's tables must not hide."""
        if self.rounds and self.rounds_all_lost == self.rounds:
            causes = ", ".join(f"{cause} {n}" for cause, n in sorted(self.by_cause.items()))
            return [f"every round lost every selected client ({self.rounds} of {self.rounds} rounds; {causes}): no "
                    f"client's work reached the server, so the model never trained"]
        return []


def time_to_accuracy(rows: Rows, targets: Sequence[float]) -> dict[str, float | None]:
    """Simulated time to each target accuracy (None when not reached), keyed ``f"{target:g}"``."""
    rounds = [r["round"] for r in rows]
    times = [r["sim_time_s"] for r in rows]
    accuracies = [r["test_accuracy"] for r in rows]
    return {f"{target:g}": first_time_reaching_s(rounds, times, accuracies, target) for target in targets}


def summary(run: Run, rows: Rows, counters: Counters, status: RunStatus, drops: Drops | None = None) -> dict[str, Any]:
    """The summary of ``run`` after the evaluated ``rows`` (at least one), with ``status`` and the
    run's ``drops`` so far (none: no round trained)."""
    last = rows[-1]
    c = counters
    best = best_trained_accuracy((r["round"] for r in rows), (r["test_accuracy"] for r in rows))
    return {
        "label": run.label,
        "algorithm": run.cfg.algorithm(run.label).name,
        "status": status,
        "evaluated": run.algorithm.evaluation_description() or GLOBAL_MODEL_EVALUATION,
        "seed": run.cfg.seed,
        "device": str(run.device),
        "rounds_completed": int(last["round"]),
        "rounds_planned": run.cfg.rounds,
        "final_test_accuracy": last["test_accuracy"],
        "final_test_loss": last["test_loss"],
        "best_test_accuracy": None if best is None else best[0],
        "best_test_accuracy_round": None if best is None else best[1],
        "best_test_accuracy_definition": BEST_ACCURACY_DEFINITION,
        "final_sim_time_s": last["sim_time_s"],
        "host_time_s": last["host_time_s"],
        "uplink_bytes": c.uplink_bytes,
        "downlink_bytes": c.downlink_bytes,
        "client_flops": c.client_flops,
        "server_flops": c.server_flops,
        "retransmissions": c.retransmissions,
        "dropped_transmissions": c.dropped_transmissions,
        "dropped_clients": c.dropped_clients,
        "unavailable_clients": int(c.by_kind.get("dropped_clients/unavailable", 0)),
        **(drops or Drops()).fields(c),
        "traffic_and_compute_by_kind": c.by_kind,
        "flops_per_sample": run.algorithm.meter.state_dict(),
        "time_to_accuracy_s": time_to_accuracy(rows, run.cfg.target_accuracies),
        **(run.ledger.summary(c.server_flops) if run.ledger is not None else {}),
        **_handovers(run, last["sim_time_s"]),
        **_edge_totals(run, c),
    }


def _edge_totals(run: Run, counters: Counters) -> dict[str, Any]:
    """With ``server.edge``: the run's totals of the rounds.csv edge columns; the rounds' handovers (of
    the clients in a round, while it ran) as ``handovers_in_rounds``, apart from ``handovers`` (every
    client's, by cause, from the network); with an energy ledger the backhaul's energy of the total
    bytes, ``backhaul_energy_j``."""
    edge = run.cfg.server.edge
    if edge is None:
        return {}
    totals = edge_counts(Counters().as_dict(), counters.as_dict())
    out: dict[str, Any] = {("handovers_in_rounds" if k == "handovers" else k): v for k, v in totals.items()}
    if run.ledger is not None:
        out["backhaul_energy_j"] = backhaul_energy_j(totals["backhaul_bytes"], edge.backhaul_j_per_bit)
    return out


def handovers_until(network: Any, t_s: float) -> tuple[Any, ...]:
    """The network's handover events up to the run's clock ``t_s`` (the radio evaluates ahead of the
    clock, lazily: an event it found beyond the last round's end did not happen in the run)."""
    return tuple(e for e in network.handover_events(with_pending=True) if e.time_s <= t_s)


def _handovers(run: Run, last_sim_time_s: float) -> dict[str, Any]:
    """With ``cell.network``: the handovers so far by cause (``handovers``) and the cell count."""
    network = run.cell.radio.network
    if network is None:
        return {}
    return {"n_cells": network.n_cells,
            "handovers": event_counts(handovers_until(network, float(last_sim_time_s)))}


def cell_load(client_rows: Iterable[Mapping[str, Any]], events: Iterable[Any], n_cells: int) -> list[dict[str, Any]]:
    """Each cell's load: ``cell``, ``client_rounds`` (the ``clients.csv`` rows whose ``cell`` is it),
    their ``uplink_bytes`` and ``uplink_air_s`` summed, ``handovers_in`` and ``handovers_out`` (the
    ``events`` whose ``target_cell`` / ``source_cell`` it is; -1, no cell, counts for none).

    A row without a cell (-1: no link at the round's start; empty: a file older than the column)
    counts for no cell.  Values may be strings, as a CSV reader gives them.
    """
    cells = [{"cell": i, "client_rounds": 0, "uplink_bytes": 0, "uplink_air_s": 0.0, "handovers_in": 0,
              "handovers_out": 0} for i in range(n_cells)]
    for row in client_rows:
        text = str(row.get("cell", "")).strip()
        cell = int(float(text)) if text else -1
        if 0 <= cell < n_cells:
            entry = cells[cell]
            entry["client_rounds"] += 1
            entry["uplink_bytes"] += int(float(row.get("uplink_bytes") or 0))
            entry["uplink_air_s"] += float(row.get("uplink_air_s") or 0.0)
    for e in events:
        if 0 <= e.target_cell < n_cells:
            cells[e.target_cell]["handovers_in"] += 1
        if 0 <= e.source_cell < n_cells:
            cells[e.source_cell]["handovers_out"] += 1
    return cells


def diverged(run: Run, rows: Rows, counters: Counters, rnd: int, weights_finite: bool,
             drops: Drops | None = None) -> dict[str, Any]:
    """The summary of a run whose weights (or else test loss) became non-finite at round ``rnd``,
    with what to try."""
    what = "the model's weights" if not weights_finite else "the test loss"
    t = run.cfg.training_for(run.label)
    lr = t.learning_rate
    clip = "" if t.max_grad_norm is not None else " or clip gradients (training.max_grad_norm)"
    message = (f"{run.label}: training diverged at round {rnd} ({what} became non-finite); the rows so far are kept — "
               f"try a smaller training.learning_rate (now {lr:g}, e.g. {lr / 10:g}){clip}")
    return {**summary(run, rows, counters, DIVERGED, drops), "error": message}


def failed(run: Run, rows: Rows, counters: Counters, message: str, drops: Drops | None = None) -> dict[str, Any]:
    """The summary of a run that raised: what it had evaluated (if anything) and the one-line ``message``."""
    return {**(summary(run, rows, counters, FAILED, drops) if rows else {"label": run.label, "status": FAILED}),
            "error": message}
