"""One link process per upload: always a SimPy process whose value is DELIVERED or a Lost, whichever
path the transfer takes (plain, outage, HARQ, departure, battery)."""
from __future__ import annotations

import numpy as np
import pytest
import simpy

from sfl_sim.channel import FixedDistancePlacement, Harq, McsTableRate, OutagePolicy
from sfl_sim.engine import DELIVERED, Lost, Simulator
from tests.channel.helpers import small_cell


class _Empty:
    """A battery that empties 0.5 s into any upload of client 0."""

    def upload_guard(self, ctx, client, duration_s, tx_power_w):
        return ctx.now_s + 0.5 if client == 0 else None


class _LeavesAt:
    """Client 0 goes offline at ``t_s``; client 1 never."""

    def __init__(self, t_s: float) -> None:
        self.t_s = t_s

    def online(self, clients, t_s):
        return np.array([k != 0 or t_s < self.t_s for k in clients])

    def next_change_s(self, client, t_s):
        return self.t_s if client == 0 and t_s < self.t_s else np.inf


def _sim(**kwargs) -> Simulator:
    cell = small_cell(FixedDistancePlacement([150.0, 350.0]), rate=kwargs.pop("rate", None), n_clients=2)
    return Simulator(cell, np.ones(2), 1.0, **kwargs)


def _send(sim: Simulator, client: int = 0, nbytes: int = 60_000) -> tuple[simpy.Event, object, float]:
    seen = {}

    def round_process(ctx):
        sending = ctx.upload(client, nbytes, "payload")
        seen["event"] = sending
        seen["value"] = yield sending
        seen["at"] = ctx.now_s

    sim.run_round(round_process, np.array([0, 1]))
    return seen["event"], seen["value"], seen["at"]


@pytest.mark.parametrize("case, kwargs, value", [
    ("plain", {}, DELIVERED),
    ("per_transmission", {"coherence": "per_transmission"}, DELIVERED),
    ("outage", {"outage": OutagePolicy(min_rate_bps=1e15, max_attempts=2, on_outage="retransmit")}, Lost("outage")),
    ("harq", {"rate": McsTableRate(mapping="bler"), "harq": "harq"}, DELIVERED),
    ("battery", {"battery": _Empty()}, Lost("battery")),
    ("departure", {"availability": _LeavesAt(1e-4)}, Lost("unavailable")),
])
def test_every_upload_is_one_process_whose_value_is_delivered_or_lost(case, kwargs, value) -> None:
    if kwargs.get("harq") == "harq":
        kwargs["harq"] = Harq(kwargs["rate"], max_transmissions=4)
    event, got, _ = _send(_sim(**kwargs))
    assert isinstance(event, simpy.Process) and got == value


def test_an_offline_client_is_lost_at_once_and_counts_nothing() -> None:
    sim = _sim(availability=_LeavesAt(0.0))
    event, got, at = _send(sim)
    assert isinstance(event, simpy.Process) and got == Lost("unavailable") and at == 0.0
    assert sim.counters.uplink_bytes == 0


def test_a_battery_that_empties_ends_the_upload_then_and_the_client_leaves() -> None:
    sim = _sim(battery=_Empty())
    _, got, at = _send(sim)
    assert got == Lost("battery") and at == 0.5
    assert sim.last_round.left_s == {0: 0.5} and sim.counters.uplink_bytes == 0
    [busy] = sim.last_round.busy[0]
    assert (busy.kind, busy.start_s, busy.end_s) == ("uplink", 0.0, 0.5)
    _, got, _ = _send(sim, client=1)  # the battery lets client 1 through
    assert got == DELIVERED


def test_a_download_to_a_client_that_left_is_lost_at_once() -> None:
    sim = _sim(availability=_LeavesAt(0.0), downlink_mode="unicast")
    got = {}

    def round_process(ctx):
        got[0] = yield ctx.download(0, 1000, "model")
        got[1] = yield ctx.download(1, 1000, "model")

    sim.run_round(round_process, np.array([0, 1]))
    assert got == {0: Lost("unavailable"), 1: DELIVERED} and sim.counters.downlink_bytes == 1000


def test_lost_is_a_plain_value_not_a_false_one() -> None:
    """Callers test isinstance(value, Lost); a Lost is not falsy (no branch on truthiness)."""
    assert Lost("outage") and DELIVERED


def test_an_upload_still_retransmitting_when_the_round_ends_is_stopped_then() -> None:
    """A client dropped by the deadline while its upload retransmits: its link process ends with the
    round (``Lost("round_over")``), and in the next round it counts nothing and draws no fading."""
    from sfl_sim.channel import RayleighFading

    cell = small_cell(FixedDistancePlacement([150.0, 350.0]), n_clients=2, fading=RayleighFading())
    # every attempt fails (an SNR no link reaches) and is on the air for its bits at its rate
    sim = Simulator(cell, np.ones(2), 1.0, coherence="per_round", straggler_policy="deadline", deadline_s=1.0,
                    outage=OutagePolicy(min_snr_db=99.0, max_attempts=1000, on_outage="retransmit"),
                    fading_rng=np.random.default_rng(3))
    seen = {}

    def first_round(ctx):
        seen["upload"] = ctx.upload(0, 60_000, "payload")
        seen["kept"] = yield from ctx.gather({0: seen["upload"]})

    sim.run_round(first_round, np.array([0, 1]))
    upload = seen["upload"]
    assert seen["kept"] == [] and not upload.is_alive and upload.value == Lost("round_over")
    after_first = sim.counters.as_dict()
    assert after_first["retransmissions"] >= 1  # it was retransmitting when the deadline ended the round
    fading = np.random.default_rng()
    fading.bit_generator.state = sim.fading_rng.bit_generator.state

    def second_round(ctx):  # client 1 computes for 100 s: time for client 0's old upload to go on
        yield from ctx.compute(1, 100.0)

    sim.run_round(second_round, np.array([1]))
    after_second = sim.counters.as_dict()
    for key in ("uplink_bytes", "retransmissions", "dropped_transmissions"):
        assert after_second[key] == after_first[key]
    assert {k: v for k, v in after_second["by_kind"].items() if not k.startswith("client/")} == after_first["by_kind"]
    cell.sample_fading(np.array([1]), fading)  # the second round's own draw, and nothing else
    assert sim.fading_rng.bit_generator.state == fading.bit_generator.state


class _Spy:
    """Records the radio's transmitting marks (what a network radio's interference reads)."""

    def __init__(self) -> None:
        self.on: set[int] = set()
        self.log: list[tuple[float, int, bool]] = []

    def __call__(self, client: int, on: bool) -> None:
        (self.on.add if on else self.on.discard)(client)
        self.log.append((self.now(), client, on))


def _spied(sim: Simulator) -> _Spy:
    spy = _Spy()
    spy.now = sim.clock  # type: ignore[attr-defined]
    sim.cell.radio.set_transmitting = spy  # type: ignore[method-assign]
    return spy


@pytest.mark.parametrize("case, kwargs", [
    ("plain", {}),
    ("outage", {"outage": OutagePolicy(min_rate_bps=1e15, max_attempts=3, on_outage="retransmit")}),
    ("harq", {"rate": McsTableRate(mapping="bler"), "harq": "harq"}),
    ("battery", {"battery": _Empty()}),
])
def test_every_attempt_marks_its_client_transmitting_until_it_ends(case, kwargs) -> None:
    if kwargs.get("harq") == "harq":
        kwargs["harq"] = Harq(kwargs["rate"], max_transmissions=4)
    sim = _sim(**kwargs)
    spy = _spied(sim)
    _, _, at = _send(sim)
    on = [t for t, k, flag in spy.log if k == 0 and flag]
    # on at the start of each attempt (the failed ones included), off when the transfer ended
    assert on[0] == 0.0 and len(on) >= (3 if case == "outage" else 1)
    assert spy.log[-1] == (at, 0, False) and spy.on == set()


@pytest.mark.parametrize("kwargs", [{}, {"outage": OutagePolicy(min_rate_bps=1e12, max_attempts=9,
                                                                 on_outage="retransmit")}])
def test_an_upload_stopped_by_the_rounds_end_leaves_nobody_transmitting(kwargs) -> None:
    sim = _sim(**kwargs)
    spy = _spied(sim)

    def round_process(ctx):
        ctx.upload(0, 10**9, "payload")  # far longer than the round
        yield ctx.env.timeout(1e-3)
        assert spy.on == {0}  # on the air when the round ends

    sim.run_round(round_process, np.array([0, 1]))
    assert spy.on == set() and spy.log[-1] == (1e-3, 0, False)


def test_a_client_leaving_mid_transfer_stops_transmitting() -> None:
    sim = _sim(availability=_LeavesAt(1e-4), outage=OutagePolicy(min_rate_bps=1e12, max_attempts=9,
                                                                  on_outage="retransmit"))
    spy = _spied(sim)
    _, got, at = _send(sim, nbytes=10**9)
    assert got == Lost("unavailable") and at == 1e-4 and spy.on == set()
