"""The scheduled band: one direction's resource blocks in one round, handed out by a scheduler.

With a dynamic ``cell.scheduler`` (:mod:`sfl_sim.channel.link.scheduling`), the link process
(:mod:`sfl_sim.engine.link`) does not wait ``bits / rate`` on a share fixed for the round: it puts
its bits into the band (:meth:`~sfl_sim.engine.band.base.BandResource.put`, SimPy's resource
shape: the put is a :class:`~sfl_sim.engine.band.base.Transfer` event) and waits for that event,
which fires when the last bit is through.  The band owns the ``n_rb`` resource blocks of the grid
and the clients' buffers, asks the policy for RBs, and gets each client's rate on its RBs from the
cell (``link_at``: the rate model with the client's power control on the granted bandwidth
``m B / N_RB`` — the channel's bandwidth per RB, :attr:`ResourceGrid.hz_per_rb`, so open-loop power
control counts ``m`` RBs — and its fading now).

Two forms, one interface (:class:`~sfl_sim.engine.band.base.BandResource`), picked here by
:func:`scheduling_form` (the one place that reads a scheduler's ``dynamic`` and ``fidelity``) and
:func:`open_band` (the one place that builds a band and reads the grant latency):

``fluid``
    :class:`~sfl_sim.engine.band.fluid.FluidBand`: processor sharing, re-shared when a transfer
    starts or ends (:mod:`sfl_sim.engine.band.fluid`).
``slot``
    :class:`~sfl_sim.engine.band.slot.SlotBand`: a decision every slot ``1 ms / 2^mu``, transport
    blocks and HARQ copies (:mod:`sfl_sim.engine.band.slot`).

Both forms see the fading of the round's link (:class:`~sfl_sim.engine.radio.Uplink`: one draw per
coherence block of ``cell.coherence``, the draw the static split sees), never a draw of their own:
the fading's time scale is the channel's, not the fidelity's.  (An i.i.d. draw every slot, the
former ``fading_per_slot``, is a Doppler no client has: 250 km/h at 3.5 GHz for 0.5 ms slots.)

What the band granted each client (:meth:`~sfl_sim.engine.band.base.BandResource.grants`:
RB-seconds, seconds with a grant, bits sent, transport blocks, the SINR of the grants) is only
recorded: ``clients.csv``'s grant columns and, with ``metrics.slot_trace``, one row per slot form
grant (:attr:`~sfl_sim.engine.band.base.BandResource.slot_trace`).

On a network of more than one cell each cell has its own band, and a transfer goes to its
client's serving cell's (:class:`~sfl_sim.engine.band.cells.CellBands`, :mod:`sfl_sim.engine.band.cells`).

A new transfer waits the grant latency (scheduling request + buffer status report + K2 slots)
before it can be granted.  The energy ledger gets one busy interval per transfer, from its start
to its end, at the mean power it sent with (energy over duration), so the energy is exact.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import simpy

from sfl_sim.channel.link.scheduling import ResourceGrid, is_dynamic
from sfl_sim.channel.protocols import HarqModel, Scheduler
from sfl_sim.engine.band.base import BandResource, FadingOf, Grants, HeadroomOf, LinkAt, NoteBusy, SlotGrant, Transfer
from sfl_sim.engine.band.cells import CellBands, CellRadio
from sfl_sim.engine.band.fluid import FluidBand
from sfl_sim.engine.band.slot import SlotBand

__all__ = ["BandResource", "CellBands", "CellRadio", "FadingOf", "FluidBand", "Form", "Grants", "HeadroomOf", "LinkAt",
           "NoteBusy", "SlotBand", "SlotGrant", "Transfer", "open_band", "scheduling_form"]

Form = Literal["static", "fluid", "slot"]
"""What the engine does with a scheduler: the per-round split (``static``), or a band of either form."""


def scheduling_form(scheduler: object) -> Form:
    """``static`` for no scheduler or one that is not dynamic
    (:func:`~sfl_sim.channel.link.scheduling.is_dynamic`), else its ``fidelity``: the one place
    the engine, the run and the reports learn how a scheduler is run."""
    if scheduler is None or not is_dynamic(scheduler):
        return "static"
    return "slot" if getattr(scheduler, "fidelity", "fluid") == "slot" else "fluid"


def open_band(env: simpy.Environment, policy: Scheduler, grid: ResourceGrid, link_at: LinkAt, fading: FadingOf,
              note_busy: NoteBusy, harq: HarqModel | None = None,
              block_rng: Callable[[int, int], np.random.Generator] | None = None, ladder: int = 1,
              trace_slots: bool = False, headroom: HeadroomOf | None = None,
              refresh_s: float | None = None) -> BandResource:
    """The band of one direction in one round under the dynamic scheduler ``policy``, in its form.

    Parameters
    ----------
    env : simpy.Environment
    policy : Scheduler
        A dynamic scheduler (its ``fidelity``, ``grant_latency_slots()`` and, fluid,
        ``fluid_equal_shares`` are read).
    grid : ResourceGrid
    link_at : LinkAt
    fading : FadingOf
    note_busy : NoteBusy
    harq : HarqModel or None
        Slot form: each transport block's fate is its ``send``.
    block_rng : callable or None
        Slot form with HARQ: ``block_rng(client, slot)``, the stream of a client's draws in a slot.
    ladder : int
        Fluid form: the RB counts ``n_rb / n``, ``n = 1 .. ladder``, tabled per fading draw (the
        cohort size).
    trace_slots : bool
        Slot form: keep every grant of every slot (``metrics.slot_trace``).
    headroom : HeadroomOf or None
        Each client's power headroom in RBs (the uplink's power control), for a policy method that
        declares ``headroom_rb``; None: no limit.
    refresh_s : float or None
        Fluid form on a radio in time: re-share at least this often (the rates follow the channel
        as the slot form's do every slot); None: only when a transfer starts or ends.
    """
    form = scheduling_form(policy)
    if form == "static":
        raise ValueError(f"scheduler {policy!r} is not dynamic: the round keeps cell.allocation's split, no band")
    # what the band reads of the policy is the Scheduler protocol's, checked when the run is built
    latency_s = policy.grant_latency_slots() * grid.slot_s
    if form == "slot":
        return SlotBand(env, policy, grid, link_at, fading, note_busy, latency_s, harq, block_rng, trace_slots,
                        headroom)
    return FluidBand(env, policy, grid, link_at, fading, note_busy, latency_s, ladder, headroom, refresh_s)
