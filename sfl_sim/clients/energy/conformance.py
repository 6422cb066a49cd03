"""Conformance check: does a component behave like a device energy model?

:func:`check_energy` checks that the component has the methods of
:class:`~sfl_sim.clients.energy.DeviceEnergy`, then that every energy is a finite float >= 0, zero for
zero work, additive in the work (two halves cost the whole, to float precision) and growing
with it.  It raises :class:`EnergyConformanceError` (one line naming the component, the check and
the values), or returns the names of the checks that passed.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from sfl_sim.clients.energy.base import DeviceEnergy
from sfl_sim.kit.conformance import ConformanceReport
from sfl_sim.kit.protocols import missing_members

__all__ = ["check_energy", "EnergyConformanceError"]


class EnergyConformanceError(AssertionError):
    """A device energy model failed a conformance check."""


class _Report(ConformanceReport):
    kind = "energy model"
    error = EnergyConformanceError


def _ok(value: Any) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value >= 0.0


def check_energy(component: Any) -> list[str]:
    """Run the checks on ``component``; returns the checks passed."""
    report = _Report(repr(component))
    missing = missing_members(component, DeviceEnergy)
    report.check(not missing, "protocol", f"missing {', '.join(missing)}")
    speeds = (1e8, 1e9, 1e10)
    for fps in speeds:
        for flops in (0.0, 1e6, 3e9):
            e = report.attempt("compute_j runs", functools.partial(component.compute_j, flops, fps))
            report.check(_ok(e), "finite, non-negative", f"compute_j({flops}, {fps}) = {e!r}")
        half = component.compute_j(1.5e9, fps)
        report.check(component.compute_j(0.0, fps) == 0.0, "zero work, zero energy", f"compute_j(0, {fps})")
        report.check(math.isclose(2 * half, component.compute_j(3e9, fps), rel_tol=1e-12),
                     "additive", f"compute_j at {fps} FLOP/s: 2 x {half} != {component.compute_j(3e9, fps)}")
    calls: dict[str, Callable[[float], Any]] = {"transmit_j": functools.partial(component.transmit_j, 0.2),
                                                "receive_j": component.receive_j, "idle_j": component.idle_j}
    for name, call in calls.items():
        values = [report.attempt(f"{name} runs", functools.partial(call, s)) for s in (0.0, 0.5, 1.0)]
        report.check(all(_ok(v) for v in values), "finite, non-negative", f"{name}: {values}")
        report.check(values[0] == 0.0, "zero work, zero energy", f"{name}(0) = {values[0]!r}")
        report.check(math.isclose(2 * values[1], values[2], rel_tol=1e-12, abs_tol=1e-300), "additive",
                     f"{name}: 2 x {values[1]} != {values[2]}")
    report.check(component.transmit_j(0.4, 1.0) >= component.transmit_j(0.2, 1.0), "more power, more energy",
                 "transmit_j(0.4 W) < transmit_j(0.2 W)")
    tails = [report.attempt("tail_j runs", functools.partial(component.tail_j, a, b))
             for a in (0.0, 5.0, math.inf) for b in (0.0, 3.0, 100.0)]
    report.check(all(_ok(v) for v in tails), "finite, non-negative", f"tail_j: {tails}")
    report.check(tails[0] == 0.0, "no time after the round, no tail", f"tail_j(0, 0) = {tails[0]!r}")
    return report.passed
