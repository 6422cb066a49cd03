"""Large-scale shadowing, drawn once per client when the cell is built.

A shadowing model is any object with ``sample_db(n_clients, rng) -> ndarray (n,)``: extra loss in
dB added to the path loss; register new ones in :data:`SHADOWING`.
"""
from __future__ import annotations

import numpy as np

from ._checks import check_count, check_scalar
from .registry import Registry

__all__ = ["SHADOWING", "NoShadowing", "LogNormalShadowing"]

SHADOWING = Registry("shadowing")


@SHADOWING.register("none")
class NoShadowing:
    """No shadowing: every client gets 0 dB."""

    def __repr__(self) -> str:
        return "NoShadowing()"

    def sample_db(self, n_clients: int, rng: np.random.Generator) -> np.ndarray:
        """Return zeros.

        Parameters
        ----------
        n_clients : int
            Number of clients, >= 0.
        rng : numpy.random.Generator
            Not consumed, so switching shadowing off leaves other draws from it unchanged.

        Returns
        -------
        numpy.ndarray, shape (n_clients,)
            Zeros (dB).
        """
        return np.zeros(check_count("n_clients", n_clients))


@SHADOWING.register("lognormal")
class LogNormalShadowing:
    """Log-normal shadowing: zero-mean Gaussian in dB with standard deviation ``sigma_db``.

    Parameters
    ----------
    sigma_db : float, default 8.0
        Standard deviation in dB, >= 0 (8 dB is the TR 36.814 macro value).

    Raises
    ------
    ValueError
        If ``sigma_db`` is negative or non-finite.
    """

    def __init__(self, sigma_db: float = 8.0) -> None:
        self.sigma_db = check_scalar("sigma_db", sigma_db, minimum=0.0)

    def __repr__(self) -> str:
        return f"LogNormalShadowing(sigma_db={self.sigma_db!r})"

    def sample_db(self, n_clients: int, rng: np.random.Generator) -> np.ndarray:
        """Draw one shadowing value per client.

        Parameters
        ----------
        n_clients : int
            Number of clients, >= 0.
        rng : numpy.random.Generator
            Source of the draws.

        Returns
        -------
        numpy.ndarray, shape (n_clients,)
            Shadowing in dB (positive = extra loss).
        """
        n = check_count("n_clients", n_clients)
        return rng.normal(0.0, self.sigma_db, n)
