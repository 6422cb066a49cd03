"""Readers of availability traces: each returns one :class:`DeviceTrace` per trace device.

Formats
-------
``csv``
    A header ``client,start_s,end_s`` and one row per online interval ``[start_s, end_s)`` of
    device ``client`` (an integer >= 0).  The devices are ``0 .. largest id``: an id with no row is
    a device that is never online.  Every device's trace runs from 0 s to the largest ``end_s``
    in the file.  Intervals of one device must not overlap (touching ones are joined).
``flash``
    FLASH's user-behaviour JSON (PKU-Chengxu/FLASH, ``data/user_behavior_tiny.json``, built by its
    ``gen_json``): an object of devices, each ``{"guid", "model", "messages"}`` where ``messages``
    is lines ``YYYY-mm-dd HH:MM:SS<TAB>state``.  As FLASH's ``models/timer.py`` does, a device is
    ready (online) while the screen is locked, on wifi and charging; states are
    ``battery_charged_on/off``, ``wifi``, ``unknown``/``2g``..``5g`` (not wifi),
    ``screen_on/off``, ``screen_lock/unlock`` and a battery level ``NN%``; a ready period still
    open at the last message is dropped, as FLASH drops it.  Time 0 is midnight of the first day
    in the file (so time of day is kept); each device's trace runs from its first to its last
    message, and wraps over that span as FLASH's ``Timer.ready`` does.
``fedscale``
    FedScale's ``client_behave_trace`` pickle: a dict of client id -> ``{'active': [s...],
    'inactive': [s...], 'finish_time': s, ...}`` (its ``docs``' device-trace format; extra keys
    such as ``duration`` and ``model`` are ignored); ``[active[i], inactive[i])`` are the online
    intervals, and the trace of a client runs from 0 to its ``finish_time`` (FedScale's
    ``ClientSim.is_active`` takes the time modulo ``finish_time``).  The pickle is read by
    :class:`PlainUnpickler`, which refuses every global, so a crafted file cannot run code.

Every bad input is a :class:`TraceError` of one line naming the file, the line or key, the value
and what is allowed.
"""
from __future__ import annotations

import csv
import io
import json
import math
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from sfl_sim.errors import UserError

__all__ = ["DeviceTrace", "TraceError", "TraceEndedError", "PlainUnpickler", "read_trace", "read_csv",
           "read_flash", "read_fedscale", "FORMATS", "RefusedGlobal"]


class TraceError(UserError, ValueError):
    """A trace file cannot be read (one line: file, line or key, value, what is allowed)."""


class TraceEndedError(UserError):
    """A trace read with ``on_end: stop`` was asked about a time after it ends."""


@dataclass(frozen=True)
class DeviceTrace:
    """The online intervals of one trace device.

    Attributes
    ----------
    device : str
        The device's id in the file.
    starts_s, ends_s : numpy.ndarray
        Sorted, disjoint, non-touching intervals ``[starts_s[i], ends_s[i])`` (float64, seconds).
    origin_s, end_s : float
        The span the trace covers; a trace that wraps repeats ``[origin_s, end_s)``.
    """

    device: str
    starts_s: np.ndarray
    ends_s: np.ndarray
    origin_s: float
    end_s: float


def _where(path: Path, at: str) -> str:
    return f"{path} {at}"


def _joined(path: Path, at: str, intervals: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted intervals with touching ones joined; overlap is an error naming ``at``."""
    intervals = sorted(intervals)
    starts: list[float] = []
    ends: list[float] = []
    for start, end in intervals:
        if ends and start < ends[-1]:
            raise TraceError(f"{_where(path, at)}: interval [{start:g}, {end:g}) overlaps "
                             f"[{starts[-1]:g}, {ends[-1]:g}); allowed: disjoint intervals per device")
        if ends and start == ends[-1]:
            ends[-1] = end
        elif end > start:
            starts.append(start)
            ends.append(end)
    return np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)


def _number(path: Path, at: str, field: str, text: Any) -> float:
    try:
        value = float(text) if not isinstance(text, bool) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise TraceError(f"{_where(path, at)}: {field} got {text!r}; allowed: a finite number of seconds >= 0")
    return value


# --------------------------------------------------------------------------------------------- csv
def read_csv(path: Path) -> list[DeviceTrace]:
    """Devices of a ``client,start_s,end_s`` CSV (see the module's docstring)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header = [c.strip() for c in rows[0]] if rows else []
    if header != ["client", "start_s", "end_s"]:
        raise TraceError(f"{_where(path, 'line 1')}: header got {','.join(header)!r}; "
                         f"allowed: client,start_s,end_s")
    per_device: dict[int, list[tuple[float, float]]] = {}
    lines: dict[int, int] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue
        at = f"line {number}"
        if len(row) != 3:
            raise TraceError(f"{_where(path, at)}: got {len(row)} cells; allowed: 3 (client,start_s,end_s)")
        cell = row[0].strip()
        if not cell.isdigit():
            raise TraceError(f"{_where(path, at)}: client got {cell!r}; allowed: a device id, an integer >= 0")
        start = _number(path, at, "start_s", row[1].strip())
        end = _number(path, at, "end_s", row[2].strip())
        if end < start:
            raise TraceError(f"{_where(path, at)}: end_s got {end:g} < start_s {start:g}; allowed: end_s >= start_s")
        device = int(cell)
        per_device.setdefault(device, []).append((start, end))
        lines.setdefault(device, number)
    if not per_device:
        raise TraceError(f"{path}: no intervals; allowed: at least one row client,start_s,end_s")
    span = max(end for ivs in per_device.values() for _, end in ivs)
    if span <= 0:
        raise TraceError(f"{path}: every interval ends at 0 s; allowed: a trace that lasts > 0 s")
    out = []
    for device in range(max(per_device) + 1):
        starts, ends = _joined(path, f"client {device}", per_device.get(device, []))
        out.append(DeviceTrace(str(device), starts, ends, 0.0, float(span)))
    return out


# ------------------------------------------------------------------------------------------- flash
_FLASH_TIME = "%Y-%m-%d %H:%M:%S"
_NOT_WIFI = ("unknown", "2g", "3g", "4g", "5g")


def _flash_events(path: Path, key: str, device: Any) -> list[tuple[datetime, str]]:
    if not isinstance(device, dict) or not isinstance(device.get("messages"), str):
        raise TraceError(f"{path} key {key!r}: got {type(device).__name__}; allowed: an object with a "
                         f"'messages' string (FLASH user_behavior JSON)")
    events = []
    for number, line in enumerate(device["messages"].split("\n"), start=1):
        if not line.strip():
            continue
        parts = line.strip().split("\t")
        try:
            if len(parts) != 2:
                raise ValueError
            when = datetime.strptime(parts[0].strip(), _FLASH_TIME)
        except ValueError:
            raise TraceError(f"{path} key {key!r} message {number}: got {line.strip()!r}; allowed: "
                             f"'YYYY-mm-dd HH:MM:SS<TAB>state'") from None
        events.append((when, parts[1].strip().lower()))
    return events


def read_flash(path: Path) -> list[DeviceTrace]:
    """Devices of a FLASH user-behaviour JSON (see the module's docstring)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: not JSON ({exc}); allowed: FLASH's user_behavior JSON object") from None
    if not isinstance(data, dict) or not data:
        raise TraceError(f"{path}: got {'an empty object' if data == {} else type(data).__name__}; "
                         f"allowed: a non-empty object of devices")
    events = {str(key): _flash_events(path, str(key), device) for key, device in data.items()}
    firsts = [ev[0][0] for ev in events.values() if ev]
    if not firsts:
        raise TraceError(f"{path}: no messages in any device; allowed: at least one timed state")
    midnight = min(firsts).replace(hour=0, minute=0, second=0)
    out = []
    for key, device_events in events.items():
        if len(device_events) < 2 or device_events[-1][0] <= device_events[0][0]:
            raise TraceError(f"{path} key {key!r}: its messages span 0 s; allowed: at least two "
                             f"messages at different times")
        locked = wifi = charged = False
        opened = None
        intervals = []
        for number, (when, state) in enumerate(device_events, start=1):
            t_s = (when - midnight).total_seconds()
            if state in ("battery_charged_on", "battery_charged_off"):
                charged = state.endswith("_on")
            elif state == "wifi" or state in _NOT_WIFI:
                wifi = state == "wifi"
            elif state in ("screen_lock", "screen_unlock"):
                locked = state == "screen_lock"
            elif state in ("screen_on", "screen_off"):
                pass  # FLASH's idle is "locked", not "screen off"
            elif state.endswith("%") and state[:-1].replace(".", "", 1).isdigit():
                pass
            else:
                raise TraceError(f"{path} key {key!r} message {number}: state got {state!r}; allowed: "
                                 f"battery_charged_on/off, wifi, unknown, 2g-5g, screen_on/off, "
                                 f"screen_lock/unlock, NN%")
            ready = locked and wifi and charged
            if ready and opened is None:
                opened = t_s
            elif not ready and opened is not None:
                intervals.append((opened, t_s))
                opened = None
        starts, ends = _joined(path, f"key {key!r}", intervals)
        out.append(DeviceTrace(key, starts, ends, (device_events[0][0] - midnight).total_seconds(),
                               (device_events[-1][0] - midnight).total_seconds()))
    return out


# ---------------------------------------------------------------------------------------- fedscale
_PLAIN = "plain data: dicts, lists, tuples, numbers, strings"


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle names a global (a class or a function), which :class:`PlainUnpickler` never loads."""


class PlainUnpickler(pickle.Unpickler):
    """An unpickler that refuses every global, so only plain data (dicts, lists, tuples, sets,
    numbers, strings, bytes, None) can load: no class is ever looked up, so no code runs."""

    def find_class(self, module: str, name: str) -> Any:  # noqa: D102 - see the class
        raise RefusedGlobal(f"refuses global {module}.{name}")


def load_plain_dict(path: Path, entries: str) -> dict[Any, Any]:
    """The non-empty dict a FedScale pickle holds, read with :class:`PlainUnpickler` (no code runs).

    Parameters
    ----------
    path : pathlib.Path
    entries : str
        What each client's entry holds, for the error line (e.g. ``"{'active', 'inactive'}"``).

    Raises
    ------
    TraceError
        One line: a refused global, a file that is no pickle, or anything but a non-empty dict.
    """
    with open(path, "rb") as f:
        raw = f.read()
    try:
        data = PlainUnpickler(io.BytesIO(raw)).load()
    except RefusedGlobal as exc:
        raise TraceError(f"{path}: {exc}; allowed: {_PLAIN}") from None
    except Exception as exc:  # truncated or not a pickle at all
        raise TraceError(f"{path}: not a readable pickle ({type(exc).__name__}: {exc}); allowed: {_PLAIN}") from None
    if not isinstance(data, dict) or not data:
        raise TraceError(f"{path}: got {'an empty dict' if data == {} else type(data).__name__}; "
                         f"allowed: a non-empty dict of client id -> {entries}")
    return data


def read_fedscale(path: Path) -> list[DeviceTrace]:
    """Clients of a FedScale ``client_behave_trace`` pickle (see the module's docstring)."""
    data = load_plain_dict(path, "{'active', 'inactive', 'finish_time'}")
    out = []
    # FedScale's ids are integers: numeric order, then any string ids
    for key in sorted(data, key=lambda k: (not isinstance(k, int), k if isinstance(k, int) else 0, str(k))):
        entry = data[key]
        at = f"key {key!r}"
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            raise TraceError(f"{path} {at}: client id got {type(key).__name__}; allowed: an integer or a string")
        if not isinstance(entry, dict) or not {"active", "inactive", "finish_time"} <= set(entry):
            raise TraceError(f"{path} {at}: got {entry!r:.60}; allowed: a dict with 'active', 'inactive' "
                             f"and 'finish_time'")
        active, inactive = entry["active"], entry["inactive"]
        if not isinstance(active, (list, tuple)) or not isinstance(inactive, (list, tuple)) \
                or len(active) != len(inactive):
            raise TraceError(f"{path} {at}: 'active' and 'inactive' got lengths "
                             f"{len(active) if isinstance(active, (list, tuple)) else type(active).__name__} and "
                             f"{len(inactive) if isinstance(inactive, (list, tuple)) else type(inactive).__name__}; "
                             f"allowed: two lists of seconds of equal length")
        finish = _number(path, at, "finish_time", entry["finish_time"])
        intervals = []
        for i, (a, b) in enumerate(zip(active, inactive, strict=True)):
            start = _number(path, f"{at} active[{i}]", "value", a)
            end = _number(path, f"{at} inactive[{i}]", "value", b)
            if end < start:
                raise TraceError(f"{path} {at} interval {i}: inactive got {end:g} < active {start:g}; "
                                 f"allowed: inactive >= active")
            if end > finish:
                raise TraceError(f"{path} {at} interval {i}: inactive got {end:g} > finish_time {finish:g}; "
                                 f"allowed: intervals inside [0, finish_time]")
            intervals.append((start, end))
        if finish <= 0:
            raise TraceError(f"{path} {at}: finish_time got {finish:g}; allowed: > 0 s")
        starts, ends = _joined(path, at, intervals)
        out.append(DeviceTrace(str(key), starts, ends, 0.0, finish))
    return out


#: Every trace format by its name.
FORMATS: dict[str, Callable[[Path], list[DeviceTrace]]] = {
    "csv": read_csv, "flash": read_flash, "fedscale": read_fedscale}


def read_trace(path: Any, format: str) -> list[DeviceTrace]:
    """The devices of the trace at ``path`` in ``format`` (a key of :data:`FORMATS`).

    Raises
    ------
    TraceError
        One line when the file is missing or its content is not allowed.
    """
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such file; allowed: an existing {format} trace file")
    return FORMATS[format](path)
