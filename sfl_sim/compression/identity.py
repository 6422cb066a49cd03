"""``identity``: the tensor itself (lossless)."""
from __future__ import annotations

import torch

from sfl_sim.compression.base import COMPRESSORS, Payload, checked_input, shape_header
from sfl_sim.kit.component import Component

__all__ = ["Identity"]


@COMPRESSORS.register("identity")
class Identity(Component):
    """No compression: the tensor as it is (values in their dtype plus the shape header).

    In a scenario's ``compression:`` block it means no codec at all: the path is sent exactly as
    without compression (no header; :mod:`sfl_sim.algorithms._exec.compressed`)."""

    # its public import path, the one resolved.yaml records (`sfl_sim.compression:Identity`): which file of the
    # package defines it is no part of a run's record (a resume would warn that the class moved)
    __module__ = "sfl_sim.compression"

    def encode(self, tensor: torch.Tensor, generator: torch.Generator | None = None) -> Payload:
        x = checked_input(tensor)
        return Payload({"values": x.contiguous().clone(), "shape": shape_header(x)}, x.dtype)

    def decode(self, payload: Payload) -> torch.Tensor:
        return payload.buffers["values"].reshape(payload.shape).clone()

    def codec_flops(self, shape: tuple[int, ...]) -> tuple[float, float]:
        """(encode, decode) FLOPs for a tensor of ``shape``: none, nothing is computed."""
        return 0.0, 0.0
