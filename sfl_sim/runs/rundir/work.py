"""The work record of a run directory (:data:`~sfl_sim.runs.rundir.schema.WORK_FILE`): written a round
at a time as the run goes, cut back to the checkpoint on resume, read by ``sfl-sim retime``.

JSON lines in gzip members, one member per append, so an append never rewrites what is there
(gzip reads concatenated members as one stream).  JSON holds plain data only: reading a record
never runs code.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from sfl_sim.runs.rundir.schema import WORK_FILE, WORK_VERSION

__all__ = ["WorkRecordError", "append_round", "digest", "keep_through", "numbered_rounds", "read_rounds", "start",
           "work_path"]


class WorkRecordError(ValueError):
    """A work record that is missing, of another version, or unreadable (one line naming the file)."""


def work_path(run_dir: Path) -> Path:
    """Where ``run_dir`` keeps its work record."""
    return Path(run_dir) / WORK_FILE


def _write_lines(path: Path, lines: list[bytes], mode: Literal["wb", "ab"]) -> None:
    with gzip.open(path, mode) as fh:
        fh.write(b"".join(lines))
    with path.open("rb+") as raw:
        os.fsync(raw.fileno())


def _line(data: Mapping[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def start(run_dir: Path) -> None:
    """A fresh record holding only its header line."""
    _write_lines(work_path(run_dir), [_line({"work_version": WORK_VERSION})], "wb")


def append_round(run_dir: Path, record: Mapping[str, Any]) -> None:
    """Append one round's record (a :meth:`RoundRecord.as_dict <sfl_sim.engine.record.RoundRecord.as_dict>`)."""
    _write_lines(work_path(run_dir), [_line(record)], "ab")


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with gzip.open(path, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                data = json.loads(raw)
                if not isinstance(data, dict):
                    raise WorkRecordError(f"{path}: line {number} is not a JSON object")
                yield data
    except FileNotFoundError:
        raise WorkRecordError(f"{path}: no work record; allowed: a run directory made by a version of sfl-sim "
                              f"that records its work (re-run it to re-time it)") from None
    except (OSError, EOFError, json.JSONDecodeError) as exc:
        raise WorkRecordError(f"{path}: unreadable ({exc})") from None


def numbered_rounds(run_dir: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every round's record, in order, with its line number in the file (the header, line 1,
    checked and left out).

    Raises
    ------
    WorkRecordError
        No record, another layout version, or a damaged file.
    """
    path = work_path(run_dir)
    lines = list(_lines(path))
    version = lines[0].get("work_version") if lines else None
    if version != WORK_VERSION:
        raise WorkRecordError(f"{path}: work_version {version!r}; allowed: {WORK_VERSION}")
    return list(enumerate(lines[1:], start=2))


def read_rounds(run_dir: Path) -> list[dict[str, Any]]:
    """Every round's record, in order (:func:`numbered_rounds` without the numbers)."""
    return [data for _, data in numbered_rounds(run_dir)]


def digest(run_dir: Path) -> str:
    """The SHA-256 (hex) of the record's lines, decompressed: what ``summary.json`` keeps as
    :data:`~sfl_sim.runs.rundir.schema.WORK_SHA256`.  Of the lines, not of the gzip file, whose
    bytes depend on the members an append or a resume wrote and on their times.

    Raises
    ------
    WorkRecordError
        No record, or a damaged file.
    """
    path = work_path(run_dir)
    sha = hashlib.sha256()
    try:
        with gzip.open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                sha.update(chunk)
    except FileNotFoundError:
        raise WorkRecordError(f"{path}: no work record") from None
    except (OSError, EOFError) as exc:
        raise WorkRecordError(f"{path}: unreadable ({exc})") from None
    return sha.hexdigest()


def keep_through(run_dir: Path, last_round: int) -> None:
    """Keep the header and the rounds up to ``last_round`` (a resume recomputes the rest); a run
    without a record starts one (its earlier rounds are then not re-timable)."""
    path = work_path(run_dir)
    if not path.exists():
        start(run_dir)
        return
    lines = list(_lines(path))
    kept = [_line(d) for d in lines if "round" not in d or int(d["round"]) <= last_round]
    tmp = path.with_name(path.name + ".tmp")
    _write_lines(tmp, kept, "wb")
    tmp.replace(path)
