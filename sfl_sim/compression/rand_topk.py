"""``rand_topk``: randomized top-k (Zheng et al., "Reducing Communication for Split Learning by
Randomized Top-k Sparsification", IJCAI 2023, arXiv:2305.18469): as many entries as ``topk``,
drawn without replacement, each top-k entry with weight ``(1 - alpha) / k`` and each other entry
with weight ``alpha / (n - k)``."""
from __future__ import annotations

from typing import Annotated

import torch
from pydantic import Field

from sfl_sim.compression.base import COMPRESSORS, Payload, checked_input, needs_generator
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
from sfl_sim.kit.params import Doc, ParamsModel

__all__ = ["RandTopK"]


@COMPRESSORS.register("rand_topk")
class RandTopK(Component):
    """Randomized top-k (arXiv:2305.18469): k entries drawn, the top-k likely, the others sometimes.

    The ``k = ceil(fraction * n)`` kept entries are drawn without replacement with weight
    ``(1 - alpha) / k`` for each of the k largest-magnitude entries and ``alpha / (n - k)`` for
    every other one (Zheng et al. 2023; the weights of their ``torch.multinomial`` form), so
    ``alpha`` is the chance that the first draw is a non-top-k entry; ``alpha = 0`` is
    :class:`~sfl_sim.compression.topk.TopK`.  The paper draws per sample (``per_sample: true``, each row of a batch of
    cut-layer activations) and uses plain top-k at inference; this class sparsifies whatever it
    is given (the caller decides what and when).
    """

    # its public import path, the one resolved.yaml records (`sfl_sim.compression:RandTopK`): which file of the
    # package defines it is no part of a run's record (a resume would warn that the class moved)
    __module__ = "sfl_sim.compression"

    class Params(ParamsModel):
        fraction: Fraction = 0.1
        alpha: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False), Doc(
            "Total selection weight of the non-top-k entries, in [0, 1).")] = 0.1
        per_sample: PerSample = False

    params: Params

    def encode(self, tensor: torch.Tensor, generator: torch.Generator | None = None) -> Payload:
        gen = needs_generator("rand_topk", generator)
        x = checked_input(tensor)
        rows = as_rows(x, self.params.per_sample)
        n_rows, m = rows.shape
        k = kept_entries(m, self.params.fraction)
        order = magnitude_order(rows)
        if k in (0, m) or n_rows == 0:
            return sparse_payload(x, rows, order[:, :k], self.params.per_sample)
        order_at_gen = order.to(gen.device)
        weights = torch.full((n_rows, m), self.params.alpha / (m - k), dtype=torch.float64, device=gen.device)
        weights.scatter_(1, order_at_gen[:, :k], (1.0 - self.params.alpha) / k)
        chosen = torch.multinomial(weights, k, replacement=False, generator=gen).to(x.device)
        return sparse_payload(x, rows, chosen, self.params.per_sample)

    def decode(self, payload: Payload) -> torch.Tensor:
        return sparse_decode(payload)

    def codec_flops(self, shape: tuple[int, ...]) -> tuple[float, float]:
        """(encode, decode) FLOPs on ``shape`` (``n`` entries in rows of ``m``): encode
        ``n (1 + ceil(log2 m)) + 2 n`` (magnitudes, comparison sort, the selection weights and
        their running sum for the draw), decode 0 (a scatter)."""
        return sparse_flops(shape, self.params.per_sample, 2.0)

    def __repr__(self) -> str:
        p = self.params
        return f"RandTopK(fraction={p.fraction}, alpha={p.alpha}, per_sample={p.per_sample})"
