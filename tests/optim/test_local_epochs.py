"""local_epochs: every sample of a client once per epoch, ceil(|D_k|/b) E iterations per client,
each one charged on the simulated clock; split algorithms run each client's own count."""
from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.fl.fedavg import FedAvg
from sfl_sim.algorithms.split.scala import CASFL
from sfl_sim.optim import TrainingSettings
from tests.optim.optim_test_helpers import BANDWIDTH_HZ, CLIENT_FLOPS_PER_S, run_rounds, setup_with

EPOCHS = TrainingSettings(local_epochs=3)


class RecordsBatches(FedAvg):
    """FedAvg noting which samples every local step used (images carry their sample index)."""

    def __init__(self, setup):
        super().__init__(setup)
        self.batches = {}

    def local_objective(self, client, model, x, y):
        self.batches.setdefault(client, []).append(x[:, 0, 0, 0].long().tolist())
        return super().local_objective(client, model, x, y)


def test_every_sample_once_per_epoch_in_batches_of_b() -> None:
    setup = setup_with([10, 7], batch_size=4, local_iterations=None, lr=0.05, settings=EPOCHS, index_images=True)
    algo = RecordsBatches(setup)
    run_rounds(algo, 1, cohort=(0, 1))
    for k, size in ((0, 10), (1, 7)):
        batches = algo.batches[k]
        per_epoch = math.ceil(size / 4)
        assert len(batches) == per_epoch * 3  # ceil(|D_k| / b) E iterations
        assert [len(b) for b in batches[:per_epoch]] == [4] * (size // 4) + ([size % 4] if size % 4 else [])
        own = set(setup.client_indices[k].tolist())
        orders = []
        for e in range(3):
            epoch = [i for b in batches[e * per_epoch:(e + 1) * per_epoch] for i in b]
            assert Counter(epoch) == Counter(own)  # each of the client's samples exactly once
            orders.append(epoch)
        assert orders[0] != orders[1] or orders[1] != orders[2]  # a fresh permutation each epoch


def test_a_client_smaller_than_b_uses_all_its_data_each_iteration() -> None:
    setup = setup_with([3], batch_size=8, local_iterations=None, lr=0.05, settings=EPOCHS, index_images=True)
    algo = RecordsBatches(setup)
    run_rounds(algo, 1)
    assert [sorted(b) for b in algo.batches[0]] == [[0, 1, 2]] * 3


def hand_rate_bps(distance_m: float, bandwidth_hz: float) -> float:
    gain = 10 ** (-(128.1 + 37.6 * math.log10(distance_m / 1000)) / 10)
    noise_w = 10 ** ((-174.0 - 30) / 10) * bandwidth_hz
    return bandwidth_hz * math.log2(1 + 0.2 * gain / noise_w)


def test_the_clock_charges_every_local_iteration() -> None:
    """One client, |D| = 10, b = 4, E = 3: 9 iterations over 30 samples.  The tiny model's local
    step costs 972 FLOPs per sample (conv 324 forward + 324 weight gradient; Linear(18, 3) 108
    forward + 108 weight gradient + 108 input gradient), then the model (80 + 228 bytes) goes up
    at the client's rate on the whole band (ideal downlink)."""
    setup = setup_with([10], batch_size=4, local_iterations=None, lr=0.05, settings=EPOCHS)
    algo = ALGORITHMS.get("fedavg")(setup)
    sim = run_rounds(algo, 1)
    assert sim.counters.client_flops == 972 * 10 * 3
    want_s = 972 * 30 / CLIENT_FLOPS_PER_S + 8 * (80 + 228) / hand_rate_bps(100.0, BANDWIDTH_HZ)
    assert sim.now_s == pytest.approx(want_s, rel=1e-9)


def test_split_clients_run_their_own_number_of_iterations() -> None:
    """SplitFedV1, |D| = 10 and 7, b = 4, E = 2: 6 and 4 iterations, every sample's activations
    sent twice, every sample charged on the client (conv forward 324 per sample)."""
    setup = setup_with([10, 7], batch_size=4, local_iterations=None, lr=0.05, settings=TrainingSettings(local_epochs=2))
    algo = ALGORITHMS.get("splitfed_v1")(setup)
    sim = run_rounds(algo, 1, cohort=(0, 1))
    by_kind = sim.counters.by_kind
    assert by_kind["uplink/activations"] == 18 * 4 * (10 + 7) * 2
    assert by_kind["client/client_forward"] == 324 * (10 + 7) * 2
    assert sim.last_round.dropped == {}


class RecordsConcatenations(CASFL):
    def __init__(self, setup):
        super().__init__(setup)
        self.sizes = []

    def server_on_concatenation(self, uploads):
        self.sizes.append([(u.client, len(u.labels)) for u in uploads])
        return super().server_on_concatenation(uploads)


def test_a_concatenation_holds_the_clients_still_iterating() -> None:
    """CA-SFL: client 0 has batches 4, 4, 2 per epoch, client 1 (7 samples) 4, 3; after client 1's
    4 iterations the server concatenates client 0's alone; nobody is dropped."""
    setup = setup_with([10, 7], batch_size=4, local_iterations=None, lr=0.05, settings=TrainingSettings(local_epochs=2))
    algo = RecordsConcatenations(setup)
    sim = run_rounds(algo, 1, cohort=(0, 1))
    assert algo.sizes == [[(0, 4), (1, 4)], [(0, 4), (1, 3)], [(0, 2), (1, 4)], [(0, 4), (1, 3)],
                          [(0, 4)], [(0, 2)]]
    assert sim.last_round.dropped == {}
    assert sim.counters.by_kind["uplink/labels"] == 8 * 34


@pytest.mark.parametrize("name", ["splitfed_v2", "sfl_local_loss", "besplit_g", "fedconcat", "splitfed_v3"])
def test_other_protocols_finish_a_round_with_local_epochs(name) -> None:
    setup = setup_with([10, 7], batch_size=4, local_iterations=None, lr=0.05, settings=TrainingSettings(local_epochs=1))
    algo = ALGORITHMS.get(name)(setup)
    sim = run_rounds(algo, 2, cohort=(0, 1))
    assert sim.now_s > 0 and sim.last_round.dropped == {}
    assert all(torch.isfinite(p).all() for p in algo.global_model().parameters())
