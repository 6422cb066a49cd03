"""``quantize``: ``bits``-bit uniform codes over ``[-s, s]``, ``s = max |x|`` per tensor or per channel
(dimension 1), deterministic or stochastic (unbiased) rounding; the codes packed into bytes."""
from __future__ import annotations

import math
from typing import Annotated, Literal

import torch
from pydantic import Field

from sfl_sim.compression.base import COMPRESSORS, Payload, checked_input, needs_generator, shape_header
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel

__all__ = ["Quantize", "pack_bits", "unpack_bits"]


def pack_bits(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack integer codes in ``[0, 2**bits)`` into ``ceil(len * bits / 8)`` bytes, LSB first.

    Parameters
    ----------
    codes : Tensor
        1-d integer tensor.
    bits : int
        Width of each code, 1..16.

    Returns
    -------
    Tensor
        ``uint8``, the codes' bits one after another (code i's bit j is stream bit ``i*bits + j``).
    """
    codes = codes.reshape(-1).to(torch.int64)
    shifts = torch.arange(bits, dtype=torch.int64, device=codes.device)
    stream = ((codes.unsqueeze(1) >> shifts) & 1).reshape(-1).to(torch.uint8)
    pad = (-stream.numel()) % 8
    if pad:
        stream = torch.cat([stream, torch.zeros(pad, dtype=torch.uint8, device=codes.device)])
    weights = (1 << torch.arange(8, dtype=torch.int64, device=codes.device))
    return (stream.reshape(-1, 8).to(torch.int64) * weights).sum(dim=1).to(torch.uint8)


def unpack_bits(packed: torch.Tensor, bits: int, count: int) -> torch.Tensor:
    """The ``count`` codes of width ``bits`` that :func:`pack_bits` packed, as int64."""
    device = packed.device
    stream = ((packed.to(torch.int64).unsqueeze(1) >> torch.arange(8, dtype=torch.int64, device=device)) & 1)
    stream = stream.reshape(-1)[: count * bits].reshape(count, bits)
    return (stream << torch.arange(bits, dtype=torch.int64, device=device)).sum(dim=1)


@COMPRESSORS.register("quantize")
class Quantize(Component):
    """Uniform ``bits``-bit quantization over ``[-s, s]``, ``s = max |x|``; packed codes plus scales.

    Code ``q`` in ``[0, 2**bits - 1]`` stands for ``-s + q * step`` with ``step = 2 s / (2**bits - 1)``,
    so ``±s`` are exact (and an all-zero tensor, whose ``s`` is 0).  0 itself is not a level: the
    ``2**bits`` levels lie symmetric about 0, so an entry near 0 decodes to ``±step / 2`` (``±s / 3``
    at 2 bits, which is why 2-bit deterministic updates push every weight by a third of the largest
    change and FedAvg diverges with them).  Deterministic rounding takes the nearest level (error at most
    ``step / 2 = s / (2**bits - 1)``); stochastic rounding takes the level above with probability
    equal to the distance from the level below, in steps (unbiased, error below ``step``).
    """

    # its public import path, the one resolved.yaml records (`sfl_sim.compression:Quantize`): which file of the
    # package defines it is no part of a run's record (a resume would warn that the class moved)
    __module__ = "sfl_sim.compression"

    class Params(ParamsModel):
        bits: Annotated[int, Field(ge=1, le=16), Doc("Bits per code, 1..16.")] = 8
        rounding: Annotated[Literal["deterministic", "stochastic"], Doc(
            "Nearest level, or unbiased random rounding (draws from the ``generator`` given to encode).")] = \
            "deterministic"
        scale: Annotated[Literal["per_tensor", "per_channel"], Doc(
            "One ``float32`` scale ``s``, or one per index of dimension 1 (channels of an activation ``(B, C, ...)``; "
            "a tensor of fewer than two dimensions has one scale either way).")] = "per_tensor"

    params: Params

    def _scales(self, x: torch.Tensor) -> torch.Tensor:
        """``s`` as float32, rounded up so that ``|x| <= s`` holds for a float64 ``x`` too: shape
        (1,) per tensor, (C,) per channel."""
        if self.params.scale == "per_channel" and x.dim() >= 2:
            s = x.abs().transpose(0, 1).reshape(x.shape[1], -1).amax(dim=1) if x.numel() \
                else torch.zeros(x.shape[1], dtype=x.dtype, device=x.device)
        else:
            s = x.abs().amax().reshape(1) if x.numel() else torch.zeros(1, dtype=x.dtype, device=x.device)
        s32 = s.to(torch.float32)
        return torch.where(s32.to(s.dtype) < s, torch.nextafter(s32, torch.full_like(s32, math.inf)), s32)

    @staticmethod
    def _broadcast(s: torch.Tensor, x_shape: tuple[int, ...], per_channel: bool) -> torch.Tensor:
        if per_channel and len(x_shape) >= 2:
            return s.reshape([1, s.numel()] + [1] * (len(x_shape) - 2))
        return s.reshape([1] * len(x_shape)) if x_shape else s.reshape(())

    def encode(self, tensor: torch.Tensor, generator: torch.Generator | None = None) -> Payload:
        x = checked_input(tensor)
        top = 2 ** self.params.bits - 1
        s = self._scales(x)
        # float64 arithmetic: the code of a value is not perturbed by float32 rounding of x/step.
        sb = self._broadcast(s, tuple(x.shape), self.params.scale == "per_channel").to(torch.float64)
        step = 2.0 * sb / top
        t = (x.to(torch.float64) + sb) / torch.where(step > 0, step, torch.ones_like(step))
        if self.params.rounding == "stochastic":
            gen = needs_generator("quantize", generator)
            low = torch.floor(t)
            u = torch.rand(t.shape, generator=gen, dtype=torch.float64, device=gen.device).to(t.device)
            q = low + (u < (t - low)).to(torch.float64)
        else:
            q = torch.floor(t + 0.5)
        q = q.clamp(0, top).to(torch.int64)
        return Payload({"codes": pack_bits(q, self.params.bits), "scales": s, "shape": shape_header(x)}, x.dtype,
                       {"bits": self.params.bits, "scale": self.params.scale})

    def decode(self, payload: Payload) -> torch.Tensor:
        shape = payload.shape
        count = math.prod(shape)
        bits = int(payload.agreed["bits"])
        top = 2 ** bits - 1
        q = unpack_bits(payload.buffers["codes"], bits, count).reshape(shape).to(torch.float64)
        sb = self._broadcast(payload.buffers["scales"], shape, payload.agreed["scale"] == "per_channel")
        sb = sb.to(torch.float64)
        return (-sb + q * (2.0 * sb / top)).to(payload.dtype)

    def codec_flops(self, shape: tuple[int, ...]) -> tuple[float, float]:
        """(encode, decode) FLOPs for a tensor of ``shape`` of ``n`` entries: encode ``5 n`` (the
        magnitude and the running maximum for the scale, shift, divide by the step, round) plus
        ``n`` for stochastic rounding's comparison with the draw; decode ``2 n`` (multiply by the
        step, shift back).  Bit packing is integer work and not counted."""
        n = float(math.prod(shape))
        return (6.0 if self.params.rounding == "stochastic" else 5.0) * n, 2.0 * n

    def __repr__(self) -> str:
        return f"Quantize(bits={self.params.bits}, rounding={self.params.rounding!r}, scale={self.params.scale!r})"
