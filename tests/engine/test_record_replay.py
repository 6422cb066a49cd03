"""The engine's record of a round and its replay (``sfl_sim.engine.record``, ``sfl_sim.engine.replay``):
a replay on the recording engine reproduces every time bit for bit; on another engine it times the
same work anew; each kind of decision that goes otherwise refuses in one line naming the round, the
client and the decision."""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from sfl_sim.channel import OutagePolicy
from sfl_sim.engine import SERVER, Lost, RoundContext, SimSteps, Simulator
from sfl_sim.engine.record import OTHER, Recorder, RoundRecord, decode_outcome, encode_outcome
from sfl_sim.engine.replay import Diverged, check_cohort, replay
from tests.helpers import two_client_simulator


class _Stream:
    """A shared counter standing for a random stream the algorithm draws from at its events."""

    def __init__(self) -> None:
        self.draws = 0


def _toy_round(stream: _Stream, iterations: int = 2) -> Any:
    """Broadcast, then per client: ``iterations`` x (draw, compute), upload; the server gathers,
    computes once per kept client and triggers a reply event per client, which a receiving process
    per client waits on before its download."""

    def client(ctx: RoundContext, k: int) -> SimSteps[Any]:
        for t in range(iterations):
            stream.draws += 1
            yield from ctx.compute(k, 1e5 * (t + 1), "local_step")
        return (yield ctx.upload(k, 20_000, "model", block=t))

    def receiver(ctx: RoundContext, k: int, reply: Any) -> SimSteps[None]:
        got = yield reply
        assert got == "answer" or got is OTHER
        yield ctx.download(k, 5_000, "gradients")

    def round_process(ctx: RoundContext) -> SimSteps[None]:
        yield ctx.broadcast(10_000, "model")
        clients = ctx.cohort.tolist()
        ctx.allocate_uplink({k: 8 * 20_000 for k in clients})
        replies = {k: ctx.event() for k in clients}
        jobs = {k: ctx.process(client(ctx, k)) for k in clients}
        kept = yield from ctx.gather(jobs)
        receivers = [ctx.process(receiver(ctx, k, replies[k])) for k in kept]
        for k in kept:
            yield from ctx.compute(SERVER, 1e6, "server_step")
            replies[k].succeed("answer")
        yield ctx.all_of(receivers)

    return round_process


def _record(sim: Simulator, rounds: int = 2) -> tuple[list[RoundRecord], list[float]]:
    stream = _Stream()
    recorder = Recorder(("toy",), lambda: (stream.draws,))
    records, times = [], []
    for rnd in range(1, rounds + 1):
        recorder.round = rnd
        sim.run_round(_toy_round(stream), [0, 1], context=recorder.context)
        assert recorder.last is not None
        records.append(RoundRecord.from_dict(json.loads(json.dumps(recorder.last.as_dict()))))
        times.append(sim.now_s)
    return records, times


def _replay(sim: Simulator, records: list[RoundRecord]) -> list[float]:
    times = []
    for record in records:
        sim.run_round(replay(record), record.cohort)
        times.append(sim.now_s)
    return times


def test_a_replay_on_the_recording_engine_is_bit_for_bit() -> None:
    recorded = two_client_simulator()
    records, times = _record(recorded)
    again = two_client_simulator()
    assert _replay(again, records) == times
    assert again.counters.as_dict() == recorded.counters.as_dict()
    assert records[0].draws == {"toy": [1, 2, 1, 2]}  # client 0 then 1, twice
    kinds = {op[0] for ops in records[0].processes for op in ops}
    assert kinds >= {"b", "al", "e", "p", "g", "c", "u", "y", "t", "a", "d", "r", "w"}


def test_a_replay_on_another_engine_times_the_same_work_anew() -> None:
    records, times = _record(two_client_simulator())
    slow = two_client_simulator()
    faster = Simulator(slow.cell, np.array([3e6, 3e6]), 1e9)
    replayed = _replay(faster, records)
    assert replayed[-1] < times[-1]
    assert faster.counters.uplink_bytes == 4 * 20_000


def test_the_draw_order_is_a_decision() -> None:
    records, _ = _record(two_client_simulator())
    sim = two_client_simulator()
    sim.client_flops_per_s = np.array([1e4, 1e6])  # client 0 now far slower: client 1 draws twice first
    with pytest.raises(Diverged, match=r"^round 1, client 1: drew from the toy stream before client 0, against the "
                                       r"recorded order \(training would change\)$"):
        _replay(sim, records)


def test_an_outage_the_record_did_not_have_is_refused() -> None:
    records, _ = _record(two_client_simulator())
    sim = two_client_simulator()
    sim.outage = OutagePolicy(min_rate_bps=1e7, max_attempts=1, on_outage="drop")
    with pytest.raises(Diverged, match=r"^round 1, client \d: an awaited step came to lost \(outage\) where the "
                                       r"record has delivered$"):
        _replay(sim, records)


def test_a_deadline_drop_is_refused() -> None:
    records, _ = _record(two_client_simulator())
    sim = two_client_simulator()
    sim.stragglers = __import__("sfl_sim.engine.stragglers", fromlist=["Deadline"]).Deadline(0.05)
    with pytest.raises(Diverged, match=r"^round 1, client \d: dropped \(deadline\) by the straggler policy where the "
                                       r"record kept it$"):
        _replay(sim, records)


class _LeavesAt:
    """Client 1 goes offline at ``t_s`` and never comes back."""

    def __init__(self, t_s: float) -> None:
        self.t_s = t_s

    def online(self, clients: np.ndarray, t_s: float) -> np.ndarray:
        return np.array([k != 1 or t_s < self.t_s for k in clients.tolist()])

    def next_change_s(self, client: int, t_s: float) -> float:
        return self.t_s if client == 1 and t_s < self.t_s else math.inf


def test_a_client_that_goes_offline_is_refused() -> None:
    records, _ = _record(two_client_simulator())
    sim = two_client_simulator()
    sim.availability = _LeavesAt(0.3 + 1e-6)  # during its upload, after its computations
    with pytest.raises(Diverged, match=r"^round 1, client 1: an awaited step came to lost \(unavailable\) where the "
                                       r"record has delivered$"):
        _replay(sim, records)


class _EmptyBattery:
    def upload_guard(self, ctx: Any, client: int, duration_s: float, tx_power_w: float) -> float | None:
        return ctx.now_s if client == 0 else None


def test_an_empty_battery_is_refused() -> None:
    records, _ = _record(two_client_simulator())
    sim = two_client_simulator(battery=_EmptyBattery())
    with pytest.raises(Diverged, match=r"^round 1, client 0: an awaited step came to lost \(battery\) where the "
                                       r"record has delivered$"):
        _replay(sim, records)


def test_another_cohort_is_refused() -> None:
    record = RoundRecord(4, [3, 7, 9])
    check_cohort(record, [3, 7, 9])
    with pytest.raises(Diverged, match=r"^round 4, client 8: selected as cohort member 2 where the record has "
                                       r"client 7$"):
        check_cohort(record, [3, 8, 9])


def test_a_round_the_recorder_could_not_describe_is_refused() -> None:
    sim = two_client_simulator()
    recorder = Recorder()

    def reads_the_rate(ctx: RoundContext) -> SimSteps[None]:
        ctx.uplink_rate_bps(0)
        yield ctx.env.timeout(1.0)  # an event from outside the context, too

    sim.run_round(reads_the_rate, [0, 1], context=recorder.context)
    assert recorder.last is not None
    assert recorder.last.unreplayable == "the algorithm read a client's uplink rate"
    with pytest.raises(Diverged, match="cannot be replayed: the algorithm read a client's uplink rate"):
        two_client_simulator().run_round(replay(recorder.last), [0, 1])


def test_a_read_after_the_round_is_no_decision() -> None:
    """The runner's per-client record reads the link after the round: the round stays replayable."""
    sim = two_client_simulator()
    recorder = Recorder()
    sim.run_round(_toy_round(_Stream()), [0, 1], context=recorder.context)
    sim.last_round.uplink_snr_db(0), sim.last_round.downlink_rate_bps(1)
    assert recorder.last is not None and recorder.last.unreplayable is None


def test_recording_changes_nothing_the_engine_times() -> None:
    plain, recorded = two_client_simulator(), two_client_simulator()
    stream = _Stream()
    for _ in range(2):
        plain.run_round(_toy_round(stream), [0, 1])
    _, times = _record(recorded)
    assert plain.now_s == times[-1]
    assert plain.counters.as_dict() == recorded.counters.as_dict()


@pytest.mark.parametrize("value", [None, Lost("outage"), Lost("deadline"), "anything"])
def test_outcomes_round_trip(value: object) -> None:
    code = encode_outcome(value)
    assert encode_outcome(decode_outcome(code)) == code


def test_a_server_job_is_named_by_the_client_it_serves() -> None:
    record = RoundRecord(1, [4, 5], processes=[
        [["p", 1, 1], ["p", 2, 2], ["p", 3, 3]],
        [["c", 4, 1.0, "client_forward"], ["u", 4, 10, "activations", 0, 4], ["y", 4, "D"], ["t", 5, "O"],
         ["r", "D"]],
        [["y", 5, "O"], ["c", -1, 1.0, "server_step"], ["r", None]],  # waits on what client 4 triggered
        [["c", -1, 1.0, "aggregate"], ["r", None]],
    ])
    assert [record.client_of(p) for p in range(4)] == [None, 4, 4, None]


def _scheduled(name: str | None, **params: Any) -> Simulator:
    """:func:`two_client_simulator`'s clients on a 5 MHz uplink (25 RBs at numerology 0, the table's
    smallest band) under a dynamic scheduler (None: the static split)."""
    from sfl_sim.channel import (
        SCHEDULERS,
        Cell,
        EqualAllocation,
        FixedDistancePlacement,
        NoShadowing,
        ShannonRate,
        TR36814Macro,
    )

    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([50.0, 400.0]), TR36814Macro(), NoShadowing(), ShannonRate(), EqualAllocation(),
                n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0, uplink_bandwidth_hz=5e6,
                placement_rng=rng, shadowing_rng=rng)
    scheduler = None if name is None else SCHEDULERS.create(name, **params)
    return Simulator(cell, np.array([1e6, 1e6]), 1e8, scheduler=scheduler, numerology=0)


@pytest.mark.parametrize("name, params", [
    ("round_robin", {}),
    pytest.param("proportional_fair", {"fidelity": "slot"}, marks=pytest.mark.slow),  # 0.5 s of slots
])
def test_a_scheduled_band_replays_bit_for_bit(name: str, params: dict[str, Any]) -> None:
    # The band is the round context's, so a replay re-runs the scheduler on the recorded work:
    # on the recording engine every time and count comes out again, and no round is unreplayable.
    recorded = _scheduled(name, **params)
    records, times = _record(recorded)
    assert all(r.unreplayable is None for r in records)
    again = _scheduled(name, **params)
    assert _replay(again, records) == times
    assert again.counters.as_dict() == recorded.counters.as_dict()
    static = _scheduled(None)
    assert _replay(static, records) != times  # the same work under the per-round split times otherwise
