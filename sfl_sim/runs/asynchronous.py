"""The runner's loop for an asynchronous algorithm (:class:`sfl_sim.algorithms.asynchronous.AsynchronousAlgorithm`).

The engine's :class:`~sfl_sim.engine.asynchronous.AsyncDriver` runs the clock; this loop steps it
to each aggregation — the version the aggregation makes plays the part of a round in the run's
files, up to ``rounds`` aggregations — and, with ``eval_every_sim_s``, to each time of the
evaluation grid (t = Δt, 2Δt, ...: the model evaluated is the one the server holds then, so
runs compare at the same simulated times).  Without the grid the model is evaluated every
``eval_every_rounds`` aggregations; the last aggregation is always evaluated.

Per aggregation it writes the ``rounds.csv`` row (the counters since the previous aggregation;
``cohort`` the clients whose updates it used, ``dropped`` the uploads lost since the previous
one), the ``staleness.csv`` rows (one per update used) and the ``energy.csv`` rows of the dispatch
groups whose clients have all arrived (charged at that aggregation, each client's part ending
with its upload).

**Resume.**  The clients in flight are SimPy processes in the middle of their work, which no
checkpoint can hold; so a resumed asynchronous run *replays* from its start to its checkpoint —
the same seed gives the same events, so the replay reaches the same state — without writing a
row, checks that the replayed model equals the checkpoint's bit for bit (else a one-line
:class:`~sfl_sim.runs.checkpoint.CheckpointError`), and goes on from there.  Exact, at the cost of
recomputing what came before the checkpoint.

Every client selection is the selector's (the ``selection`` stream), among the clients online
and not in flight (and, with batteries, charged for a round).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from sfl_sim.clients.protocols import BatteryObserver
from sfl_sim.clients.selection import cohort_size, select_online
from sfl_sim.engine.asynchronous import Aggregation, AsyncDriver
from sfl_sim.engine.client_rounds import context_clients
from sfl_sim.engine.simulator import RoundContext
from sfl_sim.runs.checkpoint import CheckpointError, RunState
from sfl_sim.runs.round_steps import (
    ROUND_COUNTERS,
    Trained,
    all_finite,
    backhaul_energy,
    check_cohort,
    client_rows,
    edge_counts,
    time_budget_spent,
)
from sfl_sim.runs.rundir.schema import COMPLETE, DIVERGED, RUNNING
from sfl_sim.runs.summary import Drops

__all__ = ["run_asynchronously"]


def _selector(session: Any) -> Callable[[int, frozenset[int]], np.ndarray]:
    """``select(n, busy)`` for the driver: the run's selector among the clients online now, not
    in flight, and (with batteries) charged."""
    run, sim, rng = session.run, session.sim, session.streams.selection
    n_clients = run.cfg.clients.count

    def select(n: int, busy: frozenset[int]) -> np.ndarray:
        online = np.ones(n_clients, dtype=bool) if run.availability is None else \
            np.asarray(run.availability.online(np.arange(n_clients), sim.now_s), dtype=bool)
        selectable = online.copy()
        selectable[list(busy)] = False
        if run.ledger is not None and run.ledger.battery:
            if isinstance(run.selector, BatteryObserver):
                run.selector.observe_battery(run.ledger.remaining_j)
            selectable &= run.ledger.selectable()
        if not selectable.any():
            return np.zeros(0, dtype=np.int64)
        picked = select_online(run.selector, n_clients, n, rng, selectable)
        return check_cohort(picked, n_clients, min(n, int(selectable.sum())), run.selector)

    return select


class _Loop:
    """One asynchronous run's stepping: the driver, the grid, the rows of each aggregation."""

    def __init__(self, session: Any) -> None:
        self.session, self.run, self.cfg = session, session.run, session.cfg
        policy = self.run.algorithm.async_policy(cohort_size(self.cfg.clients.count, self.cfg.clients.participation))
        self.driver = AsyncDriver(session.sim, policy, self.run.algorithm, _selector(session))
        self.grid_s = self.cfg.eval_every_sim_s
        self.grid_index = 1
        self.last_s = session.sim.now_s  # the previous aggregation's time (the mobility step, round_sim_time_s)
        self.counted = session.sim.counters.as_dict()
        self.pending: list[RoundContext] = []  # dispatch groups with clients still out
        self.attempts: dict[int, int] = {}  # id of a pending group -> its uplink attempts already in a row

    def next_grid_s(self) -> float | None:
        return None if self.grid_s is None else self.grid_index * self.grid_s

    def skip_grid_through(self, t_s: float) -> None:
        """The grid times up to ``t_s`` are done (a resume continues after its checkpoint)."""
        if self.grid_s is not None:
            while self.grid_index * self.grid_s <= t_s:
                self.grid_index += 1

    def step(self) -> Aggregation | None:
        """The next stop: an aggregation, or (None) the next grid time."""
        agg = self.driver.advance(until_s=self.next_grid_s())
        if agg is None:
            self.grid_index += 1
        return agg

    def trained(self, agg: Aggregation, host_start_s: float) -> Any:
        """The runner's record of aggregation ``agg`` (its ``rounds.csv`` row, energy rows, due or not)."""
        run, cfg, sim = self.run, self.cfg, self.session.sim
        duration_s = agg.time_s - self.last_s
        run.cell.move(duration_s, self.session.streams.mobility)
        self.last_s = agg.time_s
        after = sim.counters.as_dict()
        counted = {k: after[k] - self.counted[k] for k in ROUND_COUNTERS}
        self.counted = after
        if not after["harq_retransmissions"]:
            counted["harq_retransmissions"] = 0
        n_clients = cfg.clients.count
        online = n_clients if run.availability is None else \
            int(np.asarray(run.availability.online(np.arange(n_clients), sim.now_s), dtype=bool).sum())
        lost = [(a.client, getattr(a.outcome, "reason", "")) for a in agg.lost]
        used = np.asarray([a.client for a in agg.used], dtype=np.int64)
        row = {"round": agg.version, "sim_time_s": agg.time_s, "round_sim_time_s": duration_s, **counted,
               "online_clients": online, "unavailable_clients": sum(1 for _, why in lost if why == "unavailable"),
               "availability_wait_s": 0.0, "uplink_rb_load": "",  # dispatch groups overlap: no round's load
               **edge_counts(after, after),  # no edge with an asynchronous algorithm: 0
               "cohort": " ".join(map(str, used.tolist())),
               "dropped": " ".join(f"{k}:{why}" for k, why in sorted(lost))}
        self.pending.extend(self.driver.take_groups())
        attempts = self._uplink_attempts()
        row["uplink_attempts"] = attempts
        energy_rows, client_rows = self._charge(agg.version)
        last = agg.version == cfg.rounds or time_budget_spent(cfg, agg.time_s)
        if last and run.ledger is not None:
            energy_rows += self._charge_run_end(agg.version, agg.time_s)
        self.session.drops.add(len(agg.used) + len(agg.lost), [why for _, why in lost], attempts)
        row["client_energy_j"] = "" if run.ledger is None else math.fsum(r["total_j"] for r in energy_rows)
        row["backhaul_energy_j"] = backhaul_energy(cfg, run.ledger is not None, row["backhaul_bytes"])
        due = (self.grid_s is None and agg.version % cfg.eval_every_rounds == 0) or last
        finite = all_finite(run.algorithm.global_model())
        return Trained(agg.version, used, row, due or not finite, finite, host_start_s, energy_rows, client_rows,
                       last)

    def _charge_run_end(self, version: int, end_s: float) -> list[dict[str, Any]]:
        """The RRC tails still running at the run's end (the last aggregation), as the synchronous
        runner charges them (:meth:`~sfl_sim.clients.energy.EnergyLedger.charge_run_end`); a client
        of a dispatch group still out had its tail cut by that dispatch, so its tail runs up to the
        group's start.  (The work of groups still out is past the run's last aggregation and is not
        charged, as before.)"""
        ledger = self.run.ledger
        assert ledger is not None
        busy_from_s = {k: float(g.start_s) for g in self.pending for k in g.cohort.tolist()}
        rows = []
        for charged in ledger.charge_run_end(version, end_s, busy_from_s):
            row = charged.row()
            if ledger.battery:
                row["battery_j"] = ledger.battery_j(row["client"])
            rows.append(row)
        return rows

    def _uplink_attempts(self) -> int:
        """Uplink attempts since the previous aggregation, over every dispatch group still out."""
        new = 0
        for group in self.pending:
            total = group.notes.uplink_attempts()
            new += total - self.attempts.get(id(group), 0)
            self.attempts[id(group)] = total
        return new

    def _charge(self, version: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Charge the dispatch groups whose clients have all arrived (at aggregation ``version``);
        they leave :attr:`pending`.  Returns their ``energy.csv`` rows and, with
        ``metrics.client_record``, their ``clients.csv`` rows (under ``version``: the aggregation at
        which the group's last client arrived)."""
        ledger, record = self.run.ledger, self.cfg.metrics.client_record
        done = [g for g in self.pending if all(k in g.left_s for k in g.cohort.tolist())]
        self.pending = [g for g in self.pending if g not in done]
        energy_rows: list[dict[str, Any]] = []
        clients: list[dict[str, Any]] = []
        for group in done:
            self.attempts.pop(id(group), None)
            end_s = max(group.left_s[k] for k in group.cohort.tolist())
            if record:
                clients += client_rows(version, context_clients(group, self.run.cell, end_s))
            if ledger is None:
                continue
            for charged in ledger.charge_round(version, group, end_s):
                row = charged.row()
                if ledger.battery:
                    row["battery_j"] = ledger.battery_j(row["client"])
                energy_rows.append(row)
        return energy_rows, clients


def _staleness_rows(agg: Aggregation) -> list[dict[str, Any]]:
    return [{"round": agg.version, "client": a.client, "dispatch": a.dispatch.sequence,
             "start_version": a.dispatch.version, "staleness": tau, "dispatched_s": a.dispatch.start_s,
             "arrived_s": a.arrived_s} for a, tau in zip(agg.used, agg.staleness, strict=True)]


def _replay(loop: _Loop, state: RunState) -> None:
    """Run silently from the start to the checkpoint's stop; check the model there.

    The replayed aggregations' drops are already in the tally the resume rebuilt from
    ``rounds.csv`` (:meth:`Drops.of_rounds <sfl_sim.runs.summary.Drops.of_rounds>`), so the replay
    tallies into a scratch one, which it then drops (else ``summary.json`` counts them twice)."""
    session = loop.session
    kept, session.drops = session.drops, Drops()
    while True:
        agg = loop.step()
        if agg is not None:
            loop.trained(agg, time.perf_counter())  # the same bookkeeping (mobility, energy), nothing written
        if loop.driver.version == state.round and session.sim.now_s == state.sim_time_s:
            break
        if loop.driver.version > state.round:
            raise CheckpointError(f"{session.files.checkpoint_path}: the replay of this asynchronous run passed "
                                  f"aggregation {state.round} at {state.sim_time_s} s without stopping there; "
                                  f"rerun into a new directory (-o)")
    session.drops = kept
    saved = state.algorithm["model"]
    have = session.run.algorithm.state_dict()["model"]
    if saved.keys() != have.keys() or not all(torch.equal(saved[k].cpu(), have[k].cpu()) for k in saved):
        raise CheckpointError(f"{session.files.checkpoint_path}: the replay reached aggregation {state.round} with "
                              f"another model than the checkpoint's (other code or threads?); rerun into a new "
                              f"directory (-o)")
    loop.skip_grid_through(state.sim_time_s)


def run_asynchronously(session: Any, bar: Any, on_round: Callable[[int, dict[str, Any]], None] | None,
                       gc_pause: Any, replay_to: RunState | None) -> dict[str, Any]:
    """Train ``session``'s asynchronous algorithm to ``rounds`` aggregations (module docstring);
    the body of :func:`sfl_sim.runs.runner.run_one` for such a run.  Returns the final summary."""
    cfg, files = session.cfg, session.files
    loop = _Loop(session)
    if replay_to is not None:
        _replay(loop, replay_to)
    else:
        session.evaluate(0)
        session.summarize(RUNNING if cfg.rounds else COMPLETE)
    host_start_s = time.perf_counter()
    while loop.driver.version < cfg.rounds and not time_budget_spent(cfg, session.sim.now_s):
        agg = loop.step()
        gc_pause.after_round()
        if agg is None:  # a grid time: the model the server holds now
            session.round = loop.driver.version
            evaluation = session.evaluate(loop.driver.version)
            session.summarize(RUNNING)
            session.checkpoint(evaluation)
            bar.evaluated(loop.driver.version, session.sim.now_s, evaluation["test_accuracy"],
                          evaluation["host_time_s"])
            continue
        session.round = agg.version
        trained = loop.trained(agg, host_start_s)
        evaluation = session.evaluate(agg.version) if trained.evaluate else None
        files.append_staleness(_staleness_rows(agg))
        session.record(trained, evaluation)
        host_start_s = time.perf_counter()
        if evaluation is not None:
            if session.summary["status"] == DIVERGED:
                return dict(session.summary)
            session.checkpoint(evaluation)
            bar.evaluated(agg.version, session.sim.now_s, evaluation["test_accuracy"], evaluation["host_time_s"])
        if on_round is not None:
            on_round(agg.version, {"sim_time_s": session.sim.now_s, "cohort": trained.cohort})
        bar.advance()
    return dict(session.summary)
