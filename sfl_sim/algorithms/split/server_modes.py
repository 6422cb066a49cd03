"""How the server of a split-learning round works through the clients' activations.

Three strategies, each owning the server's processes of a round and its straggler handling:

* :class:`ConcatenatedServer` (``"concatenated"``) — every local iteration, wait for the cohort
  under the straggler policy, then one step on the concatenation of the activations that came
  (:meth:`~sfl_sim.algorithms.split.base.SplitFedBase.server_on_concatenation`); a client left out
  of one concatenation has no gradient to go on with and leaves the round;
* :class:`PerClientServer` (``"per_client"``) — one copy of w_s per client, each stepped on its
  own client's activations as they arrive
  (:meth:`~sfl_sim.algorithms.split.base.SplitFedBase.server_on_client`); the copies' jobs queue
  on the one server; the straggler policy applies to the end-of-round uploads;
* :class:`SequentialServer` (``"sequential"``) — one w_s, stepped on one client's activations
  after another in a fixed order; optionally the clients take turns too (SplitFedV2).  With
  ``server.edge`` the one w_s moves to the edge of each client whose step comes next, over the
  backhaul, when it is at another edge.

An algorithm picks one by name (``server_mode="per_client"``) or passes an instance; a subclass
of one of these (BESplit's paired server) changes which jobs run, and nothing else.
"""
from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Sequence
from typing import ClassVar, Literal, Protocol, TypeVar, cast

import simpy
from torch import nn

from sfl_sim.algorithms._exec.working_copies import Key
from sfl_sim.algorithms.base import state_bytes
from sfl_sim.algorithms.split.messages import ClientActivations, Reply, SplitRound
from sfl_sim.config.choices import check_choice
from sfl_sim.engine import Lost, RoundContext, SimSteps

Result = TypeVar("Result")


class ServerSide(Protocol):
    """What a server mode uses of its algorithm: the server side of a
    :class:`~sfl_sim.algorithms.split.base.SplitFedBase` (which imports this module, so the modes
    name the members they need instead of the class)."""

    @property
    def server_model(self) -> nn.Module:
        """w_s, the one server-side model."""

    @property
    def server_replies(self) -> bool:
        """Whether a server job answers each client with the gradient of its activations."""

    def server_on_concatenation(self, uploads: Sequence[ClientActivations]) -> list[Reply]:
        """Torch work on the concatenation of an iteration; one reply per upload."""

    def server_on_client(self, ctx: RoundContext, server: nn.Module, upload: ClientActivations,
                         want_reply: bool) -> SimSteps[Reply | None]:
        """One timed server job on one client's activations; ``yield from`` it."""

    def server_compute(self, ctx: RoundContext, kind: str, n_samples: int,
                       fn: Callable[[], Result], client: int | None = None) -> SimSteps[Result]:
        """Run ``fn()`` as metered server work (``client``'s, on its edge, or the cloud's); ``yield from`` it."""

    def working_copies(self, source: nn.Module, keys: Sequence[Key]) -> dict[Key, nn.Module]:
        """One copy of ``source`` per key, valid until the next call."""

ServerModeName = Literal["concatenated", "per_client", "sequential"]

#: ``spawn(k, start, done)`` starts client k's process: it waits for ``start`` (if any) before
#: its first iteration and fires ``done`` (if any) after its last one.
Spawn = Callable[[int, simpy.Event | None, simpy.Event | None], simpy.Process]


class ServerMode(abc.ABC):
    """The server side of a split-learning round (module docstring).

    Attributes
    ----------
    name : str
        The mode's name in scenarios and messages.
    """

    name: ClassVar[str]

    def server_copies(self, algo: ServerSide, clients: list[int]) -> dict[int, nn.Module] | None:
        """Per-client copies of w_s for the round (``SplitRound.servers``), made after the
        distribution; None (default) when the server trains the one ``algo.server_model``."""
        return None

    def start_clients(self, rnd: SplitRound, spawn: Spawn) -> dict[int, simpy.Process]:
        """Start the clients' processes, before the server's (all at once by default).

        Parameters
        ----------
        rnd : SplitRound
        spawn : callable
            ``spawn(k, start, done)`` starts client k's round (see :data:`Spawn`).

        Returns
        -------
        dict of int to simpy.Process
            Each client's process; its value is ``DELIVERED`` or the ``Lost`` that ended it.
        """
        return {k: spawn(k, None, None) for k in rnd.clients}

    @abc.abstractmethod
    def start_server(self, algo: ServerSide, rnd: SplitRound) -> list[simpy.Process]:
        """Start the server's processes of the round, right after the clients'.

        They wait on ``rnd.exchange.upload(t, k)`` and answer with ``rnd.exchange.answer`` (when
        ``algo.server_replies``), timing their torch work on the server through
        ``algo.server_on_client`` / ``algo.server_compute``.

        Returns
        -------
        list of simpy.Process
        """

    def finish(self, algo: ServerSide, rnd: SplitRound, clients: dict[int, simpy.Process],
               server: list[simpy.Process]) -> SimSteps[list[int]]:
        """Wait for the round's end under the straggler policy; ``yield from`` it.

        Default: the policy applies to the clients' whole rounds (their end-of-round uploads),
        with a deadline budget of the most local iterations a client runs (T;
        :meth:`RoundContext.gather`).

        Returns
        -------
        list of int
            The clients to aggregate, in cohort order (the others are in ``ctx.dropped``).
        """
        return (yield from rnd.ctx.gather(clients, local_iterations=rnd.exchange.iterations))

    def serve(self, algo: ServerSide, rnd: SplitRound, server: nn.Module, t: int, k: int) -> SimSteps[None]:
        """One server job: wait for client k's upload of iteration t, step ``server`` on it and
        answer (when the algorithm replies).  A lost upload ends the job.

        Parameters
        ----------
        algo : ServerSide
        rnd : SplitRound
        server : nn.Module
            The server-side model to step (a per-client copy, or ``algo.server_model``).
        t, k : int
            Local iteration and client.
        """
        upload = yield rnd.exchange.upload(t, k)
        if isinstance(upload, Lost):
            return
        rnd.activations_ready()
        yield from self.step_and_answer(algo, rnd, server, t, upload)

    @staticmethod
    def step_and_answer(algo: ServerSide, rnd: SplitRound, server: nn.Module, t: int,
                        upload: ClientActivations) -> SimSteps[None]:
        """Step ``server`` on one client's activations (timed on the server), then answer it."""
        reply = yield from algo.server_on_client(rnd.ctx, server, upload, algo.server_replies)
        if algo.server_replies:
            assert reply is not None  # a job asked for a reply returns one
            rnd.exchange.answer(t, upload.client, reply)


class ConcatenatedServer(ServerMode):
    """One step per iteration on the concatenation of the cohort's activations (SCALA, CA-SFL)."""

    name = "concatenated"

    def start_server(self, algo: ServerSide, rnd: SplitRound) -> list[simpy.Process]:
        return [rnd.ctx.process(self._iterations(algo, rnd))]

    def _iterations(self, algo: ServerSide, rnd: SplitRound) -> SimSteps[list[int]]:
        """The server's iterations; returns the clients still in after the last one.

        Iteration t concatenates the clients still iterating: with ``local_epochs`` a client
        with less data finishes earlier and stays in the round (it is not dropped)."""
        ctx, exchange = rnd.ctx, rnd.exchange
        active = list(rnd.clients)
        for t in range(exchange.iterations):
            iterating = exchange.iterating(t, active)
            if not iterating:
                break
            kept = yield from ctx.gather({k: exchange.upload(t, k) for k in iterating})
            for k in iterating:
                if k not in kept:  # left out of this concatenation: the client stops
                    exchange.answer(t, k, Lost(ctx.dropped[k]))
            active = [k for k in active if k in kept or k not in iterating]
            if not kept:
                continue
            rnd.activations_ready()
            uploads = [cast(ClientActivations, exchange.upload(t, k).value) for k in kept]  # kept: arrived
            n_samples = int(sum(u.activations.shape[0] for u in uploads))
            replies = yield from algo.server_compute(ctx, "server_step", n_samples,
                                                     functools.partial(algo.server_on_concatenation, uploads))
            for k, reply in zip(kept, replies, strict=True):
                exchange.answer(t, k, reply)
        return active

    def finish(self, algo: ServerSide, rnd: SplitRound, clients: dict[int, simpy.Process],
               server: list[simpy.Process]) -> SimSteps[list[int]]:
        """The policy acted at every iteration; wait for the clients still in to finish."""
        ctx = rnd.ctx
        still_in = yield server[0]
        yield ctx.all_of([clients[k] for k in still_in])
        kept = []
        for k in still_in:
            outcome = clients[k].value
            if isinstance(outcome, Lost):  # its model upload was lost
                ctx.note_dropped(k, outcome)
            else:
                kept.append(k)
        return kept


class PerClientServer(ServerMode):
    """One copy of w_s per client, stepped as its activations arrive (SplitFedV1, V3, LLA-SFL)."""

    name = "per_client"

    def server_copies(self, algo: ServerSide, clients: list[int]) -> dict[int, nn.Module] | None:
        return algo.working_copies(algo.server_model, clients)

    def start_server(self, algo: ServerSide, rnd: SplitRound) -> list[simpy.Process]:
        # One job per (iteration, client), started now; they queue on the one server.
        servers = rnd.servers
        assert servers is not None  # server_copies made them
        return [rnd.ctx.process(self.serve(algo, rnd, servers[k], t, k))
                for t in range(rnd.exchange.iterations) for k in rnd.exchange.iterating(t, rnd.clients)]


class SequentialServer(ServerMode):
    """One w_s stepped on one client's activations after another (SplitFedV2, SFLLocalLoss).

    Parameters
    ----------
    clients_take_turns : bool
        False: the clients run in parallel and the server takes iteration t's activations in
        cohort order (client 1, 2, ... of iteration 1, then of iteration 2...).  True: client
        k+1 starts only when client k has done its T iterations, and the server takes client 1's
        T steps, then client 2's...
    """

    name = "sequential"

    def __init__(self, clients_take_turns: bool = False) -> None:
        self.clients_take_turns = clients_take_turns

    def start_clients(self, rnd: SplitRound, spawn: Spawn) -> dict[int, simpy.Process]:
        if not self.clients_take_turns:
            return super().start_clients(rnd, spawn)
        jobs: dict[int, simpy.Process] = {}
        previous: simpy.Event | None = None
        for k in rnd.clients:
            done = rnd.ctx.event()
            jobs[k] = spawn(k, previous, done)
            previous = done
        return jobs

    def order(self, rnd: SplitRound) -> list[tuple[int, int]]:
        """(iteration, client) pairs in the order the server takes them."""
        exchange = rnd.exchange
        if self.clients_take_turns:
            return [(t, k) for k in rnd.clients for t in range(exchange.count(k))]
        return [(t, k) for t in range(exchange.iterations) for k in exchange.iterating(t, rnd.clients)]

    def start_server(self, algo: ServerSide, rnd: SplitRound) -> list[simpy.Process]:
        return [rnd.ctx.process(self._in_order(algo, rnd))]

    def _in_order(self, algo: ServerSide, rnd: SplitRound) -> SimSteps[None]:
        """The jobs in :meth:`order`.  With ``server.edge`` each client's step runs on the edge
        holding its state, so the one w_s goes there first: when client k's activations have
        arrived and w_s is at another edge, it moves edge -> edge over the backhaul
        (:meth:`RoundContext.move_between_edges`, ``backhaul/server_model``) before the step.  At
        the round's start w_s is at every edge (our reading: the hierarchical aggregation's download
        of the global model reached every cell), so the first step moves nothing.  It moves when a
        step needs it (our choice: the server does not forecast where the next client's state will
        be when its activations arrive; a handover may move it meanwhile)."""
        ctx, exchange = rnd.ctx, rnd.exchange
        server_bytes = state_bytes(algo.server_model)
        at: int | None = None  # the edge w_s is at; None: every edge (the round's start)
        for t, k in self.order(rnd):
            upload = yield exchange.upload(t, k)
            if isinstance(upload, Lost):
                continue
            rnd.activations_ready()
            while at is not None and at != ctx.edge_of(k):  # again if a handover moved k meanwhile
                source, at = at, ctx.edge_of(k)
                yield from ctx.move_between_edges(source, at, server_bytes, "server_model")
            at = ctx.edge_of(k)
            yield from self.step_and_answer(algo, rnd, algo.server_model, t, upload)


_BY_NAME = {mode.name: mode for mode in (ConcatenatedServer, PerClientServer, SequentialServer)}


def server_mode(mode: ServerModeName | ServerMode) -> ServerMode:
    """The strategy for a mode name (or the strategy itself)."""
    if isinstance(mode, ServerMode):
        return mode
    check_choice("server_mode", mode, ServerModeName)
    return _BY_NAME[mode]()


__all__ = ["ConcatenatedServer", "PerClientServer", "SequentialServer", "ServerMode", "ServerModeName", "ServerSide",
           "Spawn", "server_mode"]
