"""Device capability traces: how fast each client computes and, optionally, sends and receives.

Formats
-------
``csv``
    A header ``client,compute_flops_per_s`` optionally followed by ``uplink_bps`` and/or
    ``downlink_bps``, one row per device (its id an integer >= 0, each id once).  Speeds are
    in the scenario's ranges; an empty ``uplink_bps``/``downlink_bps`` cell leaves that device on the channel's
    rate.
``fedscale``
    FedScale's ``client_device_capacity`` pickle: a dict of client id -> ``{'computation':
    ms_per_sample, 'communication': kbit_per_s}`` (AI Benchmark inference latency and MobiPerf
    throughput), read by :class:`~sfl_sim.clients.availability.readers.PlainUnpickler` (no global is
    ever loaded, so a crafted file cannot run code).  Compute speed is
    ``forward FLOPs per sample of the scenario's model / (ms_per_sample / 1000)``: the device runs
    the model's inference at the measured latency, and a training step (forward and backward,
    about three forward passes) then takes about three times it, FedScale's own
    ``augmentation_factor`` of 3.  ``communication`` (kbit/s) is both the uplink and the downlink
    rate, ``1000 x`` bit/s, as FedScale uses it for both transfers.

Every bad input is a :class:`~sfl_sim.clients.availability.readers.TraceError` of one line naming the
file, the line or key, the value and what is allowed.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sfl_sim.clients.availability.files import TraceError, csv_rows, decode_text, load_plain_dict, read_bytes, shown
from sfl_sim.clients.availability.readers import client_id_order
from sfl_sim.clients.limits import COMPUTE_FLOPS_PER_S, LINK_RATE_BPS, MS_PER_SAMPLE, allowed
from sfl_sim.kit.ranges import Range

__all__ = ["CapabilityTrace", "ClientCapability", "read_capability", "client_capability", "CAPABILITY_FORMATS"]

#: The formats :func:`read_capability` reads.
CAPABILITY_FORMATS = ("csv", "fedscale")
#: FedScale's ``communication``, kbit/s: the link rates' range in its unit.
_KBIT_PER_S = Range(LINK_RATE_BPS.low / 1000.0, LINK_RATE_BPS.high / 1000.0, LINK_RATE_BPS.reason, "kbit/s")


@dataclass(frozen=True)
class CapabilityTrace:
    """The devices of a capability trace, one entry per device in file order (FedScale: by id).

    Attributes
    ----------
    devices : list of str
        Device ids.
    compute_flops_per_s : ndarray
        FLOP/s per device (NaN where the file gives ``ms_per_sample`` instead).
    ms_per_sample : ndarray
        Inference latency per sample, ms (NaN where the file gives FLOP/s).
    uplink_bps, downlink_bps : ndarray
        Link throughput per device, bit/s (NaN: the channel's rate).
    source : str
        The file it was read from (for messages).
    """

    devices: list[str]
    compute_flops_per_s: np.ndarray
    ms_per_sample: np.ndarray
    uplink_bps: np.ndarray
    downlink_bps: np.ndarray
    source: str = "capability trace"

    def flops_per_s(self, forward_flops_per_sample: float | None) -> np.ndarray:
        """FLOP/s per device; those given in ms per sample need the model's forward FLOPs per sample.

        Raises
        ------
        TraceError
            One line naming the device whose speed, so converted, leaves
            :data:`~sfl_sim.clients.limits.COMPUTE_FLOPS_PER_S` (the scenario's own bounds).
        """
        out = self.compute_flops_per_s.copy()
        timed = np.isfinite(self.ms_per_sample)
        if timed.any():
            if not forward_flops_per_sample or forward_flops_per_sample <= 0:
                raise ValueError("ms per sample becomes FLOP/s only with the model's forward FLOPs per sample (> 0)")
            out[timed] = forward_flops_per_sample / (self.ms_per_sample[timed] / 1000.0)
            for i in np.flatnonzero(timed):
                if not COMPUTE_FLOPS_PER_S.contains(float(out[i])):
                    raise TraceError(f"{self.source} key {self.devices[i][:60]}: computation "
                                     f"{self.ms_per_sample[i]:g} ms per sample of a model of "
                                     f"{forward_flops_per_sample:g} forward FLOPs is {out[i]:g} FLOP/s; "
                                     f"allowed: {allowed(COMPUTE_FLOPS_PER_S)}")
        return out


@dataclass(frozen=True)
class ClientCapability:
    """Per simulated client: the trace device it got and its speeds (NaN: not traced)."""

    device_of: np.ndarray
    compute_flops_per_s: np.ndarray
    uplink_bps: np.ndarray
    downlink_bps: np.ndarray


def _in_range(path: Path, at: str, field: str, text: Any, rng: Range) -> float:
    """A traced value inside ``rng``: the scenario's own bounds for that quantity."""
    try:
        value = float(text) if not isinstance(text, bool) else math.nan
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer beyond any float
        value = math.nan
    if not rng.contains(value):
        raise TraceError(f"{path} {at}: {field} got {shown(text)}; allowed: {allowed(rng)}")
    return value


_CSV_HEADER = "client,compute_flops_per_s[,uplink_bps][,downlink_bps]"
#: The rate columns a capability CSV may add, with their ranges.
_LINK_COLUMNS = {"uplink_bps": LINK_RATE_BPS, "downlink_bps": LINK_RATE_BPS}
#: A CSV device id: ASCII digits.
_CSV_ID = re.compile(r"[0-9]{1,18}")


def _read_csv(path: Path) -> CapabilityTrace:
    text = decode_text(path, read_bytes(path, "a capability CSV"), f"a CSV {_CSV_HEADER}")
    rows = csv_rows(path, text, _CSV_HEADER)
    first = next(rows, None)
    header = [c.strip() for c in first[1]] if first is not None else []
    optional = header[2:]
    if header[:2] != ["client", "compute_flops_per_s"] or len(set(optional)) != len(optional) \
            or not set(optional) <= set(_LINK_COLUMNS):
        raise TraceError(f"{path} line 1: header got {shown(','.join(header))}; allowed: {_CSV_HEADER}")
    seen: dict[int, int] = {}
    flops: list[float] = []
    links: dict[str, list[float]] = {name: [] for name in _LINK_COLUMNS}
    for number, row in rows:
        if not row or all(not c.strip() for c in row):
            continue
        at = f"line {number}"
        if len(row) != len(header):
            raise TraceError(f"{path} {at}: got {len(row)} cells; allowed: {len(header)} ({','.join(header)})")
        cell = row[0].strip()
        if not _CSV_ID.fullmatch(cell):
            raise TraceError(f"{path} {at}: client got {shown(cell)}; allowed: a device id, an integer >= 0")
        if int(cell) in seen:
            raise TraceError(f"{path} {at}: client {cell} again (first on line {seen[int(cell)]}); "
                             f"allowed: one row per device")
        seen[int(cell)] = number
        flops.append(_in_range(path, at, "compute_flops_per_s", row[1].strip(), COMPUTE_FLOPS_PER_S))
        values = dict(zip(optional, (c.strip() for c in row[2:]), strict=True))
        for name, rng in _LINK_COLUMNS.items():
            text = values.get(name, "")  # empty: the channel's rate for this device
            links[name].append(_in_range(path, at, name, text, rng) if text else math.nan)
    if not seen:
        raise TraceError(f"{path}: no devices; allowed: at least one row {_CSV_HEADER}")
    n = len(flops)
    return CapabilityTrace([str(k) for k in seen], np.asarray(flops), np.full(n, math.nan),
                           np.asarray(links["uplink_bps"]), np.asarray(links["downlink_bps"]), str(path))


def _read_fedscale(path: Path) -> CapabilityTrace:
    data, budget = load_plain_dict(path, "{'computation': ms, 'communication': kbit/s}")
    devices: list[str] = []
    values: list[tuple[float, float]] = []
    for key in client_id_order(path, data):
        at = f"key {shown(key)}"
        entry = data[key]
        budget.spend(len(entry) if isinstance(entry, (dict, list, tuple, set, frozenset)) else 1, at)
        if not isinstance(entry, dict) or not all(k in entry for k in ("computation", "communication")):
            raise TraceError(f"{path} {at}: got {shown(entry)}; allowed: a dict with 'computation' (ms per "
                             f"sample) and 'communication' (kbit/s)")
        ms = _in_range(path, at, "computation", entry["computation"], MS_PER_SAMPLE)
        kbps = _in_range(path, at, "communication", entry["communication"], _KBIT_PER_S)
        devices.append(str(key))
        values.append((ms, kbps * 1000.0))
    arr = np.asarray(values)
    n = len(devices)
    return CapabilityTrace(devices, np.full(n, math.nan), arr[:, 0], arr[:, 1].copy(), arr[:, 1].copy(), str(path))


def read_capability(path: Any, format: str) -> CapabilityTrace:
    """The devices of the capability trace at ``path`` in ``format`` (``csv`` or ``fedscale``).

    Raises
    ------
    TraceError
        One line when the file is missing or its content is not allowed.
    """
    path = Path(path)
    if format not in CAPABILITY_FORMATS:
        raise TraceError(f"{path}: format got {format!r}; allowed: one of {', '.join(CAPABILITY_FORMATS)}")
    if not path.is_file():
        raise TraceError(f"{path}: no such file; allowed: an existing {format} capability file")
    return _read_csv(path) if format == "csv" else _read_fedscale(path)


def client_capability(trace: CapabilityTrace, n_clients: int, mapping: str, rng: np.random.Generator,
                      forward_flops_per_sample: float | None = None) -> ClientCapability:
    """Give each of ``n_clients`` clients a trace device and its speeds.

    Parameters
    ----------
    trace : CapabilityTrace
    n_clients : int
    mapping : {'seeded', 'order'}
        ``seeded``: devices drawn from ``rng`` (distinct when there are enough); ``order``: client
        ``i`` gets the ``i``-th device (needs as many devices as clients).
    rng : numpy.random.Generator
    forward_flops_per_sample : float, optional
        The model's forward FLOPs per sample (needed for a trace in ms per sample).
    """
    count = len(trace.devices)
    if mapping == "order":
        if n_clients > count:
            raise TraceError(f"{trace.source}: mapping 'order' got {n_clients} clients for {count} devices; "
                             f"allowed: at most {count} clients, or mapping 'seeded'")
        device_of = np.arange(n_clients, dtype=np.int64)
    else:
        device_of = rng.choice(count, size=n_clients, replace=n_clients > count).astype(np.int64)
    flops = trace.flops_per_s(forward_flops_per_sample)
    return ClientCapability(device_of, flops[device_of], trace.uplink_bps[device_of], trace.downlink_bps[device_of])
