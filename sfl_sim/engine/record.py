"""What a round's clock needed, recorded as the round runs, so that it can be timed again without training.

A :class:`Recorder` hands the simulator a :class:`RecordingContext` for each round
(``sim.run_round(..., context=recorder.context)``).  It is a :class:`~sfl_sim.engine.RoundContext`
that, besides doing what the plain one does, writes down every primitive the algorithm's
processes call and every event they wait on, per process and in order: a :class:`RoundRecord`.
Nothing it does schedules an event or draws a number, so a recorded run times and trains exactly
as an unrecorded one.  :mod:`sfl_sim.engine.replay` runs the record's processes again on another
engine (another cell, other compute budgets...) and compares every decision with the record.

The record of a round
---------------------
``processes[0]`` is the round's own process; every process the round starts gets the next
number.  A process is a list of *ops*, lists whose first item says what happened:

==========================================  =====================================================
``["c", who, flops, what]``                 ``compute`` (``who`` -1: the server); with an edge and a
                                            ``client``, ``["c", who, flops, what, client]``
``["h", client, [[what, n], ...], up]``     ``backhaul`` (with an edge): bytes by kind, to the cloud or not
``["u", client, nbytes, what, block, h]``   ``upload``; ``h`` numbers its event in the round
``["d", client, nbytes, what, h]``          ``download``
``["b", nbytes, what, h]``                  ``broadcast``
``["p", h, pid]``                           ``process``: process ``pid`` started, its event ``h``
``["e", h]``                                ``event`` (one the algorithm triggers)
``["a", [h, ...], h]``                      ``all_of``
``["al", [[client, bits], ...] or None]``   ``allocate_uplink``
``["y", h, outcome]``                       waited on event ``h``; what it came to
``["t", h, outcome]``                       triggered event ``h`` (``succeed``) with that outcome
``["g", [[client, h], ...], T, kept]``      ``gather``: the straggler policy kept ``kept``, in order
``["w", [stream, ...]]``                    the process drew from these shared random streams
``["r", outcome]``                          the process returned that
``["i"]``                                   the round's end stopped the process here
==========================================  =====================================================

An *outcome* is ``"D"`` (delivered), ``"L:<reason>"`` (a :class:`~sfl_sim.engine.outcome.Lost`),
``None``, or ``"O"`` (any other value: a tensor, a reply...).  ``draws`` lists, per shared random
stream (the minibatch stream, torch's generator: :attr:`Recorder.streams`), the processes in the
order their steps drew from it: where training draws from one stream in simulated-event order,
this order is a decision the replay must reproduce.  A round the recorder cannot describe (an
event from outside the context, a read of the link's rate...) is marked ``unreplayable`` with the
reason; it trains as ever and only its re-timing is refused.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from sfl_sim.engine.outcome import DELIVERED, Delivered, Lost
from sfl_sim.engine.simulator import RoundContext, Simulator
from sfl_sim.engine.steps import SimSteps

__all__ = ["OTHER", "Recorder", "RecordingContext", "RoundRecord", "decode_outcome", "encode_outcome"]

#: The value a replayed event carries where the recorded one carried something that is neither an
#: outcome nor None (what it was does not matter to the clock, only that it was not a loss).
OTHER = object()

#: JSON types a coherence block may have to be recorded (what algorithms pass: an iteration index).
_BLOCK_TYPES = (int, str, type(None))


def encode_outcome(value: Any) -> str | None:
    """An event's value as the record writes it (module docstring)."""
    if isinstance(value, Delivered):
        return "D"
    if isinstance(value, Lost):
        return f"L:{value.reason}"
    return None if value is None else "O"


def decode_outcome(code: str | None) -> Any:
    """A value whose :func:`encode_outcome` is ``code``."""
    if code is None:
        return None
    if code == "D":
        return DELIVERED
    if code.startswith("L:"):
        return Lost(code[2:])  # type: ignore[arg-type]  # a reason the engine wrote
    return OTHER


@dataclass
class RoundRecord:
    """One round as its clock saw it (module docstring).

    Attributes
    ----------
    round : int
    cohort : list of int
        The clients selected for the round, in order.
    processes : list of list
        Each process's ops; ``processes[0]`` is the round's own.
    draws : dict of str to list of int
        Per shared random stream, the processes in the order they drew from it.
    unreplayable : str or None
        Why this round cannot be replayed (None: it can).
    """

    round: int
    cohort: list[int]
    processes: list[list[list[Any]]] = field(default_factory=lambda: [[]])
    draws: dict[str, list[int]] = field(default_factory=dict)
    unreplayable: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data (one line of the run directory's work record)."""
        out: dict[str, Any] = {"round": self.round, "cohort": self.cohort, "processes": self.processes,
                               "draws": self.draws}
        if self.unreplayable is not None:
            out["unreplayable"] = self.unreplayable
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RoundRecord:
        """The record :meth:`as_dict` wrote."""
        return cls(int(data["round"]), [int(k) for k in data["cohort"]], list(data["processes"]),
                   {str(k): [int(p) for p in v] for k, v in dict(data.get("draws", {})).items()},
                   data.get("unreplayable"))

    def client_of(self, pid: int) -> int | None:
        """The client process ``pid`` works for: the first client its ops name, else (a server job)
        the client of the first event it waits on — a transfer, or an event a client's process
        triggers; None for the round's own process and the server's other work."""
        direct = self._direct_client(pid)
        if direct is not None or pid == 0:
            return direct
        owners: dict[int, int] = {}  # event number -> its client
        for other, ops in enumerate(self.processes):
            client = self._direct_client(other)
            for op in ops:
                if op[0] in ("u", "d"):
                    owners[op[-1]] = int(op[1])
                elif op[0] == "t" and client is not None:
                    owners.setdefault(op[1], client)
        waited = [op[1] for op in self.processes[pid] if op[0] == "y"]
        return next((owners[h] for h in waited if h in owners), None)

    def _direct_client(self, pid: int) -> int | None:
        for op in self.processes[pid]:
            if (op[0] == "c" and op[1] >= 0) or op[0] in ("u", "d"):
                return int(op[1])
        return None


#: ``fingerprint()``: the state of each shared random stream now (equal values: nothing drawn).
Fingerprint = Callable[[], Sequence[object]]


class Recorder:
    """Records each round run with :meth:`context` into :attr:`last`.

    Parameters
    ----------
    streams : sequence of str
        Names of the shared random streams ``fingerprint`` watches.
    fingerprint : callable, optional
        The state of each of those streams now (:data:`Fingerprint`); None: no stream is watched.
    """

    def __init__(self, streams: Sequence[str] = (), fingerprint: Fingerprint | None = None) -> None:
        self.streams = tuple(streams)
        self.fingerprint = fingerprint
        self.round = 0
        self.last: RoundRecord | None = None

    def context(self, sim: Simulator, cohort: np.ndarray) -> RecordingContext:
        """The round's context (pass as ``Simulator.run_round(..., context=recorder.context)``);
        set :attr:`round` first."""
        ctx = RecordingContext(sim, cohort, RoundRecord(self.round, [int(k) for k in cohort.tolist()]), self)
        self.last = ctx.record
        return ctx


class _RecordedEvent(simpy.Event):
    """An event the algorithm triggers itself, whose triggering the record notes."""

    def __init__(self, env: simpy.Environment, ctx: RecordingContext) -> None:
        super().__init__(env)
        self._ctx = ctx

    def succeed(self, value: Any = None) -> simpy.Event:
        self._ctx._triggered(self, value)
        return super().succeed(value)

    def fail(self, exception: Exception) -> simpy.Event:
        self._ctx.unreplayable("an event failed with an exception")
        return super().fail(exception)


class RecordingContext(RoundContext):
    """A :class:`~sfl_sim.engine.RoundContext` that records what the round asked of the clock
    (module docstring).  Built by :meth:`Recorder.context`."""

    def __init__(self, sim: Simulator, cohort: np.ndarray, record: RoundRecord, recorder: Recorder) -> None:
        super().__init__(sim, cohort)
        self.record = record
        self._recorder = recorder
        self._events: list[simpy.Event] = []  # kept alive, so that id() stays unique in the round
        self._handles: dict[int, int] = {}  # id(event) -> its number
        self._pid_of: dict[simpy.Process, int] = {}
        self._depth: list[int] = [0]  # per process: inside an engine primitive (its own yields)
        self._seen: list[Sequence[object] | None] = [None]  # per process: the streams when it last looked
        if sim.edge is not None:
            # the edges' handovers, migrations and backhaul aggregation are not in the record
            self.unreplayable("a round with edge servers (server.edge)")

    # -- bookkeeping -----------------------------------------------------------------------------
    def unreplayable(self, reason: str) -> None:
        """Mark the round as one the replay refuses (the first reason stands)."""
        if self.record.unreplayable is None:
            self.record.unreplayable = reason

    def _current(self) -> int | None:
        proc = self.env.active_process
        pid = None if proc is None else self._pid_of.get(proc)
        if pid is None:
            self.unreplayable("a primitive was called outside the round's processes")
        return pid

    def _handle(self, event: simpy.Event) -> int:
        self._events.append(event)
        h = self._handles[id(event)] = len(self._events) - 1
        return h

    def _known(self, event: simpy.Event) -> int | None:
        h = self._handles.get(id(event))
        if h is None:
            self.unreplayable(f"the round waited on a {type(event).__name__} made outside its context")
        return h

    def _fingerprint(self) -> Sequence[object] | None:
        probe = self._recorder.fingerprint
        return None if probe is None else probe()

    def _look(self, pid: int) -> None:
        """Note the streams process ``pid`` drew from since it last looked."""
        if self._recorder.fingerprint is None:
            return
        now = self._fingerprint()
        before = self._seen[pid]
        if before is not None and now is not None and before != now:
            drawn = [name for name, a, b in zip(self._recorder.streams, before, now, strict=True) if a != b]
            self.record.processes[pid].append(["w", drawn])
            for name in drawn:
                self.record.draws.setdefault(name, []).append(pid)
        self._seen[pid] = now

    def _log(self, op: list[Any]) -> None:
        pid = self._current()
        if pid is not None:
            self._look(pid)
            self.record.processes[pid].append(op)

    def _triggered(self, event: simpy.Event, value: Any) -> None:
        h = self._known(event)
        if h is not None:
            self._log(["t", h, encode_outcome(value)])

    # -- the processes -----------------------------------------------------------------------------
    def start(self, round_process: Callable[[RoundContext], SimSteps[Any]]) -> simpy.Process:
        proc = self.env.process(self._follow(round_process(self), 0))
        self._pid_of[proc] = 0
        self._handle(proc)
        return proc

    def process(self, generator: SimSteps[Any]) -> simpy.Process:
        pid = len(self.record.processes)
        self.record.processes.append([])
        self._depth.append(0)
        self._seen.append(None)
        proc = super().process(self._follow(generator, pid))
        self._pid_of[proc] = pid
        self._log(["p", self._handle(proc), pid])
        return proc

    def _follow(self, generator: SimSteps[Any], pid: int) -> SimSteps[Any]:
        """``generator``, with what it waits on and returns written into process ``pid``'s ops."""
        ops = self.record.processes[pid]
        send: Any = None
        throw: BaseException | None = None
        self._seen[pid] = self._fingerprint()
        while True:
            try:
                event = generator.send(send) if throw is None else generator.throw(throw)
            except StopIteration as stop:
                self._look(pid)
                ops.append(["r", encode_outcome(stop.value)])
                return stop.value
            waited: list[Any] | None = None
            if self._depth[pid] == 0:  # the algorithm's own wait (an engine primitive's are its business)
                self._look(pid)
                waited = ["y", self._known(event), None]
                ops.append(waited)
            try:
                send, throw = (yield event), None
            except simpy.Interrupt as exc:  # the round is over: the process stops here
                ops.append(["i"])
                send, throw = None, exc
            self._seen[pid] = self._fingerprint()  # other processes ran meanwhile
            if waited is not None and throw is None:
                waited[2] = encode_outcome(send)

    # -- the primitives, recorded ----------------------------------------------------------------------
    def compute(self, who: int, flops: float, what: str = "compute", *, client: int | None = None) -> SimSteps[None]:
        pid = self._current()
        placed = [] if client is None or self._sim.edge is None else [int(client)]  # where it runs: an edge
        self._log(["c", int(who), float(flops), what, *placed])
        if pid is None:
            return (yield from super().compute(who, flops, what, client=client))
        self._depth[pid] += 1
        try:
            return (yield from super().compute(who, flops, what, client=client))
        finally:
            self._depth[pid] -= 1

    def backhaul(self, client: int, payload: Mapping[str, int], *, to_cloud: bool) -> SimSteps[None]:
        if self._sim.edge is not None:
            self._log(["h", int(client), [[what, int(n)] for what, n in payload.items()], bool(to_cloud)])
        return (yield from super().backhaul(client, payload, to_cloud=to_cloud))

    def upload(self, client: int, nbytes: int, what: str, block: Hashable = None) -> simpy.Process:
        proc = super().upload(client, nbytes, what, block)
        if not isinstance(block, _BLOCK_TYPES):
            self.unreplayable(f"an upload's coherence block is a {type(block).__name__}; recorded: int, str, None")
        self._log(["u", int(client), int(nbytes), what, block, self._handle(proc)])
        return proc

    def download(self, client: int, nbytes: int, what: str) -> simpy.Event:
        event = super().download(client, nbytes, what)
        self._log(["d", int(client), int(nbytes), what, self._handle(event)])
        return event

    def broadcast(self, nbytes: int, what: str) -> simpy.Event:
        event = super().broadcast(nbytes, what)
        self._log(["b", int(nbytes), what, self._handle(event)])
        return event

    def event(self) -> simpy.Event:
        event = _RecordedEvent(self.env, self)
        self._log(["e", self._handle(event)])
        return event

    def all_of(self, events: Iterable[simpy.Event]) -> simpy.Event:
        events = list(events)
        handles = [self._known(e) for e in events]
        event = super().all_of(events)
        self._log(["a", handles, self._handle(event)])
        return event

    def allocate_uplink(self, payload_bits: Mapping[int, float] | None) -> None:
        super().allocate_uplink(payload_bits)
        self._log(["al", None if payload_bits is None else [[int(k), float(b)] for k, b in payload_bits.items()]])

    def gather(self, arrivals: Mapping[int, simpy.Event], local_iterations: int = 1) -> SimSteps[list[int]]:
        pid = self._current()
        op: list[Any] = ["g", [[int(k), self._known(e)] for k, e in arrivals.items()], int(local_iterations), None]
        self._log(op)
        if pid is not None:
            self._depth[pid] += 1
        try:
            kept = yield from super().gather(arrivals, local_iterations)
        finally:
            if pid is not None:
                self._depth[pid] -= 1
        op[3] = [int(k) for k in kept]
        return kept

    # -- reads that would make training depend on the link -----------------------------------------
    def _read_by_the_round(self, what: str) -> None:
        """A read of the link from inside the round's processes could steer training by the link;
        one after the round (the runner's per-client record) cannot."""
        if self.env.active_process is not None and self.env.active_process in self._pid_of:
            self.unreplayable(f"the algorithm read a client's {what}")

    def uplink_rate_bps(self, client: int) -> float:
        self._read_by_the_round("uplink rate")
        return super().uplink_rate_bps(client)

    def uplink_snr_db(self, client: int) -> float:
        self._read_by_the_round("uplink SNR")
        return super().uplink_snr_db(client)

    def uplink_share_hz(self, client: int) -> float:
        self._read_by_the_round("uplink share")
        return super().uplink_share_hz(client)

    def uplink_tx_power_w(self, client: int) -> float:
        self._read_by_the_round("uplink transmit power")
        return super().uplink_tx_power_w(client)

    def uplink_fading_gain(self, client: int) -> float:
        self._read_by_the_round("uplink fading gain")
        return super().uplink_fading_gain(client)

    def downlink_rate_bps(self, client: int) -> float | None:
        self._read_by_the_round("downlink rate")
        return super().downlink_rate_bps(client)
