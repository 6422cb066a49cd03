"""Drive built runs round by round, writing each run directory as it goes.

:func:`run_scenario` decides for every run directory whether it starts, restarts or resumes
(:mod:`sfl_sim.runs.rundir.files`), builds every run (:mod:`sfl_sim.runs.build`) — all before any training —
and then trains them one after the other.  :func:`run_one` is a loop over named steps: *restore*
(continue from the checkpoint, or start the files), then per round *train* (select the cohort,
let the engine run the algorithm's round on the simulated clock), *evaluate* at the cadence (and
at round 0, so curves start at t = 0: the ``metrics.csv`` and ``classes.csv`` rows), *record*
(the summary, :mod:`sfl_sim.runs.summary`, the ``rounds.csv`` row and, unless
``metrics.client_record`` is off, the round's ``clients.csv`` rows, :mod:`sfl_sim.engine.client_rounds`)
and *checkpoint*
(:class:`~sfl_sim.runs.checkpoint.RunState`).  Every file goes through :class:`~sfl_sim.runs.rundir.files.RunDir`.
An interrupted run resumes from its last checkpoint with the same numbers it would have produced.

A run ends with ``status`` ``complete``, ``diverged`` (a non-finite weight or test loss: the rows
so far are kept and the summary says at which round and what to try) or ``failed`` (an error
during training, e.g. a plug-in returning garbage: the summary records it and
:class:`~sfl_sim.errors.RunFailed` carries one line to the user).
"""
from __future__ import annotations

import csv
import functools
import io
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sfl_sim.algorithms.asynchronous import is_asynchronous
from sfl_sim.channel.network.protocols import event_rows
from sfl_sim.clients.availability import round_start
from sfl_sim.clients.protocols import BatteryObserver
from sfl_sim.clients.selection import select_online
from sfl_sim.config import Scenario
from sfl_sim.engine import Counters, RoundContext, Simulator
from sfl_sim.engine.band import scheduling_form
from sfl_sim.engine.client_rounds import client_rounds
from sfl_sim.engine.record import Recorder
from sfl_sim.errors import RunFailed
from sfl_sim.kit.checks import one_line
from sfl_sim.kit.seeding import stream, torch_seed
from sfl_sim.models.evaluation import VacantClassProbe, class_accuracy_of, evaluate
from sfl_sim.runs import host
from sfl_sim.runs import summary as run_summary
from sfl_sim.runs.asynchronous import run_asynchronously
from sfl_sim.runs.build import (
    Run,
    build_cell,
    build_outage,
    build_run,
    build_scheduler,
    build_simulator,
    cell_table,
    component,
    load_dataset,
    resolve_device,
    selected_per_round,
)
from sfl_sim.runs.checkpoint import RunState
from sfl_sim.runs.progress import RunProgress
from sfl_sim.runs.resolved import (
    ResolutionMismatchError,
    code_versions,
    compression_differences,
    compression_record,
    resolve_run,
)
from sfl_sim.runs.round_steps import ROUND_COUNTERS as _ROUND_COUNTERS
from sfl_sim.runs.round_steps import Trained as _Trained
from sfl_sim.runs.round_steps import all_finite as _all_finite
from sfl_sim.runs.round_steps import backhaul_energy, client_rows, edge_counts, time_budget_spent
from sfl_sim.runs.round_steps import check_cohort as _check_cohort
from sfl_sim.runs.rundir import marker, work
from sfl_sim.runs.rundir.files import RunDir, RunDirPlan, check_writable
from sfl_sim.runs.rundir.schema import (
    CLIENTS_FILE,
    COMPLETE,
    DIVERGED,
    FAILED,
    RUNNING,
    SCENARIO_SUMMARY_CSV,
    SCENARIO_SUMMARY_MD,
    STOP_REASON,
    STOPPED_AT_ROUNDS,
    STOPPED_AT_TIME_BUDGET,
    WORK_SHA256,
    RunStatus,
)

__all__ = ["Run", "build_cell", "build_outage", "build_run", "build_simulator", "charge_energy", "component",
           "evaluate", "load_dataset", "resolve_device", "resolved_scenario", "run_one", "run_scenario",
           "prepare_scenario", "selected_per_round", "time_budget_spent"]


def resolved_scenario(cfg: Scenario, label: str, device: torch.device) -> dict[str, Any]:
    """What ``scenario.yaml`` records for the run of ``label``: the scenario with that one algorithm."""
    scenario = cfg.to_yaml_dict()
    scenario.pop("algorithms")
    scenario["algorithm"] = cfg.algorithm(label).as_dict()
    scenario["device_used"] = str(device)
    scenario["torch_threads_used"] = torch.get_num_threads()
    return scenario


#: The shared random streams whose draws an algorithm makes at its events (minibatches, dropout;
#: ``torch_cuda`` on a GPU): the order in which a round's processes draw from them is recorded.
WATCHED_STREAMS = ("minibatch", "torch", "torch_cuda")


class _Streams:
    """The run's random streams that the runner (not the algorithm) draws from."""

    def __init__(self, seed: int) -> None:
        self.selection = stream(seed, "selection")
        self.fading = stream(seed, "fading")
        self.mobility = stream(seed, "mobility")
        self.harq = stream(seed, "harq")

    def state(self, run: Run) -> dict[str, Any]:
        state: dict[str, Any] = {name: getattr(self, name).bit_generator.state
                                 for name in ("selection", "fading", "mobility", "harq")}
        state["minibatch"] = run.setup.minibatch_rng.bit_generator.state
        state["torch"] = torch.get_rng_state()
        if torch.cuda.is_available():
            state["torch_cuda"] = torch.cuda.get_rng_state_all()
        return state

    def load(self, run: Run, state: dict[str, Any]) -> None:
        for name in ("selection", "fading", "mobility", "harq"):
            getattr(self, name).bit_generator.state = state[name]
        run.setup.minibatch_rng.bit_generator.state = state["minibatch"]
        torch.set_rng_state(state["torch"])
        if "torch_cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["torch_cuda"])


def _select(run: Run, sim: Any, rng: np.random.Generator, rnd: int) -> tuple[np.ndarray, int, float]:
    """The round's cohort among the clients online at its start whose battery covers a round, how
    many were online, and how long the clock waited for anyone to come online (0 without
    availability)."""
    cfg = run.cfg
    n_clients, n_cohort = cfg.clients.count, selected_per_round(cfg)
    if run.availability is None:
        online, waited_s = np.ones(n_clients, dtype=bool), 0.0
    else:
        start_s, online = round_start(run.availability, n_clients, sim.now_s)
        waited_s = sim.wait_until(start_s)
    selectable = online
    if run.ledger is not None and run.ledger.battery:
        if isinstance(run.selector, BatteryObserver):
            run.selector.observe_battery(run.ledger.remaining_j)
        selectable = online & run.ledger.selectable()
        if not selectable.any():
            raise RuntimeError(f"energy.battery: no online client has the charge for round {rnd} "
                               f"({int(online.sum())} online, {int(run.ledger.selectable().sum())} charged); use "
                               f"larger capacities or fewer rounds")
    picked = select_online(run.selector, n_clients, n_cohort, rng, selectable)
    cohort = _check_cohort(picked, n_clients, min(n_cohort, int(selectable.sum())), run.selector)
    return cohort, int(online.sum()), waited_s


def charge_energy(run: Run, sim: Simulator, rnd: int, last: bool = False) -> tuple[list[dict[str, Any]], float | str]:
    """Charge round ``rnd`` (just run on ``sim``) to the run's energy ledger; with ``last`` (the
    run's last round) also every client's RRC tail up to the run's end
    (:meth:`~sfl_sim.clients.energy.EnergyLedger.charge_run_end`).

    Returns
    -------
    (list of dict, float or str)
        The round's ``energy.csv`` rows (with ``battery_j`` when batteries are on) and its
        ``rounds.csv`` ``client_energy_j`` (their sum); no rows and ``""`` with ``energy.enabled``
        false.
    """
    if run.ledger is None:
        return [], ""
    charged = run.ledger.charge_round(rnd, sim.last_round, sim.now_s)
    if last:
        charged += run.ledger.charge_run_end(rnd, sim.now_s)
    energy_rows = [c.row() for c in charged]
    if run.ledger.battery:
        for energy_row in energy_rows:
            energy_row["battery_j"] = run.ledger.battery_j(energy_row["client"])
    return energy_rows, math.fsum(c.total_j for c in charged)


class _Session:
    """One run being trained: its parts, its files, its clock, and its evaluated rows so far.

    The steps :func:`run_one` calls, in order: :meth:`restore` (or start the files), then per
    round :meth:`train_round`, :meth:`evaluate` when due, :meth:`record` (summary and
    ``rounds.csv``), :meth:`checkpoint` after an evaluation.
    """

    def __init__(self, run: Run, files: RunDir, plan: RunDirPlan, record_work: bool = True) -> None:
        self.run, self.cfg, self.files, self.plan = run, run.cfg, files, plan
        self.streams = _Streams(self.cfg.seed)
        # what the clock needed, per round (work.jsonl.gz), and the streams whose draw order is a decision
        watched = WATCHED_STREAMS if run.device.type == "cuda" else WATCHED_STREAMS[:2]
        self.recorder = Recorder(watched, self._draw_state) if record_work else None
        torch.manual_seed(torch_seed(self.cfg.seed, "dropout"))
        self.round = 0
        self.summary: dict[str, Any] = {}
        self.drops = run_summary.Drops()
        self._slot_rows: list[dict[str, Any]] = []  # the last trained round's slots.csv rows (metrics.slot_trace)
        self.eval_batch = host.eval_batch_size(self.cfg.eval_batch_size, run.device)
        # Opt-in: it scores every aggregated local model at each evaluated round (metrics: in the scenario).
        self.probe = VacantClassProbe(run.test_x, run.test_y, run.setup.client_label_counts.cpu().numpy(),
                                      self.eval_batch) if self.cfg.metrics.local_vacant_class_accuracy else None

    def restore(self, replay: bool = False) -> RunState | None:
        """Continue from the plan's checkpoint (algorithm, streams, cell, selector, meter, files),
        or start the run directory's files; then build the engine at the restored clock.

        With ``replay`` (an asynchronous run, :mod:`sfl_sim.runs.asynchronous`) the files are
        kept through the checkpoint but nothing is loaded: the run stays as built, its engine at
        time 0, and the checkpoint's state is returned for the replay to reach."""
        run, cfg, files = self.run, self.cfg, self.files
        scenario = resolved_scenario(cfg, run.label, run.device)
        sim_time_s, host_offset_s, counters = 0.0, 0.0, Counters()
        applied = list(run.algorithm.setup.compression.codecs)
        replayed: RunState | None = None
        if self.plan.resume and self.plan.checkpoint is not None:
            _check_compression(files, compression_record(cfg, run.label, applied))
            state = self.plan.state(self._as_built(), scenario)  # in today's layout, however old
            self.round, host_offset_s = state.round, state.host_time_s
            if replay:
                replayed = state
            else:
                run.algorithm.load_state_dict(state.algorithm)
                sim_time_s, counters = state.sim_time_s, Counters.from_dict(state.counters)
                self.streams.load(run, state.rng)
                run.cell.load_state_dict(state.cell)  # positions, LOS and shadowing as they were at the checkpoint
                run.selector.load_state_dict(state.selector)  # stateful selectors (class_balanced)
                run.algorithm.meter.load_state_dict(state.flops_per_sample)
                if run.ledger is not None:
                    run.ledger.load_state_dict(state.energy)
            files.start_logs(run.setup.num_classes, keep_through_round=self.round, **self._logs())
            if self.recorder is not None:
                work.keep_through(files.path, self.round)
            self.drops = run_summary.Drops.of_rounds(files.read_rounds_rows())
            if self.round < cfg.rounds and not time_budget_spent(cfg, state.sim_time_s):
                # more rounds asked for: the only scenario change a resume allows
                files.write_scenario(scenario)
                # which code trained the rounds after it, the record in today's shape
                files.record_resume(self.round, code_versions(), resolve_run(cfg, run.label).record)
            self.summary = files.read_summary() or {}
        else:
            files.start_logs(run.setup.num_classes, **self._logs())
            if self.recorder is not None:
                work.start(files.path)
            files.write_scenario(scenario)
            files.write_resolved(resolve_run(cfg, run.label, applied).record)
            files.write_cell(cell_table(run))  # once, at the start: where the clients were dropped
        self.sim = build_simulator(run, start_time_s=sim_time_s, counters=counters, fading_rng=self.streams.fading,
                                   harq_rng=self.streams.harq)
        self.rows = files.read_metrics_rows()
        self.host_start_s = time.perf_counter() - host_offset_s
        return replayed

    def _as_built(self) -> dict[str, Any]:
        """The run's state as built, before it loads a checkpoint, in the checkpoint's layout: what
        the run has that an older checkpoint may lack (its counters, streams, cell, energy ledger,
        its algorithm's state)."""
        run = self.run
        return {"counters": Counters().as_dict(), "rng": self.streams.state(run), "cell": run.cell.state_dict(),
                "energy": run.ledger.state_dict() if run.ledger is not None else {},
                "algorithm": run.algorithm.state_dict()}

    def _draw_state(self) -> tuple[object, ...]:
        """The state of each of :data:`WATCHED_STREAMS` now (compared, not kept)."""
        state: tuple[object, ...] = (self.run.setup.minibatch_rng.bit_generator.state,
                                     torch.get_rng_state().numpy().tobytes())
        if self.run.device.type == "cuda":
            state += (torch.cuda.get_rng_state(self.run.device).numpy().tobytes(),)
        return state

    def _logs(self) -> dict[str, bool]:
        """The ``energy.csv``, ``clients.csv``, ``staleness.csv`` and ``slots.csv`` options of
        :meth:`RunDir.start_logs` for this run."""
        ledger = self.run.ledger
        return {"energy": ledger is not None, "battery": ledger is not None and ledger.battery,
                "clients": self.cfg.metrics.client_record, "staleness": is_asynchronous(self.run.algorithm),
                "slots": self.cfg.metrics.slot_trace and not is_asynchronous(self.run.algorithm)
                and scheduling_form(build_scheduler(self.cfg)) == "slot",
                "network": self.cfg.cell.network is not None}

    def train_round(self, rnd: int) -> _Trained:
        """Select the cohort and run the algorithm's round on the simulated clock; move the clients."""
        run, cfg, sim = self.run, self.cfg, self.sim
        self.round = rnd
        host_start_s = time.perf_counter()
        before = sim.counters.as_dict()
        cohort, n_online, waited_s = _select(run, sim, self.streams.selection, rnd)
        due = rnd % cfg.eval_every_rounds == 0 or rnd == cfg.rounds
        observer = self.probe if due else None  # it sees the local models only of a round to be evaluated
        # a wait for anyone to come online belongs to the round (the clock's rows add up)
        context = RoundContext if self.recorder is None else self.recorder.context
        if self.recorder is not None:
            self.recorder.round = rnd
        duration_s = waited_s + sim.run_round(lambda ctx: run.algorithm.run_round(ctx, cohort, observer), cohort,
                                              context, round_index=rnd)
        # read before the cell moves on: the channel the round saw
        clients = client_rows(rnd, client_rounds(sim, waited_s)) if cfg.metrics.client_record else []
        trace = sim.last_round.uplink_slot_trace or []
        self._slot_rows = [{"round": rnd, "slot": g.slot, "time_s": g.start_s, "client": g.client, "rbs": g.rbs,
                            "tb_bits": g.block_bits, "failed": int(g.failed), "cell": g.cell} for g in trace]
        # clients move while the round runs (static: no-op); the neighbours may follow its uplink load
        uplink_load = sim.last_round.uplink_load()
        run.cell.move(duration_s, self.streams.mobility, uplink_load=uplink_load)
        after = sim.counters.as_dict()
        counted = {k: after[k] - before[k] for k in _ROUND_COUNTERS}
        if not after["harq_retransmissions"]:  # no HARQ copy in the run so far: rounds.csv writes 0, not 0.0
            counted["harq_retransmissions"] = 0
        notes = sim.last_round.notes
        row = {"round": rnd, "sim_time_s": sim.now_s, "round_sim_time_s": duration_s, **counted,
               "uplink_attempts": notes.uplink_attempts(), "online_clients": n_online,
               "unavailable_clients": sum(1 for why in notes.dropped.values() if why == "unavailable"),
               "availability_wait_s": waited_s, "uplink_rb_load": uplink_load, **edge_counts(before, after),
               "cohort": " ".join(map(str, cohort.tolist())),
               "dropped": " ".join(f"{k}:{why}" for k, why in sorted(notes.dropped.items()))}
        last = rnd == cfg.rounds or time_budget_spent(cfg, sim.now_s)
        energy_rows, row["client_energy_j"] = charge_energy(run, sim, rnd, last)
        row["backhaul_energy_j"] = backhaul_energy(cfg, run.ledger is not None, row["backhaul_bytes"])
        self.drops.add(len(cohort), notes.dropped.values(), row["uplink_attempts"])
        finite = _all_finite(run.algorithm.global_model())
        return _Trained(rnd, cohort, row, due or last or not finite, finite, host_start_s, energy_rows, clients, last)

    def evaluate(self, rnd: int) -> dict[str, Any]:
        """Score the model(s) on the test set; append the ``classes.csv`` and ``metrics.csv`` rows."""
        scores = self.run.algorithm.evaluate(evaluate, self.run.test_x, self.run.test_y, self.eval_batch)
        acc, loss = scores
        per_class = class_accuracy_of(scores, self.run.setup.num_classes)
        self.files.append_classes(rnd, self.probe.take() if self.probe is not None else math.nan, per_class.tolist())
        c = self.sim.counters
        row = {"round": rnd, "sim_time_s": self.sim.now_s, "test_accuracy": acc, "test_loss": loss,
               "uplink_bytes": c.uplink_bytes, "downlink_bytes": c.downlink_bytes,
               "client_flops": c.client_flops, "server_flops": c.server_flops,
               "host_time_s": time.perf_counter() - self.host_start_s}
        self.files.append_metrics(row)
        self.rows.append({k: float(v) for k, v in row.items()})
        return row

    def summarize(self, status: RunStatus, pending_clients: Sequence[Mapping[str, Any]] = ()) -> None:
        """Rewrite ``summary.json`` with ``status`` after the rows so far (``pending_clients``: the
        round's ``clients.csv`` rows not appended yet)."""
        self.summary = run_summary.summary(self.run, self.rows, self.sim.counters, status, self.drops)
        network = self.run.cell.radio.network
        if network is not None:  # every change of serving cell so far (a network of cells)
            self.files.write_handovers(event_rows(run_summary.handovers_until(network, self.sim.now_s)))
            # each cell's load, from clients.csv (the serving cell of each client-round) and the events
            # the summary counts (up to the last evaluated round's clock)
            text = self.files.log_text(CLIENTS_FILE)
            written = [] if text is None else list(csv.DictReader(io.StringIO(text)))
            events = run_summary.handovers_until(network, float(self.rows[-1]["sim_time_s"]))
            self.summary["cells"] = run_summary.cell_load([*written, *pending_clients], events, network.n_cells)
        if status == COMPLETE:
            self.summary[STOP_REASON] = STOPPED_AT_ROUNDS if self.round == self.cfg.rounds else STOPPED_AT_TIME_BUDGET
            if self.recorder is not None:  # the record, whole now, bound to the run (sfl-sim retime checks it)
                self.summary[WORK_SHA256] = work.digest(self.files.path)
        self.files.write_summary(self.summary)

    def record(self, trained: _Trained, evaluation: dict[str, Any] | None) -> None:
        """The round's work record; after an evaluation, the summary (``diverged`` on a non-finite
        weight or test loss); then the round's ``rounds.csv`` row."""
        if self.recorder is not None and self.recorder.last is not None:  # before the summary: it keeps its digest
            work.append_round(self.files.path, self.recorder.last.as_dict())
        if evaluation is not None:
            if not trained.weights_finite or not math.isfinite(evaluation["test_loss"]):
                self.summary = run_summary.diverged(self.run, self.rows, self.sim.counters, trained.round,
                                                    trained.weights_finite, self.drops)
                self.files.write_summary(self.summary)
            else:
                self.summarize(COMPLETE if trained.last else RUNNING, trained.client_rows)
        # Logged after the evaluation, so that a slow evaluation shows in its round's host time,
        # and before the checkpoint, so that a checkpoint never names a round rounds.csv lacks.
        if self.run.ledger is not None:
            self.files.append_energy(trained.energy_rows)
        if self.cfg.metrics.client_record:
            self.files.append_clients(trained.client_rows)
        if self._logs()["slots"]:
            self.files.append_slots(self._slot_rows)
        self.files.append_rounds({**trained.row, "round_host_time_s": time.perf_counter() - trained.host_start_s})

    def checkpoint(self, evaluation: dict[str, Any]) -> None:
        """Replace ``checkpoint.pt`` by where the run stands now."""
        run, sim = self.run, self.sim
        self.files.save_checkpoint(RunState(
            round=self.round, sim_time_s=sim.now_s, host_time_s=evaluation["host_time_s"],
            counters=sim.counters.as_dict(), algorithm=run.algorithm.state_dict(), rng=self.streams.state(run),
            cell=run.cell.state_dict(), flops_per_sample=run.algorithm.meter.state_dict(),
            selector=run.selector.state_dict(),
            energy=run.ledger.state_dict() if run.ledger is not None else {}))

    def failed(self, exc: Exception) -> RunFailed:
        """Record the error in ``summary.json``; the exception that carries it to the user."""
        message = f"{self.run.label}: round {self.round} failed: {one_line(exc, with_type=True)}"
        summary = run_summary.failed(self.run, self.rows, self.sim.counters, message, self.drops)
        self.files.write_summary(summary)
        return RunFailed(message, summary)


def run_one(run: Run, run_dir: Path, resume: bool = False, progress: bool = True,
            on_round: Callable[[int, dict[str, Any]], None] | None = None,
            plan: RunDirPlan | None = None, coordinates: dict[str, Any] | None = None,
            position: tuple[int, int] = (1, 1), record_work: bool = True) -> dict[str, Any]:
    """Train ``run`` for ``cfg.rounds`` rounds, writing ``run_dir`` as it goes.

    Parameters
    ----------
    run : Run
    run_dir : Path
    resume : bool
        Continue from ``run_dir/checkpoint.pt`` when there is one (after the checks of
        :meth:`sfl_sim.runs.rundir.files.RunDir.plan`).
    progress : bool
        Show a header line and the progress on stderr (:class:`sfl_sim.runs.progress.RunProgress`).
    on_round : callable, optional
        Called after every round with (round, info) — used by tests and benchmarks.
    plan : RunDirPlan, optional
        The decision already taken for ``run_dir`` (with its loaded checkpoint).
    coordinates : dict, optional
        A study run's coordinates (grid fields, algorithm, seed), recorded in ``summary.json``.
    position : (int, int)
        This run's place among the scenario's runs (i of n), for the header line.
    record_work : bool
        Write what the clock needed (``work.jsonl.gz``, :mod:`sfl_sim.engine.record`) as the run goes.

    Returns
    -------
    dict
        The final summary (``status`` ``complete`` or ``diverged``).

    Raises
    ------
    RunDirError, CheckpointError
        If ``run_dir`` cannot be started or resumed as asked.
    RunFailed
        If training raised; the summary is written with ``status: failed`` first.
    """
    cfg = run.cfg
    files = RunDir(run_dir, summary_extra={"coordinates": coordinates} if coordinates else None)
    if plan is None:
        plan = files.plan(resolved_scenario(cfg, run.label, run.device), resume,
                          resolution=lambda: resolve_run(cfg, run.label))
    if plan.overwrite:
        # The new run is written beside the old one, which is replaced only once the new one has
        # finished (complete or diverged): a new run that fails, or is killed, leaves it whole.
        stage = marker.staging_dir(run_dir, "overwrite")
        try:
            summary = run_one(run, stage, progress=progress, on_round=on_round, plan=RunDirPlan(stage, resume=False),
                              coordinates=coordinates, position=position, record_work=record_work)
        except RunFailed as exc:
            marker.remove_staging(stage)
            raise RunFailed(f"{exc}; {run_dir} still holds the run it was to replace", exc.summary) from exc.__cause__
        files.replace_with(stage)
        return summary
    files.mark()
    if plan.resume and not cfg.training.torch_threads:
        _threads_made_with(files)
    asynchronous = is_asynchronous(run.algorithm)
    # an asynchronous run keeps no work record: its loop (sfl_sim.runs.asynchronous) is not re-timed
    session = _Session(run, files, plan, record_work and not asynchronous)
    replay_to = session.restore(replay=asynchronous)
    bar = RunProgress(progress)
    bar.start(cfg.name, run.label, position, run.device, run_dir, cfg.rounds, session.round)
    gc_pause = host.LongLivedObjects()
    try:
        if asynchronous:  # its own loop (sfl_sim.runs.asynchronous)
            return run_asynchronously(session, bar, on_round, gc_pause, replay_to)
        if not plan.resume:
            session.evaluate(0)  # the initial model: curves start at t = 0
            session.summarize(RUNNING if cfg.rounds else COMPLETE)
        for rnd in range(session.round + 1, cfg.rounds + 1):
            if time_budget_spent(cfg, session.sim.now_s):  # stopped at its budget (a resume has nothing to do)
                break
            trained = session.train_round(rnd)
            gc_pause.after_round()
            evaluation = session.evaluate(rnd) if trained.evaluate else None
            session.record(trained, evaluation)
            if evaluation is not None:
                if session.summary["status"] == DIVERGED:
                    return session.summary
                session.checkpoint(evaluation)
                bar.evaluated(rnd, session.sim.now_s, evaluation["test_accuracy"], evaluation["host_time_s"])
            if on_round is not None:
                on_round(rnd, {"sim_time_s": session.sim.now_s, "cohort": trained.cohort})
            bar.advance()
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        raise session.failed(exc) from exc
    finally:
        gc_pause.end()
        bar.close()
    return session.summary


def _check_compression(files: RunDir, today: dict[str, Any]) -> None:
    """Refuse to continue a run whose recorded compression paths (``resolved.yaml``) differ from
    those the built run applies (``today``, :func:`compression_record`): its scenario is the same,
    so the code changed which paths an algorithm takes.  A run without a record is not compared."""
    record = files.read_resolved().value
    if record is None:
        return
    fields = compression_differences(record, {"compression": today})
    if fields:
        raise ResolutionMismatchError(f"{files.path} was made with other compression paths than this code applies "
                                      f"to its scenario ({files.resolved_path.name}):", fields)


def _threads_made_with(files: RunDir) -> None:
    """Use the torch threads a run was made with (``torch_threads_used`` of its scenario.yaml).

    A scenario that leaves ``training.torch_threads`` null gets the cores free when it starts
    (:func:`sfl_sim.runs.host.default_torch_threads`); a reduction split among another number of
    threads rounds differently, so a resume takes the count the run started with, and reproduces
    its numbers under any load."""
    used = files.torch_threads_used()
    if used is not None:
        torch.set_num_threads(used)


#: What ``sfl-sim scenario`` writes at the top of its output directory, beside the run directories.
SCENARIO_SUMMARY_FILES = (SCENARIO_SUMMARY_CSV, SCENARIO_SUMMARY_MD)


def prepare_scenario(cfg: Scenario, resume: bool = False, strict_versions: bool = False,
                     overwrite: bool = False) -> list[tuple[Run, RunDirPlan]]:
    """Everything a scenario needs before training, in the order that fails cheapest first.

    The output directory's writability and ownership (a ``summary.csv``/``summary.md`` or a run
    file that sfl-sim did not write is refused, :mod:`sfl_sim.runs.rundir.marker`), every run
    directory's state (and, with ``--resume``,
    the scenario it was made with, the parameters and versions it resolved to — other versions
    refused with ``strict_versions`` — and its checkpoint) are checked before the data set is
    loaded; then every run is built.  ``--check`` stops here.  With ``overwrite`` a directory
    that holds a run is planned to be replaced (:attr:`RunDirPlan.overwrite`); nothing is removed
    here: :func:`run_one` writes the new run beside it and replaces it once the new one has finished.

    Raises
    ------
    ConfigError, RunDirError, CheckpointError, DatasetNotFoundError
    """
    out = Path(cfg.output_dir)
    check_writable(out)
    marker.claim(out, "scenario", SCENARIO_SUMMARY_FILES)
    device = resolve_device(cfg.device)
    plans = [RunDir(out / spec.label).plan(resolved_scenario(cfg, spec.label, device), resume,
                                           resolution=functools.partial(resolve_run, cfg, spec.label),
                                           strict_versions=strict_versions, overwrite=overwrite)
             for spec in cfg.algorithms]
    dataset = load_dataset(cfg)
    runs = []
    for spec in cfg.algorithms:
        run = build_run(cfg, spec, dataset)
        cell_table(run)  # SNR and rates finite: what the run's first transfer would find out
        build_simulator(run)
        runs.append(run)
    return list(zip(runs, plans, strict=True))


def run_scenario(cfg: Scenario, resume: bool = False, progress: bool = True,
                 strict_versions: bool = False, overwrite: bool = False) -> list[dict[str, Any]]:
    """Run every algorithm of a validated scenario, each into ``output_dir/<label>``.

    Every part is built for every algorithm before the first one trains, so a bad parameter of
    the last algorithm stops the scenario before any work.  A run that fails or diverges does not
    stop the others; its summary says why.  ``overwrite`` replaces the runs the directories
    hold (each once its new run has finished, :func:`run_one`).

    Raises
    ------
    ConfigError, RunDirError, CheckpointError
        Before any work (nothing is overwritten).
    """
    prepared = prepare_scenario(cfg, resume, strict_versions, overwrite)
    marker.record(cfg.output_dir, "scenario", SCENARIO_SUMMARY_FILES)  # before anything is written into it
    summaries = []
    for i, (run, plan) in enumerate(prepared, start=1):
        try:
            summaries.append(run_one(run, plan.run_dir, progress=progress, plan=plan, position=(i, len(prepared))))
        except RunFailed as exc:
            summaries.append({**(exc.summary or {"label": run.label}), "status": FAILED, "error": str(exc)})
        # free this run's tensors before the next one trains
        run.algorithm = None  # type: ignore[assignment]
    return summaries
