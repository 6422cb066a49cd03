"""Straggler policies of the engine: wait for all, per-iteration deadline, over-selection; the
decision itself (arrivals in, kept and dropped out) without SimPy."""
from __future__ import annotations

import numpy as np
import pytest
import simpy

from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.engine import DELIVERED, Deadline, Decision, Lost, OverSelection, Simulator, WaitAll, decide
from sfl_sim.engine.stragglers import fired, straggler_rule

COMPUTE_S = {0: 1.0, 1: 2.0, 2: 5.0}  # each client's compute time before its (tiny) upload


def _sim(**kwargs) -> Simulator:
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([100.0, 100.0, 100.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=3, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e9, placement_rng=rng, shadowing_rng=rng)
    return Simulator(cell, np.ones(3), 1.0, **kwargs)


def _round(kept_out: list):
    def client(ctx, k):
        yield from ctx.compute(k, COMPUTE_S[k])  # 1 FLOP/s -> COMPUTE_S[k] seconds
        delivered = yield ctx.upload(k, 1, "payload")
        return delivered

    def round_process(ctx):
        arrivals = {k: ctx.process(client(ctx, k)) for k in ctx.cohort.tolist()}
        kept = yield from ctx.gather(arrivals)
        kept_out.append((kept, dict(ctx.dropped), ctx.now_s))

    return round_process


def test_wait_all_waits_for_the_slowest() -> None:
    out: list = []
    sim = _sim()
    sim.run_round(_round(out), [0, 1, 2])
    kept, dropped, t = out[0]
    assert kept == [0, 1, 2] and dropped == {} and t == pytest.approx(5.0, abs=1e-6)


def test_deadline_drops_late_clients() -> None:
    out: list = []
    sim = _sim(straggler_policy="deadline", deadline_s=3.0)
    duration = sim.run_round(_round(out), [0, 1, 2])
    kept, dropped, t = out[0]
    assert kept == [0, 1] and dropped == {2: "deadline"}
    assert t == pytest.approx(3.0) and duration == pytest.approx(3.0)
    assert sim.counters.dropped_clients == 1


def test_over_selection_keeps_the_first_n() -> None:
    out: list = []
    sim = _sim(straggler_policy="over_selection", keep_clients=2)
    sim.run_round(_round(out), [0, 1, 2])
    kept, dropped, t = out[0]
    assert kept == [0, 1] and dropped == {2: "over_selection"} and t == pytest.approx(2.0, abs=1e-6)


def test_late_client_does_not_run_into_the_next_round() -> None:
    sim = _sim(straggler_policy="deadline", deadline_s=3.0)
    sim.run_round(_round([]), [0, 1, 2])
    flops_after_first = sim.counters.client_flops
    bytes_after_first = sim.counters.uplink_bytes
    assert bytes_after_first == 2  # client 2 never reached its upload
    def idle_round(ctx):
        yield ctx.env.timeout(10.0)  # long enough for client 2 to have finished, had it not been stopped

    sim.run_round(idle_round, [0, 1])
    assert sim.counters.client_flops == flops_after_first and sim.counters.uplink_bytes == bytes_after_first


def test_bad_policy_parameters() -> None:
    with pytest.raises(ValueError, match="deadline_s"):
        _sim(straggler_policy="deadline")
    with pytest.raises(ValueError, match="straggler_policy"):
        _sim(straggler_policy="sometimes")


def test_fedavg_aggregates_only_clients_within_the_deadline() -> None:
    from sfl_sim.algorithms import ALGORITHMS
    from tests.helpers import tiny_setup

    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([100.0, 100.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e9, placement_rng=rng, shadowing_rng=rng)
    sim = Simulator(cell, np.array([1e9, 1e1]), 1.0, straggler_policy="deadline", deadline_s=1.0)
    algo = ALGORITHMS.get("fedavg")(tiny_setup())
    aggregated = []
    original = algo.aggregate
    algo.aggregate = lambda cohort, local: (aggregated.append(cohort.tolist()), original(cohort, local))
    duration = sim.run_round(lambda ctx: algo.run_round(ctx, np.array([0, 1])), [0, 1])
    assert sim.last_round.dropped == {1: "deadline"}
    assert aggregated == [[0]]
    assert duration == pytest.approx(1.0 * algo.setup.local_iterations)  # T x deadline_s


def _split_cell(n: int = 3) -> Cell:
    rng = np.random.default_rng(0)
    return Cell(FixedDistancePlacement([100.0] * (n - 1) + [480.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=n, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e6, placement_rng=rng, shadowing_rng=rng)


@pytest.mark.parametrize("name", ["scala", "splitfed_v1", "splitfed_v2", "sfl_local_loss"])
def test_split_algorithms_drop_a_slow_client_under_deadline(name: str) -> None:
    from sfl_sim.algorithms import ALGORITHMS
    from tests.helpers import tiny_setup

    setup = tiny_setup(n_clients=3, samples_per_client=8, batch_size=12, local_iterations=2)
    algo = ALGORITHMS.get(name)(setup)
    # Client 2 computes a million times slower than the others.
    sim = Simulator(_split_cell(), np.array([1e9, 1e9, 1e3]), 1e12, straggler_policy="deadline", deadline_s=0.5)
    aggregated = []
    original = algo.aggregate
    algo.aggregate = lambda cohort, *rest: (aggregated.append(cohort.tolist()), original(cohort, *rest))
    duration = sim.run_round(lambda ctx: algo.run_round(ctx, np.array([0, 1, 2])), [0, 1, 2])
    assert sim.last_round.dropped == {2: "deadline"}
    assert aggregated == [[0, 1]]
    assert duration < 10.0  # the round did not wait for client 2 (it needs far longer)


def test_scala_drops_a_client_whose_activations_are_lost() -> None:
    from sfl_sim.algorithms import ALGORITHMS
    from sfl_sim.channel import OutagePolicy
    from tests.helpers import tiny_setup

    cell = _split_cell()
    rates = cell.uplink_rates_bps([0, 1, 2])
    policy = OutagePolicy(min_rate_bps=float(rates[2] + rates[0]) / 2, max_attempts=2, on_outage="retransmit")
    sim = Simulator(cell, np.ones(3) * 1e9, 1e12, outage=policy)
    algo = ALGORITHMS.get("scala")(tiny_setup(n_clients=3, samples_per_client=8, batch_size=12))
    sim.run_round(lambda ctx: algo.run_round(ctx, np.array([0, 1, 2])), [0, 1, 2])
    assert sim.last_round.dropped == {2: "outage"}
    assert sim.counters.retransmissions == 1 and sim.counters.dropped_transmissions == 1


def test_gather_records_the_reason_a_lost_value_carries() -> None:
    """Failure is an event's value: the reason travels with it into ``dropped`` (and rounds.csv)."""
    from sfl_sim.engine import DELIVERED, Lost

    out: list = []

    def client(ctx, k):
        yield from ctx.compute(k, COMPUTE_S[k])
        return Lost("outage") if k == 1 else DELIVERED

    def round_process(ctx):
        kept = yield from ctx.gather({k: ctx.process(client(ctx, k)) for k in ctx.cohort.tolist()})
        out.append((kept, dict(ctx.dropped)))

    sim = _sim()
    sim.run_round(round_process, [0, 1, 2])
    assert out == [([0, 2], {1: "outage"})] and sim.counters.dropped_clients == 1


# -- the decision, a pure function ---------------------------------------------------------------------
def test_decide_keeps_the_delivered_and_carries_the_reasons_of_the_lost() -> None:
    got = decide({3: DELIVERED, 1: Lost("outage"), 2: DELIVERED, 0: Lost("unavailable")})
    assert got == Decision(kept=[3, 2], dropped={1: "outage", 0: "unavailable"})


def test_decide_drops_those_still_on_their_way_for_the_policys_reason() -> None:
    got = decide({0: DELIVERED, 1: None, 2: Lost("battery")}, late="deadline")
    assert got == Decision(kept=[0], dropped={1: "deadline", 2: "battery"})


def test_decide_keeps_at_most_keep_in_arrival_order() -> None:
    got = decide({5: DELIVERED, 4: DELIVERED, 3: None, 2: DELIVERED}, late="over_selection", keep=2)
    assert got.kept == [5, 4] and got.dropped == {3: "over_selection", 2: "over_selection"}
    assert decide({0: DELIVERED}, keep=2).kept == [0]


def test_decide_without_a_late_reason_refuses_a_pending_arrival() -> None:
    with pytest.raises(ValueError, match="client 1 has not arrived"):
        decide({0: DELIVERED, 1: None})


# -- the policy objects, on a bare SimPy clock ------------------------------------------------------
def _arrivals(env: simpy.Environment, times_s: dict[int, float], lost: frozenset = frozenset()) -> dict:
    """One process per client, as a round's are: its outcome after ``times_s[k]``."""
    def client(k: int):
        yield env.timeout(times_s[k])
        return Lost("outage") if k in lost else DELIVERED

    return {k: env.process(client(k)) for k in times_s}


def _wait(rule, times_s: dict[int, float], local_iterations: int = 1, lost: frozenset = frozenset()):
    env = simpy.Environment()
    proc = env.process(rule.wait(env, _arrivals(env, times_s, lost), local_iterations))
    env.run(proc)
    return proc.value, env.now


def test_any_value_but_a_lost_is_an_arrival() -> None:
    env = simpy.Environment()
    events = {0: env.event().succeed(None), 1: env.event().succeed({"payload": 1}),
              2: env.event().succeed(Lost("outage")), 3: env.event()}
    assert fired(events) == {0: DELIVERED, 1: DELIVERED, 2: Lost("outage"), 3: None}


def test_the_policies_stop_waiting_when_they_say() -> None:
    times = {0: 1.0, 1: 2.0, 2: 5.0}
    assert _wait(WaitAll(), times) == (Decision([0, 1, 2], {}), 5.0)
    assert _wait(Deadline(1.5), times, local_iterations=2) == (Decision([0, 1], {2: "deadline"}), 3.0)
    assert _wait(OverSelection(2), times) == (Decision([0, 1], {2: "over_selection"}), 2.0)
    # a lost payload does not count towards the kept ones: the next delivery is waited for
    assert _wait(OverSelection(2), times, lost=frozenset({0})) == \
        (Decision([1, 2], {0: "outage"}), 5.0)


def test_straggler_rule_builds_the_policy_or_names_the_bad_field() -> None:
    assert straggler_rule("wait_all") == WaitAll()
    assert straggler_rule("deadline", deadline_s=2.0) == Deadline(2.0)
    assert straggler_rule("over_selection", keep_clients=3) == OverSelection(3)
    with pytest.raises(ValueError, match=r"keep_clients=0; allowed: an integer >= 1"):
        straggler_rule("over_selection", keep_clients=0)
