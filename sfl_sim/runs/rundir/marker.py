"""Which directories, and which files in them, are sfl-sim's: the marker file ``.sfl-sim.json``.

sfl-sim removes or rewrites only files it wrote itself.  Every directory it writes into carries a
marker, written before the files it lists::

    {"kind": "run", "command": "sfl-sim scenario s.yaml -o out", "version": "0.4.0",
     "created": "2026-11-28T16:20:00+00:00", "files": ["metrics.csv", ...]}

``kind`` says what the directory is (:data:`KINDS`): a ``run`` directory (one algorithm's, made
by ``scenario``, ``study`` or ``retime``), a ``scenario`` output directory (its ``summary.csv``
and ``summary.md`` beside the run directories), a ``study`` directory (``study.yaml``,
``runs.csv``) or a ``report`` directory.  A directory of one kind is never written as another: a
report into a study directory is refused, and so is a study into a report's.  A run being written
before it replaces another (``--overwrite``), or a re-timing before it is moved into place, is
written into a hidden staging directory beside its target (:func:`staging_dir`), whose marker also
says ``staging_for``: one left by a killed command is removed by the next that stages there.

:func:`claim` is asked before any work: a file the command would write that exists but is not
listed by the directory's marker was not written by sfl-sim, and is refused in one line naming it.
A directory made by an sfl-sim older than the marker is recognised by what sfl-sim wrote into it
(:func:`sfl_sim.runs.rundir.upgrade.made_before_marker`, where every rule for older run
directories lives).  Reading never needs a marker.

This module imports nothing heavier than the standard library: the analysis layer uses it too.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterable
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from sfl_sim.errors import RunDirError
from sfl_sim.runs.rundir import upgrade

__all__ = ["KINDS", "MARKER_FILE", "check_writable", "claim", "claim_folder", "foreign", "is_kind", "listed", "read",
           "record", "remove_staging", "settle", "staging_dir"]

#: The marker file of every directory sfl-sim writes.
MARKER_FILE = ".sfl-sim.json"

#: What a marked directory is (the marker's ``kind``): the four above, and the folders of the
#: commands that read and draw without training (``sfl-sim plot``, ``channel``, ``traces``).
KINDS = ("run", "scenario", "study", "report", "plots", "cell_report", "trace_report")

_WHAT = {"run": "a run directory", "scenario": "a scenario's output directory", "study": "a study directory",
         "report": "a report directory", "plots": "a plot folder (sfl-sim plot)",
         "cell_report": "a channel report folder (sfl-sim channel)",
         "trace_report": "a trace report folder (sfl-sim traces)"}


def read(directory: Path | str) -> dict[str, Any] | None:
    """The marker of ``directory``; None when it has none (or an unreadable one: then nothing in
    the directory counts as sfl-sim's)."""
    try:
        data = json.loads((Path(directory) / MARKER_FILE).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("kind") not in KINDS or not isinstance(data.get("files"), list):
        return None
    return data


def is_kind(directory: Path | str, kind: str) -> bool:
    """Whether ``directory`` carries a marker of ``kind``."""
    marker = read(directory)
    return marker is not None and marker["kind"] == kind


def listed(directory: Path | str) -> set[str]:
    """The file names the marker of ``directory`` lists (none without a marker)."""
    marker = read(directory)
    return {str(f) for f in marker["files"]} if marker is not None else set()


def foreign(directory: Path | str, kind: str, names: Iterable[str], record: str | None = None) -> list[str]:
    """Of ``names``, those that exist in ``directory`` and are not sfl-sim's: not listed by its
    marker, nor (without a marker) written as a ``kind`` directory's by an sfl-sim older than the
    marker (:func:`sfl_sim.runs.rundir.upgrade.made_before_marker`, given ``record``)."""
    path = Path(directory)
    marker = read(path)
    mine = {str(f) for f in marker["files"]} if marker is not None else set()
    out = []
    for name in names:
        file = path / name
        if not (file.exists() or file.is_symlink()) or name in mine:
            continue
        if marker is None and upgrade.made_before_marker(kind, file, record):
            continue
        out.append(name)
    return out


def claim(directory: Path | str, kind: str, names: Iterable[str], record: str | None = None,
          what: str = "--output-dir") -> None:
    """Check, before any work, that sfl-sim may write ``names`` into ``directory`` as a ``kind``
    directory; writes nothing.  ``record``: a study's ``study.yaml`` as it would be written (an
    older study directory's identical one is sfl-sim's).

    Raises
    ------
    RunDirError
        The directory is a file, carries a marker of another kind, or holds one of ``names`` that
        sfl-sim did not write (one line naming the file).
    """
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise RunDirError(f"{path} is a file, not a directory; choose another {what}")
    marker = read(path)
    if marker is not None and marker["kind"] != kind:
        raise RunDirError(f"{path} is {_WHAT[marker['kind']]} (made by {marker.get('command') or 'sfl-sim'}), "
                          f"not {_WHAT[kind]}; choose another {what}")
    mine = foreign(path, kind, names, record)
    if mine:
        raise RunDirError(f"{path / mine[0]} exists and was not written by sfl-sim; choose another {what} "
                          f"(or move the file away)")


def claim_folder(directory: Path | str, kind: str, names: Iterable[str]) -> None:
    """Check and mark, before any work, a folder a command writes ``names`` into (:func:`check_writable`,
    :func:`claim`, then :func:`record`): the one call of a command whose folder holds nothing but
    its own files (a plot folder, a channel or trace report).

    Raises
    ------
    RunDirError
    """
    check_writable(directory, "--output-dir")
    claim(directory, kind, names)
    record(directory, kind, names)


def _version() -> str:
    try:
        return metadata.version("sfl-sim")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def record(directory: Path | str, kind: str, names: Iterable[str], staging_for: Path | None = None,
           made: dict[str, Any] | None = None) -> None:
    """Mark ``directory`` (created if missing) as a ``kind`` directory whose files ``names`` are
    sfl-sim's, before they are written (added to what the marker lists already).

    Parameters
    ----------
    directory : path
    kind : str
        One of :data:`KINDS`.
    names : iterable of str
        File names in ``directory`` that sfl-sim writes.
    staging_for : path, optional
        The directory this one stages a run for (:func:`staging_dir`).
    made : mapping, optional
        What made the files, when not this command (a staged run's ``command``, ``version``, ``created``).

    Raises
    ------
    RunDirError
        The directory carries a marker of another kind.
    """
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    marker = read(path)
    if marker is not None and marker["kind"] != kind:
        raise RunDirError(f"{path} is {_WHAT[marker['kind']]}, not {_WHAT[kind]}; choose another --output-dir")
    if marker is None:
        marker = {"kind": kind, "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
                  "version": _version(), "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "files": []}
        marker.update({k: v for k, v in (made or {}).items() if k in ("command", "version", "created")})
        if staging_for is not None:
            marker["staging_for"] = str(staging_for)
    files = list(dict.fromkeys([*marker["files"], *names]))
    if files == marker["files"] and (path / MARKER_FILE).exists():
        return
    marker["files"] = files
    _write(path, marker)


def _write(directory: Path, marker: dict[str, Any]) -> None:
    tmp = directory / (MARKER_FILE + ".tmp")
    tmp.write_text(json.dumps(marker, indent=1) + "\n")
    os.replace(tmp, directory / MARKER_FILE)


def staging_dir(target: Path | str, purpose: str, kind: str = "run") -> Path:
    """A fresh staging directory for ``target`` beside it (``.<name>.<purpose>``), marked ``kind``
    and ``staging_for`` ``target``; one left by a killed command (sfl-sim's: its marker says so) is
    removed first.

    Raises
    ------
    RunDirError
        The staging path exists and is not sfl-sim's.
    """
    target = Path(target)
    stage = target.parent / f".{target.name}.{purpose}"
    remove_staging(stage)
    stage.mkdir(parents=True)
    record(stage, kind, (), staging_for=target)
    return stage


def settle(directory: Path | str) -> None:
    """Mark a staging directory moved into its place (:func:`staging_dir`) as staging no more."""
    path = Path(directory)
    made = read(path)
    if made is None or "staging_for" not in made:
        return
    del made["staging_for"]
    _write(path, made)


def remove_staging(stage: Path) -> None:
    """Remove a staging directory (:func:`staging_dir`) and everything in it: all of it is sfl-sim's.

    Raises
    ------
    RunDirError
        ``stage`` exists without a marker that says ``staging_for`` (not sfl-sim's: left alone).
    """
    import shutil

    if not (stage.exists() or stage.is_symlink()):
        return
    if stage.is_symlink() or not stage.is_dir() or "staging_for" not in (read(stage) or {}):
        raise RunDirError(f"{stage} exists and was not written by sfl-sim; move it away and run again")
    shutil.rmtree(stage)


def check_writable(out: Path | str, what: str = "output_dir") -> None:
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
