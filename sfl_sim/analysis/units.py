"""The units the analysis shows numbers in; the files it reads and writes keep raw units (bytes,
FLOPs, accuracy as a fraction)."""

from __future__ import annotations

__all__ = ["BYTES_PER_MB", "FLOPS_PER_GFLOP"]

#: Bytes in one megabyte (SI, 10**6): the MB of every table and figure.
BYTES_PER_MB = 1_000_000
#: FLOPs in one GFLOP (10**9).
FLOPS_PER_GFLOP = 1_000_000_000
