"""The vectorised cohort: a round's client steps run stacked, with ``torch.func.functional_call`` + ``vmap``.

The per-client loop (``execution: loop``) is the reference: every client's torch work runs in its
own SimPy process when its event fires.  With ``execution: vectorised`` the engine sees exactly
the same processes, events, bytes and FLOPs — one compute job per client and step, timed by the
same FLOPs, the same minibatches drawn in the same event order — but the torch work of the
cohort's working copies is *deferred* and run for many clients at once on their weights stacked
along a leading client dimension (the "model ensembling" pattern of ``torch.func``):

* **FL local steps** (:class:`CohortSteps`, FedAvg and FedCBS): the clients' T steps are recorded
  as their events fire and run after the straggler policy decided whose models count, step t of
  every kept client in one vmapped forward and one backward;
* **split client steps** (:class:`StackedClientSide`, the split algorithms with the default client
  hooks): a client's forward is computed when the server first reads activations (in the
  concatenated mode that is the whole cohort of the iteration at once), its backward when its
  weights are next needed (its next forward, or the round's end).

Why this equals the loop: a client's computation depends only on its own weights and minibatch,
and the event order (hence the minibatch draws) does not depend on any computed value — compute
time is FLOPs / FLOP/s and payload sizes are shapes.  What differs is float rounding (batched
kernels sum in another order); the tests check equality within float tolerance, and identical
clock, bytes and FLOPs.

Batches of different sizes B_k are padded with zero rows to the largest; a padded row's loss or
activation gradient is zero, so it adds nothing.  That needs models whose samples do not interact
and that draw no randomness: :func:`stacking_refusal` accepts convolutions, linear layers,
element-wise activations, pooling, flattening and ``Dropout(p=0)``, and no buffers (no
BatchNorm).  Plain SGD steps only (``w <- w - eta grad`` at the round's rate, what the loop's
``torch.optim.SGD`` without momentum or weight decay does), T iterations of eq. (3) batches:
:func:`~sfl_sim.algorithms._exec.execution.training_refusal` refuses every other
training setting (another optimizer, momentum, weight decay, ``local_epochs``, ``max_grad_norm``)
rather than train differently from the loop.

When it pays: on CPU it is slower than the loop (a vmap prototype: 0.88x for the client part,
0.97x for a whole-model step; this implementation with ``bench/vectorised.py`` on a busy 2-core
CPU: loop / vectorised 0.66-0.84 for SCALA, 0.46-1.06 for FedAvg), so ``execution: auto`` keeps
the loop there; on a GPU the loop is launch-bound and vmap should win, but ``auto`` switches only
once ``bench/vectorised.py`` has measured it (:data:`sfl_sim.runs.host.VECTORISED_BY_DEFAULT`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.algorithms._exec.working_copies import copy_into
from sfl_sim.algorithms.local_work import to_device

#: Samples per vmapped call (the cohort is cut into chunks of clients so their padded batches
#: hold about this many samples): bounds the memory of a step over 1,000 clients.
SAMPLES_PER_CALL = 8192

_ELEMENTWISE = (nn.ReLU, nn.LeakyReLU, nn.ELU, nn.GELU, nn.SiLU, nn.Tanh, nn.Sigmoid, nn.Identity, nn.Flatten)
_LAYERS = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear, nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d,
           nn.AvgPool2d, nn.AvgPool3d, nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d)
_CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict)


def stacking_refusal(module: nn.Module) -> str | None:
    """Why ``module`` cannot be trained stacked and padded (None when it can).

    Accepted: the layers of :data:`_LAYERS` and :data:`_ELEMENTWISE`, ``Dropout(p=0)``, plain
    containers (``Sequential``, ``ModuleList``, ``ModuleDict``) and this project's
    :class:`~sfl_sim.models.SplittableModel` (its blocks in order); no buffers.

    Parameters
    ----------
    module : nn.Module

    Returns
    -------
    str or None
        E.g. ``"classifier.1: Dropout(p=0.5) draws a random mask per client"``.
    """
    from sfl_sim.models import SplittableModel

    for name, _ in module.named_buffers():
        return f"it keeps buffers ({name}, e.g. BatchNorm statistics), which mix the samples of a batch"
    for name, sub in module.named_modules():
        where = name or type(sub).__name__
        kind = type(sub)
        if isinstance(sub, nn.Dropout):
            if sub.p > 0:
                return f"{where}: Dropout(p={sub.p:g}) draws a random mask per client"
        elif isinstance(sub, _ELEMENTWISE + _LAYERS):
            continue
        elif kind.forward in (nn.Sequential.forward, nn.Module.forward) and isinstance(sub, _CONTAINERS):
            continue  # a plain container (ModuleList/ModuleDict have no forward of their own)
        elif isinstance(sub, SplittableModel) and kind.forward is SplittableModel.forward:
            continue
        else:
            return f"{where}: {kind.__name__} is not a layer known to act on each sample alone"
    return None


def _stack(models: Sequence[nn.Module]) -> dict[str, torch.Tensor]:
    """Each parameter of the models, stacked along a new leading client dimension."""
    named = [dict(m.named_parameters()) for m in models]
    return {name: torch.stack([n[name].detach() for n in named]) for name in named[0]}


def _write_back(stacked: dict[str, torch.Tensor], rows: Sequence[int], models: Sequence[nn.Module]) -> None:
    """Row ``rows[i]`` of every stacked parameter into ``models[i]``."""
    names = list(stacked)
    for row, model in zip(rows, models, strict=True):
        params = dict(model.named_parameters())
        copy_into([params[n] for n in names], [stacked[n][row] for n in names])


def _pad(tensors: Sequence[torch.Tensor], length: int) -> torch.Tensor:
    """Stack ``(B_k, ...)`` tensors into ``(n, length, ...)``, zero rows after each B_k."""
    first = tensors[0]
    out = first.new_zeros((len(tensors), length, *first.shape[1:]))
    for i, t in enumerate(tensors):
        out[i, :t.shape[0]] = t
    return out


def _chunks(sizes: Sequence[int]) -> list[tuple[int, int]]:
    """(start, stop) ranges of clients whose padded batches hold about :data:`SAMPLES_PER_CALL` samples."""
    longest = max(sizes)
    per = max(1, SAMPLES_PER_CALL // max(1, longest))
    return [(i, min(i + per, len(sizes))) for i in range(0, len(sizes), per)]


def _sgd(params: Sequence[torch.Tensor], grads: Sequence[torch.Tensor], lr: float) -> None:
    """``p <- p - lr * g`` in place, as the loop's ``torch.optim.SGD`` step without momentum or weight decay."""
    with torch.no_grad():
        for p, g in zip(params, grads, strict=True):
            p.add_(g, alpha=-lr)


class CohortSteps:
    """FL local steps of a cohort, recorded as their events fire and run stacked afterwards.

    Parameters
    ----------
    template : nn.Module
        A model of the clients' architecture (its weights are not used).
    learning_rate : float
        The round's rate (:attr:`~sfl_sim.algorithms.base.Algorithm.learning_rate`, after the schedule).
    """

    def __init__(self, template: nn.Module, learning_rate: float) -> None:
        self.template = template
        self.learning_rate = learning_rate
        self.batches: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {}

    def record(self, client: int, x: torch.Tensor, y: torch.Tensor) -> None:
        """Client ``client``'s next local step will be on ``(x, y)``."""
        self.batches.setdefault(client, []).append((x, y))

    def run(self, local: dict[int, nn.Module], clients: Sequence[int]) -> None:
        """Train ``local[k]`` of every client in ``clients`` on its recorded steps (in place)."""
        clients = [k for k in clients if self.batches.get(k)]
        if not clients:
            return
        steps = len(self.batches[clients[0]])
        if any(len(self.batches[k]) != steps for k in clients):
            raise RuntimeError("vectorised FL steps: clients recorded different numbers of steps")
        sizes = [self.batches[k][0][0].shape[0] for k in clients]
        for start, stop in _chunks(sizes):
            group = clients[start:stop]
            stacked = _stack([local[k] for k in group])
            names = list(stacked)
            for t in range(steps):
                xs = [self.batches[k][t][0] for k in group]
                ys = [self.batches[k][t][1] for k in group]
                b = [x.shape[0] for x in xs]
                longest = max(b)
                x = _pad(xs, longest)
                y = _pad(ys, longest)
                rows = np.zeros((len(group), longest), dtype=np.float32)
                for i, n in enumerate(b):
                    rows[i, :n] = 1.0 / n  # the mean over B_k real rows
                mask = to_device(rows, x.device).to(x.dtype)
                leaves = {n: stacked[n].requires_grad_(True) for n in names}
                logits = torch.func.vmap(lambda p, xb: torch.func.functional_call(self.template, p, (xb,)))(leaves, x)
                losses = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="none")
                loss = (losses.view(len(group), longest) * mask).sum()
                grads = torch.autograd.grad(loss, [leaves[n] for n in names])
                stacked = {n: leaves[n].detach() for n in names}
                _sgd([stacked[n] for n in names], grads, self.learning_rate)
            _write_back(stacked, range(len(group)), [local[k] for k in group])


@dataclass
class _ForwardGroup:
    """One vmapped client forward: its clients' rows, leaf weights, and their activations' graph."""

    clients: list[int]
    leaves: list[torch.Tensor]
    acts: torch.Tensor  # (n, longest, *activation_shape), with graph to ``leaves``
    sizes: list[int]
    grads: dict[int, torch.Tensor] = field(default_factory=dict)  # reported, not yet applied
    done: set = field(default_factory=set)

    def __post_init__(self) -> None:
        self.index = {k: i for i, k in enumerate(self.clients)}


class StackedClientSide:
    """The cohort's client-side working copies, stacked, with deferred forwards and backwards.

    Parameters
    ----------
    template : nn.Module
        A module of the client side's architecture (used by ``functional_call``; weights unused).
    local : dict of int to nn.Module
        The round's working copies (:meth:`~sfl_sim.algorithms.split.base.SplitFedBase.distribute`); written back by
        :meth:`finish`.
    learning_rate : float
    activation : callable
        ``activation(batch_size) -> Tensor``: an empty activations tensor of the right shape,
        dtype and device, filled when the forward runs.
    """

    def __init__(self, template: nn.Module, local: dict[int, nn.Module], learning_rate: float,
                 activation: Callable[[int], torch.Tensor]) -> None:
        self.template = template
        self.local = local
        self.clients = list(local)
        self.row = {k: i for i, k in enumerate(self.clients)}
        self.weights = _stack([local[k] for k in self.clients])
        self.names = list(self.weights)
        self.learning_rate = learning_rate
        self._activation = activation
        self._pending: list[tuple[int, int, torch.Tensor, torch.Tensor]] = []  # (k, t, x, destination)
        self._group_of: dict[tuple[int, int], _ForwardGroup] = {}
        self._groups: list[_ForwardGroup] = []

    # -- called by the clients' processes ---------------------------------------------------------
    def forward_later(self, client: int, iteration: int, x: torch.Tensor) -> torch.Tensor:
        """Queue client ``client``'s forward on ``x``; returns the tensor its activations will fill."""
        dest = self._activation(x.shape[0])
        self._pending.append((client, iteration, x, dest))
        return dest

    def backward_later(self, client: int, iteration: int, grad: torch.Tensor) -> None:
        """Queue the backward of G_k into client ``client``'s weights (then an SGD step)."""
        group = self._group_of.get((client, iteration))
        if group is None:
            raise RuntimeError(f"vectorised split step: no forward of client {client} at iteration {iteration}")
        group.grads[client] = grad

    # -- called before the server reads activations, and at the round's end -----------------------
    def flush(self) -> None:
        """Run the backwards reported so far, then every queued forward (filling its tensor)."""
        self._backward()
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        sizes = [x.shape[0] for _, _, x, _ in pending]
        for start, stop in _chunks(sizes):
            part = pending[start:stop]
            clients = [k for k, _, _, _ in part]
            rows = to_device(np.array([self.row[k] for k in clients], dtype=np.int64), part[0][2].device)
            leaves = [self.weights[n].index_select(0, rows).requires_grad_(True) for n in self.names]
            b = sizes[start:stop]
            x = _pad([p[2] for p in part], max(b))
            acts = torch.func.vmap(self._call)(dict(zip(self.names, leaves, strict=True)), x)
            group = _ForwardGroup(clients, leaves, acts, b)
            self._groups.append(group)
            with torch.no_grad():
                for i, (k, t, _, dest) in enumerate(part):
                    dest.copy_(acts[i, :b[i]])
                    self._group_of[(k, t)] = group

    def _call(self, params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(self.template, params, (x,))

    def _backward(self) -> None:
        for group in self._groups:
            ready = [k for k in group.clients if k in group.grads and k not in group.done]
            if not ready:
                continue
            grad = torch.zeros_like(group.acts)
            for k in ready:
                i = group.index[k]
                grad[i, :group.sizes[i]] = group.grads.pop(k)
            group.done.update(ready)
            last = len(group.done) == len(group.clients)
            grads = torch.autograd.grad(group.acts, group.leaves, grad, retain_graph=not last)
            device = group.acts.device
            idx = to_device(np.array([group.index[k] for k in ready], dtype=np.int64), device)
            rows = to_device(np.array([self.row[k] for k in ready], dtype=np.int64), device)
            with torch.no_grad():
                for name, g in zip(self.names, grads, strict=True):
                    self.weights[name].index_add_(0, rows, g.index_select(0, idx), alpha=-self.learning_rate)
        self._groups = [g for g in self._groups if len(g.done) < len(g.clients)]

    def finish(self) -> None:
        """End of the round: apply every reported backward, write the weights into the working copies."""
        self._backward()
        self._pending = []
        self._groups = []
        self._group_of = {}
        _write_back(self.weights, range(len(self.clients)), [self.local[k] for k in self.clients])
