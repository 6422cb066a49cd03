"""The units the analysis shows numbers in; the files it reads and writes keep raw units (bytes,
FLOPs, accuracy as a fraction)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["BYTES_PER_MB", "FLOPS_PER_GFLOP", "field_axis"]

#: Bytes in one megabyte (SI, 10**6): the MB of every table and figure.
BYTES_PER_MB = 1_000_000
#: FLOPs in one GFLOP (10**9).
FLOPS_PER_GFLOP = 1_000_000_000


#: A field-name suffix (the project's unit suffixes) -> its unit's prefixes: (scale, unit), largest first.
_FIELD_UNITS: dict[str, tuple[tuple[float, str], ...]] = {
    "_hz": ((1e9, "GHz"), (1e6, "MHz"), (1e3, "kHz"), (1.0, "Hz")),
    "_bps": ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"), (1.0, "bit/s")),
    "_bytes": ((float(BYTES_PER_MB), "MB"), (1.0, "bytes")),
    "_s": ((1.0, "s"),),
    "_m": ((1.0, "m"),),
    "_w": ((1.0, "W"),),
    "_dbm": ((1.0, "dBm"),),
    "_db": ((1.0, "dB"),),
}


def field_axis(field: str, values: Sequence[float]) -> tuple[str, float]:
    """The axis label and divisor for a numeric setting field with these values: its unit suffix
    read (``cell.uplink_bandwidth_hz`` at 5e6-2e7 -> ``("cell.uplink_bandwidth (MHz)", 1e6)``), the
    largest prefix that keeps the smallest nonzero value at 1 or more; a field without a known
    suffix as it is, divisor 1."""
    for suffix, prefixes in _FIELD_UNITS.items():
        if field.endswith(suffix):
            nonzero = [abs(v) for v in values if v]
            smallest = min(nonzero) if nonzero else 1.0
            scale, unit = next(((s, u) for s, u in prefixes if smallest >= s), prefixes[-1])
            return f"{field[:-len(suffix)]} ({unit})", scale
    return field, 1.0
