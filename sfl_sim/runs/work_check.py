"""A run's work record, checked against the run before ``sfl-sim retime`` replays any of it.

Three checks, in order, each refusing in one line (:class:`~sfl_sim.runs.rundir.work.WorkRecordError`):

1. **Bound to its run.**  A complete run keeps the SHA-256 of its record's lines in
   ``summary.json`` (:data:`~sfl_sim.runs.rundir.schema.WORK_SHA256`); a record whose digest
   differs was not the one the run wrote.  An older run directory without a digest
   (:func:`sfl_sim.runs.rundir.upgrade.unbound_work_record`): its record is checked by 2 and 3
   only, and a warning says so.
2. **As the recorder writes it.**  Each line, as it is read: ops known, clients among the run's,
   FLOPs and bytes finite and >= 0, rounds in order (:func:`~sfl_sim.engine.record_check.checked_round`);
   the refusal names the line and the field.
3. **The run's own counts.**  Per round, what the record asked of the clock
   (:class:`~sfl_sim.engine.record_check.RecordedTotals`) against ``rounds.csv``: the server's
   FLOPs equal; the clients' FLOPs and the downlink bytes equal, or (a round where a client went
   offline: the engine counts only what it sent before) at most the record's; the uplink bytes
   between the smallest and the largest upload times the round's uplink attempts, and equal to the
   record's sum where each upload was sent once.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sfl_sim.engine.record import RoundRecord
from sfl_sim.engine.record_check import RecordedTotals, RecordEntryError, checked_round
from sfl_sim.runs.rundir import upgrade, work
from sfl_sim.runs.rundir.files import RunDir
from sfl_sim.runs.rundir.schema import WORK_SHA256

__all__ = ["UnboundRecordWarning", "bind_copy", "checked_records"]

#: Drop causes for which the engine counts less than a round's record asks: a client that goes
#: offline stops computing and sends nothing more; an empty battery sends no byte of its upload.
_CUT_SHORT = ("unavailable", "battery")


class UnboundRecordWarning(UserWarning):
    """A run directory whose ``summary.json`` has no digest of its work record
    (:func:`sfl_sim.runs.rundir.upgrade.unbound_work_record`)."""


def checked_records(run_dir: Path, summary: Mapping[str, Any], n_clients: int) -> dict[int, RoundRecord]:
    """Every round's record of the complete run ``run_dir``, after the checks of the module docstring.

    Parameters
    ----------
    run_dir : Path
    summary : mapping
        Its ``summary.json``.
    n_clients : int
        Its clients.

    Raises
    ------
    WorkRecordError
        One line naming the file, and the line and field or the round and count that differ.
    """
    path = work.work_path(run_dir)
    want = summary.get(WORK_SHA256)
    unbound = upgrade.unbound_work_record(summary)
    if unbound is not None:
        warnings.warn(f"{RunDir(run_dir).summary_path}: {unbound}: {path.name} is checked against the run's counts "
                      f"in rounds.csv only", UnboundRecordWarning, stacklevel=2)
    else:
        got = work.digest(run_dir)
        if got != want:
            raise work.WorkRecordError(f"{path}: sha256 {got}; allowed: {want}, the {WORK_SHA256} of summary.json "
                                       f"(the record this run wrote)")
    records: dict[int, RoundRecord] = {}
    previous: int | None = None
    for line, data in work.numbered_rounds(run_dir):
        try:
            record = checked_round(data, n_clients, previous)
        except RecordEntryError as exc:
            raise work.WorkRecordError(f"{path} line {line}: {exc}") from None
        records[record.round], previous = record, record.round
    _check_counts(run_dir, records)
    return records


def _check_counts(run_dir: Path, records: Mapping[int, RoundRecord]) -> None:
    counted_in = RunDir(run_dir).rounds_path.name
    for row in RunDir(run_dir).read_rounds_rows():
        record = records.get(int(row["round"]))
        if record is None:
            continue  # a round the record lacks: the re-timing refuses it by name
        totals = RecordedTotals.of(record)
        cut = any(entry.rpartition(":")[2] in _CUT_SHORT for entry in row["dropped"].split())
        where = f"{work.work_path(run_dir)}: round {record.round}"
        _compare(where, counted_in, row, "server_flops", totals.server_flops, at_most=False)
        _compare(where, counted_in, row, "client_flops", totals.client_flops, at_most=cut)
        _compare(where, counted_in, row, "downlink_bytes", totals.downlink_bytes, at_most=cut)
        if row.get("uplink_attempts", "") == "":  # no count of attempts (upgrade.FILES_ADDED_LATER's column)
            continue
        attempts, uplink = int(row["uplink_attempts"]), int(float(row["uplink_bytes"]))
        if attempts == totals.uploads and not cut:  # each upload sent once
            _compare(where, counted_in, row, "uplink_bytes", totals.uplink_bytes, at_most=False)
        elif not totals.upload_bytes_min * attempts <= uplink <= totals.upload_bytes_max * attempts:
            raise work.WorkRecordError(
                f"{where}: uplink_bytes: the record's uploads of {totals.upload_bytes_min} to "
                f"{totals.upload_bytes_max} bytes over {attempts} attempts; allowed: {uplink}, what {counted_in} "
                f"counted")


def _compare(where: str, counted_in: str, row: Mapping[str, str], column: str, recorded: float,
             at_most: bool) -> None:
    """Refuse a record whose ``recorded`` total differs from the row's count (``at_most``: the count may be less)."""
    counted = float(row[column])
    if math.isclose(counted, recorded, rel_tol=1e-9, abs_tol=0.5) or (at_most and counted <= recorded):
        return
    bound = "at least " if at_most else ""
    raise work.WorkRecordError(f"{where}: {column}: the record has {recorded:.17g}; allowed: {bound}{counted:.17g}, "
                               f"what {counted_in} counted")


def bind_copy(copy_dir: Path, source_summary: Mapping[str, Any], summary: dict[str, Any],
              extra: Mapping[str, Any] | None = None) -> None:
    """Give the run ``copy_dir``, which holds a copy of a source run's work record, the source's
    digest in its ``summary.json`` (``summary``, written again with ``extra``; a source without a
    digest gives none)."""
    if source_summary.get(WORK_SHA256) is not None:
        summary[WORK_SHA256] = source_summary[WORK_SHA256]
        RunDir(copy_dir, summary_extra=extra).write_summary(summary)
