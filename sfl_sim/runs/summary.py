"""A run's ``summary.json``: built from its ``metrics.csv`` rows and its engine counters.

The status is ``running`` until the last round, then ``complete``; ``diverged`` (a non-finite
weight or test loss) and ``failed`` (an error during training) carry an ``error`` line.  The
best accuracy is :func:`sfl_sim.runs.rundir.schema.best_trained_accuracy`, time to accuracy
:func:`sfl_sim.runs.rundir.schema.first_time_reaching_s` — the definitions the report uses.  With an energy ledger
it carries ``client_energy_j`` (all clients, all rounds so far), ``client_energy_j_max`` (the
most any one client spent) and ``server_energy_j`` (:meth:`sfl_sim.clients.energy.EnergyLedger.summary`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sfl_sim.engine import Counters
from sfl_sim.runs.build import Run
from sfl_sim.runs.rundir.schema import (
    BEST_ACCURACY_DEFINITION,
    DIVERGED,
    FAILED,
    GLOBAL_MODEL_EVALUATION,
    RunStatus,
    best_trained_accuracy,
    first_time_reaching_s,
)

__all__ = ["summary", "diverged", "failed", "time_to_accuracy"]

Rows = list[dict[str, float]]


def time_to_accuracy(rows: Rows, targets: Sequence[float]) -> dict[str, float | None]:
    """Simulated time to each target accuracy (None when not reached), keyed ``f"{target:g}"``."""
    rounds = [r["round"] for r in rows]
    times = [r["sim_time_s"] for r in rows]
    accuracies = [r["test_accuracy"] for r in rows]
    return {f"{target:g}": first_time_reaching_s(rounds, times, accuracies, target) for target in targets}


def summary(run: Run, rows: Rows, counters: Counters, status: RunStatus) -> dict[str, Any]:
    """The summary of ``run`` after the evaluated ``rows`` (at least one), with ``status``."""
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
        "traffic_and_compute_by_kind": c.by_kind,
        "flops_per_sample": run.algorithm.meter.state_dict(),
        "time_to_accuracy_s": time_to_accuracy(rows, run.cfg.target_accuracies),
        **(run.ledger.summary(c.server_flops) if run.ledger is not None else {}),
    }


def diverged(run: Run, rows: Rows, counters: Counters, rnd: int, weights_finite: bool) -> dict[str, Any]:
    """The summary of a run whose weights (or else test loss) became non-finite at round ``rnd``,
    with what to try."""
    what = "the model's weights" if not weights_finite else "the test loss"
    t = run.cfg.training_for(run.label)
    lr = t.learning_rate
    clip = "" if t.max_grad_norm is not None else " or clip gradients (training.max_grad_norm)"
    message = (f"{run.label}: training diverged at round {rnd} ({what} became non-finite); the rows so far are kept — "
               f"try a smaller training.learning_rate (now {lr:g}, e.g. {lr / 10:g}){clip}")
    return {**summary(run, rows, counters, DIVERGED), "error": message}


def failed(run: Run, rows: Rows, counters: Counters, message: str) -> dict[str, Any]:
    """The summary of a run that raised: what it had evaluated (if anything) and the one-line ``message``."""
    return {**(summary(run, rows, counters, FAILED) if rows else {"label": run.label, "status": FAILED}),
            "error": message}
