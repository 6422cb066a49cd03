"""Mobility traces: SUMO FCD XML, ns-2 movement files and BonnMotion ``.movements``, read as timed
waypoints per node, and the ``trace`` mobility that replays one.

A trace file comes from elsewhere (a traffic simulator, a generator, a colleague), so it is read
as untrusted data: bounded in size (:data:`MAX_FILE_BYTES`, also after gzip), XML with the
standard library's expat parser with every DOCTYPE refused (so no entity is ever declared or
expanded, and nothing is fetched), numbers as plain decimal literals that must be finite, and
nothing read ever executed.  Every refusal is a :class:`MobilityTraceError` of one line naming the
file, the line, what was found and what is allowed.

Formats (``format``; ``auto`` tells them by the file's name)
---------------------------------------------------------------
``sumo_fcd``   SUMO's floating car data (``--fcd-output``; ``*.xml``, ``*.xml.gz``):
               ``<fcd-export><timestep time="T"><vehicle id=".." x=".." y=".." .../>`` with
               ``<person>`` and ``<container>`` read like ``<vehicle>`` (the elements of SUMO's
               ``fcd_file.xsd``); ``x`` and ``y`` in metres (not a ``--fcd-output.geo`` file, whose
               x and y are degrees); ``z``, ``speed``, ``angle`` and the other attributes are not
               read.  Timesteps must not go back in time; a node is listed at most once per timestep.
``ns2``        ns-2 movement scripts (``setdest``'s output, BonnMotion's ns-2 export;
               ``*.ns_movements``, ``*.ns2``, ``*.tcl``): ``$node_(i) set X_ x`` / ``Y_`` / ``Z_`` for
               each node's position at t = 0 and ``$ns_ at t "$node_(i) setdest x y speed"``: from its
               position at ``t`` the node moves straight to ``(x, y)`` at ``speed`` m/s and stops
               there, unless a later ``setdest`` (of a time not earlier, per node) turns it first.
               ``Z_`` is checked but not used; ``#`` comments, blank lines and the ``$god_`` lines of
               ``setdest``'s output are skipped; anything else is refused.
``bonnmotion`` BonnMotion's native files (``*.movements``, ``*.movements.gz``): line ``i`` is node
               ``i`` (from 0), ``t1 x1 y1 t2 x2 y2 ...``: the node is at ``(xk, yk)`` at ``tk``
               and moves linearly in between (2-D files only: the 4-tuples of a 3-D file are not read).

Times are seconds >= 0 and must not decrease along a node's waypoints.  Between two waypoints a
node moves linearly; before its first waypoint it holds the first position, after its last the
last (a SUMO vehicle that left the network stays where it was last seen).  At a time listed twice
(a jump), the later waypoint holds from that time on.  Node ids are strings (ns-2 and BonnMotion
numbers as written); "id order" is natural order (``veh2`` before ``veh10``, numbers by value).
"""
from __future__ import annotations

import bisect
import gzip
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from xml.parsers import expat

import numpy as np

from sfl_sim.channel.large_scale.mobility import MOBILITY, _into_annulus
from sfl_sim.channel.large_scale.timed_mobility import _check_positions, _check_t, _TimedBase
from sfl_sim.channel.limits import CELL_RADIUS_M, MIN_DISTANCE_M
from sfl_sim.errors import UserError
from sfl_sim.kit.checks import check_scalar, check_state_keys
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, Field, ParamsModel

__all__ = ["MobilityTraceError", "NodeTrack", "MobilityTrace", "FORMATS", "SUFFIXES", "MAX_FILE_BYTES",
           "read_mobility_trace", "read_sumo_fcd", "read_ns2", "read_bonnmotion", "format_of", "TraceMobility",
           "natural_key"]

#: The largest trace a reader takes, bytes (after gzip). Our choice: an hour of 1 s FCD for a
#: thousand vehicles is about 500 MB of XML; the bound stops a runaway file or a gzip bomb.
MAX_FILE_BYTES = 1024**3
#: Characters of a value from a file shown in a message.
_SHOWN_CHARS = 40

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


class MobilityTraceError(UserError, ValueError):
    """A mobility trace cannot be read or used: one line naming the file, the line or element,
    what was found and what is allowed."""


def _shown(text: Any) -> str:
    value = repr(text) if isinstance(text, str) else repr(str(text))
    return value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS - 4] + "...'"


def natural_key(node: str) -> tuple[tuple[Any, ...], str]:
    """Sort key of a node id: digit runs compared as numbers (``veh2`` < ``veh10``), ties by the id."""
    parts = re.split(r"(\d+)", node)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), node


@dataclass(frozen=True)
class NodeTrack:
    """One node's waypoints.

    Attributes
    ----------
    node : str
        The node's id in the file.
    times_s : numpy.ndarray, shape (m,)
        Waypoint times, seconds, non-decreasing.
    positions_m : numpy.ndarray, shape (m, 2)
        Waypoint positions in the file's coordinates, metres.
    """

    node: str
    times_s: np.ndarray
    positions_m: np.ndarray

    def position_at(self, t_s: float) -> np.ndarray:
        """The position at trace time ``t_s`` (shape (2,)): a waypoint's exactly at its time,
        linear in between, held before the first and after the last."""
        times = self.times_s
        i = bisect.bisect_right(times, t_s) - 1
        if i < 0:
            return self.positions_m[0].copy()
        if i >= times.size - 1 or t_s == times[i]:
            return self.positions_m[i].copy()
        p0, p1 = self.positions_m[i], self.positions_m[i + 1]
        return p0 + (p1 - p0) * ((t_s - times[i]) / (times[i + 1] - times[i]))

    def velocity_at(self, t_s: float) -> np.ndarray:
        """The velocity at ``t_s`` (shape (2,), m/s): the segment's that starts at or before
        ``t_s``; zero before the first and from the last waypoint on."""
        times = self.times_s
        i = bisect.bisect_right(times, t_s) - 1
        if i < 0 or i >= times.size - 1:
            return np.zeros(2)
        return (self.positions_m[i + 1] - self.positions_m[i]) / (times[i + 1] - times[i])

    def mean_speed_m_per_s(self) -> float:
        """Path length over the time from the first to the last waypoint, m/s (0 for one waypoint
        or a zero span)."""
        span = float(self.times_s[-1] - self.times_s[0])
        if span <= 0:
            return 0.0
        steps = np.diff(self.positions_m, axis=0)
        return float(np.hypot(steps[:, 0], steps[:, 1]).sum() / span)


@dataclass(frozen=True)
class MobilityTrace:
    """The nodes of a trace file, in id order (:func:`natural_key`).

    Attributes
    ----------
    path : str
    format : str
        ``sumo_fcd``, ``ns2`` or ``bonnmotion``.
    tracks : tuple of NodeTrack
    """

    path: str
    format: str
    tracks: tuple[NodeTrack, ...]

    @property
    def node_ids(self) -> list[str]:
        """The nodes' ids, in id order."""
        return [t.node for t in self.tracks]

    def track(self, node: str) -> NodeTrack:
        """The node's track.

        Raises
        ------
        MobilityTraceError
            For a node the file does not have.
        """
        for t in self.tracks:
            if t.node == node:
                return t
        ids = self.node_ids
        shown = ", ".join(ids[:8]) + (f", ... ({len(ids)} in all)" if len(ids) > 8 else "")
        raise MobilityTraceError(f"{self.path}: nodes lists {_shown(node)}, which the trace does not have; "
                                 f"allowed: its nodes {shown}")


# ------------------------------------------------------------------------------------------ reading
def _read_text(path: Path, what: str) -> str:
    """The file's text (gunzipped for ``*.gz``), bounded by :data:`MAX_FILE_BYTES`, as UTF-8."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise MobilityTraceError(f"{path}: {path.stat().st_size} bytes; allowed: {what} of at most "
                                     f"{MAX_FILE_BYTES} bytes")
        with open(path, "rb") as raw_file:
            if path.name.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw_file) as unzipped:
                    raw = unzipped.read(MAX_FILE_BYTES + 1)
            else:
                raw = raw_file.read(MAX_FILE_BYTES + 1)
    except (OSError, EOFError) as exc:  # unreadable, a folder, or a broken gzip stream
        reason = " ".join(str(getattr(exc, "strerror", None) or exc).split())[:80]
        raise MobilityTraceError(f"{path}: cannot be read ({type(exc).__name__}: {reason}); allowed: a readable "
                                 f"file, {what}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise MobilityTraceError(f"{path}: more than {MAX_FILE_BYTES} bytes once unzipped; allowed: {what} of at "
                                 f"most {MAX_FILE_BYTES} bytes")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise MobilityTraceError(f"{path} line {line}: byte {raw[exc.start]:#04x} is not UTF-8 text; "
                                 f"allowed: {what} in UTF-8") from None


def _number(where: str, field: str, text: Any, *, time: bool = False) -> float:
    """A decimal literal as a finite float (a time: also >= 0), else the one-line error."""
    value = float(text) if isinstance(text, str) and _NUMBER.fullmatch(text.strip()) else math.nan
    if not math.isfinite(value) or (time and value < 0):
        allowed = "a finite number of seconds >= 0" if time else "a finite decimal number (metres, m/s)"
        raise MobilityTraceError(f"{where}: {field} got {_shown(text)}; allowed: {allowed}")
    return value


class _Tracks:
    """Waypoints per node as they are read, refusing a time that goes back."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}
        self.points: dict[str, list[tuple[float, float]]] = {}

    def add(self, where: str, node: str, t_s: float, x_m: float, y_m: float) -> None:
        times = self.times.setdefault(node, [])
        if times and t_s < times[-1]:
            raise MobilityTraceError(f"{where}: node {_shown(node)} at time {t_s:g} s after time {times[-1]:g} s; "
                                     f"allowed: times that do not decrease along a node's waypoints")
        times.append(t_s)
        self.points.setdefault(node, []).append((x_m, y_m))

    def trace(self, path: Path, fmt: str, empty_why: str) -> MobilityTrace:
        if not self.times:
            raise MobilityTraceError(f"{path}: no node has a waypoint ({empty_why}); allowed: a {fmt} trace with "
                                     f"at least one node")
        order = sorted(self.times, key=natural_key)
        tracks = tuple(NodeTrack(node, np.asarray(self.times[node], dtype=float),
                                 np.asarray(self.points[node], dtype=float).reshape(-1, 2)) for node in order)
        return MobilityTrace(str(path), fmt, tracks)


# ------------------------------------------------------------------------------------- SUMO FCD XML
_FCD_NODES = ("vehicle", "person", "container")


def read_sumo_fcd(path: Path) -> MobilityTrace:
    """The nodes of a SUMO FCD file (see the module docstring).

    Raises
    ------
    MobilityTraceError
        One line for a DOCTYPE, broken XML, an unknown element, a missing or non-numeric
        attribute, a time going back, or a node twice in one timestep.
    """
    text = _read_text(path, "a SUMO FCD XML file")
    parser = expat.ParserCreate()
    tracks = _Tracks()
    depth: list[str] = []
    now: dict[str, Any] = {"time": None, "seen": set(), "last": None}
    kinds: dict[str, str] = {}

    def where() -> str:
        return f"{path} line {parser.CurrentLineNumber}"

    def refuse_doctype(*_: Any) -> None:
        raise MobilityTraceError(f"{where()}: a DOCTYPE declaration; allowed: plain XML without a DOCTYPE "
                                 f"(entities are never read)")

    def start(name: str, attrs: dict[str, str]) -> None:
        parent = depth[-1] if depth else None
        allowed = {None: ("fcd-export",), "fcd-export": ("timestep",), "timestep": _FCD_NODES}.get(parent, ())
        if name not in allowed:
            inside = f"inside <{parent}>" if parent else "as the root"
            raise MobilityTraceError(f"{where()}: element <{_shown(name)[1:-1]}> {inside}; allowed: "
                                     f"{', '.join(f'<{a}>' for a in allowed) or 'no element'} there")
        depth.append(name)
        if name == "timestep":
            if "time" not in attrs:
                raise MobilityTraceError(f"{where()}: <timestep> has no time attribute; allowed: "
                                         f"<timestep time=\"SECONDS\">")
            t = _number(f"{where()} <timestep>", "time", attrs["time"], time=True)
            if now["last"] is not None and t < now["last"]:
                raise MobilityTraceError(f"{where()}: <timestep> time {t:g} s after time {now['last']:g} s; allowed: "
                                         f"timesteps that do not go back in time")
            if t != now["last"]:
                now["seen"] = set()
            now["time"] = now["last"] = t
        elif name in _FCD_NODES:
            node = attrs.get("id")
            if node is None or node == "":
                raise MobilityTraceError(f"{where()}: <{name}> has no id attribute; allowed: <{name} id=\"..\" "
                                         f"x=\"..\" y=\"..\">")
            for field in ("x", "y"):
                if field not in attrs:
                    raise MobilityTraceError(f"{where()}: <{name} id={_shown(node)}> has no {field} attribute; "
                                             f"allowed: x and y in metres (SUMO's default FCD attributes)")
            if kinds.setdefault(node, name) != name:
                raise MobilityTraceError(f"{where()}: id {_shown(node)} is a <{name}> and a <{kinds[node]}>; "
                                         f"allowed: one id per node")
            if node in now["seen"]:
                raise MobilityTraceError(f"{where()}: <{name} id={_shown(node)}> twice at time {now['time']:g} s; "
                                         f"allowed: a node once per timestep")
            now["seen"].add(node)
            at = f"{where()} <{name} id={_shown(node)}>"
            tracks.add(at, node, now["time"], _number(at, "x", attrs["x"]), _number(at, "y", attrs["y"]))

    def end(name: str) -> None:
        depth.pop()

    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_doctype
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        raise MobilityTraceError(f"{path} line {exc.lineno}: not well-formed XML "
                                 f"({expat.ErrorString(exc.code)}); allowed: a SUMO FCD XML file") from None
    return tracks.trace(path, "sumo_fcd", "no <vehicle>, <person> or <container> element")


# ----------------------------------------------------------------------------------------- ns-2
_NS2_SET = re.compile(r"\$node_\((\d+)\)\s+set\s+([XYZ])_\s+(\S+)")
_NS2_SETDEST = re.compile(r"\$ns_\s+at\s+(\S+)\s+\"\$node_\((\d+)\)\s+setdest\s+(\S+)\s+(\S+)\s+(\S+)\s*\"")
_NS2_GOD = re.compile(r"(\$ns_\s+at\s+\S+\s+\")?\$god_\s")


def _ns2_waypoints(start_m: tuple[float, float], moves: list[tuple[str, float, float, float, float]],
                   ) -> tuple[list[float], list[tuple[float, float]]]:
    """A node's waypoints from its position at t = 0 and its ``setdest`` commands in file order
    (times not decreasing): only the last segment can still be under way at a command's time."""
    times, points = [0.0], [start_m]
    for _, t, x, y, speed in moves:
        if times[-1] > t:  # the move under way is cut at t, where the node is now
            (t0, t1), (p0, p1) = times[-2:], points[-2:]
            f = (t - t0) / (t1 - t0)
            if f == 0.0:  # turned at the start of the move: the move never happened
                times.pop()
                points.pop()
            else:
                times[-1], points[-1] = t, (p0[0] + (p1[0] - p0[0]) * f, p0[1] + (p1[1] - p0[1]) * f)
        elif times[-1] < t:
            times.append(t)
            points.append(points[-1])
        distance = math.hypot(x - points[-1][0], y - points[-1][1])
        if speed > 0 and distance > 0:
            times.append(t + distance / speed)
            points.append((x, y))
    return times, points


def read_ns2(path: Path) -> MobilityTrace:
    """The nodes of an ns-2 movement file (see the module docstring).

    Raises
    ------
    MobilityTraceError
        One line for a line that is no movement command, a non-numeric or non-finite value, a
        negative speed, a node set twice or moved without a start position, or a node's time going
        back.
    """
    text = _read_text(path, "an ns-2 movement file")
    start: dict[str, dict[str, float]] = {}
    moves: dict[str, list[tuple[str, float, float, float, float]]] = {}
    first_line: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        at = f"{path} line {number}"
        if not line or line.startswith("#") or _NS2_GOD.match(line):
            continue
        if m := _NS2_SET.fullmatch(line):
            node, axis = m.group(1), m.group(2)
            coords = start.setdefault(node, {})
            if axis in coords:
                raise MobilityTraceError(f"{at}: node {node} sets {axis}_ a second time; allowed: each of X_, Y_, Z_ "
                                         f"once per node (its position at t = 0)")
            coords[axis] = _number(at, f"{axis}_", m.group(3))
            first_line.setdefault(node, at)
        elif m := _NS2_SETDEST.fullmatch(line):
            node = m.group(2)
            t = _number(at, "time", m.group(1), time=True)
            x, y = _number(at, "x", m.group(3)), _number(at, "y", m.group(4))
            speed = _number(at, "speed", m.group(5))
            if speed < 0:
                raise MobilityTraceError(f"{at}: speed got {_shown(m.group(5))}; allowed: a speed >= 0 m/s")
            earlier = moves.setdefault(node, [])
            if earlier and t < earlier[-1][1]:
                raise MobilityTraceError(f"{at}: node {node} at time {t:g} s after time {earlier[-1][1]:g} s; "
                                         f"allowed: setdest times that do not decrease per node")
            earlier.append((at, t, x, y, speed))
        else:
            raise MobilityTraceError(f"{at}: {_shown(line)} is not an ns-2 movement command; allowed: "
                                     f"'$node_(i) set X_ x' (Y_, Z_), '$ns_ at t \"$node_(i) setdest x y speed\"', "
                                     f"comments (#) and $god_ lines")
    tracks = _Tracks()
    for node, coords in start.items():
        missing = [a for a in ("X", "Y") if a not in coords]
        if missing:
            raise MobilityTraceError(f"{first_line[node]}: node {node} has no {missing[0]}_ position; allowed: "
                                     f"'$node_({node}) set X_ x' and 'set Y_ y' for every node")
    for node, node_moves in moves.items():
        if node not in start:
            raise MobilityTraceError(f"{node_moves[0][0]}: setdest for node {node}, which has no start position "
                                     f"(unknown node); allowed: nodes with '$node_({node}) set X_ x' and 'set Y_ y'")
    for node, coords in start.items():
        times, points = _ns2_waypoints((coords["X"], coords["Y"]), moves.get(node, []))
        for t, (x, y) in zip(times, points, strict=True):
            tracks.add(first_line[node], node, t, x, y)
    return tracks.trace(path, "ns2", "no '$node_(i) set X_' line")


# ------------------------------------------------------------------------------------ BonnMotion
def read_bonnmotion(path: Path) -> MobilityTrace:
    """The nodes of a BonnMotion ``.movements`` file (see the module docstring).

    Raises
    ------
    MobilityTraceError
        One line for a line whose count of numbers is not a multiple of 3, a non-numeric or
        non-finite value, a time going back, or a blank line between nodes.
    """
    text = _read_text(path, "a BonnMotion .movements file")
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    tracks = _Tracks()
    for number, line in enumerate(lines, start=1):
        at = f"{path} line {number}"
        fields = line.split()
        if not fields:
            raise MobilityTraceError(f"{at}: a blank line; allowed: one line per node (line i is node i - 1), "
                                     f"blank lines only at the end")
        if len(fields) % 3:
            raise MobilityTraceError(f"{at}: {len(fields)} numbers; allowed: 't x y' triples (a multiple of 3; "
                                     f"3-D files with 't x y z' are not read)")
        node = str(number - 1)
        for k in range(0, len(fields), 3):
            t = _number(f"{at} waypoint {k // 3 + 1}", "t", fields[k], time=True)
            x = _number(f"{at} waypoint {k // 3 + 1}", "x", fields[k + 1])
            y = _number(f"{at} waypoint {k // 3 + 1}", "y", fields[k + 2])
            tracks.add(f"{at} waypoint {k // 3 + 1}", node, t, x, y)
    return tracks.trace(path, "bonnmotion", "the file is empty")


#: Every reader by its format name.
FORMATS: dict[str, Callable[[Path], MobilityTrace]] = {
    "sumo_fcd": read_sumo_fcd, "ns2": read_ns2, "bonnmotion": read_bonnmotion}
#: Name endings -> format, for ``format: auto`` (first match wins).
SUFFIXES: tuple[tuple[str, str], ...] = (
    (".movements", "bonnmotion"), (".movements.gz", "bonnmotion"), (".xml", "sumo_fcd"), (".xml.gz", "sumo_fcd"),
    (".ns_movements", "ns2"), (".ns2", "ns2"), (".tcl", "ns2"), (".ns_movements.gz", "ns2"))


def format_of(path: Any) -> str:
    """The format ``auto`` reads ``path`` as, from its name (:data:`SUFFIXES`).

    Raises
    ------
    MobilityTraceError
        For a name none of the endings fits.
    """
    name = Path(path).name.lower()
    for suffix, fmt in SUFFIXES:
        if name.endswith(suffix):
            return fmt
    endings = ", ".join(s for s, _ in SUFFIXES)
    raise MobilityTraceError(f"{path}: format 'auto' cannot tell the format from the name; allowed: a name "
                             f"ending in {endings}, or format {', '.join(FORMATS)}")


def read_mobility_trace(path: Any, format: str = "auto") -> MobilityTrace:
    """The nodes of the trace at ``path`` in ``format`` (a key of :data:`FORMATS`, or ``auto``).

    Raises
    ------
    MobilityTraceError
        One line when the file is missing or its content is not allowed.
    """
    path = Path(path)
    if format != "auto" and format not in FORMATS:
        raise MobilityTraceError(f"{path}: format got {_shown(format)}; allowed: auto, {', '.join(FORMATS)}")
    fmt = format_of(path) if format == "auto" else format
    if not path.is_file():
        raise MobilityTraceError(f"{path}: no such file; allowed: an existing {fmt} trace file (a path relative "
                                 f"to the working directory, or absolute)")
    return FORMATS[fmt](path)


class _Lookup:
    """The clients' tracks concatenated, for a lookup of every client at one time in a few array
    operations (a binary search run for all clients at once, the same index as ``bisect_right``
    per track, and the same interpolation as :meth:`NodeTrack.position_at`)."""

    def __init__(self, tracks: Sequence[NodeTrack]) -> None:
        self.lengths = np.array([t.times_s.size for t in tracks], dtype=np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int64)
        self.times_s = np.concatenate([t.times_s for t in tracks])
        self.positions_m = np.concatenate([t.positions_m for t in tracks]).reshape(-1, 2)

    def segment(self, t_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Per client: the index (into the concatenation) of the last waypoint at or before
        ``t_s``, clipped to its first; and whether a segment starts there (not its last waypoint)."""
        lo = np.zeros_like(self.lengths)
        hi = self.lengths.copy()
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            right = active & (self.times_s[self.offsets + np.minimum(mid, self.lengths - 1)] <= t_s)
            lo = np.where(right, mid + 1, lo)
            hi = np.where(active & ~right, mid, hi)
        i = lo - 1  # bisect_right - 1: -1 before the first waypoint
        inside = (i >= 0) & (i < self.lengths - 1)
        return self.offsets + np.clip(i, 0, self.lengths - 1), inside

    def positions_at(self, t_s: float) -> np.ndarray:
        at, inside = self.segment(t_s)
        pos = self.positions_m[at].copy()
        moving = inside & (self.times_s[at] != t_s)
        if moving.any():
            k = at[moving]
            t0, t1 = self.times_s[k], self.times_s[k + 1]
            p0, p1 = self.positions_m[k], self.positions_m[k + 1]
            pos[moving] = p0 + (p1 - p0) * ((t_s - t0) / (t1 - t0))[:, None]
        return pos

    def velocities_at(self, t_s: float) -> np.ndarray:
        at, inside = self.segment(t_s)
        vel = np.zeros((at.size, 2))
        if inside.any():
            k = at[inside]
            span_s = self.times_s[k + 1] - self.times_s[k]
            vel[inside] = (self.positions_m[k + 1] - self.positions_m[k]) / span_s[:, None]
        return vel


# ---------------------------------------------------------------------------------- the component
@MOBILITY.register("trace")
class TraceMobility(_TimedBase, Component):
    """Replays a mobility trace: client ``i`` follows a node of the file.

    The file is read when the component is built (a malformed file is refused then, in one line).
    :meth:`start` ignores the placement's positions and returns the nodes' at t = 0; a client's
    position at simulated time ``t`` is its node's at trace time ``t + time_offset_s``, minus
    ``origin_m``: the file's waypoints read back exactly at their times, linear in between, held
    before the first and after the last.  Given a cell (``radius_m``, ``min_distance_m`` to
    :meth:`start` or :meth:`step`), a position outside its annulus is pulled radially onto the
    nearest edge, as every mobility model keeps its clients (velocities stay the file's).

    The ``step`` form (a cell that moves clients between rounds) replays the trace on its own
    clock from t = 0; its first call replaces the placement by the trace.

    Raises
    ------
    MobilityTraceError
        For a missing or malformed file, an unknown node in ``nodes``, or (at :meth:`start`) fewer
        nodes than clients.
    """

    class Params(ParamsModel):
        path: Annotated[str, Field(min_length=1), Doc(
            "The trace file (relative to the working directory, or absolute; ``.gz`` is unzipped).")]
        format: Annotated[Literal["auto", "sumo_fcd", "ns2", "bonnmotion"], Doc(
            "Its format: ``auto`` by the name (``.xml``: sumo_fcd, ``.movements``: bonnmotion, "
            "``.ns_movements``/``.ns2``/``.tcl``: ns2).")] = "auto"
        nodes: Annotated[Sequence[str | int] | None, Doc(
            "The node each client follows (client i the i-th entry, as many as clients, each once); "
            "default: the first n nodes in id order (natural order: ``veh2`` before ``veh10``).")] = None
        origin_m: Annotated[Sequence[float], Field(min_length=2, max_length=2), Doc(
            "The trace coordinates (x, y) of the base station, metres: positions are the file's minus "
            "this point.")] = (0.0, 0.0)
        time_offset_s: Annotated[float, Field(allow_inf_nan=False), Doc(
            "Trace time at simulated time 0, seconds (e.g. 3600 to start an hour into the file).")] = 0.0

    params: Params

    def __post_init__(self) -> None:
        self.trace = read_mobility_trace(self.params.path, self.params.format)
        if self.params.nodes is not None:
            names = [str(n) for n in self.params.nodes]
            seen: set[str] = set()
            for name in names:
                if name in seen:
                    raise MobilityTraceError(f"{self.trace.path}: nodes lists {_shown(name)} twice; allowed: each "
                                             f"node once (one client per node)")
                seen.add(name)
                self.trace.track(name)  # an unknown node is refused here
        x0, y0 = (float(v) for v in self.params.origin_m)
        if not (math.isfinite(x0) and math.isfinite(y0)):
            raise ValueError(f"origin_m: got {list(self.params.origin_m)!r}; allowed: two finite numbers (metres)")
        self._origin_m = np.array([x0, y0])
        self.reset()

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called (since the last reset)."""
        return self._tracks is not None

    def reset(self) -> None:
        """Forget the clients' nodes and the cell (the next :meth:`start` or :meth:`step` begins again)."""
        self._tracks: list[NodeTrack] | None = None
        self._lookup: _Lookup | None = None
        self._radius_m: float | None = None
        self._min_distance_m: float | None = None
        self._reset_clock()

    def _select(self, n: int) -> list[NodeTrack]:
        if self.params.nodes is not None:
            if len(self.params.nodes) != n:
                raise MobilityTraceError(f"{self.trace.path}: nodes lists {len(self.params.nodes)} nodes for {n} "
                                         f"clients; allowed: one node per client ({n})")
            return [self.trace.track(str(node)) for node in self.params.nodes]
        if len(self.trace.tracks) < n:
            raise MobilityTraceError(f"{self.trace.path}: {len(self.trace.tracks)} nodes for {n} clients; allowed: "
                                     f"a trace with at least as many nodes as clients")
        return list(self.trace.tracks[:n])

    def start(self, positions_m: Any, rng: Any = None,
              radius_m: float | None = None, min_distance_m: float | None = None) -> np.ndarray:
        """Map the ``n`` clients of ``positions_m`` (shape (n, 2); only its length is used) to nodes
        and return their positions at t = 0.  ``rng`` is not used (a trace draws nothing)."""
        n = _check_positions(positions_m).shape[0]
        tracks = self._select(n)
        self.reset()
        self._tracks, self._lookup = tracks, _Lookup(tracks)
        if radius_m is not None:
            self._radius_m = CELL_RADIUS_M.check("radius_m", radius_m)
            self._min_distance_m = MIN_DISTANCE_M.check("min_distance_m", min_distance_m or 0.0)
            if self._min_distance_m >= self._radius_m:
                raise ValueError(f"min_distance_m must be < radius_m ({self._radius_m:g} m), got {min_distance_m!r}")
        return self.positions_at(0.0)

    def _trace_time(self, t_s: Any) -> float:
        t = _check_t(t_s)
        self._require_started()
        return t + self.params.time_offset_s

    def positions_at(self, t_s: float) -> np.ndarray:
        """Positions at simulated time ``t_s`` (shape (n, 2), m, relative to the base station)."""
        u = self._trace_time(t_s)
        assert self._lookup is not None
        pos = self._lookup.positions_at(u) - self._origin_m
        if self._radius_m is not None:
            pos = _into_annulus(pos, self._radius_m, self._min_distance_m or 0.0)
        return pos

    def velocities_at(self, t_s: float) -> np.ndarray:
        """Velocities at ``t_s`` (shape (n, 2), m/s): the file's segment velocity (zero before a
        node's first waypoint and from its last on)."""
        u = self._trace_time(t_s)
        assert self._lookup is not None
        return self._lookup.velocities_at(u)

    def nominal_speed_m_per_s(self) -> np.ndarray:
        """Each client's node's mean speed over its trace (path length over the span from its first
        to its last waypoint), m/s."""
        self._require_started()
        assert self._tracks is not None
        return np.array([track.mean_speed_m_per_s() for track in self._tracks], dtype=float)

    def state_dict(self) -> dict[str, Any]:
        """``n_clients`` (None before :meth:`start`), ``radius_m``, ``min_distance_m`` and
        ``clock_s`` (the :meth:`step` clock); the trace itself is the file."""
        return {"n_clients": None if self._tracks is None else len(self._tracks), "radius_m": self._radius_m,
                "min_distance_m": self._min_distance_m, "clock_s": self._clock_s}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`.

        Raises
        ------
        ValueError
            For other keys or values out of range.
        """
        owner = type(self).__name__
        check_state_keys(owner, state, ("n_clients", "radius_m", "min_distance_m", "clock_s"))
        self.reset()
        if state["n_clients"] is None:
            return
        self.start(np.zeros((int(state["n_clients"]), 2)), None, state["radius_m"], state["min_distance_m"])
        self._clock_s = check_scalar(f"{owner} state['clock_s']", state["clock_s"], minimum=0.0)

