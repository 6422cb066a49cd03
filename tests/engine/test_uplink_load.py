"""The cell's uplink load per round (``RoundContext.uplink_load``, ``BandResource.load``): the fraction of
the band's resource-block time with a transmission on it, by hand for the static split, the fluid
round-robin band and the slot band; and a run whose neighbours follow it."""
from __future__ import annotations

import numpy as np
import pytest
import simpy
import yaml

import sfl_sim
from sfl_sim.channel import FixedDistancePlacement, RoundRobin
from sfl_sim.engine import DELIVERED, Simulator
from sfl_sim.engine.band import open_band
from sfl_sim.errors import ConfigError
from tests.channel.helpers import small_cell
from tests.engine.test_scheduler import CASE, GRID, SE, _linear_link
from tests.helpers import read_rows, small_scenario


def _band_load(policy, arrivals, until_s):
    """The band's load read at ``until_s`` after the transfers ``(client, start_s, bits)``."""
    env = simpy.Environment()
    band = open_band(env, policy, GRID, _linear_link(SE), lambda ids: np.ones(ids.size), lambda *a: None)
    seen = {}

    def transfer(client, start_s, bits):
        yield env.timeout(start_s)
        assert (yield band.put(client, bits)) == DELIVERED

    def reader():
        yield env.timeout(until_s)
        seen["load"] = band.load

    for args in arrivals:
        env.process(transfer(*args))
    env.process(reader())
    env.run()
    return seen["load"]


def test_fluid_round_robin_load_is_the_busy_fraction():
    # CASE ends at 1.0 s (test_scheduler's hand calculation); every RB is granted while anyone has
    # data (work-conserving equal shares), none after: over 2 s the load is 1.0 / 2.0.
    assert _band_load(RoundRobin(), CASE, 2.0) == pytest.approx(0.5, rel=1e-12)
    assert _band_load(RoundRobin(), CASE, 1.0) == pytest.approx(1.0, rel=1e-12)
    # a gap: client 0 alone for 0.5 s (20 Mbit at 40 Mbit/s), nothing until client 1 at 1.5 s
    # sends 10 Mbit alone at 20 Mbit/s (0.5 s): busy 1.0 s of 2.5 s
    assert _band_load(RoundRobin(), [(0, 0.0, 20e6), (1, 1.5, 10e6)], 2.5) == pytest.approx(0.4, rel=1e-12)


def test_slot_round_robin_load_counts_each_slots_grants():
    # Client 0 alone with 10 RB-slots of data at 2 bit/s/Hz: one slot in which it is granted the 10
    # RBs that empty its buffer (the other 41 idle), then nothing; read after 4 slots: 10 / (4 x 51).
    bits = 10 * GRID.hz_per_rb * GRID.slot_s * 2.0
    load = _band_load(RoundRobin(fidelity="slot"), [(0, 0.0, bits)], 4 * GRID.slot_s)
    assert load == pytest.approx(10 / (4 * 51), rel=1e-12)
    # two with data (test_scheduler's short case): slots 0-2 grant all 51 RBs, client 0 the 75
    # RB-slots that empty its buffer, client 1 the other 78; then client 1 alone, its 129 - 78 = 51
    # left in slot 3; read after 6 slots: 4 x 51 / (6 x 51)
    per_rb_slot = GRID.hz_per_rb * GRID.slot_s
    both = [(0, 0.0, 3 * 25 * per_rb_slot * 2.0), (1, 0.0, 129 * per_rb_slot * 1.0)]
    load = _band_load(RoundRobin(fidelity="slot"), both, 6 * GRID.slot_s)
    assert load == pytest.approx(4 / 6, rel=1e-12)


def test_static_split_load_is_each_share_times_its_air_time():
    cell = small_cell(FixedDistancePlacement([150.0, 350.0]), n_clients=2, uplink_bandwidth_hz=20e6)
    sim = Simulator(cell, np.ones(2), 1.0)
    ends = {}

    def round_process(ctx):
        def one(client, nbytes):
            yield ctx.upload(client, nbytes, "payload")
            ends[client] = ctx.now_s

        yield ctx.all_of([ctx.process(one(0, 400_000)), ctx.process(one(1, 100_000))])

    sim.run_round(round_process, np.array([0, 1]))
    # each holds half the band for its air time: (B/2 t0 + B/2 t1) / (B max(t0, t1))
    expect = (ends[0] + ends[1]) / (2.0 * max(ends.values()))
    assert sim.last_round.uplink_load() == pytest.approx(expect, rel=1e-12)
    assert 0.5 < expect < 1.0


def _scenario(tmp_path, rb_load, algorithms=("fedavg",)):
    data = small_scenario(algorithms=list(algorithms), rounds=3)
    data["cell"] = {"scheduler": {"name": "round_robin"},
                    "interference": {"name": "first_tier", "activity": 1.0, "rb_load": rb_load}}
    path = tmp_path / f"s_{rb_load}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.slow
def test_a_run_whose_neighbours_follow_its_load(tmp_path):
    # Round 1 sees fully loaded neighbours either way; from round 2 the own_cell run's neighbours
    # carry the load its uplink had (below 1: the band idles while the clients compute), so its
    # uploads see less interference and its rounds are shorter; the training is the same.
    times = {}
    for rb_load in (1.0, "own_cell"):
        out = tmp_path / f"out_{rb_load}"
        sfl_sim.run(str(_scenario(tmp_path, rb_load)), output_dir=out)
        rows = read_rows(out / "fedavg" / "rounds.csv")
        times[rb_load] = [float(r["round_sim_time_s"]) for r in rows]
        times[f"{rb_load}/loss"] = [r["test_loss"] for r in read_rows(out / "fedavg" / "metrics.csv")]
    assert times["own_cell"][0] == times[1.0][0]
    assert all(a < b for a, b in zip(times["own_cell"][1:], times[1.0][1:], strict=True))
    assert times["own_cell/loss"] == times["1.0/loss"]


def test_own_cell_load_is_refused_for_an_asynchronous_algorithm(tmp_path):
    with pytest.raises(ConfigError, match=r"^cell\.interference\.rb_load: got 'own_cell'; allowed: a fraction in "
                                          r"\[0, 1\] with the asynchronous algorithm fedbuff"):
        sfl_sim.run(str(_scenario(tmp_path, "own_cell", algorithms=("fedbuff",))), output_dir=tmp_path / "o")
