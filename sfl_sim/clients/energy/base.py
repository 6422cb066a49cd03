"""The energy kind itself: its protocol and its registry (imported by the models, the ledger and
the conformance check, so that none of them needs the package's ``__init__``)."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from sfl_sim.kit.registry import Registry

__all__ = ["ENERGY", "DeviceEnergy"]


@runtime_checkable
class DeviceEnergy(Protocol):
    """What every device energy model offers: joules of one activity of one client."""

    def compute_j(self, flops: float, flops_per_s: float) -> float:
        """Energy of computing ``flops`` on a device whose budget is ``flops_per_s`` FLOP/s, J."""

    def transmit_j(self, tx_power_w: float, seconds: float) -> float:
        """Energy of ``seconds`` on the air at radiated power ``tx_power_w``, J."""

    def receive_j(self, seconds: float) -> float:
        """Energy of ``seconds`` receiving, J."""

    def idle_j(self, seconds: float) -> float:
        """Energy of ``seconds`` in a round with nothing to do (waiting), J."""

    def tail_j(self, seconds_after_round: float, idle_since_transfer_s: float) -> float:
        """Energy of the radio's tail after the round ends, J.

        ``idle_since_transfer_s`` is how long before the round's end the client's last transfer
        ended; ``seconds_after_round`` how long it waits after the round until its next round
        starts (``inf``: the whole tail).  The ledger calls it when that next round starts.  A model
        without a tail returns 0."""


ENERGY = Registry("energy", protocol=DeviceEnergy)
