"""Physically impossible components (issue 36, item 8): each passes its protocol and every
parameter check, and only the conformance check refuses it."""
from __future__ import annotations

from typing import Any

import numpy as np

from sfl_sim.channel import TR36814Macro


class FlippedSignPathLoss(TR36814Macro):
    """TR 36.814's path loss with its sign flipped: a gain of ~120 dB (an SNR of ~245 dB)."""

    def loss_db(self, distance_m: Any) -> np.ndarray:
        return -super().loss_db(distance_m)


class RicianMeanKPlusOne:
    """Rician fading without the 1 / (K + 1) normalisation: mean power K + 1 (K = 4 here)."""

    k_factor = 4.0

    def sample_power_gain(self, n: int, rng: np.random.Generator) -> np.ndarray:
        los = np.sqrt(self.k_factor)
        scatter = (rng.standard_normal(n) + 1j * rng.standard_normal(n)) / np.sqrt(2.0)
        return np.abs(los + scatter) ** 2
