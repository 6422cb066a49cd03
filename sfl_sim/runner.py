"""Drive built runs round by round, writing each run directory as it goes.

:func:`run_scenario` decides for every run directory whether it starts, restarts or resumes
(:mod:`sfl_sim.run_dir`), builds every run (:mod:`sfl_sim.build`) — all before any training —
and then trains them one after the other.  :func:`run_one` loops over rounds: select the cohort,
let the engine run the algorithm's round on the simulated clock, evaluate at the cadence (and at
round 0, so curves start at t = 0), append the rows (``metrics.csv``, ``rounds.csv``, and the
per-class accuracies of ``classes.csv``), rewrite the summary and the checkpoint.  An interrupted
run resumes from its last checkpoint with the same numbers it would have produced.

A run ends with ``status`` ``complete``, ``diverged`` (a non-finite weight or test loss: the rows
so far are kept and the summary says at which round and what to try) or ``failed`` (an error
during training, e.g. a plug-in returning garbage: the summary records it and
:class:`~sfl_sim.errors.RunFailed` carries one line to the user).
"""
from __future__ import annotations

import functools
import math
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import pandas as pd
import torch
import yaml

from analysis.schema import (BEST_ACCURACY_DEFINITION, CLASS_ACCURACY_COLUMN, CLASSES_FILE, CLASSES_LEADING_COLUMNS,
                             RESOLVED_FILE, VACANT_ACCURACY_COLUMN)
from analysis.tta import time_to_accuracy_s
from sfl_sim import checkpoint, host
from sfl_sim.build import (Run, build_cell, build_outage, build_run, build_simulator, cell_table, component,
                           load_dataset, resolve_device, selected_per_round)
from sfl_sim.config import Scenario
from sfl_sim.engine import Counters, Simulator
from sfl_sim.errors import RunFailed
from sfl_sim.evaluation import VacantClassProbe, class_accuracy_of, evaluate
from sfl_sim.progress import RunProgress
from sfl_sim.resolved import code_versions, read_record, resolve_run
from sfl_sim.results import METRICS_COLUMNS, ROUNDS_COLUMNS, RunWriter, read_metrics_rows
from sfl_sim.run_dir import RunDirPlan, check_writable, plan_run_dir
from sfl_sim.seeding import stream, torch_seed

__all__ = ["Run", "build_cell", "build_outage", "build_run", "build_simulator", "component", "evaluate",
           "load_dataset", "resolve_device", "resolved_scenario", "run_one", "run_scenario", "prepare_scenario",
           "selected_per_round"]


def classes_columns(num_classes: int) -> List[str]:
    """Header of ``classes.csv`` for ``num_classes`` classes (:mod:`analysis.schema`)."""
    return [*CLASSES_LEADING_COLUMNS, *(CLASS_ACCURACY_COLUMN.format(n) for n in range(num_classes))]


def resolved_scenario(cfg: Scenario, label: str, device: torch.device) -> Dict[str, Any]:
    """What ``scenario.yaml`` records for the run of ``label``: the scenario with that one algorithm."""
    scenario = cfg.to_yaml_dict()
    scenario.pop("algorithms")
    scenario["algorithm"] = cfg.algorithm(label).as_dict()
    scenario["device_used"] = str(device)
    scenario["torch_threads_used"] = torch.get_num_threads()
    return scenario


def _threads_made_with(run_dir: Path) -> None:
    """Use the torch threads a run was made with (``torch_threads_used`` of its scenario.yaml).

    A scenario that leaves ``training.torch_threads`` null gets the cores free when it starts
    (:func:`sfl_sim.host.default_torch_threads`); a reduction split among another number of
    threads rounds differently, so a resume takes the count the run started with, and reproduces
    its numbers under any load."""
    try:
        made_with = yaml.safe_load((run_dir / "scenario.yaml").read_text())
        used = int(made_with.get("torch_threads_used") or 0)
    except (OSError, yaml.YAMLError, AttributeError, TypeError, ValueError):
        return
    if used >= 1:
        torch.set_num_threads(used)


def _time_to_accuracy(rows: List[Dict[str, float]], targets: List[float]) -> Dict[str, Optional[float]]:
    """Simulated time to each target accuracy (None when not reached), via :mod:`analysis.tta`."""
    metrics = pd.DataFrame(rows)
    out: Dict[str, Optional[float]] = {}
    for target in targets:
        t = time_to_accuracy_s(metrics, target)
        out[f"{target:g}"] = None if math.isnan(t) else t
    return out


def _all_finite(module: torch.nn.Module) -> bool:
    """Whether every parameter and float buffer is finite (one device sync for the whole model)."""
    flags = [torch.isfinite(t).all() for t in list(module.parameters()) + list(module.buffers())
             if torch.is_floating_point(t)]
    return bool(torch.stack(flags).all()) if flags else True


class _Streams:
    """The run's random streams that the runner (not the algorithm) draws from."""

    def __init__(self, seed: int) -> None:
        self.selection = stream(seed, "selection")
        self.fading = stream(seed, "fading")
        self.mobility = stream(seed, "mobility")

    def state(self, run: Run) -> Dict[str, Any]:
        state: Dict[str, Any] = {name: getattr(self, name).bit_generator.state
                                 for name in ("selection", "fading", "mobility")}
        state["minibatch"] = run.setup.minibatch_rng.bit_generator.state
        state["torch"] = torch.get_rng_state()
        if torch.cuda.is_available():
            state["torch_cuda"] = torch.cuda.get_rng_state_all()
        return state

    def load(self, run: Run, state: Dict[str, Any]) -> None:
        for name in ("selection", "fading", "mobility"):
            getattr(self, name).bit_generator.state = state[name]
        run.setup.minibatch_rng.bit_generator.state = state["minibatch"]
        torch.set_rng_state(state["torch"])
        if "torch_cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["torch_cuda"])


def _check_cohort(cohort: Any, n_clients: int, n_selected: int, selector: Any) -> np.ndarray:
    """A selector's pick, checked: ``n_selected`` distinct client ids in range (a plug-in may err)."""
    arr = np.asarray(cohort)
    if arr.shape != (n_selected,) or not np.issubdtype(arr.dtype, np.integer) or \
            (arr.size and (arr.min() < 0 or arr.max() >= n_clients)) or len(np.unique(arr)) != arr.size:
        raise ValueError(f"clients.selection: {type(selector).__name__}.select returned {cohort!r}; allowed: "
                         f"{n_selected} distinct client ids in [0, {n_clients})")
    return arr.astype(np.int64)


def run_one(run: Run, run_dir: Path, resume: bool = False, progress: bool = True,
            on_round: Optional[Callable[[int, Dict[str, Any]], None]] = None,
            plan: Optional[RunDirPlan] = None, coordinates: Optional[Dict[str, Any]] = None,
            position: tuple[int, int] = (1, 1)) -> Dict[str, Any]:
    """Train ``run`` for ``cfg.rounds`` rounds, writing ``run_dir`` as it goes.

    Parameters
    ----------
    run : Run
    run_dir : Path
    resume : bool
        Continue from ``run_dir/checkpoint.pt`` when there is one (after the checks of
        :func:`sfl_sim.run_dir.plan_run_dir`).
    progress : bool
        Show a header line and the progress on stderr (:class:`sfl_sim.progress.RunProgress`).
    on_round : callable, optional
        Called after every round with (round, info) — used by tests and benchmarks.
    plan : RunDirPlan, optional
        The decision already taken for ``run_dir`` (with its loaded checkpoint).
    coordinates : dict, optional
        A study run's coordinates (grid fields, algorithm, seed), recorded in ``summary.json``.
    position : (int, int)
        This run's place among the scenario's runs (i of n), for the header line.

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
    n_classes = run.setup.num_classes
    class_header = classes_columns(n_classes)
    if plan is None:
        plan = plan_run_dir(run_dir, resolved_scenario(cfg, run.label, run.device), resume,
                            resolution=lambda: resolve_run(cfg, run.label))
    if plan.resume and not cfg.training.torch_threads:
        _threads_made_with(run_dir)  # the same reductions split the same way: the same numbers
    scenario = resolved_scenario(cfg, run.label, run.device)
    writer = RunWriter(run_dir, summary_extra={"coordinates": coordinates} if coordinates else None)
    streams = _Streams(cfg.seed)
    torch.manual_seed(torch_seed(cfg.seed, "dropout"))
    start_round, sim_time_s, host_offset_s, counters = 0, 0.0, 0.0, Counters()
    if plan.resume:
        state = plan.checkpoint
        run.algorithm.load_state_dict(state["algorithm"])
        start_round, sim_time_s, host_offset_s = state["round"], state["sim_time_s"], state["host_time_s"]
        counters = Counters.from_dict(state["counters"])
        streams.load(run, state["rng"])
        run.cell.load_state_dict(state["cell"])  # positions, LOS and shadowing as they were at the checkpoint
        run.selector.load_state_dict(state["selector"])  # stateful selectors (class_balanced)
        run.algorithm.meter.flops_per_sample.update(state["flops_per_sample"])
        writer.start_log("metrics.csv", METRICS_COLUMNS, keep_through_round=start_round)
        writer.start_log("rounds.csv", ROUNDS_COLUMNS, keep_through_round=start_round)
        writer.start_log(CLASSES_FILE, class_header, keep_through_round=start_round)
        if start_round < cfg.rounds:  # more rounds asked for: the only scenario change a resume allows
            writer.write_scenario(scenario)
            record = read_record(run_dir)
            if record is not None:  # which code trained the rounds after the checkpoint
                record.setdefault("resumes", []).append({"after_round": start_round, "versions": code_versions()})
                writer.write_yaml(RESOLVED_FILE, record)
    else:
        writer.start_log("metrics.csv", METRICS_COLUMNS)
        writer.start_log("rounds.csv", ROUNDS_COLUMNS)
        writer.start_log(CLASSES_FILE, class_header)
        writer.write_scenario(scenario)
        writer.write_yaml(RESOLVED_FILE, resolve_run(cfg, run.label).record)
        writer.write_table("cell.csv", cell_table(run))  # once, at the start: where the clients were dropped

    sim = build_simulator(run, start_time_s=sim_time_s, counters=counters, fading_rng=streams.fading)
    n_cohort = selected_per_round(cfg)
    rows = read_metrics_rows(writer.metrics_path)
    host_start = time.perf_counter() - host_offset_s
    bar = RunProgress(progress)
    bar.start(cfg.name, run.label, position, run.device, run_dir, cfg.rounds, start_round)
    summary: Dict[str, Any] = (writer.read_summary() or {}) if plan.resume else {}

    eval_batch = host.eval_batch_size(cfg.eval_batch_size, run.device)
    # Opt-in: it scores every aggregated local model at each evaluated round (metrics: in the scenario).
    probe = VacantClassProbe(run.test_x, run.test_y, run.setup.client_label_counts.cpu().numpy(), eval_batch) \
        if cfg.metrics.local_vacant_class_accuracy else None

    def record_evaluation(rnd: int) -> Dict[str, float]:
        scores = run.algorithm.evaluate(evaluate, run.test_x, run.test_y, eval_batch)
        acc, loss = scores
        per_class = class_accuracy_of(scores, n_classes)
        vacant = probe.take() if probe is not None else math.nan
        writer.append_log(CLASSES_FILE, class_header, {
            "round": rnd, VACANT_ACCURACY_COLUMN: _cell(vacant),
            **{CLASS_ACCURACY_COLUMN.format(n): _cell(a) for n, a in enumerate(per_class.tolist())}})
        c = sim.counters
        row = {"round": rnd, "sim_time_s": sim.now_s, "test_accuracy": acc, "test_loss": loss,
               "uplink_bytes": c.uplink_bytes, "downlink_bytes": c.downlink_bytes,
               "client_flops": c.client_flops, "server_flops": c.server_flops,
               "host_time_s": time.perf_counter() - host_start}
        writer.append_log("metrics.csv", METRICS_COLUMNS, row)
        rows.append({k: float(v) for k, v in row.items()})
        return row

    rnd = start_round
    gc_pause = host.LongLivedObjects()
    try:
        if not plan.resume:
            record_evaluation(0)  # the initial model: curves start at t = 0
            summary = _summary(run, rows, sim, "running" if cfg.rounds else "complete")
            writer.write_summary(summary)
        for rnd in range(start_round + 1, cfg.rounds + 1):
            round_start_s = time.perf_counter()
            cohort = _check_cohort(run.selector.select(cfg.clients.count, n_cohort, streams.selection),
                                   cfg.clients.count, n_cohort, run.selector)
            before = sim.counters.as_dict()
            last = rnd == cfg.rounds
            will_evaluate = rnd % cfg.eval_every_rounds == 0 or last
            # The probe sees the round's local models only when the round will be evaluated.
            observer = probe if will_evaluate else None
            duration_s = sim.run_round(lambda ctx: run.algorithm.run_round(ctx, cohort, observer), cohort)
            run.cell.move(duration_s, streams.mobility)  # clients move while the round runs (static: no-op)
            gc_pause.after_round()
            after = sim.counters.as_dict()
            round_row = {
                "round": rnd, "sim_time_s": sim.now_s, "round_sim_time_s": duration_s,
                **{k: after[k] - before[k] for k in ("uplink_bytes", "downlink_bytes", "client_flops", "server_flops",
                                                     "retransmissions", "dropped_transmissions", "dropped_clients")},
                "cohort": " ".join(map(str, cohort.tolist())),
                "dropped": " ".join(f"{k}:{why}" for k, why in sorted(sim.last_round.dropped.items()))}
            finite = _all_finite(run.algorithm.global_model())
            evaluated = will_evaluate or not finite
            if evaluated:
                row = record_evaluation(rnd)
                if not finite or not math.isfinite(row["test_loss"]):
                    summary = _diverged(run, rows, sim, rnd, finite)
                else:
                    summary = _summary(run, rows, sim, "complete" if last else "running")
                writer.write_summary(summary)
            # Logged after the evaluation, so that a slow evaluation shows in its round's host time,
            # and before the checkpoint, so that a checkpoint never names a round rounds.csv lacks.
            writer.append_log("rounds.csv", ROUNDS_COLUMNS,
                              {**round_row, "round_host_time_s": time.perf_counter() - round_start_s})
            if evaluated:
                if summary["status"] == "diverged":
                    bar.close()
                    return summary
                checkpoint.save(writer.checkpoint_path, {
                    "round": rnd, "sim_time_s": sim.now_s, "host_time_s": row["host_time_s"],
                    "counters": sim.counters.as_dict(), "algorithm": run.algorithm.state_dict(),
                    "rng": streams.state(run), "cell": run.cell.state_dict(),
                    "flops_per_sample": dict(run.algorithm.meter.flops_per_sample),
                    "selector": run.selector.state_dict()})
                bar.evaluated(rnd, sim.now_s, row["test_accuracy"], row["host_time_s"])
            if on_round is not None:
                on_round(rnd, {"sim_time_s": sim.now_s, "cohort": cohort})
            bar.advance()
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        message = f"{run.label}: round {rnd} failed: {type(exc).__name__}: {' '.join(str(exc).split())}"
        summary = {**(_summary(run, rows, sim, "failed") if rows else {"label": run.label, "status": "failed"}),
                   "error": message}
        writer.write_summary(summary)
        raise RunFailed(message, summary) from exc
    finally:
        gc_pause.end()
        bar.close()
    return summary


def _cell(value: float) -> Any:
    """A CSV cell: the number, or empty for NaN (not measured)."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _diverged(run: Run, rows: List[Dict[str, float]], sim: Simulator, rnd: int, weights_finite: bool) -> Dict[str, Any]:
    what = "the model's weights" if not weights_finite else "the test loss"
    t = run.cfg.training_for(run.label)
    lr = t.learning_rate
    clip = "" if t.max_grad_norm is not None else " or clip gradients (training.max_grad_norm)"
    message = (f"{run.label}: training diverged at round {rnd} ({what} became non-finite); the rows so far are kept — "
               f"try a smaller training.learning_rate (now {lr:g}, e.g. {lr / 10:g}){clip}")
    return {**_summary(run, rows, sim, "diverged"), "error": message}


def _summary(run: Run, rows: List[Dict[str, float]], sim: Simulator, status: str) -> Dict[str, Any]:
    last = rows[-1]
    c = sim.counters
    return {
        "label": run.label,
        "algorithm": run.cfg.algorithm(run.label).name,
        "status": status,
        "evaluated": run.algorithm.evaluation_description(),
        "seed": run.cfg.seed,
        "device": str(run.device),
        "rounds_completed": int(last["round"]),
        "rounds_planned": run.cfg.rounds,
        "final_test_accuracy": last["test_accuracy"],
        "final_test_loss": last["test_loss"],
        **_best(rows),
        "final_sim_time_s": last["sim_time_s"],
        "host_time_s": last["host_time_s"],
        "uplink_bytes": c.uplink_bytes,
        "downlink_bytes": c.downlink_bytes,
        "client_flops": c.client_flops,
        "server_flops": c.server_flops,
        "retransmissions": c.retransmissions,
        "dropped_transmissions": c.dropped_transmissions,
        "dropped_clients": c.dropped_clients,
        "traffic_and_compute_by_kind": c.by_kind,
        "flops_per_sample": dict(run.algorithm.meter.flops_per_sample),
        "time_to_accuracy_s": _time_to_accuracy(rows, run.cfg.target_accuracies),
    }


def _best(rows: List[Dict[str, float]]) -> Dict[str, Any]:
    """``best_test_accuracy`` over the trained rounds (round >= 1), its round and its definition."""
    trained = [r for r in rows if r["round"] >= 1]
    best = max(trained, key=lambda r: r["test_accuracy"]) if trained else None  # first round reaching the max
    return {"best_test_accuracy": None if best is None else best["test_accuracy"],
            "best_test_accuracy_round": None if best is None else int(best["round"]),
            "best_test_accuracy_definition": BEST_ACCURACY_DEFINITION}


def prepare_scenario(cfg: Scenario, resume: bool = False,
                     strict_versions: bool = False) -> List[tuple[Run, RunDirPlan]]:
    """Everything a scenario needs before training, in the order that fails cheapest first.

    The output directory's writability and every run directory's state (and, with ``--resume``,
    the scenario it was made with, the parameters and versions it resolved to — other versions
    refused with ``strict_versions`` — and its checkpoint) are checked before the data set is
    loaded; then every run is built.  ``--check`` stops here.

    Raises
    ------
    ConfigError, RunDirError, CheckpointError, DatasetNotFoundError
    """
    out = Path(cfg.output_dir)
    check_writable(out)
    device = resolve_device(cfg.device)
    plans = [plan_run_dir(out / spec.label, resolved_scenario(cfg, spec.label, device), resume,
                          resolution=functools.partial(resolve_run, cfg, spec.label), strict_versions=strict_versions)
             for spec in cfg.algorithms]
    dataset = load_dataset(cfg)
    runs = []
    for spec in cfg.algorithms:
        run = build_run(cfg, spec, dataset)
        cell_table(run)  # SNR and rates finite: what the run's first transfer would find out
        build_simulator(run)
        runs.append(run)
    return list(zip(runs, plans))


def run_scenario(cfg: Scenario, resume: bool = False, progress: bool = True,
                 strict_versions: bool = False) -> List[Dict[str, Any]]:
    """Run every algorithm of a validated scenario, each into ``output_dir/<label>``.

    Every part is built for every algorithm before the first one trains, so a bad parameter of
    the last algorithm stops the scenario before any work.  A run that fails or diverges does not
    stop the others; its summary says why.

    Raises
    ------
    ConfigError, RunDirError, CheckpointError
        Before any work (nothing is overwritten).
    """
    prepared = prepare_scenario(cfg, resume, strict_versions)
    summaries = []
    for i, (run, plan) in enumerate(prepared, start=1):
        try:
            summaries.append(run_one(run, plan.run_dir, progress=progress, plan=plan, position=(i, len(prepared))))
        except RunFailed as exc:
            summaries.append(exc.summary or {"label": run.label, "status": "failed", "error": str(exc)})
        # free this run's tensors before the next one trains
        run.algorithm = None  # type: ignore[assignment]
    return summaries
