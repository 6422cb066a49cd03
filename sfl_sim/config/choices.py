"""The engine's enumerated settings, defined once and shared by the configuration and the engine.

Each is a :data:`typing.Literal`, so a type checker sees the allowed values at every call, the
pydantic scenario models validate them, and the engine checks them with :func:`allowed`.  This
module imports nothing heavy (no torch, no simpy), so the configuration can use it cheaply.  A
choice the radio defines itself (:data:`OutOfRange`: what the cell does with clients outside its
path-loss model's distances) is the channel's, and only re-exported here.
Choices that carry parameters of their own (the built-in optimizers and learning-rate schedules)
are tables in :mod:`sfl_sim.config.optimizers` instead.
"""
from __future__ import annotations

from typing import Any, Literal, get_args

from sfl_sim.channel.cell import OutOfRange as OutOfRange  # re-exported: the cell defines it

Coherence = Literal["per_round", "per_iteration", "per_transmission"]
"""How often uplink small-scale fading is redrawn."""

StragglerPolicy = Literal["wait_all", "deadline", "over_selection"]
"""How the server waits for clients."""

DownlinkMode = Literal["ideal", "broadcast", "unicast"]
"""Whether downlink transfers take simulated time, and whether a model for the whole cohort goes
out once (``broadcast``) or as one copy per client (``unicast``)."""

OnOutage = Literal["drop", "retransmit"]
"""What happens to a payload that falls into outage: dropped at once, or retransmitted while attempts
remain (:class:`sfl_sim.channel.OutagePolicy`)."""

DeviceName = Literal["auto", "cpu", "cuda"]
"""Torch device of a run (``auto``: CUDA when available)."""

ClientOptimizerState = Literal["fresh", "persist"]
"""Whether a client's optimizer state starts afresh each round it takes part or is kept per client."""

CompressionPath = Literal["activations", "gradients", "updates", "model_download"]
"""What a ``compression:`` block compresses: split learning's uplink activations, its downlink
activation gradients, an FL client's model update, the global model an FL server broadcasts."""

ExecutionMode = Literal["auto", "loop", "vectorised"]
"""How a cohort's client steps run: one client after another (``loop``, the reference), stacked
and batched with ``torch.func.vmap`` (``vectorised``), or whichever was measured faster on the
run's device (``auto``; see :mod:`sfl_sim.algorithms._exec.vectorised`)."""


def allowed(choice: Any) -> tuple[str, ...]:
    """The allowed values of one of the literals above, in order."""
    return tuple(get_args(choice))


def check_choice(name: str, value: Any, choice: Any) -> str:
    """Return ``value`` if it is one of ``choice``'s values, else raise the family's ValueError
    (:func:`sfl_sim.kit.checks.check_choice`)."""
    from sfl_sim.kit.checks import check_choice as check

    return check(name, value, allowed(choice))
