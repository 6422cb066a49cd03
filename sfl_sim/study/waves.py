"""Which runs of a study train and which are re-timed, from which: the study's waves.

Runs whose scenarios differ only in timing fields (:func:`sfl_sim.runs.retime_fields.training_key`)
form a *group*: they may share a training.  They share it when the clock decides the same for them
too — which clients an outage rule or a deadline dropped, who was selected — and that is known
only by replaying a finished run's record under the run's timing (:mod:`sfl_sim.runs.retime`,
which refuses at the first decision that goes otherwise).  So a group is worked through in waves:

* a run tries every finished run of its group it has not tried yet, closest in its coordinates
  first (:func:`closest_first`: the run that differs from it in fewest grid fields is likeliest to
  have decided the same), and is re-timed from the first that takes it;
* a run that every finished run refused waits; in each wave at most one waiting run per group
  trains (the first in the study's order), and the others try it in the next wave — so a study
  trains once per distinct training, never twice for one;
* a group with no finished run trains its first run in the first wave.

Asynchronous runs keep no work record (what their server aggregates depends on the arrival order):
they are never re-timed, nor a source.  Executing the waves is :mod:`sfl_sim.study.execute`'s.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sfl_sim.study.plan import StudyRun

__all__ = ["Step", "Waves", "closest_first", "expected_cost", "retime_plan", "training_groups"]


def _asynchronous(run: StudyRun) -> bool:
    """Whether ``run``'s algorithm is driven asynchronously (its runs are trained, never re-timed)."""
    from sfl_sim.algorithms import ALGORITHMS
    from sfl_sim.algorithms.asynchronous import is_asynchronous

    return is_asynchronous(ALGORITHMS.get(run.scenario["algorithms"][0]["name"]))


def _with_edges(run: StudyRun) -> bool:
    """Whether ``run`` has edge servers (``server.edge``): its rounds' handovers, migrations and
    backhaul are not in the work record, so it is trained, never re-timed."""
    return bool((run.scenario.get("server") or {}).get("edge"))


def training_groups(runs: Sequence[StudyRun]) -> list[list[StudyRun]]:
    """The runs that may share a training, in the study's order: groups of two or more runs of a
    synchronous algorithm without edge servers with equal training fields
    (:func:`sfl_sim.runs.retime_fields.training_key`)."""
    from sfl_sim.runs.retime_fields import training_key

    groups: dict[str, list[StudyRun]] = {}
    for run in runs:
        groups.setdefault(training_key(run.scenario), []).append(run)
    return [members for members in groups.values()
            if len(members) > 1 and not _asynchronous(members[0]) and not any(_with_edges(m) for m in members)]


def closest_first(run: StudyRun, sources: Iterable[StudyRun]) -> list[StudyRun]:
    """``sources`` ordered by how many of ``run``'s coordinates they share, most first (stable):
    the likeliest to have made the same decisions come first."""
    def shared(source: StudyRun) -> int:
        return sum(source.coordinates.get(k, object()) == v for k, v in run.coordinates.items())
    return sorted(sources, key=shared, reverse=True)


def _recorded(run_dir: Path) -> bool:
    """Whether a finished run directory has a work record to re-time from."""
    from sfl_sim.runs.rundir.work import work_path

    return work_path(run_dir).exists()


def retime_plan(runs: Sequence[StudyRun], done: Sequence[str], run_dirs: Callable[[StudyRun], Path]) -> dict[str, str]:
    """The first wave's intention: run name -> the name of the run it is first re-timed from.

    In each group (:func:`training_groups`) the source is the closest finished run (``done``, with a
    work record) — else the group's first run, trained first.  A run whose re-timing from it is
    refused tries the group's other finished runs, then trains (:class:`Waves`).
    """
    plan: dict[str, str] = {}
    for members in training_groups(runs):
        recorded = [r for r in members if r.name in done and _recorded(run_dirs(r))]
        first = next((r for r in members if r.name not in done), None)
        for run in members:
            if run.name in done or (not recorded and run is first):
                continue
            plan[run.name] = closest_first(run, recorded)[0].name if recorded else first.name  # type: ignore[union-attr]
    return plan


@dataclass(frozen=True)
class Step:
    """One run's work in a wave: train it (``sources`` empty), or re-time it from the first of
    ``sources`` that takes it; ``train_if_refused`` says what a refusal by all of them leads to."""

    run: StudyRun
    sources: tuple[StudyRun, ...] = ()
    train_if_refused: bool = True
    refused: tuple[str, ...] = ()  # why earlier waves' re-timings were refused


@dataclass
class Waves:
    """The waves of a study's runs still to do (module docstring).

    Parameters
    ----------
    runs : sequence of StudyRun
        Every run of the study.
    done : sequence of str
        The names of the runs already finished.
    run_dirs : callable
        A run's directory.
    """

    runs: Sequence[StudyRun]
    done: Sequence[str]
    run_dirs: Callable[[StudyRun], Path]
    _group_of: dict[str, int] = field(default_factory=dict, init=False)
    _sources: list[list[StudyRun]] = field(default_factory=list, init=False)
    _waiting: list[list[StudyRun]] = field(default_factory=list, init=False)
    _alone: list[StudyRun] = field(default_factory=list, init=False)
    _tried: dict[str, set[str]] = field(default_factory=dict, init=False)
    _refused: dict[str, list[str]] = field(default_factory=dict, init=False)
    _order: dict[str, int] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._order = {r.name: i for i, r in enumerate(self.runs)}
        for index, members in enumerate(training_groups(self.runs)):
            for run in members:
                self._group_of[run.name] = index
            self._sources.append([r for r in members if r.name in self.done and _recorded(self.run_dirs(r))])
            self._waiting.append([r for r in members if r.name not in self.done])
        self._alone = [r for r in self.runs if r.name not in self.done and r.name not in self._group_of]

    def next(self) -> list[Step]:
        """The next wave's steps (empty: nothing is left)."""
        wave = [Step(run) for run in self._alone]
        self._alone = []
        for index, waiting in enumerate(self._waiting):
            training = False
            still: list[StudyRun] = []
            for run in waiting:
                tried = self._tried.setdefault(run.name, set())
                untried = [s for s in closest_first(run, self._sources[index]) if s.name not in tried]
                if untried:
                    tried.update(s.name for s in untried)
                    wave.append(Step(run, tuple(untried), train_if_refused=False))
                elif not training:  # every finished run refused it (or there is none): it trains
                    wave.append(Step(run, refused=tuple(self._refused.get(run.name, ()))))
                    training = True
                else:
                    still.append(run)  # tries the one trained in this wave, in the next
            self._waiting[index] = still
        return wave

    def record(self, step: Step, status: str, deferred: bool, reasons: Sequence[str] = ()) -> None:
        """What came of ``step``: ``deferred`` (every source refused it, not trained: it waits, with
        ``reasons``), else finished with ``status``; a trained run complete with a work record is a
        source for the rest of its group."""
        from sfl_sim.runs.rundir.schema import COMPLETE

        index = self._group_of.get(step.run.name)
        if index is None:
            return
        if deferred:
            self._refused.setdefault(step.run.name, []).extend(reasons)
            self._waiting[index] = sorted([*self._waiting[index], step.run], key=lambda r: self._order[r.name])
        elif not step.sources and status == COMPLETE and _recorded(self.run_dirs(step.run)):
            self._sources[index].append(step.run)


def expected_cost(runs: Sequence[StudyRun], done: Sequence[str], plan: dict[str, str],
                  run_dirs: Callable[[StudyRun], Path]) -> str:
    """One line: how many runs train and how many are re-timed (``plan``: :func:`retime_plan`), and
    the host time that takes, estimated from the finished runs of the study (the mean
    ``host_time_s`` of its trained runs and of its re-timed ones; none finished: not estimated)."""
    from statistics import fmean

    from sfl_sim.runs.rundir.files import RunDir

    todo = [r for r in runs if r.name not in done]
    n_retime = sum(r.name in plan for r in todo)
    n_train = len(todo) - n_retime
    measured: dict[bool, list[float]] = {True: [], False: []}  # re-timed? -> host seconds
    for run in runs:
        if run.name in done:
            summary = RunDir(run_dirs(run)).read_summary() or {}
            seconds = summary.get("host_time_s")
            if isinstance(seconds, (int, float)):
                measured[bool(summary.get("retimed_from"))].append(float(seconds))
    if not todo:
        return "expected: nothing to run"
    line = (f"expected: {n_train} training(s), {n_retime} re-timing(s) (a re-timing refused by every finished run "
            f"of its training trains instead: at most {n_train + n_retime} trainings)")
    if not measured[False]:
        return line + "; host time: not estimated (no finished trained run in this study to measure from)"
    train_s = fmean(measured[False])
    retime_s = fmean(measured[True]) if measured[True] else None
    total = n_train * train_s + n_retime * (retime_s if retime_s is not None else 0.0)
    basis = f"mean of {len(measured[False])} trained run(s) here, {train_s:.1f} s each"
    basis += (f", and of {len(measured[True])} re-timed, {retime_s:.1f} s each" if retime_s is not None
              else ", re-timings not measured (counted as 0 s)")
    return line + f"; host time ~{total:.0f} s on one worker ({basis})"
