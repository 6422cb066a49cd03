"""``topk``: the ``ceil(fraction * n)`` entries of largest magnitude, values and flat indices
(``per_sample``: that share of each index of dimension 0)."""
from __future__ import annotations

import torch

from sfl_sim.compression.base import COMPRESSORS, Payload, checked_input
from sfl_sim.compression.sparse import (
    FRACTION_FIELD,
    PER_SAMPLE_FIELD,
    as_rows,
    kept_entries,
    magnitude_order,
    sparse_decode,
    sparse_flops,
    sparse_payload,
)
from sfl_sim.kit.params import ParamsModel

__all__ = ["TopK"]


@COMPRESSORS.register("topk")
class TopK:
    """Top-k sparsification: the ``ceil(fraction * n)`` largest-magnitude entries, values plus indices.

    Parameters
    ----------
    fraction : float
        Share of the entries kept, in (0, 1].  Ties in magnitude go to the lower flat index.
    per_sample : bool
        Keep ``ceil(fraction * m)`` entries of each sample (each index of dimension 0, ``m``
        entries each; indices are within the sample) instead of over the whole tensor.  A tensor
        of fewer than two dimensions is one sample either way.
    """

    # its public import path, the one resolved.yaml records (`sfl_sim.compression:TopK`): which file of the
    # package defines it is no part of a run's record (a resume would warn that the class moved)
    __module__ = "sfl_sim.compression"

    class Params(ParamsModel):
        fraction: float = FRACTION_FIELD
        per_sample: bool = PER_SAMPLE_FIELD

    def __init__(self, fraction: float = 0.1, per_sample: bool = False) -> None:
        p = TopK.Params.check(fraction=fraction, per_sample=per_sample)
        self.fraction, self.per_sample = p.fraction, p.per_sample

    def encode(self, tensor: torch.Tensor, generator: torch.Generator | None = None) -> Payload:
        x = checked_input(tensor)
        rows = as_rows(x, self.per_sample)
        k = kept_entries(rows.shape[1], self.fraction)
        return sparse_payload(x, rows, magnitude_order(rows)[:, :k], self.per_sample)

    def decode(self, payload: Payload) -> torch.Tensor:
        return sparse_decode(payload)

    def codec_flops(self, shape: tuple[int, ...]) -> tuple[float, float]:
        """(encode, decode) FLOPs on ``shape`` (``n`` entries in rows of ``m``): encode
        ``n (1 + ceil(log2 m))`` (magnitudes, comparison sort), decode 0 (a scatter)."""
        return sparse_flops(shape, self.per_sample, 0.0)

    def __repr__(self) -> str:
        return f"TopK(fraction={self.fraction}, per_sample={self.per_sample})"
