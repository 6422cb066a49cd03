"""Readers of availability traces: each returns one :class:`DeviceTrace` per trace device.

Formats
-------
``csv``
    A header ``client,start_s,end_s`` and one row per online interval ``[start_s, end_s)`` of
    device ``client`` (an integer >= 0).  The devices are ``0 .. largest id``: an id with no row is
    a device that is never online (at most :data:`NEVER_ONLINE_PER_ROW` per row plus
    :data:`SPARE_IDS`: an id far beyond the rows is refused, not turned into millions of devices).
    Every device's trace runs from 0 s to the largest ``end_s`` in the file.  Intervals of one
    device must not overlap (touching ones are joined).
``flash``
    FLASH's user-behaviour JSON (PKU-Chengxu/FLASH, ``data/user_behavior_tiny.json``, built by its
    ``gen_json``): an object of devices, each ``{"guid", "model", "messages"}`` where ``messages``
    is lines ``YYYY-mm-dd HH:MM:SS<TAB>state``.  As FLASH's ``models/timer.py`` does, a device is
    ready (online) while the screen is locked, on wifi and charging; states are
    ``battery_charged_on/off``, ``wifi``, ``unknown``/``2g``..``5g`` (not wifi),
    ``screen_on/off``, ``screen_lock/unlock`` and a battery level ``NN%``; a ready period still
    open at the last message is dropped, as FLASH drops it.  Time 0 is midnight of the first day
    in the file (so time of day is kept); a device's messages are in time order, and its trace
    runs from its first to its last message, and wraps over that span as FLASH's ``Timer.ready`` does.
``fedscale``
    FedScale's ``client_behave_trace`` pickle: a dict of client id -> ``{'active': [s...],
    'inactive': [s...], 'finish_time': s, ...}`` (its ``docs``' device-trace format; extra keys
    such as ``duration`` and ``model`` are ignored); ``[active[i], inactive[i])`` are the online
    intervals, and the trace of a client runs from 0 to its ``finish_time`` (FedScale's
    ``ClientSim.is_active`` takes the time modulo ``finish_time``).  The pickle is read by
    :class:`PlainUnpickler`, which refuses every global, so a crafted file cannot run code.

Every time in a trace lies in :data:`~sfl_sim.clients.limits.TRACE_TIME_S`, and a trace in which no
device is ever online (no interval of positive length) is refused.  Files are read through
:mod:`sfl_sim.clients.availability.files` (bounded size, bounded messages, no code from a pickle).
Every bad input is a :class:`TraceError` of one line naming the file, the line or key, the value
and what is allowed.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from sfl_sim.clients.availability.files import (
    PlainUnpickler,
    RefusedGlobal,
    TraceError,
    csv_rows,
    decode_text,
    load_plain_dict,
    read_bytes,
    shown,
)
from sfl_sim.clients.limits import TRACE_TIME_S
from sfl_sim.errors import UserError

__all__ = ["DeviceTrace", "TraceError", "TraceEndedError", "PlainUnpickler", "read_trace", "read_csv",
           "read_flash", "read_fedscale", "FORMATS", "RefusedGlobal", "load_plain_dict", "client_id_order",
           "NEVER_ONLINE_PER_ROW", "SPARE_IDS", "MAX_ID_CHARS"]

#: A CSV's devices are ``0 .. largest id``, and an id without a row is a device never online: at
#: most this many of them per row of the file, plus :data:`SPARE_IDS`, so that an id far beyond
#: the rows (a label, a typo: 3,000,000 in a two-row file) is refused instead of creating
#: millions of devices.
NEVER_ONLINE_PER_ROW = 10
#: Ids without a row any CSV may have, whatever its length.
SPARE_IDS = 1000
#: The longest string id of a FedScale client.
MAX_ID_CHARS = 200
#: A CSV client id: ASCII digits (``str.isdigit`` also takes ``²``, which ``int`` does not).
_CSV_ID = re.compile(r"[0-9]{1,18}")


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
    """A trace time: a finite number of seconds in :data:`TRACE_TIME_S`."""
    try:
        value = float(text) if not isinstance(text, bool) else math.nan
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer beyond any float
        value = math.nan
    if not TRACE_TIME_S.contains(value):
        raise TraceError(f"{_where(path, at)}: {field} got {shown(text)}; allowed: a finite number of seconds "
                         f"in {TRACE_TIME_S} ({TRACE_TIME_S.reason})")
    return value


def _someone_online(path: Path, devices: list[DeviceTrace], why: str) -> list[DeviceTrace]:
    """``devices``, unless none of them is ever online (the empty trace, refused; ``why`` says how
    the file's intervals came out empty)."""
    if not any(d.starts_s.size for d in devices):
        raise TraceError(f"{path}: no device is ever online ({why}); allowed: a trace with at least one "
                         f"online interval of positive length")
    return devices


# --------------------------------------------------------------------------------------------- csv
_CSV_HEADER = "client,start_s,end_s"


def read_csv(path: Path) -> list[DeviceTrace]:
    """Devices of a ``client,start_s,end_s`` CSV (see the module's docstring)."""
    text = decode_text(path, read_bytes(path, "an availability CSV"), f"a CSV {_CSV_HEADER}")
    rows = csv_rows(path, text, _CSV_HEADER)
    first = next(rows, None)
    header = [c.strip() for c in first[1]] if first is not None else []
    if header != ["client", "start_s", "end_s"]:
        raise TraceError(f"{_where(path, 'line 1')}: header got {shown(','.join(header))}; allowed: {_CSV_HEADER}")
    per_device: dict[int, list[tuple[float, float]]] = {}
    lines: dict[int, int] = {}
    for number, row in rows:
        if not row or all(not c.strip() for c in row):
            continue
        at = f"line {number}"
        if len(row) != 3:
            raise TraceError(f"{_where(path, at)}: got {len(row)} cells; allowed: 3 ({_CSV_HEADER})")
        cell = row[0].strip()
        if not _CSV_ID.fullmatch(cell):
            raise TraceError(f"{_where(path, at)}: client got {shown(cell)}; allowed: a device id, an integer >= 0")
        start = _number(path, at, "start_s", row[1].strip())
        end = _number(path, at, "end_s", row[2].strip())
        if end < start:
            raise TraceError(f"{_where(path, at)}: end_s got {end:g} < start_s {start:g}; allowed: end_s >= start_s")
        device = int(cell)
        per_device.setdefault(device, []).append((start, end))
        lines.setdefault(device, number)
    if not per_device:
        raise TraceError(f"{path}: no intervals; allowed: at least one row {_CSV_HEADER}")
    _ids_near_the_rows(path, per_device, lines)
    span = max(end for ivs in per_device.values() for _, end in ivs)
    if span <= 0:
        raise TraceError(f"{path}: every interval ends at 0 s; allowed: a trace that lasts > 0 s")
    never = np.zeros(0)  # one pair of empty arrays for every device without a row
    out = []
    for device in range(max(per_device) + 1):
        ivs = per_device.get(device)
        starts, ends = _joined(path, f"client {device}", ivs) if ivs else (never, never)
        out.append(DeviceTrace(str(device), starts, ends, 0.0, float(span)))
    return _someone_online(path, out, "every interval has end_s = start_s")


def _ids_near_the_rows(path: Path, per_device: dict[int, list[tuple[float, float]]], lines: dict[int, int]) -> None:
    """Refuse a largest id that would make more never-online devices than the rows allow."""
    rows = sum(len(ivs) for ivs in per_device.values())
    limit = NEVER_ONLINE_PER_ROW * rows + SPARE_IDS
    largest = max(per_device)
    if largest >= limit + len(per_device):
        raise TraceError(f"{_where(path, f'line {lines[largest]}')}: client got {largest}; allowed: ids below "
                         f"{limit + len(per_device)} for a file of {rows} rows (the devices are 0 .. the largest "
                         f"id, an id without a row is a device never online: at most {NEVER_ONLINE_PER_ROW} "
                         f"per row and {SPARE_IDS} more)")


# ------------------------------------------------------------------------------------------- flash
_FLASH_TIME = "%Y-%m-%d %H:%M:%S"
_NOT_WIFI = ("unknown", "2g", "3g", "4g", "5g")


def _flash_events(path: Path, key: str, device: Any) -> list[tuple[datetime, str]]:
    if not isinstance(device, dict) or not isinstance(device.get("messages"), str):
        raise TraceError(f"{path} key {shown(key)}: got {type(device).__name__}; allowed: an object with a "
                         f"'messages' string (FLASH user_behavior JSON)")
    events: list[tuple[datetime, str]] = []
    for number, line in enumerate(device["messages"].split("\n"), start=1):
        if not line.strip():
            continue
        parts = line.strip().split("\t")
        try:
            if len(parts) != 2:
                raise ValueError
            when = datetime.strptime(parts[0].strip(), _FLASH_TIME)
        except ValueError:
            raise TraceError(f"{path} key {shown(key)} message {number}: got {shown(line.strip())}; allowed: "
                             f"'YYYY-mm-dd HH:MM:SS<TAB>state'") from None
        if events and when < events[-1][0]:
            raise TraceError(f"{path} key {shown(key)} message {number}: time {when} is before the previous "
                             f"message's ({events[-1][0]}); allowed: messages in time order")
        events.append((when, parts[1].strip().lower()))
    return events


def _flash_json(path: Path) -> Any:
    text = decode_text(path, read_bytes(path, "a FLASH JSON file"), "FLASH's user_behavior JSON")
    try:
        return json.loads(text)
    except RecursionError:
        raise TraceError(f"{path}: JSON nested deeper than the reader follows; allowed: FLASH's user_behavior "
                         f"JSON (an object of devices, each an object with a 'messages' string)") from None
    except ValueError as exc:  # JSONDecodeError, or an integer of more digits than Python converts
        raise TraceError(f"{path}: not JSON ({shown(str(exc), 100)}); allowed: FLASH's user_behavior JSON "
                         f"object") from None


def read_flash(path: Path) -> list[DeviceTrace]:
    """Devices of a FLASH user-behaviour JSON (see the module's docstring)."""
    data = _flash_json(path)
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
            raise TraceError(f"{path} key {shown(key)}: its messages span 0 s; allowed: at least two "
                             f"messages at different times")
        locked = wifi = charged = False
        opened = None
        intervals = []
        for number, (when, state) in enumerate(device_events, start=1):
            t_s = (when - midnight).total_seconds()
            if not TRACE_TIME_S.contains(t_s):
                raise TraceError(f"{path} key {shown(key)} message {number}: time {when} is {t_s:g} s after the "
                                 f"file's first midnight; allowed: times in {TRACE_TIME_S} of it "
                                 f"({TRACE_TIME_S.reason})")
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
                raise TraceError(f"{path} key {shown(key)} message {number}: state got {shown(state)}; allowed: "
                                 f"battery_charged_on/off, wifi, unknown, 2g-5g, screen_on/off, "
                                 f"screen_lock/unlock, NN%")
            ready = locked and wifi and charged
            if ready and opened is None:
                opened = t_s
            elif not ready and opened is not None:
                intervals.append((opened, t_s))
                opened = None
        starts, ends = _joined(path, f"key {shown(key)}", intervals)
        out.append(DeviceTrace(key, starts, ends, (device_events[0][0] - midnight).total_seconds(),
                               (device_events[-1][0] - midnight).total_seconds()))
    return _someone_online(path, out, "none is locked, on wifi and charging for a time before its last message")


# ---------------------------------------------------------------------------------------- fedscale
def client_id_order(path: Path, data: dict[Any, Any]) -> list[Any]:
    """The client ids of a FedScale pickle, checked, in FedScale's order: integers by value, then
    strings.

    Raises
    ------
    TraceError
        One line for an id that is neither an integer of at most 64 bits nor a string of at most
        :data:`MAX_ID_CHARS` characters.
    """
    for key in data:
        if isinstance(key, bool) or not isinstance(key, (int, str)) \
                or (isinstance(key, int) and not -2**63 <= key < 2**63) \
                or (isinstance(key, str) and len(key) > MAX_ID_CHARS):
            raise TraceError(f"{path} key {shown(key)}: client id got {type(key).__name__}"
                             f"{' of ' + str(len(key)) + ' characters' if isinstance(key, str) else ''}; allowed: "
                             f"an integer (64 bits) or a string of at most {MAX_ID_CHARS} characters")
    return sorted(data, key=lambda k: (isinstance(k, str), k if isinstance(k, int) else 0, str(k)))


def read_fedscale(path: Path) -> list[DeviceTrace]:
    """Clients of a FedScale ``client_behave_trace`` pickle (see the module's docstring)."""
    data, budget = load_plain_dict(path, "{'active', 'inactive', 'finish_time'}")
    out = []
    for key in client_id_order(path, data):
        entry = data[key]
        at = f"key {shown(key)}"
        budget.spend(len(entry) if isinstance(entry, (dict, list, tuple, set, frozenset)) else 1, at)
        if not isinstance(entry, dict) or not all(k in entry for k in ("active", "inactive", "finish_time")):
            raise TraceError(f"{path} {at}: got {shown(entry)}; allowed: a dict with 'active', 'inactive' "
                             f"and 'finish_time'")
        active, inactive = entry["active"], entry["inactive"]
        if not isinstance(active, (list, tuple)) or not isinstance(inactive, (list, tuple)) \
                or len(active) != len(inactive):
            raise TraceError(f"{path} {at}: 'active' and 'inactive' got lengths "
                             f"{len(active) if isinstance(active, (list, tuple)) else type(active).__name__} and "
                             f"{len(inactive) if isinstance(inactive, (list, tuple)) else type(inactive).__name__}; "
                             f"allowed: two lists of seconds of equal length")
        budget.spend(len(active) + len(inactive), at)
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
    return _someone_online(path, out, "every interval has inactive = active")


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
    if format not in FORMATS:
        raise TraceError(f"{path}: format got {shown(format)}; allowed: one of {', '.join(FORMATS)}")
    if not path.is_file():
        raise TraceError(f"{path}: no such file; allowed: an existing {format} trace file")
    return FORMATS[format](path)
