"""The fully-connected model (FedVLS's MNIST DNN): shapes, parameters, split points."""
from __future__ import annotations

import pytest
import torch

from sfl_sim.models import build_model


def test_default_is_784_200_200_10() -> None:
    model = build_model("mlp", (1, 28, 28), 10)
    assert [tuple(p.shape) for p in model.parameters()] == [(200, 784), (200,), (200, 200), (200,), (10, 200), (10,)]
    assert model(torch.zeros(3, 1, 28, 28)).shape == (3, 10)


@pytest.mark.parametrize("point, client_out", [("S1", 200), ("S2", 16)])
def test_split_points_cut_between_layers(point, client_out) -> None:
    model = build_model("mlp", (1, 28, 28), 10, hidden_features=[200, 16])
    client, server = model.split(point)
    x = torch.randn(2, 1, 28, 28)
    assert client(x).shape == (2, client_out)
    torch.testing.assert_close(server(client(x)), model(x))


@pytest.mark.parametrize("params", [{"hidden_features": [200]}, {"hidden_features": [0, 5]}])
def test_bad_widths_are_refused(params) -> None:
    with pytest.raises(ValueError, match="hidden_features"):
        build_model("mlp", (1, 28, 28), 10, **params)
