"""The fluid band's equal-share path (the rates of ``n`` equal shares read from a column of the
tables, no policy call) gives the finish times, busy notes and energy of the general path (the
policy asked for its split, each client's rate looked up for its RBs), on a channel whose rate is
not linear in the bandwidth, with transfers starting together, apart and while others end."""
from __future__ import annotations

import numpy as np
import pytest
import simpy

from sfl_sim.channel import ResourceGrid, RoundRobin
from sfl_sim.engine import DELIVERED
from sfl_sim.engine.band import open_band

GRID = ResourceGrid(1, 20e6)  # 51 RBs


class _AskedRoundRobin(RoundRobin):
    """Round-robin without the promise: the band asks it for every split."""

    fluid_equal_shares = False


def _shannon(gain: np.ndarray):
    """A fixed 0.2 W per client over its bandwidth: rate b log2(1 + p g / (b N0)), not linear in b."""

    def link_at(ids, bandwidth_hz, fading):
        b = np.asarray(bandwidth_hz, dtype=float)
        snr = 0.2 * gain[ids] * np.asarray(fading, dtype=float) / (b * 4e-21)
        return b * np.log2(1.0 + snr), 10 * np.log10(snr), np.full(ids.size, 0.2)

    return link_at


def _run(policy, arrivals, gain):
    env = simpy.Environment()
    notes = []
    band = open_band(env, policy, GRID, _shannon(gain), lambda ids: np.ones(ids.size),
                lambda *a: notes.append(a), ladder=len(gain))
    finish = {}

    def transfer(client, start_s, bits):
        yield env.timeout(start_s)
        assert (yield band.put(client, bits)) == DELIVERED
        finish[client] = env.now

    for args in arrivals:
        env.process(transfer(*args))
    env.run()
    return finish, sorted(notes)


def test_the_equal_share_tables_give_the_general_paths_times():
    rng = np.random.default_rng(3)
    gain = 10.0 ** (-rng.uniform(9, 13, 8))
    arrivals = [(k, float(rng.choice([0.0, 0.0, rng.uniform(0, 0.5)])), float(rng.uniform(1e6, 2e7)))
                for k in range(8)]
    fast, fast_notes = _run(RoundRobin(), arrivals, gain)
    general, general_notes = _run(_AskedRoundRobin(), arrivals, gain)
    assert fast.keys() == general.keys() == set(range(8))
    for k in range(8):
        assert fast[k] == pytest.approx(general[k], rel=1e-12, abs=0.0)
    for a, b in zip(fast_notes, general_notes, strict=True):
        assert a[0] == b[0] and a[1:] == pytest.approx(b[1:], rel=1e-12)
