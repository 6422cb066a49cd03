"""A client's local work in one round: how many iterations, and which samples each one uses.

Two modes (``training:`` section):

* ``local_iterations: T`` (SCALA's setting, the default) — T iterations, each on a fresh random
  minibatch of B_k samples, B_k = |D_k| B / sum_j |D_j| over the cohort (eq. 3);
* ``local_epochs: E`` with a client batch size b (the FL papers' setting) — E passes over the
  client's data: each epoch draws a fresh permutation of D_k and cuts it into ceil(|D_k| / b)
  batches of b samples (the last one holds the rest), so every sample is used exactly once per
  epoch and the client runs ceil(|D_k| / b) E iterations.

Every draw comes from the setup's ``minibatch_rng``.  A synchronous round makes all of them at its
start (:func:`draw_in_iteration_order`: iteration by iteration, each in cohort order), so which
samples a client trains on never depends on when its events happen: not on the link, the compute
budgets or the scheduler.  That is what lets a re-timed run (:mod:`sfl_sim.runs.retime`) keep the
recorded training under any timing change.  A :class:`ClientWork` that is not drawn ahead draws
when its iteration runs, in simulated-event order (the asynchronous algorithms, whose dispatches
are events).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
import torch

__all__ = ["ClientData", "ClientWork", "EpochWork", "IterationWork", "draw_in_iteration_order", "epoch_iterations",
           "random_batch", "random_pick", "to_device"]

Batch = tuple[torch.Tensor, torch.Tensor]


class ClientData(Protocol):
    """What local work reads of a :class:`~sfl_sim.algorithms.base.TrainingSetup`: the training
    set, each client's sample indices and the minibatch stream."""

    @property
    def train_x(self) -> torch.Tensor:
        """Training inputs, first axis the sample."""

    @property
    def train_y(self) -> torch.Tensor:
        """Training labels, shape (N,)."""

    @property
    def client_indices(self) -> Sequence[torch.Tensor]:
        """Sample indices of each client's local data."""

    @property
    def minibatch_rng(self) -> np.random.Generator:
        """The stream every minibatch draw comes from."""


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A host array as a tensor on ``device``, without a host sync (re-exported by :mod:`sfl_sim.algorithms.base`).

    On CPU the tensor shares the array's memory.  On a GPU the array goes through pinned memory
    with a non-blocking copy: a copy from ordinary (pageable) memory waits for the device, i.e.
    a sync per call (the caching host allocator keeps the pinned block until the copy is done).
    """
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if device.type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


def random_pick(setup: ClientData, client: int, size: int) -> np.ndarray:
    """Positions (into client ``client``'s sample indices) of ``size`` random samples, without
    replacement inside the batch unless the client holds fewer samples than ``size``."""
    n = len(setup.client_indices[client])
    return setup.minibatch_rng.choice(n, size=size, replace=size > n)


def _rows(setup: ClientData, client: int, positions: np.ndarray) -> Batch:
    indices = setup.client_indices[client]
    rows = indices[to_device(positions, indices.device)]
    return setup.train_x[rows], setup.train_y[rows]


def random_batch(setup: ClientData, client: int, size: int) -> Batch:
    """``size`` random samples of client ``client``'s data (:func:`random_pick`)."""
    return _rows(setup, client, random_pick(setup, client, size))


class ClientWork:
    """Client k's local work in one round.

    Attributes
    ----------
    client : int
    iterations : int
        Local iterations the client runs this round (each one timed and charged).
    batch_size : int
        Samples of a full batch (B_k or b); an epoch's last batch may hold fewer.
    """

    def __init__(self, setup: ClientData, client: int, iterations: int, batch_size: int) -> None:
        self.setup = setup
        self.client = client
        self.iterations = int(iterations)
        self.batch_size = int(batch_size)

    def batch(self, t: int) -> Batch:
        """The minibatch ``(x, y)`` of iteration ``t`` (0-based); call once per iteration, in order."""
        raise NotImplementedError

    def draw(self, t: int) -> None:
        """Make iteration ``t``'s random draw now, for :meth:`batch` to use later; call once per
        iteration, in order, before that iteration's :meth:`batch`.  The default draws nothing
        ahead (a subclass whose batches are not random, or that draws when it runs)."""


class IterationWork(ClientWork):
    """T iterations, each on B_k random samples (eq. 3)."""

    def __init__(self, setup: ClientData, client: int, iterations: int, batch_size: int) -> None:
        super().__init__(setup, client, iterations, batch_size)
        self._drawn: dict[int, np.ndarray] = {}

    def draw(self, t: int) -> None:
        self._drawn[t] = random_pick(self.setup, self.client, self.batch_size)

    def batch(self, t: int) -> Batch:
        pick = self._drawn.pop(t, None)
        if pick is None:
            pick = random_pick(self.setup, self.client, self.batch_size)
        return _rows(self.setup, self.client, pick)


class EpochWork(ClientWork):
    """E epochs of ceil(|D_k| / b) batches; a fresh permutation of D_k each epoch.

    Parameters
    ----------
    setup : ClientData
    client : int
    epochs : int
        E.
    batch_size : int
        b (a client holding fewer samples uses them all in one batch).
    """

    def __init__(self, setup: ClientData, client: int, epochs: int, batch_size: int) -> None:
        n = len(setup.client_indices[client])
        b = min(int(batch_size), n)
        super().__init__(setup, client, math.ceil(n / b) * int(epochs), b)
        self.batches_per_epoch = math.ceil(n / b)
        self._order: torch.Tensor | None = None
        self._drawn: dict[int, np.ndarray] = {}  # epoch -> its permutation, drawn ahead

    def draw(self, t: int) -> None:
        if t % self.batches_per_epoch == 0:  # an epoch's one draw: its permutation
            self._drawn[t // self.batches_per_epoch] = self._permutation()

    def _permutation(self) -> np.ndarray:
        return self.setup.minibatch_rng.permutation(len(self.setup.client_indices[self.client]))

    def batch(self, t: int) -> Batch:
        epoch, position = divmod(t, self.batches_per_epoch)
        indices = self.setup.client_indices[self.client]
        if position == 0 or self._order is None:
            perm = self._drawn.pop(epoch, None)
            if perm is None:
                perm = self._permutation()
            self._order = indices[to_device(perm, indices.device)]
        rows = self._order[position * self.batch_size:(position + 1) * self.batch_size]
        return self.setup.train_x[rows], self.setup.train_y[rows]


def draw_in_iteration_order(work: Mapping[int, ClientWork], clients: Sequence[int]) -> None:
    """Make every random draw of a round's local work now: iteration t of every client (in
    ``clients``' order) before iteration t + 1 of any, as if the clients stepped in lockstep.

    The draws then do not depend on when each client's events happen (its link, its compute
    budget, the server's order of service), so a timing-only change leaves the training as it
    was.  A client that leaves the round early (an outage) has drawn its later iterations all the
    same: the stream stays where it would be had it finished.
    """
    longest = max((work[k].iterations for k in clients), default=0)
    for t in range(longest):
        for k in clients:
            if t < work[k].iterations:
                work[k].draw(t)


def epoch_iterations(data_size: int, batch_size: int, epochs: int) -> int:
    """ceil(|D_k| / b) E: the iterations of ``epochs`` passes in batches of ``batch_size``."""
    return math.ceil(data_size / min(batch_size, data_size)) * epochs


