"""ResNet-18 and VGG-11: shapes at every split point, client∘server == full, FLOPs, BN averaging."""
import copy

import pytest
import torch
from torch import nn

from sfl_sim.algorithms.base import weighted_average
from sfl_sim.models import MODELS, SplittableModel, build_model
from sfl_sim.models.resnet import ResNet18
from sfl_sim.models.vgg import VGG11

RESNET_SMALL = dict(width=4)  # channels 4-8-16-32
VGG_SMALL = dict(conv_channels=(4, 6, 8, 8, 12, 12, 12, 12), fc_features=(16, 12))

RESNET_ACTS = {
    (1, 28, 28): {"S1": (4, 28, 28), "S2": (4, 28, 28), "S3": (8, 14, 14), "S4": (16, 7, 7),
                  "B1": (4, 28, 28), "B2": (4, 28, 28), "B3": (8, 14, 14), "B4": (8, 14, 14),
                  "B5": (16, 7, 7), "B6": (16, 7, 7), "B7": (32, 4, 4), "B8": (32, 4, 4)},
    (3, 32, 32): {"S1": (4, 32, 32), "S2": (4, 32, 32), "S3": (8, 16, 16), "S4": (16, 8, 8),
                  "B1": (4, 32, 32), "B2": (4, 32, 32), "B3": (8, 16, 16), "B4": (8, 16, 16),
                  "B5": (16, 8, 8), "B6": (16, 8, 8), "B7": (32, 4, 4), "B8": (32, 4, 4)},
}
VGG_ACTS = {
    (1, 28, 28): {"S1": (4, 14, 14), "S2": (6, 7, 7), "S3": (8, 7, 7), "S4": (8, 3, 3),
                  "S5": (12, 3, 3), "S6": (12, 1, 1), "S7": (12, 1, 1), "S8": (12, 1, 1)},
    (3, 32, 32): {"S1": (4, 16, 16), "S2": (6, 8, 8), "S3": (8, 8, 8), "S4": (8, 4, 4),
                  "S5": (12, 4, 4), "S6": (12, 2, 2), "S7": (12, 2, 2), "S8": (12, 1, 1)},
}
CASES = [("resnet18", RESNET_SMALL, RESNET_ACTS), ("vgg11", VGG_SMALL, VGG_ACTS)]


def _train_a_step(model: nn.Module, shape, seed: int = 0) -> None:
    """One SGD step in train mode so BN running statistics and weights move away from init."""
    torch.manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    x = torch.randn(6, *shape)
    loss = nn.functional.cross_entropy(model(x), torch.randint(0, 10, (6,)))
    opt.zero_grad()
    loss.backward()
    opt.step()


def test_registered():
    assert {"resnet18", "vgg11"} <= set(MODELS.names())
    assert isinstance(build_model("resnet18", (3, 32, 32), 10, **RESNET_SMALL), ResNet18)
    assert isinstance(build_model("vgg11", (3, 32, 32), 10, **VGG_SMALL), VGG11)


@pytest.mark.parametrize("name, params, acts", CASES)
@pytest.mark.parametrize("input_shape", [(1, 28, 28), (3, 32, 32)])
def test_shapes_and_every_split_matches_full_forward(name, params, acts, input_shape):
    torch.manual_seed(0)
    model = build_model(name, input_shape, 10, **params)
    _train_a_step(model, input_shape)  # non-trivial BN statistics
    model.eval()
    x = torch.randn(3, *input_shape)
    with torch.no_grad():
        full = model(x)
    assert full.shape == (3, 10)
    expected = acts[input_shape]
    assert list(model.split_points) == list(expected)
    for point, act_shape in expected.items():
        client, server = model.split(point)
        assert len(client) + len(server) == len(model.blocks)
        with torch.no_grad():
            act = client(x)
            out = server(act)
        assert act.shape == (3, *act_shape), point
        assert model.activation_shape(point) == act_shape
        torch.testing.assert_close(out, full, rtol=0, atol=0)


def test_default_split_points_and_paper_widths():
    resnet = ResNet18((3, 32, 32), 10)
    assert resnet.default_split_point == "S2"
    assert [resnet.split_points[p] for p in ("S1", "S2", "S3", "S4")] == [1, 3, 5, 7]
    # The standard CIFAR ResNet-18 has 11 173 962 parameters for 10 classes.
    assert sum(p.numel() for p in resnet.parameters()) == 11_173_962
    assert resnet.activation_shape("S2") == (64, 32, 32)
    assert resnet.training

    vgg = VGG11((3, 32, 32), 10)
    assert vgg.default_split_point == "S2"
    assert vgg.conv_channels == (64, 128, 256, 256, 512, 512, 512, 512)
    assert vgg.activation_shape("S2") == (128, 8, 8)  # after the second conv layer
    assert sum(isinstance(m, nn.BatchNorm2d) for m in vgg.modules()) == 8
    plain = VGG11((3, 32, 32), 10, batch_norm=False, **VGG_SMALL)
    assert not any(isinstance(m, nn.BatchNorm2d) for m in plain.modules())
    assert all(m.bias is not None for m in plain.modules() if isinstance(m, nn.Conv2d))


@pytest.mark.parametrize("name, params, allowed", [
    ("resnet18", RESNET_SMALL, "S1, S2, S3, S4, B1, B2, B3, B4, B5, B6, B7, B8"),
    ("vgg11", VGG_SMALL, "S1, S2, S3, S4, S5, S6, S7, S8"),
])
def test_unknown_split_point_lists_allowed(name, params, allowed):
    model = build_model(name, (3, 32, 32), 10, **params)
    with pytest.raises(ValueError) as info:
        model.split("S9")
    assert str(info.value) == f"split point 'S9' does not exist for {name}; allowed: {allowed}"


@pytest.mark.parametrize("name, params", [("resnet18", RESNET_SMALL), ("vgg11", VGG_SMALL)])
def test_batchnorm_buffers_survive_weighted_average(name, params):
    shape = (3, 32, 32)
    torch.manual_seed(0)
    base = build_model(name, shape, 10, **params)
    a, b = copy.deepcopy(base), copy.deepcopy(base)
    _train_a_step(a, shape, seed=1)
    _train_a_step(b, shape, seed=2)
    _train_a_step(b, shape, seed=3)
    sa, sb = a.state_dict(), b.state_dict()
    avg = weighted_average([sa, sb], [1.0, 3.0])
    assert set(avg) == set(sa)
    bn_keys = [k for k in sa if k.endswith(("running_mean", "running_var", "num_batches_tracked"))]
    assert bn_keys, "model has no BatchNorm buffers"
    for key in sa:
        assert avg[key].dtype == sa[key].dtype and avg[key].shape == sa[key].shape, key
        if key.endswith("num_batches_tracked"):
            assert avg[key].dtype == torch.int64
            assert torch.equal(avg[key], sa[key])  # integer counters are copied, not averaged
        else:
            torch.testing.assert_close(avg[key], 0.25 * sa[key] + 0.75 * sb[key])
    fresh = build_model(name, shape, 10, **params)
    fresh.load_state_dict(avg)  # strict: every buffer present with the right shape
    fresh.eval()
    with torch.no_grad():
        assert torch.isfinite(fresh(torch.randn(2, *shape))).all()
    running_var = [k for k in bn_keys if k.endswith("running_var")][0]
    assert not torch.equal(avg[running_var], sa[running_var])


@pytest.mark.parametrize("cls, kwargs, field", [
    (ResNet18, dict(input_shape=(3, 4, 32), num_classes=10), "input_shape"),
    (ResNet18, dict(input_shape=(32, 32), num_classes=10), "input_shape"),
    (ResNet18, dict(input_shape=(3, 32, 32), num_classes=1), "num_classes"),
    (ResNet18, dict(input_shape=(3, 32, 32), num_classes=10, width=0), "width"),
    (ResNet18, dict(input_shape=(3, 32, 32), num_classes=10, zero_init_residual=1), "zero_init_residual"),
    (VGG11, dict(input_shape=(3, 7, 32), num_classes=10), "input_shape"),
    (VGG11, dict(input_shape=(3, 32, 32), num_classes=10, batch_norm="yes"), "batch_norm"),
    (VGG11, dict(input_shape=(3, 32, 32), num_classes=10, conv_channels=(1, 2, 3)), "conv_channels"),
    (VGG11, dict(input_shape=(3, 32, 32), num_classes=10, fc_features=(8,)), "fc_features"),
    (VGG11, dict(input_shape=(3, 32, 32), num_classes=10, dropout=1.0), "dropout"),
])
def test_bad_arguments_name_the_field(cls, kwargs, field):
    with pytest.raises(ValueError, match=field):
        cls(**kwargs)


def test_zero_init_residual_makes_blocks_start_as_identity_branches():
    model = ResNet18((3, 32, 32), 10, zero_init_residual=True, **RESNET_SMALL)
    assert isinstance(model, SplittableModel)
    assert all(float(block.bn2.weight.detach().abs().sum()) == 0.0 for block in model.blocks[1:9])
