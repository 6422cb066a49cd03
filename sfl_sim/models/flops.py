"""FLOP and byte counts of real modules, per sample, for the compute and upload models.

FLOPs are measured, not derived from formulas: the modules are run once under
:class:`torch.utils.flop_counter.FlopCounterMode`, which counts matmul- and convolution-type
operators (``mm``, ``addmm``, ``bmm``, ``convolution`` and their backward ops) at 2 FLOPs per
multiply-accumulate.  Elementwise and reduction operators (ReLU, max-pool, dropout, bias
addition in backward, softmax/cross-entropy, optimizer updates) are *not* counted; for CNNs they
are a small fraction of the work.

Backward FLOPs depend on which gradients are needed.  For a layer whose input needs a gradient,
backward costs about 2× its forward (weight gradient + input gradient); for the first layer of the
client part the input (raw data) needs none, so backward costs about 1× forward.  The counting
below reproduces the split-learning data flow so that each side gets exactly its own share:

1. client forward on the data (no gradient w.r.t. the data),
2. server forward on the smashed activations (which *require* grad) and the cross-entropy loss,
3. server backward: parameter gradients *and* the gradient w.r.t. the activations (sent back),
4. client backward from that activation gradient: parameter gradients only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode


@dataclass(frozen=True)
class SplitFlops:
    """FLOPs of one training step of a split model, per sample.

    Attributes
    ----------
    client_forward_flops : float
        Client part forward, data → activations.
    client_backward_flops : float
        Client part backward from the activation gradient (parameter gradients only).
    server_forward_flops : float
        Server part forward, activations → logits (loss included; it counts as 0).
    server_backward_flops : float
        Server part backward: parameter gradients and the activation gradient.
    """

    client_forward_flops: float
    client_backward_flops: float
    server_forward_flops: float
    server_backward_flops: float

    @property
    def full_forward_flops(self) -> float:
        """Forward FLOPs of the whole model (client + server)."""
        return self.client_forward_flops + self.server_forward_flops

    @property
    def full_backward_flops(self) -> float:
        """Backward FLOPs of the whole model (client + server)."""
        return self.client_backward_flops + self.server_backward_flops

    @property
    def client_total_flops(self) -> float:
        """Client forward + backward FLOPs."""
        return self.client_forward_flops + self.client_backward_flops

    @property
    def server_total_flops(self) -> float:
        """Server forward + backward FLOPs."""
        return self.server_forward_flops + self.server_backward_flops


def _counted(fn: Callable[[], object]) -> Tuple[object, float]:
    """Run ``fn`` under a FlopCounterMode; return its result and the FLOPs counted."""
    counter = FlopCounterMode(display=False)
    with counter:
        result = fn()
    return result, float(counter.get_total_flops())


def _reference_tensor(modules: Sequence[nn.Module]) -> Optional[torch.Tensor]:
    for module in modules:
        for tensor in list(module.parameters()) + list(module.buffers()):
            if tensor.is_floating_point():
                return tensor
    return None


def _validate(input_shape: Sequence[int], batch_size: int) -> Tuple[int, ...]:
    try:
        shape = tuple(input_shape)
    except TypeError:
        shape = ()
    if not shape or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape):
        raise ValueError(f"input_shape = {input_shape!r} is invalid; allowed: a non-empty tuple of positive ints")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size = {batch_size!r} is invalid; allowed: an int >= 1")
    return shape


class _StatePreserved:
    """Context manager that puts modules in train mode and restores everything afterwards.

    Restores each submodule's train/eval flag, existing ``.grad`` tensors (so counting neither
    clears nor accumulates gradients), buffers (BatchNorm running statistics move in train mode)
    and the global RNG state (dropout draws random numbers; the simulation's random stream must
    not depend on whether FLOPs were counted).
    """

    def __init__(self, modules: Sequence[nn.Module], device: torch.device) -> None:
        self.modules = modules
        self.device = device

    def __enter__(self) -> "_StatePreserved":
        self._modes = [(m, m.training) for root in self.modules for m in root.modules()]
        self._params: List[nn.Parameter] = [p for root in self.modules for p in root.parameters()]
        self._grads = [p.grad for p in self._params]
        self._buffers: Dict[int, Tuple[torch.Tensor, torch.Tensor]] = {
            id(b): (b, b.detach().clone()) for root in self.modules for b in root.buffers()
        }
        devices = [self.device] if self.device.type == "cuda" else []
        self._rng = torch.random.fork_rng(devices=devices)
        self._rng.__enter__()
        for p in self._params:
            p.grad = None
        for root in self.modules:
            root.train()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            for p, grad in zip(self._params, self._grads):
                p.grad = grad
            with torch.no_grad():
                for buffer, saved in self._buffers.values():
                    buffer.copy_(saved)
            for module, mode in self._modes:
                module.training = mode
        finally:
            self._rng.__exit__(None, None, None)


def count_split_flops(
    client: nn.Module,
    server: nn.Module,
    input_shape: Sequence[int],
    batch_size: int = 2,
) -> SplitFlops:
    """Measure per-sample training FLOPs of a client part and a server part.

    Runs one training step (without optimizer update) on a zero batch of shape
    ``(batch_size, *input_shape)`` on the modules' own device and dtype, in train mode, and
    divides the counts by ``batch_size``.  See the module docstring for which operators count
    (matmul/conv type only, not elementwise ReLU/pool) and how the step is split into four parts.

    Parameters
    ----------
    client : nn.Module
        Client part; maps ``(B, *input_shape)`` to activations ``(B, ...)``.
    server : nn.Module
        Server part; maps the activations to logits of shape ``(B, num_classes)``.
    input_shape : sequence of int
        Per-sample input shape, e.g. ``(1, 28, 28)``.
    batch_size : int, default 2
        Batch used for counting; FLOPs of these layers are linear in it, so the per-sample result
        does not depend on it.  More than 1 keeps batch-dependent layers (BatchNorm) valid.

    Returns
    -------
    SplitFlops
        Per-sample forward and backward FLOPs of each side.

    Raises
    ------
    ValueError
        If ``input_shape`` or ``batch_size`` is invalid or the server output is not 2-D logits.

    Notes
    -----
    Parameters are never changed; existing ``.grad`` values, buffers, train/eval flags and the
    global RNG state are restored afterwards.
    """
    shape = _validate(input_shape, batch_size)
    ref = _reference_tensor([client, server])
    device = ref.device if ref is not None else torch.device("cpu")
    dtype = ref.dtype if ref is not None else torch.get_default_dtype()

    with _StatePreserved([client, server], device), torch.enable_grad():
        # The data needs no gradient, so the client's first layer computes weight gradients only.
        x = torch.zeros((batch_size, *shape), device=device, dtype=dtype)
        activations, client_fwd = _counted(lambda: client(x))
        assert isinstance(activations, torch.Tensor)

        # The server receives a copy of the activations and must return their gradient.
        received = activations.detach().requires_grad_(True)
        target = torch.zeros(batch_size, dtype=torch.long, device=device)

        def server_forward() -> torch.Tensor:
            logits = server(received)
            if logits.dim() != 2:
                raise ValueError(
                    f"server output shape = {tuple(logits.shape)} is invalid; allowed: 2-D logits (B, num_classes)"
                )
            return F.cross_entropy(logits, target)

        loss, server_fwd = _counted(server_forward)
        assert isinstance(loss, torch.Tensor)
        _, server_bwd = _counted(lambda: loss.backward())

        grad = received.grad
        if activations.requires_grad and grad is not None:
            _, client_bwd = _counted(lambda: activations.backward(grad))
        else:
            # A client with nothing to train (no parameters needing grad) has no backward pass.
            client_bwd = 0.0

    return SplitFlops(
        client_forward_flops=client_fwd / batch_size,
        client_backward_flops=client_bwd / batch_size,
        server_forward_flops=server_fwd / batch_size,
        server_backward_flops=server_bwd / batch_size,
    )


def count_model_flops(model: nn.Module, input_shape: Sequence[int], batch_size: int = 2) -> Tuple[float, float]:
    """Measure per-sample training FLOPs of an unsplit model (federated-learning baselines).

    The whole model is counted as a client part followed by an empty (identity) server part, so
    the data flow is the same as in :func:`count_split_flops`: the first layer's backward computes
    weight gradients only.

    Parameters
    ----------
    model : nn.Module
        Maps ``(B, *input_shape)`` to logits ``(B, num_classes)``.
    input_shape : sequence of int
        Per-sample input shape.
    batch_size : int, default 2
        Batch used for counting.

    Returns
    -------
    forward_flops : float
        Per-sample forward FLOPs.
    backward_flops : float
        Per-sample backward FLOPs.
    """
    flops = count_split_flops(model, nn.Identity(), input_shape, batch_size)
    return flops.client_forward_flops, flops.client_backward_flops


def parameter_bytes(module: nn.Module) -> int:
    """Size in bytes of a module's parameters and buffers, i.e. what a model upload sends.

    Parameters
    ----------
    module : nn.Module

    Returns
    -------
    int
        ``sum(t.numel() * t.element_size())`` over parameters and buffers (shared tensors once).
    """
    seen = set()
    total = 0
    for tensor in list(module.parameters()) + list(module.buffers()):
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        total += tensor.numel() * tensor.element_size()
    return total
