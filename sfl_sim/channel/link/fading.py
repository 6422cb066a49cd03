"""Small-scale fading: a random power gain per client and coherence block, mean 1.

A fading model is any object with ``sample_power_gain(n, rng) -> ndarray (n,)`` returning linear
power gains ``|h|^2 >= 0`` with ``E|h|^2 = 1`` (fading redistributes the received power, the
large-scale gain sets its mean); register new ones in :data:`FADING`.  The engine draws one value
per client per coherence block (:meth:`sfl_sim.channel.Cell.sample_fading`) and multiplies the
large-scale gain by it.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from sfl_sim.channel.limits import NAKAGAMI_M, RICIAN_K_FACTOR_DB
from sfl_sim.channel.protocols import Fading, TimeVaryingFading
from sfl_sim.kit.checks import check_count
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel
from sfl_sim.kit.registry import Registry

__all__ = ["FADING", "NoFading", "RayleighFading", "RicianFading", "NakagamiFading"]

FADING = Registry("fading", protocol=Fading, alternatives=(TimeVaryingFading,))


@FADING.register("none")
class NoFading(Component):
    """No small-scale fading: every gain is exactly 1."""

    def sample_power_gain(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Ones, shape (n,); ``rng`` is not consumed (switching fading off moves no other draw)."""
        return np.ones(check_count("n", n))


@FADING.register("rayleigh")
class RayleighFading(Component):
    """Rayleigh fading: ``h`` circularly-symmetric complex Gaussian, so ``|h|^2 ~ Exp(1)``."""

    def sample_power_gain(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw n power gains.

        Parameters
        ----------
        n : int
            Number of gains (clients), >= 0.
        rng : numpy.random.Generator
            Source of the draws.

        Returns
        -------
        numpy.ndarray, shape (n,)
            Linear power gains, exponential with mean 1.
        """
        return rng.exponential(1.0, check_count("n", n))


@FADING.register("rician")
class RicianFading(Component):
    """Rician fading with K factor ``K`` (LOS-to-scattered power ratio), unit mean power.

    ``h = nu + s (X + jY)`` with ``X, Y ~ N(0, 1)``, ``nu^2 = K / (K + 1)`` and
    ``2 s^2 = 1 / (K + 1)``, so ``E|h|^2 = 1`` and ``|h|`` is Rice(``nu / s``, scale ``s``).

    Raises
    ------
    ValueError
        If ``k_factor_db`` is not a finite number.
    """

    class Params(ParamsModel):
        k_factor_db: Annotated[float, RICIAN_K_FACTOR_DB, Doc(
            "K in dB, in [-100, 100] (38.901 UMi LOS mean: 9 dB; very negative -> Rayleigh).")] = 9.0

    params: Params

    @property
    def k_factor_linear(self) -> float:
        """K as a power ratio."""
        return 10.0 ** (self.params.k_factor_db / 10.0)

    def sample_power_gain(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw n power gains.

        Parameters
        ----------
        n : int
            Number of gains, >= 0.
        rng : numpy.random.Generator
            Source of the draws (2n normals: real parts, then imaginary parts).

        Returns
        -------
        numpy.ndarray, shape (n,)
            Linear power gains ``|h|^2`` with mean 1.
        """
        n = check_count("n", n)
        k = self.k_factor_linear
        nu = np.sqrt(k / (k + 1.0))
        s = np.sqrt(0.5 / (k + 1.0))
        real = nu + s * rng.standard_normal(n)
        imag = s * rng.standard_normal(n)
        return real**2 + imag**2


@FADING.register("nakagami")
class NakagamiFading(Component):
    """Nakagami-m fading: ``|h|^2 ~ Gamma(shape m, scale 1/m)``, unit mean power.

    Raises
    ------
    ValueError
        If ``m`` is below 0.5 or non-finite.
    """

    class Params(ParamsModel):
        m: Annotated[float, NAKAGAMI_M, Doc("Shape, in [0.5, 1e6] (m = 1 is Rayleigh; larger m, milder fading).")] = \
            1.0

    params: Params

    def sample_power_gain(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw n power gains, Gamma(m, 1/m) (mean 1, variance 1/m); shape (n,)."""
        m = self.params.m
        return rng.gamma(m, 1.0 / m, check_count("n", n))
