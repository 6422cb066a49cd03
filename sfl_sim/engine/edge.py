"""Edge servers, their backhaul and what happens to a client's server-side state on a handover.

With ``server.edge`` each cell of the radio has its own edge server (one SimPy resource per cell, at
``compute_flops_per_s``) and every edge reaches the cloud and the other edges over a backhaul link of
``backhaul_bps`` and a one-way ``backhaul_latency_s``.  The engine (:mod:`sfl_sim.engine.simulator`)
asks the radio which cell serves a client through :func:`cell_network`, which gives single-cell
answers (one cell, cell 0 for everyone, no handover) when the radio has no network.

A transfer of ``N`` bytes over one backhaul link takes ``8 N / backhaul_bps + backhaul_latency_s``
(:meth:`EdgeServers.backhaul_s`): the serialisation at the link's rate plus its one-way latency
(our choice: a store-and-forward link of one hop, no queueing with other traffic).  What moves:
a migration's state (edge -> edge, below), state many clients' steps share following them
(edge -> edge: the sequential split server's one w_s), a concatenated step's payloads (edge <->
cloud) and each cell's aggregate and the global model (edge <-> cloud, at the round's end); the
"Edge servers and handovers" part of :mod:`sfl_sim.engine.simulator` says when.

Handover policies
-----------------
A component kind, ``handover_policy`` (:data:`HANDOVER_POLICIES`, protocol :class:`HandoverPolicy`,
conformance :func:`check_handover_policy`): asked once per handover of a cohort client during a
round, it answers

* ``"migrate"`` (:class:`Migrate`): the client's server-side state (the algorithm's
  ``handover_state_bytes``) moves from the old cell's edge to the new one over the backhaul; the
  client's next server step waits until it has arrived;
* ``"drop"`` (:class:`Drop`): the client's round is dropped (``Lost("handover")``).

A policy of one's own is a class with ``decide`` named ``package.module:Class`` in the scenario.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args, runtime_checkable

import numpy as np

from sfl_sim.channel.network.protocols import NO_CELL, HandoverEvent
from sfl_sim.kit.component import Component
from sfl_sim.kit.conformance import ConformanceReport
from sfl_sim.kit.protocols import check_protocol
from sfl_sim.kit.registry import Registry

__all__ = ["HandoverAction", "HANDOVER_ACTIONS", "HandoverPolicy", "HANDOVER_POLICIES", "Migrate", "Drop",
           "EdgeServers", "CellNetwork", "cell_network", "check_handover_policy", "HandoverPolicyConformanceError"]

#: What a handover policy may answer.
HandoverAction = Literal["migrate", "drop"]
HANDOVER_ACTIONS: tuple[str, ...] = get_args(HandoverAction)


@runtime_checkable
class HandoverPolicy(Protocol):
    """What happens to a cohort client's round when it changes cell (kind ``handover_policy``)."""

    def decide(self, event: HandoverEvent, state_bytes: int, migration_s: float) -> HandoverAction:
        """``"migrate"`` or ``"drop"`` for the client of ``event``.

        Parameters
        ----------
        event : sfl_sim.channel.network.HandoverEvent
            The handover (time, client, source and target cells, cause, interruption).
        state_bytes : int
            The client's server-side state a migration would move, bytes.
        migration_s : float
            How long that migration would take over the backhaul, s.
        """
        ...


#: The handover policies by name (``server.edge.on_handover``).
HANDOVER_POLICIES = Registry("handover_policy", protocol=HandoverPolicy)


@HANDOVER_POLICIES.register("migrate")
class Migrate(Component):
    """Always move the client's server-side state to the new cell's edge (the default)."""

    def decide(self, event: HandoverEvent, state_bytes: int, migration_s: float) -> HandoverAction:
        return "migrate"


@HANDOVER_POLICIES.register("drop")
class Drop(Component):
    """Always drop the client's round (its update is not used this round)."""

    def decide(self, event: HandoverEvent, state_bytes: int, migration_s: float) -> HandoverAction:
        return "drop"


@dataclass(frozen=True)
class EdgeServers:
    """The edge servers and backhaul of a run (``server.edge``), as the engine uses them.

    Attributes
    ----------
    compute_flops_per_s : float
        Each cell's edge server, FLOP/s.
    backhaul_bps : float
        Each edge <-> cloud and edge <-> edge link's rate, bit/s.
    backhaul_latency_s : float
        Each link's one-way latency, s.
    policy : HandoverPolicy
        What a handover of a cohort client does.
    state_bytes : int
        The client's server-side state a migration moves, bytes (the algorithm's
        ``handover_state_bytes``, computed by the runs layer).
    aggregate_bytes : int
        What each cell sends to the cloud and gets back at the round's end, bytes (the algorithm's
        ``aggregate_bytes``; 0: no hierarchical aggregation).
    """

    compute_flops_per_s: float
    backhaul_bps: float
    backhaul_latency_s: float
    policy: HandoverPolicy
    state_bytes: int = 0
    aggregate_bytes: int = 0

    def backhaul_s(self, nbytes: int) -> float:
        """Time ``nbytes`` take over one backhaul link: ``8 nbytes / backhaul_bps + backhaul_latency_s``."""
        return 8.0 * nbytes / self.backhaul_bps + self.backhaul_latency_s


@runtime_checkable
class CellNetwork(Protocol):
    """What the engine asks of a radio with many cells (the radio state's network side)."""

    @property
    def n_cells(self) -> int:
        """How many cells (1 without a network)."""
        ...

    def serving_cell(self, client_ids: Any, t_s: float) -> np.ndarray:
        """Each client's serving cell at ``t_s``; ``NO_CELL`` while it has none."""
        ...

    def handovers_between(self, t0_s: float, t1_s: float) -> tuple[HandoverEvent, ...]:
        """The handovers with ``t0_s <= time_s < t1_s``, in time order."""
        ...


class _SingleCell:
    """The single-cell answers: one cell, which serves everyone, and no handover."""

    n_cells = 1

    def serving_cell(self, client_ids: Any, t_s: float) -> np.ndarray:
        return np.zeros(np.asarray(client_ids).shape, dtype=int)

    def handovers_between(self, t0_s: float, t1_s: float) -> tuple[HandoverEvent, ...]:
        return ()


def cell_network(radio: object) -> CellNetwork:
    """``radio`` when it answers :class:`CellNetwork`, else the single-cell answers (a radio
    without a network: every client in cell 0, no handover)."""
    return radio if isinstance(radio, CellNetwork) else _SingleCell()


class HandoverPolicyConformanceError(AssertionError):
    """A handover policy failed a conformance check (the message names the policy and the check)."""


class HandoverPolicyReport(ConformanceReport):
    """The checks a handover policy passed."""

    kind = "handover_policy"
    error = HandoverPolicyConformanceError


def check_handover_policy(policy: Any, name: str | None = None) -> HandoverPolicyReport:
    """Check that ``policy`` behaves like a handover policy: it has ``decide``; on scripted events
    (an A3 handover, a radio link failure, a tiny and a huge state) it answers one of
    :data:`HANDOVER_ACTIONS`, the same answer when asked again.

    Raises
    ------
    HandoverPolicyConformanceError
        The first check that fails, in one line.
    sfl_sim.kit.protocols.ComponentProtocolError
        When ``policy`` has no ``decide``.
    """
    label = name if name is not None else type(policy).__name__
    check_protocol(policy, HandoverPolicy, f"handover_policy {label!r}")
    report = HandoverPolicyReport(label)
    cases = [(HandoverEvent(1.0, 0, 0, 1, "a3", 0.05), 0, 0.01),
             (HandoverEvent(2.5, 3, 2, 4, "a3", 0.05), 10**9, 80.0),
             (HandoverEvent(3.0, 1, 1, NO_CELL, "rlf", 1.0), 4096, 0.02)]
    for event, state_bytes, migration_s in cases:
        def ask(e: HandoverEvent = event, b: int = state_bytes, s: float = migration_s) -> Any:
            return policy.decide(e, b, s)

        answer = report.attempt("decide runs", ask)
        report.check(answer in HANDOVER_ACTIONS, "answers an action",
                     f"decide({event!r}, {state_bytes}, {migration_s}) returned {answer!r}; allowed: "
                     f"{', '.join(HANDOVER_ACTIONS)}")
        again = policy.decide(event, state_bytes, migration_s)
        report.check(again == answer, "deterministic", f"{answer!r} then {again!r} for {event!r}")
    return report
