"""``topk``: the ``ceil(fraction * n)`` entries of largest magnitude, values and flat indices
(``per_sample``: that share of each index of dimension 0)."""
from __future__ import annotations

import torch

from sfl_sim.compression.base import COMPRESSORS, Payload, checked_input
from sfl_sim.compression.sparse import (
    Fraction,
    PerSample,
    as_rows,
    kept_entries,
    magnitude_order,
    sparse_decode,
    sparse_flops,
    sparse_payload,
)
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import ParamsModel

__all__ = ["TopK"]


@COMPRESSORS.register("topk")
class TopK(Component):
    """Top-k sparsification: the ``ceil(fraction * n)`` largest-magnitude entries, values plus indices.

    Ties in magnitude go to the lower flat index; with ``per_sample`` the indices are within the
    sample, and a tensor of fewer than two dimensions is one sample either way.
    """

    # its public import path, the one resolved.yaml records (`sfl_sim.compression:TopK`): which file of the
    # package defines it is no part of a run's record (a resume would warn that the class moved)
    __module__ = "sfl_sim.compression"

    class Params(ParamsModel):
        fraction: Fraction = 0.1
        per_sample: PerSample = False

    params: Params

    def encode(self, tensor: torch.Tensor, generator: torch.Generator | None = None) -> Payload:
        x = checked_input(tensor)
        rows = as_rows(x, self.params.per_sample)
        k = kept_entries(rows.shape[1], self.params.fraction)
        return sparse_payload(x, rows, magnitude_order(rows)[:, :k], self.params.per_sample)

    def decode(self, payload: Payload) -> torch.Tensor:
        return sparse_decode(payload)

    def codec_flops(self, shape: tuple[int, ...]) -> tuple[float, float]:
        """(encode, decode) FLOPs on ``shape`` (``n`` entries in rows of ``m``): encode
        ``n (1 + ceil(log2 m))`` (magnitudes, comparison sort), decode 0 (a scatter)."""
        return sparse_flops(shape, self.params.per_sample, 0.0)

    def __repr__(self) -> str:
        return f"TopK(fraction={self.params.fraction}, per_sample={self.params.per_sample})"
