"""Image-quality metrics on batches of images, as torch functions: MSE, PSNR and SSIM.

All take two tensors of the same shape ``(B, C, H, W)`` (``x`` the reconstruction, ``y`` the
reference; both metrics are symmetric) and return one value per image (``reduction="none"``,
shape ``(B,)``) or their mean over the batch (``reduction="mean"``, the default, a 0-d tensor).

* MSE: mean of ``(x - y)²`` over channels and pixels.
* PSNR: ``10 log10(L² / MSE)`` with ``L`` the data range (1 for images in [0, 1]); ``inf`` for
  identical images.  The batch mean is the mean of the per-image PSNRs.
* SSIM: Wang, Bovik, Sheikh & Simoncelli (2004), "Image quality assessment: from error visibility
  to structural similarity", eq. (13) with the paper's settings: an 11×11 circular-symmetric
  Gaussian window with σ = 1.5 (normalised to sum 1), ``K1 = 0.01``, ``K2 = 0.03``,
  ``C1 = (K1 L)²``, ``C2 = (K2 L)²``; local means, variances and covariance are the window's
  weighted moments (population, i.e. not bias-corrected), computed only where the window fits
  inside the image ("valid" filtering, so the map of an ``H×W`` image is ``(H-10)×(W-10)``).
  The SSIM of an image is the mean of its SSIM map over pixels and channels (each channel is
  handled separately, then averaged).  This is what scikit-image's
  ``structural_similarity(gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
  data_range=L)`` computes (its Gaussian filter reaches 5 pixels out, and it crops the 5-pixel
  border before averaging).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

_REDUCTIONS = ("mean", "none")


def _check(x: torch.Tensor, y: torch.Tensor, reduction: str) -> None:
    if x.shape != y.shape or x.dim() != 4:
        raise ValueError(f"need two (B, C, H, W) tensors of the same shape, got {tuple(x.shape)} and {tuple(y.shape)}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction={reduction!r}; allowed: {', '.join(_REDUCTIONS)}")


def _reduce(values: torch.Tensor, reduction: str) -> torch.Tensor:
    return values.mean() if reduction == "mean" else values


def mse(x: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Mean squared error per image (mean over C, H, W), or its batch mean."""
    _check(x, y, reduction)
    return _reduce(((x - y) ** 2).flatten(1).mean(dim=1), reduction)


def psnr(x: torch.Tensor, y: torch.Tensor, data_range: float = 1.0, reduction: str = "mean") -> torch.Tensor:
    """Peak signal-to-noise ratio ``10 log10(data_range² / MSE)`` in dB per image, or the batch mean."""
    _check(x, y, reduction)
    if not data_range > 0:
        raise ValueError(f"data_range={data_range!r}; allowed: > 0")
    err = mse(x, y, reduction="none")
    return _reduce(10.0 * torch.log10(data_range ** 2 / err), reduction)


def gaussian_window(size: int = 11, sigma: float = 1.5, dtype: torch.dtype = torch.float64,
                    device: torch.device | str | None = None) -> torch.Tensor:
    """``size×size`` Gaussian window with standard deviation ``sigma``, normalised to sum 1."""
    r = torch.arange(size, dtype=dtype, device=device) - (size - 1) / 2.0
    g = torch.exp(-(r ** 2) / (2.0 * sigma ** 2))
    g = g / g.sum()
    return g[:, None] * g[None, :]


def ssim(x: torch.Tensor, y: torch.Tensor, data_range: float = 1.0, window_size: int = 11, sigma: float = 1.5,
         k1: float = 0.01, k2: float = 0.03, reduction: str = "mean") -> torch.Tensor:
    """Structural similarity of Wang et al. (2004), see the module docstring.

    Parameters
    ----------
    x, y : Tensor, shape (B, C, H, W)
        Images with ``H, W >= window_size``.
    data_range : float
        ``L``, the dynamic range of the pixel values (1 for [0, 1] images, 255 for 8-bit).
    window_size, sigma, k1, k2 : the paper's constants (11, 1.5, 0.01, 0.03).
    reduction : {"mean", "none"}

    Returns
    -------
    Tensor
        Mean SSIM over the batch (0-d) or one value per image ``(B,)``.
    """
    _check(x, y, reduction)
    if not data_range > 0:
        raise ValueError(f"data_range={data_range!r}; allowed: > 0")
    b, c, h, w = x.shape
    if h < window_size or w < window_size:
        raise ValueError(f"images of {h}x{w} are smaller than the {window_size}x{window_size} SSIM window")
    win = gaussian_window(window_size, sigma, dtype=x.dtype, device=x.device)
    win = win.expand(c, 1, window_size, window_size).contiguous()

    def filt(t: torch.Tensor) -> torch.Tensor:  # depthwise "valid" filtering, one window per channel
        return F.conv2d(t, win, groups=c)

    mu_x, mu_y = filt(x), filt(y)
    var_x = filt(x * x) - mu_x ** 2
    var_y = filt(y * y) - mu_y ** 2
    cov = filt(x * y) - mu_x * mu_y
    c1, c2 = (k1 * data_range) ** 2, (k2 * data_range) ** 2
    smap = ((2 * mu_x * mu_y + c1) * (2 * cov + c2)) / ((mu_x ** 2 + mu_y ** 2 + c1) * (var_x + var_y + c2))
    return _reduce(smap.flatten(1).mean(dim=1), reduction)


__all__ = ["gaussian_window", "mse", "psnr", "ssim"]
