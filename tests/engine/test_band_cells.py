"""One scheduled band per cell of a network: the routing by serving cell, the cells' bands in
parallel, a handover pausing a transfer that finishes on the band it started in, and the engine's
round on a 7-site network under a slot-form proportional fair."""
from __future__ import annotations

import numpy as np
import pytest
import simpy

from sfl_sim.channel import Cell, ProportionalFair, ResourceGrid, RoundRobin
from sfl_sim.channel.large_scale.pathloss import PATHLOSS
from sfl_sim.channel.large_scale.shadowing import SHADOWING
from sfl_sim.channel.link.allocation import ALLOCATORS
from sfl_sim.channel.link.rate import RATES
from sfl_sim.channel.network import HexGrid
from sfl_sim.channel.network.protocols import HandoverEvent
from sfl_sim.channel.network.state import NetworkPlacement, layout_radius_m
from sfl_sim.engine import DELIVERED, Simulator
from sfl_sim.engine.band import CellBands, open_band
from tests.helpers import timed_uploads

GRID = ResourceGrid(1, 20e6)  # 51 RBs, 0.5 ms slots
FULL_HZ = GRID.n_rb * GRID.hz_per_rb


def _network_cell(n_clients: int = 20, **extra: object) -> Cell:
    grid = HexGrid(n_sites=7, isd_m=500.0, sectors_per_site=1)
    r = np.random.default_rng
    return Cell(NetworkPlacement(grid), PATHLOSS.build("tr36814_macro"), SHADOWING.build("none"),
                RATES.build("shannon"), ALLOCATORS.build("equal"),
                n_clients=n_clients, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=20e6, downlink_bandwidth_hz=20e6, server_tx_power_w=40.0, placement_rng=r(1),
                shadowing_rng=r(2), los_rng=r(3), interference_rng=r(4), radius_m=layout_radius_m(grid),
                network=grid, network_rng=r(5), **extra)


def test_two_clients_in_different_cells_each_get_their_whole_cells_band_under_round_robin() -> None:
    cell = _network_cell()
    radio = cell.radio
    cells = radio.serving_cell(np.arange(20), 0.0)
    a = 0
    b = int(np.flatnonzero(cells != cells[a])[0])
    sim = Simulator(cell, np.ones(20), 1.0, scheduler=RoundRobin(), numerology=1)
    nbytes = 250_000
    out, ctx = timed_uploads(sim, [(a, 0.0, nbytes), (b, 0.0, nbytes)])
    # by hand: each alone in its cell's band of 51 RBs from the grant latency on, at its rate on the
    # whole 20 MHz: bits / rate after the latency.  The rates are read at a transfer's start (as on
    # the static path): a's before b is on the air (no interference), b's with a transmitting in
    # the other cell (its interference in b's cell)
    latency_s = RoundRobin().grant_latency_slots() * GRID.slot_s
    gains = np.array([ctx.uplink_fading_gain(k) for k in (a, b)])
    alone = float(radio.links(np.array([a]), 0.0, np.array([FULL_HZ]), fading=gains[:1]).rate_bps[0])
    radio.set_transmitting(a, True)
    heard = float(radio.links(np.array([b]), 0.0, np.array([FULL_HZ]), fading=gains[1:]).rate_bps[0])
    radio.set_transmitting(a, False)
    for k, rate in ((a, alone), (b, heard)):
        assert out[k] == (DELIVERED, pytest.approx(latency_s + 8 * nbytes / rate, rel=1e-12))
        grants = ctx.uplink_grants(k)
        assert grants is not None and grants.rb_s == pytest.approx(GRID.n_rb * 8 * nbytes / rate, rel=1e-12)
    ids = np.array([a, b])
    # one shared band would have split it: half the RBs each while both have data
    radio.set_transmitting(a, True)
    radio.set_transmitting(b, True)
    half = radio.links(ids, latency_s, np.full(2, FULL_HZ / 2), fading=gains).rate_bps
    assert max(out[k][1] for k in (a, b)) < latency_s + 8 * nbytes / half.max()


class _ScriptedNetwork:
    """A network of two cells with a scripted serving cell and handovers (the CellRadio port)."""

    n_cells = 2
    measurement_step_s = 0.04

    def __init__(self, home: dict[int, int], events: list[HandoverEvent]) -> None:
        self.home, self.events = home, events

    def attached_cell(self, client_ids, t_s):
        ids = np.asarray(client_ids, dtype=int)
        t = np.broadcast_to(np.asarray(t_s, dtype=float), ids.shape)
        out = np.array([self.home[int(k)] for k in ids.ravel()], dtype=int).reshape(ids.shape)
        for e in self.events:
            out = np.where((ids == e.client) & (t >= e.time_s), e.target_cell, out)
        return out

    def connected(self, client_ids, t_s):
        ids = np.asarray(client_ids, dtype=int)
        t = np.broadcast_to(np.asarray(t_s, dtype=float), ids.shape)
        out = np.ones(ids.shape, dtype=bool)
        for e in self.events:
            out &= ~((ids == e.client) & (t >= e.time_s) & (t < e.time_s + e.interruption_s))
        return out

    def handovers_between(self, t0_s, t1_s):
        return tuple(e for e in self.events if t0_s <= e.time_s < t1_s)


def _scripted(policy, events, arrivals, home=None, se=(2.0, 1.0)):
    """Transfers ``(client, start_s, bits)`` through one band per scripted cell; client -> end, bands."""
    env = simpy.Environment()
    rate_per_hz = np.asarray(se, dtype=float)

    def link_at(ids, bandwidth_hz, fading):
        return rate_per_hz[ids] * np.asarray(bandwidth_hz, dtype=float), np.zeros(ids.size), np.ones(ids.size)

    network = _ScriptedNetwork(home or {0: 0, 1: 1}, events)
    bands = CellBands(env, network, link_at, lambda at: open_band(
        env, policy, GRID, at, lambda ids: np.ones(ids.size), lambda *a: None, trace_slots=True))
    finish: dict[int, float] = {}

    def transfer(client, start_s, bits):
        yield env.timeout(start_s)
        assert bands.serves(client)
        assert (yield bands.put(client, bits)) == DELIVERED
        finish[client] = env.now

    procs = [env.process(transfer(*a)) for a in arrivals]
    env.run(until=simpy.AllOf(env, procs))
    bands.close()
    return finish, bands


def test_a_handover_pauses_the_transfer_for_its_interruption_and_it_finishes_on_its_first_band() -> None:
    # client 0 (2 bit/s/Hz) alone in cell 0: 1 s of the whole band; a handover to cell 1 at 0.3 s
    # with 50 ms without a link: it ends at 1.05 s, still in cell 0's band (its rate there the same
    # here: the scripted link does not depend on the cell).  Client 1 in cell 1 sends alone from
    # 0.5 s for 0.2 s: the paused transfer of client 0 (in cell 0's band) takes none of its RBs.
    bits0, bits1 = 2.0 * FULL_HZ * 1.0, 1.0 * FULL_HZ * 0.2
    events = [HandoverEvent(0.3, 0, 0, 1, "a3", 0.05)]
    finish, bands = _scripted(RoundRobin(), events, [(0, 0.0, bits0), (1, 0.5, bits1)])
    assert finish[0] == pytest.approx(1.05, rel=1e-12)
    assert finish[1] == pytest.approx(0.7, rel=1e-12)
    g0 = bands.bands[0].grants(0)
    assert g0 is not None and g0.granted_s == pytest.approx(1.0, rel=1e-12)
    assert g0.in_band_s == pytest.approx(1.05, rel=1e-12)
    assert bands.bands[1].grants(0) is None and bands.bands[0].grants(1) is None


def test_a_transfer_that_starts_without_a_link_waits_for_it_in_the_target_cells_band() -> None:
    # client 0 hands over to cell 1 at 0.2 s (0.1 s without a link); its transfer starts at 0.25 s:
    # not an outage, it goes to cell 1's band and waits until 0.3 s, then 0.5 s of the whole band
    events = [HandoverEvent(0.2, 0, 0, 1, "a3", 0.1)]
    finish, bands = _scripted(RoundRobin(), events, [(0, 0.25, 2.0 * FULL_HZ * 0.5)], home={0: 0, 1: 1})
    assert finish[0] == pytest.approx(0.8, rel=1e-12)
    assert bands.bands[0].grants(0) is None
    grants = bands.bands[1].grants(0)
    assert grants is not None and grants.granted_s == pytest.approx(0.5, rel=1e-12)


def test_the_slot_form_pauses_a_transfer_through_the_interruption_and_traces_the_cells() -> None:
    slot = ProportionalFair(fidelity="slot")
    bits0 = 2.0 * FULL_HZ * 0.1  # 200 slots of the whole band
    events = [HandoverEvent(0.05, 0, 0, 1, "a3", 0.02)]
    finish, bands = _scripted(slot, events, [(0, 0.0, bits0), (1, 0.0, 1.0 * FULL_HZ * 0.01)])
    latency_s = slot.grant_latency_slots() * GRID.slot_s
    # 200 slots on the air, 40 slots without a link; the latency rounds to the slot grid
    assert finish[0] == pytest.approx(latency_s + 0.12, abs=GRID.slot_s)
    trace = bands.slot_trace
    assert trace is not None
    paused = [g for g in trace if g.client == 0 and 0.05 <= g.start_s < 0.07]
    assert not paused
    assert {g.cell for g in trace if g.client == 0} == {0} and {g.cell for g in trace if g.client == 1} == {1}
    assert sum(g.rbs for g in trace if g.client == 0) == 200 * GRID.n_rb


@pytest.mark.parametrize("form", ["fluid", "slot"])
def test_a_round_on_a_seven_site_network_runs_each_cells_band_in_parallel(form: str) -> None:
    cell = _network_cell()
    cohort = np.arange(10)
    sim = Simulator(cell, np.ones(20), 1.0, scheduler=ProportionalFair(fidelity=form), numerology=1,
                    slot_trace=True)
    out, ctx = timed_uploads(sim, [(int(k), 0.0, 20_000) for k in cohort])
    assert all(v == DELIVERED for v, _ in out.values())
    serving = cell.radio.serving_cell(cohort, 0.0)
    assert len(set(serving.tolist())) > 1
    for k in cohort.tolist():
        grants = ctx.uplink_grants(k)
        assert grants is not None and grants.bits == pytest.approx(8 * 20_000, rel=1e-9)
    if form == "fluid":
        assert ctx.uplink_slot_trace is None
        return
    trace = ctx.uplink_slot_trace
    assert trace
    assert {g.cell for g in trace} == set(serving.tolist())
    assert all(g.cell == serving[g.client] for g in trace)
    per_slot_cell: dict[tuple[int, int], int] = {}
    for g in trace:
        per_slot_cell[(g.slot, g.cell)] = per_slot_cell.get((g.slot, g.cell), 0) + g.rbs
    assert max(per_slot_cell.values()) <= GRID.n_rb  # each cell's grid
    per_slot: dict[int, int] = {}
    for (s, _), rbs in per_slot_cell.items():
        per_slot[s] = per_slot.get(s, 0) + rbs
    assert max(per_slot.values()) > GRID.n_rb  # the cells' grids at once



def test_a_client_walking_through_a_handover_pauses_in_its_first_cells_band_on_the_built_network() -> None:
    """The ns-2 line of tests/channel/network (A -> B at 17.80 s, 50 ms without a link) in a built
    cell under round robin: an upload from 17.5 s gets its rate then, nothing from 17.80 to
    17.85 s, then the rate to site B (read again at the link's return), and stays in cell A's band."""

    from sfl_sim.config.loading import validate
    from sfl_sim.runs.build import build_cell
    from tests.helpers import line_three_cells_scenario

    cell = build_cell(validate(line_three_cells_scenario()))
    radio = cell.radio
    t0 = 17.5
    radio.advance_to(t0)
    sim = Simulator(cell, np.ones(1), 1.0, start_time_s=t0, scheduler=RoundRobin(), numerology=1)
    grid = sim.uplink_grid
    assert grid is not None and RoundRobin().grant_latency_slots() == 0
    full = np.array([grid.n_rb * grid.hz_per_rb])
    gain = np.ones(1)
    before = float(radio.links(np.array([0]), t0, full, fading=gain).rate_bps[0])
    after = float(radio.links(np.array([0]), 17.85, full, fading=gain).rate_bps[0])
    assert radio.serving_cell([0], 17.85).tolist() != [0]
    nbytes = int(before * 0.3 / 8) + 100_000  # past the handover
    out, ctx = timed_uploads(sim, [(0, 0.0, nbytes)])
    end_s = 17.85 + (8 * nbytes - before * (17.80 - t0)) / after
    assert out[0] == (DELIVERED, pytest.approx(end_s, rel=1e-9))
    assert ctx.uplink_grants(0).granted_s == pytest.approx(end_s - t0 - 0.05, rel=1e-9)
    band = ctx._band
    assert isinstance(band, CellBands) and band.bands[0].grants(0) is not None
    assert all(b.grants(0) is None for b in band.bands[1:])


def test_the_power_headroom_is_that_of_the_serving_cells_coupling_loss() -> None:
    from sfl_sim.channel import OpenLoopPowerControl
    from sfl_sim.engine.radio import Uplink

    pc = OpenLoopPowerControl(p0_dbm=-90.0, alpha=1.0, p_max_dbm=23.0, subcarrier_spacing_hz=30e3)
    cell = _network_cell(power_control=pc)
    radio = cell.radio
    ids = np.arange(20)
    serving = radio.serving_cell(ids, 0.0)
    other = ids[serving != 0]  # served by another site
    # the single cell's view (its large-scale state): the loss to site 0, at the centre
    far = other[cell.large_scale.snapshot.coupling_loss_db[other] > radio.coupling_loss_db(other, 0.0) + 6.0]
    assert far.size >= 5  # well inside their own cells, far from site 0
    loss = radio.coupling_loss_db(far, 0.0)  # to the serving cell
    site0 = cell.large_scale.snapshot.coupling_loss_db[far]
    # by hand (TS 38.213 eq. 7.1.1 with alpha = 1 at 30 kHz): P0 + 10 log10(2 M) + CL <= P_max, so
    # M = floor(10^((P_max - P0 - CL) / 10) / 2), at least 1
    want = np.maximum(np.floor(10.0 ** ((23.0 + 90.0 - loss) / 10.0) / 2.0), 1).astype(int)
    uplink = Uplink(cell, ids, "per_round", np.random.default_rng(0), {}, clock=lambda: 0.0)
    got = uplink.headroom_rbs(far)
    assert got is not None and got.tolist() == want.tolist()
    assert got.tolist() != pc.headroom_rbs(site0).tolist()  # what site 0's loss would have allowed
