"""Conformance check: does a compressor behave like one the simulator can charge and train through?

:func:`check_compressor` builds the compressor (a registered name, ``package.module:Class``, a
class or an instance), runs it on a few small tensors and raises :class:`ConformanceError` — one
line naming the compressor, the check and what was wrong — or returns the checks that passed::

    from sfl_sim.compression.conformance import check_compressor
    check_compressor("my_pkg.codec:Sign", scale=True)

Checks, in order
----------------
``protocol``       the class has ``encode`` and ``decode`` (:class:`~sfl_sim.compression.Compressor`);
``builds``         it builds with the given parameters;
``encodes``        ``encode(x, generator)`` gives a :class:`~sfl_sim.compression.Payload` on a 0-d,
                   a 1-d, a 2-d and a 4-d tensor and an empty one;
``plain payload``  every buffer is a tensor that survives ``torch.save`` +
                   ``torch.load(weights_only=True)`` unchanged;
``size counted``   ``size_bytes`` is the sum of the buffers' ``nbytes`` and covers the shape header;
``decodes``        ``decode`` gives a finite tensor of the encoded shape and dtype, also from a
                   payload read back from bytes;
``input kept``     encoding leaves its input unchanged;
``same seed``      the same generator seed gives the same payload twice;
``constant``       an all-zero tensor decodes to all zeros (nothing to lose, nothing invented).
"""
from __future__ import annotations

import functools
import io
from typing import Any

import torch

from sfl_sim.compression import COMPRESSORS, Compressor, Payload
from sfl_sim.kit.conformance import ConformanceReport
from sfl_sim.kit.protocols import missing_members

__all__ = ["ConformanceError", "check_compressor"]


#: The shapes every compressor is run on: a scalar, a vector, a matrix, an activation, empty.
SHAPES = ((), (37,), (6, 9), (2, 3, 4, 5), (0, 3))


class ConformanceError(AssertionError):
    """A compressor failed a conformance check (the message is one line: compressor, check, why)."""


class _Report(ConformanceReport):
    kind = "compressor"
    error = ConformanceError


def _roundtrip(buffers: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    blob = io.BytesIO()
    torch.save(buffers, blob)
    blob.seek(0)
    return torch.load(blob, weights_only=True)


def check_compressor(spec: Any, **params: Any) -> dict[str, Any]:
    """Check a compressor against the protocol and the behaviours the simulator relies on.

    Parameters
    ----------
    spec : str, type or object
        A registered name, ``package.module:Class``, a class, or a built instance.
    **params
        Constructor parameters (not with an instance).

    Returns
    -------
    dict
        ``compressor`` (its name) and ``checks`` (the checks that passed, in order).

    Raises
    ------
    ConformanceError
        On the first failing check, in one line naming the compressor and the check.
    """
    name = spec if isinstance(spec, str) else getattr(spec, "__name__", type(spec).__name__)
    report = _Report(name)
    target = COMPRESSORS.get(spec) if isinstance(spec, str) else spec
    missing = missing_members(target, Compressor)
    report.check(not missing, "protocol", f"lacks {', '.join(missing)}; a compressor needs encode and decode")
    if isinstance(target, type):
        comp = report.attempt("builds", lambda: COMPRESSORS.build(spec, **params) if isinstance(spec, str)
                              else target(**params))
    else:
        comp = target
        report.check(not params, "builds", "parameters given with an instance")

    gen = torch.Generator().manual_seed(1234)
    for shape in SHAPES:
        x = torch.randn(shape, generator=gen) * 3.0
        before = x.clone()
        seed = int(torch.randint(0, 2 ** 31, (), generator=gen))
        payload = report.attempt("encodes", functools.partial(comp.encode, x, torch.Generator().manual_seed(seed)))
        report.check(isinstance(payload, Payload), "encodes", f"encode returned {type(payload).__name__}, "
                     f"not a Payload, for shape {shape}")
        report.check(torch.equal(x, before), "input kept", f"encode changed its input of shape {shape}")
        buffers = payload.buffers
        report.check(all(isinstance(b, torch.Tensor) for b in buffers.values()), "plain payload",
                     f"buffers {sorted(k for k, b in buffers.items() if not isinstance(b, torch.Tensor))} "
                     f"are not tensors")
        back = report.attempt("plain payload", functools.partial(_roundtrip, buffers))
        report.check(set(back) == set(buffers) and all(torch.equal(back[k], buffers[k]) and back[k].dtype ==
                                                       buffers[k].dtype for k in buffers),
                     "plain payload", "a buffer changed through torch.save/torch.load")
        counted = sum(b.nbytes for b in buffers.values())
        report.check(payload.size_bytes == counted, "size counted",
                     f"size_bytes {payload.size_bytes} != {counted}, the buffers' nbytes, for shape {shape}")
        report.check("shape" in buffers and buffers["shape"].nbytes >= 4 * len(shape), "size counted",
                     f"no shape header of {len(shape)} dimension(s) in the payload")
        for label, p in (("", payload), (" read back from bytes", Payload(back, payload.dtype, payload.agreed))):
            y = report.attempt("decodes", functools.partial(comp.decode, p))
            report.check(isinstance(y, torch.Tensor) and tuple(y.shape) == tuple(shape) and y.dtype == x.dtype,
                         "decodes", f"decode{label} gave {getattr(y, 'shape', y)} {getattr(y, 'dtype', '')}, "
                         f"expected {tuple(shape)} {x.dtype}")
            report.check(bool(torch.isfinite(y).all()), "decodes", f"decode{label} gave non-finite values")
        again = comp.encode(x, torch.Generator().manual_seed(seed))
        report.check(set(again.buffers) == set(buffers) and all(torch.equal(again.buffers[k], buffers[k])
                                                                for k in buffers),
                     "same seed", f"two encodes of shape {shape} with the same generator seed differ")
    zeros = torch.zeros(3, 4)
    y = comp.decode(comp.encode(zeros, torch.Generator().manual_seed(0)))
    report.check(torch.equal(y, zeros), "constant", f"an all-zero tensor decodes to max |y| = {y.abs().max().item()}")
    return {"compressor": name, "checks": list(report.passed)}
