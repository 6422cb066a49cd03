"""The semi-asynchronous concatenated server: each server step takes the activations that have
arrived by its trigger; the others join the next step.

SCALA's server (:class:`~sfl_sim.algorithms.split.server_modes.ConcatenatedServer`) waits, every
local iteration, for the whole cohort and steps once on the concatenation.  This mode drops the
barrier: the server keeps a queue of the activations that have arrived (of any iteration; a
client has at most one upload waiting, since it waits for its reply before it goes on) and steps
when its trigger fires:

* ``trigger_clients: K`` — when K uploads wait (or, with fewer than K clients still iterating,
  all of them);
* ``window_s: W`` — W simulated seconds after the first upload that waits (or earlier, when
  every client still iterating has one waiting);

then concatenates every waiting upload, in cohort order, steps once
(:meth:`~sfl_sim.algorithms.split.base.SplitFedBase.server_on_concatenation`, timed as
``server_step`` on the one server) and replies to each.  Uploads that arrive while the step runs
wait for the next one.  A client therefore goes through its T iterations at its own pace, its
activations meeting a server model that may have moved since its last reply.  With K equal to
the cohort (and no window) every step concatenates one iteration of every client: SCALA's round.

Where the SCALA papers are silent (they define only the synchronous step), our choices: the order
inside a concatenation is the cohort's; the label prior P_s of the server loss is that of the
concatenated labels, as in SCALA; a client whose upload is lost leaves the round (as in
SCALA's); the straggler policy does not apply (the trigger replaces it; ``wait_all`` only); the
round ends when every client has done its T iterations and uploaded its client-side model, which
is aggregated as SCALA's (eq. 10).
"""
from __future__ import annotations

import functools
import math
from typing import cast

import simpy

from sfl_sim.algorithms.split.messages import ClientActivations, SplitRound
from sfl_sim.algorithms.split.server_modes import ConcatenatedServer, ServerSide
from sfl_sim.engine import Lost, SimSteps

__all__ = ["TriggeredConcatenatedServer"]


class TriggeredConcatenatedServer(ConcatenatedServer):
    """Concatenate what has arrived when the trigger fires (module docstring).

    Parameters
    ----------
    trigger_clients : int or None
        K (>= 1); None: every client still iterating (with ``window_s``, up to the window).
    window_s : float or None
        W (> 0), simulated seconds.
    """

    name = "triggered_concatenated"

    def __init__(self, trigger_clients: int | None = None, window_s: float | None = None) -> None:
        if trigger_clients is not None and trigger_clients < 1:
            raise ValueError(f"trigger_clients={trigger_clients!r}; allowed: an integer >= 1, or null")
        if window_s is not None and not (math.isfinite(window_s) and window_s > 0):
            raise ValueError(f"window_s={window_s!r}; allowed: a number > 0, or null")
        self.trigger_clients, self.window_s = trigger_clients, window_s

    def _iterations(self, algo: ServerSide, rnd: SplitRound) -> SimSteps[list[int]]:
        """The server's steps; returns the clients that did all their iterations."""
        ctx, exchange = rnd.ctx, rnd.exchange
        next_t = {k: 0 for k in rnd.clients}  # each client's next upload the server waits for
        gone: set[int] = set()

        def iterating() -> list[int]:
            return [k for k in rnd.clients if k not in gone and next_t[k] < exchange.count(k)]

        def waiting() -> list[int]:
            return [k for k in iterating() if exchange.upload(next_t[k], k).triggered]

        while iterating():
            need = len(iterating()) if self.trigger_clients is None else min(self.trigger_clients, len(iterating()))
            deadline: simpy.Event | None = None
            while True:
                for k in iterating():  # a lost upload: the client leaves (recorded as gather records it)
                    event = exchange.upload(next_t[k], k)
                    if event.triggered and isinstance(event.value, Lost):
                        gone.add(k)
                        yield from ctx.gather({k: event})
                ready = waiting()
                if not iterating():
                    break
                if len(ready) >= need or (deadline is not None and deadline.processed):
                    break
                if self.window_s is not None and ready and deadline is None:
                    deadline = ctx.env.timeout(self.window_s)
                pending = [exchange.upload(next_t[k], k) for k in iterating() if k not in ready]
                yield simpy.AnyOf(ctx.env, pending + ([deadline] if deadline is not None else []))
            ready = waiting()
            if not ready:
                continue
            rnd.activations_ready()
            uploads = [cast(ClientActivations, exchange.upload(next_t[k], k).value) for k in ready]
            n_samples = int(sum(u.activations.shape[0] for u in uploads))
            replies = yield from algo.server_compute(ctx, "server_step", n_samples,
                                                     functools.partial(algo.server_on_concatenation, uploads))
            for k, reply in zip(ready, replies, strict=True):
                exchange.answer(next_t[k], k, reply)
                next_t[k] += 1
        return [k for k in rnd.clients if k not in gone]
