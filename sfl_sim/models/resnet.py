"""ResNet-18 with the CIFAR stem, split at its stages (SCALA journal §5.1, §5.6).

He et al. (2016) ResNet-18 as commonly adapted to 32×32 images: the ImageNet stem (7×7/stride-2
conv + 3×3 max-pool) is replaced by a 3×3/stride-1 conv, so 32×32 inputs keep their resolution
into the first stage.  Four stages ("layers") of two BasicBlocks each, with 64-128-256-512
channels (``width`` × 1, 2, 4, 8) and stride 2 at the start of stages 2-4, BatchNorm after every
conv, global average pooling and one linear layer.  Spatial sizes: 32→32→16→8→4 and
28→28→14→7→4.

Split points.  The journal (§5.1, §5.6) splits ResNet-18 "at the first convolutional layer, the
first residual block, the second residual block, and the third residual block", named S1-S4 from
shallow to deep, S2 the default.  We read "residual block" as a *stage* (torchvision's
``layer1``..``layer4``: two BasicBlocks sharing a width), because

* four split points spanning "first conv" to "third residual block" then cover the network
  (S4 leaves only the last stage and the classifier on the server), whereas with single
  BasicBlocks S2-S4 would all sit within the first 1.5 of 4 stages;
* stage boundaries are where split-learning codes usually cut ResNets (no skip connection
  crosses them, and the smashed data has a stage's full width).

So the client keeps:

====  ===============================================  =====================  ====================
name  client part                                      activations 3×32×32    activations 1×28×28
====  ===============================================  =====================  ====================
S1    stem conv + BN + ReLU                            (w, 32, 32)            (w, 28, 28)
S2    stem + stage 1 (2 BasicBlocks)  **default**      (w, 32, 32)            (w, 28, 28)
S3    stem + stages 1-2                                (2w, 16, 16)           (2w, 14, 14)
S4    stem + stages 1-3                                (4w, 8, 8)             (4w, 7, 7)
====  ===============================================  =====================  ====================

For the other reading (one BasicBlock = one residual block) and for finer studies the points
``B1``..``B8`` cut after BasicBlock 1..8 (``B2`` = ``S2``, ``B4`` = ``S3``, ``B6`` = ``S4``;
the BasicBlock reading of the journal's S2/S3/S4 is ``B1``/``B2``/``B3``).

Blocks of the :class:`SplittableModel` (10): ``stem``, the 8 BasicBlocks, ``head`` (average
pool, flatten, linear).  S1 and S2 send activations of the same size (the first stage keeps
width and resolution): 64×32×32 float32 = 256 KiB per 32×32 sample at w = 64, far more smashed
data than AlexNet's S2 (192×8×8 = 48 KiB).  ReLUs are not in-place, so a block may receive a
leaf tensor that requires grad (the server's copy of the activations).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from torch import Tensor, nn

from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel, PositiveInt
from sfl_sim.models.registry import MODELS
from sfl_sim.models.split import SplittableModel

#: Client blocks at each named split point (stem = block 1, BasicBlocks = blocks 2..9, head = 10).
RESNET18_SPLIT_POINTS: dict[str, int] = {
    "S1": 1,  # after the stem conv + BN + ReLU (the journal's "first convolutional layer")
    "S2": 3,  # after stage 1 (the journal's "first residual block"; default)
    "S3": 5,  # after stage 2 ("second residual block")
    "S4": 7,  # after stage 3 ("third residual block")
    **{f"B{k}": k + 1 for k in range(1, 9)},  # after BasicBlock k (finer points)
}
#: The journal's default split for ResNet-18 ("at the first residual block").
RESNET18_DEFAULT_SPLIT_POINT = "S2"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class BasicBlock(nn.Module):
    """ResNet BasicBlock: two 3×3 conv-BN layers and an identity (or 1×1 conv-BN) shortcut.

    Parameters
    ----------
    in_channels, out_channels : int
        Input and output channels.
    stride : int, default 1
        Stride of the first conv (2 halves the resolution); a stride or width change gives the
        shortcut a 1×1 conv + BN ("option B" of He et al.).
    """

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        if stride != 1 or in_channels != out_channels:
            self.shortcut: nn.Module = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )
        else:
            self.shortcut = nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        """``relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))``."""
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


@MODELS.register("resnet18")
class ResNet18(SplittableModel, Component):
    """ResNet-18 for small images (CIFAR stem), as 10 splittable blocks.

    See the module docstring for the architecture and the split points ``S1``..``S4`` (journal
    order, default ``S2`` = after the first stage) and ``B1``..``B8``.

    Parameters
    ----------
    input_shape : tuple of int
        Per-sample input shape ``(C, H, W)``, e.g. ``(1, 28, 28)`` or ``(3, 32, 32)``; ``H`` and
        ``W`` must be at least 8 (three stride-2 stages leave at least 1×1).
    num_classes : int
        Number of output classes, at least 2.
    Notes
    -----
    Initialisation as torchvision: He-normal (fan-out) conv weights, BN weight 1 and bias 0,
    PyTorch's default for the linear layer.  BatchNorm running statistics are buffers, so a model
    upload carries them and the weighted averaging of :mod:`sfl_sim.algorithms.base` averages
    ``running_mean`` / ``running_var`` and copies the integer ``num_batches_tracked``.

    Raises
    ------
    ValueError
        If any argument is outside the ranges above.
    """

    supplied_args = ("input_shape", "num_classes")

    class Params(ParamsModel):
        """ResNet18's parameters (``model.params``; the input shape and class count come from the data set)."""

        width: Annotated[PositiveInt, Doc(
            "Channels of the stem and stage 1; stages 2-4 have 2, 4 and 8 times as many.  64 is the standard "
            "ResNet-18 (11.2 M parameters for 10 classes); tests use a narrow one (e.g. 4).")] = 64
        zero_init_residual: Annotated[bool, Doc(
            "Start each block's last BN at weight 0, so every residual branch starts as the identity (Goyal et "
            "al., 2017).  Off by default, as in torchvision.")] = False

    params: Params

    def __init__(self, input_shape: Sequence[int], num_classes: int, **params: Any) -> None:
        Component.__init__(self, **params)
        width, zero_init_residual = self.params.width, self.params.zero_init_residual
        try:
            shape = tuple(input_shape)
        except TypeError:
            shape = ()
        if len(shape) != 3 or not all(_is_int(v) and v >= 1 for v in shape):
            raise ValueError(f"input_shape = {input_shape!r} is invalid; allowed: 3 positive ints (C, H, W)")
        in_ch, height, wide = shape
        if height < 8 or wide < 8:
            raise ValueError(
                f"input_shape = {tuple(input_shape)!r} is invalid; allowed: spatial size H, W >= 8 "
                f"(three stride-2 stages)"
            )
        if not _is_int(num_classes) or num_classes < 2:
            raise ValueError(f"num_classes = {num_classes!r} is invalid; allowed: an int >= 2")

        widths = (width, 2 * width, 4 * width, 8 * width)
        blocks: list[nn.Module] = [
            nn.Sequential(
                nn.Conv2d(in_ch, width, 3, stride=1, padding=1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(),
            )
        ]
        cin = width
        for stage, cout in enumerate(widths):
            for index in range(2):
                stride = 2 if stage > 0 and index == 0 else 1
                blocks.append(BasicBlock(cin, cout, stride))
                cin = cout
        blocks.append(nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, num_classes)))
        super().__init__(
            blocks,
            RESNET18_SPLIT_POINTS,
            RESNET18_DEFAULT_SPLIT_POINT,
            name="resnet18",
            input_shape=shape,
        )
        self.num_classes = num_classes
        self.width = width
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        if zero_init_residual:
            for module in self.modules():
                if isinstance(module, BasicBlock):
                    nn.init.zeros_(module.bn2.weight)
