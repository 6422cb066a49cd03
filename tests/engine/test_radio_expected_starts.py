"""A follow-up's start link that could not be kept ahead (its transfer ends past a grid update of
the large-scale state) is computed with the next start link computed then, not alone, and is the
same link."""
from __future__ import annotations

import numpy as np

from sfl_sim.channel import FixedDistancePlacement
from sfl_sim.channel.large_scale.timed_mobility import GaussMarkovMobility
from sfl_sim.channel.link.fading_time import JakesFading
from sfl_sim.channel.radio_state import RadioState
from sfl_sim.engine import Simulator
from sfl_sim.engine.radio import _Transfers
from tests.channel.helpers import small_cell
from tests.helpers import activations_then_labels


def _round(monkeypatch, expect: bool) -> tuple[list[tuple[int, float, float, float]], list[float], float]:
    """The cohort's (client, start, middle, end) of activations then labels, 6 iterations, the
    times of the start links computed alone, and the large-scale grid step."""
    cell = small_cell(FixedDistancePlacement([150.0, 250.0, 350.0, 450.0]), n_clients=4, uplink_bandwidth_hz=4e6,
                      fading=JakesFading(speed_m_per_s=30.0), fading_process_rng=np.random.default_rng(11),
                      mobility=GaussMarkovMobility(mean_speed_m_per_s=30.0), mobility_rng=np.random.default_rng(5),
                      min_distance_m=35.0)
    lone: list[float] = []
    links_of = RadioState.start_links

    def counted(self, client_ids, t_s, *args, **kwargs):
        if np.size(client_ids) == 1:
            lone.append(float(t_s[0]))
        return links_of(self, client_ids, t_s, *args, **kwargs)

    monkeypatch.setattr(RadioState, "start_links", counted)
    if not expect:
        monkeypatch.setattr(_Transfers, "_expect", lambda self, client, bits, end_s: None)
    sim = Simulator(cell, np.ones(4), 1.0, fading_rng=np.random.default_rng(7))
    seen = [row[:4] for row in activations_then_labels(sim, [0, 1, 2, 3], 6, 160_000, 4_000, 0.45)]
    monkeypatch.undo()
    return seen, lone, cell.radio.large_scale_step_s


def test_expected_starts_past_a_grid_update_are_computed_together_and_the_same(monkeypatch):
    seen, lone, step = _round(monkeypatch, expect=True)
    without, lone_without, _ = _round(monkeypatch, expect=False)
    assert seen == without  # every transfer's start and end, bit for bit
    # after the first iteration (where no follow-up is known yet): the labels' starts past a grid
    # update, grouped by iteration and the grid interval they start in
    later = [(round(s / 0.45), m) for _, s, m, _ in seen if s > 0.0]
    groups: dict[tuple[int, float], int] = {}
    for i, m in later:
        if any(np.floor(m / step) > np.floor(s / step) for _, s, mm, _ in seen if mm == m):
            groups[(i, float(np.floor(m / step)))] = groups.get((i, float(np.floor(m / step))), 0) + 1
    assert sum(groups.values()) >= 12 and max(groups.values()) == 4  # the case at hand
    middles = {m for _, m in later}
    # without: every one of them alone (and others: a first asker's end is computed alone);
    # with: only a start alone in its group
    assert sum(t in middles for t in lone_without) > sum(groups.values())
    assert sum(t in middles for t in lone) == sum(n == 1 for n in groups.values())
