"""Conformance check of a handover rule: does it behave like one of its kind?

:func:`check_handover` checks that a rule offers :class:`~sfl_sim.channel.network.protocols.HandoverRule`'s
``evaluate`` and runs it on scripted RSRP series (no randomness), raising
:class:`HandoverConformanceError` (one line naming the rule, the check and why) or returning the
checks passed:

- a :class:`~sfl_sim.channel.network.protocols.HandoverTrace` whose ``serving_cell`` and
  ``connected`` have shape (n_clients, n_times) and whose cells are :data:`NO_CELL` or in range;
- events in time order, at sample times, of clients and cells that exist, whose target is the
  serving cell from then on (until the next event of that client);
- without ``initial_cell``, every client starts on its strongest cell;
- a client whose first cell stays 20 dB above every other keeps it, with no event and a link at
  every sample;
- the same input gives the same trace, and the input arrays are not modified.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sfl_sim.channel.network.protocols import NO_CELL, HandoverRule, HandoverTrace
from sfl_sim.kit.conformance import ConformanceReport
from sfl_sim.kit.protocols import check_protocol

__all__ = ["check_handover", "HandoverConformanceError", "HandoverReport"]


class HandoverConformanceError(AssertionError):
    """A handover rule failed a conformance check (the message names the rule and the check)."""


class HandoverReport(ConformanceReport):
    """The checks a handover rule passed."""

    kind = "handover"
    error = HandoverConformanceError


def _scripted() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three clients, three cells, 2 s at 10 ms: client 0 static on cell 0 (20 dB ahead), client 1
    walking from cell 0 to cell 2 (their RSRPs cross at 1 s, 10 dB apart at the ends), client 2
    fading out of every cell's coverage (SINR falling from 10 to -30 dB)."""
    times = np.round(np.arange(201) * 0.01, 12)
    rsrp = np.full((3, 3, times.size), -110.0)
    rsrp[0, 0] = -70.0
    rsrp[1, 0] = -80.0 - 10.0 * times
    rsrp[1, 2] = -100.0 + 10.0 * times
    rsrp[2, 1] = -90.0 - 5.0 * times
    sinr = rsrp - rsrp.max(axis=1, keepdims=True) + 10.0
    sinr[2] = 10.0 - 20.0 * times
    return times, rsrp, sinr


def check_handover(rule: Any, name: str | None = None) -> HandoverReport:
    """Check that ``rule`` behaves like a handover rule (see the module docstring).

    Parameters
    ----------
    rule : object
        The rule (an instance).
    name : str, optional
        Its name in messages; default its class's name.

    Returns
    -------
    HandoverReport
        The checks passed.

    Raises
    ------
    HandoverConformanceError
        The first check that fails, in one line.
    sfl_sim.kit.protocols.ComponentProtocolError
        When ``rule`` has no ``evaluate``.
    """
    label = name if name is not None else type(rule).__name__
    check_protocol(rule, HandoverRule, f"handover {label!r}")
    report = HandoverReport(label)
    times, rsrp, sinr = _scripted()
    copies = (times.copy(), rsrp.copy(), sinr.copy())
    trace = report.attempt("evaluate runs", lambda: rule.evaluate(times, rsrp, sinr_db=sinr))
    report.check(isinstance(trace, HandoverTrace), "returns a HandoverTrace", f"got {type(trace).__name__}")
    shape = (rsrp.shape[0], times.size)
    serving = np.asarray(trace.serving_cell)
    connected = np.asarray(trace.connected)
    report.check(serving.shape == shape and connected.shape == shape, "trace shapes",
                 f"serving_cell {serving.shape}, connected {connected.shape}; expected {shape}")
    report.check(np.issubdtype(serving.dtype, np.integer) and connected.dtype == bool, "trace dtypes",
                 f"serving_cell {serving.dtype}, connected {connected.dtype}")
    report.check(np.all((serving == NO_CELL) | ((serving >= 0) & (serving < rsrp.shape[1]))), "cells in range",
                 f"serving cells {sorted(set(serving.ravel().tolist()))}")
    event_times = [e.time_s for e in trace.events]
    report.check(event_times == sorted(event_times), "events in time order", f"times {event_times}")
    for e in trace.events:
        ok = (e.time_s in set(times.tolist()) and 0 <= e.client < shape[0] and 0 <= e.source_cell < rsrp.shape[1]
              and (e.target_cell == NO_CELL or 0 <= e.target_cell < rsrp.shape[1]) and e.interruption_s >= 0)
        report.check(ok, "events name real samples, clients and cells", repr(e))
    for e in trace.events:
        later = [f for f in trace.events if f.client == e.client and f.time_s > e.time_s]
        k = int(np.searchsorted(times, e.time_s))
        stop = int(np.searchsorted(times, later[0].time_s)) if later else times.size
        cells = set(serving[e.client, k:stop].tolist()) - {NO_CELL}
        report.check(cells <= {e.target_cell}, "the target serves after an event",
                     f"{e!r} but client {e.client} is served by {sorted(cells)} until the next event")
    report.check(np.array_equal(serving[:, 0][serving[:, 0] != NO_CELL],
                                np.argmax(rsrp[:, :, 0], axis=1)[serving[:, 0] != NO_CELL]),
                 "initial association to the strongest cell", f"first serving cells {serving[:, 0].tolist()}")
    report.check(np.all(serving[0] == 0) and np.all(connected[0]) and all(e.client != 0 for e in trace.events),
                 "a dominant cell keeps its client", f"client 0 served by {sorted(set(serving[0].tolist()))}")
    again = rule.evaluate(times, rsrp, sinr_db=sinr)
    report.check(again.events == trace.events and np.array_equal(again.serving_cell, serving)
                 and np.array_equal(again.connected, connected), "deterministic", "a second call differs")
    report.check(all(np.array_equal(a, b) for a, b in zip(copies, (times, rsrp, sinr), strict=True)),
                 "inputs unchanged", "evaluate modified its input arrays")
    return report
