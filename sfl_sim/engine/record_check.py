"""A round's record as read back from disk, checked before anything runs it; and what it adds up to.

:func:`checked_round` checks one line of a work record (:mod:`sfl_sim.engine.record`, whose module
docstring lists the ops) against the layout the recorder writes: every op known and of its
length, every client among the run's clients, every FLOP count and byte count a finite number
>= 0, every event number one the round defines, every process and stream it names one the round
has.  A line that fails raises :class:`RecordEntryError` naming the field, the value and what is
allowed, so that a damaged or edited record is refused before the replay, never half-run.

:meth:`RecordedTotals.of` adds up what a round asked of the clock (bytes each way, FLOPs on the
clients and on the server), for the re-timing to compare with the run's own counts.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, get_args

from sfl_sim.engine.outcome import LossReason
from sfl_sim.engine.record import RoundRecord
from sfl_sim.engine.simulator import SERVER

__all__ = ["RecordEntryError", "RecordedTotals", "checked_round"]

#: Per op code, its length (the code included) and, in words, its layout (the record's docstring).
OPS: dict[str, tuple[int, str]] = {
    "c": (4, '["c", who, flops, what] or ["c", who, flops, what, client]'),
    "h": (4, '["h", client, [[what, nbytes], ...], to_cloud]'),
    "u": (6, '["u", client, nbytes, what, block, h]'),
    "d": (5, '["d", client, nbytes, what, h]'),
    "b": (4, '["b", nbytes, what, h]'),
    "p": (3, '["p", h, pid]'),
    "e": (2, '["e", h]'),
    "a": (3, '["a", [h, ...], h]'),
    "al": (2, '["al", [[client, bits], ...] or null]'),
    "y": (3, '["y", h, outcome]'),
    "t": (3, '["t", h, outcome]'),
    "g": (4, '["g", [[client, h], ...], T, kept]'),
    "w": (2, '["w", [stream, ...]]'),
    "r": (2, '["r", outcome]'),
    "i": (1, '["i"]'),
}

#: Ops whose last item defines an event number (``p`` defines its second item).
_DEFINES = {"u": -1, "d": -1, "b": -1, "e": 1, "a": -1, "p": 1}

_OUTCOMES = '"D", "O", null or "L:<reason>" with reason one of ' + ", ".join(get_args(LossReason))


class RecordEntryError(ValueError):
    """A field of a recorded round that the recorder cannot have written: ``field: got X; allowed: Y``."""

    def __init__(self, field: str, got: Any, allowed: str) -> None:
        super().__init__(f"{field}: got {_shown(got)}; allowed: {allowed}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_in(field: str, value: Any, low: int, high: int, allowed: str) -> int:
    if not _is_int(value) or not low <= value < high:
        raise RecordEntryError(field, value, allowed)
    return int(value)


def _amount(field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise RecordEntryError(field, value, "a finite number >= 0")
    return float(value)


def _text(field: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise RecordEntryError(field, value, "a non-empty string")
    return value


def _outcome(field: str, value: Any) -> None:
    if value in (None, "D", "O"):
        return
    if isinstance(value, str) and value.startswith("L:") and value[2:] in get_args(LossReason):
        return
    raise RecordEntryError(field, value, _OUTCOMES)


def _list(field: str, value: Any, allowed: str) -> list[Any]:
    if not isinstance(value, list):
        raise RecordEntryError(field, value, allowed)
    return value


def checked_round(data: Any, n_clients: int, after_round: int | None = None) -> RoundRecord:
    """The :class:`RoundRecord` of one line of a work record, every field checked (module docstring).

    Parameters
    ----------
    data : object
        The line, as JSON decoded it.
    n_clients : int
        The run's clients (ids 0 to ``n_clients - 1``).
    after_round : int, optional
        The round of the line before (None: the first round line): rounds follow one another.

    Raises
    ------
    RecordEntryError
        Naming the first field that is not as the recorder writes it.
    """
    if not isinstance(data, dict):
        raise RecordEntryError("line", data, "a JSON object")
    clients = f"a client id in [0, {n_clients - 1}] (the run has {n_clients} clients)"
    want_round = "an integer >= 1" if after_round is None else f"{after_round + 1} (the round after {after_round})"
    rnd = data.get("round")
    if not isinstance(rnd, int) or isinstance(rnd, bool) or rnd < 1 or \
            (after_round is not None and rnd != after_round + 1):
        raise RecordEntryError("round", rnd, want_round)
    cohort = _list("cohort", data.get("cohort"), f"a list of {clients}")
    for i, k in enumerate(cohort):
        _int_in(f"cohort[{i}]", k, 0, n_clients, clients)
    processes = _list("processes", data.get("processes"), "a non-empty list of processes (lists of ops)")
    if not processes:
        raise RecordEntryError("processes", processes, "a non-empty list of processes (lists of ops)")
    draws = data.get("draws", {})
    if not isinstance(draws, dict):
        raise RecordEntryError("draws", draws, "an object of stream names to lists of process numbers")
    unreplayable = data.get("unreplayable")
    if unreplayable is not None and not isinstance(unreplayable, str):
        raise RecordEntryError("unreplayable", unreplayable, "a string or absent")
    extra = sorted(set(data) - {"round", "cohort", "processes", "draws", "unreplayable"})
    if extra:
        raise RecordEntryError(extra[0], data[extra[0]], "round, cohort, processes, draws, unreplayable")
    pids = f"a process number in [0, {len(processes) - 1}]"
    defined = {0}  # event 0: the round's own process
    for p, ops in enumerate(processes):
        for op in _list(f"processes[{p}]", ops, "a list of ops"):
            if isinstance(op, list) and op and op[0] in _DEFINES and len(op) == OPS[op[0]][0]:
                defined.add(op[_DEFINES[op[0]]])
    drew: Counter[tuple[str, int]] = Counter()
    for p, ops in enumerate(processes):
        for j, op in enumerate(ops):
            for stream in _op(f"processes[{p}][{j}]", op, n_clients, clients, pids, len(processes), defined):
                drew[stream, p] += 1
    for name, order in draws.items():
        for i, pid in enumerate(_list(f"draws.{name}", order, "a list of process numbers")):
            _int_in(f"draws.{name}[{i}]", pid, 0, len(processes), pids)
    recorded = Counter((str(name), int(pid)) for name, order in draws.items() for pid in order)
    if recorded != drew:
        name, pid = next(iter((drew - recorded) + (recorded - drew)))
        raise RecordEntryError(f"draws.{name}", draws.get(name), f"process {pid} listed once per draw its ops "
                                                                 f"record ({drew[name, pid]})")
    return RoundRecord.from_dict(data)


def _op(field: str, op: Any, n_clients: int, clients: str, pids: str, n_processes: int,
        defined: set[Any]) -> list[str]:
    """Check one op; the streams it says its process drew from."""
    if not isinstance(op, list) or not op or op[0] not in OPS:
        raise RecordEntryError(f"{field}[0]" if isinstance(op, list) and op else field,
                               op[0] if isinstance(op, list) and op else op, f"an op code: {', '.join(OPS)}")
    kind = op[0]
    length, layout = OPS[kind]
    if len(op) != length and not (kind == "c" and len(op) == 5):  # a compute placed on a client's edge
        raise RecordEntryError(field, op, layout)
    events = f"an event number the round defines ({len(defined)} of them)"

    def event(i: int, value: Any) -> None:
        if not _is_int(value) or value not in defined:
            raise RecordEntryError(f"{field}[{i}]", value, events)

    if kind == "c":
        _int_in(f"{field}[1]", op[1], SERVER, n_clients, f"{SERVER} (the server) or {clients}")
        _amount(f"{field}[2]", op[2])
        _text(f"{field}[3]", op[3])
        if len(op) == 5:
            _int_in(f"{field}[4]", op[4], 0, n_clients, clients)
    elif kind == "h":
        _int_in(f"{field}[1]", op[1], 0, n_clients, clients)
        for i, item in enumerate(_list(f"{field}[2]", op[2], "a list of [kind, bytes]")):
            if not (isinstance(item, list) and len(item) == 2 and _is_int(item[1]) and item[1] >= 0):
                raise RecordEntryError(f"{field}[2][{i}]", item, "[kind, a whole number of bytes >= 0]")
            _text(f"{field}[2][{i}][0]", item[0])
        if not isinstance(op[3], bool):
            raise RecordEntryError(f"{field}[3]", op[3], "true (to the cloud) or false (from it)")
    elif kind in ("u", "d"):
        _int_in(f"{field}[1]", op[1], 0, n_clients, clients)
        _amount(f"{field}[2]", op[2])
        if not _is_int(op[2]):
            raise RecordEntryError(f"{field}[2]", op[2], "a whole number of bytes >= 0")
        _text(f"{field}[3]", op[3])
        if kind == "u" and op[4] is not None and not isinstance(op[4], (str, int)):
            raise RecordEntryError(f"{field}[4]", op[4], "an integer, a string or null (a coherence block)")
        event(length - 1, op[-1])
    elif kind == "b":
        if not _is_int(op[1]) or op[1] < 0:
            raise RecordEntryError(f"{field}[1]", op[1], "a whole number of bytes >= 0")
        _text(f"{field}[2]", op[2])
        event(3, op[3])
    elif kind == "p":
        event(1, op[1])
        _int_in(f"{field}[2]", op[2], 1, n_processes, pids.replace("[0,", "[1,"))
    elif kind == "e":
        event(1, op[1])
    elif kind == "a":
        for i, h in enumerate(_list(f"{field}[1]", op[1], "a list of event numbers")):
            if not _is_int(h) or h not in defined:
                raise RecordEntryError(f"{field}[1][{i}]", h, events)
        event(2, op[2])
    elif kind == "al" and op[1] is not None:
        for i, pair in enumerate(_list(f"{field}[1]", op[1], "a list of [client, bits] or null")):
            if not isinstance(pair, list) or len(pair) != 2:
                raise RecordEntryError(f"{field}[1][{i}]", pair, "[client, bits]")
            _int_in(f"{field}[1][{i}][0]", pair[0], 0, n_clients, clients)
            _amount(f"{field}[1][{i}][1]", pair[1])
    elif kind in ("y", "t"):
        event(1, op[1])
        _outcome(f"{field}[2]", op[2])
    elif kind == "g":
        for i, pair in enumerate(_list(f"{field}[1]", op[1], "a list of [client, event number]")):
            if not isinstance(pair, list) or len(pair) != 2:
                raise RecordEntryError(f"{field}[1][{i}]", pair, "[client, event number]")
            _int_in(f"{field}[1][{i}][0]", pair[0], 0, n_clients, clients)
            if not _is_int(pair[1]) or pair[1] not in defined:
                raise RecordEntryError(f"{field}[1][{i}][1]", pair[1], events)
        if not _is_int(op[2]) or op[2] < 1:
            raise RecordEntryError(f"{field}[2]", op[2], "an integer >= 1 (local iterations)")
        if op[3] is not None:
            for i, k in enumerate(_list(f"{field}[3]", op[3], "a list of client ids or null")):
                _int_in(f"{field}[3][{i}]", k, 0, n_clients, clients)
    elif kind == "w":
        streams = _list(f"{field}[1]", op[1], "a list of stream names")
        for i, name in enumerate(streams):
            _text(f"{field}[1][{i}]", name)
        return [str(s) for s in streams]
    elif kind == "r":
        _outcome(f"{field}[1]", op[1])
    return []


@dataclass(frozen=True)
class RecordedTotals:
    """What one recorded round asked of the clock.

    Attributes
    ----------
    uploads : int
        Upload calls.
    uplink_bytes : int
        Their bytes, one attempt each.
    upload_bytes_min, upload_bytes_max : int
        The smallest and the largest upload (0 without one).
    downlink_bytes : int
        Unicast bytes plus each broadcast's bytes times the cohort's size.
    client_flops, server_flops : float
    """

    uploads: int
    uplink_bytes: int
    upload_bytes_min: int
    upload_bytes_max: int
    downlink_bytes: int
    client_flops: float
    server_flops: float

    @classmethod
    def of(cls, record: RoundRecord) -> RecordedTotals:
        """The totals of ``record`` (checked by :func:`checked_round`)."""
        ops = [op for process in record.processes for op in process]
        up = [int(op[2]) for op in ops if op[0] == "u"]
        down = sum(int(op[2]) for op in ops if op[0] == "d") + \
            sum(int(op[1]) * len(record.cohort) for op in ops if op[0] == "b")
        return cls(len(up), sum(up), min(up, default=0), max(up, default=0), down,
                   math.fsum(float(op[2]) for op in ops if op[0] == "c" and op[1] != SERVER),
                   math.fsum(float(op[2]) for op in ops if op[0] == "c" and op[1] == SERVER))
