"""Reading untrusted device trace files: bounded in size, time and message length.

A trace file comes from elsewhere (a download, a colleague, a generator gone wrong), so every
reader of :mod:`sfl_sim.clients.availability` goes through these helpers:

- :func:`read_bytes` refuses a file larger than :data:`MAX_FILE_BYTES` before reading it;
- :func:`decode_text` and :func:`csv_rows` turn undecodable bytes, an over-long cell and any CSV
  syntax error into one line naming the file and the line;
- :func:`load_plain_dict` reads a pickle with :class:`PlainUnpickler`, which refuses every global
  (no code runs), after refusing any tuple or frozenset in it (a dict key or set item is hashed
  whole: a small pickle of tuples that share each other would hash for ever), and
  :class:`ItemBudget` bounds the values a reader walks to the file's bytes, so
  a small pickle whose containers share one another (each level doubling what a walk visits)
  is refused instead of expanding;
- :func:`shown` is the only way a value from a file enters a message: a bounded ``repr`` (depth,
  items and characters), so a message is never larger than a line whatever the file holds.

Every refusal is a :class:`TraceError` of one line: the file, the line or key, the value and what
is allowed.
"""
from __future__ import annotations

import csv
import io
import pickle
import pickletools
import reprlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sfl_sim.errors import UserError

__all__ = ["TraceError", "RefusedGlobal", "PlainUnpickler", "MAX_FILE_BYTES", "read_bytes", "decode_text",
           "csv_rows", "load_plain_dict", "ItemBudget", "shown"]

#: The largest trace file a reader loads, bytes (FedScale's own traces are tens of MB).
MAX_FILE_BYTES = 512 * 1024**2
#: Characters of a value from a file shown in a message.
SHOWN_CHARS = 60

_PLAIN = "plain data: dicts, lists, numbers, strings"
#: Opcodes that build a tuple or a frozenset.  Both are hashable containers, which a dict key or a
#: set item is hashed whole, element by element: a few hundred bytes of tuples that share each
#: other (each level holding the one below twice) would take 2**60 steps to hash, inside the
#: unpickler.  No trace holds either, so a pickle that builds one is refused before it is loaded.
_HASHED_CONTAINERS = {"TUPLE": "a tuple", "TUPLE1": "a tuple", "TUPLE2": "a tuple", "TUPLE3": "a tuple",
                      "FROZENSET": "a frozenset"}
#: Opcodes that name or call code: scanning stops there, and the unpickler's ``find_class``
#: refuses the global, naming it.
_CODE = {"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "NEWOBJ", "NEWOBJ_EX", "BUILD", "EXT1", "EXT2", "EXT4",
         "PERSID", "BINPERSID"}


class TraceError(UserError, ValueError):
    """A trace file cannot be read (one line: file, line or key, value, what is allowed)."""


class _Shown(reprlib.Repr):
    """``reprlib`` with every expansion bounded: two levels, four items, short strings and numbers."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 2
        self.maxtuple = self.maxlist = self.maxarray = self.maxdict = self.maxset = self.maxfrozenset = \
            self.maxdeque = 4
        self.maxstring = self.maxlong = self.maxother = 40

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 128:  # repr would be slow, and refused past 4300 digits
            return f"<an integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)

    def repr_bytes(self, x: bytes, level: int) -> str:
        return repr(x[:self.maxstring]) + ("..." if len(x) > self.maxstring else "")

    repr_bytearray = repr_bytes

    def repr_instance(self, x: Any, level: int) -> str:
        if type(x) in (float, complex, bool, type(None)):  # bounded by their type
            return repr(x)
        return f"<{type(x).__name__}>"  # plain data holds no other type; never call an unknown repr


_SHOWN = _Shown()


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """A bounded ``repr`` of ``value`` (at most ``limit`` characters and a fixed amount of work),
    for messages about untrusted data."""
    text = _SHOWN.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _cut(text: str, limit: int = 80) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def read_bytes(path: Path, what: str) -> bytes:
    """The content of ``path``, refused in one line when larger than :data:`MAX_FILE_BYTES`.

    Parameters
    ----------
    path : pathlib.Path
    what : str
        What the file should be, for the message (``"an availability CSV"``).
    """
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise TraceError(f"{path}: {size} bytes; allowed: {what} of at most {MAX_FILE_BYTES} bytes")
        with open(path, "rb") as f:
            return f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:  # unreadable: permissions, a folder, a vanished file
        raise TraceError(f"{path}: cannot be read ({type(exc).__name__}: {_cut(exc.strerror or str(exc))}); "
                         f"allowed: a readable file, {what}") from None


def decode_text(path: Path, raw: bytes, what: str) -> str:
    """``raw`` as UTF-8 text (a leading byte-order mark dropped), else one line naming the line of
    the first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise TraceError(f"{path} line {line}: byte {raw[exc.start]:#04x} is not UTF-8 text; "
                         f"allowed: {what} in UTF-8") from None


def csv_rows(path: Path, text: str, header: str) -> Iterator[tuple[int, list[str]]]:
    """``(line number, cells)`` of each row of the CSV ``text``, header first; a malformed row (a
    cell longer than the csv module's field limit, a stray quote) is one line naming it."""
    reader = csv.reader(io.StringIO(text, newline=""))
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise TraceError(f"{path} line {reader.line_num}: not a CSV row ({exc}); allowed: rows of {header}") \
                from None
        yield reader.line_num, row


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle names a global (a class or a function), which :class:`PlainUnpickler` never loads."""


class PlainUnpickler(pickle.Unpickler):
    """An unpickler that refuses every global, so only plain data (dicts, lists, tuples, sets,
    numbers, strings, bytes, None) can load: no class is ever looked up, so no code runs.
    (:func:`load_plain_dict` also refuses tuples and frozensets before loading.)"""

    def find_class(self, module: str, name: str) -> Any:  # noqa: D102 - see the class
        raise RefusedGlobal(f"refuses global {shown(module, 80)}.{shown(name, 80)}")


class ItemBudget:
    """How many values a reader may still walk in a pickle of ``size_bytes`` bytes.

    Every value of plain data written once takes at least one byte of its pickle, so a reader
    that walks more values than the file has bytes is walking containers the pickle shares (a
    224-byte file can hold a list that holds itself twice, 60 levels deep); :meth:`spend` refuses
    it in one line before the walk grows.
    """

    def __init__(self, path: Path, size_bytes: int) -> None:
        self.path, self.left = path, max(int(size_bytes), 1)
        self.size_bytes = self.left

    def spend(self, items: int, at: str) -> None:
        """Count ``items`` more values, found at ``at`` (a key, for the message)."""
        self.left -= items
        if self.left < 0:
            raise TraceError(f"{self.path} {at}: the entries hold more values than the file has bytes "
                             f"({self.size_bytes}): its containers are shared; allowed: {_PLAIN}, each "
                             f"value written once")


def _scan(path: Path, raw: bytes) -> None:
    """Refuse a pickle that builds a tuple or a frozenset (see :data:`_HASHED_CONTAINERS`), reading
    its opcodes without building anything; one that is no pickle is refused too."""
    try:
        for opcode, _, position in pickletools.genops(raw):
            if opcode.name in _CODE:
                return
            if opcode.name in _HASHED_CONTAINERS:
                raise TraceError(f"{path} byte {position}: {_HASHED_CONTAINERS[opcode.name]}; allowed: {_PLAIN} "
                                 f"(no tuples or frozensets)")
    except TraceError:
        raise
    except Exception as exc:  # truncated or not a pickle at all: the reader's own words, bounded
        raise TraceError(f"{path}: not a readable pickle ({type(exc).__name__}: {_cut(str(exc))}); "
                         f"allowed: {_PLAIN}") from None


def load_plain_dict(path: Path, entries: str) -> tuple[dict[Any, Any], ItemBudget]:
    """The non-empty dict a FedScale pickle holds, read with :class:`PlainUnpickler` (no code
    runs), and the budget of values a reader may walk in it.

    Parameters
    ----------
    path : pathlib.Path
    entries : str
        What each client's entry holds, for the error line (e.g. ``"{'active', 'inactive'}"``).

    Raises
    ------
    TraceError
        One line: a file too large, a refused global, a file that is no pickle, or anything but a
        non-empty dict.
    """
    raw = read_bytes(path, "a pickle")
    _scan(path, raw)
    try:
        data = PlainUnpickler(io.BytesIO(raw)).load()
    except RefusedGlobal as exc:
        raise TraceError(f"{path}: {exc}; allowed: {_PLAIN}") from None
    except Exception as exc:  # truncated or not a pickle at all: the unpickler's own words, bounded
        raise TraceError(f"{path}: not a readable pickle ({type(exc).__name__}: {_cut(str(exc))}); "
                         f"allowed: {_PLAIN}") from None
    if not isinstance(data, dict) or not data:
        raise TraceError(f"{path}: got {'an empty dict' if isinstance(data, dict) else type(data).__name__}; "
                         f"allowed: a non-empty dict of client id -> {entries}")
    budget = ItemBudget(path, len(raw))
    budget.spend(len(data), "(its client ids)")
    return data, budget
