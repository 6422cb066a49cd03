"""MSE / PSNR / SSIM of sfl_sim.privacy.metrics against scikit-image and independent numpy/scipy references."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import ndimage

from sfl_sim.privacy.metrics import gaussian_window, mse, psnr, ssim


def _reference_ssim(x: np.ndarray, y: np.ndarray, data_range: float) -> float:
    """Wang et al. (2004) eq. (13) on one (H, W) channel: Gaussian sigma 1.5 truncated at 5 px
    (an 11x11 window), population moments, valid region only (5-px border cropped), then the mean."""
    kw = dict(sigma=1.5, truncate=5 / 1.5 + 1e-9, mode="reflect")  # radius int(truncate*sigma+0.5) = 5
    mu_x, mu_y = ndimage.gaussian_filter(x, **kw), ndimage.gaussian_filter(y, **kw)
    s_xx = ndimage.gaussian_filter(x * x, **kw) - mu_x ** 2
    s_yy = ndimage.gaussian_filter(y * y, **kw) - mu_y ** 2
    s_xy = ndimage.gaussian_filter(x * y, **kw) - mu_x * mu_y
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    smap = ((2 * mu_x * mu_y + c1) * (2 * s_xy + c2)) / ((mu_x ** 2 + mu_y ** 2 + c1) * (s_xx + s_yy + c2))
    return float(smap[5:-5, 5:-5].mean())


def _images(seed: int = 0, shape=(3, 2, 24, 20)) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # Smooth structure + noise so SSIM is neither ~0 nor ~1.
    base = ndimage.gaussian_filter(rng.random(shape), sigma=(0, 0, 2, 2))
    base = (base - base.min()) / (base.max() - base.min())
    noisy = np.clip(base + 0.1 * rng.standard_normal(shape), 0, 1)
    return base, noisy


def test_window_is_normalised_gaussian() -> None:
    w = gaussian_window().numpy()
    assert w.shape == (11, 11) and w.sum() == pytest.approx(1.0)
    r = np.arange(11) - 5
    ref = np.exp(-(r[:, None] ** 2 + r[None, :] ** 2) / (2 * 1.5 ** 2))
    np.testing.assert_allclose(w, ref / ref.sum(), rtol=1e-12)


@pytest.mark.parametrize("data_range", [1.0, 255.0])
def test_ssim_matches_reference(data_range: float) -> None:
    a, b = _images()
    a, b = a * data_range, b * data_range
    ref = np.array([[_reference_ssim(a[i, c], b[i, c], data_range) for c in range(a.shape[1])]
                    for i in range(a.shape[0])]).mean(axis=1)
    got = ssim(torch.from_numpy(a), torch.from_numpy(b), data_range=data_range, reduction="none").numpy()
    np.testing.assert_allclose(got, ref, atol=1e-5)
    assert ref.min() > 0.1 and ref.max() < 0.99  # a non-trivial comparison
    got32 = ssim(torch.from_numpy(a).float(), torch.from_numpy(b).float(), data_range=data_range)
    assert float(got32) == pytest.approx(ref.mean(), abs=1e-5)


def test_ssim_against_skimage() -> None:
    from skimage import metrics  # reference implementation (the project's test extra installs it)

    a, b = _images(1, shape=(2, 1, 28, 28))
    for i in range(2):
        ref = metrics.structural_similarity(a[i, 0], b[i, 0], gaussian_weights=True, sigma=1.5,
                                            use_sample_covariance=False, data_range=1.0)
        got = ssim(torch.from_numpy(a[i:i + 1]), torch.from_numpy(b[i:i + 1]), data_range=1.0)
        assert float(got) == pytest.approx(ref, abs=1e-5)


def test_mse_and_psnr_against_skimage() -> None:
    from skimage import metrics

    a, b = _images(4, shape=(2, 1, 28, 28))
    for data_range in (1.0, 2.0):
        for i in range(2):
            one_a, one_b = torch.from_numpy(a[i:i + 1]), torch.from_numpy(b[i:i + 1])
            assert float(mse(one_a, one_b)) == pytest.approx(metrics.mean_squared_error(a[i], b[i]), rel=1e-12)
            ref = metrics.peak_signal_noise_ratio(a[i], b[i], data_range=data_range)
            assert float(psnr(one_a, one_b, data_range=data_range)) == pytest.approx(ref, rel=1e-12)

def test_mse_and_psnr_by_hand() -> None:
    a, b = _images(2)
    per_image = ((a - b) ** 2).reshape(a.shape[0], -1).mean(axis=1)
    np.testing.assert_allclose(mse(torch.from_numpy(a), torch.from_numpy(b), reduction="none").numpy(), per_image)
    assert float(mse(torch.from_numpy(a), torch.from_numpy(b))) == pytest.approx(per_image.mean())
    for data_range in (1.0, 2.0):
        hand = [10 * math.log10(data_range ** 2 / e) for e in per_image]
        got = psnr(torch.from_numpy(a), torch.from_numpy(b), data_range=data_range, reduction="none").numpy()
        np.testing.assert_allclose(got, hand, rtol=1e-12)
        assert float(psnr(torch.from_numpy(a), torch.from_numpy(b), data_range=data_range)) == pytest.approx(
            np.mean(hand))
    # One hand-made case: MSE 0.01 on [0, 1] images is 20 dB.
    x = torch.zeros(1, 1, 4, 4)
    assert float(psnr(x, x + 0.1)) == pytest.approx(20.0, abs=1e-4)


def test_identical_images() -> None:
    a, _ = _images(3)
    t = torch.from_numpy(a)
    assert float(ssim(t, t)) == pytest.approx(1.0, abs=1e-12)
    assert float(mse(t, t)) == 0.0
    assert math.isinf(float(psnr(t, t)))


def test_bad_input() -> None:
    x = torch.zeros(1, 1, 12, 12)
    with pytest.raises(ValueError, match="same shape"):
        ssim(x, torch.zeros(1, 1, 12, 11))
    with pytest.raises(ValueError, match="smaller than"):
        ssim(torch.zeros(1, 1, 8, 8), torch.zeros(1, 1, 8, 8))
    with pytest.raises(ValueError, match="data_range"):
        psnr(x, x, data_range=0)
    with pytest.raises(ValueError, match="reduction"):
        mse(x, x, reduction="sum")
