"""Privacy tools: image-quality metrics and model-inversion attacks on split activations.

See :mod:`sfl_sim.privacy.metrics` (MSE, PSNR, SSIM) and :mod:`sfl_sim.privacy.inversion`
(shallow convolutional autoencoder inverter, attacker training and evaluation), used by the
``scala_pe`` algorithm and ``bench/privacy_attack.py`` (SCALA journal §5.7, Table VI).
"""
from sfl_sim.privacy.inversion import InversionModel, evaluate_attack, to_unit_range, train_attacker
from sfl_sim.privacy.metrics import gaussian_window, mse, psnr, ssim

__all__ = ["InversionModel", "evaluate_attack", "gaussian_window", "mse", "psnr", "ssim", "to_unit_range",
           "train_attacker"]
