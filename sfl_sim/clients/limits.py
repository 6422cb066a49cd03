"""Physical ranges of the clients' quantities, defined once: compute speed, traced link rates and
times, device energy constants and battery capacities.

As :mod:`sfl_sim.channel.limits` does for the radio, each :class:`~sfl_sim.kit.ranges.Range` is a
deliberately wide box (orders of magnitude around every real device) with a one-line reason: it
stops a typo or a unit slip before it becomes an infinite energy, a round of 1e307 s or an
overflow.  The scenario (:mod:`sfl_sim.config`), the device trace readers
(:mod:`sfl_sim.clients.availability`) and the energy models (:mod:`sfl_sim.clients.energy`, whose
``Params`` bound a field with one: ``Annotated[float, KAPPA]``) check against the same constants,
so a trace value and a scenario field of the same quantity are held to the same bounds.
"""
from __future__ import annotations

from sfl_sim.channel.limits import BANDWIDTH_HZ, CLIENT_TX_POWER_W, SPECTRAL_EFFICIENCY_BPS_PER_HZ
from sfl_sim.kit.ranges import Range

__all__ = ["COMPUTE_FLOPS_PER_S", "LINK_RATE_BPS", "MS_PER_SAMPLE", "TRACE_TIME_S", "KAPPA", "FLOPS_PER_CYCLE",
           "J_PER_FLOP", "DEVICE_POWER_W", "TAIL_S", "BATTERY_CAPACITY_J", "allowed"]

#: A device's (or the server's) compute speed, FLOP/s: ``clients.compute_flops_per_s_min``/``_max``,
#: ``server.compute_flops_per_s`` and every speed a capability trace gives.
COMPUTE_FLOPS_PER_S = Range(1.0, 1e21, "from a microcontroller to a supercomputer", "FLOP/s")
#: A traced link throughput, bit/s: at most the widest band at the highest spectral efficiency
#: the radio allows (:mod:`sfl_sim.channel.limits`).
LINK_RATE_BPS = Range(
    1.0, BANDWIDTH_HZ.high * SPECTRAL_EFFICIENCY_BPS_PER_HZ.high,
    "1 bit/s is slower than any link that carries data; the top is the widest band (1 THz) at the "
    "highest spectral efficiency (100 bit/s/Hz) of sfl_sim.channel.limits", "bit/s",
)
#: A traced inference latency per sample (FedScale's ``computation``), ms.
MS_PER_SAMPLE = Range(
    1e-6, 1e9, "1 ns to 1e6 s (11.6 days) per sample spans every device with room to spare", "ms",
)
#: A time in a device availability trace, s (from the trace's time 0).
TRACE_TIME_S = Range(0.0, 1e10, ">= 0; 1e10 s is 317 years, longer than any trace can have been recorded", "s")

#: Effective switched capacitance of a DVFS energy model, J/cycle/Hz^2.
KAPPA = Range(
    0.0, 1e-20,
    ">= 0; Yang et al. (IEEE TWC 2021) use 1e-28, and at 1e-20 one cycle at 1 GHz would cost 1e-2 J "
    "(a 10 MW core)", "J/cycle/Hz^2",
)
#: Floating-point operations a device completes per clock cycle.
FLOPS_PER_CYCLE = Range(
    1e-3, 1e6,
    "1e-3 is a thousand cycles per FLOP (floating point emulated in software); 1e6 per cycle is beyond "
    "the parallel lanes of any chip", "FLOP/cycle",
)
#: Compute energy per FLOP of a device, J/FLOP (the scenario's ``energy.server_j_per_flop``
#: shares the bounds).
J_PER_FLOP = Range(
    0.0, 1.0, ">= 0; Horowitz (ISSCC 2014) gives 2.3e-12 J for fp32 arithmetic, 1 J per FLOP is no computer",
    "J/FLOP",
)
#: A device's radio power draw (circuit, receive, idle, RRC tail), W.
DEVICE_POWER_W = Range(
    0.0, CLIENT_TX_POWER_W.high,
    ">= 0; Huang et al. (MobiSys 2012) measure 1.06-1.29 W for an LTE handset (Tables 3-4); the top is the bound on a "
    "client's transmit power", "W",
)
#: The RRC tail timer, s.
TAIL_S = Range(
    0.0, 3600.0, ">= 0; LTE's tail timer is 11.576 s (Huang et al., MobiSys 2012, Table 3), an hour is no "
    "radio timer", "s",
)
#: A client's battery capacity, J.
BATTERY_CAPACITY_J = Range(
    0.0, 1e12, "> 0 (an empty battery never takes part in a round); 1e12 J (278 MWh) is no battery a client "
    "carries", "J", low_open=True,
)


def allowed(rng: Range) -> str:
    """What a value of ``rng`` may be, in the words of a one-line error's ``allowed:`` part."""
    return f"a finite number in {rng} ({rng.reason})"
