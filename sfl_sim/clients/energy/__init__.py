"""Client and server energy: device energy models (kind ``energy``) and the per-round ledger.

A device energy model turns what a client did in a round (FLOPs computed, seconds on the air at a
transmit power, seconds receiving, seconds waiting) into joules (:class:`DeviceEnergy`,
registry :data:`ENERGY`, ``sfl-sim list energy``); built-ins ``per_flop`` and ``dvfs``
(:mod:`sfl_sim.clients.energy.models`, with the sources of every default).  :class:`EnergyLedger`
charges each client of each round from the engine's busy notes (:mod:`sfl_sim.clients.energy.ledger`),
which the runner writes to ``energy.csv``.
"""
from __future__ import annotations

from sfl_sim.clients.energy.base import ENERGY, DeviceEnergy
from sfl_sim.clients.energy.conformance import check_energy
from sfl_sim.clients.energy.ledger import ClientEnergy, EnergyLedger, backhaul_energy_j, busy_seconds
from sfl_sim.clients.energy.models import DvfsEnergy, PerFlopEnergy, RadioParams

__all__ = ["ENERGY", "DeviceEnergy", "ClientEnergy", "EnergyLedger", "backhaul_energy_j", "busy_seconds",
           "DvfsEnergy", "PerFlopEnergy", "RadioParams", "check_energy"]
