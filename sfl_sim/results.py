"""The run directory, written as the run goes (schema version 1).

Files
-----
``scenario.yaml``
    The resolved scenario of this run (defaults filled, overrides applied, one algorithm).
``resolved.yaml``
    What the run resolved to: every component's full parameters after defaults, its training
    settings and the versions of the code (:mod:`sfl_sim.resolved`); written at the start, a
    ``resumes`` entry added by each resume that trains more rounds.
``cell.csv``
    One row per client: position, distance, path loss, shadowing, SNR and rate at an equal share
    of the uplink, compute budget, local data size and number of classes held.
``metrics.csv``
    One row per evaluated round (see :data:`METRICS_COLUMNS`); byte and FLOP columns are
    cumulative; ``sim_time_s`` is the simulated clock and ``host_time_s`` the host seconds spent
    by this run; the two are never mixed.  Appended and flushed at each evaluation.
``rounds.csv``
    One row per round (see :data:`ROUNDS_COLUMNS`): the simulated clock at the round's end, the
    round's simulated duration, the host seconds the round took (``round_host_time_s``: its
    training and, when evaluated, its evaluation and rows), and the bytes and FLOPs *of that
    round* (not cumulative) — the per-round protocol table (bytes up, bytes down, client FLOPs,
    server FLOPs) — the uplink retransmissions and dropped transmissions after outage, the number
    of clients the straggler policy or an outage left out, the cohort as space-separated client
    ids, and who was dropped and why (``client:reason`` with reason ``deadline``,
    ``over_selection`` or ``outage``).
``summary.json``
    Rewritten (atomically) at each evaluation; ``status`` is ``running`` until the last round.
``checkpoint.pt``
    Everything needed to resume after the last evaluated round (atomically replaced).

The names and headers live in :mod:`analysis.schema`, which both this module and the reader
(:mod:`analysis.runs`) import; :mod:`analysis` reads these files without importing this module.
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence

import yaml

# One definition of the file names and headers, shared with the reader (analysis never imports us).
from analysis.schema import (CHECKPOINT_FILE, METRICS_COLUMNS, METRICS_FILE, ROUNDS_COLUMNS, SCENARIO_FILE,
                             SCHEMA_VERSION, SUMMARY_FILE)

__all__ = ["SCHEMA_VERSION", "METRICS_COLUMNS", "ROUNDS_COLUMNS", "RunWriter", "read_metrics_rows"]


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class RunWriter:
    """Writes one run directory.

    Parameters
    ----------
    run_dir : Path
        Created if missing.
    summary_extra : mapping, optional
        Fields added to every ``summary.json`` (a study run's ``coordinates``).
    """

    def __init__(self, run_dir: Path, summary_extra: Mapping[str, Any] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.summary_extra = dict(summary_extra or {})

    @property
    def metrics_path(self) -> Path:
        return self.run_dir / METRICS_FILE

    @property
    def checkpoint_path(self) -> Path:
        return self.run_dir / CHECKPOINT_FILE

    def write_scenario(self, scenario: Mapping[str, Any]) -> None:
        self.write_yaml(SCENARIO_FILE, scenario)

    def write_yaml(self, name: str, data: Mapping[str, Any]) -> None:
        """Write the mapping ``data`` as YAML to the run file ``name`` (atomically, keys in order)."""
        _atomic_write_text(self.run_dir / name, yaml.safe_dump(dict(data), sort_keys=False))

    def write_table(self, name: str, columns: Mapping[str, Sequence[Any]]) -> None:
        """Write a CSV with the given columns (equal lengths)."""
        keys = list(columns)
        rows = zip(*(columns[k] for k in keys))
        tmp = self.run_dir / (name + ".tmp")
        with tmp.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(keys)
            writer.writerows(rows)
        os.replace(tmp, self.run_dir / name)

    def start_log(self, name: str, columns: Sequence[str], keep_through_round: int | None = None) -> None:
        """Create the per-round log ``name`` (e.g. ``metrics.csv``) with its header, or, when
        resuming, keep its rows of rounds up to ``keep_through_round`` (rows written after the last
        checkpoint are dropped: they will be recomputed identically).

        Kept rows are matched to ``columns`` by the file's own header, so a log written before a
        column existed keeps its rows, with that column empty."""
        path = self.run_dir / name
        kept: List[List[str]] = []
        if keep_through_round is not None and path.exists():
            with path.open(newline="") as fh:
                reader = csv.reader(fh)
                header = next(reader, None) or []
                where = {c: i for i, c in enumerate(header)}
                kept = [[row[where[c]] if c in where and where[c] < len(row) else "" for c in columns]
                        for row in reader if row and int(row[0]) <= keep_through_round]
        tmp = path.with_name(name + ".tmp")
        with tmp.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(columns)
            writer.writerows(kept)
        os.replace(tmp, path)

    def append_log(self, name: str, columns: Sequence[str], row: Mapping[str, Any]) -> None:
        """Append one row to the per-round log ``name`` and flush it to disk."""
        with (self.run_dir / name).open("a", newline="") as fh:
            csv.writer(fh).writerow([row[c] for c in columns])
            fh.flush()
            os.fsync(fh.fileno())

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        data: Dict[str, Any] = {"schema_version": SCHEMA_VERSION, **summary, **self.summary_extra}
        _atomic_write_text(self.run_dir / SUMMARY_FILE, json.dumps(data, indent=2, sort_keys=False) + "\n")

    def read_summary(self) -> Dict[str, Any] | None:
        path = self.run_dir / SUMMARY_FILE
        return json.loads(path.read_text()) if path.exists() else None


def read_metrics_rows(path: Path) -> List[Dict[str, float]]:
    """The rows of a ``metrics.csv`` as dicts of floats (used to rebuild summaries on resume)."""
    with Path(path).open(newline="") as fh:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(fh)]
