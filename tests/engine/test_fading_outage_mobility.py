"""Engine: fading per coherence block, outage retransmissions in simulated time, mobility between rounds."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import yaml

from sfl_sim.channel import (
    Cell,
    EqualAllocation,
    FixedDistancePlacement,
    NoShadowing,
    OutagePolicy,
    RayleighFading,
    ShannonRate,
    TR36814Macro,
)
from sfl_sim.cli import main
from sfl_sim.engine import DELIVERED, Lost, Simulator

NBYTES = 10_000


def _cell(fading=None) -> Cell:
    rng = np.random.default_rng(0)
    return Cell(FixedDistancePlacement([100.0, 450.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e6, placement_rng=rng, shadowing_rng=rng, fading=fading)


def _uploads(sim: Simulator, client: int, n: int) -> tuple[list[float], list[bool]]:
    """Run a round in which ``client`` uploads NBYTES ``n`` times in a row; durations and results."""
    durations, results = [], []

    def round_process(ctx):
        for _ in range(n):
            start = ctx.now_s
            delivered = yield ctx.upload(client, NBYTES, "payload")
            durations.append(ctx.now_s - start)
            results.append(delivered)

    sim.run_round(round_process, np.array([0, 1]))
    return durations, results


def test_outage_retransmits_then_drops_and_takes_time() -> None:
    cell = _cell()
    rate_far = float(cell.uplink_rates_bps([0, 1])[1])
    threshold = 2 * rate_far  # the far client can never make it
    policy = OutagePolicy(min_rate_bps=threshold, max_attempts=3, on_outage="retransmit")
    sim = Simulator(cell, np.ones(2), 1.0, outage=policy)
    durations, results = _uploads(sim, 1, 1)
    assert results == [Lost("outage")]
    assert durations[0] == pytest.approx(3 * 8 * NBYTES / threshold)
    assert sim.counters.retransmissions == 2 and sim.counters.dropped_transmissions == 1
    assert sim.counters.uplink_bytes == 3 * NBYTES  # every attempt was on the air


def test_client_above_threshold_is_unaffected() -> None:
    cell = _cell()
    rates = cell.uplink_rates_bps([0, 1])
    threshold = float(rates[0] + rates[1]) / 2  # between the far and the near client's rates
    sim = Simulator(cell, np.ones(2), 1.0,
                    outage=OutagePolicy(min_rate_bps=threshold, max_attempts=3, on_outage="retransmit"))
    durations, results = _uploads(sim, 0, 1)
    assert results == [DELIVERED] and durations[0] == pytest.approx(8 * NBYTES / rates[0])
    assert sim.counters.retransmissions == 0


@pytest.mark.slow
def test_fading_retransmissions_lengthen_simulated_time() -> None:
    cell = _cell(RayleighFading())
    median_rate = float(cell.uplink_rates_bps([0, 1])[0])
    totals = {}
    retransmit = OutagePolicy(min_rate_bps=median_rate, max_attempts=8, on_outage="retransmit")
    for name, policy in (("none", None), ("outage", retransmit)):
        sim = Simulator(cell, np.ones(2), 1.0, fading_rng=np.random.default_rng(5), coherence="per_transmission",
                        outage=policy)
        durations, results = _uploads(sim, 0, 200)
        totals[name] = (sum(durations), sim.counters.retransmissions)
    assert totals["outage"][1] > 20
    assert totals["outage"][0] > totals["none"][0]


def test_coherence_per_round_keeps_the_rate_per_transmission_redraws_it() -> None:
    for coherence, distinct in (("per_round", 1), ("per_transmission", 5)):
        sim = Simulator(_cell(RayleighFading()), np.ones(2), 1.0, fading_rng=np.random.default_rng(1),
                        coherence=coherence)
        durations, _ = _uploads(sim, 0, 5)
        assert len(set(np.round(np.array(durations) / durations[0], 9))) == distinct


def test_coherence_per_iteration_redraws_when_the_block_changes() -> None:
    sim = Simulator(_cell(RayleighFading()), np.ones(2), 1.0, fading_rng=np.random.default_rng(2),
                    coherence="per_iteration")
    durations = []

    def round_process(ctx):
        for block in (0, 0, 1, 1):
            start = ctx.now_s
            yield ctx.upload(0, NBYTES, "payload", block=block)
            durations.append(ctx.now_s - start)

    sim.run_round(round_process, np.array([0, 1]))
    assert durations[0] == pytest.approx(durations[1], rel=1e-9)
    assert durations[2] == pytest.approx(durations[3], rel=1e-9)
    assert durations[1] != pytest.approx(durations[2], rel=1e-6)


@pytest.mark.slow
def test_clients_move_between_rounds(tmp_path: Path) -> None:
    from tests.runs.test_end_to_end import SMALL

    data = {**SMALL, "rounds": 2, "algorithms": [{"name": "fedavg"}],
            "cell": {"mobility": {"name": "random_direction", "speed_m_per_s": 5.0}}}
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["scenario", str(path), "-o", str(tmp_path / "o"), "--no-progress"]) == 0
    run_dir = tmp_path / "o" / "fedavg"
    with (run_dir / "cell.csv").open() as fh:
        start = np.array([[float(r["x_m"]), float(r["y_m"])] for r in csv.DictReader(fh)])
    from sfl_sim.runs import checkpoint

    moved = checkpoint.load(run_dir / "checkpoint.pt").cell["positions_m"]
    step = np.linalg.norm(moved - start, axis=1)
    assert np.all(step > 0)
    with (run_dir / "rounds.csv").open() as fh:
        sim_end_s = float(list(csv.DictReader(fh))[-1]["sim_time_s"])
    assert np.all(step <= 5.0 * sim_end_s + 1e-6)  # no faster than the speed allows


def test_payload_aware_allocation_sees_the_declared_payloads() -> None:
    from sfl_sim.channel import ProportionalPayloadAllocation

    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([100.0, 450.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                ProportionalPayloadAllocation(), n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e6, placement_rng=rng, shadowing_rng=rng)
    shares = []

    def round_process(ctx):
        shares.append((ctx.uplink_share_hz(0), ctx.uplink_share_hz(1)))  # no payloads yet: equal
        ctx.allocate_uplink({0: 1e6, 1: 3e6})
        shares.append((ctx.uplink_share_hz(0), ctx.uplink_share_hz(1)))
        yield ctx.upload(1, NBYTES, "payload")

    Simulator(cell, np.ones(2), 1.0).run_round(round_process, np.array([0, 1]))
    assert shares[0] == pytest.approx((5e5, 5e5))
    assert shares[1] == pytest.approx((2.5e5, 7.5e5))


@pytest.mark.slow
def test_split_uploads_see_a_new_fading_draw_per_local_iteration(tmp_path: Path) -> None:
    """coherence: per_iteration redraws fading at every local iteration of a split algorithm
    (its uploads name their iteration as the coherence block); per_round keeps one draw."""
    from tests.runs.test_end_to_end import SMALL

    durations = {}
    for coherence in ("per_round", "per_iteration"):
        data = {**SMALL, "rounds": 1, "algorithms": [{"name": "scala"}],
                "training": {**SMALL["training"], "local_iterations": 3},
                "cell": {"fading": {"name": "rayleigh"}, "coherence": coherence}}
        path = tmp_path / f"{coherence}.yaml"
        path.write_text(yaml.safe_dump(data))
        assert main(["scenario", str(path), "-o", str(tmp_path / coherence), "--no-progress"]) == 0
        with (tmp_path / coherence / "scala" / "rounds.csv").open() as fh:
            durations[coherence] = float(next(csv.DictReader(fh))["round_sim_time_s"])
    assert durations["per_round"] != durations["per_iteration"]


@pytest.mark.parametrize("policy", [None, OutagePolicy(), OutagePolicy(max_attempts=3, on_outage="retransmit")])
def test_zero_rate_out_of_range_is_an_outage_not_a_division_by_zero(policy) -> None:
    from sfl_sim.channel import McsTableRate

    # At 10 uW the SNRs are +6.5 dB (100 m) and -18 dB (450 m, below CQI 1: rate 0).
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([100.0, 450.0]), TR36814Macro(), NoShadowing(), McsTableRate(),
                EqualAllocation(), n_clients=2, tx_power_w=1e-5, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e6, placement_rng=rng, shadowing_rng=rng)
    rates = cell.uplink_rates_bps([0, 1])
    assert rates[0] > 0 and rates[1] == 0.0
    sim = Simulator(cell, np.ones(2), 1.0, outage=policy)
    durations, results = _uploads(sim, 1, 1)
    attempts = 1 if policy is None else policy.max_attempts
    assert results == [Lost("outage")] and durations == [0.0]  # nothing granted, no air time
    assert sim.counters.dropped_transmissions == 1 and sim.counters.retransmissions == attempts - 1
    durations, results = _uploads(Simulator(cell, np.ones(2), 1.0, outage=policy), 0, 1)
    assert results == [DELIVERED] and durations[0] == pytest.approx(8 * NBYTES / rates[0])
