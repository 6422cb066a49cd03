"""A client's transfer that follows its previous one at the instant it ends (labels after
activations) is computed ahead with the cohort's, and ends where it would alone."""
from __future__ import annotations

import numpy as np

from sfl_sim.channel import FixedDistancePlacement
from sfl_sim.channel.link.fading_time import JakesFading
from sfl_sim.channel.radio_state import RadioState
from sfl_sim.engine import Simulator
from tests.channel.helpers import small_cell
from tests.helpers import activations_then_labels


def test_follow_ups_are_computed_with_the_cohort_and_end_as_each_alone(monkeypatch):
    cell = small_cell(FixedDistancePlacement([150.0, 250.0, 350.0, 450.0]), n_clients=4, uplink_bandwidth_hz=4e6,
                      fading=JakesFading(speed_m_per_s=30.0), fading_process_rng=np.random.default_rng(11))
    radio = cell.radio
    lone = []
    ends_of, end_of = RadioState.transfer_ends_s, RadioState.transfer_end_s
    inside = []  # transfer_end_s may hand its one transfer to transfer_ends_s: counted once

    def counted(self, client_ids, *args, **kwargs):
        if np.size(client_ids) == 1 and not inside:
            lone.append(int(np.ravel(client_ids)[0]))
        return ends_of(self, client_ids, *args, **kwargs)

    def counted_one(self, client, *args, **kwargs):
        lone.append(int(client))
        inside.append(client)
        try:
            return end_of(self, client, *args, **kwargs)
        finally:
            inside.pop()

    sim = Simulator(cell, np.ones(4), 1.0, fading_rng=np.random.default_rng(7))
    monkeypatch.setattr(RadioState, "transfer_ends_s", counted)
    monkeypatch.setattr(RadioState, "transfer_end_s", counted_one)
    seen = activations_then_labels(sim, [0, 1, 2, 3], 3, 40_000, 4_000, 0.2)
    monkeypatch.undo()
    # the labels' bits are not through in their first span: each is integrated over the channel
    assert all(radio.first_span_of(k) * float(radio.links([k], m, [s], fading="at_time").rate_bps[0]) < 8 * 4_000
               for k, _, m, _, s in seen)
    # alone: at each start the first client to ask (the others then come at once), its labels, and
    # the first iteration's labels (no follow-up known yet); the others' labels were computed ahead
    # with the cohort's (without: 1 + 4 per iteration)
    assert len(seen) == 12
    assert len(lone) == (1 + 4) + 2 * (1 + 1)
    for k, start, middle, end, share in seen:
        assert middle == start + (radio.transfer_end_s(k, 8 * 40_000, start, share) - start)
        assert end == middle + (radio.transfer_end_s(k, 8 * 4_000, middle, share) - middle)
