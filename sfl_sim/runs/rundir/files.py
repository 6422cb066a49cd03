"""One run directory: its files, read and written here only, and what to do with it before any work.

:class:`RunDir` owns every path of a run directory (names from :mod:`sfl_sim.runs.rundir.schema`, which
:mod:`sfl_sim.analysis` reads them by) and is the only code that reads or writes its files:

``scenario.yaml``
    The resolved scenario of this run (defaults filled, overrides applied, one algorithm).
``resolved.yaml``
    What the run resolved to: every component's full parameters after defaults, its training
    settings and the versions of the code (:mod:`sfl_sim.runs.resolved`); written at the start, a
    ``resumes`` entry added by each resume that trains more rounds.
``cell.csv``
    One row per client (:data:`sfl_sim.runs.rundir.schema.CELL_COLUMNS`): position, distance, path loss,
    shadowing, SNR and rate at an equal share of the uplink, compute budget, local data size and
    number of classes held.
``metrics.csv``
    One row per evaluated round (:data:`sfl_sim.runs.rundir.schema.METRICS_COLUMNS`); byte and FLOP columns
    are cumulative; ``sim_time_s`` is the simulated clock and ``host_time_s`` the host seconds
    spent by this run; the two are never mixed.  Appended and flushed at each evaluation.
``classes.csv``
    The per-class test accuracies of each evaluated round (:data:`sfl_sim.runs.rundir.schema.CLASSES_FILE`).
``rounds.csv``
    One row per round (:data:`sfl_sim.runs.rundir.schema.ROUNDS_COLUMNS`): the simulated clock at the round's
    end, the round's simulated duration, the host seconds the round took (``round_host_time_s``:
    its training and, when evaluated, its evaluation and rows), and the bytes and FLOPs *of that
    round* (not cumulative) — the per-round protocol table (bytes up, bytes down, client FLOPs,
    server FLOPs) — the uplink retransmissions and dropped transmissions after outage, the number
    of clients the straggler policy or an outage left out, the cohort as space-separated client
    ids, and who was dropped and why (``client:reason`` with reason ``deadline``,
    ``over_selection`` or ``outage``).
``energy.csv``
    With ``energy.enabled`` (the default): one row per round and cohort client
    (:data:`sfl_sim.runs.rundir.schema.ENERGY_COLUMNS`, ``battery_j`` too with batteries), the joules the
    energy ledger charged it (:mod:`sfl_sim.clients.energy.ledger`); appended with the round's
    ``rounds.csv`` row, cut back to the checkpoint on resume like the other logs.
``clients.csv``
    With ``metrics.client_record`` (the default): one row per round and cohort client
    (:data:`sfl_sim.runs.rundir.schema.CLIENTS_COLUMNS`): what the radio did for it and where its
    time in the round went (:mod:`sfl_sim.engine.client_rounds`); appended with the round's
    ``rounds.csv`` row, cut back to the checkpoint on resume like the other logs.
``summary.json``
    Rewritten (atomically) at each evaluation; ``status`` is ``running`` until the last round.
``checkpoint.pt``
    Everything needed to resume after the last evaluated round (:class:`~sfl_sim.runs.checkpoint.RunState`,
    atomically replaced).

A run directory is a researcher's evidence, so it must never describe a run that did not happen.
:meth:`RunDir.plan` decides, before any work, whether it starts, restarts, resumes — or is refused:

* a directory with a run file that sfl-sim did not write (no marker lists it,
  :mod:`sfl_sim.runs.rundir.marker`; an older run by its ``summary.json``,
  :func:`sfl_sim.runs.rundir.upgrade.made_before_marker`)
  is refused, naming the file: nothing of it is restarted over, overwritten or resumed;
* a directory without run files, or whose run died before its first checkpoint (no
  ``checkpoint.pt`` and at most the first trained evaluation row), is started (again) from scratch;
* a directory with a checkpoint is continued only with ``--resume``, and only when the scenario
  asked for is the one the run was made with — every difference but the fields in
  :data:`RESUMABLE_FIELDS` is refused and listed — and when today's code resolves it to the
  parameters the run recorded (``resolved.yaml``, :func:`sfl_sim.runs.resolved.check_resolution`: a
  changed default is refused field by field, other versions of the code are a warning);
* a missing or unreadable ``metrics.csv``/``rounds.csv``/``checkpoint.pt`` next to a run's other
  files is refused with the file's name and how to recover, instead of silently dropping or
  overwriting history.

Every file is read in today's shape, a run directory made by older code included
(:mod:`sfl_sim.runs.rundir.upgrade`).
"""
from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sfl_sim.config import flatten
from sfl_sim.errors import CheckpointError, RunDirError
from sfl_sim.runs import checkpoint as ckpt
from sfl_sim.runs import resolved as resolution_record
from sfl_sim.runs.rundir import marker, upgrade
from sfl_sim.runs.rundir.marker import check_writable
from sfl_sim.runs.rundir.reader import RunFiles
from sfl_sim.runs.rundir.schema import (
    CELL_COLUMNS,
    CELL_FILE,
    CHECKPOINT_FILE,
    CLASSES_FILE,
    CLIENTS_COLUMNS,
    CLIENTS_FILE,
    COMPLETE,
    ENERGY_BATTERY_COLUMN,
    ENERGY_COLUMNS,
    ENERGY_FILE,
    HANDOVERS_COLUMNS,
    HANDOVERS_FILE,
    HOST_ONLY_FIELDS,
    METRICS_COLUMNS,
    METRICS_FILE,
    RESOLVED_FILE,
    ROUNDS_COLUMNS,
    ROUNDS_FILE,
    SCENARIO_FILE,
    SCHEMA_VERSION,
    SLOTS_COLUMNS,
    SLOTS_FILE,
    STALENESS_COLUMNS,
    STALENESS_FILE,
    SUMMARY_FILE,
    WORK_FILE,
    classes_columns,
)

__all__ = ["RUN_FILES", "RESUMABLE_FIELDS", "RunDir", "RunDirPlan", "check_writable", "scenario_differences",
           "made_with_differences"]

#: Files a run writes into its directory.
RUN_FILES = (METRICS_FILE, ROUNDS_FILE, SUMMARY_FILE, SCENARIO_FILE, RESOLVED_FILE, CELL_FILE, CHECKPOINT_FILE,
             CLASSES_FILE, ENERGY_FILE, CLIENTS_FILE, SLOTS_FILE, STALENESS_FILE, WORK_FILE, HANDOVERS_FILE)

#: Scenario fields a resume may change (a field covers every field below it): none of them
#: changes what the run computes (more rounds continue the same run; the host-only fields only
#: decide where files go, how fast the host works and which optional measurements the rows from
#: then on record).
RESUMABLE_FIELDS = ("rounds", *HOST_ONLY_FIELDS)


def _resumable(key: str) -> bool:
    return any(key == f or key.startswith(f + ".") for f in RESUMABLE_FIELDS)

_RERUN = "rerun into a new directory (-o)"


@dataclass
class RunDirPlan:
    """What :meth:`RunDir.plan` decided for one run directory.

    Attributes
    ----------
    run_dir : Path
    resume : bool
        Continue from :attr:`checkpoint` (False: start from scratch, overwriting a dead start).
    overwrite : bool
        The directory holds a run that ``overwrite`` asked to replace: the new run is written
        beside it and replaces it once finished (:meth:`RunDir.replace_with`).
    checkpoint : dict or None
        The checkpoint to continue from as read (:func:`sfl_sim.runs.checkpoint.read`: in the layout
        it was saved in; :meth:`state` gives it in today's).
    """

    run_dir: Path
    resume: bool
    checkpoint: dict[str, Any] | None = field(default=None, repr=False)
    overwrite: bool = False

    @property
    def rounds_done(self) -> int:
        """Rounds the checkpoint to continue from has run (0 when starting)."""
        return int(self.checkpoint["round"]) if self.checkpoint is not None else 0

    def state(self, fresh: Mapping[str, Any], scenario: Mapping[str, Any]) -> ckpt.RunState:
        """The checkpoint to continue from, in today's layout (:func:`sfl_sim.runs.rundir.upgrade.checkpoint`).

        Parameters
        ----------
        fresh : mapping
            The run as built to continue it, before it loads anything, in the checkpoint's layout
            (``counters``, ``rng``, ``cell``, ``energy``): what an older checkpoint lacks.
        scenario : mapping
            The run's scenario as it records it (``scenario.yaml``).
        """
        if self.checkpoint is None:
            raise RuntimeError(f"{self.run_dir}: no checkpoint to continue from (the plan starts the run)")
        return ckpt.RunState.from_checkpoint(upgrade.checkpoint(self.checkpoint, fresh, scenario))


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class RunDir(RunFiles):
    """The files of one run directory (every read and write of them goes through here; the reads
    :mod:`sfl_sim.analysis` shares, without torch, are :class:`~sfl_sim.runs.rundir.reader.RunFiles`').

    Parameters
    ----------
    path : Path or str
        The run directory (created by the first write).
    summary_extra : mapping, optional
        Fields added to every ``summary.json`` written (a study run's ``coordinates``).
    """

    def __init__(self, path: Path | str, summary_extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(path)
        self.summary_extra = dict(summary_extra or {})
        self._class_columns: tuple[str, ...] = ()
        self._energy_columns: tuple[str, ...] = ()
        self._clients = False

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    # -- paths ---------------------------------------------------------------------------------
    @property
    def scenario_path(self) -> Path:
        return self.path / SCENARIO_FILE

    @property
    def resolved_path(self) -> Path:
        return self.path / RESOLVED_FILE

    @property
    def metrics_path(self) -> Path:
        return self.path / METRICS_FILE

    @property
    def rounds_path(self) -> Path:
        return self.path / ROUNDS_FILE

    @property
    def classes_path(self) -> Path:
        return self.path / CLASSES_FILE

    @property
    def summary_path(self) -> Path:
        return self.path / SUMMARY_FILE

    @property
    def cell_path(self) -> Path:
        return self.path / CELL_FILE

    @property
    def energy_path(self) -> Path:
        return self.path / ENERGY_FILE

    @property
    def staleness_path(self) -> Path:
        return self.path / STALENESS_FILE

    @property
    def clients_path(self) -> Path:
        return self.path / CLIENTS_FILE

    @property
    def checkpoint_path(self) -> Path:
        return self.path / CHECKPOINT_FILE

    def present(self) -> set[str]:
        """The names of :data:`RUN_FILES` that exist in the directory."""
        return {name for name in RUN_FILES if (self.path / name).exists()}

    def owned(self) -> bool:
        """Whether the directory is sfl-sim's run directory: marked ``run``
        (:mod:`sfl_sim.runs.rundir.marker`), or, by an sfl-sim older than the marker, with a
        ``summary.json`` that records a ``schema_version`` and a run status
        (:func:`sfl_sim.runs.rundir.upgrade.made_before_marker`)."""
        if marker.is_kind(self.path, "run"):
            return True
        return marker.read(self.path) is None and upgrade.made_before_marker("run", self.summary_path)

    def check_owned(self) -> None:
        """Refuse, in one line naming the file, a directory whose run files sfl-sim did not write.

        Raises
        ------
        RunDirError
        """
        marker.claim(self.path, "run", RUN_FILES)

    def mark(self) -> None:
        """Mark the directory (created if missing) as sfl-sim's run directory, listing :data:`RUN_FILES`,
        before a run writes them."""
        marker.record(self.path, "run", RUN_FILES)

    def replace_with(self, stage: Path) -> None:
        """Replace the run this directory holds by the run written into ``stage`` (a staging
        directory, :func:`sfl_sim.runs.rundir.marker.staging_dir`), then remove ``stage``.

        The old run's files that the new one lacks are removed, each staged file is moved in
        (``os.replace``: each file is whole, old or new), the marker is written last; what a user
        put beside the run stays.

        Raises
        ------
        RunDirError
            The directory is not sfl-sim's run directory (:meth:`check_owned`).
        """
        self.check_owned()
        staged = RunDir(stage).present()
        for name in sorted(self.present() - staged):
            (self.path / name).unlink()
        for name in sorted(staged):
            os.replace(stage / name, self.path / name)
        made = marker.read(stage) or {}
        made.pop("staging_for", None)
        (self.path / marker.MARKER_FILE).unlink(missing_ok=True)
        marker.record(self.path, "run", RUN_FILES, made=made)
        marker.remove_staging(stage)

    # -- reading -------------------------------------------------------------------------------
    def read_scenario(self, continued_by: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The recorded ``scenario.yaml``, in today's shape (:func:`sfl_sim.runs.rundir.upgrade.scenario`).

        Parameters
        ----------
        continued_by : mapping, optional
            The scenario that continues the run, as the run would record it (a resume's).

        Raises
        ------
        RunDirError
            If it is missing, unreadable or not a mapping (names the file and how to recover).
        """
        path = self.scenario_path
        try:
            made_with = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise RunDirError(f"{path}: cannot be read ({exc.strerror or exc}); {_RERUN}") from None
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise RunDirError(f"{path}: unreadable ({type(exc).__name__}); {_RERUN}") from None
        if not isinstance(made_with, dict):
            raise RunDirError(f"{path}: not a scenario mapping; {_RERUN}")
        return upgrade.scenario(made_with, continued_by)

    def torch_threads_used(self) -> int | None:
        """``torch_threads_used`` of the recorded scenario; None when absent or unreadable."""
        try:
            used = int(self.read_scenario().get("torch_threads_used") or 0)
        except (RunDirError, TypeError, ValueError):
            return None
        return used if used >= 1 else None

    def read_summary(self) -> dict[str, Any] | None:
        """The ``summary.json`` mapping in today's shape (:func:`sfl_sim.runs.rundir.upgrade.summary`);
        None when there is none or it is unreadable."""
        try:
            data = json.loads(self.summary_path.read_text())
        except (OSError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        return upgrade.summary(data) if isinstance(data, dict) else None

    def read_resolved(self, today: Mapping[str, Any] | None = None,
                      from_round: int = 1) -> upgrade.Upgraded[dict[str, Any] | None]:
        """The ``resolved.yaml`` record in today's shape (:func:`sfl_sim.runs.rundir.upgrade.resolved`;
        None when the run has none), with what reading it assumed.

        Parameters
        ----------
        today : mapping, optional
            Today's resolution of the run's scenario (:attr:`sfl_sim.runs.resolved.Resolution.record`),
            which supplies what an older record lacks.
        from_round : int
            The first round the run trains from now on.

        Raises
        ------
        RunDirError
            If the file is unreadable or not a record (names the file and how to recover).
        """
        return upgrade.resolved(self._resolved_as_written(), today, from_round)

    def _resolved_as_written(self) -> dict[str, Any] | None:
        path = self.resolved_path
        if not path.exists():
            return None
        try:
            data = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
            raise RunDirError(f"{path}: unreadable ({type(exc).__name__}); {_RERUN}") from None
        if not isinstance(data, dict) or not isinstance(data.get("components"), dict):
            raise RunDirError(f"{path}: not a record of resolved parameters; {_RERUN}")
        return data

    def read_metrics_rows(self) -> list[dict[str, float]]:
        """The rows of ``metrics.csv`` as dicts of floats (to rebuild summaries on resume)."""
        with self.metrics_path.open(newline="") as fh:
            return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(fh)]

    def read_rounds_rows(self) -> list[dict[str, str]]:
        """The rows of ``rounds.csv`` in today's columns, as text (:func:`sfl_sim.runs.rundir.upgrade.log_rows`:
        a column the file lacks is ``""``); none when there is no file."""
        if not self.rounds_path.exists():
            return []
        with self.rounds_path.open(newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None) or []
            return [dict(zip(ROUNDS_COLUMNS, row, strict=True))
                    for row in upgrade.log_rows(header, reader, ROUNDS_COLUMNS)]

    def load_checkpoint(self) -> dict[str, Any]:
        """``checkpoint.pt`` as read, in the layout it was saved in (:func:`sfl_sim.runs.checkpoint.read`;
        :meth:`RunDirPlan.state` gives it in today's).

        Raises
        ------
        CheckpointError
        """
        return ckpt.read(self.checkpoint_path)

    # -- writing -------------------------------------------------------------------------------
    def _write_yaml(self, path: Path, data: Mapping[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(path, yaml.safe_dump(dict(data), sort_keys=False))

    def write_scenario(self, scenario: Mapping[str, Any]) -> None:
        """Write ``scenario.yaml`` (atomically, keys in order)."""
        self._write_yaml(self.scenario_path, scenario)

    def write_resolved(self, record: Mapping[str, Any]) -> None:
        """Write ``resolved.yaml`` (atomically, keys in order)."""
        self._write_yaml(self.resolved_path, record)

    def record_resume(self, after_round: int, versions: Mapping[str, Any],
                      today: Mapping[str, Any] | None = None) -> None:
        """Add to ``resolved.yaml`` which code trained the rounds after ``after_round``, writing the
        record in today's shape (:meth:`read_resolved` with ``today``, today's resolution of the
        run); a run without a record gets none (one written now would not be what it was made with)."""
        record = self.read_resolved(today, from_round=after_round + 1).value
        if record is not None:
            record.setdefault("resumes", []).append({"after_round": after_round, "versions": dict(versions)})
            self.write_resolved(record)

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Write ``summary.json`` (atomically) with ``schema_version`` and :attr:`summary_extra`."""
        self.path.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, **summary, **self.summary_extra}
        _atomic_write_text(self.summary_path, json.dumps(data, indent=2, sort_keys=False) + "\n")

    def save_checkpoint(self, state: ckpt.RunState) -> None:
        """Replace ``checkpoint.pt`` by ``state`` (atomically: a kill while saving keeps the old one)."""
        ckpt.save(self.checkpoint_path, state)

    def write_cell(self, table: Mapping[str, Sequence[Any]]) -> None:
        """Write ``cell.csv``: the columns :data:`~sfl_sim.runs.rundir.schema.CELL_COLUMNS` of ``table``."""
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.cell_path.with_name(CELL_FILE + ".tmp")
        with tmp.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(CELL_COLUMNS)
            writer.writerows(zip(*(table[c] for c in CELL_COLUMNS), strict=True))
        os.replace(tmp, self.cell_path)

    def write_handovers(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Write ``handovers.csv`` (atomically): the columns
        :data:`~sfl_sim.runs.rundir.schema.HANDOVERS_COLUMNS` of ``rows``."""
        self.path.mkdir(parents=True, exist_ok=True)
        path = self.path / HANDOVERS_FILE
        tmp = path.with_name(HANDOVERS_FILE + ".tmp")
        with tmp.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(HANDOVERS_COLUMNS)
            writer.writerows([row[c] for c in HANDOVERS_COLUMNS] for row in rows)
        os.replace(tmp, path)

    def start_logs(self, num_classes: int, keep_through_round: int | None = None, energy: bool = False,
                   battery: bool = False, clients: bool = False, staleness: bool = False,
                   slots: bool = False, network: bool = False) -> None:
        """Create ``metrics.csv``, ``rounds.csv`` and ``classes.csv`` (for ``num_classes``
        classes) with their headers, or, when resuming, keep their rows of rounds up to
        ``keep_through_round`` (rows written after the last checkpoint are dropped: they will be
        recomputed identically).

        Kept rows are read in today's columns (:func:`sfl_sim.runs.rundir.upgrade.log_rows`), and a
        log the run has not written yet starts empty.  With ``energy``, ``energy.csv`` too (with
        ``battery_j`` when ``battery``); with ``clients``, ``clients.csv`` (a resume that stops
        recording it still cuts it back to the checkpoint); with ``staleness`` (an asynchronous run),
        ``staleness.csv``; with ``slots`` (``metrics.slot_trace``), ``slots.csv``.  ``network``: the
        run has ``cell.network`` (kept ``slots.csv`` and ``clients.csv`` rows written before their
        ``cell`` column read it as 0 without one, empty with one: :func:`sfl_sim.runs.rundir.upgrade.log_fill`)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._class_columns = classes_columns(num_classes)
        logs = [(self.metrics_path, METRICS_COLUMNS), (self.rounds_path, ROUNDS_COLUMNS),
                (self.classes_path, self._class_columns)]
        if energy:
            self._energy_columns = (*ENERGY_COLUMNS, *((ENERGY_BATTERY_COLUMN,) if battery else ()))
            logs.append((self.energy_path, self._energy_columns))
        if staleness:
            logs.append((self.staleness_path, STALENESS_COLUMNS))
        self._clients = clients
        if clients or (keep_through_round is not None and self.clients_path.exists()):
            logs.append((self.clients_path, CLIENTS_COLUMNS))
        if slots or (keep_through_round is not None and (self.path / SLOTS_FILE).exists()):
            logs.append((self.path / SLOTS_FILE, SLOTS_COLUMNS))
        # what a column added later was, where known
        fills = {name: upgrade.log_fill(name, network) for name in upgrade.LOGS_WITH_CELL_ADDED_LATER}
        for path, columns in logs:
            _start_log(path, columns, keep_through_round, fills.get(path.name))

    def append_metrics(self, row: Mapping[str, Any]) -> None:
        """Append one row to ``metrics.csv`` and flush it to disk."""
        _append_log(self.metrics_path, METRICS_COLUMNS, row)

    def append_rounds(self, row: Mapping[str, Any]) -> None:
        """Append one row to ``rounds.csv`` and flush it to disk."""
        _append_log(self.rounds_path, ROUNDS_COLUMNS, row)

    def append_energy(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append a round's ``energy.csv`` rows and flush them to disk (after :meth:`start_logs` with ``energy``)."""
        if not self._energy_columns:
            raise RuntimeError("append_energy before start_logs(..., energy=True)")
        with self.energy_path.open("a", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerows([row[c] for c in self._energy_columns] for row in rows)
            fh.flush()
            os.fsync(fh.fileno())

    def append_staleness(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append an aggregation's ``staleness.csv`` rows and flush them to disk."""
        with self.staleness_path.open("a", newline="") as fh:
            csv.writer(fh).writerows([row[c] for c in STALENESS_COLUMNS] for row in rows)
            fh.flush()
            os.fsync(fh.fileno())

    def append_clients(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append a round's ``clients.csv`` rows (keyed by :data:`~sfl_sim.runs.rundir.schema.CLIENTS_COLUMNS`;
        NaN and None are empty cells) and flush them to disk (after :meth:`start_logs` with ``clients``)."""
        if not self._clients:
            raise RuntimeError("append_clients before start_logs(..., clients=True)")
        with self.clients_path.open("a", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerows([_cell(row[c]) for c in CLIENTS_COLUMNS] for row in rows)
            fh.flush()
            os.fsync(fh.fileno())

    def append_slots(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append a round's ``slots.csv`` rows (keyed by :data:`~sfl_sim.runs.rundir.schema.SLOTS_COLUMNS`)
        and flush them to disk (after :meth:`start_logs` with ``slots``)."""
        with (self.path / SLOTS_FILE).open("a", newline="") as fh:
            csv.writer(fh).writerows([row[c] for c in SLOTS_COLUMNS] for row in rows)
            fh.flush()
            os.fsync(fh.fileno())

    def append_classes(self, rnd: int, vacant_accuracy: float, class_accuracy: Sequence[float]) -> None:
        """Append the row of round ``rnd`` to ``classes.csv`` (NaN: not measured, an empty cell)."""
        cells = [rnd, _cell(vacant_accuracy), *(_cell(a) for a in class_accuracy)]
        _append_log(self.classes_path, self._class_columns, dict(zip(self._class_columns, cells, strict=True)))

    # -- the decision ---------------------------------------------------------------------------
    def plan(self, resolved: Mapping[str, Any], resume: bool,
             resolution: Callable[[], resolution_record.Resolution] | None = None,
             strict_versions: bool = False, overwrite: bool = False) -> RunDirPlan:
        """Decide whether the directory starts, restarts or resumes, and check everything it needs.

        Parameters
        ----------
        resolved : mapping
            The resolved scenario this run would write to ``scenario.yaml``.
        resume : bool
            ``--resume`` was given.
        resolution : callable, optional
            Returns today's :class:`~sfl_sim.runs.resolved.Resolution` of the run; called only when a
            checkpoint is to be continued, and checked against the run's ``resolved.yaml``
            (:func:`~sfl_sim.runs.resolved.check_resolution`).  None skips that check.
        strict_versions : bool
            Refuse other versions of the code (and a run without ``resolved.yaml``) instead of warning.
        overwrite : bool
            Start from scratch even when the directory holds a run (``--overwrite``; not with
            ``resume``): the plan says so, and nothing is removed here.

        Raises
        ------
        RunDirError, CheckpointError
            With one line naming the file or the differing fields and how to recover
            (:class:`~sfl_sim.runs.resolved.ResolutionMismatchError`: one line per differing parameter).
        ConfigError
            When ``resolution`` finds a component name that resolves to no class.

        Warns
        -----
        sfl_sim.runs.resolved.ResolutionWarning
            Other versions of the code, or a run without ``resolved.yaml``.
        """
        run_dir = self.path
        if run_dir.exists() and not run_dir.is_dir():
            raise RunDirError(f"{run_dir} is a file, not a run directory; choose another --output-dir")
        present = self.present()
        self.check_owned()  # a hand-written scenario.yaml is never restarted over, overwritten or resumed
        if overwrite:
            if resume:
                raise RunDirError("overwrite: got it with resume; allowed: one of them (resume continues the run "
                                  "in the directory, overwrite replaces it)")
            return RunDirPlan(run_dir, resume=False, overwrite=bool(present))
        if CHECKPOINT_FILE not in present:
            # A run killed between its first evaluation row and its first checkpoint has one trained
            # row and no checkpoint: it restarts (the row is recomputed identically).  More than that,
            # or a finished run, without a checkpoint means the checkpoint was lost: never overwrite.
            evaluated = [r for r in _read_rounds(self.metrics_path) if r > 0] if METRICS_FILE in present else []
            if len(evaluated) > 1 or (evaluated and (self.read_summary() or {}).get("status") == COMPLETE):
                raise RunDirError(f"{run_dir} holds results up to round {max(evaluated)} but no {CHECKPOINT_FILE}, "
                                  f"so it can be neither continued nor overwritten; {_RERUN}")
            return RunDirPlan(run_dir, resume=False)  # nothing, or a run that died before its first checkpoint
        if not resume:
            raise RunDirError(f"output_dir: {str(run_dir)!r} already holds a run; pass --resume to continue it, "
                              f"--overwrite (overwrite=True) to replace it, or choose another --output-dir")
        for name in (METRICS_FILE, ROUNDS_FILE, SCENARIO_FILE):
            if name not in present:
                raise RunDirError(f"{run_dir / name} is missing, so the history before the checkpoint is lost; "
                                  f"{_RERUN} to start over")
        made_with = self.read_scenario(continued_by=resolved)
        record = self.read_resolved().value
        diff = made_with_differences(made_with, resolved, record)
        if diff:
            raise RunDirError(f"--resume: {run_dir} was made with a different scenario ({'; '.join(diff)}); only "
                              f"{', '.join(RESUMABLE_FIELDS)} may change on resume — {_RERUN} for the new settings")
        state = self.load_checkpoint()
        done = int(state["round"])
        if resolved.get("rounds", done) < done:
            raise RunDirError(f"rounds: got {resolved['rounds']}; allowed: at least the {done} rounds {run_dir} has "
                              f"already run")
        evaluated = _read_rounds(self.metrics_path)
        if done not in evaluated:
            raise CheckpointError(f"{self.metrics_path} has no row for round {done}, the round of {CHECKPOINT_FILE} "
                                  f"(rows: {evaluated[-3:] if evaluated else 'none'}); the files do not belong "
                                  f"together — {_RERUN}")
        logged = [r for r in _read_rounds(self.rounds_path) if r <= done]
        if logged != list(range(1, done + 1)):
            raise CheckpointError(f"{self.rounds_path} does not hold rounds 1..{done} of {CHECKPOINT_FILE}; {_RERUN}")
        if CLASSES_FILE in present:  # without one (upgrade.FILES_ADDED_LATER) the resume starts it
            _read_rounds(self.classes_path)
        seed = (self.read_summary() or {}).get("seed")  # unreadable: rewritten at the next evaluation
        if seed is not None and seed != resolved.get("seed"):
            raise RunDirError(f"{self.summary_path} records seed {seed}, the scenario seed {resolved.get('seed')}; "
                              f"{_RERUN}")
        if resolution is not None:  # last: a damaged directory is refused without a warning before it
            today = resolution()
            upgraded = self.read_resolved(today.record, from_round=done + 1)
            resolution_record.check_resolution(run_dir, upgraded.value, today, strict_versions, upgraded.notes)
        return RunDirPlan(run_dir, resume=True, checkpoint=state)


def _cell(value: float) -> Any:
    """A CSV cell: the number, or empty for NaN (not measured)."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _start_log(path: Path, columns: Sequence[str], keep_through_round: int | None,
               fill: Mapping[str, str] | None = None) -> None:
    kept: list[list[str]] = []
    if keep_through_round is not None and path.exists():
        with path.open(newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None) or []
            kept = [row for row in upgrade.log_rows(header, reader, columns, fill)
                    if int(row[0]) <= keep_through_round]
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(kept)
    os.replace(tmp, path)


def _append_log(path: Path, columns: Sequence[str], row: Mapping[str, Any]) -> None:
    with path.open("a", newline="") as fh:
        csv.writer(fh).writerow([row[c] for c in columns])
        fh.flush()
        os.fsync(fh.fileno())


def _read_rounds(path: Path) -> list[int]:
    """Round numbers of a per-round log; refuses a file that is not one."""
    try:
        with path.open(newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if not header or header[0] != "round":
                raise ValueError("no 'round' header")
            return [int(row[0]) for row in reader if row]
    except (ValueError, IndexError, UnicodeDecodeError, csv.Error) as exc:
        raise RunDirError(f"{path}: unreadable ({exc}); {_RERUN} to start over") from None


def scenario_differences(made_with: Mapping[str, Any], asked: Mapping[str, Any],
                         used: Mapping[str, Any] | None = None) -> list[str]:
    """Fields (dotted) whose values differ between two resolved scenarios, as ``field: old -> new``.

    Fields in :data:`RESUMABLE_FIELDS` are left out.  A field ``made_with`` lacks and ``asked``
    gives with its value in ``used`` (flattened: the values the run used where its scenario left a
    field out, e.g. :func:`sfl_sim.runs.resolved.recorded_fields`) is no difference.  A section
    ``made_with`` left null and ``asked`` gives is compared by its fields.
    """
    old, new = flatten(made_with), flatten(asked)
    used = used or {}
    out = []
    for key in sorted(set(old) | set(new)):
        if _resumable(key):
            continue
        a, b = old.get(key, "<absent>"), new.get(key, "<absent>")
        if key not in old and key in used and b == used[key]:
            continue
        if a is None and key not in new and any(k.startswith(key + ".") for k in new):
            continue  # a section left null (clients.selection) is given now: its own fields are compared
        if a != b:
            out.append(f"{key}: {a!r} -> {b!r}")
    return out


def made_with_differences(made_with: Mapping[str, Any], asked: Mapping[str, Any],
                          record: Mapping[str, Any] | None) -> list[str]:
    """:func:`scenario_differences` of a run whose ``scenario.yaml`` is ``made_with`` and whose
    ``resolved.yaml`` is ``record`` (None: none), both read in today's shape: a component parameter
    the recorded scenario left out and the resume states with the value the run resolved it to is
    no difference (stating it keeps the behaviour the run had)."""
    return scenario_differences(made_with, asked,
                                resolution_record.recorded_fields(record) if record is not None else None)
