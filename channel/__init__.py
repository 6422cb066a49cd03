"""Wireless channel models for sfl-sim: geometry, path loss, shadowing, fading, rates, allocation,
mobility, uplink power control, interference, HARQ, outage.

Imports only numpy, scipy, the standard library and :mod:`simkit` (never ``sfl_sim``; pydantic
only through :mod:`simkit.params`: a component declares its parameters' bounds with
``Annotated[float, RANGE]``).  Each
swappable component kind is a row of :data:`CHANNEL_KINDS` (:mod:`channel.kinds`): a
:class:`simkit.registry.Registry` (:data:`REGISTRIES`) with its :class:`typing.Protocol`
(:data:`PROTOCOLS`, :mod:`channel.protocols`) and the scenario field; components are created by
short name or ``"package.module:Class"`` and assembled into a :class:`Cell` (HARQ into the engine).
:func:`check_component` checks that a (new) component behaves like one of its kind;
:mod:`channel.limits` holds the physical ranges of every parameter.
"""
from .allocation import ALLOCATORS, EqualAllocation, EqualFinishTimeAllocation, ProportionalPayloadAllocation
from .cell import Cell, LinkBudget
from .fading import FADING, NakagamiFading, NoFading, RayleighFading, RicianFading
from .geometry import PLACEMENTS, FixedDistancePlacement, UniformDiscPlacement, distances_m
from .mobility import MOBILITY, RandomDirectionMobility, RandomWaypointMobility, StaticMobility
from .outage import OutagePolicy
from .harq import HARQ, Harq, HarqSend, NoHarq
from .power_control import POWER_CONTROL, FixedPower, OpenLoopPowerControl
from .interference import INTERFERENCE, FirstTierInterference, NoInterference, NoiseRise
from .protocols import ShadowingSite
from .pathloss import PATHLOSS, FreeSpace, LogDistance, TR36814Macro
from .rate import RATES, ShannonRate
from .link_rate import AttenuatedShannonRate, McsTableRate, ShannonGapRate
from .shadowing import SHADOWING, CorrelatedShadowing, LogNormalShadowing, NoShadowing
from .tr38901 import TR38901UMa, TR38901UMi
from .units import db_to_linear, dbm_to_w, linear_to_db, w_to_dbm
from .kinds import CELL_KINDS, CHANNEL_KINDS, PROTOCOLS, REGISTRIES, ChannelKind
from .conformance import check_component

__all__ = [
    "CHANNEL_KINDS",
    "CELL_KINDS",
    "ChannelKind",
    "REGISTRIES",
    "PROTOCOLS",
    "PLACEMENTS",
    "PATHLOSS",
    "SHADOWING",
    "FADING",
    "RATES",
    "ALLOCATORS",
    "MOBILITY",
    "POWER_CONTROL",
    "INTERFERENCE",
    "HARQ",
    "FixedPower",
    "OpenLoopPowerControl",
    "NoInterference",
    "NoiseRise",
    "FirstTierInterference",
    "UniformDiscPlacement",
    "FixedDistancePlacement",
    "distances_m",
    "TR36814Macro",
    "FreeSpace",
    "LogDistance",
    "TR38901UMa",
    "TR38901UMi",
    "NoShadowing",
    "LogNormalShadowing",
    "CorrelatedShadowing",
    "ShadowingSite",
    "NoFading",
    "RayleighFading",
    "RicianFading",
    "NakagamiFading",
    "ShannonRate",
    "ShannonGapRate",
    "AttenuatedShannonRate",
    "McsTableRate",
    "EqualAllocation",
    "ProportionalPayloadAllocation",
    "EqualFinishTimeAllocation",
    "StaticMobility",
    "RandomWaypointMobility",
    "RandomDirectionMobility",
    "OutagePolicy",
    "Harq",
    "NoHarq",
    "HarqSend",
    "Cell",
    "LinkBudget",
    "check_component",
    "db_to_linear",
    "linear_to_db",
    "dbm_to_w",
    "w_to_dbm",
]
