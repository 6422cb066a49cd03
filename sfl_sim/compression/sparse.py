"""What the sparsifiers (``topk``, ``rand_topk``) share: how many entries they keep, the rows they
select in, the payload of kept values and their indices, its decode, and their FLOP count.

A sparse payload holds ``values`` (the kept entries in their dtype), ``indices`` (their flat
indices within their row, sorted, in the narrowest type of :func:`index_dtype`) and the shape
header; ``agreed["per_sample"]`` says whether the rows are the samples (dimension 0) or the whole
tensor.
"""
from __future__ import annotations

import math
from typing import Annotated

import torch
from pydantic import Field

from sfl_sim.compression.base import Payload, shape_header
from sfl_sim.kit.params import Doc

__all__ = ["Fraction", "PerSample", "index_dtype", "kept_entries", "row_count", "as_rows",
           "magnitude_order", "sparse_payload", "sparse_decode", "sparse_flops"]

#: The ``fraction`` parameter of every sparsifier (default 0.1).
Fraction = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False), Doc(
    "Share of the entries kept, in (0, 1]; ceil(fraction * n) entries.")]
#: The ``per_sample`` parameter of every sparsifier (default false).
PerSample = Annotated[bool, Doc(
    "Select ceil(fraction * m) entries in each sample (row of dimension 0, m entries) rather than over the whole "
    "tensor.")]


def index_dtype(numel: int) -> torch.dtype:
    """The narrowest unsigned integer dtype holding every flat index of ``numel`` entries."""
    largest = max(int(numel) - 1, 0)
    for dtype, limit in ((torch.uint8, 2 ** 8), (torch.uint16, 2 ** 16), (torch.uint32, 2 ** 32)):
        if largest < limit:
            return dtype
    return torch.int64


def kept_entries(numel: int, fraction: float) -> int:
    """Entries a sparsifier keeps: ``ceil(fraction * numel)`` (at least one of a non-empty tensor)."""
    # The product is rounded first so that 0.3 * 10 = 3.0000000000000004 keeps 3, not 4.
    return min(numel, math.ceil(round(fraction * numel, 9)))


def row_count(shape: tuple[int, ...], per_sample: bool) -> int:
    """How many rows a sparsifier selects in: the batch (dimension 0) per sample, else one."""
    return shape[0] if per_sample and len(shape) >= 2 else 1


def as_rows(x: torch.Tensor, per_sample: bool) -> torch.Tensor:
    """``x`` as a matrix of :func:`row_count` rows, each the entries one selection is made in."""
    n_rows = row_count(tuple(x.shape), per_sample)
    return x.reshape(n_rows, x.numel() // n_rows if n_rows else 0)


def magnitude_order(rows: torch.Tensor) -> torch.Tensor:
    """Each row's flat indices by decreasing magnitude; a stable sort ranks ties by index, so the
    choice is the same on every host."""
    return torch.sort(-rows.abs(), dim=1, stable=True).indices


def sparse_payload(x: torch.Tensor, rows: torch.Tensor, idx: torch.Tensor, per_sample: bool) -> Payload:
    """The payload of the entries ``idx`` of each row of ``rows`` (:func:`as_rows` of ``x``).

    Parameters
    ----------
    x : Tensor
        The encoded tensor (its shape and dtype go into the payload).
    rows : Tensor
        ``as_rows(x, per_sample)``.
    idx : Tensor
        Per row, the indices kept (any order; the payload holds them sorted).
    per_sample : bool
        Whether the rows are the samples.

    Returns
    -------
    Payload
        ``values``, ``indices`` and ``shape`` (see the module docstring).
    """
    idx = torch.sort(idx, dim=1).values  # sorted indices: the payload does not reveal the ranking
    return Payload({"values": rows.gather(1, idx).reshape(-1).contiguous().clone(),
                    "indices": idx.reshape(-1).to(index_dtype(rows.shape[1])), "shape": shape_header(x)},
                   x.dtype, {"per_sample": per_sample})


def sparse_decode(payload: Payload) -> torch.Tensor:
    """The tensor of a :func:`sparse_payload`: the kept values in place, zeros elsewhere."""
    shape = payload.shape
    n_rows = row_count(shape, bool(payload.agreed["per_sample"]))
    values = payload.buffers["values"].to(payload.dtype)
    out = torch.zeros(n_rows, math.prod(shape) // n_rows if n_rows else 0, dtype=payload.dtype,
                      device=values.device)
    idx = payload.buffers["indices"].to(torch.int64).reshape(n_rows, -1) if n_rows else \
        torch.zeros(0, 0, dtype=torch.int64)
    out.scatter_(1, idx.to(values.device), values.reshape(idx.shape))
    return out.reshape(shape)


def sparse_flops(shape: tuple[int, ...], per_sample: bool, extra_per_entry: float) -> tuple[float, float]:
    """(encode, decode) FLOPs of a sparsifier on ``shape``: the magnitudes (``n``), a comparison
    sort of each row of ``m`` entries (``n ceil(log2 m)`` comparisons) and ``extra_per_entry n``;
    decode scatters the kept values (no arithmetic: 0)."""
    n = math.prod(shape)
    rows = row_count(shape, per_sample)
    m = n // rows if rows else 0
    return float(n) * (1.0 + math.ceil(math.log2(m)) if m > 1 else 1.0) + extra_per_entry * n, 0.0
