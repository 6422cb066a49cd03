"""VGG-11 (configuration A) for small images, split after each conv layer (SCALA journal §5.7).

Simonyan & Zisserman (2015), configuration A: eight 3×3 conv layers
``64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M`` (``M`` = 2×2 max-pool), each conv
followed by BatchNorm (optional, on by default) and ReLU.  Adapted to small images as the common
CIFAR versions are (e.g. the ``pytorch-vgg-cifar10`` model that ResSFL builds on): the classifier
takes the ``512×1×1`` feature map of a 32×32 input instead of ``512×7×7``:
``Dropout, Linear(512·h·w, 512), ReLU, Dropout, Linear(512, 512), ReLU, Linear(512, classes)``.

Small inputs.  Five pools take 32→16→8→4→2→1.  A 28×28 input would reach 0 (28→14→7→3→1→0),
so a pool whose input is already 1 pixel high or wide is left out: 28→14→7→3→1→1.  Which pools
exist is fixed when the model is built from ``input_shape``.

Split points.  ``S<k>`` keeps conv layers 1..k on the client, each with its BN, ReLU and the
max-pool that follows it (if any), like the AlexNet split points.  The journal's §5.7 uses VGG-11
"with the split layer set at the second layer" (ResSFL's configuration); we read that as the
second *conv* layer, so the default is ``S2``: client = conv1-BN-ReLU-pool, conv2-BN-ReLU-pool,
activations ``(128, 8, 8)`` for 3×32×32 and ``(128, 7, 7)`` for 1×28×28.

====  ======================  ================  ================
name  client part             act. 3×32×32      act. 1×28×28
====  ======================  ================  ================
S1    conv1 (+pool)           (64, 16, 16)      (64, 14, 14)
S2    conv1-2 **default**     (128, 8, 8)       (128, 7, 7)
S3    conv1-3                 (256, 8, 8)       (256, 7, 7)
S4    conv1-4 (+pool)         (256, 4, 4)       (256, 3, 3)
S5    conv1-5                 (512, 4, 4)       (512, 3, 3)
S6    conv1-6 (+pool)         (512, 2, 2)       (512, 1, 1)
S7    conv1-7                 (512, 2, 2)       (512, 1, 1)
S8    conv1-8 (+pool)         (512, 1, 1)       (512, 1, 1)
====  ======================  ================  ================

(with the default ``conv_channels``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from torch import nn

from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel, UnitInterval, positive_ints
from sfl_sim.models.registry import MODELS
from sfl_sim.models.split import SplittableModel

#: S<k>: conv layers 1..k (with BN, ReLU and their max-pool) on the client.
VGG11_SPLIT_POINTS: dict[str, int] = {f"S{k}": k for k in range(1, 9)}
#: "The split layer set at the second layer" (journal §5.7): after the second conv layer.
VGG11_DEFAULT_SPLIT_POINT = "S2"
#: Whether a 2×2 max-pool follows conv layer 1..8 in configuration A.
VGG11_POOL_AFTER: tuple[bool, ...] = (True, True, False, True, False, True, False, True)
_DEFAULT_CHANNELS = (64, 128, 256, 256, 512, 512, 512, 512)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_tuple(name: str, value: object, length: int, allowed: str) -> tuple[int, ...]:
    try:
        items: tuple[Any, ...] = tuple(value)  # type: ignore[arg-type]
    except TypeError:
        items = ()
    if len(items) != length or not all(_is_int(v) and v >= 1 for v in items):
        raise ValueError(f"{name} = {value!r} is invalid; allowed: {allowed}")
    return items


@MODELS.register("vgg11")
class VGG11(SplittableModel, Component):
    """VGG-11 (configuration A) for small images as nine blocks: eight conv blocks and the classifier.

    See the module docstring for the layout, the small-input adaptation and the split points
    ``S1``..``S8`` (default ``S2``, after the second conv layer).

    Parameters
    ----------
    input_shape : tuple of int
        Per-sample input shape ``(C, H, W)``, e.g. ``(1, 28, 28)`` or ``(3, 32, 32)``; ``H`` and
        ``W`` at least 8.
    num_classes : int
        Number of output classes, at least 2.

    Notes
    -----
    Initialisation as torchvision's VGG: He-normal (fan-out) conv weights, zero conv biases, BN
    weight 1 and bias 0, linear weights N(0, 0.01²) and zero biases.

    Raises
    ------
    ValueError
        If any argument is outside the ranges above.
    """

    supplied_args = ("input_shape", "num_classes")

    class Params(ParamsModel):
        """VGG11's parameters (``model.params``; the input shape and class count come from the data set)."""

        batch_norm: Annotated[bool, Doc(
            "BatchNorm after every conv (then the convs have no bias).  Without it the convs have biases.")] = True
        conv_channels: Annotated[positive_ints(8), Doc(  # type: ignore[valid-type]
            "Output channels of conv layers 1..8 (configuration A by default; tests use narrow ones).")] = \
            _DEFAULT_CHANNELS
        fc_features: Annotated[positive_ints(2), Doc(  # type: ignore[valid-type]
            "Widths of the two hidden linear layers.")] = (512, 512)
        dropout: Annotated[UnitInterval, Doc(
            "Dropout probability before the first two linear layers, in ``[0, 1)``.")] = 0.5

    params: Params

    def __init__(self, input_shape: Sequence[int], num_classes: int, **params: Any) -> None:
        Component.__init__(self, **params)
        batch_norm, dropout = self.params.batch_norm, self.params.dropout
        shape = _int_tuple("input_shape", input_shape, 3, "3 positive ints (C, H, W)")
        in_ch, height, width = shape
        if height < 8 or width < 8:
            raise ValueError(f"input_shape = {tuple(input_shape)!r} is invalid; allowed: spatial size H, W >= 8")
        if not _is_int(num_classes) or num_classes < 2:
            raise ValueError(f"num_classes = {num_classes!r} is invalid; allowed: an int >= 2")
        channels = tuple(self.params.conv_channels)
        f1, f2 = self.params.fc_features

        blocks = []
        cin, h, w = in_ch, height, width
        for cout, pool in zip(channels, VGG11_POOL_AFTER, strict=True):
            layers: list[nn.Module] = [nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=not batch_norm)]
            if batch_norm:
                layers.append(nn.BatchNorm2d(cout))
            layers.append(nn.ReLU())
            if pool and h >= 2 and w >= 2:  # leave out pools that would shrink a 1-pixel map to 0
                layers.append(nn.MaxPool2d(2))
                h, w = h // 2, w // 2
            blocks.append(nn.Sequential(*layers))
            cin = cout
        blocks.append(
            nn.Sequential(
                nn.Flatten(),
                nn.Dropout(float(dropout)),
                nn.Linear(cin * h * w, f1),
                nn.ReLU(),
                nn.Dropout(float(dropout)),
                nn.Linear(f1, f2),
                nn.ReLU(),
                nn.Linear(f2, num_classes),
            )
        )
        super().__init__(blocks, VGG11_SPLIT_POINTS, VGG11_DEFAULT_SPLIT_POINT, name="vgg11", input_shape=shape)
        self.num_classes = num_classes
        self.batch_norm = batch_norm
        self.conv_channels = channels
        self.fc_features = (f1, f2)
        self.dropout = float(dropout)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0.0, 0.01)
                nn.init.zeros_(module.bias)
        # The hidden linear layers get He init as well: with torchvision's N(0, 0.01) for them
        # (no BatchNorm in the classifier) plain SGD at lr 0.01 — the papers' optimiser — made no
        # progress in 100 steps on Fashion-MNIST (loss stuck at ln 10); with He init it reached
        # 56 % test accuracy (measured, narrow widths).  The output layer keeps N(0, 0.01).
        hidden_linear = [m for m in self.modules() if isinstance(m, nn.Linear)][:-1]
        for layer in hidden_linear:
            nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
