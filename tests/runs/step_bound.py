"""How far two float32 computations of one SGD step may differ: a bound derived from rounding.

One step ``w' = w - lr g`` with ``g`` the gradient of the mean cross-entropy of a minibatch.  In
float32 (unit roundoff ``u = 2**-24``) any correct implementation (CPU, CUDA with TF32 off, any
summation order) gives, to first order in ``u`` (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., §3.1, ``gamma_n = n u / (1 - n u)``):

    |fl(w') - w'| <= u |w'| + u lr |g| + lr |fl(g) - g|                        (the update, the product)

Every weight gradient is a sum over the batch and the output positions of products of the
layer's input ``x`` and output gradient ``delta`` (``g = sum_{b,p} delta_{b,p} x_{b,p}``, N terms:
B for a linear layer, B x H_out x W_out for a convolution).  ``x`` comes out of the forward pass
through the layers below, each a dot product over its fan-in; ``delta`` out of the backward pass
through the layers above, each a dot product over its fan-out, and the softmax (C classes).  With
the relative error of each factor bounded by gamma of the dot-product lengths it went through
(bounded, here, by the sum over *all* layers of fan-in + fan-out, plus C), the sum of N such
products has

    |fl(g) - g| <= gamma_{n_t} * g_abs,   n_t = N + sum_layers (fan_in + fan_out) + C,
    g_abs = sum_{b,p} |delta_{b,p}| |x_{b,p}|

(``g_abs`` computed in float64 from the layer's input and output gradient, caught by hooks).
ReLU and max-pooling select, they do not round.  The assumption: the errors of ``x`` and
``delta`` are relative to their own magnitudes, i.e. no catastrophic cancellation inside the
network; :func:`tests.runs.test_step_bound` checks the bound on the real model and data against
float64 on the CPU.  Two float32 computations (CPU and CUDA) each lie within ``bound`` of the
exact step, so they differ by at most ``2 * bound`` element by element.
"""
from __future__ import annotations

import copy
import warnings

import torch
import torch.nn.functional as F
from torch import nn

U_F32 = 2.0 ** -24  #: float32 unit roundoff (half of torch.finfo(torch.float32).eps)


def gamma(n: int, u: float = U_F32) -> float:
    """Higham's ``gamma_n = n u / (1 - n u)``: the relative error bound of a sum of n terms."""
    if n * u >= 1:
        raise ValueError(f"n: got {n}; allowed: n * u < 1 (a bound for sums that short)")
    return n * u / (1 - n * u)


def sgd_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor, lr: float, dtype: torch.dtype = torch.float32,
             device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """The parameters after one plain SGD step (mean cross-entropy of ``(x, y)``) computed in
    ``dtype`` on ``device``; returned in float64 on the CPU.  ``model`` is not changed."""
    local = copy.deepcopy(model).to(device=device, dtype=dtype)
    loss = F.cross_entropy(local(x.to(device=device, dtype=dtype)), y.to(device))
    loss.backward()
    with torch.no_grad():
        for p in local.parameters():
            p -= lr * p.grad
    return {k: p.detach().to("cpu", torch.float64) for k, p in local.named_parameters()}


def _fans(module: nn.Module) -> tuple[int, int]:
    w = module.weight
    if isinstance(module, nn.Linear):
        return w.shape[1], w.shape[0]
    return w.shape[1] * w[0, 0].numel(), w.shape[0] * w[0, 0].numel()  # conv: C_in k k, C_out k k


def step_bound(model: nn.Module, x: torch.Tensor, y: torch.Tensor, lr: float) -> dict[str, torch.Tensor]:
    """Per parameter, element by element: the bound on ``|fl32(w') - w'|`` derived in the module
    docstring (float64, on the CPU).  Only Conv2d and Linear layers may hold parameters."""
    ref = copy.deepcopy(model).to(device="cpu", dtype=torch.float64)
    layers = {name: m for name, m in ref.named_modules() if isinstance(m, (nn.Conv2d, nn.Linear))}
    owned = {f"{name}.{p}" for name, m in layers.items() for p, _ in m.named_parameters(recurse=False)}
    others = [k for k, _ in ref.named_parameters() if k not in owned]
    if others:
        raise ValueError(f"model: parameters outside Conv2d/Linear layers {others}; allowed: Conv2d and Linear only")
    inputs: dict[str, torch.Tensor] = {}
    grads: dict[str, torch.Tensor] = {}
    hooks = []
    for name, m in layers.items():
        hooks.append(m.register_forward_hook(lambda _m, i, _o, name=name: inputs.__setitem__(name, i[0].detach())))
        hooks.append(m.register_full_backward_hook(
            lambda _m, _gi, go, name=name: grads.__setitem__(name, go[0].detach())))
    logits = ref(x.to("cpu", torch.float64))
    with warnings.catch_warnings():  # "no inputs require gradients": the first layer's input is data
        warnings.simplefilter("ignore", UserWarning)
        F.cross_entropy(logits, y.to("cpu")).backward()
    for h in hooks:
        h.remove()
    depth_terms = sum(sum(_fans(m)) for m in layers.values()) + logits.shape[1]
    bounds: dict[str, torch.Tensor] = {}
    for name, m in layers.items():
        xa, da = inputs[name].abs(), grads[name].abs()
        if isinstance(m, nn.Linear):
            terms = xa.shape[0]
            abs_grads = {"weight": da.t() @ xa, "bias": da.sum(0)}
        else:
            terms = da.shape[0] * da.shape[2] * da.shape[3]
            abs_grads = {"weight": torch.nn.grad.conv2d_weight(xa, m.weight.shape, da, m.stride, m.padding,
                                                               m.dilation, m.groups),
                         "bias": da.sum((0, 2, 3))}
        g_err = gamma(terms + depth_terms)
        for pname, p in m.named_parameters(recurse=False):
            new = (p - lr * p.grad).detach()
            bounds[f"{name}.{pname}"] = (U_F32 * new.abs() + U_F32 * lr * p.grad.abs()
                                         + lr * g_err * abs_grads[pname]).detach()
    return bounds


def excess(result: dict[str, torch.Tensor], reference: dict[str, torch.Tensor],
           allowed: dict[str, torch.Tensor]) -> dict[str, float]:
    """Per parameter, the greatest ``|result - reference| / allowed`` (<= 1: within the bound)."""
    return {k: float(((result[k] - reference[k]).abs() / allowed[k].clamp_min(1e-300)).max()) for k in reference}
