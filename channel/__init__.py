"""Wireless channel models for sfl-sim: geometry, path loss, shadowing, rates, allocation.

Imports only numpy, scipy and the standard library (never ``sfl_sim``).  Each swappable
component kind has a :class:`Registry`; components are created by short name or
``"package.module:Class"`` and assembled into a :class:`Cell`.
"""
from .allocation import ALLOCATORS, EqualAllocation
from .cell import Cell
from .geometry import PLACEMENTS, FixedDistancePlacement, UniformDiscPlacement, distances_m
from .pathloss import PATHLOSS, TR36814Macro
from .rate import RATES, ShannonRate
from .registry import Registry, UnknownComponentError
from .shadowing import SHADOWING, LogNormalShadowing, NoShadowing
from .units import db_to_linear, dbm_to_w, linear_to_db, w_to_dbm

__all__ = [
    "Registry",
    "UnknownComponentError",
    "PLACEMENTS",
    "PATHLOSS",
    "SHADOWING",
    "RATES",
    "ALLOCATORS",
    "UniformDiscPlacement",
    "FixedDistancePlacement",
    "distances_m",
    "TR36814Macro",
    "NoShadowing",
    "LogNormalShadowing",
    "ShannonRate",
    "EqualAllocation",
    "Cell",
    "db_to_linear",
    "linear_to_db",
    "dbm_to_w",
    "w_to_dbm",
]
