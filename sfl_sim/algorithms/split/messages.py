"""The typed messages and per-round state of split learning (see :mod:`sfl_sim.algorithms.split.base`).

* :class:`ClientActivations` — what a client uploads in one local iteration (A_k, Y_k);
* :class:`Reply` — what the server sends back for it (G_k plus algorithm-specific extras);
* :class:`ClientStep` — one local iteration as the client sees it (its batch, its activations
  with their graph), handed to the client-side hooks;
* :class:`Exchange` — the round's rendezvous: one upload slot and one reply slot per (local
  iteration, client), each a SimPy event whose value is the message or a
  :class:`~sfl_sim.engine.Lost` saying why it never came;
* :class:`SplitRound` — everything one round's processes share.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import simpy
import torch
from torch import nn

from sfl_sim.algorithms.local_work import ClientWork
from sfl_sim.engine import Lost, RoundContext, SimSteps
from sfl_sim.engine.asynchronous import Dispatch


@dataclass(frozen=True)
class ClientActivations:
    """Client k's upload of one local iteration, as the server receives it.

    Attributes
    ----------
    client : int
        k.
    activations : Tensor, shape (B_k, ...)
        A_k, detached from the client's graph (the server builds its own).
    labels : LongTensor, shape (B_k,)
        Y_k.
    """

    client: int
    activations: torch.Tensor
    labels: torch.Tensor


@dataclass(frozen=True)
class Reply:
    """What the server sends client k for one upload.

    Attributes
    ----------
    activation_grad : Tensor, shape like A_k
        G_k, the gradient of the client's loss with respect to A_k (kind ``activation_gradients``).
    extras : mapping of str to Tensor
        Further tensors sent down with it, each counted under its key as the kind (BESplit-A's
        ``teacher_logits``), in this order after G_k.
    """

    activation_grad: torch.Tensor
    extras: Mapping[str, torch.Tensor] = field(default_factory=dict)


@dataclass
class ClientStep:
    """One local iteration of client k, as the client-side hooks see it.

    Attributes
    ----------
    client : int
    iteration : int
        t, from 0.
    model : nn.Module
        Client k's working copy of the client side (:meth:`~sfl_sim.algorithms.split.base.SplitFedBase.client_side`).
    x : Tensor, shape (B_k, C, H, W)
        The minibatch drawn for this iteration.
    y : LongTensor, shape (B_k,)
    activations : Tensor or None
        A_k with its graph back to ``model`` (set once
        :meth:`~sfl_sim.algorithms.split.base.SplitFedBase.client_forward` ran).
    dispatch : Dispatch or None
        The asynchronous dispatch whose own random stream the client's work draws from
        (:meth:`~sfl_sim.algorithms.base.Algorithm.client_stream`); None: the round's.
    """

    client: int
    iteration: int
    model: nn.Module
    x: torch.Tensor
    y: torch.Tensor
    activations: torch.Tensor | None = None
    dispatch: Dispatch | None = None

    @property
    def batch_size(self) -> int:
        """B_k."""
        return int(self.y.shape[0])


Upload = ClientActivations | Lost
Answer = Reply | Lost


class Exchange:
    """Upload and reply slots of one round, one pair per (local iteration t, client k).

    Each slot is a SimPy event fired once: an upload slot with the :class:`ClientActivations`
    or a :class:`~sfl_sim.engine.Lost`, a reply slot with the :class:`Reply` or a ``Lost``
    (the server left the client out).  A process waits on a slot with ``yield``.

    Parameters
    ----------
    ctx : RoundContext
    clients : list of int
    iterations : int or mapping of int to int
        T for every client, or each client's own count (with ``local_epochs`` clients holding
        different amounts of data run different numbers of iterations).

    Attributes
    ----------
    iterations : int
        The most iterations any client runs (slots exist for t < :meth:`count` of each client).
    """

    def __init__(self, ctx: RoundContext, clients: list[int], iterations: int | Mapping[int, int]) -> None:
        counts = {k: int(iterations) for k in clients} if isinstance(iterations, int) else \
            {k: int(iterations[k]) for k in clients}
        self._counts = counts
        self.iterations = max(counts.values(), default=0)
        self._uploads: list[dict[int, simpy.Event]] = [{k: ctx.event() for k in clients if t < counts[k]}
                                                       for t in range(self.iterations)]
        self._replies: list[dict[int, simpy.Event]] = [{k: ctx.event() for k in clients if t < counts[k]}
                                                       for t in range(self.iterations)]

    def count(self, k: int) -> int:
        """Local iterations client k runs this round."""
        return self._counts[k]

    def iterating(self, t: int, clients: list[int]) -> list[int]:
        """Those of ``clients`` that run an iteration t (in the given order)."""
        return [k for k in clients if t < self._counts[k]]

    def upload(self, t: int, k: int) -> simpy.Event:
        """Slot of client k's upload at iteration t (value: :data:`Upload`)."""
        return self._uploads[t][k]

    def reply(self, t: int, k: int) -> simpy.Event:
        """Slot of the server's reply to client k at iteration t (value: :data:`Answer`)."""
        return self._replies[t][k]

    def send(self, t: int, k: int, upload: Upload) -> None:
        """Client k's upload of iteration t arrived (or was lost)."""
        self._uploads[t][k].succeed(upload)

    def answer(self, t: int, k: int, answer: Answer) -> None:
        """The server's reply to client k at iteration t is ready (or the client is left out)."""
        self._replies[t][k].succeed(answer)

    def leave(self, k: int, after: int, lost: Lost) -> None:
        """Client k is out of the round after iteration ``after``: its later uploads will never
        come, so a server waiting for them (in order, as SplitFedV2's does) moves on."""
        for t in range(after + 1, self._counts[k]):
            if not self._uploads[t][k].triggered:
                self._uploads[t][k].succeed(lost)


class StepRunner(Protocol):
    """How a round's client steps run (:class:`sfl_sim.algorithms.split.base.ClientSteps` and
    its vectorised subclass; named here because split_base imports this module)."""

    def forward(self, ctx: RoundContext, step: ClientStep) -> SimSteps[torch.Tensor]:
        """Client k's forward of ``step``, timed; ``yield from`` it.  Returns A_k."""

    def on_reply(self, ctx: RoundContext, step: ClientStep, reply: Reply) -> SimSteps[None]:
        """Client k's work on the server's reply, timed; ``yield from`` it."""

    def activations_ready(self) -> None:
        """The server is about to read uploaded activations."""

    def finish(self) -> None:
        """The round's clients are done."""


@dataclass
class SplitRound:
    """What one split-learning round's client and server processes share.

    Attributes
    ----------
    ctx : RoundContext
    clients : list of int
        The cohort, in order.
    batch_sizes : dict of int to int
        B_k of each client (eq. 3), or b with ``local_epochs``.
    local : dict of int to nn.Module
        Each client's working copy of the client side (from
        :meth:`~sfl_sim.algorithms.split.base.SplitFedBase.distribute`).
    servers : dict of int to nn.Module or None
        Per-client copies of the server side (``per_client`` mode), else None.
    exchange : Exchange
    work : dict of int to ClientWork
        Each client's local work: its iteration count and the batch of each iteration.
    steps : ClientSteps or None
        How the clients' torch work runs (:class:`sfl_sim.algorithms.split.base.ClientSteps`; with
        ``execution: vectorised`` deferred and stacked, the forwards running when the server
        first reads activations: :meth:`activations_ready`).
    """

    ctx: RoundContext
    clients: list[int]
    batch_sizes: dict[int, int]
    local: dict[int, nn.Module]
    servers: dict[int, nn.Module] | None
    exchange: Exchange
    work: dict[int, ClientWork] = field(default_factory=dict)
    steps: StepRunner | None = None

    def activations_ready(self) -> None:
        """Call before the server reads uploaded activations: with vectorised execution the
        clients' forwards run now, stacked (a no-op in the loop, where they ran at their events)."""
        if self.steps is not None:
            self.steps.activations_ready()
