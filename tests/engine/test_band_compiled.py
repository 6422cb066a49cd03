"""The slot form's compiled path (:mod:`sfl_sim.engine.band.compiled`) against its numpy path, bit
for bit: the same rounds (proportional fair, round robin, max rate; HARQ, K2 latency, open-loop
headroom, fading per transmission, MCS tables) run both ways give the same clock, busy intervals,
grant records and slot traces, compared with ``==``; and the compiled grants of single slots equal
the policies' own ``grant_rbs`` on random inputs (ties, ``T = 0``, headroom, bent rate tables)."""
from __future__ import annotations

import numpy as np
import pytest

from sfl_sim.channel import SCHEDULERS
from sfl_sim.channel.link.scheduling import MaxRate, ProportionalFair, RoundRobin, concave_rates
from sfl_sim.config import load_scenario
from sfl_sim.config.scenario_files import resolve_scenario
from sfl_sim.engine import SERVER, Simulator
from sfl_sim.engine.band import compiled
from sfl_sim.runs.build import build_cell, build_harq

pytestmark = pytest.mark.skipif(not compiled.AVAILABLE, reason="numba is not installed")

SIZE = 12  # clients per round (of 120)


def _round_process(ctx, cohort):
    clients = cohort.tolist()

    def client(k):
        for t in range(3):
            yield from ctx.compute(k, 1e6 * (1 + k % 3), "client_forward")
            yield ctx.upload(k, 40_000, "activations", block=t)
        return (yield ctx.upload(k, 100_000, "client_model"))

    yield ctx.all_of([ctx.process(client(k)) for k in clients])
    yield from ctx.compute(SERVER, 1e9, "server_step")


def _signature(scheduler, params, cell_extra, coherence="per_round", harq=False, trace=False, rounds=2, size=SIZE):
    """Everything a round records, for each of ``rounds`` rounds (the same cohorts and streams)."""
    extra = {"clients": {"count": 10 * size, "participation": 0.1}}
    if cell_extra:
        extra["cell"] = cell_extra
    cfg = load_scenario(resolve_scenario("cellular_100clients"), extra=extra)
    cell = build_cell(cfg)
    rng = np.random.default_rng(1)
    out = []
    for i in range(rounds):
        cohort = np.sort(rng.choice(10 * size, size, replace=False))
        sim = Simulator(cell, np.full(10 * size, 5e9), 1e12, scheduler=SCHEDULERS.create(scheduler, **params),
                        numerology=cfg.cell.numerology, fading_rng=np.random.default_rng(i), coherence=coherence,
                        harq=build_harq(cfg, cell) if harq else None, slot_trace=trace, seed=7)
        duration = sim.run_round(lambda ctx, ids=cohort: _round_process(ctx, ids), cohort)
        ctx = sim.last_round
        busy = {k: list(v) for k, v in sorted(ctx.busy.items())}
        grants = {k: ctx.uplink_grants(k) for k in cohort.tolist()}
        trace_rows = ctx.uplink_slot_trace
        band = ctx._band  # the band's own arrays too: the averages, energies and records of every row
        state = [getattr(band, name).tolist() for name in ("_average", "_energy", "_book", "_left")]
        out.append((duration, sim.clock(), busy, grants, trace_rows, vars(sim.counters), state, band._used_rb_s))
    return out


def _both(monkeypatch, *args, **kwargs):
    monkeypatch.setenv("SFL_SIM_SLOT_NUMPY", "1")
    reference = _signature(*args, **kwargs)
    monkeypatch.delenv("SFL_SIM_SLOT_NUMPY")
    return reference, _signature(*args, **kwargs)


OPEN_LOOP = {"power_control": {"name": "open_loop", "p0_dbm": -90, "alpha": 0.8}}
MCS = {"rate": {"name": "mcs_table", "mapping": "bler"}}


@pytest.mark.parametrize(("scheduler", "params", "cell_extra", "coherence"), [
    ("proportional_fair", {}, {}, "per_round"),
    ("proportional_fair", {"time_constant_slots": 3.0, "k2_slots": 2}, OPEN_LOOP, "per_transmission"),
    ("proportional_fair", {}, MCS, "per_iteration"),
    ("round_robin", {"k2_slots": 1}, OPEN_LOOP, "per_transmission"),
    ("round_robin", {}, MCS, "per_round"),
    ("max_rate", {}, OPEN_LOOP, "per_round"),
    ("max_rate", {"scheduling_request_slots": 1}, MCS, "per_transmission"),
])
@pytest.mark.parametrize("trace", [False, True])
def test_the_compiled_slot_loop_is_the_numpy_path_bit_for_bit(monkeypatch, scheduler, params, cell_extra, coherence,
                                                               trace):
    reference, fast = _both(monkeypatch, scheduler, {"fidelity": "slot", **params}, cell_extra, coherence,
                            trace=trace)
    assert fast == reference
    assert reference[0][0] > 0


@pytest.mark.parametrize("scheduler", ["proportional_fair", "round_robin", "max_rate"])
def test_the_compiled_grants_with_harq_are_the_numpy_path_bit_for_bit(monkeypatch, scheduler):
    cell = {**MCS, "harq": {"mode": "sampled", "max_transmissions": 4}}
    reference, fast = _both(monkeypatch, scheduler, {"fidelity": "slot", "k2_slots": 1}, cell, "per_transmission",
                            harq=True, trace=True, rounds=1, size=8)
    assert fast == reference
    assert any(t.failed for t in reference[0][4])  # the scenario does exercise HARQ


def _random_case(rng, k, n_rb, bent):
    need = rng.integers(0, n_rb + 1, k)
    per_rb = rng.choice([1.0, 2.0, 3.0], k) * rng.choice([1.0, 1.0 + 1e-9], k)
    average = np.where(rng.random(k) < 0.3, 0.0, rng.choice([1.0, 2.0, 5.0], k))
    base = rng.choice([1.0, 2.0], (k, 1)) * np.log1p(np.arange(1, n_rb + 1) / rng.choice([1.0, 4.0], (k, 1)))
    if bent:  # an MCS-like table with steps, made concave as the band does
        base = np.floor(base * 3.0) / 3.0
    hull = concave_rates(base)
    caps = rng.integers(1, n_rb + 3, k) if rng.random() < 0.6 else None
    return need, per_rb, average, hull, caps


@pytest.mark.parametrize("bent", [False, True])
def test_the_compiled_grants_of_one_slot_equal_the_policies(bent):
    rng = np.random.default_rng(3)
    policies = {compiled.PROPORTIONAL_FAIR: ProportionalFair(), compiled.ROUND_ROBIN: RoundRobin(),
                compiled.MAX_RATE: MaxRate()}
    fallbacks = 0
    for case in range(600):
        n_rb = int(rng.choice([3, 11, 51]))
        k = int(rng.integers(1, 30))
        need, per_rb, average, hull, caps = _random_case(rng, k, n_rb, bent)
        for code, policy in policies.items():
            extra = {} if caps is None else {"headroom_rb": caps}
            if code == compiled.PROPORTIONAL_FAIR:
                extra["rates_bps"] = hull
            want = policy.grant_rbs(n_rb, need, per_rb, average, case, **extra)
            got = compiled.grant_slot(code, n_rb, need, per_rb, average, case, hull, np.arange(k), caps)
            if got is None:
                fallbacks += 1
                continue
            assert got.tolist() == want.tolist(), (case, code)
    assert fallbacks < 60
