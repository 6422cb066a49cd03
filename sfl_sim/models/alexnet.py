"""AlexNet adapted to small images, split after each convolutional block (SCALA paper).

The SCALA paper trains an AlexNet (5 convolutional + 3 fully-connected layers, ReLU, max-pooling,
dropout) on Fashion-MNIST (1×28×28) and CIFAR (3×32×32).  Small images cannot take the original
11×11/stride-4 stem, so every convolution here is 3×3 with padding 1 and there are three 2×2
max-pools (after conv blocks 1, 2 and 5), which shrink 28→14→7→3 and 32→16→8→4.

The default widths (``conv_channels=(64, 192, 384, 256, 256)``, ``fc_features=(1024, 1024)``) are
the paper-scale model.  The constructor arguments exist so that a CPU-only scenario can use a
narrower network (e.g. ``conv_channels=(32, 64, 128, 128, 64)``, ``fc_features=(256, 256)``);
such a scenario is a scaled-down model, not the paper's, and results should say so.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, cast

import torch
from torch import nn

from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel, UnitInterval, positive_ints
from sfl_sim.models.registry import MODELS
from sfl_sim.models.split import SplittableModel

#: Split points of the SCALA paper (Table 8 / Fig. 8): S<k> keeps conv blocks 1..k on the client.
ALEXNET_SPLIT_POINTS = {"S1": 1, "S2": 2, "S3": 3, "S4": 4, "S5": 5}
#: The paper's default split: after the second conv block.
ALEXNET_DEFAULT_SPLIT_POINT = "S2"


def _is_int(value: object) -> bool:
    # bool is an int subclass; True as a channel count is a bug, not a 1.
    return isinstance(value, int) and not isinstance(value, bool)


def _int_tuple(name: str, value: object, length: int, minimum: int, allowed: str) -> tuple[int, ...]:
    try:
        items: tuple[Any, ...] = tuple(value)  # type: ignore[arg-type]
    except TypeError:
        items = ()
    if len(items) != length or not all(_is_int(v) and v >= minimum for v in items):
        raise ValueError(f"{name} = {value!r} is invalid; allowed: {allowed}")
    return items




@MODELS.register("alexnet")
class AlexNet(SplittableModel, Component):
    """AlexNet for small images as six blocks: five conv blocks and the classifier.

    Blocks (``c1..c5 = conv_channels``, ``f1, f2 = fc_features``, ``C, H, W = input_shape``)::

        block1: Conv2d(C, c1, 3, padding=1), ReLU, MaxPool2d(2)      -> (c1, H/2, W/2)
        block2: Conv2d(c1, c2, 3, padding=1), ReLU, MaxPool2d(2)     -> (c2, H/4, W/4)
        block3: Conv2d(c2, c3, 3, padding=1), ReLU                   -> (c3, H/4, W/4)
        block4: Conv2d(c3, c4, 3, padding=1), ReLU                   -> (c4, H/4, W/4)
        block5: Conv2d(c4, c5, 3, padding=1), ReLU, MaxPool2d(2)     -> (c5, H/8, W/8)
        block6: Flatten, Dropout, Linear(c5*(H/8)*(W/8), f1), ReLU,
                Dropout, Linear(f1, f2), ReLU, Linear(f2, num_classes) -> (num_classes,)

    (divisions round down, as ``MaxPool2d`` does).  Split points ``S1``..``S5`` keep conv blocks
    1..k on the client; ``S2`` is the default, as in the paper.

    Parameters
    ----------
    input_shape : tuple of int
        Per-sample input shape ``(C, H, W)``, e.g. ``(1, 28, 28)`` or ``(3, 32, 32)``; ``H`` and
        ``W`` must be at least 8 so that three poolings leave at least 1×1.
    num_classes : int
        Number of output classes, at least 2.

    Raises
    ------
    ValueError
        If any argument is outside the ranges above.
    """

    supplied_args = ("input_shape", "num_classes")

    class Params(ParamsModel):
        """AlexNet's parameters (``model.params``; the input shape and class count come from the data set)."""

        conv_channels: Annotated[positive_ints(5), Doc(  # type: ignore[valid-type]
            "Output channels of conv layers 1..5 (the paper-scale widths by default).")] = (64, 192, 384, 256, 256)
        fc_features: Annotated[positive_ints(2), Doc(  # type: ignore[valid-type]
            "Widths of the two hidden fully-connected layers.")] = (1024, 1024)
        dropout: Annotated[UnitInterval, Doc(
            "Dropout probability before the first two linear layers, in ``[0, 1)``.")] = 0.5
        init: Annotated[Literal["kaiming_normal", "pytorch_default"], Doc(
            "Weight initialisation.  ``kaiming_normal`` (He et al., 2015: N(0, 2/fan_in) for every conv and hidden "
            "linear layer, zero biases; the output layer keeps PyTorch's default) lets this 8-layer ReLU network "
            "without normalisation learn with plain SGD at lr 0.01.  With PyTorch's default init (uniform, gain "
            "1/sqrt(3)) the signal shrinks layer by layer and the network measured no progress in 200 such steps "
            "on Fashion-MNIST (loss stuck at ln 10).")] = "kaiming_normal"

    params: Params

    def __init__(self, input_shape: Sequence[int], num_classes: int, **params: Any) -> None:
        Component.__init__(self, **params)
        dropout, init = self.params.dropout, self.params.init
        shape = _int_tuple("input_shape", input_shape, 3, 1, "3 positive ints (C, H, W)")
        in_ch, height, width = shape
        if height < 8 or width < 8:
            raise ValueError(
                f"input_shape = {tuple(input_shape)!r} is invalid; allowed: spatial size H, W >= 8 "
                f"(three 2x2 max-pools)"
            )
        if not _is_int(num_classes) or num_classes < 2:
            raise ValueError(f"num_classes = {num_classes!r} is invalid; allowed: an int >= 2")
        c1, c2, c3, c4, c5 = self.params.conv_channels
        f1, f2 = self.params.fc_features

        def conv(cin: int, cout: int) -> nn.Conv2d:
            return nn.Conv2d(cin, cout, kernel_size=3, padding=1)

        flat = c5 * (height // 8) * (width // 8)
        blocks = [
            nn.Sequential(conv(in_ch, c1), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(conv(c1, c2), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(conv(c2, c3), nn.ReLU()),
            nn.Sequential(conv(c3, c4), nn.ReLU()),
            nn.Sequential(conv(c4, c5), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(
                nn.Flatten(),
                nn.Dropout(float(dropout)),
                nn.Linear(flat, f1),
                nn.ReLU(),
                nn.Dropout(float(dropout)),
                nn.Linear(f1, f2),
                nn.ReLU(),
                nn.Linear(f2, num_classes),
            ),
        ]
        super().__init__(
            blocks,
            ALEXNET_SPLIT_POINTS,
            ALEXNET_DEFAULT_SPLIT_POINT,
            name="alexnet",
            input_shape=shape,
        )
        self.num_classes = num_classes
        self.conv_channels = (c1, c2, c3, c4, c5)
        self.fc_features = (f1, f2)
        self.dropout = float(dropout)
        if init == "kaiming_normal":
            layers = [m for m in self.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
            for layer in layers[:-1]:  # the output layer keeps the default: small initial logits
                nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
                nn.init.zeros_(cast(torch.Tensor, layer.bias))  # built with biases
