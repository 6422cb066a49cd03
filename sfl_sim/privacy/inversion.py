"""Model-inversion attacks on split activations: a shallow convolutional autoencoder inverter.

Threat model (SCALA journal §5.7, after ResSFL): the attacker sees the activations that clients
upload and knows (or has obtained) the trained client-side model.  It holds an *auxiliary
data set from the same distribution* as the clients' data -- in our experiments a held-out slice
of the training set that no client holds -- runs it through the client-side model and trains an
inversion model on the (activations, image) pairs.  It is then scored on test images it has
never seen: MSE, SSIM and PSNR of its reconstructions against the originals, in the [0, 1]
pixel range (data range 1).

Inversion model: a shallow convolutional autoencoder ("decoder" side only, since its input is
already the encoded activation): ``Conv3x3(C_act → c) - ReLU``, then ``n`` stride-2
``ConvTranspose2d(c → c, 4, stride 2, pad 1) - ReLU`` upsampling stages, ``n`` the smallest with
``h · 2ⁿ >= H`` and ``w · 2ⁿ >= W``, then ``Conv3x3(c → C_img)``, bilinear resize to ``H×W`` when
the upsampled map overshoots, and an optional sigmoid (on for the attacker, whose targets are
[0, 1] pixels).  ``c`` is the internal channel size (a parameter; the paper's value was lost).

Everything is seeded: the attacker's initial weights and its minibatch order come from ``seed``
(through a local ``torch.Generator``); nothing touches the global torch RNG.

The client-side model is run in eval mode (BatchNorm with its running statistics, no dropout),
i.e. the attacker inverts the deployed feature extractor.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.privacy.metrics import mse, psnr, ssim


class InversionModel(nn.Module):
    """Shallow convolutional autoencoder mapping activations ``(C_act, h, w)`` to images ``(C, H, W)``.

    Parameters
    ----------
    act_shape : (C_act, h, w)
    image_shape : (C, H, W)
    channels : int
        Internal channel size ``c``.
    sigmoid : bool
        Squash the output into (0, 1) (targets in [0, 1]); off for targets in normalised units.
    generator : torch.Generator, optional
        Draws the initial weights (Kaiming-uniform, torch's default layout); without it the global
        torch RNG is used.
    """

    def __init__(self, act_shape: Sequence[int], image_shape: Sequence[int], channels: int = 64,
                 sigmoid: bool = True, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if len(act_shape) != 3 or len(image_shape) != 3:
            raise ValueError(f"act_shape and image_shape must be (C, H, W), got {act_shape!r} and {image_shape!r}")
        if not isinstance(channels, int) or channels < 1:
            raise ValueError(f"channels={channels!r}; allowed: a positive int")
        c_act, h, w = (int(v) for v in act_shape)
        c_img, hh, ww = (int(v) for v in image_shape)
        self.act_shape: tuple[int, int, int] = (c_act, h, w)
        self.image_shape: tuple[int, int, int] = (c_img, hh, ww)
        self.sigmoid = sigmoid
        n_up = max(0, math.ceil(math.log2(max(hh / h, ww / w))))
        layers = [nn.Conv2d(c_act, channels, 3, padding=1), nn.ReLU()]
        for _ in range(n_up):
            layers += [nn.ConvTranspose2d(channels, channels, 4, stride=2, padding=1), nn.ReLU()]
        layers.append(nn.Conv2d(channels, c_img, 3, padding=1))
        self.net = nn.Sequential(*layers)
        if generator is not None:
            self.reset_parameters(generator)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator) -> None:
        """Kaiming-uniform weights (a = sqrt(5), torch's default) and uniform biases drawn from ``generator``."""
        for m in self.net:
            if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
                fan_in = m.weight.shape[1] * m.weight[0, 0].numel()  # torch's fan_in for both layer kinds
                bound = 1.0 / math.sqrt(fan_in)  # kaiming_uniform(a=sqrt(5)) gives the same bound
                m.weight.copy_((torch.rand(m.weight.shape, generator=generator) * 2 - 1) * bound)
                bias = cast(torch.Tensor, m.bias)  # the layers are built with biases
                bias.copy_((torch.rand(bias.shape, generator=generator) * 2 - 1) * bound)

    def forward(self, acts: torch.Tensor) -> torch.Tensor:
        out = self.net(acts)
        if tuple(out.shape[-2:]) != self.image_shape[1:]:
            out = F.interpolate(out, size=self.image_shape[1:], mode="bilinear", align_corners=False)
        return torch.sigmoid(out) if self.sigmoid else out


def to_unit_range(images: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """Undo the data set's normalisation: ``x · std + mean`` per channel, clamped to [0, 1]."""
    c = images.shape[1]
    m = torch.as_tensor(mean, dtype=images.dtype, device=images.device).view(1, c, 1, 1)
    s = torch.as_tensor(std, dtype=images.dtype, device=images.device).view(1, c, 1, 1)
    return (images * s + m).clamp(0.0, 1.0)


@torch.no_grad()
def _activations(client_model: nn.Module, images: torch.Tensor, batch_size: int) -> torch.Tensor:
    was_training = client_model.training
    client_model.eval()
    try:
        return torch.cat([client_model(images[i:i + batch_size]) for i in range(0, len(images), batch_size)])
    finally:
        client_model.train(was_training)


def train_attacker(client_model: nn.Module, images: torch.Tensor, mean: Sequence[float] = (0.0,),
                   std: Sequence[float] = (1.0,), channels: int = 64, epochs: int = 10, batch_size: int = 128,
                   lr: float = 1e-3, seed: int = 0) -> InversionModel:
    """Train a freshly initialised attacker on ``(client_model(images), images)`` pairs.

    Parameters
    ----------
    client_model : nn.Module
        Trained client-side model (left unchanged; run in eval mode).
    images : Tensor (N, C, H, W)
        The attacker's auxiliary data, normalised as the clients' inputs are.
    mean, std : per-channel normalisation constants; the targets are the [0, 1] images.
    channels : internal channel size of the attacker's autoencoder.
    epochs, batch_size, lr : Adam training of the attacker on the MSE in [0, 1] pixel units.
    seed : int
        Seeds the attacker's initial weights and minibatch order.

    Returns
    -------
    InversionModel
        The trained attacker, in eval mode.
    """
    gen = torch.Generator().manual_seed(seed)
    acts = _activations(client_model, images, batch_size)
    targets = to_unit_range(images, mean, std)
    attacker = InversionModel(acts.shape[1:], images.shape[1:], channels=channels, sigmoid=True, generator=gen)
    attacker.to(images.device)
    opt = torch.optim.Adam(attacker.parameters(), lr=lr)
    n = len(images)
    for _ in range(epochs):
        order = torch.randperm(n, generator=gen).to(images.device)
        for i in range(0, n, batch_size):
            rows = order[i:i + batch_size]
            loss = F.mse_loss(attacker(acts[rows]), targets[rows])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    attacker.eval()
    return attacker


@torch.no_grad()
def evaluate_attack(client_model: nn.Module, attacker: nn.Module, images: torch.Tensor,
                    mean: Sequence[float] = (0.0,), std: Sequence[float] = (1.0,),
                    batch_size: int = 256) -> dict[str, float]:
    """MSE, SSIM and PSNR (data range 1, [0, 1] pixels) of the attacker's reconstructions of ``images``.

    Returns
    -------
    dict
        ``{"mse": ..., "ssim": ..., "psnr": ...}``, each the mean over the images (PSNR in dB).
    """
    was_training = attacker.training
    attacker.eval()
    acts = _activations(client_model, images, batch_size)
    targets = to_unit_range(images, mean, std)
    recon = torch.cat([attacker(acts[i:i + batch_size]) for i in range(0, len(images), batch_size)]).clamp(0, 1)
    attacker.train(was_training)
    return {"mse": float(mse(recon, targets)), "ssim": float(ssim(recon, targets, data_range=1.0)),
            "psnr": float(psnr(recon, targets, data_range=1.0))}
