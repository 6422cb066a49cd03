"""Running a study's runs: in this process, a local process pool, or Ray tasks.

Every executor calls the same :func:`execute_run`, which does what a single run does (build,
check the run directory, train, write) and never raises: a failed run comes back with its error,
so the others go on.  Rerunning a study is idempotent: finished runs are skipped, interrupted
ones resume from their checkpoints (killing a study loses at most the rounds since each run's last
checkpoint), the rest start.

Local executor
    ``--workers N`` processes, each with ``threads_per_worker`` torch threads (default: the free
    cores divided among the workers, so threads × workers ≤ cores).  On Linux with CPU runs the
    pool forks after the data set is loaded once, so the workers share its pages; elsewhere (and
    with CUDA, which cannot fork) each worker loads it once.  With CUDA, ``--workers`` is per GPU:
    N workers share each visible GPU (each worker is bound to one with ``torch.cuda.set_device``).
Train once, time many
    Runs that differ only in timing fields (:mod:`sfl_sim.runs.retime_fields`: the cell, compute
    budgets, energy...) may share their training: :func:`retime_plan` picks one run per group of
    such runs to train (or one already complete), and the others are re-timed from it once it is
    done (:mod:`sfl_sim.runs.retime`, seconds instead of a training).  But what the clock decided
    is part of the training too: an outage rule drops the uploads of clients whose rate is too low,
    a deadline drops the late ones, and a bandwidth or a scheduler changes who that is.  A re-timing
    replays the source's record and is refused at the first decision that goes otherwise, so a run
    is re-timed from *any* finished run of its group whose decisions it shares: the study runs in
    waves (:class:`~sfl_sim.study.waves.Waves`), each trying every finished run of the group not yet tried (closest in
    its coordinates first), and trains a run only when every one of them refused it — one such run
    per group and wave, so that the others try it next.  The study's log, its ``runs.csv``
    (``made_by``) and each run's ``summary.json`` (``retimed_from``, or ``retime_refused`` with the
    reasons) say which runs were re-timed from which and which were trained.
Ray executor
    The same runs as Ray tasks (``ray.init(address=...)``), each asking for ``cpus_per_run`` CPUs
    and ``gpus_per_run`` of a GPU.  Ray is an optional extra (``pip install -e '.[ray]'``),
    imported only when chosen.
"""
from __future__ import annotations

import csv
import functools
import json
import multiprocessing
import os
import queue
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sfl_sim.errors import RunFailed, UserError
from sfl_sim.kit.checks import one_line
from sfl_sim.runs.host import free_cores
from sfl_sim.runs.progress import interactive, progress_bar
from sfl_sim.runs.rundir.schema import (
    COMPLETE,
    FAILED,
    STOP_REASON,
    STOPPED_AT_TIME_BUDGET,
    STUDY_STATUS_FILE,
    STUDY_STATUS_HEADER_START,
)
from sfl_sim.study.plan import StudyRun
from sfl_sim.study.waves import Step, Waves, retime_plan

if TYPE_CHECKING:  # sfl_sim.data imports torch, which this module loads only when a run needs it
    from sfl_sim.data.datasets import ArrayDataset

__all__ = ["DEFERRED", "RunTask", "execute_run", "run_study", "is_complete", "free_cores", "made_by",
           "retime_plan", "STATUS_FILE"]

#: The study's table of runs (one row per run: name, status, coordinates, error), rewritten as runs end.
STATUS_FILE = STUDY_STATUS_FILE


@dataclass(frozen=True)
class RunTask:
    """What a worker needs for one run (plain data: picklable for any executor)."""

    name: str
    run_dir: str
    scenario: dict[str, Any]
    coordinates: dict[str, Any]
    threads: int | None = None
    strict_versions: bool = False
    #: complete run directories of the same training fields, tried in order: re-timed from the first that takes
    retime_from: tuple[str, ...] = ()
    #: train when every one refuses (False: come back ``deferred``, untrained, for a later wave)
    train_if_refused: bool = True
    #: why earlier waves' re-timings were refused (recorded with the training)
    refused: tuple[str, ...] = ()


#: The status of a run whose every candidate source refused it in a wave that does not train it.
DEFERRED = "deferred"


@functools.lru_cache(maxsize=2)
def _dataset(spec_json: str) -> ArrayDataset:
    """One loaded data set per process and spec (forked workers inherit the parent's)."""
    from sfl_sim.config import validate
    from sfl_sim.runs.build import load_dataset

    return load_dataset(validate({"data": {"dataset": json.loads(spec_json)}}))


def _dataset_key(scenario: dict[str, Any]) -> str:
    return json.dumps(scenario.get("data", {}).get("dataset", {"name": "fashion_mnist"}), sort_keys=True)


def execute_run(task: RunTask) -> dict[str, Any]:
    """Build and train one study run into ``task.run_dir``; never raises.

    Returns
    -------
    dict
        ``name``, ``status`` (``complete``, ``diverged``, ``failed``), ``error`` (one line, or
        ``""``), ``final_test_accuracy``, ``best_test_accuracy``, ``client_updates``, ``host_time_s`` and
        ``traceback`` (for unexpected errors).
    """
    start = time.perf_counter()
    out: dict[str, Any] = {"name": task.name, "status": FAILED, "error": "", "traceback": ""}
    refused = list(task.refused)
    if task.retime_from:
        reasons, resumes = _retime(task, out)
        if reasons is None:
            out["host_time_s"] = time.perf_counter() - start
            return out
        refused += reasons
        if not (task.train_if_refused or resumes):
            out.update(status=DEFERRED, refused=reasons, host_time_s=time.perf_counter() - start)
            return out
    if refused:
        out["retime_refused"] = " | ".join(refused)  # trained below instead
    try:
        import torch

        from sfl_sim.config import validate
        from sfl_sim.runs.build import build_run, resolve_device
        from sfl_sim.runs.resolved import resolve_run
        from sfl_sim.runs.rundir.files import RunDir
        from sfl_sim.runs.runner import resolved_scenario, run_one

        cfg = validate(task.scenario)
        spec = cfg.algorithms[0]
        plan = RunDir(task.run_dir).plan(resolved_scenario(cfg, spec.label, resolve_device(cfg.device)),
                                         resume=True, resolution=functools.partial(resolve_run, cfg, spec.label),
                                         strict_versions=task.strict_versions)
        run = build_run(cfg, spec, _dataset(_dataset_key(task.scenario)), threads=task.threads)
        if run.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(run.device)
        summary = run_one(run, Path(task.run_dir), progress=False, plan=plan, coordinates=task.coordinates)
        if run.device.type == "cuda":  # what this run held on a GPU it may share with other workers
            out["gpu_peak_bytes"] = int(torch.cuda.max_memory_allocated(run.device))
        out.update(status=summary.get("status", FAILED), error=summary.get("error", ""),
                   final_test_accuracy=summary.get("final_test_accuracy"),
                   best_test_accuracy=summary.get("best_test_accuracy"), client_updates=summary.get("client_updates"))
        if "retime_refused" in out:
            _note_in_summary(Path(task.run_dir), retime_refused=out["retime_refused"])
    except (UserError, RunFailed) as exc:  # a message of several lines (differing fields) stays readable in one cell
        out["error"] = "; ".join(" ".join(line.split()) for line in str(exc).splitlines() if line.strip())
    except Exception as exc:  # a worker must report, not die: the other runs go on
        out["error"] = one_line(exc, with_type=True)
        out["traceback"] = traceback.format_exc()
    out["host_time_s"] = time.perf_counter() - start
    return out


def _retime(task: RunTask, out: dict[str, Any]) -> tuple[list[str] | None, bool]:
    """Re-time the first of ``task.retime_from`` that takes into ``task.run_dir`` (filling ``out``).

    Returns
    -------
    (reasons, resumes)
        ``reasons`` None when done, else why each source refused (one line each); ``resumes``:
        the directory holds an interrupted training, which resumes (it is not deferred).
    """
    from sfl_sim.runs.retime import RetimeRefused, retime

    target = Path(task.run_dir)
    if target.exists() and any(target.iterdir()):
        if not _is_retimed(target):
            return [f"{target} holds an interrupted run, which resumes"], True
        # an earlier re-timing (the study asks more rounds now): its source's training timed, which
        # the new re-timing redoes exactly, so nothing a training made goes
        shutil.rmtree(target)
    reasons: list[str] = []
    for candidate in task.retime_from:
        source = Path(candidate)
        try:
            summary = retime(source, output=target, scenario=task.scenario, coordinates=task.coordinates,
                             dataset=_dataset(_dataset_key(task.scenario)))
        except (RetimeRefused, UserError, RunFailed) as exc:
            reasons.append(one_line(exc))
            continue
        except Exception as exc:  # a re-timing that breaks must not lose the run: it trains
            reasons.append(one_line(exc, with_type=True))
            continue
        break
    else:
        return reasons, False
    _note_in_summary(target, retimed_from=source.name)
    out.update(status=summary.get("status", FAILED), error=summary.get("error", ""), retimed_from=source.name,
               final_test_accuracy=summary.get("final_test_accuracy"),
               best_test_accuracy=summary.get("best_test_accuracy"), client_updates=summary.get("client_updates"))
    return None, False


def _is_retimed(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a re-timed run (its ``resolved.yaml`` names its source)."""
    import yaml

    from sfl_sim.runs.rundir.files import RunDir
    from sfl_sim.runs.rundir.schema import RETIMED_FROM

    try:
        record = yaml.safe_load(RunDir(run_dir).resolved_path.read_text())
    except (OSError, yaml.YAMLError):  # unreadable: not provably a re-timing, so it is not removed
        return False
    return isinstance(record, dict) and RETIMED_FROM in record


def _note_in_summary(run_dir: Path, **notes: str) -> None:
    """Add ``notes`` to the run's ``summary.json`` (how the study made it)."""
    from sfl_sim.runs.rundir.files import RunDir

    files = RunDir(run_dir)
    summary = files.read_summary()
    if summary is not None:
        summary.pop("schema_version", None)
        files.write_summary({**summary, **notes})


def is_complete(run: StudyRun, run_dir: Path, strict_versions: bool = False) -> bool:
    """Whether ``run_dir`` already holds the complete run of exactly ``run``'s scenario.

    A rerun of a study skips such runs, and ``sfl-sim study --dry-run`` marks them ``done``.  A
    run that is not complete is left to :func:`execute_run`, whose resume refuses it with the
    reason.

    Parameters
    ----------
    run : StudyRun
        One run of an expanded study.
    run_dir : pathlib.Path
        Its run directory.
    strict_versions : bool
        Count a run made with other versions of the code as not complete (its resume then refuses
        it) instead of warning.

    Returns
    -------
    bool
        True when ``summary.json`` says complete with the scenario's round count (or stopped at its
        ``max_sim_time_s``), the recorded ``scenario.yaml`` differs from this scenario in no field,
        and today's code resolves it to
        the parameters the run recorded (:func:`sfl_sim.runs.resolved.check_resolution`: other versions
        of the code are a warning, refused with ``strict_versions``); False otherwise (also for
        missing or unreadable files).
    """
    from sfl_sim.runs.rundir.files import RunDir, made_with_differences

    files = RunDir(run_dir)
    summary = files.read_summary()
    if summary is None or summary.get("status") != COMPLETE or (
            summary.get("rounds_completed") != run.scenario.get("rounds")
            and summary.get(STOP_REASON) != STOPPED_AT_TIME_BUDGET):
        return False
    from sfl_sim.config import validate
    from sfl_sim.runs.build import resolve_device
    from sfl_sim.runs.resolved import check_resolution, resolve_run
    from sfl_sim.runs.runner import resolved_scenario

    cfg = validate(run.scenario)
    label = cfg.algorithms[0].label
    try:
        asked = resolved_scenario(cfg, label, resolve_device(cfg.device))
        today = resolve_run(cfg, label)
        # both read in today's shape, as a resume reads them (sfl_sim.runs.rundir.upgrade)
        record = files.read_resolved(today.record, from_round=int(summary["rounds_completed"]) + 1)
        if made_with_differences(files.read_scenario(continued_by=asked), asked, record.value):
            return False
        check_resolution(run_dir, record.value, today, strict_versions, record.notes)
    except UserError:
        return False
    return True


def _bind_gpu(slots: queue.Queue[int]) -> None:
    """Pool initializer: this worker takes the next GPU slot (``--workers`` per GPU)."""
    import torch

    torch.cuda.set_device(slots.get())


def _gpu_count(tasks: Sequence[RunTask]) -> int:
    """GPUs the runs may use: 0 unless some run asks for CUDA (or ``auto`` finds it)."""
    if not any(t.scenario.get("device", "auto") in ("cuda", "auto") for t in tasks):
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _local(tasks: Sequence[RunTask], workers: int) -> Iterator[dict[str, Any]]:
    gpus = _gpu_count(tasks)
    if (workers <= 1 and gpus <= 1) or len(tasks) <= 1:
        for task in tasks:
            yield execute_run(task)
        return
    initializer: Callable[..., None] | None = None
    initargs: tuple[Any, ...] = ()
    context: multiprocessing.context.BaseContext
    if gpus:
        # CUDA cannot be forked: spawned workers, `workers` of them sharing each GPU.
        context = multiprocessing.get_context("spawn")
        slots = context.Manager().Queue()
        for worker in range(workers * gpus):
            slots.put(worker % gpus)
        initializer, initargs, workers = _bind_gpu, (slots,), workers * gpus
    elif sys.platform.startswith("linux"):
        # Load each data set once in the parent: forked workers share its memory pages.
        for key in {_dataset_key(t.scenario) for t in tasks}:
            _dataset(key)
        context = multiprocessing.get_context("fork")
    else:
        context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=initializer,
                             initargs=initargs) as pool:
        pending = {pool.submit(execute_run, t) for t in tasks}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()


def _ray(tasks: Sequence[RunTask], address: str | None, cpus_per_run: float,
         gpus_per_run: float) -> Iterator[dict[str, Any]]:
    try:
        import ray
    except ImportError:
        raise UserError("--executor ray needs Ray, an optional extra: pip install -e '.[ray]' "
                        "(or pip install 'ray[default]>=2.9')") from None
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    remote = ray.remote(num_cpus=cpus_per_run, num_gpus=gpus_per_run)(execute_run)
    pending = [remote.remote(t) for t in tasks]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        yield ray.get(done[0])


class _StudyProgress:
    """One line per run start/finish (suits batch logs and Ray) and, on a terminal, an overall bar."""

    def __init__(self, total: int, already: int, enabled: bool) -> None:
        self.total, self.done, self.enabled = total, already, enabled
        self.start = time.perf_counter()
        self.bar = None
        if enabled and interactive(sys.stderr):
            self.bar = progress_bar(total=total, initial=already, desc="study", unit="run", file=sys.stderr)

    def line(self, text: str) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr, flush=True)

    def finished(self, result: dict[str, Any], fresh_done: int, fresh_total: int) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.start
        eta = elapsed / fresh_done * (fresh_total - fresh_done) if fresh_done else float("nan")
        acc = result.get("final_test_accuracy")
        what = f"acc {acc:.4f}" if isinstance(acc, float) else result.get("error", "")
        what += made_by(result)
        self.line(f"[{self.done}/{self.total}] {result['status']}: {result['name']} ({what}; "
                  f"{result['host_time_s']:.0f} s; study ETA {eta:.0f} s)")
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def made_by(result: dict[str, Any]) -> str:
    """How a run of the study was made, for its log line (empty: trained as ever)."""
    if result.get("retimed_from"):
        return f"; re-timed from {result['retimed_from']}"
    if result.get("retime_refused"):
        return f"; trained, its re-timing refused: {result['retime_refused']}"
    return ""


def _write_status(path: Path, runs: Sequence[StudyRun], results: dict[str, dict[str, Any]]) -> None:
    keys = sorted({k for r in runs for k in r.coordinates})
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow([*STUDY_STATUS_HEADER_START.split(","), *keys, "final_test_accuracy", "client_updates",
                         "made_by", "error"])
        for run in runs:
            res = results.get(run.name, {})
            coords = [json.dumps(run.coordinates.get(k), default=str)
                      if isinstance(run.coordinates.get(k), (dict, list)) else run.coordinates.get(k, "")
                      for k in keys]
            writer.writerow([run.name, res.get("status", "pending"), *coords, res.get("final_test_accuracy", ""),
                             res.get("client_updates", ""), made_by(res).removeprefix("; "), res.get("error", "")])
    os.replace(tmp, path)


def run_study(runs: Sequence[StudyRun], study_dir: Path, workers: int = 1, executor: str = "local",
              address: str | None = None, threads_per_worker: int | None = None,
              cpus_per_run: float = 1.0, gpus_per_run: float = 0.0, progress: bool = True,
              on_result: Callable[[dict[str, Any]], None] | None = None,
              strict_versions: bool = False) -> dict[str, dict[str, Any]]:
    """Run (or skip, or resume) every run of a study into ``study_dir/<run name>``.

    Parameters
    ----------
    runs : sequence of StudyRun
    study_dir : Path
    workers : int
        Local executor: processes running at once.
    executor : {"local", "ray"}
    address : str, optional
        Ray cluster address (``ray.init(address=...)``); None starts a local Ray instance.
    threads_per_worker : int, optional
        Torch threads of each local worker (default ``max(1, free_cores() // workers)``);
        a scenario's ``training.torch_threads`` wins.
    cpus_per_run, gpus_per_run : float
        Ray resources each run asks for.
    progress : bool
        Print one line per finished run (and an overall bar on a terminal).
    on_result : callable, optional
        Called with each run's result as it arrives (tests).
    strict_versions : bool
        Refuse to skip or resume a run made with other versions of the code (default: a warning).

    Returns
    -------
    dict
        Run name → result (``status`` ``complete``, ``diverged``, ``failed`` or ``skipped``).
    """
    from sfl_sim.runs.rundir import marker
    from sfl_sim.runs.rundir.files import RunDir

    study_dir = Path(study_dir)
    marker.check_writable(study_dir, "study output_dir")
    marker.claim(study_dir, "study", (STATUS_FILE,))
    marker.record(study_dir, "study", (STATUS_FILE,))
    results: dict[str, dict[str, Any]] = {}
    for run in runs:
        if is_complete(run, study_dir / run.name, strict_versions):
            summary = RunDir(study_dir / run.name).read_summary() or {}
            results[run.name] = {"name": run.name, "status": "skipped", "error": "",
                                 "final_test_accuracy": summary.get("final_test_accuracy"),
                                 "client_updates": summary.get("client_updates")}
    if executor not in ("local", "ray"):
        raise UserError(f"--executor: got {executor!r}; allowed: local, ray")
    todo = [r for r in runs if r.name not in results]
    threads = threads_per_worker or max(1, free_cores() // max(1, workers))

    def task(step: Step) -> RunTask:
        r = step.run
        return RunTask(r.name, str(study_dir / r.name), r.scenario, r.coordinates, threads, strict_versions,
                       tuple(str(study_dir / s.name) for s in step.sources), step.train_if_refused, step.refused)

    waves = Waves(runs, list(results), lambda r: study_dir / r.name)
    status_path = study_dir / STATUS_FILE
    _write_status(status_path, runs, results)
    bar = _StudyProgress(len(runs), len(results), progress)
    if results:
        bar.line(f"study: {len(results)} of {len(runs)} runs already finished; running {len(todo)}")
    shared = len(retime_plan(runs, list(results), lambda r: study_dir / r.name))
    if shared:
        bar.line(f"study: {shared} of {len(todo)} runs differ from another only in timing fields: re-timed from "
                 f"a finished run of the same training whose decisions (drops, cohorts) they share, trained "
                 f"only where none has")
    fresh = 0
    try:
        while steps := waves.next():
            by_name = {step.run.name: step for step in steps}
            tasks = [task(step) for step in steps]
            stream = _local(tasks, workers) if executor == "local" else _ray(tasks, address, cpus_per_run,
                                                                               gpus_per_run)
            for result in stream:
                step = by_name[result["name"]]
                deferred = result["status"] == DEFERRED
                waves.record(step, result["status"], deferred, result.get("refused", ()))
                if deferred:
                    bar.line(f"study: {result['name']}: every finished run of its training refused its "
                             f"re-timing; it waits for the next one trained")
                    continue
                fresh += 1
                results[result["name"]] = result
                _write_status(status_path, runs, results)
                bar.finished(result, fresh, len(todo))
                if on_result is not None:
                    on_result(result)
    finally:
        bar.close()
    return results
