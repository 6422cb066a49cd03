"""AlexNet shapes, split points and the SplittableModel contract."""
import copy

import pytest
import torch
from torch import nn

from sfl_sim.models import MODELS, AlexNet, SplittableModel, build_model

SMALL = dict(conv_channels=(4, 6, 8, 8, 6), fc_features=(16, 12))


@pytest.mark.parametrize(
    "input_shape, acts",
    [
        ((1, 28, 28), {"S1": (4, 14, 14), "S2": (6, 7, 7), "S3": (8, 7, 7), "S4": (8, 7, 7), "S5": (6, 3, 3)}),
        ((3, 32, 32), {"S1": (4, 16, 16), "S2": (6, 8, 8), "S3": (8, 8, 8), "S4": (8, 8, 8), "S5": (6, 4, 4)}),
    ],
)
def test_shapes_and_every_split_matches_full_forward(input_shape, acts):
    torch.manual_seed(0)
    model = build_model("alexnet", input_shape, 10, **SMALL).eval()
    x = torch.randn(3, *input_shape)
    with torch.no_grad():
        full = model(x)
    assert full.shape == (3, 10)
    assert list(model.split_points) == ["S1", "S2", "S3", "S4", "S5"]
    for point, act_shape in acts.items():
        client, server = model.split(point)
        # The parts share module objects with the model (no copies).
        assert all(a is b for a, b in zip(client, model.blocks, strict=False))  # the first len(client) blocks
        assert server[-1] is model.blocks[-1]
        assert len(client) == model.split_points[point] and len(client) + len(server) == 6
        with torch.no_grad():
            act = client(x)
            out = server(act)
        assert act.shape == (3, *act_shape)
        assert model.activation_shape(point) == act_shape
        torch.testing.assert_close(out, full, rtol=0, atol=0)


def test_default_widths_and_default_split_point():
    model = AlexNet((1, 28, 28), 10)
    assert model.default_split_point == "S2"
    assert model.conv_channels == (64, 192, 384, 256, 256) and model.fc_features == (1024, 1024)
    assert model.blocks[-1][2].in_features == 256 * 3 * 3
    assert model.activation_shape("S2") == (192, 7, 7)
    assert model.training  # activation_shape must not flip the mode


def test_split_shares_parameters_and_deepcopy_detaches():
    model = build_model("alexnet", (1, 28, 28), 10, **SMALL)
    client, _ = model.split("S2")
    with torch.no_grad():
        client[0][0].weight.add_(1.0)
    assert torch.equal(client[0][0].weight, model.blocks[0][0].weight)
    independent = copy.deepcopy(client)
    with torch.no_grad():
        independent[0][0].weight.zero_()
    assert not torch.equal(independent[0][0].weight, model.blocks[0][0].weight)


def test_unknown_split_point_lists_allowed():
    model = build_model("alexnet", (1, 28, 28), 10, **SMALL)
    with pytest.raises(ValueError) as info:
        model.split("S9")
    assert str(info.value) == "split point 'S9' does not exist for alexnet; allowed: S1, S2, S3, S4, S5"


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(input_shape=(28, 28)), "input_shape"),
        (dict(input_shape=(1, 7, 28)), "input_shape"),
        (dict(input_shape=(1.0, 28, 28)), "input_shape"),
        (dict(num_classes=1), "num_classes"),
        (dict(conv_channels=(1, 2, 3, 4)), "conv_channels"),
        (dict(conv_channels=(1, 2, 0, 4, 5)), "conv_channels"),
        (dict(fc_features=(10,)), "fc_features"),
        (dict(dropout=1.0), "dropout"),
    ],
)
def test_invalid_arguments_name_the_parameter(kwargs, name):
    args = dict(input_shape=(1, 28, 28), num_classes=10)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name) as info:
        AlexNet(**args)
    assert "allowed" in str(info.value)


def test_registry_and_factory():
    assert "alexnet" in MODELS.names()
    assert MODELS.get("sfl_sim.models.alexnet:AlexNet") is AlexNet
    model = build_model("sfl_sim.models.alexnet:AlexNet", [3, 32, 32], 100, **SMALL)
    assert isinstance(model, SplittableModel) and model.input_shape == (3, 32, 32)
    with pytest.raises(ValueError, match="alexnet"):
        build_model("alexnett", (1, 28, 28), 10)
    with pytest.raises(ValueError, match="rejected parameters"):
        build_model("alexnet", (1, 28, 28), 10, widths=3)
    with pytest.raises(ValueError, match="SplittableModel"):
        build_model("torch.nn:Identity", (1, 28, 28), 10)


def test_splittable_model_validation():
    blocks = [nn.Linear(2, 2), nn.Linear(2, 2)]
    with pytest.raises(ValueError, match="split_points"):
        SplittableModel(blocks, {"A": 2}, "A", name="toy")
    with pytest.raises(ValueError, match="default_split_point 'B'"):
        SplittableModel(blocks, {"A": 1}, "B", name="toy")
