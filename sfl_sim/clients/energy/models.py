"""The built-in device energy models: ``per_flop`` and ``dvfs`` compute, one radio model.

Both models share the radio part (:class:`RadioParams`):

* transmit: ``(P_tx / eta_PA + P_circuit) * t_tx`` with ``P_tx`` the radiated power the cell
  chose for the client (:meth:`sfl_sim.engine.RoundContext.uplink_tx_power_w`) and ``t_tx`` the
  air time of every attempt, failed ones included;
* receive: ``P_rx * t_rx`` for every download and broadcast (zero with ``cell.downlink.mode:
  ideal``, whose transfers take no time);
* idle: ``P_idle * t_wait`` for the time a client is in the round and neither computes nor
  transfers;
* RRC tail (off by default): after its last transfer an LTE radio stays in RRC_CONNECTED at
  ``P_tail`` for ``T_tail`` (Huang et al., MobiSys 2012), until its next transfer; inside a round
  the client takes part in that time is already charged as idle, so the tail charges only the part
  that runs between its rounds (the ledger charges it when the client's next round starts:
  :mod:`sfl_sim.clients.energy.ledger`, "RRC tail").

Default constants and their sources (every one is also in ``scenarios/cellular_100clients.yaml``):

==========================  ==============  =====================================================
parameter                   default         source
==========================  ==============  =====================================================
``kappa``                   1e-28           Yang et al., "Energy efficient federated learning over
                                            wireless communication networks", IEEE TWC 2021,
                                            Sec. VI (effective switched capacitance)
``flops_per_cycle``         8               our choice: one 128-bit SIMD FMA on 4 fp32 lanes per
                                            cycle (Arm Neon class mobile CPU)
``j_per_flop``              2.3e-12         Horowitz, "Computing's energy problem", ISSCC 2014,
                                            Fig. 1.1.9 (45 nm): fp32 add 0.9 pJ + mult 3.7 pJ per
                                            2 FLOPs (arithmetic only: a lower bound)
``circuit_power_w``         1.28804         Huang et al., "A close examination of performance and
                                            power characteristics of 4G LTE networks", MobiSys
                                            2012, Table 4: LTE beta = 1288.04 mW
``rx_power_w``              1.28804         same beta (the throughput term alpha_d = 51.97 mW/Mbps
                                            is left out)
``idle_power_w``            1.06            Huang et al. 2012, Table 3: LTE RRC_CONNECTED tail
                                            base power 1060.0 mW (a client waiting in a round
                                            stays connected)
``tail_power_w``            1.06            Huang et al. 2012, Table 3 (as above)
``tail_s``                  11.576          Huang et al. 2012, Table 3: LTE tail timer 11576 ms
``pa_efficiency``           0.35            our choice: a class-AB handset power amplifier near
                                            its rated output
==========================  ==============  =====================================================

The server profile (``energy.server_j_per_flop``, :data:`SERVER_J_PER_FLOP`) is the NVIDIA A100
SXM datasheet: 400 W board power over 19.5 TFLOP/s fp32 peak.  The backhaul's energy per bit
(``server.edge.backhaul_j_per_bit``, :data:`BACKHAUL_J_PER_BIT`) is Aslan et al. (2018)'s
electricity intensity of Internet data transmission for 2015, 0.06 kWh/GB.
"""
from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field

from sfl_sim.clients import limits
from sfl_sim.clients.energy.base import ENERGY
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel

__all__ = ["RadioParams", "PerFlopEnergy", "DvfsEnergy", "HUANG_2012", "YANG_2021_KAPPA", "HOROWITZ_2014_J_PER_FLOP",
           "SERVER_J_PER_FLOP", "PA_EFFICIENCY", "FLOPS_PER_CYCLE", "ASLAN_2018_KWH_PER_GB", "BACKHAUL_J_PER_BIT"]

#: The LTE constants of Huang et al. (MobiSys 2012) as quoted: Table 4's data-transfer model
#: (``alpha_u``, ``alpha_d`` in W per Mbit/s, ``beta`` in W) and Table 3's RRC_CONNECTED tail.
HUANG_2012 = {"alpha_u_w_per_mbps": 0.43839, "alpha_d_w_per_mbps": 0.05197, "beta_w": 1.28804,
              "tail_power_w": 1.060, "tail_s": 11.576}
#: Effective switched capacitance of Yang et al. (IEEE TWC 2021), Sec. VI.
YANG_2021_KAPPA = 1e-28
#: Horowitz (ISSCC 2014), 45 nm: a 32-bit float add 0.9 pJ and multiply 3.7 pJ; one
#: multiply-add is 2 FLOPs.
HOROWITZ_2014_J_PER_FLOP = (0.9e-12 + 3.7e-12) / 2
#: NVIDIA A100 SXM datasheet: 400 W over 19.5e12 FLOP/s fp32.
SERVER_J_PER_FLOP = 400.0 / 19.5e12
#: J. Aslan, K. Mayers, J. G. Koomey, C. France, "Electricity Intensity of Internet Data
#: Transmission: Untangling the Estimates", Journal of Industrial Ecology 22(4):785-798, 2018,
#: doi:10.1111/jiec.12630, abstract: "a new estimate of 0.06 kWh/GB for 2015" for the core and
#: fixed-line access networks (halving about every 2 years since 2000), kWh per GB.
ASLAN_2018_KWH_PER_GB = 0.06
#: Joules per bit over the edge servers' backhaul (``server.edge.backhaul_j_per_bit``):
#: :data:`ASLAN_2018_KWH_PER_GB` with 1 kWh = 3.6e6 J and, our reading, GB = 10^9 bytes = 8e9 bit:
#: 0.06 x 3.6e6 J / 8e9 bit = 2.7e-5 J/bit.  Our choice: the paper's whole fixed-line path for 2015
#: stands in for an edge backhaul; set it for your network.
BACKHAUL_J_PER_BIT = ASLAN_2018_KWH_PER_GB * 3.6e6 / 8e9
#: Our choice: power-amplifier efficiency of a handset near its rated output.
PA_EFFICIENCY = 0.35
#: Our choice: fp32 FLOPs per cycle of a mobile CPU core (4-lane FMA).
FLOPS_PER_CYCLE = 8.0

# Every other constant keeps a physical range of sfl_sim.clients.limits, so that no accepted value
# turns a round's joules into inf (kappa 1e300) or a division by zero (1e-300 FLOPs per cycle).
PaEfficiency = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]


class RadioParams(ParamsModel):
    """The radio constants every device energy model takes (see the module table)."""

    pa_efficiency: Annotated[PaEfficiency, Doc("Power-amplifier efficiency eta_PA, in (0, 1] (our choice).")] = \
        PA_EFFICIENCY
    circuit_power_w: Annotated[float, limits.DEVICE_POWER_W, Doc(
        "Circuit power while transmitting, W (Huang et al. 2012, beta).")] = HUANG_2012["beta_w"]
    rx_power_w: Annotated[float, limits.DEVICE_POWER_W, Doc(
        "Power while receiving, W (Huang et al. 2012, beta).")] = HUANG_2012["beta_w"]
    idle_power_w: Annotated[float, limits.DEVICE_POWER_W, Doc(
        "Power while waiting in the round, W (Huang et al. 2012, the RRC_CONNECTED tail power).")] = \
        HUANG_2012["tail_power_w"]
    rrc_tail: Annotated[bool, Doc("Charge the RRC tail after a client's last transfer.")] = False
    tail_power_w: Annotated[float, limits.DEVICE_POWER_W, Doc(
        "Power in the RRC tail, W (Huang et al. 2012, Table 3).")] = HUANG_2012["tail_power_w"]
    tail_s: Annotated[float, limits.TAIL_S, Doc(
        "Length of the RRC tail, s (Huang et al. 2012, Table 3).")] = HUANG_2012["tail_s"]


class _Radio(Component):
    """The radio part shared by the models (transmit, receive, idle, tail); reads the radio fields
    (:class:`RadioParams`) of the model's parameters."""

    params: RadioParams

    def transmit_j(self, tx_power_w: float, seconds: float) -> float:
        """``(P_tx / eta_PA + P_circuit) * t_tx``."""
        r = self.params
        return (tx_power_w / r.pa_efficiency + r.circuit_power_w) * seconds

    def receive_j(self, seconds: float) -> float:
        """``P_rx * t_rx``."""
        return self.params.rx_power_w * seconds

    def idle_j(self, seconds: float) -> float:
        """``P_idle * t_wait``."""
        return self.params.idle_power_w * seconds

    def tail_j(self, seconds_after_round: float, idle_since_transfer_s: float) -> float:
        """``P_tail`` times the part of ``T_tail`` (from the last transfer's end) past the round's
        end, at most ``seconds_after_round`` (the time until the client's next round); 0 with
        ``rrc_tail`` off."""
        r = self.params
        if not r.rrc_tail:
            return 0.0
        return r.tail_power_w * max(0.0, min(r.tail_s - idle_since_transfer_s, seconds_after_round))


@ENERGY.register("per_flop")
class PerFlopEnergy(_Radio):
    """Compute energy proportional to the FLOPs: ``E = j_per_flop * FLOPs``; the shared radio model.

    """

    class _Compute(ParamsModel):
        j_per_flop: Annotated[float, limits.J_PER_FLOP, Doc(
            "Joules per FLOP; default Horowitz (ISSCC 2014) fp32 arithmetic.")] = HOROWITZ_2014_J_PER_FLOP

    class Params(RadioParams, _Compute):  # the compute parameter first, then the radio's
        """PerFlopEnergy's parameters (what a scenario sets beside ``name``)."""

    params: Params

    def compute_j(self, flops: float, flops_per_s: float) -> float:
        """``j_per_flop * flops`` (the device's speed does not matter)."""
        return self.params.j_per_flop * flops


@ENERGY.register("dvfs")
class DvfsEnergy(_Radio):
    """CMOS dynamic power under DVFS: ``E = kappa * cycles * f^2`` (Yang et al., TWC 2021, eq. 5).

    ``cycles = FLOPs / flops_per_cycle`` and the clock ``f = flops_per_s / flops_per_cycle`` of the
    client's FLOP/s budget, so a faster client pays more per FLOP (``E = kappa * FLOPs *
    flops_per_s^2 / flops_per_cycle^3``).

    """

    class _Compute(ParamsModel):
        kappa: Annotated[float, limits.KAPPA, Doc(
            "Effective switched capacitance, J/cycle/Hz^2; default Yang et al. 2021, Sec. VI.")] = \
            YANG_2021_KAPPA
        flops_per_cycle: Annotated[float, limits.FLOPS_PER_CYCLE, Doc(
            "FLOPs a core completes per clock cycle.")] = FLOPS_PER_CYCLE

    class Params(RadioParams, _Compute):  # the compute parameters first, then the radio's
        """DvfsEnergy's parameters (what a scenario sets beside ``name``)."""

    params: Params

    def compute_j(self, flops: float, flops_per_s: float) -> float:
        """``kappa * (flops / flops_per_cycle) * (flops_per_s / flops_per_cycle) ** 2``."""
        if not math.isfinite(flops_per_s) or flops_per_s <= 0:
            raise ValueError(f"flops_per_s: got {flops_per_s!r}; allowed: a finite number > 0")
        p = self.params
        cycles = flops / p.flops_per_cycle
        f_hz = flops_per_s / p.flops_per_cycle
        return p.kappa * cycles * f_hz * f_hz
