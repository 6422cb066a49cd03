"""What to do with a run directory, decided before any work: start, restart, resume — or refuse.

A run directory is a researcher's evidence, so it must never describe a run that did not happen:

* a directory without run files, or whose run died before its first checkpoint (no
  ``checkpoint.pt`` and at most the first trained evaluation row), is started (again) from scratch;
* a directory with a checkpoint is continued only with ``--resume``, and only when the scenario
  asked for is the one the run was made with — every difference but the fields in
  :data:`RESUMABLE_FIELDS` is refused and listed (a field the recorded scenario lacks counts as
  its default: a run recorded by a simulator without that field ran as the default does) —
  and when today's code resolves it to the parameters the run recorded (``resolved.yaml``,
  :func:`sfl_sim.resolved.check_resolution`: a changed default is refused field by field, other
  versions of the code are a warning);
* a missing or unreadable ``metrics.csv``/``rounds.csv``/``checkpoint.pt`` next to a run's other
  files is refused with the file's name and how to recover, instead of silently dropping or
  overwriting history.
"""
from __future__ import annotations

import csv
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

import yaml

from analysis.schema import HOST_ONLY_FIELDS, RESOLVED_FILE
from sfl_sim import checkpoint as ckpt
from sfl_sim import resolved as resolution_record
from sfl_sim.config import flatten, validate
from sfl_sim.errors import CheckpointError, RunDirError

#: Files a run writes into its directory.
RUN_FILES = ("metrics.csv", "rounds.csv", "summary.json", "scenario.yaml", RESOLVED_FILE, "cell.csv", "checkpoint.pt",
             "classes.csv")

#: Scenario fields a resume may change (a field covers every field below it): none of them
#: changes what the run computes (more rounds continue the same run; the host-only fields only
#: decide where files go, how fast the host works and which optional measurements the rows from
#: then on record).
RESUMABLE_FIELDS = ("rounds", *HOST_ONLY_FIELDS)


def _resumable(key: str) -> bool:
    return any(key == f or key.startswith(f + ".") for f in RESUMABLE_FIELDS)


@dataclass
class RunDirPlan:
    """What :func:`plan_run_dir` decided for one run directory.

    Attributes
    ----------
    run_dir : Path
    resume : bool
        Continue from :attr:`checkpoint` (False: start from scratch, overwriting a dead start).
    checkpoint : dict or None
        The loaded checkpoint when resuming.
    """

    run_dir: Path
    resume: bool
    checkpoint: Optional[Dict[str, Any]] = field(default=None, repr=False)


def check_writable(out: Path, what: str = "output_dir") -> None:
    """Refuse an output directory that cannot be created or written, before any work.

    Nothing is left behind: the probe file is created in the nearest existing ancestor and
    removed at once.

    Raises
    ------
    RunDirError
        If a component of the path is a file, or the directory cannot be written.
    """
    path = Path(out)
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        where = "is" if probe == path else f"is under {str(probe)!r}, which is"
        raise RunDirError(f"{what}: {str(path)!r} {where} a file, not a directory; choose another --output-dir")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise RunDirError(f"{what}: {str(path)!r} cannot be written ({exc.strerror or exc}); choose another "
                          f"--output-dir") from None


def scenario_differences(made_with: Mapping[str, Any], asked: Mapping[str, Any],
                         defaults: Optional[Mapping[str, Any]] = None) -> List[str]:
    """Fields (dotted) whose values differ between two resolved scenarios, as ``field: old -> new``.

    Fields in :data:`RESUMABLE_FIELDS` are left out.  A field ``made_with`` lacks and ``asked``
    gives its value in ``defaults`` (flattened, default: :func:`default_fields`) is no difference:
    the run was made before the field existed, when the simulator did what its default does (or,
    with a run's recorded resolution in ``defaults``, that is the value the run used).  A section
    ``made_with`` left null and ``asked`` gives is compared by its fields.
    """
    old, new = flatten(made_with), flatten(asked)
    defaults = default_fields() if defaults is None else defaults
    out = []
    for key in sorted(set(old) | set(new)):
        if _resumable(key):
            continue
        a, b = old.get(key, "<absent>"), new.get(key, "<absent>")
        if key not in old and key in defaults and b == defaults[key]:
            continue
        if a is None and key not in new and any(k.startswith(key + ".") for k in new):
            continue  # a section left null (clients.selection) is given now: its own fields are compared
        if a != b:
            out.append(f"{key}: {a!r} -> {b!r}")
    return out


def default_fields() -> Dict[str, Any]:
    """Every field of the default scenario, flattened (``training.optimizer.momentum: 0.0``...)."""
    return flatten(validate({}).to_yaml_dict())


def _read_rounds(path: Path) -> List[int]:
    """Round numbers of a per-round log; refuses a file that is not one."""
    try:
        with path.open(newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if not header or header[0] != "round":
                raise ValueError("no 'round' header")
            return [int(row[0]) for row in reader if row]
    except (ValueError, IndexError, UnicodeDecodeError, csv.Error) as exc:
        raise RunDirError(f"{path}: unreadable ({exc}); rerun into a new directory (-o) to start over") from None


def _status(run_dir: Path) -> Optional[str]:
    """``status`` of the run's ``summary.json``, or None when there is none or it is unreadable."""
    try:
        return json.loads((run_dir / "summary.json").read_text()).get("status")
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return None


def made_with_differences(made_with: Mapping[str, Any], asked: Mapping[str, Any],
                          record: Optional[Mapping[str, Any]]) -> List[str]:
    """:func:`scenario_differences` of a run whose ``resolved.yaml`` is ``record`` (None: none):
    a component parameter the recorded scenario left out and the resume states with the value
    the run resolved it to is no difference (stating it keeps the old behaviour)."""
    defaults = default_fields()
    if record is not None:
        defaults = {**defaults, **resolution_record.recorded_fields(record)}
    return scenario_differences(made_with, asked, defaults)


def plan_run_dir(run_dir: Path, resolved: Mapping[str, Any], resume: bool,
                 resolution: Optional[Callable[[], "resolution_record.Resolution"]] = None,
                 strict_versions: bool = False) -> RunDirPlan:
    """Decide whether ``run_dir`` starts, restarts or resumes, and check everything it needs.

    Parameters
    ----------
    run_dir : Path
    resolved : mapping
        The resolved scenario this run would write to ``scenario.yaml``.
    resume : bool
        ``--resume`` was given.
    resolution : callable, optional
        Returns today's :class:`~sfl_sim.resolved.Resolution` of the run; called only when a
        checkpoint is to be continued, and checked against the run's ``resolved.yaml``
        (:func:`~sfl_sim.resolved.check_resolution`).  None skips that check.
    strict_versions : bool
        Refuse other versions of the code (and a run without ``resolved.yaml``) instead of warning.

    Raises
    ------
    RunDirError, CheckpointError
        With one line naming the file or the differing fields and how to recover
        (:class:`~sfl_sim.resolved.ResolutionMismatchError`: one line per differing parameter).
    ConfigError
        When ``resolution`` finds a component name that resolves to no class.

    Warns
    -----
    sfl_sim.resolved.ResolutionWarning
        Other versions of the code, or a run without ``resolved.yaml``.
    """
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"{run_dir} is a file, not a run directory; choose another --output-dir")
    present = {name for name in RUN_FILES if (run_dir / name).exists()}
    metrics, rounds_log, ckpt_path = run_dir / "metrics.csv", run_dir / "rounds.csv", run_dir / "checkpoint.pt"
    if "checkpoint.pt" not in present:
        # A run killed between its first evaluation row and its first checkpoint has one trained
        # row and no checkpoint: it restarts (the row is recomputed identically).  More than that,
        # or a finished run, without a checkpoint means the checkpoint was lost: never overwrite.
        evaluated = [r for r in _read_rounds(metrics) if r > 0] if "metrics.csv" in present else []
        if len(evaluated) > 1 or (evaluated and _status(run_dir) == "complete"):
            raise RunDirError(f"{run_dir} holds results up to round {max(evaluated)} but no checkpoint.pt, so it "
                              f"can be neither continued nor overwritten; rerun into a new directory (-o)")
        return RunDirPlan(run_dir, resume=False)  # nothing, or a run that died before its first checkpoint
    if not resume:
        raise RunDirError(f"output_dir: {str(run_dir)!r} already holds a run; pass --resume to continue it or "
                          f"choose another --output-dir")
    for name in ("metrics.csv", "rounds.csv", "scenario.yaml"):
        if name not in present:
            raise RunDirError(f"{run_dir / name} is missing, so the history before the checkpoint is lost; "
                              f"rerun into a new directory (-o) to start over")
    try:
        made_with = yaml.safe_load((run_dir / "scenario.yaml").read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{run_dir / 'scenario.yaml'}: unreadable ({type(exc).__name__}); rerun into a new "
                          f"directory (-o)") from None
    if not isinstance(made_with, dict):
        raise RunDirError(f"{run_dir / 'scenario.yaml'}: not a scenario mapping; rerun into a new directory (-o)")
    record = resolution_record.read_record(run_dir)
    diff = made_with_differences(made_with, resolved, record)
    if diff:
        raise RunDirError(f"--resume: {run_dir} was made with a different scenario ({'; '.join(diff)}); only "
                          f"{', '.join(RESUMABLE_FIELDS)} may change on resume — rerun into a new directory (-o) "
                          f"for the new settings")
    state = ckpt.load(ckpt_path)
    done = state["round"]
    if resolved.get("rounds", done) < done:
        raise RunDirError(f"rounds: got {resolved['rounds']}; allowed: at least the {done} rounds {run_dir} has "
                          f"already run")
    evaluated = _read_rounds(metrics)
    if done not in evaluated:
        raise CheckpointError(f"{metrics} has no row for round {done}, the round of checkpoint.pt (rows: "
                              f"{evaluated[-3:] if evaluated else 'none'}); the files do not belong together — "
                              f"rerun into a new directory (-o)")
    logged = [r for r in _read_rounds(rounds_log) if r <= done]
    if logged != list(range(1, done + 1)):
        raise CheckpointError(f"{rounds_log} does not hold rounds 1..{done} of checkpoint.pt; rerun into a new "
                              f"directory (-o)")
    if "classes.csv" in present:  # absent in runs made before it existed: the resume starts it
        _read_rounds(run_dir / "classes.csv")
    if (run_dir / "summary.json").exists():
        try:
            seed = json.loads((run_dir / "summary.json").read_text()).get("seed")
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            seed = None  # rewritten at the next evaluation; the scenario check above already matched
        if seed is not None and seed != resolved.get("seed"):
            raise RunDirError(f"{run_dir / 'summary.json'} records seed {seed}, the scenario seed "
                              f"{resolved.get('seed')}; rerun into a new directory (-o)")
    if resolution is not None:  # last: a damaged directory is refused without a warning before it
        resolution_record.check_resolution(run_dir, record, resolution(), strict_versions)
    return RunDirPlan(run_dir, resume=True, checkpoint=state)


__all__ = ["RUN_FILES", "RESUMABLE_FIELDS", "RunDirPlan", "check_writable", "plan_run_dir", "scenario_differences",
           "made_with_differences"]
