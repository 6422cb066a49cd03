"""Train once, time many: a finished run timed again under other timing settings, without training.

A run records what its clock needed (``work.jsonl.gz``, :mod:`sfl_sim.engine.record`).
:func:`retime` builds the run again with the changed settings — its cell, compute budgets,
engine, energy ledger and selector, from the same seed — and lets the runner drive it, with
the algorithm replaced by :class:`ReplayAlgorithm`: each round replays the recorded steps on the
new engine (:mod:`sfl_sim.engine.replay`) and each evaluation reports the recorded scores.  So the
re-timed run directory is written by the code that writes every run: ``metrics.csv`` with the new
simulated times and the recorded accuracies, ``rounds.csv``, ``energy.csv``, ``cell.csv``,
``summary.json``; its ``resolved.yaml`` names the run it came from
(:data:`~sfl_sim.runs.rundir.schema.RETIMED_FROM`).

Validity is checked, never assumed:

* before any work, every changed field is looked up in
  :data:`~sfl_sim.runs.retime_fields.FIELD_KINDS`; a field that changes training is refused in one line;
* during the replay, every decision (cohort, what each transfer came to, whom the straggler
  policy kept, the order of draws from a shared stream) is compared with the record; the first
  difference refuses the re-timing in one line naming the round, the client and the decision
  (:class:`RetimeRefused`), and nothing is left in the output directory.

The model is built (for ``cell.csv`` and the device capability trace) but never trained; the data
set is loaded for the partition the selectors and ``cell.csv`` need.
"""
from __future__ import annotations

import copy
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np

from sfl_sim.algorithms import ALGORITHMS, Algorithm
from sfl_sim.algorithms.asynchronous import is_asynchronous
from sfl_sim.engine import RoundContext, SimSteps
from sfl_sim.engine.record import RoundRecord
from sfl_sim.engine.replay import Diverged, check_cohort, replay
from sfl_sim.errors import ConfigError, RunFailed, UserError
from sfl_sim.models.evaluation import Scores
from sfl_sim.runs.retime_fields import changed_fields, training_changes
from sfl_sim.runs.rundir import marker, work
from sfl_sim.runs.rundir.files import RunDir
from sfl_sim.runs.rundir.schema import COMPLETE, RETIMED_FROM
from sfl_sim.runs.work_check import bind_copy, checked_records

__all__ = ["ReplayAlgorithm", "RetimeRefused", "retime", "retime_config", "source_scenario"]

class RetimeRefused(UserError):
    """A re-timing that would not equal a full run under the new settings (one line)."""


def source_scenario(run_dir: Path) -> dict[str, Any]:
    """The scenario a run directory was made with, as a one-algorithm scenario mapping (its
    ``scenario.yaml`` without what the host recorded)."""
    raw = RunDir(run_dir).read_scenario()
    raw.pop("device_used", None)
    raw.pop("torch_threads_used", None)
    raw["algorithms"] = [raw.pop("algorithm")]
    return raw


def retime_config(run_dir: Path, overrides: Any, output_dir: Path,
                  scenario: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
    """The source run's scenario and the re-timed one (both validated), checked for training changes:
    the source's with ``overrides`` applied, or ``scenario`` (a whole one-algorithm scenario mapping,
    a study run's) when given.

    Raises
    ------
    ConfigError
        A bad override (one line naming the field).
    RetimeRefused
        An override that changes training (names the field).
    """
    from sfl_sim.config import apply_override, parse_override, validate

    raw = source_scenario(run_dir)
    before = validate(copy.deepcopy(raw))
    if scenario is not None:
        raw = copy.deepcopy(dict(scenario))
    if isinstance(overrides, (str, bytes)):
        raise ConfigError(f"overrides: got the string {overrides!r}; allowed: a list of FIELD=VALUE strings or a "
                          f"mapping of dotted fields to values")
    items = [(str(k).split("."), v) for k, v in overrides.items()] if isinstance(overrides, Mapping) else \
        [parse_override(text) for text in overrides]
    for keys, value in items:
        apply_override(raw, keys, copy.deepcopy(value))
    raw["output_dir"] = str(output_dir.parent)
    after = validate(raw)
    changed = training_changes(before.to_yaml_dict(), after.to_yaml_dict())
    if changed:
        f = changed[0]
        raise RetimeRefused(f"{f}: changes training, which a re-timing cannot; allowed: timing-only fields "
                            f"(cell, server, energy, clients' compute budgets, availability and capability, "
                            f"stragglers' policy and deadline); train a new run for this one")
    return before, after


class ReplayAlgorithm:
    """The run's algorithm, replaced for a re-timing: each round replays its record on the engine,
    each evaluation gives the recorded scores; anything else (setup, meter, state) is the built
    algorithm's, untrained.

    Parameters
    ----------
    algorithm : Algorithm
        The built (untrained) algorithm.
    records : dict of int to RoundRecord
    scores : dict of int to Scores
        Each evaluated round's recorded accuracy and loss.
    """

    def __init__(self, algorithm: Algorithm, records: Mapping[int, RoundRecord], scores: Mapping[int, Scores]) -> None:
        self._algorithm, self._records, self._scores = algorithm, records, scores
        self._round = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._algorithm, name)

    def run_round(self, ctx: RoundContext, cohort: np.ndarray, local_model_observer: object = None) -> SimSteps[None]:
        """Round ``n`` (the next one): the cohort compared with the record, then its steps replayed."""
        self._round += 1
        record = self._records.get(self._round)
        if record is None:
            raise Diverged(self._round, None, "the record has no such round")
        check_cohort(record, [int(k) for k in cohort.tolist()])
        yield from replay(record)(ctx)

    def evaluate(self, evaluate_fn: object, x: object, y: object, batch_size: int) -> Scores:
        """The recorded scores of the round just run (round 0 first)."""
        scores = self._scores.get(self._round)
        if scores is None:
            raise Diverged(self._round, None, "evaluated here, but the record has no evaluation of this round")
        return scores


def _read_scores(run_dir: Path) -> dict[int, Scores]:
    """Each evaluated round's recorded accuracy and loss (``classes.csv`` is copied whole)."""
    return {int(r["round"]): Scores(r["test_accuracy"], r["test_loss"]) for r in RunDir(run_dir).read_metrics_rows()}


def _records(run_dir: Path, rounds: int, summary: Mapping[str, Any], n_clients: int) -> dict[int, RoundRecord]:
    try:
        records = checked_records(run_dir, summary, n_clients)
    except work.WorkRecordError as exc:
        raise RetimeRefused(str(exc)) from None
    missing = [r for r in range(1, rounds + 1) if r not in records]
    if missing:
        raise RetimeRefused(f"{work.work_path(run_dir)}: no record of round {missing[0]} (the run was resumed "
                            f"from a version that did not record it); allowed: a run recorded in every round")
    return records


def retime(run_dir: str | Path, overrides: Any = (), output: str | Path | None = None,
           progress: bool = False, scenario: Mapping[str, Any] | None = None,
           coordinates: Mapping[str, Any] | None = None, dataset: Any = None) -> dict[str, Any]:
    """Re-time the finished run ``run_dir`` under ``overrides`` into ``output`` (module docstring).

    Parameters
    ----------
    run_dir : path
        A complete run directory with a work record.
    overrides : sequence of str or mapping
        ``--set`` overrides of timing-only fields.
    output : path
        The re-timed run directory (must not hold a run).
    progress : bool
        Show the runner's progress line.
    scenario : mapping, optional
        The re-timed run's whole scenario (one algorithm) instead of ``overrides`` (a study's run).
    coordinates : mapping, optional
        A study run's coordinates, recorded in ``summary.json``.
    dataset : sfl_sim.data.ArrayDataset, optional
        The data set, already loaded (a sweep loads it once).

    Returns
    -------
    dict
        The re-timed run's summary.

    Raises
    ------
    RunDirError
        ``run_dir`` is not a complete run, or ``output`` is not empty, is a file, cannot be
        written or lies inside ``run_dir``.
    ConfigError
        A bad override.
    RetimeRefused
        A training field changed, or a decision went otherwise (one line: round, client, decision).
    """
    from sfl_sim.errors import RunDirError
    from sfl_sim.runs.build import build_run
    from sfl_sim.runs.resolved import resolve_run
    from sfl_sim.runs.runner import run_one

    source = Path(run_dir)
    if output is None:
        raise RunDirError("output: missing; allowed: a directory for the re-timed run (-o OUT)")
    out = Path(output)
    summary = RunDir(source).read_summary()
    if summary is None:
        raise RunDirError(f"{source}: no readable summary.json, so not a run directory; allowed: a complete run "
                          f"directory to re-time")
    if summary.get("status") != COMPLETE:
        raise RunDirError(f"{source}: status {summary.get('status')!r}; allowed: a complete run directory to re-time")
    marker.check_writable(out, "--output-dir")  # a file, or under one, too
    if source.resolve() in (out.resolve(), *out.resolve().parents):
        raise RunDirError(f"--output-dir: {str(out)!r} is inside the run to re-time, {source}; allowed: a directory "
                          f"outside it (e.g. beside it, where report and plot find both)")
    if out.exists() and any(out.iterdir()):
        raise RunDirError(f"{out}: not empty; allowed: a new or empty directory for the re-timed run")
    before, cfg = retime_config(source, overrides, out, scenario)
    if before.max_sim_time_s is not None:
        raise RetimeRefused(f"max_sim_time_s: {source} ran under a simulated-time budget, so which rounds it "
                            f"trained depends on its timing; allowed: a run without max_sim_time_s")
    changed = _changed(before.to_yaml_dict(), cfg.to_yaml_dict())
    changes = {f: _value_at(cfg.to_yaml_dict(), f) for f in changed}
    was = {f: _value_at(before.to_yaml_dict(), f) for f in changed}
    name = cfg.algorithms[0].name
    if is_asynchronous(ALGORITHMS.get(name)):
        raise RetimeRefused(f"algorithm: {source} ran {name}, an asynchronous algorithm, whose runs keep no work "
                            f"record (what its server aggregates depends on the arrival order); allowed: a run of "
                            f"a synchronous algorithm")
    if before.server.edge is not None or cfg.server.edge is not None:
        raise RetimeRefused(f"server.edge: {source if before.server.edge is not None else 'the re-timing'} has edge "
                            f"servers, whose rounds' handovers, migrations and backhaul are not in the work record; "
                            f"allowed: runs without server.edge (train the run instead)")
    records = _records(source, cfg.rounds, summary, before.clients.count)
    scores = _read_scores(source)
    spec = cfg.algorithms[0]
    run = build_run(cfg, spec, dataset)
    algorithm = run.algorithm
    algorithm.meter.load_state_dict(summary.get("flops_per_sample") or {})
    run.algorithm = cast(Algorithm, ReplayAlgorithm(algorithm, records, scores))
    # written beside its place and moved in whole (one left by a killed re-timing is removed here)
    staging = marker.staging_dir(out, "retime")
    try:
        try:
            result = run_one(run, staging, progress=progress, record_work=False,
                             coordinates=dict(coordinates) if coordinates else None)
        except RunFailed as exc:
            cause = exc.__cause__
            if isinstance(cause, Diverged):
                said = ", ".join(f"{f} {_shown(v)} (the source had {_shown(was[f])})"
                                 for f, v in changes.items()) or "the same settings"
                raise RetimeRefused(f"{source}: cannot be re-timed with {said}: {cause}") from None
            raise
        (staging / RunDir(staging).checkpoint_path.name).unlink(missing_ok=True)  # nothing trained to resume
        shutil.copyfile(work.work_path(source), work.work_path(staging))  # the same work: re-timable again
        bind_copy(staging, summary, result, {"coordinates": dict(coordinates)} if coordinates else None)
        if RunDir(source).classes_path.exists():  # every cell is training's (per-class, local models)
            shutil.copyfile(RunDir(source).classes_path, RunDir(staging).classes_path)
        files = RunDir(staging)
        record = files.read_resolved(resolve_run(cfg, spec.label).record).value or {}
        record[RETIMED_FROM] = {"run": str(source.resolve()), "set": changes}
        files.write_resolved(record)
        if out.exists():
            out.rmdir()
        staging.replace(out)
        marker.settle(out)
    finally:
        if staging.exists():
            marker.remove_staging(staging)
    return result


def _changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    return [f for f in changed_fields(before, after) if f != "output_dir"]


def _shown(value: Any) -> str:
    """A field's value in a refusal: numbers as %g (2e+07, not 20000000.0), absent as 'none'."""
    if isinstance(value, bool) or value is None:
        return "none" if value is None else str(value).lower()
    if isinstance(value, (int, float)):
        return f"{value:g}"
    return str(value)


def _value_at(data: Mapping[str, Any], path: str) -> Any:
    node: Any = data
    for key in path.split("."):
        node = node.get(key) if isinstance(node, Mapping) else None
    return node
