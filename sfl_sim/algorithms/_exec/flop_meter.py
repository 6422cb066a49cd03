"""FLOPs of the real torch work an algorithm does, counted once and reused.

Each training step an algorithm runs (client forward, client backward, server step, local FL
step...) is wrapped in :meth:`FlopMeter.run`.  The first time a step kind runs, it executes
under a FLOP-counting dispatch mode and its FLOPs per sample are stored;
later calls run bare and are charged ``per_sample * n_samples``.  Counting every call would slow
training (the counter intercepts every op); counting once is exact because conv/linear FLOPs are
linear in the batch size.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

# Why not the public ``torch.utils.flop_counter.FlopCounterMode``: it always runs a
# ``ModuleTracker`` whose multi-grad hooks raise "A leaf node was passed to
# _will_engine_execute_node but we are currently running autograd.grad()" under
# ``torch.autograd.grad`` (seen with torch 2.13), which SCALA's server step and SCALA-PE's privacy step
# use, and which any algorithm may use.  So this mode applies the same public formulas
# (``flop_registry``) from a plain dispatch mode; ``TorchDispatchMode`` is only importable from a
# private module.  tests/sfl_sim/algorithms/test_flop_meter.py checks that both count the same
# where FlopCounterMode works, and fails (strict xfail) once torch lifts the limitation.
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

Result = TypeVar("Result")


class _CountFlops(TorchDispatchMode):
    """Counts FLOPs of every op with a formula in torch's ``flop_registry`` (matmul, conv, ...).

    The same formulas as :class:`torch.utils.flop_counter.FlopCounterMode`, without its module
    tracker (see the comment above).
    """

    def __init__(self) -> None:
        super().__init__()
        self.total_flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        formula = flop_registry.get(func._overloadpacket)
        if formula is not None:
            self.total_flops += formula(*args, **kwargs, out_val=out)
        return out


class FlopMeter:
    """Cache of FLOPs per sample by step kind."""

    def __init__(self) -> None:
        self.flops_per_sample: dict[str, float] = {}

    def run(self, kind: str, n_samples: int, fn: Callable[[], Result]) -> tuple[Result, float]:
        """Run ``fn()`` and return ``(its result, FLOPs of the step)``.

        Parameters
        ----------
        kind : str
            Step kind; every call of one kind must do the same work per sample.
        n_samples : int
            Samples the step processes (the batch size).
        fn : callable
            The real torch work.
        """
        per_sample = self.flops_per_sample.get(kind)
        if per_sample is None:
            with _CountFlops() as counter:
                result = fn()
            per_sample = counter.total_flops / max(n_samples, 1)
            self.flops_per_sample[kind] = per_sample
            return result, per_sample * n_samples
        return fn(), per_sample * n_samples

    def state_dict(self) -> dict[str, float]:
        """The FLOPs per sample measured so far, by step kind (a copy)."""
        return dict(self.flops_per_sample)

    def load_state_dict(self, state: dict[str, float]) -> None:
        """Take the measurements of :meth:`state_dict`: a resumed run counts every step kind with
        the per-sample FLOPs it measured before, not a fresh (possibly different) measurement."""
        self.flops_per_sample.update(state)
