"""The Python API: what every ``sfl-sim`` command does, as functions that return results as objects.

The command line (:mod:`sfl_sim.cli`) is a layer over these functions that prints what they
return, so a notebook and the CLI make the same files on disk and refuse the same input::

    import sfl_sim

    results = sfl_sim.run("cellular_100clients", overrides=["rounds=5"], output_dir="runs/try")
    for r in results:
        print(r.label, r.summary["final_test_accuracy"], len(r.metrics))

Bad input raises the error the CLI reports, with the same one-line message:
:class:`~sfl_sim.errors.ConfigError` (a scenario or study field, or an argument),
:class:`~sfl_sim.config.scenario_files.ScenarioNotFoundError`, :class:`~sfl_sim.errors.RunDirError`,
:class:`~sfl_sim.errors.CheckpointError` (all :class:`~sfl_sim.errors.UserError`), and the
data set loader's ``DatasetNotFoundError``; the report and plot functions raise what
:mod:`sfl_sim.analysis` raises.  A run that fails or diverges after it started raises nothing: its
:class:`RunResult` says so (``status``, ``error``), and the other runs go on.  Nothing prints
unless asked (``progress=True``, or a ``stream`` for the channel table).

Every heavy import (torch, pandas, matplotlib) happens inside the function that needs it, so
``import sfl_sim`` stays cheap.
"""
from __future__ import annotations

import io
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, Union

from sfl_sim.errors import ArgumentError, ConfigError
from sfl_sim.runs.rundir.schema import CELL_FILE, CELL_REPORT_COLUMNS, COMPLETE, FAILED, STUDY_FILE

if TYPE_CHECKING:
    import pandas as pd

    from sfl_sim.config import Scenario
    from sfl_sim.study.plan import StudyRun, StudySpec

__all__ = ["RunResult", "PlannedRun", "Plan", "Report", "ChannelReport", "Overrides", "load_scenario", "check",
           "run", "retime", "plan_study", "run_study", "report", "plot", "channel_report", "trace_report"]

#: ``--set`` overrides: ``"FIELD=VALUE"`` strings (VALUE in YAML syntax), applied in order, or a
#: mapping of dotted field names to Python values (``{"clients.participation": 0.2}``).
Overrides = Sequence[str] | Mapping[str, Any]

#: A scenario argument: a file, a shipped scenario's name, or an already loaded scenario.
ScenarioLike = Union[str, "os.PathLike[str]", "Scenario"]

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True, eq=False)
class RunResult:
    """One run directory after a run (or a study run skipped because it was already complete).

    Attributes
    ----------
    label : str
        The algorithm's label (its ``label``, else its name).
    path : pathlib.Path
        The run directory.
    status : str
        ``complete``, ``diverged`` or ``failed``; ``skipped`` for a study run whose directory
        already held the complete run (nothing was recomputed).
    summary : dict
        ``summary.json`` as written (empty when the run stopped before writing one).
    metrics : pandas.DataFrame
        ``metrics.csv``: one row per evaluation (``round``, ``sim_time_s``, ``test_accuracy``,
        ``test_loss``, bytes, FLOPs, ``host_time_s``); empty with those columns when the run
        wrote none.
    clients : pandas.DataFrame
        ``clients.csv``: one row per round and cohort client, what the radio did for it and where
        its time went (:data:`~sfl_sim.runs.rundir.schema.CLIENTS_COLUMNS`); empty with those
        columns when the run wrote none (``metrics.client_record: false``, or a run older than the file).
    error : str
        One line saying why the run failed or diverged; ``""`` otherwise.
    coordinates : dict
        A study run's grid fields, ``algorithm`` and ``seed``; empty for a scenario run.
    """

    label: str
    path: Path
    status: str
    summary: dict[str, Any] = field(repr=False)
    metrics: pd.DataFrame = field(repr=False)
    clients: pd.DataFrame = field(repr=False)
    error: str = ""
    coordinates: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether the run finished (``complete``, or ``skipped`` because it had before)."""
        return self.status in (COMPLETE, "skipped")


@dataclass(frozen=True)
class PlannedRun:
    """One run a :func:`check` or :func:`plan_study` found, with nothing trained or written.

    Attributes
    ----------
    name : str
        The run directory's name (the label for a scenario run).
    path : pathlib.Path
        The run directory.
    done : bool
        Its directory already holds the finished run (a study skips it; a scenario run resumed
        with ``resume=True`` has nothing left to do).
    coordinates : dict
        A study run's grid fields, ``algorithm`` and ``seed``; empty for a scenario run.
    retime_from : str or None
        A study run to do: the name of the run it is first re-timed from (it differs from it only in
        timing fields; refused, it tries the other finished runs of its training, then trains);
        None: it trains (or is done).
    """

    name: str
    path: Path
    done: bool
    coordinates: dict[str, Any] = field(default_factory=dict)
    retime_from: str | None = None


@dataclass(frozen=True)
class Plan:
    """What a scenario or a study would run.

    Attributes
    ----------
    path : pathlib.Path
        The output directory (of the scenario, or of the study).
    base : pathlib.Path or None
        The scenario file the runs come from; None for a scenario given as an object.
    seeds : tuple of int
        The root seeds the runs use.
    runs : tuple of PlannedRun
    radio : tuple of str
        What :func:`check` found about the cell, one line each (how many clients are in downlink
        outage); empty for a study's plan.
    expected : str
        A study's plan: how many runs train and how many are re-timed, and the host time that is
        expected to take (and what the estimate is based on); empty for a scenario.
    """

    path: Path
    base: Path | None
    seeds: tuple[int, ...]
    runs: tuple[PlannedRun, ...]
    radio: tuple[str, ...] = ()
    expected: str = ""


@dataclass(frozen=True, eq=False)
class Report:
    """The tables and files of :func:`report` (the CSV tables, read back as written).

    Attributes
    ----------
    path : pathlib.Path
        The report directory.
    files : list of pathlib.Path
        Every file written, ``README.md`` first.
    accuracy, tta, overhead, runs : pandas.DataFrame
        ``accuracy.csv``, ``tta.csv``, ``overhead.csv`` and ``runs.csv`` (tidy, raw units:
        accuracy as a fraction, seconds, bytes, FLOPs).
    """

    path: Path
    files: list[Path]
    accuracy: pd.DataFrame = field(repr=False)
    tta: pd.DataFrame = field(repr=False)
    overhead: pd.DataFrame = field(repr=False)
    runs: pd.DataFrame = field(repr=False)


@dataclass(frozen=True, eq=False)
class ChannelReport:
    """The cell of a scenario, per client, as :func:`channel_report` built it.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per client, the columns of :data:`sfl_sim.runs.rundir.schema.CELL_REPORT_COLUMNS` (position
        in m, LOS, path loss and shadowing in dB, SNR in dB, uplink rates in bit/s).
    path : pathlib.Path
        The folder holding the files.
    files : list of pathlib.Path
        ``cell.csv``, ``channel_draws.csv``, then the figures
        (:data:`sfl_sim.reports.channel.FIGURES`, and ``fading_autocorrelation.png`` for a
        time-varying fading).
    draws : pandas.DataFrame
        The rounds' draws, one row per round and client (:data:`sfl_sim.reports.channel.DRAW_COLUMNS`,
        as in ``channel_draws.csv``).
    """

    table: pd.DataFrame = field(repr=False)
    path: Path
    files: list[Path]
    draws: pd.DataFrame | None = field(default=None, repr=False)


# ----------------------------------------------------------------------------- scenarios


# ----------------------------------------------------------------------------- argument checks
# A wrong argument type is one line naming the argument, as the CLI's bad input is (not a
# TypeError from deep inside).

_PATH = "a path (str or os.PathLike)"


def _argument_error(name: str, value: Any, allowed: str) -> ArgumentError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return ArgumentError(f"{name}: got {type(value).__name__} {shown}; allowed: {allowed}")


def _path_arg(name: str, value: Any, optional: bool = False) -> Any:
    """``value`` unchanged when it is a path (or None, when ``optional``)."""
    if (value is None and optional) or isinstance(value, str) or \
            (isinstance(value, os.PathLike) and isinstance(os.fspath(value), str)):
        return value
    raise _argument_error(name, value, _PATH + (", or None" if optional else ""))


def _scenario_arg(name: str, value: Any) -> Any:
    """``value`` unchanged when it names a scenario (a path or a name) or is a Scenario."""
    from sfl_sim.config import Scenario

    if isinstance(value, Scenario):
        return value
    try:
        return _path_arg(name, value)
    except ArgumentError:
        raise _argument_error(name, value, "a scenario file or a shipped scenario's name (str or os.PathLike), "
                                           "or a sfl_sim.config.Scenario") from None


def _paths_arg(name: str, value: Any) -> list[str]:
    """A path, or an iterable of paths, as a list of strings."""
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(_path_arg(name, value))]
    if isinstance(value, Iterable) and not isinstance(value, (bytes, Mapping)):
        items = list(value)
        if all(isinstance(v, str) or (isinstance(v, os.PathLike) and isinstance(os.fspath(v), str)) for v in items):
            return [os.fspath(v) for v in items]
    raise _argument_error(name, value, f"{_PATH}, or a list of them")


def _scenario_file(scenario: ScenarioLike) -> Path | None:
    """The file ``scenario`` names (None for a scenario object)."""
    from sfl_sim.config import Scenario
    from sfl_sim.config.scenario_files import resolve_scenario

    _scenario_arg("scenario", scenario)
    if isinstance(scenario, Scenario):
        return None
    return resolve_scenario(os.fspath(scenario))


def _override_items(overrides: Overrides) -> list[tuple[list[str], Any]]:
    """``overrides`` as (field path, value) pairs, in the order they apply."""
    from sfl_sim.config import parse_override

    if isinstance(overrides, Mapping):
        return [(str(key).split("."), value) for key, value in overrides.items()]
    if isinstance(overrides, (str, bytes)):
        raise ArgumentError(f"overrides: got the string {overrides!r}; allowed: a list of FIELD=VALUE strings or a "
                            f"mapping of dotted fields to values")
    if not isinstance(overrides, Iterable) or not all(isinstance(text, str) for text in overrides):
        raise _argument_error("overrides", overrides, "a list of FIELD=VALUE strings or a mapping of dotted fields "
                                                      "to values")
    return [parse_override(text) for text in overrides]


def _load(scenario: ScenarioLike, overrides: Overrides = (), extra: Mapping[str, Any] | None = None,
          path: Path | None = None) -> Scenario:
    """Read (or copy), override and validate a scenario; ``extra`` are the CLI's own flags, applied last."""
    import copy

    from sfl_sim.config import Scenario, apply_override, load_scenario_raw, validate
    from sfl_sim.config.scenario_files import resolve_scenario

    _scenario_arg("scenario", scenario)
    if isinstance(scenario, Scenario):
        raw = copy.deepcopy(scenario.to_yaml_dict())
    else:
        raw = load_scenario_raw(path if path is not None else resolve_scenario(os.fspath(scenario)))
    for keys, value in _override_items(overrides):
        apply_override(raw, keys, copy.deepcopy(value))
    for key, value in (extra or {}).items():
        if value is not None:
            raw[key] = os.fspath(value) if isinstance(value, os.PathLike) else value
    return validate(raw)


def load_scenario(name_or_path: ScenarioLike, overrides: Overrides = ()) -> Scenario:
    """A validated scenario: a shipped one by name, or a file, with overrides applied.

    Parameters
    ----------
    name_or_path : str, os.PathLike or Scenario
        A scenario file, or a shipped scenario's name with or without ``.yaml``
        (``"cellular_100clients"``, ``"paper/cifar10_alpha2"``); a file that exists wins.  A
        :class:`~sfl_sim.config.Scenario` is copied (and overridden).
    overrides : sequence of str or mapping, optional
        ``["clients.participation=0.2", "rounds=5"]`` (``--set`` syntax, YAML values) or
        ``{"clients.participation": 0.2, "rounds": 5}``; applied in order after the file.

    Returns
    -------
    sfl_sim.config.Scenario

    Raises
    ------
    ScenarioNotFoundError
        If the name is neither a file nor a shipped scenario.
    ConfigError
        If the file cannot be read or any field is invalid (one line naming the field, the value
        and what is allowed).
    """
    return _load(_scenario_arg("name_or_path", name_or_path), overrides)


def _check_workers(workers: int) -> None:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"--workers: got {workers}; allowed: an integer >= 1")


def _seed_list(seeds: str | Iterable[int]) -> list[int]:
    """``"0,1,2"`` (the CLI's text) or an iterable of ints as a list of seeds."""
    if isinstance(seeds, str):
        try:
            return [int(s) for s in seeds.split(",") if s.strip()]
        except ValueError:
            raise ConfigError(f"--seeds: got {seeds!r}; allowed: comma-separated integers, e.g. 0,1,2") from None
    out = list(seeds)
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in out):
        raise ConfigError(f"--seeds: got {out!r}; allowed: integers, e.g. [0, 1, 2]")
    return out


@dataclass(frozen=True)
class _Study:
    """A study resolved for running: its spec, base scenario file and output directory."""

    spec: StudySpec
    base: Path
    out: Path
    source: Path | None = None  # the study file (None: a scenario run with seeds)


def _seeds_study(scenario: ScenarioLike, seeds: str | Iterable[int], overrides: Overrides,
                 output_dir: PathLike | None, seed: int | None, rounds: int | None,
                 device: str | None) -> _Study:
    """The study behind ``run(scenario, seeds=...)``: the scenario's algorithms x seeds."""
    from sfl_sim.config import load_scenario_raw
    from sfl_sim.study.plan import study_from_scenario

    path = _scenario_file(scenario)
    seed_list = _seed_list(seeds)
    if seed is not None:
        raise ConfigError("--seed: give either --seed or --seeds, not both")
    if path is None:
        raise ConfigError("seeds: a study records the scenario file it runs; give the scenario as a file or a "
                          "shipped name, not as a Scenario object")
    fixed = {".".join(keys): value for keys, value in _override_items(overrides)}
    for key, value in (("rounds", rounds), ("device", device)):
        if value is not None:
            fixed[key] = value
    out = os.fspath(output_dir) if output_dir else _load(scenario, overrides, path=path).output_dir
    load_scenario_raw(path)  # the file itself must read cleanly before anything else
    spec, base = study_from_scenario(path, seed_list, fixed, out)
    return _Study(spec, base, Path(out))


def _study_file(study: PathLike, output_dir: PathLike | None) -> _Study:
    from sfl_sim.study.plan import load_study

    spec, base = load_study(os.fspath(_path_arg("study", study)))
    _path_arg("output_dir", output_dir, optional=True)
    out = Path(output_dir or spec.output_dir or f"runs/studies/{spec.name}")
    return _Study(spec, base, out, Path(study))


# ----------------------------------------------------------------------------- results


def _metrics(run_dir: Path) -> pd.DataFrame:
    import pandas as pd

    from sfl_sim.runs.rundir.files import RunDir
    from sfl_sim.runs.rundir.schema import METRICS_COLUMNS

    path = RunDir(run_dir).metrics_path
    return pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=list(METRICS_COLUMNS))


def _summary(run_dir: Path) -> dict[str, Any]:
    from sfl_sim.runs.rundir.files import RunDir

    return RunDir(run_dir).read_summary() or {}


def _result(label: str, run_dir: Path, status: str | None = None, error: str | None = None,
            coordinates: dict[str, Any] | None = None, summary: dict[str, Any] | None = None) -> RunResult:
    """The result of ``run_dir`` as its files say (``summary`` stands in when none was written)."""
    on_disk = _summary(run_dir) or dict(summary or {})
    from sfl_sim.analysis.readers import read_clients

    return RunResult(label=label, path=run_dir, status=status or on_disk.get("status", FAILED),
                     summary=on_disk, metrics=_metrics(run_dir),
                     error=on_disk.get("error", "") if error is None else error,
                     coordinates=dict(coordinates or {}), clients=read_clients(run_dir))


# ----------------------------------------------------------------------------- check and run


def _check_no_overwrite(overwrite: bool) -> None:
    """A study keeps the runs it finished, so ``overwrite`` is refused with ``seeds``."""
    if overwrite:
        raise ConfigError("overwrite: got it with seeds; allowed: without seeds (a study reuses the runs it "
                          "finished: choose another output_dir to start over)")


def check(scenario: ScenarioLike, *, overrides: Overrides = (), output_dir: PathLike | None = None,
          seed: int | None = None, seeds: str | Iterable[int] | None = None, rounds: int | None = None,
          device: str | None = None, workers: int = 1, resume: bool = False,
          strict_versions: bool = False, overwrite: bool = False) -> Plan:
    """Everything a run does before training, and nothing after (``sfl-sim scenario --check``).

    Without ``seeds``: validates the scenario, checks the output directory and every run
    directory (with ``resume``, the runs to continue), loads the data and builds every part of
    every run.  With ``seeds``: validates the study and lists its runs (which are done), as
    ``sfl-sim scenario --seeds ... --check`` does.  Nothing is written either way.

    Parameters
    ----------
    scenario, overrides, output_dir, seed, seeds, rounds, device, workers, resume, strict_versions, overwrite
        As for :func:`run` (with ``overwrite``, a run directory that holds a run is no error, and
        nothing is removed).

    Returns
    -------
    Plan

    Raises
    ------
    ConfigError, ScenarioNotFoundError, RunDirError, CheckpointError, DatasetNotFoundError
    """
    if seeds is not None:
        _check_no_overwrite(overwrite)
        study = _seeds_study(scenario, seeds, overrides, output_dir, seed, rounds, device)
        return _plan(study, workers, strict_versions)
    path = _scenario_file(scenario)
    cfg = _load(scenario, overrides, {"output_dir": _path_arg("output_dir", output_dir, optional=True), "seed": seed,
                                      "rounds": rounds, "device": device},
                path=path)
    from sfl_sim.runs import runner  # imported late: torch is slow to import, the errors above need none
    from sfl_sim.runs.build import build_cell, build_harq, build_scheduler

    # The scenario's components (conformance checks included) before the output directory: a
    # leftover run directory must not hide a mistake in the scenario.
    build_harq(cfg, build_cell(cfg))
    scheduler = build_scheduler(cfg)  # built once: the runs prepared below get this one
    prepared = runner.prepare_scenario(cfg, resume=resume, strict_versions=strict_versions, overwrite=overwrite)
    runs = tuple(PlannedRun(run.label, plan.run_dir,
                            done=plan.resume and plan.rounds_done >= cfg.rounds)
                 for run, plan in prepared)
    return Plan(Path(cfg.output_dir), path, (cfg.seed,), runs, _radio_lines(cfg, prepared[0][0].cell, scheduler))


def _radio_lines(cfg: Scenario, cell: Any, scheduler: Any) -> tuple[str, ...]:
    """What ``--check`` says about the cell: how many clients are in uplink and in downlink outage
    (every run of a scenario has the same cell)."""
    from sfl_sim.channel.link.downlink import downlink_outage
    from sfl_sim.channel.link.uplink_outage import uplink_outage
    from sfl_sim.engine.band import scheduling_form
    from sfl_sim.runs.build import selected_per_round

    k, scheduled = selected_per_round(cfg), scheduling_form(scheduler) != "static"
    return (uplink_outage(cell, k, scheduled).line(cfg.cell.scheduler.name),
            downlink_outage(cell, k).line(cfg.cell.downlink.mode))


def run(scenario: ScenarioLike, *, overrides: Overrides = (), output_dir: PathLike | None = None,
        seeds: str | Iterable[int] | None = None, workers: int = 1, resume: bool = False,
        progress: bool = False, seed: int | None = None, rounds: int | None = None,
        device: str | None = None, strict_versions: bool = False, overwrite: bool = False) -> list[RunResult]:
    """Run every algorithm of a scenario (``sfl-sim scenario``), writing the same files as the CLI.

    Parameters
    ----------
    scenario : str, os.PathLike or Scenario
        A scenario file, a shipped scenario's name, or a :class:`~sfl_sim.config.Scenario`.
    overrides : sequence of str or mapping, optional
        ``--set`` overrides (see :func:`load_scenario`).
    output_dir : path, optional
        Where the run directories go (default: the scenario's ``output_dir``).
    seeds : iterable of int, optional
        Run the scenario's algorithms for each seed as a study, one directory per algorithm and
        seed (``alg=<label>__seed=<n>``), resumable; needs the scenario as a file or name.
    workers : int
        With ``seeds``: runs at once (processes).
    resume : bool
        Continue interrupted runs from their checkpoints (a study always does).
    progress : bool
        Print a header line per run and a progress bar (a widget in a notebook) on stderr.
    seed, rounds, device : optional
        The root seed, the number of rounds and the torch device (``cpu``, ``cuda``, ``auto``),
        applied after ``overrides`` (the CLI's ``--seed``, ``--rounds``, ``--device``).
    strict_versions : bool
        Refuse, instead of a warning line, to continue or reuse a run made with other versions
        of sfl-sim (its git commit), torch, numpy or Python (``resolved.yaml``).
    overwrite : bool
        Replace the runs the run directories hold (the CLI's ``--overwrite``; never the default,
        not with ``resume`` or ``seeds``): each new run is written beside the old one, which is
        replaced only once the new one has finished (a new run that fails leaves it whole), and
        only the files sfl-sim wrote go.  Without it a directory that holds a run is refused.

    Returns
    -------
    list of RunResult
        One per run, in the scenario's (or the study's) order.  A run that failed or diverged is
        in the list with its ``status`` and ``error``; the others still ran.

    Raises
    ------
    ConfigError, ScenarioNotFoundError, RunDirError, CheckpointError, DatasetNotFoundError
        Before any work: nothing is run or overwritten.
    """
    if seeds is not None:
        _check_no_overwrite(overwrite)
        study = _seeds_study(scenario, seeds, overrides, output_dir, seed, rounds, device)
        return _run_study(study, workers=workers, progress=progress, strict_versions=strict_versions)
    cfg = _load(scenario, overrides, {"output_dir": _path_arg("output_dir", output_dir, optional=True), "seed": seed,
                                      "rounds": rounds, "device": device})
    from sfl_sim.analysis.comparison import write_summary_files
    from sfl_sim.runs import runner  # imported late: torch is slow to import, the errors above need none

    summaries = runner.run_scenario(cfg, resume=resume, progress=progress, strict_versions=strict_versions,
                                    overwrite=overwrite)
    out = Path(cfg.output_dir)
    # each run as its directory holds it (a failed --overwrite kept the run it was to replace), with
    # the status and error of what ran now
    results = [_result(spec.label, out / spec.label, status=summary.get("status"), error=summary.get("error"),
                       summary=summary) for spec, summary in zip(cfg.algorithms, summaries, strict=True)]
    write_summary_files([r.summary for r in results], out)
    return results


def retime(run_dir: PathLike, *, overrides: Overrides = (), output_dir: PathLike,
           progress: bool = False) -> RunResult:
    """Time a finished run again under other timing-only settings, without training (``sfl-sim retime``).

    The run's recorded work (``work.jsonl.gz``) is replayed on the engine built with
    ``overrides`` (the cell, the server's and clients' compute budgets, availability, energy,
    the straggler policy); every decision is compared with the record.  The new run directory
    has the new simulated times, bytes, FLOPs and energy with the recorded accuracies, and its
    ``resolved.yaml`` names the run it came from (:mod:`sfl_sim.runs.retime`).

    Parameters
    ----------
    run_dir : path
        A complete run directory (one algorithm's).
    overrides : sequence of str or mapping, optional
        ``--set`` overrides of timing-only fields (see :func:`load_scenario`).
    output_dir : path
        The re-timed run directory (new or empty).
    progress : bool
        Show the progress bar on stderr.

    Returns
    -------
    RunResult

    Raises
    ------
    RetimeRefused
        A field that changes training, or a decision that goes otherwise (one line naming the round,
        the client and the decision); nothing is written.
    ConfigError, RunDirError, DatasetNotFoundError
    """
    from sfl_sim.runs.retime import retime as retime_run  # imported late: torch is slow to import

    out = Path(_path_arg("output_dir", output_dir))
    _override_items(overrides)  # a wrong type refused here, in one line
    summary = retime_run(Path(_path_arg("run_dir", run_dir)), overrides, out, progress=progress)
    return _result(str(summary.get("label", out.name)), out, summary=summary)


# ----------------------------------------------------------------------------- studies


def _plan(study: _Study, workers: int = 1, strict_versions: bool = False, progress: bool = False) -> Plan:
    import sys

    from sfl_sim.study.execute import is_complete
    from sfl_sim.study.plan import expand
    from sfl_sim.study.waves import expected_cost, retime_plan

    _check_workers(workers)
    runs = expand(study.spec, study.base, progress=sys.stderr if progress else None)
    done = [r.name for r in runs if is_complete(r, study.out / r.name, strict_versions)]
    sources = retime_plan(runs, done, lambda r: study.out / r.name)
    planned = tuple(PlannedRun(r.name, study.out / r.name, r.name in done, dict(r.coordinates),
                               None if r.name in done else sources.get(r.name))
                    for r in runs)
    return Plan(study.out, study.base, tuple(study.spec.seeds), planned,
                expected=expected_cost(runs, done, sources, lambda r: study.out / r.name))


def _run_study(study: _Study, workers: int = 1, executor: str = "local", address: str | None = None,
               threads_per_worker: int | None = None, cpus_per_run: float = 1.0, gpus_per_run: float = 0.0,
               progress: bool = False, strict_versions: bool = False) -> list[RunResult]:
    import sys

    import yaml

    from sfl_sim.runs.rundir import marker
    from sfl_sim.study import execute as study_exec
    from sfl_sim.study.plan import expand

    _check_workers(workers)
    runs: list[StudyRun] = expand(study.spec, study.base, progress=sys.stderr if progress else None)
    out = study.out
    marker.check_writable(out, "study output_dir")
    record = yaml.safe_dump({**study.spec.model_dump(), "base": str(study.base)}, sort_keys=False)
    copy = out / STUDY_FILE
    # the study file itself in the study directory is the study's record: never rewritten
    its_own = study.source is not None and copy.exists() and os.path.samefile(study.source, copy)
    names = (study_exec.STATUS_FILE, *(() if its_own else (STUDY_FILE,)))
    marker.claim(out, "study", names, record=record)
    marker.record(out, "study", names)
    if not its_own:
        copy.write_text(record)
    results = study_exec.run_study(runs, out, workers=workers, executor=executor, address=address,
                                   threads_per_worker=threads_per_worker, cpus_per_run=cpus_per_run,
                                   gpus_per_run=gpus_per_run, progress=progress, strict_versions=strict_versions)
    return [_result(r.label, out / r.name, status=results[r.name]["status"],
                    error=results[r.name].get("error") or "", coordinates=r.coordinates) for r in runs]


def plan_study(study: PathLike, *, output_dir: PathLike | None = None, workers: int = 1,
               strict_versions: bool = False, progress: bool = False) -> Plan:
    """The runs of a study file and which are done, running nothing (``sfl-sim study --dry-run``).

    Every grid point is checked as its runs' builds would check it, as :func:`run_study` does.

    Parameters
    ----------
    study, output_dir, workers, strict_versions
        As for :func:`run_study` (``workers`` is checked as a run would check it).
    progress : bool
        For a large grid, say its size and how far its checks have come on stderr.

    Returns
    -------
    Plan

    Raises
    ------
    ConfigError, ScenarioNotFoundError
    """
    return _plan(_study_file(study, output_dir), workers, strict_versions, progress)


def run_study(study: PathLike, *, output_dir: PathLike | None = None, workers: int = 1,
              executor: str = "local", address: str | None = None, threads_per_worker: int | None = None,
              cpus_per_run: float = 1.0, gpus_per_run: float = 0.0, progress: bool = False,
              strict_versions: bool = False) -> list[RunResult]:
    """Run a study file (``sfl-sim study``): base scenario x seeds x grid, resumably, in parallel.

    Finished runs are skipped, interrupted ones resume, the rest start; the study directory gets
    ``study.yaml``, ``runs.csv`` and one run directory per run.

    Parameters
    ----------
    study : path
        The study YAML (``base``, ``seeds``, ``grid``, ``set``, ``output_dir``).
    output_dir : path, optional
        The study directory (default: the study's ``output_dir``, else
        ``runs/studies/<file stem>``).
    workers : int
        Runs at once with the local executor.
    executor : {"local", "ray"}
    address : str, optional
        Ray cluster address (default: a local Ray instance).
    threads_per_worker : int, optional
        Torch threads per local worker (default: the free cores divided among the workers).
    cpus_per_run, gpus_per_run : float
        Ray resources each run asks for.
    progress : bool
        Print one line per finished run (and an overall bar on a terminal or in a notebook); for a
        large grid, its size and how far its checks have come first.
    strict_versions : bool
        Refuse, instead of a warning line, to continue or reuse a run made with other versions
        of sfl-sim (its git commit), torch, numpy or Python (``resolved.yaml``).

    Returns
    -------
    list of RunResult
        One per run of the study, in the study's order (``status`` ``skipped`` for runs that
        were already complete).

    Raises
    ------
    ConfigError, ScenarioNotFoundError, RunDirError, UserError
        Before any run starts.
    """
    return _run_study(_study_file(study, output_dir), workers=workers, executor=executor, address=address,
                      threads_per_worker=threads_per_worker, cpus_per_run=cpus_per_run, gpus_per_run=gpus_per_run,
                      progress=progress, strict_versions=strict_versions)


# ----------------------------------------------------------------------------- analysis and the cell


def _paths(dirs: PathLike | Iterable[PathLike]) -> list[str]:
    return _paths_arg("dirs", dirs)


def report(dirs: PathLike | Iterable[PathLike], *, output_dir: PathLike | None = None,
           reference: str | None = None, targets: str | Sequence[float] | None = None, band: str = "std",
           ignore: Sequence[str] = (), include_incomplete: bool = False, figures: bool = True,
           figure_width_in: float | None = None, seed_lines: bool = False, smooth: int = 0,
           log_x: bool = False, lines: str | None = None, style: str = "default") -> Report:
    """Tables and figures of a study or any set of run directories (``sfl-sim report``).

    Parameters
    ----------
    dirs : path or iterable of paths
        Study, scenario-output or run directories (searched for run directories).
    output_dir : path, optional
        Report folder (default: ``DIR/report``, under the common parent of several).
    reference : str, optional
        Algorithm label to report speed-ups against.
    targets : sequence of float or str, optional
        Accuracy targets as fractions (or the CLI's ``"0.6,0.7"``), also drawn in the figures.
        Default: the scenarios' ``target_accuracies``, no lines.
    band : {"std", "ci", "minmax"}
        The figures' band: ± 1 std, 95 % bootstrap CI of the mean (5 seeds or more) or min-max.
    ignore : sequence of str
        Scenario fields not to split settings by.
    include_incomplete : bool
        Also report runs that did not finish.
    figures : bool
        Draw the figures (tables alone are faster).
    figure_width_in : float, optional
        Figure width in inches, 3 to 12 (default: the style's, 6.4, or 3.5 for one column with
        ``style="paper"``); fonts stay >= 7 pt.
    seed_lines : bool
        Also draw every seed as a thin line (no band).
    smooth : int
        Rolling mean over this many evaluations of each seed in the figures (0: none).
    log_x : bool
        Log x axes in the accuracy figures.
    lines : str, optional
        A setting field (e.g. ``scheduler``) drawn as lines in the figures against a numeric field,
        instead of one figure per value of it.
    style : {"default", "paper"}
        Figure style: ``paper`` is serif (STIX, Times-like), one column (3.5 in) wide unless
        ``figure_width_in`` says otherwise. Every PDF embeds its fonts (TrueType).

    Returns
    -------
    Report

    Raises
    ------
    FileNotFoundError, NotADirectoryError, analysis.StudyError, analysis.RunFormatError, ValueError
        With the one line ``sfl-sim report`` prints.
    """
    import pandas as pd

    from sfl_sim.analysis.figure_style import STYLE_WIDTH_IN, check_style
    from sfl_sim.analysis.report import default_output_dir, parse_targets, write_report

    paths = _paths(dirs)
    given = _path_arg("output_dir", output_dir, optional=True)
    out = Path(given) if given else default_output_dir(paths, "report")
    parsed = parse_targets(targets) if isinstance(targets, str) else targets
    files = write_report(paths, out, reference=reference, targets=parsed, band=band, ignore=list(ignore),
                         include_incomplete=include_incomplete, figures=figures,
                         figure_width_in=STYLE_WIDTH_IN[check_style(style)] if figure_width_in is None
                         else figure_width_in, seed_lines=seed_lines, smooth=smooth, log_x=log_x, lines=lines,
                         style=style)
    tables = {stem: pd.read_csv(out / f"{stem}.csv") for stem in ("accuracy", "tta", "overhead", "runs")}
    return Report(path=out, files=files, **tables)


def plot(dirs: PathLike | Iterable[PathLike], *, output_dir: PathLike | None = None) -> list[Path]:
    """Accuracy and uplink bytes versus simulated time, one PNG each (``sfl-sim plot``).

    Parameters
    ----------
    dirs : path or iterable of paths
        Run directories, or scenario / study directories with run directories below.
    output_dir : path, optional
        Folder for the PNG files (default: ``DIR/plots``, under the common parent of several).

    Returns
    -------
    list of pathlib.Path
        The files written.

    Raises
    ------
    FileNotFoundError, NotADirectoryError, analysis.RunFormatError
    """
    from sfl_sim.analysis import plot_runs
    from sfl_sim.analysis.report import default_output_dir

    paths = _paths(dirs)
    given = _path_arg("output_dir", output_dir, optional=True)
    return list(plot_runs(paths, given or default_output_dir(paths, "plots")))


def channel_report(scenario: ScenarioLike, *, overrides: Overrides = (), output_dir: PathLike | None = None,
                   seed: int | None = None, stream: TextIO | None = None,
                   colour_by: str = "rate", rounds: int | None = None,
                   round_s: float | None = None) -> ChannelReport:
    """A scenario's cell per client and over rounds' draws, without training (``sfl-sim channel``);
    writes cell.csv, channel_draws.csv and the figures (:func:`sfl_sim.reports.channel.channel_report`).

    Parameters
    ----------
    scenario, overrides
        As for :func:`load_scenario`.
    output_dir : path, optional
        Folder for ``cell.csv`` and ``cell.png`` (default: ``<scenario output_dir>/cell_report``).
    seed : int, optional
        Root seed (placement, shadowing, LOS streams), applied after ``overrides``.
    stream : text stream, optional
        Where to print the per-client table as the CLI does; None prints nothing.
    colour_by : {"rate", "cqi"}, default "rate"
        What colours the clients in ``cell.png`` (``cqi`` needs ``cell.rate: mcs_table``).
    rounds : int, optional
        Rounds of fading and interference drawn (default :data:`sfl_sim.reports.channel.DEFAULT_ROUNDS`).
    round_s : float, optional
        Simulated seconds between drawn rounds, for mobility (default
        :data:`sfl_sim.reports.channel.DEFAULT_ROUND_S`).

    Returns
    -------
    ChannelReport

    Raises
    ------
    ConfigError, ScenarioNotFoundError
    """
    import pandas as pd

    from sfl_sim.reports import channel as cell_report
    from sfl_sim.runs import output_paths

    cfg = _load(scenario, overrides, {"seed": seed})
    _path_arg("output_dir", output_dir, optional=True)
    out = Path(output_dir) if output_dir else output_paths.cell_report_dir(cfg.output_dir)
    drawn: dict[str, Any] = {}
    table = cell_report.channel_report(
        cfg, out, stream=io.StringIO() if stream is None else stream, colour_by=colour_by,
        rounds=cell_report.DEFAULT_ROUNDS if rounds is None else rounds,
        round_s=cell_report.DEFAULT_ROUND_S if round_s is None else round_s, draws_out=drawn)
    in_time = out / cell_report.channel_time.AUTOCORRELATION_FILE  # written for a time-varying fading only
    return ChannelReport(table=pd.DataFrame({c: table[c] for c in CELL_REPORT_COLUMNS}), path=out,
                         files=[out / CELL_FILE, out / cell_report.DRAWS_FILE, *(out / f for f in cell_report.FIGURES),
                                *([in_time] if in_time.is_file() else [])],
                         draws=pd.DataFrame({c: drawn[c] for c in cell_report.DRAW_COLUMNS}))


def trace_report(path: PathLike, *, format: str = "csv", kind: str = "availability",
                 output_dir: PathLike | None = None, stream: TextIO | None = None) -> Any:
    """A device trace summarised, without training (``sfl-sim traces``); writes traces.csv and traces.png.

    Parameters
    ----------
    path : path
        The trace file.
    format : str
        ``csv``, ``flash`` or ``fedscale`` (availability); ``csv`` or ``fedscale`` (capability).
    kind : {'availability', 'capability'}
    output_dir : path, optional
        Folder for the files (default: ``<file name>_report`` beside the file).
    stream : text stream, optional
        Where to print the summary as the CLI does; None prints nothing.

    Returns
    -------
    sfl_sim.reports.traces.TraceReport

    Raises
    ------
    sfl_sim.clients.availability.TraceError
        One line when the file cannot be read in that format.
    """
    from sfl_sim.reports import traces as reports

    _path_arg("path", path)
    _path_arg("output_dir", output_dir, optional=True)
    return reports.trace_report(path, format, kind, out_dir=None if output_dir is None else Path(output_dir),
                                stream=io.StringIO() if stream is None else stream)
