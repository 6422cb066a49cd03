"""Summary, table and figure of a device trace, without training (``sfl-sim traces FILE``).

An availability trace (``csv``, ``flash``, ``fedscale``: :mod:`sfl_sim.clients.availability.readers`)
is summarised by its devices, the fraction online per hour of the day (simulated time 0 is
midnight), and its session lengths; a capability trace (:mod:`sfl_sim.clients.availability.capability`)
by the distribution of its compute speeds and link rates.  :func:`trace_report` prints the
summary and writes ``traces.csv`` (one row per device) and ``traces.png``.
"""
from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from sfl_sim.clients.availability.capability import read_capability
from sfl_sim.clients.availability.readers import DeviceTrace, TraceError, read_trace
from sfl_sim.errors import RunDirError
from sfl_sim.runs.rundir import marker

__all__ = ["TraceReport", "trace_report", "online_by_hour", "AVAILABILITY_COLUMNS", "CAPABILITY_COLUMNS",
           "TRACE_FILE", "TRACE_FIGURE"]

HOUR_S = 3600.0
DAY_S = 24 * HOUR_S
#: The per-device table and the figure :func:`trace_report` writes.
TRACE_FILE, TRACE_FIGURE = "traces.csv", "traces.png"
#: Columns of ``traces.csv`` for an availability trace: span and online time in seconds.
AVAILABILITY_COLUMNS = ("device", "span_s", "online_s", "online_fraction", "sessions", "mean_session_s")
#: Columns of ``traces.csv`` for a capability trace (empty where the file gives no value).
CAPABILITY_COLUMNS = ("device", "compute_flops_per_s", "ms_per_sample", "uplink_bps", "downlink_bps")


@dataclass
class TraceReport:
    """What :func:`trace_report` found and wrote.

    Attributes
    ----------
    table : dict of str to list
        The per-device columns (as in ``traces.csv``).
    summary : dict
        The printed figures (devices, quantiles, online fraction per hour...).
    files : list of pathlib.Path
        ``traces.csv`` and ``traces.png``.
    """

    table: dict[str, list[Any]]
    summary: dict[str, Any]
    files: list[Path]


def _overlap_by_hour(start_s: float, end_s: float, out: np.ndarray) -> None:
    """Add to ``out[h]`` the seconds of ``[start_s, end_s)`` that fall in hour ``h`` of the day
    (whole days at once, so a trace of years costs what one of a day does)."""
    days = math.floor((end_s - start_s) / DAY_S) if end_s > start_s else 0
    if days > 0:
        out += days * HOUR_S
        start_s += days * DAY_S
    t = start_s
    while t < end_s:
        nxt = min(end_s, (math.floor(t / HOUR_S) + 1) * HOUR_S)
        out[int(t // HOUR_S) % 24] += nxt - t
        t = nxt


def online_by_hour(devices: Sequence[DeviceTrace]) -> np.ndarray:
    """Fraction of the observed device-seconds that were online, per hour of the day (24 values;
    NaN for an hour no trace covers)."""
    online = np.zeros(24)
    observed = np.zeros(24)
    for d in devices:
        _overlap_by_hour(d.origin_s, d.end_s, observed)
        for s, e in zip(d.starts_s.tolist(), d.ends_s.tolist(), strict=True):
            _overlap_by_hour(max(s, d.origin_s), min(e, d.end_s), online)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(observed > 0, online / np.where(observed > 0, observed, 1.0), np.nan)


def _quantiles(values: np.ndarray) -> dict[str, float]:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not v.size:
        return {}
    q = np.quantile(v, [0.1, 0.5, 0.9])
    return {"min": float(v.min()), "p10": float(q[0]), "median": float(q[1]), "p90": float(q[2]),
            "max": float(v.max()), "mean": float(v.mean())}


def _availability(path: Path, fmt: str) -> tuple[dict[str, list[Any]], dict[str, Any], dict[str, np.ndarray]]:
    devices = read_trace(path, fmt)
    sessions = np.concatenate([d.ends_s - d.starts_s for d in devices]) if devices else np.zeros(0)
    table: dict[str, list[Any]] = {c: [] for c in AVAILABILITY_COLUMNS}
    for d in devices:
        span = d.end_s - d.origin_s
        online = float(np.sum(np.minimum(d.ends_s, d.end_s) - np.maximum(d.starts_s, d.origin_s)))
        table["device"].append(d.device)
        table["span_s"].append(span)
        table["online_s"].append(online)
        table["online_fraction"].append(online / span if span > 0 else math.nan)
        table["sessions"].append(int(d.starts_s.size))
        table["mean_session_s"].append(float(np.mean(d.ends_s - d.starts_s)) if d.starts_s.size else math.nan)
    hourly = online_by_hour(devices)
    summary = {"kind": "availability", "format": fmt, "devices": len(devices),
               "never_online": int(sum(1 for n in table["sessions"] if n == 0)),
               "sessions": int(sessions.size), "session_s": _quantiles(sessions),
               "online_fraction": _quantiles(np.asarray(table["online_fraction"])),
               "online_fraction_by_hour": [None if math.isnan(x) else float(x) for x in hourly]}
    return table, summary, {"sessions": sessions, "hourly": hourly}


def _capability(path: Path, fmt: str) -> tuple[dict[str, list[Any]], dict[str, Any], dict[str, np.ndarray]]:
    trace = read_capability(path, fmt)
    table: dict[str, list[Any]] = {
        "device": list(trace.devices), "compute_flops_per_s": trace.compute_flops_per_s.tolist(),
        "ms_per_sample": trace.ms_per_sample.tolist(), "uplink_bps": trace.uplink_bps.tolist(),
        "downlink_bps": trace.downlink_bps.tolist()}
    summary = {"kind": "capability", "format": fmt, "devices": len(trace.devices),
               **{c: _quantiles(np.asarray(table[c])) for c in CAPABILITY_COLUMNS[1:]}}
    return table, summary, {c: np.asarray(table[c], dtype=float) for c in CAPABILITY_COLUMNS[1:]}


def _text(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)


def _print(summary: dict[str, Any], stream: TextIO) -> None:
    print(f"{summary['kind']} trace ({summary['format']}): {summary['devices']} devices", file=stream)
    def line(name: str, q: dict[str, float], unit: str) -> None:
        if q:
            print(f"  {name:<22} min {q['min']:.4g}  p10 {q['p10']:.4g}  median {q['median']:.4g}  "
                  f"p90 {q['p90']:.4g}  max {q['max']:.4g}  ({unit})", file=stream)
    if summary["kind"] == "availability":
        print(f"  never online: {summary['never_online']}; sessions: {summary['sessions']}", file=stream)
        line("session length", summary["session_s"], "s")
        line("online fraction", summary["online_fraction"], "of each device's span")
        hours = " ".join("  -" if x is None else f"{x:3.0%}" for x in summary["online_fraction_by_hour"])
        print(f"  online by hour 0-23:  {hours}", file=stream)
    else:
        for name, unit in (("compute_flops_per_s", "FLOP/s"), ("ms_per_sample", "ms per sample"),
                           ("uplink_bps", "bit/s"), ("downlink_bps", "bit/s")):
            line(name, summary[name], unit)


def _plot(summary: dict[str, Any], arrays: dict[str, np.ndarray], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    try:
        if summary["kind"] == "availability":
            hourly = arrays["hourly"]
            axes[0].bar(np.arange(24), np.nan_to_num(hourly), color="tab:blue")
            axes[0].set(xlabel="hour of day", ylabel="fraction of devices online", xlim=(-0.5, 23.5), ylim=(0, 1))
            sessions = arrays["sessions"]
            if sessions.size and sessions.max() > 0:
                bins = np.logspace(math.log10(max(sessions.min(), 1e-3)), math.log10(sessions.max()) + 1e-9, 30)
                axes[1].hist(sessions, bins=bins, color="tab:green")
                axes[1].set_xscale("log")
            axes[1].set(xlabel="session length, s", ylabel="sessions")
        else:
            speed = arrays["compute_flops_per_s"]
            speed_name = "compute, FLOP/s"
            if not np.isfinite(speed).any():
                speed, speed_name = arrays["ms_per_sample"], "inference latency, ms per sample"
            finite = speed[np.isfinite(speed)]
            axes[0].hist(finite, bins=30, color="tab:blue")
            axes[0].set(xlabel=speed_name, ylabel="devices")
            for name, colour in (("uplink_bps", "tab:orange"), ("downlink_bps", "tab:green")):
                rates = arrays[name][np.isfinite(arrays[name])]
                if rates.size:
                    axes[1].hist(rates / 1e6, bins=30, alpha=0.6, color=colour, label=name)
            axes[1].set(xlabel="link rate, Mbit/s", ylabel="devices")
            if axes[1].get_legend_handles_labels()[0]:
                axes[1].legend(fontsize=8)
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)


def _output_folder(out: Path) -> None:
    """Create ``out`` for the report's files, or refuse it in one line (an existing file, a folder
    that cannot be created)."""
    if out.exists() and not out.is_dir():
        raise TraceError(f"output folder (-o): got {out}, an existing file; allowed: a folder (created when "
                         f"missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file on the way, no permission
        raise TraceError(f"output folder (-o): {out} cannot be created ({type(exc).__name__}: "
                         f"{exc.strerror or exc}); allowed: a folder you can write") from None


def trace_report(path: Any, fmt: str = "csv", kind: str = "availability", out_dir: Path | None = None,
                 stream: TextIO | None = None) -> TraceReport:
    """Read the trace at ``path``, print its summary, write ``traces.csv`` and ``traces.png``.

    Parameters
    ----------
    path : path-like
        The trace file.
    fmt : str
        Its format: ``csv``, ``flash`` or ``fedscale`` (availability); ``csv`` or ``fedscale``
        (capability).
    kind : {'availability', 'capability'}
    out_dir : pathlib.Path, optional
        Folder for the files (created); default ``<file name>_report`` beside the file.
    stream : text stream, optional
        Where the summary is printed; default ``sys.stdout``.

    Raises
    ------
    sfl_sim.clients.availability.TraceError
        One line when the file cannot be read in that format, or the output folder is an
        existing file or cannot be written (nothing is written before the file is read).
    """
    import sys

    path = Path(path)
    allowed = {"availability": ("csv", "flash", "fedscale"), "capability": ("csv", "fedscale")}
    if kind not in allowed or fmt not in allowed[kind]:
        raise TraceError(f"--format: got {fmt!r} for a {kind} trace; allowed: "
                         + "; ".join(f"{k}: {', '.join(v)}" for k, v in allowed.items()))
    table, summary, arrays = (_availability if kind == "availability" else _capability)(path, fmt)
    out = Path(out_dir) if out_dir is not None else path.with_name(path.name.replace(".", "_") + "_report")
    _output_folder(out)
    try:
        marker.claim_folder(out, "trace_report", (TRACE_FILE, TRACE_FIGURE))
    except RunDirError as exc:
        raise TraceError(str(exc)) from None
    columns = AVAILABILITY_COLUMNS if kind == "availability" else CAPABILITY_COLUMNS
    try:
        with open(out / TRACE_FILE, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(columns)
            for i in range(len(table["device"])):
                writer.writerow([_text(table[c][i]) for c in columns])
        _plot(summary, arrays, out / TRACE_FIGURE, f"{path.name}: {summary['devices']} devices ({kind}, {fmt})")
    except OSError as exc:  # a full disk, a file in the folder's place
        raise TraceError(f"output folder {out}: cannot be written ({type(exc).__name__}: {exc.strerror or exc}); "
                         f"allowed: a folder you can write") from None
    _print(summary, stream or sys.stdout)
    return TraceReport(table, summary, [out / TRACE_FILE, out / TRACE_FIGURE])
