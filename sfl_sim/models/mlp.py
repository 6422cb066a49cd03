"""A fully-connected network: FedVLS's MNIST backbone ("a deep neural network (DNN) containing
three fully connected layers", fedvls-aaai.md, Models and baselines).

The authors' released model (``DNN`` in their ``flcore/trainmodel/models.py``) is
784 -> 200 -> 200 -> 10 with ReLU, PyTorch's default initialisation; that is this class's default.
It is split between its layers, so split algorithms can use it too.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any

from torch import nn

from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel, positive_ints
from sfl_sim.models.registry import MODELS
from sfl_sim.models.split import SplittableModel


@MODELS.register("mlp")
class MLP(SplittableModel, Component):
    """Three fully-connected layers with ReLU (FedVLS's MNIST DNN by default), as three blocks.

    Blocks (``h1, h2 = hidden_features``, ``D = C*H*W``)::

        block1: Flatten, Linear(D, h1), ReLU   -> (h1,)
        block2: Linear(h1, h2), ReLU           -> (h2,)
        block3: Linear(h2, num_classes)        -> (num_classes,)

    Split points ``S1`` (block 1 on the client, the default) and ``S2`` (blocks 1-2).

    Parameters
    ----------
    input_shape : tuple of int
        Per-sample input shape ``(C, H, W)``, e.g. ``(1, 28, 28)``.
    num_classes : int
        At least 2.

    Raises
    ------
    ValueError
        If an argument is outside these ranges.
    """

    supplied_args = ("input_shape", "num_classes")

    class Params(ParamsModel):
        """MLP's parameters (``model.params``; the input shape and class count come from the data set)."""

        hidden_features: Annotated[positive_ints(2), Doc(  # type: ignore[valid-type]
            "Widths of the two hidden layers.")] = (200, 200)

    params: Params

    def __init__(self, input_shape: Sequence[int], num_classes: int, **params: Any) -> None:
        Component.__init__(self, **params)
        shape = tuple(input_shape)
        if len(shape) != 3 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in shape):
            raise ValueError(f"input_shape = {input_shape!r} is invalid; allowed: 3 positive ints (C, H, W)")
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(f"num_classes = {num_classes!r} is invalid; allowed: an int >= 2")
        h1, h2 = self.params.hidden_features
        blocks = [nn.Sequential(nn.Flatten(), nn.Linear(math.prod(shape), h1), nn.ReLU()),
                  nn.Sequential(nn.Linear(h1, h2), nn.ReLU()),
                  nn.Linear(h2, num_classes)]
        super().__init__(blocks, {"S1": 1, "S2": 2}, "S1", name="mlp", input_shape=shape)
        self.num_classes = num_classes
