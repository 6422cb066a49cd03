"""FLOP counting of split parts against hand-computed numbers, and parameter bytes."""
import pytest
import torch
from torch import nn

from sfl_sim.models import build_model, count_model_flops, count_split_flops, parameter_bytes

# Tiny split: client Conv2d(1, 2, 3) on 1x5x5 -> (2, 3, 3) = 18 activations; server Linear(18, 3).
CONV_FWD = 2 * 2 * 3 * 3 * 1 * 3 * 3  # 2 * Cout * Hout * Wout * Cin * k * k = 324
LIN_FWD = 2 * 18 * 3  # 2 * in * out = 108


def tiny():
    torch.manual_seed(0)
    client = nn.Conv2d(1, 2, 3)
    server = nn.Sequential(nn.Flatten(), nn.Linear(18, 3))
    return client, server


@pytest.mark.parametrize("batch_size", [1, 2, 5])
def test_tiny_split_matches_hand_count(batch_size):
    client, server = tiny()
    flops = count_split_flops(client, server, (1, 5, 5), batch_size=batch_size)
    assert flops.client_forward_flops == CONV_FWD
    # First layer: the data needs no gradient, so only the weight gradient (1x forward).
    assert flops.client_backward_flops == CONV_FWD
    assert flops.server_forward_flops == LIN_FWD
    # Weight gradient + gradient w.r.t. the received activations (2x forward).
    assert flops.server_backward_flops == 2 * LIN_FWD
    assert flops.full_forward_flops == CONV_FWD + LIN_FWD
    assert flops.full_backward_flops == CONV_FWD + 2 * LIN_FWD
    assert flops.client_total_flops == 2 * CONV_FWD
    assert flops.server_total_flops == 3 * LIN_FWD


def test_unsplit_model_counts_first_layer_backward_once():
    client, server = tiny()
    fwd, bwd = count_model_flops(nn.Sequential(client, server), (1, 5, 5))
    assert (fwd, bwd) == (CONV_FWD + LIN_FWD, CONV_FWD + 2 * LIN_FWD)


def test_split_sums_equal_unsplit_alexnet():
    model = build_model("alexnet", (1, 28, 28), 10, conv_channels=(4, 6, 8, 8, 6), fc_features=(16, 12))
    fwd, bwd = count_model_flops(model, (1, 28, 28))
    # conv1 forward: 2 * 4 * 28 * 28 * 1 * 9 per sample.
    conv1 = 2 * 4 * 28 * 28 * 9
    for point in model.split_points:
        flops = count_split_flops(*model.split(point), (1, 28, 28))
        assert flops.full_forward_flops == fwd
        assert flops.full_backward_flops == bwd
    s1 = count_split_flops(*model.split("S1"), (1, 28, 28))
    assert s1.client_forward_flops == conv1 and s1.client_backward_flops == conv1


def test_counting_changes_no_state():
    client, server = tiny()
    server.eval()
    client.weight.grad = torch.full_like(client.weight, 7.0)
    before = [p.detach().clone() for p in list(client.parameters()) + list(server.parameters())]
    rng = torch.get_rng_state()
    count_split_flops(client, server, (1, 5, 5))
    after = list(client.parameters()) + list(server.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    assert torch.equal(client.weight.grad, torch.full_like(client.weight, 7.0))
    assert client.bias.grad is None and all(p.grad is None for p in server.parameters())
    assert client.training and not server.training and not server[1].training
    assert torch.equal(torch.get_rng_state(), rng)


def test_batchnorm_buffers_restored():
    client = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    server = nn.Sequential(nn.Flatten(), nn.Linear(18, 3))
    stats = [b.clone() for b in client.buffers()]
    count_split_flops(client, server, (1, 5, 5))
    assert all(torch.equal(a, b) for a, b in zip(stats, client.buffers()))


def test_invalid_arguments():
    client, server = tiny()
    with pytest.raises(ValueError, match="batch_size = 0"):
        count_split_flops(client, server, (1, 5, 5), batch_size=0)
    with pytest.raises(ValueError, match="input_shape"):
        count_split_flops(client, server, (1, 0, 5))
    with pytest.raises(ValueError, match="2-D logits"):
        count_split_flops(client, nn.Identity(), (1, 5, 5))


def test_parameter_bytes_hand_count():
    module = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    # Linear: 3*4 + 4 float32; BatchNorm: weight, bias, running mean, running var (4 each, float32)
    # and num_batches_tracked (one int64).
    expected = (12 + 4) * 4 + 4 * 4 * 4 + 8
    assert parameter_bytes(module) == expected
    assert parameter_bytes(module.to(torch.float64)) == (12 + 4 + 16) * 8 + 8
