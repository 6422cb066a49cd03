"""The channel component kinds: the one table the cell, the conformance checks, the scenario
schema, the builder and the catalog read.

Each kind has a registry of named classes (which carries the kind's name and its protocol from
:mod:`sfl_sim.channel.protocols`), the scenario field that names one (``cell.<kind>``) and the
:class:`~sfl_sim.channel.Cell` argument it is passed as (none for ``harq`` and ``scheduler``, which the engine is given:
:data:`CELL_KINDS` are the others).  A new kind is one row here.
"""
from __future__ import annotations

from dataclasses import dataclass

from sfl_sim.channel.large_scale import mobility_traces, timed_mobility  # noqa: F401  (register trace, gauss_markov)
from sfl_sim.channel.large_scale.geometry import PLACEMENTS
from sfl_sim.channel.large_scale.mobility import MOBILITY
from sfl_sim.channel.large_scale.pathloss import PATHLOSS
from sfl_sim.channel.large_scale.shadowing import SHADOWING
from sfl_sim.channel.link import (
    fading_time,  # noqa: F401  (registers jakes, gauss_markov, rician_jakes)
    link_rate,  # noqa: F401  (registers shannon_gap, attenuated_shannon, mcs_table)
)
from sfl_sim.channel.link.allocation import ALLOCATORS
from sfl_sim.channel.link.fading import FADING
from sfl_sim.channel.link.harq import HARQ
from sfl_sim.channel.link.interference import INTERFERENCE
from sfl_sim.channel.link.power_control import POWER_CONTROL
from sfl_sim.channel.link.rate import RATES
from sfl_sim.channel.link.scheduling import SCHEDULERS
from sfl_sim.channel.network.association import HANDOVER
from sfl_sim.channel.network.hexgrid import NETWORK
from sfl_sim.kit.registry import Registry

__all__ = ["ChannelKind", "CHANNEL_KINDS", "CELL_KINDS", "PROTOCOLS", "REGISTRIES"]


@dataclass(frozen=True)
class ChannelKind:
    """One kind of channel component.

    Attributes
    ----------
    registry : sfl_sim.kit.registry.Registry
        Short name -> class, made with the kind's name and protocol.
    field : str
        The scenario field that names one (``"cell.pathloss"``).
    cell_argument : str or None
        The :class:`~sfl_sim.channel.Cell` constructor argument that takes one; None for a kind the cell
        does not hold (``harq``, ``scheduler``: the engine's; ``network``, ``handover``: passed by name).
    implied_name : str or None
        The component a scenario mapping without ``name`` means (``cell.harq: {mode: sampled}``
        is ``harq``); None: ``name`` is required.
    """

    registry: Registry
    field: str
    cell_argument: str | None
    implied_name: str | None = None

    @property
    def name(self) -> str:
        """The kind (``"pathloss"``): its registry's kind and its entry-point group's suffix."""
        return self.registry.kind

    @property
    def protocol(self) -> type:
        """The :class:`typing.Protocol` every component of the kind satisfies (or one of
        :attr:`protocols`)."""
        assert self.registry.protocol is not None  # every channel registry is made with one
        return self.registry.protocol

    @property
    def protocols(self) -> tuple[type, ...]:
        """The protocols a component of the kind may satisfy (the first, :attr:`protocol`, or an
        alternative form: a fading in time)."""
        return self.registry.protocols


#: Every channel kind, in listing order.
CHANNEL_KINDS: tuple[ChannelKind, ...] = (
    ChannelKind(PLACEMENTS, "cell.placement", "placement"),
    ChannelKind(PATHLOSS, "cell.pathloss", "pathloss"),
    ChannelKind(SHADOWING, "cell.shadowing", "shadowing"),
    ChannelKind(FADING, "cell.fading", "fading"),
    ChannelKind(RATES, "cell.rate", "rate"),
    ChannelKind(ALLOCATORS, "cell.allocation", "allocator"),
    ChannelKind(MOBILITY, "cell.mobility", "mobility"),
    ChannelKind(POWER_CONTROL, "cell.power_control", "power_control"),
    ChannelKind(INTERFERENCE, "cell.interference", "interference"),
    ChannelKind(HARQ, "cell.harq", None, implied_name="harq"),
    ChannelKind(SCHEDULERS, "cell.scheduler", None),
    ChannelKind(NETWORK, "cell.network", None),
    ChannelKind(HANDOVER, "cell.handover", None),
)

#: The kinds the :class:`~sfl_sim.channel.Cell` is built from (those with a ``cell_argument``).
CELL_KINDS: tuple[ChannelKind, ...] = tuple(k for k in CHANNEL_KINDS if k.cell_argument is not None)

#: The required protocol of every channel kind.
PROTOCOLS: dict[str, type] = {k.name: k.protocol for k in CHANNEL_KINDS}

#: Every channel registry by kind.
REGISTRIES: dict[str, Registry] = {k.name: k.registry for k in CHANNEL_KINDS}
