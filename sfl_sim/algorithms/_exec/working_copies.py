"""Preallocated working copies of a model, refilled by copying weights in instead of ``deepcopy``.

Every round an algorithm gives each client of the cohort its own copy of the global model (or of
its client side, or of the server side per client).  ``copy.deepcopy`` builds a whole module tree
each time — 7 to 10 times dearer than copying the weights into a model that already exists, and
at 1,000 clients per round about 20 % of a SplitFedV1 round (measured on a 2-core CPU), plus the garbage it leaves
for the collector.  :class:`WorkingCopies` keeps the copies between rounds and refills them.

A refilled copy is what ``copy.deepcopy(source)`` would give, bit for bit, as far as training can
tell: every parameter and buffer holds the source's values, each parameter has the source's
``requires_grad`` and no gradient (``Parameter.__deepcopy__`` does not copy one either), and every
submodule has the source's train/eval flag.  (Plain Python attributes of the modules are copied
once, when a copy is first made by ``deepcopy``; a source whose structure changes — other
parameter or buffer objects — gets fresh copies.)
``tests/sfl_sim/algorithms/test_working_copies.py`` checks training on them gives the same weights
as on deep copies.
"""
from __future__ import annotations

import copy
from collections.abc import Hashable, Sequence
from typing import TypeVar

import torch
from torch import nn

Key = TypeVar("Key", bound=Hashable)

# ``torch._foreach_copy_`` copies a list of tensors in one fused call (one per model instead of one
# ``copy_`` per tensor: fewer dispatches and, on a GPU, fewer kernel launches) with the same
# values.  It is an underscore API: not part of torch's public, backward-compatible surface — it
# appeared in 2.1 and may change or go in any release.  So it is only looked up, never required:
# where this torch lacks it, or it refuses the arguments, :func:`copy_into` uses the public
# per-tensor ``Tensor.copy_`` loop, which gives the same copies (tests run both paths).
_foreach_copy = getattr(torch, "_foreach_copy_", None)


def _tensors(module: nn.Module) -> tuple[list[nn.Parameter], list[torch.Tensor]]:
    return list(module.parameters()), [b for b in module.buffers() if b is not None]


def copy_into(dst: Sequence[torch.Tensor], src: Sequence[torch.Tensor]) -> None:
    """``d.copy_(s)`` for every pair, without autograd (one fused ``torch._foreach_copy_`` call where
    torch offers it and accepts the tensors; see the comment above ``_foreach_copy``)."""
    if not dst:
        return
    with torch.no_grad():
        if _foreach_copy is not None:
            try:
                _foreach_copy(list(dst), list(src))
                return
            except (RuntimeError, TypeError, NotImplementedError):
                pass  # a torch whose private op changed or does not take these tensors: the public loop
        for d, s in zip(dst, src, strict=True):
            d.copy_(s)


class WorkingCopies:
    """Working copies of ``source``, made once and refilled from it on every :meth:`take`.

    Parameters
    ----------
    source : nn.Module
        The model the copies start from each round (e.g. the global model).

    Notes
    -----
    The copies handed out by one :meth:`take` stay valid until the next :meth:`take` of the same
    object, which refills them: take once per round, and deep-copy a working copy that must
    outlive the round.
    """

    def __init__(self, source: nn.Module) -> None:
        self.source = source
        self._copies: list[nn.Module] = []
        self._tensors: list[tuple[list[nn.Parameter], list[torch.Tensor]]] = []
        self._modules: list[list[nn.Module]] = []
        self._layout: tuple = ()

    def __len__(self) -> int:
        """How many copies exist (the most ever taken at once)."""
        return len(self._copies)

    def _source_layout(self) -> tuple:
        params, buffers = _tensors(self.source)
        return tuple(map(id, params)) + (None,) + tuple(map(id, buffers))

    def take(self, n: int) -> list[nn.Module]:
        """``n`` copies holding the source's current state (see the module docstring).

        Parameters
        ----------
        n : int
            Copies wanted (the pool grows by ``deepcopy`` when it holds fewer).

        Returns
        -------
        list of nn.Module
            ``n`` distinct modules, refilled; valid until the next ``take``.
        """
        layout = self._source_layout()
        if layout != self._layout:  # first use, or the source was rebuilt: start again
            self._copies, self._tensors, self._modules, self._layout = [], [], [], layout
        fresh = len(self._copies)
        while len(self._copies) < n:
            model = copy.deepcopy(self.source)
            self._copies.append(model)
            self._tensors.append(_tensors(model))
            self._modules.append(list(model.modules()))
        src_params, src_buffers = _tensors(self.source)
        src_flags = [m.training for m in self.source.modules()]
        requires_grad = [p.requires_grad for p in src_params]
        for i in range(min(n, fresh)):  # the new ones are deep copies already
            params, buffers = self._tensors[i]
            copy_into(params, src_params)
            copy_into(buffers, src_buffers)
            for p, flag in zip(params, requires_grad, strict=True):
                if p.requires_grad != flag:
                    p.requires_grad_(flag)
                p.grad = None  # deepcopy of a Parameter leaves its gradient behind too
            for module, flag in zip(self._modules[i], src_flags, strict=True):
                module.training = flag
        return self._copies[:n]

    def take_for(self, keys: Sequence[Key]) -> dict[Key, nn.Module]:
        """One copy per key (e.g. per cohort client), as :meth:`take` gives them."""
        keys = list(keys)
        return dict(zip(keys, self.take(len(keys)), strict=True))


class WorkingCopyPools:
    """One :class:`WorkingCopies` per source module, found by identity (an algorithm's helper)."""

    def __init__(self) -> None:
        self._pools: dict[int, WorkingCopies] = {}

    def take_for(self, source: nn.Module, keys: Sequence[Key]) -> dict[Key, nn.Module]:
        """Working copies of ``source``, one per key (see :meth:`WorkingCopies.take`)."""
        pool = self._pools.get(id(source))
        if pool is None or pool.source is not source:
            pool = self._pools[id(source)] = WorkingCopies(source)
        return pool.take_for(keys)
