"""A recorded round run again on another engine: the same steps, new times, every decision checked.

:func:`replay` turns a :class:`~sfl_sim.engine.record.RoundRecord` into a round process for
:meth:`Simulator.run_round <sfl_sim.engine.Simulator.run_round>`: each recorded process becomes a
scripted one that calls the same primitives with the same FLOPs, bytes and kinds, in the same
order, and waits where the original waited.  The engine times them under its own cell, compute
budgets, downlink and energy settings; no torch runs.  Replayed on the engine that recorded it, a
round reproduces its times bit for bit (the same events are scheduled in the same order).

The training of the recorded run stays valid only while every decision goes as recorded, so each
one is compared, and the first difference raises :class:`Diverged` naming the round, the client and
the decision:

* what each awaited event came to (an upload delivered or lost, and why);
* whom the straggler policy kept at each ``gather``, in order;
* the order in which processes drew from a shared random stream (a minibatch drawn at an event);
* that no process outlives the point where the round's end stopped it in the record.

The cohort is the runner's to compare (:func:`check_cohort`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy

from sfl_sim.engine.record import RoundRecord, decode_outcome, encode_outcome
from sfl_sim.engine.simulator import RoundContext
from sfl_sim.engine.steps import SimSteps

__all__ = ["Diverged", "check_cohort", "replay"]


class Diverged(Exception):
    """A replayed decision differs from the record: the re-timing is not valid (one line).

    Attributes
    ----------
    round : int
    client : int or None
        The client the decision is about (None: the server's).
    decision : str
        What went otherwise, in words.
    """

    def __init__(self, rnd: int, client: int | None, decision: str) -> None:
        super().__init__(rnd, client, decision)  # args as given: the exception copies and pickles
        self.round, self.client, self.decision = rnd, client, decision

    def __str__(self) -> str:
        who = "the server" if self.client is None else f"client {self.client}"
        return f"round {self.round}, {who}: {self.decision}"


def check_cohort(record: RoundRecord, cohort: list[int]) -> None:
    """Refuse a cohort other than the recorded one.

    Raises
    ------
    Diverged
        Naming the first client that differs.
    """
    if cohort == record.cohort:
        return
    for position, (got, want) in enumerate(zip(cohort, record.cohort, strict=False)):
        if got != want:
            raise Diverged(record.round, got, f"selected as cohort member {position + 1} where the record "
                                              f"has client {want}")
    raise Diverged(record.round, None, f"a cohort of {len(cohort)} clients where the record has {len(record.cohort)}")


def replay(record: RoundRecord) -> Callable[[RoundContext], SimSteps[Any]]:
    """The round process that replays ``record`` (module docstring).

    Raises
    ------
    Diverged
        From inside the round, at the first decision that differs (and at once for a round the
        recorder marked unreplayable).
    """
    return lambda ctx: _Script(record, ctx).run(0)


def _outcome_words(code: str | None) -> str:
    if code == "D":
        return "delivered"
    if code is not None and code.startswith("L:"):
        return f"lost ({code[2:]})"
    # None: the step ended with no transfer outcome (a process that returned nothing, not a payload)
    return "no outcome (the step ended without a transfer)" if code is None else "a value"


class _Script:
    """The processes of one recorded round, run on ``ctx``."""

    def __init__(self, record: RoundRecord, ctx: RoundContext) -> None:
        self.record, self.ctx = record, ctx
        self.events: dict[int, simpy.Event] = {}
        self.about: dict[int, int | None] = {}  # event number -> the client it is about
        self.drawn = dict.fromkeys(record.draws, 0)  # per stream, the draws replayed so far

    def diverged(self, client: int | None, decision: str) -> Diverged:
        return Diverged(self.record.round, client, decision)

    def run(self, pid: int) -> SimSteps[Any]:
        record, ctx, events = self.record, self.ctx, self.events
        if pid == 0:
            events[0] = ctx.env.active_process  # type: ignore[assignment]  # the round's own process
            if record.unreplayable is not None:
                raise self.diverged(None, f"the recorded round cannot be replayed: {record.unreplayable}")
        me = record.client_of(pid)
        for op in record.processes[pid]:
            kind = op[0]
            if kind == "c":
                yield from ctx.compute(op[1], op[2], op[3], client=op[4] if len(op) > 4 else None)
            elif kind == "h":
                yield from ctx.backhaul(op[1], {what: int(n) for what, n in op[2]}, to_cloud=op[3])
            elif kind == "u":
                events[op[5]] = ctx.upload(op[1], op[2], op[3], op[4])
                self.about[op[5]] = op[1]
            elif kind == "d":
                events[op[4]] = ctx.download(op[1], op[2], op[3])
                self.about[op[4]] = op[1]
            elif kind == "b":
                events[op[3]] = ctx.broadcast(op[1], op[2])
            elif kind == "p":
                events[op[1]] = ctx.process(self.run(op[2]))
                self.about[op[1]] = record.client_of(op[2])
            elif kind == "e":
                events[op[1]] = ctx.event()
            elif kind == "a":
                events[op[2]] = ctx.all_of(events[h] for h in op[1])
            elif kind == "al":
                ctx.allocate_uplink(None if op[1] is None else {int(k): float(b) for k, b in op[1]})
            elif kind == "y":
                value = yield events[op[1]]
                got = encode_outcome(value)
                if got != op[2]:
                    raise self.diverged(self.about.get(op[1], me),
                                        f"an awaited step came to {_outcome_words(got)} where the record has "
                                        f"{_outcome_words(op[2])}")
            elif kind == "t":
                events[op[1]].succeed(decode_outcome(op[2]))
            elif kind == "g":
                kept = yield from ctx.gather({int(k): events[h] for k, h in op[1]}, op[2])
                self._compare_kept(kept, [int(k) for k in op[3]])
            elif kind == "w":
                self._drew(pid, me, op[1])
            elif kind == "r":
                return decode_outcome(op[1])
            elif kind == "i":
                raise self.diverged(me, "its process ran on past the point where the round's end stopped it "
                                        "in the record")
            else:
                raise ValueError(f"work record: unknown op {kind!r} in round {record.round}")
        return None

    def _compare_kept(self, kept: list[int], want: list[int]) -> None:
        if kept == want:
            return
        for k in want:
            if k not in kept:
                why = self.ctx.dropped.get(k, "left out")
                raise self.diverged(k, f"dropped ({why}) by the straggler policy where the record kept it")
        for k in kept:
            if k not in want:
                raise self.diverged(k, "kept by the straggler policy where the record dropped it")
        raise self.diverged(None, f"the straggler policy kept the clients in the order {kept} where the record "
                                  f"has {want}")

    def _drew(self, pid: int, client: int | None, streams: list[str]) -> None:
        for name in streams:
            order = self.record.draws[name]
            position = self.drawn[name]
            self.drawn[name] = position + 1
            if order[position] != pid:
                other = self.record.client_of(order[position])
                who = "a server job" if other is None else f"client {other}"
                raise self.diverged(client, f"drew from the {name} stream before {who}, against the recorded "
                                            f"order (training would change)")
