"""Edge servers per cell, handovers in a round and the backhaul (``server.edge``): hand calculations
on two clients with a scripted radio network (a fake with the radio's network methods).

Every number is a power-of-two fraction, so the clock's sums are exact: the backhaul carries
1e6 bit/s with a 0.25 s latency, so a 125 000-byte state takes 8 * 125000 / 1e6 + 0.25 = 1.25 s.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.channel.network.protocols import HandoverEvent
from sfl_sim.engine import SERVER, Lost, Simulator
from sfl_sim.engine.edge import (
    HANDOVER_POLICIES,
    Drop,
    EdgeServers,
    HandoverPolicyConformanceError,
    Migrate,
    cell_network,
    check_handover_policy,
)
from tests.helpers import ScriptedCells

STATE_BYTES = 125_000
BACKHAUL_BPS = 1e6
LATENCY_S = 0.25


def _cell() -> Cell:
    rng = np.random.default_rng(0)
    return Cell(FixedDistancePlacement([100.0, 100.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e6, placement_rng=rng, shadowing_rng=rng)


def _sim(policy=None, events=(), start_cells=(0, 0), aggregate_bytes: int = 0, edge: bool = True) -> Simulator:
    """Clients at 1 FLOP/s with a traced 1000 bit/s uplink; edges at 4 FLOP/s, the cloud at 1 FLOP/s."""
    servers = EdgeServers(4.0, BACKHAUL_BPS, LATENCY_S, policy or Migrate(), STATE_BYTES, aggregate_bytes)
    return Simulator(_cell(), np.ones(2), 1.0, uplink_bps=np.array([1000.0, 1000.0]),
                     edge=servers if edge else None, network=ScriptedCells(list(start_cells), list(events)))


def _round(seen: dict, upload_bytes: int = 0):
    """Each client: 1 s of its own compute, (an upload), then a 4-FLOP server step of its own."""
    def client(ctx, k):
        yield from ctx.compute(k, 1.0)
        if upload_bytes:
            sent = yield ctx.upload(k, upload_bytes, "payload")
            if isinstance(sent, Lost):
                return sent
        yield from ctx.compute(SERVER, 4.0, "server_step", client=k)
        seen[k] = ctx.now_s
        return None

    def round_process(ctx):
        seen["kept"] = yield from ctx.gather({k: ctx.process(client(ctx, k)) for k in ctx.cohort.tolist()})
    return round_process


def _handover(t_s: float, client: int = 0, interruption_s: float = 0.0) -> HandoverEvent:
    return HandoverEvent(t_s, client, 0, 1, "a3", interruption_s)


def test_a_migration_takes_bytes_over_the_rate_plus_latency_and_the_next_step_waits() -> None:
    sim = _sim(events=[_handover(0.5, interruption_s=0.125)])
    seen: dict = {}
    duration = sim.run_round(_round(seen), [0, 1])
    migration_s = 8 * STATE_BYTES / BACKHAUL_BPS + LATENCY_S
    assert migration_s == 1.25
    assert sim.edge is not None and sim.edge.backhaul_s(STATE_BYTES) == migration_s
    # client 0: handover at 0.5 s, its state at edge 1 at 1.75 s; its step (4 FLOP at 4 FLOP/s) 1.75 .. 2.75
    assert seen[0] == 0.5 + migration_s + 1.0 == 2.75
    # client 1 stays on edge 0: its step 1 .. 2, in parallel with client 0's on the other edge
    assert seen[1] == 2.0 and duration == 2.75
    by_kind = sim.counters.by_kind
    assert by_kind["handovers"] == 1 and by_kind["migrations"] == 1
    assert by_kind["backhaul/migration"] == STATE_BYTES
    assert by_kind["handover_lost_s"] == 0.125 + migration_s
    assert "handover_drops" not in by_kind and sim.last_round.dropped == {}


def test_clients_on_one_edge_queue_and_the_cloud_is_apart() -> None:
    sim = _sim()
    seen: dict = {}
    assert sim.run_round(_round(seen), [0, 1]) == 3.0  # both on edge 0 at 4 FLOP/s: 1 .. 2, then 2 .. 3
    assert sorted([seen[0], seen[1]]) == [2.0, 3.0]
    assert sim.edge_servers[0].count == 0 and len(sim.edge_servers) == 2


def test_a_server_step_without_a_client_runs_on_the_cloud() -> None:
    sim = _sim()

    def round_process(ctx):
        yield from ctx.compute(SERVER, 4.0, "aggregate")  # the cloud: 1 FLOP/s

    assert sim.run_round(round_process, [0, 1]) == 4.0


def test_without_an_edge_a_client_step_runs_on_the_one_server() -> None:
    sim = _sim(events=[_handover(0.5)], edge=False)
    seen: dict = {}
    assert sim.run_round(_round(seen), [0, 1]) == 9.0  # 1 s, then 4 s + 4 s queued at 1 FLOP/s
    assert sim.edge is None and sim.network is None and sim.counters.by_kind.get("handovers") is None


def test_drop_policy_drops_the_round_with_reason_handover() -> None:
    sim = _sim(policy=Drop(), events=[_handover(0.5)])
    seen: dict = {}
    sim.run_round(_round(seen, upload_bytes=125), [0, 1])  # 1 s compute, 1 s upload, step on edge 0
    assert sim.last_round.dropped == {0: "handover"}
    assert seen["kept"] == [1] and 0 not in seen
    assert sim.counters.by_kind["handover_drops"] == 1 and sim.counters.dropped_clients == 1
    assert "migrations" not in sim.counters.by_kind and "dropped_clients/unavailable" not in sim.counters.by_kind


def test_a_handover_after_the_delivery_still_drops_a_kept_payload() -> None:
    # client 0's upload is through at 2 s; its state is dropped at 2.5 s while client 1 is still at work
    sim = _sim(policy=Drop(), events=[_handover(2.5)])
    kept: dict = {}

    def client(ctx, k):
        yield from ctx.compute(k, 1.0 + 3.0 * k)
        return (yield ctx.upload(k, 125, "payload"))

    def round_process(ctx):
        kept["kept"] = yield from ctx.gather({k: ctx.process(client(ctx, k)) for k in ctx.cohort.tolist()})

    sim.run_round(round_process, [0, 1])
    assert kept["kept"] == [1] and sim.last_round.dropped == {0: "handover"}


def test_a_dropped_client_that_never_reaches_a_gather_is_counted_once() -> None:
    """A server that decides its cohort without gather (the concatenated mode keeps whoever delivered)
    never sees client 0 again after its drop at 0.5 s: it is counted then, once (the 7-site study's
    SCALA runs counted 69 dropped clients for 74 handover drops in clients.csv)."""
    sim = _sim(policy=Drop(), events=[_handover(0.5)])

    def client(ctx, k):
        yield from ctx.compute(k, 1.0)
        return (yield ctx.upload(k, 125, "payload"))

    def round_process(ctx):
        procs = [ctx.process(client(ctx, k)) for k in ctx.cohort.tolist()]
        yield ctx.all_of(procs)
        ctx.keep([1])  # only client 1 delivered

    sim.run_round(round_process, [0, 1])
    assert sim.last_round.dropped == {0: "handover"}
    assert sim.counters.dropped_clients == 1 == sim.counters.by_kind["handover_drops"]


def test_handovers_of_clients_outside_the_cohort_and_later_chunks() -> None:
    events = [_handover(0.5, client=1), _handover(1.5)]  # client 1 is not in the round; 1.5 s: the second chunk
    sim = _sim(events=events)
    seen: dict = {}

    def round_process(ctx):
        yield from ctx.compute(0, 1.25)
        yield from ctx.compute(SERVER, 4.0, "server_step", client=0)
        seen["edge"] = ctx.edge_of(0)

    # client 0's step starts at 1.25 s on edge 0 (its handover at 1.5 s comes during it)
    assert sim.run_round(round_process, [0]) == 2.25
    assert sim.counters.by_kind["handovers"] == 1 and seen["edge"] == 1
    assert sim.network.asked[:2] == [(0.0, 1.0), (1.0, 2.0)]  # type: ignore[union-attr]


def test_hierarchical_aggregation_adds_the_backhaul_up_and_down() -> None:
    sim = _sim(events=[_handover(0.5)], aggregate_bytes=STATE_BYTES)
    seen: dict = {}
    duration = sim.run_round(_round(seen), [0, 1])
    # the round's work ends at 2.75 s; then the two cells' aggregates up and the model down, in parallel
    assert duration == 2.75 + 2 * (8 * STATE_BYTES / BACKHAUL_BPS + LATENCY_S) == 5.25
    assert sim.counters.by_kind["backhaul/aggregation"] == 2 * 2 * STATE_BYTES


def test_aggregation_of_one_cell_and_none_when_all_dropped() -> None:
    sim = _sim(aggregate_bytes=STATE_BYTES)
    assert sim.run_round(_round({}), [0, 1]) == 3.0 + 2.5
    assert sim.counters.by_kind["backhaul/aggregation"] == 2 * STATE_BYTES
    sim = _sim(policy=Drop(), events=[_handover(0.5)], aggregate_bytes=STATE_BYTES)
    sim.run_round(_round({}, upload_bytes=125), [0])
    assert "backhaul/aggregation" not in sim.counters.by_kind


def test_a_handover_at_a_round_boundary_is_handled_once() -> None:
    sim = _sim(events=[_handover(2.0)])

    def round_process(ctx):
        yield ctx.env.timeout(2.0)

    sim.run_round(round_process, [0])
    sim.run_round(round_process, [0])
    assert sim.counters.by_kind["handovers"] == 1


def test_the_single_cell_answers_for_a_radio_without_a_network() -> None:
    network = cell_network(_cell().radio)
    assert network.n_cells == 1 and network.serving_cell([0, 1], 3.0).tolist() == [0, 0]
    assert network.handovers_between(0.0, 10.0) == ()
    fake = ScriptedCells([0, 1], [])
    assert cell_network(fake) is fake


def test_builtin_policies_conform_and_a_bad_answer_is_refused() -> None:
    assert "deterministic" in check_handover_policy(Migrate()).passed
    check_handover_policy(Drop())

    class Maybe:
        def decide(self, event, state_bytes, migration_s):
            return "keep"

    with pytest.raises(HandoverPolicyConformanceError, match="answers an action"):
        check_handover_policy(Maybe())
    sim = _sim(policy=Maybe(), events=[_handover(0.5)])
    with pytest.raises(ValueError, match="server.edge.on_handover: Maybe.decide returned 'keep'"):
        sim.run_round(_round({}), [0, 1])


def test_a_policy_of_ones_own_plugs_in_by_module_and_class(tmp_path, monkeypatch) -> None:
    (tmp_path / "my_policies.py").write_text(
        '"""A policy as a user writes it: migrate what is quick to move, drop the rest."""\n'
        "class MigrateIfQuick:\n"
        "    def __init__(self, max_migration_s: float = 1.0) -> None:\n"
        "        self.max_migration_s = max_migration_s\n"
        "\n"
        "    def decide(self, event, state_bytes, migration_s):\n"
        "        return 'migrate' if migration_s <= self.max_migration_s else 'drop'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        policy = HANDOVER_POLICIES.build("my_policies:MigrateIfQuick", max_migration_s=1.0)
        check_handover_policy(policy)
        sim = _sim(policy=policy, events=[_handover(0.5)])  # 1.25 s to migrate: dropped
        sim.run_round(_round({}, upload_bytes=125), [0, 1])
        assert sim.last_round.dropped == {0: "handover"}
        quick = HANDOVER_POLICIES.build("my_policies:MigrateIfQuick", max_migration_s=2.0)
        sim = _sim(policy=quick, events=[_handover(0.5)])
        sim.run_round(_round({}), [0, 1])
        assert sim.counters.by_kind["migrations"] == 1
    finally:
        sys.modules.pop("my_policies", None)


def _finishing_round(seen: dict, by_process: bool):
    """Client 0 delivers at 2 s, client 1 at 4 s; the server then works 2 s on the cloud.  The
    arrivals are the clients' processes (gather keeps them for good) or plain events the clients
    trigger (a concatenated server's uploads: the algorithm says its final word with ``keep``)."""
    def client(ctx, k, arrived):
        yield from ctx.compute(k, 1.0 + 2.0 * k)
        sent = yield ctx.upload(k, 125, "payload")
        if arrived is not None:
            arrived.succeed(sent)
        return sent

    def round_process(ctx):
        cohort = ctx.cohort.tolist()
        if by_process:
            kept = yield from ctx.gather({k: ctx.process(client(ctx, k, None)) for k in cohort})
        else:
            arrived = {k: ctx.event() for k in cohort}
            jobs = [ctx.process(client(ctx, k, arrived[k])) for k in cohort]
            yield ctx.all_of(jobs)
            kept = ctx.keep([k for k in cohort if not isinstance(arrived[k].value, Lost)])
        seen["kept"], seen["at"] = kept, ctx.now_s
        yield from ctx.compute(SERVER, 2.0, "aggregate")  # on the cloud: 4 .. 6 s
    return round_process


@pytest.mark.parametrize("by_process", [True, False])
def test_a_drop_applies_while_the_clients_round_is_in_progress(by_process) -> None:
    # client 0's payload arrived at 2 s; at 3 s the server has not kept it yet: the drop applies
    sim = _sim(policy=Drop(), events=[_handover(3.0)], aggregate_bytes=STATE_BYTES)
    seen: dict = {}
    sim.run_round(_finishing_round(seen, by_process), [0, 1])
    assert seen["kept"] == [1] and sim.last_round.dropped == {0: "handover"}
    assert sim.counters.by_kind["handover_drops"] == 1 and sim.counters.dropped_clients == 1


@pytest.mark.parametrize("by_process", [True, False])
def test_a_handover_after_the_update_was_kept_is_no_drop(by_process) -> None:
    # kept at 4 s; the handover at 5 s, while the server works on the aggregate, drops nothing
    sim = _sim(policy=Drop(), events=[_handover(5.0)], aggregate_bytes=STATE_BYTES)
    seen: dict = {}
    duration = sim.run_round(_finishing_round(seen, by_process), [0, 1])
    assert seen["kept"] == [0, 1] and seen["at"] == 4.0 and sim.last_round.dropped == {}
    by_kind = sim.counters.by_kind
    assert "handover_drops" not in by_kind and "handovers" not in by_kind and sim.counters.dropped_clients == 0
    # both updates wait at edge 0 (the handover moved nothing): one cell aggregates over the backhaul
    assert by_kind["backhaul/aggregation"] == 2 * STATE_BYTES and duration == 6.0 + 2.5


def test_keep_without_an_edge_is_the_identity() -> None:
    sim = _sim(edge=False)
    seen: dict = {}
    sim.run_round(_finishing_round(seen, by_process=False), [0, 1])
    assert seen["kept"] == [0, 1]


def _cloud_round(seen: dict, payload_bytes: int = STATE_BYTES):
    """Each client: 1 s of its own compute, then its payload to the cloud over its cell's backhaul;
    the cloud steps once on all of them (4 FLOP at 1 FLOP/s) and sends each its reply back."""
    def client(ctx, k, arrived, reply):
        yield from ctx.compute(k, 1.0)
        yield from ctx.backhaul(k, {"activations": payload_bytes - 1000, "labels": 1000}, to_cloud=True)
        seen[("at_cloud", k)] = ctx.now_s
        arrived.succeed()
        yield reply
        yield from ctx.backhaul(k, {"activation_gradients": payload_bytes}, to_cloud=False)
        seen[("at_edge", k)] = ctx.now_s

    def round_process(ctx):
        cohort = ctx.cohort.tolist()
        arrived, replies = {k: ctx.event() for k in cohort}, {k: ctx.event() for k in cohort}
        jobs = [ctx.process(client(ctx, k, arrived[k], replies[k])) for k in cohort]
        yield ctx.all_of(arrived.values())
        yield from ctx.compute(SERVER, 4.0, "server_step")  # the concatenated step, on the cloud
        for event in replies.values():
            event.succeed()
        yield ctx.all_of(jobs)
    return round_process


def test_a_cloud_steps_payloads_cross_the_backhaul_each_cell_on_its_own_link() -> None:
    one_way_s = 8 * STATE_BYTES / BACKHAUL_BPS + LATENCY_S
    assert one_way_s == 1.25
    # two cells: the links in parallel; each payload at the cloud 1.25 s after it left the cell
    sim = _sim(start_cells=(0, 1))
    seen: dict = {}
    duration = sim.run_round(_cloud_round(seen), [0, 1])
    assert seen[("at_cloud", 0)] == seen[("at_cloud", 1)] == 1.0 + one_way_s
    # the cloud's step 2.25 .. 6.25, then each reply at its edge 1.25 s later
    assert seen[("at_edge", 0)] == seen[("at_edge", 1)] == duration == 2.25 + 4.0 + one_way_s
    by_kind = sim.counters.by_kind
    assert by_kind["backhaul/activations"] == 2 * (STATE_BYTES - 1000) and by_kind["backhaul/labels"] == 2 * 1000
    assert by_kind["backhaul/activation_gradients"] == 2 * STATE_BYTES


def test_one_cells_payloads_take_its_link_one_after_the_other() -> None:
    # one cell: the second payload waits for the first one's 1 s on the link (the latencies overlap)
    sim = _sim(start_cells=(0, 0))
    seen: dict = {}
    sim.run_round(_cloud_round(seen), [0, 1])
    assert sorted([seen[("at_cloud", 0)], seen[("at_cloud", 1)]]) == [2.25, 3.25]
    assert sorted([seen[("at_edge", 0)], seen[("at_edge", 1)]]) == [3.25 + 4 + 1.25, 3.25 + 4 + 2.25]


def test_without_an_edge_the_backhaul_is_no_step_at_all() -> None:
    sim = _sim(edge=False)
    seen: dict = {}
    assert sim.run_round(_cloud_round(seen), [0, 1]) == 1.0 + 4.0
    assert not any(k.startswith("backhaul/") for k in sim.counters.by_kind)


def test_a_cloud_reply_goes_to_the_edge_of_the_cell_the_client_moved_to() -> None:
    # client 0 hands over to cell 1 at 0.5 s (its state: none to speak of, 0 bytes): its payload goes
    # up cell 1's link, in parallel with client 1's on cell 0's
    servers = EdgeServers(4.0, BACKHAUL_BPS, LATENCY_S, Migrate(), 0, 0)
    sim = Simulator(_cell(), np.ones(2), 1.0, edge=servers, network=ScriptedCells([0, 0], [_handover(0.5)]))
    seen: dict = {}
    sim.run_round(_cloud_round(seen), [0, 1])
    assert seen[("at_cloud", 0)] == seen[("at_cloud", 1)] == 2.25 and sim.last_round.edge_of(0) == 1


def test_a_move_between_edges_takes_the_backhaul_and_counts_its_kind() -> None:
    seen: dict = {}

    def round_process(ctx):
        yield from ctx.move_between_edges(0, 1, STATE_BYTES, "server_model")
        seen["moved"] = ctx.now_s
        yield from ctx.move_between_edges(1, 1, STATE_BYTES, "server_model")  # same cell: nothing
        seen["same"] = ctx.now_s

    sim = _sim()
    assert sim.run_round(round_process, [0, 1]) == seen["moved"] == seen["same"] == 1.25
    assert sim.counters.by_kind["backhaul/server_model"] == STATE_BYTES
    sim = _sim(edge=False)  # without an edge: no step at all, and every client's "edge" is the one server's
    assert sim.run_round(round_process, [0, 1]) == 0.0 and "backhaul/server_model" not in sim.counters.by_kind
    assert sim.last_round.edge_of(1) == 0
