"""BESplit-G / BESplit-A over the two-client cell: traffic, FLOPs, BCC plan and routing, evaluation."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.split.besplit import BESplitA, BESplitG
from sfl_sim.algorithms.terms import besplit as bt
from tests.algorithms.split.split_protocol_helpers import (
    ACT_BYTES_PER_SAMPLE,
    CLIENT_MODEL_BYTES,
    LABEL_BYTES_PER_SAMPLE,
    round_counts,
    simulator,
)
from tests.helpers import tiny_setup

B_K, T, N = 4, 2, 2
SAMPLES = N * T * B_K


def test_besplit_g_round_counts_as_splitfed_v1() -> None:
    got = round_counts(simulator(), BESplitG(tiny_setup(local_iterations=T)), [0, 1])
    ref = round_counts(simulator(), ALGORITHMS.get("splitfed_v1")(tiny_setup(local_iterations=T)), [0, 1])
    # First round: no records yet, so no BCC pair; same messages and FLOPs as SplitFedV1.
    assert got["by_kind"] == ref["by_kind"]
    assert got["by_kind"]["uplink/activations"] == SAMPLES * ACT_BYTES_PER_SAMPLE
    assert got["by_kind"]["uplink/labels"] == SAMPLES * LABEL_BYTES_PER_SAMPLE


def test_besplit_a_extra_traffic_and_compute() -> None:
    algo = BESplitA(tiny_setup(local_iterations=T))
    got = round_counts(simulator(), algo, [0, 1])
    assert got["by_kind"]["downlink/teacher_logits"] == SAMPLES * 3 * 4  # B_k x N float32 per iteration
    assert got["by_kind"]["uplink/client_model"] == N * CLIENT_MODEL_BYTES
    assert got["by_kind"]["client/aux_step"] == pytest.approx(SAMPLES * algo.meter.flops_per_sample["aux_step"])
    assert algo.meter.flops_per_sample["aux_step"] > 0
    assert not any("aux" in k and ("uplink" in k or "downlink" in k) for k in got["by_kind"])
    assert sorted(algo.aux_models) == [0, 1]
    # The auxiliary models are personal and trained: they differ from each other and from the global client side.
    w0, w1 = algo.aux_models[0][0][0].weight, algo.aux_models[1][0][0].weight
    assert not torch.equal(w0, w1)


def test_records_and_ea_weights_after_a_round() -> None:
    algo = BESplitG(tiny_setup(local_iterations=T))
    round_counts(simulator(), algo, [0, 1])
    assert sorted(algo.records) == [0, 1]
    # Client 0 holds labels {0, 1}, client 1 labels {1, 2}; each saw T * B_k samples.
    assert algo.records[0].counts.sum() == T * B_K and algo.records[0].counts[2] == 0
    assert algo.records[1].counts[0] == 0 and algo.records[0].last_round == 1
    w = bt.ea_weights([algo.records[0], algo.records[1]])
    assert w.sum() == pytest.approx(1.0) and np.all(w > 0)


def _set_records(algo, counts):
    algo.records = {k: bt.StateRecord(np.zeros((3, 3)), np.asarray(c, float), np.zeros(3), np.zeros(3), 1)
                    for k, c in counts.items()}


def test_bcc_plan_from_records() -> None:
    algo = BESplitG(tiny_setup(n_clients=3))
    _set_records(algo, {0: [10, 0, 0], 1: [0, 0, 10], 2: [3, 4, 3]})
    pairs, share = algo.plan_bcc([0, 1, 2])
    # P_g = [13, 4, 13] / 30; clients 0 and 1 are equally far, 2 close: the largest gap isolates {0, 1}.
    assert pairs == [(0, 1)]
    # No evidence in the records: EA weights equal -> case 3, midpoint of [13/30, 17/30] / 1 = 0.5.
    assert share[(0, 1)] == {0: pytest.approx(0.5)}
    assert share[(1, 0)] == {2: pytest.approx(0.5)}
    assert BESplitG(tiny_setup(n_clients=3), bcc=False).plan_bcc([0, 1, 2]) == ([], {})
    rows = algo.shared_rows(torch.tensor([0, 1, 0, 0, 2, 0]), {0: 0.5})
    assert rows.tolist() == [0, 2]


@pytest.mark.parametrize("cls", [BESplitG, BESplitA])
def test_bcc_pair_step_routes_gradients_to_their_owner(cls) -> None:
    """Force a pair (0, 1): the server job steps both copies on own + shared rows, each client gets
    a gradient (and, BESplit-A, teacher logits) for its own B_k rows only; server FLOPs grow by the
    shared rows."""
    algo = cls(tiny_setup(local_iterations=1))
    ref = cls(tiny_setup(local_iterations=1), bcc=False)
    # Client 0's batch holds labels {0, 1}; share all its class-0 rows with 1, class-2 rows of 1 with 0.
    algo.plan_bcc = lambda clients: ([(0, 1)], {(0, 1): {0: 1.0}, (1, 0): {2: 1.0}})
    seen = {}
    original = algo.server_on_pair

    def spy(servers, a, b, a_to_b, b_to_a):
        replies = original(servers, a, b, a_to_b, b_to_a)
        seen.update({a.client: replies[0], b.client: replies[1]})
        return replies

    algo.server_on_pair = spy
    got = round_counts(simulator(), algo, [0, 1])
    base = round_counts(simulator(), ref, [0, 1])
    for k in (0, 1):
        assert seen[k].activation_grad.shape[0] == B_K
        if cls is BESplitA:
            assert seen[k].extras["teacher_logits"].shape == (B_K, 3)
        else:
            assert not seen[k].extras  # BESplit-G sends no teacher logits
    per_sample = algo.meter.flops_per_sample["server_step"]
    extra = got["server_flops"] - base["server_flops"]
    assert extra > 0 and extra / per_sample == pytest.approx(round(extra / per_sample))
    # Downlink gradient bytes are unchanged: shared rows' gradients are folded into the owner's G_k.
    assert got["by_kind"]["downlink/activation_gradients"] == base["by_kind"]["downlink/activation_gradients"]
    assert algo.records[0].counts.sum() == B_K and algo.records[1].counts.sum() == B_K  # own rows only


def test_besplit_a_evaluates_auxiliary_models_not_the_global_one() -> None:
    algo = BESplitA(tiny_setup(local_iterations=T), eval_on="global")
    round_counts(simulator(), algo, [0, 1])
    scored = []

    def fake(model, x, y, batch_size):
        scored.append(model)
        return (0.25 if model is algo.aux_models[0] else 0.75), 1.0

    acc, loss = algo.evaluate(fake, torch.zeros(2, 1, 5, 5), torch.zeros(2, dtype=torch.int64), 2)
    assert scored == [algo.aux_models[0], algo.aux_models[1]]
    assert all(m is not algo.global_model() for m in scored)
    assert (acc, loss) == (pytest.approx(0.5), pytest.approx(1.0))
    x = torch.randn(3, 1, 5, 5)
    assert not torch.allclose(algo.aux_models[0](x), algo.global_model()(x))
    # Only client 1 in the next round: "cohort" scores its auxiliary model only, "all" both.
    round_counts(simulator(), algo, [1])
    assert algo.evaluation_pairs() == [(1, algo.aux_models[1])]
    algo.params = algo.params.model_copy(update={"eval_clients": "all"})
    assert algo.evaluation_pairs() == [(0, algo.aux_models[0]), (1, algo.aux_models[1])]
    g = BESplitG(tiny_setup())
    assert g.evaluation_pairs() == [(None, g.global_model())]


def test_besplit_a_local_evaluation_weights_classes_by_the_client_distribution() -> None:
    setup = tiny_setup(local_iterations=T)
    setup.train_y[setup.client_indices[0]] = torch.tensor([0, 0, 0, 0, 0, 0, 1, 1])  # P_0 = (3/4, 1/4, 0)
    algo = BESplitA(setup)  # eval_on="local" by default; client 1 holds P_1 = (0, 1/2, 1/2)
    round_counts(simulator(), algo, [0, 1])
    per_class_acc = {0: 1.0, 1: 0.0, 2: 0.5}
    calls = []

    def fake(model, x, y, batch_size):
        calls.append((model, sorted(set(y.tolist()))))
        n = int(y[0])
        return per_class_acc[n] + (0.1 if model is algo.aux_models[1] else 0.0), float(n)

    x, y = torch.randn(6, 1, 5, 5), torch.tensor([0, 1, 2, 0, 1, 2])
    scores = algo.evaluate(fake, x, y, 4)
    acc, loss = scores
    # Every call sees one class only; every class is scored once per model (classes.csv), and the
    # local score weights only the classes the client holds.
    assert calls == [(algo.aux_models[0], [0]), (algo.aux_models[0], [1]), (algo.aux_models[0], [2]),
                     (algo.aux_models[1], [0]), (algo.aux_models[1], [1]), (algo.aux_models[1], [2])]
    acc_0, acc_1 = 0.75 * 1.0 + 0.25 * 0.0, 0.5 * 0.1 + 0.5 * 0.6
    loss_0, loss_1 = 0.75 * 0 + 0.25 * 1, 0.5 * 1 + 0.5 * 2
    assert acc == pytest.approx((acc_0 + acc_1) / 2)
    assert loss == pytest.approx((loss_0 + loss_1) / 2)
    # Per-class accuracy: the mean over the evaluated auxiliary models of each class's accuracy.
    assert scores.class_accuracy.tolist() == pytest.approx([1.05, 0.05, 0.55])
    # A test set without any of client 0's classes: that client is scored on all of it.
    calls.clear()
    y2 = torch.tensor([2, 2, 2, 2, 2, 2])
    algo.evaluate(fake, x, y2, 4)
    assert calls[0] == (algo.aux_models[0], [2])
    # With the real scorer, "local" and "global" differ for personal models on a skewed split.
    from sfl_sim.runs.runner import evaluate
    local = algo.evaluate(evaluate, x, y, 4)
    algo.params = algo.params.model_copy(update={"eval_on": "global"})
    assert local != algo.evaluate(evaluate, x, y, 4)


def test_evaluation_descriptions_say_what_is_scored() -> None:
    assert BESplitG(tiny_setup()).evaluation_description() is None  # the global model (summary.json names it)
    local = BESplitA(tiny_setup()).evaluation_description()
    assert "auxiliary" in local and "label distribution" in local and "latest cohort" in local
    glob = BESplitA(tiny_setup(), eval_on="global", eval_clients="all").evaluation_description()
    assert "whole test set" in glob and "every client" in glob


def test_besplit_a_aux_head_choices() -> None:
    pooled = BESplitA(tiny_setup())
    flat = BESplitA(tiny_setup(), aux_head="flatten")
    assert isinstance(pooled._aux_head_init[0], torch.nn.AdaptiveAvgPool2d)
    assert isinstance(flat._aux_head_init[0], torch.nn.Flatten)
    n_pooled = sum(p.numel() for p in pooled._aux_head_init.parameters())
    n_flat = sum(p.numel() for p in flat._aux_head_init.parameters())
    assert n_flat > n_pooled


def test_runner_evaluate_hook_defaults_to_global_model() -> None:
    from sfl_sim.runs.runner import evaluate
    algo = ALGORITHMS.get("splitfed_v1")(tiny_setup())
    x, y = torch.randn(6, 1, 5, 5), torch.tensor([0, 1, 2, 0, 1, 2])
    assert algo.evaluate(evaluate, x, y, 4) == evaluate(algo.global_model(), x, y, 4)


def test_state_round_trips() -> None:
    algo = BESplitA(tiny_setup(local_iterations=1))
    round_counts(simulator(), algo, [0, 1])
    other = BESplitA(tiny_setup(local_iterations=1))
    other.load_state_dict(algo.state_dict())
    for k in (0, 1):
        np.testing.assert_array_equal(other.records[k].counts, algo.records[k].counts)
        for p, q in zip(algo.aux_models[k].parameters(), other.aux_models[k].parameters(), strict=True):
            assert torch.equal(p, q)
    assert other._round == 1 and other.last_finished == [0, 1]


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(ValueError, match="evidence"):
        BESplitG(tiny_setup(), evidence="sigmoid")
    with pytest.raises(ValueError, match="eval_clients"):
        BESplitA(tiny_setup(), eval_clients="best")
    with pytest.raises(ValueError, match="eval_on"):
        BESplitA(tiny_setup(), eval_on="test")
    with pytest.raises(ValueError, match="aux_head"):
        BESplitA(tiny_setup(), aux_head="mlp")
    with pytest.raises(ValueError, match="ema_beta"):
        BESplitG(tiny_setup(), ema_beta=1.5)
    with pytest.raises(ValueError, match="dtd"):
        BESplitG(tiny_setup(), dtd=True)
