"""Wireless channel models for sfl-sim: geometry, path loss, shadowing, fading, rates, allocation,
mobility, uplink power control, interference, HARQ, outage, MAC scheduling.

Imports only numpy, scipy, the standard library and :mod:`sfl_sim.kit` (never ``sfl_sim``; pydantic
only through :mod:`sfl_sim.kit.params`: a component declares its parameters' bounds with
``Annotated[float, RANGE]``).  Each
swappable component kind is a row of :data:`CHANNEL_KINDS` (:mod:`sfl_sim.channel.kinds`): a
:class:`sfl_sim.kit.registry.Registry` (:data:`REGISTRIES`) with its :class:`typing.Protocol`
(:data:`PROTOCOLS`, :mod:`sfl_sim.channel.protocols`) and the scenario field; components are created by
short name or ``"package.module:Class"`` and assembled into a :class:`Cell` (HARQ into the engine):
the large-scale part (placement, LOS, path loss, shadowing, mobility) composed into one
:class:`LargeScale`, the per-round part (power control, interference, rate, allocation) into a
:class:`LinkBudgetModel`.
:func:`check_component` checks that a (new) component behaves like one of its kind;
:mod:`sfl_sim.channel.limits` holds the physical ranges of every parameter.
"""
from sfl_sim.channel.cell import Cell, LinkBudget
from sfl_sim.channel.conformance import check_component
from sfl_sim.channel.kinds import CELL_KINDS, CHANNEL_KINDS, PROTOCOLS, REGISTRIES, ChannelKind
from sfl_sim.channel.large_scale.geometry import PLACEMENTS, FixedDistancePlacement, UniformDiscPlacement, distances_m
from sfl_sim.channel.large_scale.mobility import (
    MOBILITY,
    RandomDirectionMobility,
    RandomWaypointMobility,
    StaticMobility,
)
from sfl_sim.channel.large_scale.mobility_traces import MobilityTraceError, TraceMobility, read_mobility_trace
from sfl_sim.channel.large_scale.model import LargeScale
from sfl_sim.channel.large_scale.pathloss import PATHLOSS, FreeSpace, LogDistance, TR36814Macro
from sfl_sim.channel.large_scale.shadowing import SHADOWING, CorrelatedShadowing, LogNormalShadowing, NoShadowing
from sfl_sim.channel.large_scale.timed_mobility import GaussMarkovMobility, StepwiseTimedMobility
from sfl_sim.channel.large_scale.tr38901 import TR38901UMa, TR38901UMi
from sfl_sim.channel.link.allocation import (
    ALLOCATORS,
    EqualAllocation,
    EqualFinishTimeAllocation,
    ProportionalPayloadAllocation,
)
from sfl_sim.channel.link.budget import LinkBudgetModel
from sfl_sim.channel.link.fading import FADING, NakagamiFading, NoFading, RayleighFading, RicianFading
from sfl_sim.channel.link.harq import HARQ, Harq, HarqSend, NoHarq
from sfl_sim.channel.link.interference import INTERFERENCE, FirstTierInterference, NoInterference, NoiseRise
from sfl_sim.channel.link.link_rate import AttenuatedShannonRate, McsTableRate, ShannonGapRate
from sfl_sim.channel.link.outage import OutagePolicy
from sfl_sim.channel.link.power_control import POWER_CONTROL, FixedPower, OpenLoopPowerControl
from sfl_sim.channel.link.rate import RATES, ShannonRate
from sfl_sim.channel.link.scheduling import (
    SCHEDULERS,
    MaxRate,
    ProportionalFair,
    ResourceGrid,
    RoundRobin,
    StaticScheduler,
)
from sfl_sim.channel.protocols import ShadowingSite
from sfl_sim.channel.units import db_to_linear, dbm_to_w, linear_to_db, w_to_dbm

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
    "SCHEDULERS",
    "StaticScheduler",
    "RoundRobin",
    "ProportionalFair",
    "MaxRate",
    "ResourceGrid",
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
    "GaussMarkovMobility",
    "StepwiseTimedMobility",
    "TraceMobility",
    "MobilityTraceError",
    "read_mobility_trace",
    "OutagePolicy",
    "Harq",
    "NoHarq",
    "HarqSend",
    "Cell",
    "LinkBudget",
    "LargeScale",
    "LinkBudgetModel",
    "check_component",
    "db_to_linear",
    "linear_to_db",
    "dbm_to_w",
    "w_to_dbm",
]
