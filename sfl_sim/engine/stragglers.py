"""Straggler policies: how long the server waits for the clients' payloads, and whose it keeps.

Each policy is a small object with one method, :meth:`StragglerRule.wait`: a SimPy generator that
waits on the clients' arrival events as long as the policy says, then hands what had arrived to
:func:`decide`, the decision itself — a pure function of plain data (arrivals in, kept and
dropped out), tested without SimPy.

* :class:`WaitAll` (``wait_all``): every event;
* :class:`Deadline` (``deadline``): at most ``deadline_s`` per local iteration the payload took;
* :class:`OverSelection` (``over_selection``): until the first ``keep_clients`` clients have
  delivered (or every event has fired), and keeps at most that many.

:func:`straggler_rule` builds one from the scenario's ``stragglers`` section.
"""
from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import simpy

from sfl_sim.config.choices import StragglerPolicy, check_choice
from sfl_sim.engine.outcome import DELIVERED, LossReason, Lost, Outcome

__all__ = ["Deadline", "Decision", "OverSelection", "StragglerRule", "WaitAll", "decide", "fired",
           "straggler_rule"]


@dataclass(frozen=True)
class Decision:
    """Whose payloads the server uses, and why the others are out.

    Attributes
    ----------
    kept : list of int
        Clients whose payloads arrived and are used, in the order of the arrivals.
    dropped : dict of int to str
        Every other client and its :data:`~sfl_sim.engine.outcome.LossReason`.
    """

    kept: list[int]
    dropped: dict[int, LossReason]


def decide(arrivals: Mapping[int, Outcome | None], late: LossReason | None = None,
           keep: int | None = None) -> Decision:
    """The straggler decision, once the server stops waiting.

    Parameters
    ----------
    arrivals : mapping of int to Outcome or None
        Each awaited client's outcome: :data:`~sfl_sim.engine.outcome.DELIVERED` (its payload
        arrived), a :class:`~sfl_sim.engine.outcome.Lost` (it never will, and why), or None (still
        on its way when the server stopped waiting).
    late : str, optional
        The reason a client still on its way is dropped (``deadline``, ``over_selection``); None
        when the policy waits for every arrival (then none may be None).
    keep : int, optional
        At most this many of the delivered clients are kept, the first in ``arrivals`` order; the
        rest are dropped as ``over_selection``.

    Returns
    -------
    Decision
    """
    kept: list[int] = []
    dropped: dict[int, LossReason] = {}
    for client, outcome in arrivals.items():
        if outcome is None:
            if late is None:
                raise ValueError(f"client {client} has not arrived; allowed: every arrival fired when late=None")
            dropped[client] = late
        elif isinstance(outcome, Lost):
            dropped[client] = outcome.reason
        else:
            kept.append(client)
    if keep is not None and len(kept) > keep:
        dropped.update(dict.fromkeys(kept[keep:], "over_selection"))
        kept = kept[:keep]
    return Decision(kept, dropped)


def fired(arrivals: Mapping[int, simpy.Event]) -> dict[int, Outcome | None]:
    """Each client's outcome so far: once its event is triggered (a process that has returned, an
    event that has succeeded), the :class:`~sfl_sim.engine.outcome.Lost` it carries or else
    ``DELIVERED`` (whatever the payload); None before.  Arrivals are processes or events an
    algorithm triggers, never bare timeouts (a timeout is triggered from its creation)."""
    return {client: (event.value if isinstance(event.value, Lost) else DELIVERED) if event.triggered else None
            for client, event in arrivals.items()}


def _delivered(event: simpy.Event) -> bool:
    return event.triggered and not isinstance(event.value, Lost)


_Waiting = Generator[simpy.Event, Any, Decision]


class StragglerRule(Protocol):
    """A straggler policy (module docstring)."""

    def wait(self, env: simpy.Environment, arrivals: Mapping[int, simpy.Event],
             local_iterations: int) -> _Waiting:
        """Wait on ``arrivals`` (client -> the event its payload's outcome fires) as the policy says;
        ``yield from`` it.

        Parameters
        ----------
        env : simpy.Environment
        arrivals : mapping of int to simpy.Event
            One event per awaited client; its value an :data:`~sfl_sim.engine.outcome.Outcome`
            (anything not a :class:`~sfl_sim.engine.outcome.Lost` counts as delivered).
        local_iterations : int
            How many local iterations the awaited payload took (a deadline scales with it).

        Returns
        -------
        Decision
        """
        ...


@dataclass(frozen=True)
class WaitAll:
    """Wait for every client (``wait_all``)."""

    def wait(self, env: simpy.Environment, arrivals: Mapping[int, simpy.Event],
             local_iterations: int) -> _Waiting:
        yield simpy.AllOf(env, list(arrivals.values()))
        return decide(fired(arrivals))


@dataclass(frozen=True)
class Deadline:
    """Wait at most ``deadline_s x local_iterations`` simulated seconds (``deadline``).

    Attributes
    ----------
    deadline_s : float
        Budget per local iteration, simulated seconds (> 0).
    """

    deadline_s: float

    def wait(self, env: simpy.Environment, arrivals: Mapping[int, simpy.Event],
             local_iterations: int) -> _Waiting:
        yield simpy.AnyOf(env, [simpy.AllOf(env, list(arrivals.values())),
                                env.timeout(self.deadline_s * local_iterations)])
        return decide(fired(arrivals), late="deadline")


@dataclass(frozen=True)
class OverSelection:
    """Keep the first ``keep_clients`` clients to deliver (``over_selection``).

    Attributes
    ----------
    keep_clients : int
        How many of the (over-)selected clients are kept (>= 1).
    """

    keep_clients: int

    def wait(self, env: simpy.Environment, arrivals: Mapping[int, simpy.Event],
             local_iterations: int) -> _Waiting:
        events = list(arrivals.values())
        want = min(self.keep_clients, len(events))
        while sum(1 for e in events if _delivered(e)) < want and not all(e.triggered for e in events):
            yield simpy.AnyOf(env, [e for e in events if not e.triggered])
        return decide(fired(arrivals), late="over_selection", keep=self.keep_clients)


def straggler_rule(policy: StragglerPolicy, deadline_s: float | None = None,
                   keep_clients: int | None = None) -> StragglerRule:
    """The policy object of a scenario's ``stragglers`` section.

    Raises
    ------
    ValueError
        One line naming the field, its value and what is allowed.
    """
    check_choice("straggler_policy", policy, StragglerPolicy)
    if policy == "deadline":
        if not (deadline_s and deadline_s > 0):
            raise ValueError(f"deadline_s={deadline_s!r}; allowed: a number > 0 with straggler_policy=deadline")
        return Deadline(deadline_s)
    if policy == "over_selection":
        if not (keep_clients and keep_clients >= 1):
            raise ValueError(f"keep_clients={keep_clients!r}; allowed: an integer >= 1 with over_selection")
        return OverSelection(keep_clients)
    return WaitAll()
