"""FLOPs per sample of the concatenated server step, against a count by hand.

The default scenario's AlexNet (conv widths 32, 64, 128, 128, 64; fc 256, 256; Fashion-MNIST
1x28x28, 10 classes) split at S2 leaves on the server conv3..conv5 at 7x7 (pool to 3x3) and three
linear layers.  With F the server part's forward FLOPs (2 per multiply-accumulate, conv and linear
only, as torch's flop registry counts) and F_1 those of its first layer:

* one backward computing the weight gradients and the activation gradient costs 2F, so a step of
  forward + one backward is 3F (SplitFedV1, and CA-SFL, whose server and client losses coincide);
* SCALA needs two backwards: the weight gradients of the P_s-adjusted loss (2F - F_1: no gradient
  into the activations) and the activation gradient of the P_k-adjusted loss (F): 4F - F_1.
"""
from __future__ import annotations

import copy

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.algorithms import ALGORITHMS, TrainingSetup
from sfl_sim.algorithms.split.messages import ClientActivations
from sfl_sim.models import build_model

CONV = (32, 64, 128, 128, 64)
FC = (256, 256)
ACTS = (64, 7, 7)  # after conv blocks 1-2 on 1x28x28


def _hand_forward_flops(server: nn.Module) -> list[int]:
    """Forward FLOPs per sample of each conv/linear layer of the S2 server part, by formula:
    2 Cin Cout k^2 H W for a 3x3/padding-1 conv at H x W, 2 n_in n_out for a linear layer; the
    spatial size is followed by hand (padded 3x3 convs keep it, a 2x2 max-pool halves it)."""
    flops, side = [], ACTS[1]
    for layer in server.modules():
        if isinstance(layer, nn.Conv2d):
            flops.append(2 * layer.in_channels * layer.out_channels * 3 * 3 * side * side)
        elif isinstance(layer, nn.MaxPool2d):
            side //= 2
        elif isinstance(layer, nn.Linear):
            flops.append(2 * layer.in_features * layer.out_features)
    return flops


def _setup() -> TrainingSetup:
    torch.manual_seed(0)
    model = build_model("alexnet", (1, 28, 28), 10, conv_channels=CONV, fc_features=FC)
    x = torch.zeros(8, 1, 28, 28)
    y = torch.arange(8) % 10
    return TrainingSetup(model=model, split_point="S2", train_x=x, train_y=y,
                         client_indices=[torch.arange(4), torch.arange(4, 8)], num_classes=10, batch_size=4,
                         local_iterations=1, learning_rate=0.01, device=torch.device("cpu"),
                         minibatch_rng=np.random.default_rng(0))


def _server_step_flops_per_sample(name: str) -> float:
    algo = ALGORITHMS.get(name)(_setup())
    gen = torch.Generator().manual_seed(1)
    uploads = [ClientActivations(0, torch.randn(3, *ACTS, generator=gen), torch.tensor([0, 1, 1])),
               ClientActivations(1, torch.randn(2, *ACTS, generator=gen), torch.tensor([2, 3]))]
    _, flops = algo.meter.run("server_step", 5, lambda: algo.server_on_concatenation(uploads))
    return flops / 5


def test_hand_count_is_the_default_alexnet_server_part() -> None:
    per_layer = _hand_forward_flops(_setup().model.split("S2")[1])
    assert len(per_layer) == 6 and sum(per_layer) == 29_332_480  # 29.3 MFLOP per sample forward


def test_ca_sfl_server_step_is_one_forward_and_one_backward() -> None:
    forward = sum(_hand_forward_flops(_setup().model.split("S2")[1]))
    assert _server_step_flops_per_sample("ca_sfl") == 3 * forward  # 88.0 MFLOP, as SplitFedV1


def test_scala_server_step_needs_two_backwards() -> None:
    per_layer = _hand_forward_flops(_setup().model.split("S2")[1])
    forward = sum(per_layer)
    assert _server_step_flops_per_sample("scala") == 4 * forward - per_layer[0]  # 110.1 MFLOP


def test_ca_sfl_single_backward_gives_each_client_its_own_loss_gradient() -> None:
    """G_k is the gradient of client k's own mean cross-entropy, w_s steps on the mean over the
    concatenation (checked against an independent computation, dropout off)."""
    algo = ALGORITHMS.get("ca_sfl")(_setup())
    assert algo.losses_coincide and not ALGORITHMS.get("scala")(_setup()).losses_coincide
    algo.server_model.eval()
    ref = copy.deepcopy(algo.server_model)
    gen = torch.Generator().manual_seed(2)
    uploads = [ClientActivations(0, torch.randn(3, *ACTS, generator=gen), torch.tensor([0, 1, 1])),
               ClientActivations(1, torch.randn(2, *ACTS, generator=gen), torch.tensor([2, 3]))]
    want = []
    for u in uploads:
        a = u.activations.clone().requires_grad_(True)
        want.append(torch.autograd.grad(F.cross_entropy(ref(a), u.labels), a)[0])
    F.cross_entropy(ref(torch.cat([u.activations for u in uploads])), torch.cat([u.labels for u in uploads])).backward()
    with torch.no_grad():
        for p in ref.parameters():
            p -= algo.setup.learning_rate * p.grad
    got = algo.server_on_concatenation(uploads)
    for reply, g in zip(got, want, strict=True):
        torch.testing.assert_close(reply.activation_grad, g)
    for p, q in zip(algo.server_model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q)
