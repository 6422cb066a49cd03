"""FedBuff and FedAsync on the asynchronous driver: the FedBuff = FedAvg anchor, the servers' equations."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.asynchronous import staleness_weight
from sfl_sim.algorithms.conformance import conformance_setup
from sfl_sim.channel import (
    Cell,
    EqualAllocation,
    FixedDistancePlacement,
    NoShadowing,
    RayleighFading,
    ShannonRate,
    TR36814Macro,
)
from sfl_sim.clients.selection import UniformSelection, select_online
from sfl_sim.engine import Simulator
from sfl_sim.engine.asynchronous import AsyncDriver

DISTANCES_M = [60.0, 200.0, 380.0, 470.0]


def _sim(downlink: str = "broadcast") -> Simulator:
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement(DISTANCES_M), TR36814Macro(), NoShadowing(), ShannonRate(), EqualAllocation(),
                n_clients=4, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0, uplink_bandwidth_hz=2.0e5,
                downlink_bandwidth_hz=2.0e5, server_tx_power_w=1.0, placement_rng=rng, shadowing_rng=rng,
                fading=RayleighFading())
    return Simulator(cell, np.array([2.0e4, 2.0e5, 2.0e5, 1.0e5]), 1e8, downlink_mode=downlink,  # type: ignore[arg-type]
                     fading_rng=np.random.default_rng(7))


def _selector(n_clients: int, rng: np.random.Generator):
    selector = UniformSelection()

    def select(n: int, busy: frozenset[int]) -> np.ndarray:
        online = np.ones(n_clients, dtype=bool)
        online[list(busy)] = False
        return np.asarray(select_online(selector, n_clients, n, rng, online), dtype=np.int64)

    return select


def _synchronous(rounds: int, cohort: int, downlink: str) -> list[dict[str, torch.Tensor]]:
    setup = conformance_setup(3)
    algo = ALGORITHMS.get("fedavg")(setup)
    sim, rng, selector = _sim(downlink), np.random.default_rng(11), UniformSelection()
    states = []
    for _ in range(rounds):
        c = np.asarray(selector.select(4, cohort, rng), dtype=np.int64)
        sim.run_round(lambda ctx, c=c: algo.run_round(ctx, c), c)
        states.append({k: v.clone() for k, v in algo.model.state_dict().items()})
    return states


def _asynchronous(name: str, rounds: int, cohort: int, downlink: str = "broadcast", **params):
    setup = conformance_setup(3)
    algo = ALGORITHMS.get(name)(setup, **params)
    sim = _sim(downlink)
    driver = AsyncDriver(sim, algo.async_policy(cohort), algo, _selector(4, np.random.default_rng(11)))
    states, aggs = [], []
    for _ in range(rounds):
        aggs.append(driver.advance())
        states.append({k: v.clone() for k, v in algo.model.state_dict().items()})
    return states, aggs, sim


@pytest.mark.slow
@pytest.mark.parametrize("downlink", ["broadcast", "ideal"])
def test_fedbuff_with_k_equal_to_the_cohort_is_fedavg_bit_for_bit(downlink):
    """K = C = cohort, no staleness scaling, eta_g = 1, every other parameter at its default."""
    sync = _synchronous(4, 3, downlink)
    got, aggs, _ = _asynchronous("fedbuff", 4, 3, downlink, buffer_size=3, staleness_scaling="none",
                                   refill="on_use")
    assert all(a.staleness == [0, 0, 0] for a in aggs)
    assert not torch.equal(got[0]["blocks.0.0.weight"], got[-1]["blocks.0.0.weight"])  # it trained
    for want, have in zip(sync, got, strict=True):
        assert want.keys() == have.keys()
        assert all(torch.equal(want[k], have[k]) for k in want)


@pytest.mark.slow
def test_fedbuff_on_stale_updates_follows_its_equation():
    """K = 1 of C = 2: each update x_k - x^{u_k} scaled by 1 / sqrt(1 + tau), added with eta_g."""
    setup = conformance_setup(3)
    algo = ALGORITHMS.get("fedbuff")(setup, buffer_size=1, concurrency=2, server_lr=0.5)
    seen = []
    update = algo.server_update

    def spy(used, staleness, models, starts):
        before = {k: v.clone() for k, v in algo.model.state_dict().items()}
        a = used[0]
        local, start = models[a.dispatch.sequence].state_dict(), starts[a.dispatch.sequence]
        update(used, staleness, models, starts)
        s = staleness_weight("sqrt", staleness[0])
        key = "blocks.0.0.weight"
        want = before[key].double() + 0.5 * s * (local[key].double() - start[key].double())
        seen.append((staleness[0], torch.allclose(algo.model.state_dict()[key].double(), want, atol=1e-7)))

    algo.server_update = spy
    driver = AsyncDriver(_sim(), algo.async_policy(3), algo, _selector(4, np.random.default_rng(1)))
    for _ in range(4):
        driver.advance()
    assert all(ok for _, ok in seen) and any(tau > 0 for tau, _ in seen)


@pytest.mark.slow
def test_fedasync_mixes_each_arrival_with_its_staleness_weight():
    setup = conformance_setup(3)
    algo = ALGORITHMS.get("fedasync")(setup, concurrency=2, alpha=0.5, staleness_function="hinge", a=1.0, b=0.0)
    seen = []
    update = algo.server_update

    def spy(used, staleness, models, starts):
        before = {k: v.clone() for k, v in algo.model.state_dict().items()}
        local = models[used[0].dispatch.sequence].state_dict()
        update(used, staleness, models, starts)
        alpha = 0.5 * (1.0 if staleness[0] <= 0 else 1.0 / (staleness[0] + 1.0))
        key = next(k for k in before if torch.is_floating_point(before[k]))
        want = (1 - alpha) * before[key].double() + alpha * local[key].double()
        seen.append((staleness[0], torch.allclose(algo.model.state_dict()[key].double(), want, atol=1e-7)))

    algo.server_update = spy
    driver = AsyncDriver(_sim(), algo.async_policy(3), algo, _selector(4, np.random.default_rng(1)))
    for _ in range(4):
        driver.advance()
    assert all(ok for _, ok in seen) and any(tau > 0 for tau, _ in seen)


def test_staleness_functions():
    assert staleness_weight("constant", 5) == 1.0
    assert staleness_weight("polynomial", 3, a=0.5) == pytest.approx(0.5)
    assert staleness_weight("hinge", 4, a=0.5, b=4.0) == 1.0
    assert staleness_weight("hinge", 6, a=0.5, b=4.0) == pytest.approx(0.5)
    assert staleness_weight("sqrt", 3) == pytest.approx(0.5)


@pytest.mark.parametrize(("name", "params", "field"), [
    ("fedasync", {"alpha": 0.0}, "alpha"),
    ("fedasync", {"alpha": 1.5}, "alpha"),
    ("fedbuff", {"server_lr": 0.0}, "server_lr"),
    ("fedbuff", {"staleness_scaling": "log"}, "staleness_scaling"),
    ("fedbuff", {"concurrency": 0}, "concurrency"),
])
def test_bad_parameters_are_one_line(name, params, field):
    with pytest.raises(ValueError) as info:
        ALGORITHMS.build(name, conformance_setup(3), **params)
    assert field in str(info.value) and "\n" not in str(info.value)


@pytest.mark.slow
def test_buffer_larger_than_the_concurrency_is_one_line():
    algo = ALGORITHMS.get("fedbuff")(conformance_setup(3), buffer_size=4, concurrency=3)
    with pytest.raises(ValueError, match=r"^buffer_size=4; allowed: an integer in \[1, concurrency=3\]"):
        algo.async_policy(10)


@pytest.mark.slow
def test_async_sfl_buffers_activations_and_models():
    """C = 3 clients, model buffer K = 2, activation buffer 2: every server step concatenates two
    uploads or (near a client's end) what is left, and w_c changes at each aggregation."""
    setup = conformance_setup(3)
    algo = ALGORITHMS.get("async_sfl")(setup, concurrency=3, buffer_size=2, activation_buffer=2)
    sizes = []
    step = algo.server_on_concatenation

    def spy(uploads):
        sizes.append(len(uploads))
        return step(uploads)

    algo.server_on_concatenation = spy
    sim = _sim()
    driver = AsyncDriver(sim, algo.async_policy(3), algo, _selector(4, np.random.default_rng(1)))
    before = {k: v.clone() for k, v in algo.client_side().state_dict().items()}
    aggs = [driver.advance() for _ in range(3)]
    assert [len(a.used) for a in aggs] == [2, 2, 2]
    assert sizes and all(1 <= n <= 2 for n in sizes) and sizes.count(2) > 0
    assert any(not torch.equal(before[k], v) for k, v in algo.client_side().state_dict().items())
    assert sim.counters.by_kind["uplink/activations"] > 0 and sim.counters.by_kind["uplink/client_model"] > 0
