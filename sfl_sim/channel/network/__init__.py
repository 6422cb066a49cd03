"""Many cells: a hexagonal network of sites and sectors with wrap-around distances
(:mod:`~sfl_sim.channel.network.hexgrid`), and which cell serves each client over time: RSRP,
strongest-cell association, A3 handover, radio link failure
(:mod:`~sfl_sim.channel.network.association`, a ``handover`` registry with the protocol of
:mod:`~sfl_sim.channel.network.protocols` and the check of :mod:`~sfl_sim.channel.network.conformance`).

In a run (``cell.network``), :mod:`~sfl_sim.channel.network.state` wires them into the cell's
radio state (see ``docs/concepts/network.md``).  Numpy and :mod:`sfl_sim.kit` only.
"""
from sfl_sim.channel.network.association import HANDOVER, A3Handover, a3_conditions, rsrp_dbm, strongest_cell
from sfl_sim.channel.network.conformance import HandoverConformanceError, check_handover
from sfl_sim.channel.network.hexgrid import NETWORK, HexGrid, hexagon_vertices, lattice_sites, wraparound_translations
from sfl_sim.channel.network.protocols import NO_CELL, HandoverEvent, HandoverRule, HandoverTrace

__all__ = ["NETWORK", "HexGrid", "lattice_sites", "wraparound_translations", "hexagon_vertices", "HANDOVER",
           "A3Handover", "rsrp_dbm", "strongest_cell", "a3_conditions", "HandoverRule", "HandoverEvent",
           "HandoverTrace", "NO_CELL", "check_handover", "HandoverConformanceError"]
