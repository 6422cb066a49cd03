"""The engine's accounting, apart from its scheduling: counters (every one recorded, read back)
and a round's notes (busy kinds the energy ledger reads, who left when and why)."""
from __future__ import annotations

import dataclasses
from typing import get_args

import pytest

from sfl_sim.clients.energy.ledger import BUSY_KINDS
from sfl_sim.engine import Busy, BusyKind, Counters, RoundNotes


def test_as_dict_holds_every_counter_and_from_dict_reads_it_back() -> None:
    c = Counters()
    c.count_upload(100, "activations")
    c.count_download(30, "model")
    c.count_flops(True, 5.0, "server_step")
    c.count_flops(False, 7.0, "client_forward")
    c.count_retransmission("activations")
    c.count_dropped_transmission("activations")
    c.count_harq(1.5, "activations")
    data = c.as_dict()
    assert set(data) == {f.name for f in dataclasses.fields(Counters)}
    assert Counters.from_dict(data) == c
    assert data["by_kind"] == {"uplink/activations": 100, "downlink/model": 30, "server/server_step": 5.0,
                               "client/client_forward": 7.0, "retransmissions/activations": 1,
                               "dropped/activations": 1, "harq_retransmissions/activations": 1.5}
    assert Counters().as_dict()["harq_retransmissions"] == 0.0  # a zero counter is recorded too


def test_a_record_that_left_counters_out_is_read_through_the_upgrade() -> None:
    old = {"uplink_bytes": 1, "downlink_bytes": 2, "client_flops": 3.0, "server_flops": 4.0}
    with pytest.raises(KeyError):  # the rule for older checkpoints is upgrade.checkpoint's alone
        Counters.from_dict(old)
    # what upgrade.checkpoint does with the counters (tests/runs/rundir/test_upgrade.py runs it whole)
    assert Counters.from_dict({**Counters().as_dict(), **old}) == Counters(1, 2, 3.0, 4.0)


def test_the_busy_kinds_are_the_ledgers() -> None:
    assert get_args(BusyKind) == BUSY_KINDS == ("compute", "uplink", "downlink")


def test_round_notes_keep_the_first_reason_and_the_earliest_end() -> None:
    notes = RoundNotes(10.0, left_s={3: 14.0})
    notes.note_busy(1, "uplink", 11.0, 2.0, tx_power_w=0.2)
    notes.note_left(3, 12.0)
    notes.note_left(3, 13.0)
    notes.note_dropped(1, "outage")
    notes.note_dropped(1, "deadline")
    assert notes.busy == {1: [Busy("uplink", 11.0, 13.0, tx_power_w=0.2)]}
    assert notes.left_s == {3: 12.0} and notes.dropped == {1: "outage"} and notes.start_s == 10.0
