"""Large-scale shadowing: extra loss in dB added to the path loss of each client.

Protocol
--------
A shadowing model is any object with ``sample_db(n_clients, rng) -> ndarray (n,)``; register new
ones in :data:`SHADOWING`.  A model that needs to know where the clients are (spatial
correlation) or the path-loss model's sigma also implements the *site* methods, which the
:class:`~sfl_sim.channel.Cell` prefers when present::

    sample_site_db(site, rng) -> (shadowing_db (n,), state)
    update_site_db(state, old_site, new_site, rng) -> (shadowing_db (n,), state)

``site`` is a :class:`ShadowingSite` (positions, distances, LOS state, the path-loss model's
sigma and decorrelation distance per client); ``state`` is whatever the model needs to carry
from one call to the next (opaque to the Cell).  ``update_site_db`` runs when clients move
(:meth:`sfl_sim.channel.Cell.move`); a model without it keeps each client's value.

Parameters ``sigma_db`` and ``decorrelation_m`` accept the string ``"model"``: take the value of
the path-loss model (``shadowing_sigma_db(los)`` / ``shadowing_decorrelation_m(los)``, per
client and per LOS state: TR 38.901 UMa 4/6 dB, TR 36.814 macro 8 dB...).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
import scipy.linalg
import scipy.spatial.distance

from sfl_sim.channel.limits import DECORRELATION_M, SHADOWING_SIGMA_DB
from sfl_sim.channel.protocols import Shadowing, ShadowingSite
from sfl_sim.kit.checks import check_count
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel
from sfl_sim.kit.registry import Registry

__all__ = ["SHADOWING", "NoShadowing", "LogNormalShadowing", "CorrelatedShadowing"]

MODEL: Literal["model"] = "model"
#: A shadowing standard deviation: dB, or "model" (the path-loss model's own value).
SigmaDb = Annotated[float, SHADOWING_SIGMA_DB] | Literal["model"]
#: A decorrelation distance: metres, or "model" (the path-loss model's own value).
DecorrelationM = Annotated[float, DECORRELATION_M] | Literal["model"]


def _resolve(name: str, value: Any, model_value: np.ndarray | None, n: int) -> np.ndarray:
    """Per-client array of ``value``, or of the path-loss model's value for ``"model"``."""
    if value == MODEL:
        if model_value is None:
            raise ValueError(
                f"{name}='model' needs a path-loss model that gives one "
                f"(a shadowing_sigma_db / shadowing_decorrelation_m method), got none; give a number"
            )
        return np.broadcast_to(np.asarray(model_value, dtype=float), (n,)).copy()
    return np.full(n, float(value))

SHADOWING = Registry("shadowing", protocol=Shadowing)


@SHADOWING.register("none")
class NoShadowing(Component):
    """No shadowing: every client gets 0 dB."""

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

    def sample_site_db(self, site: ShadowingSite, rng: np.random.Generator) -> tuple[np.ndarray, None]:
        """Zeros for every client of ``site``; ``rng`` is not consumed."""
        return np.zeros(site.n_clients), None

    def update_site_db(
        self, state: Any, old_site: ShadowingSite, new_site: ShadowingSite, rng: np.random.Generator
    ) -> tuple[np.ndarray, None]:
        """Zeros again."""
        return np.zeros(new_site.n_clients), None


@SHADOWING.register("lognormal")
class LogNormalShadowing(Component):
    """Log-normal shadowing: zero-mean Gaussian in dB with standard deviation ``sigma_db``.

    Independent between clients.  Each client keeps a unit normal ``z`` for the whole run; its
    shadowing is ``sigma z`` (with ``sigma_db: model``, ``sigma`` follows the client's LOS state,
    so a LOS change after a move rescales it).

    Raises
    ------
    ValueError
        If ``sigma_db`` is negative, non-finite, or a string other than ``"model"``.
    """

    class Params(ParamsModel):
        sigma_db: Annotated[SigmaDb, Doc(
            "Standard deviation in dB, >= 0 (8 dB is the TR 36.814 macro value), or ``\"model\"`` for the path-loss "
            "model's sigma per client (only inside a Cell, through ``sample_site_db``).")] = 8.0

    params: Params

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
        if self.params.sigma_db == MODEL:
            raise ValueError(
                "sigma_db='model' takes the path-loss model's sigma, which sample_db(n_clients, rng) "
                "does not know; use sample_site_db(site, rng) (what Cell does) or give a number"
            )
        return rng.normal(0.0, self.params.sigma_db, n)

    def sample_site_db(self, site: ShadowingSite, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """One draw per client of ``site``.

        Parameters
        ----------
        site : ShadowingSite
            The clients (only the count, and the model sigma for ``"model"``, are used).
        rng : numpy.random.Generator
            Source of the n unit normals (same draws as :meth:`sample_db`).

        Returns
        -------
        shadowing_db : numpy.ndarray, shape (n,)
            Shadowing in dB.
        state : numpy.ndarray, shape (n,)
            The unit normals ``z``.
        """
        n = site.n_clients
        sigma = _resolve("sigma_db", self.params.sigma_db, site.model_sigma_db, n)
        z = rng.standard_normal(n)
        return sigma * z, z

    def update_site_db(
        self, state: np.ndarray, old_site: ShadowingSite, new_site: ShadowingSite, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Keep each client's ``z``; rescale by the (possibly new) sigma.  ``rng`` is not consumed."""
        sigma = _resolve("sigma_db", self.params.sigma_db, new_site.model_sigma_db, new_site.n_clients)
        return sigma * state, state


@SHADOWING.register("correlated")
class CorrelatedShadowing(Component):
    """Spatially correlated log-normal shadowing (exponential correlation, Gudmundson model).

    Two independent zero-mean, unit-variance Gaussian fields over the plane — one for clients in
    LOS, one for clients in NLOS (as TR 38.901 does; a single field when the path-loss model has
    no LOS state) — each with correlation ``exp(-|x - y| / d_corr)`` between points ``x`` and
    ``y``.  Client k's shadowing is ``sigma_k * z_{state_k}(x_k)`` dB.

    * Drawing: both fields are sampled jointly at all client positions (Cholesky of the n x n
      correlation matrix, so clients close to each other get similar values).
    * Moving (:meth:`update_site_db`): the fields at the new positions are drawn from their
      Gaussian distribution conditioned on the values at the old positions.  A lone client that
      moves by ``dd`` gets correlation ``exp(-dd / d_corr)`` with its old value (Gudmundson); a
      client that did not move keeps its value exactly; clients stay jointly correlated by their
      separations.  Conditioning is on the last positions only (a Markov approximation).

    Notes
    -----
    Cost is O(n^3) in the number of clients per draw (n = 1000 takes well under a second).
    :meth:`sample_db` (no positions) gives independent draws and needs a numeric ``sigma_db``.

    Raises
    ------
    ValueError
        For a negative or non-finite number, or a string other than ``"model"``.
    """

    class Params(ParamsModel):
        sigma_db: Annotated[SigmaDb, Doc(
            "Standard deviation in dB, >= 0, or the path-loss model's sigma per client / LOS state.")] = MODEL
        decorrelation_m: Annotated[DecorrelationM, Doc(
            "Decorrelation distance ``d_corr`` in metres, > 0, or the path-loss model's (TR 38.901 Table 7.5-6: UMa "
            "37 m LOS / 50 m NLOS, UMi 10 m / 13 m).  With ``\"model\"`` the LOS and NLOS fields take the model's LOS "
            "and NLOS values.")] = MODEL

    params: Params

    def sample_db(self, n_clients: int, rng: np.random.Generator) -> np.ndarray:
        """Independent draws (no positions known); needs a numeric ``sigma_db``."""
        n = check_count("n_clients", n_clients)
        if self.params.sigma_db == MODEL:
            raise ValueError(
                "sigma_db='model' takes the path-loss model's sigma, which sample_db(n_clients, rng) "
                "does not know; use sample_site_db(site, rng) (what Cell does) or give a number"
            )
        return rng.normal(0.0, self.params.sigma_db, n)

    # ------------------------------------------------------------------ site methods
    def sample_site_db(self, site: ShadowingSite, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
        """Draw the fields at the clients' positions.

        Parameters
        ----------
        site : ShadowingSite
            Positions, LOS state and model sigma / decorrelation of the n clients.
        rng : numpy.random.Generator
            Source of the draws: n normals for the LOS field, then n for the NLOS field.

        Returns
        -------
        shadowing_db : numpy.ndarray, shape (n,)
            Shadowing in dB.
        state : dict
            ``positions_m`` (n, 2) and ``fields`` (2, n): unit-variance values of the LOS and
            NLOS fields at the positions.
        """
        pos = np.asarray(site.positions_m, dtype=float)
        d_corr = self._field_decorrelation_m(site)
        fields = np.empty((2, site.n_clients))
        for f in range(2):
            corr = _exp_correlation(pos, pos, d_corr[f])
            fields[f] = _gaussian(corr, rng)
        state = {"positions_m": pos.copy(), "fields": fields}
        return self._values_db(state, site), state

    def update_site_db(
        self, state: dict, old_site: ShadowingSite, new_site: ShadowingSite, rng: np.random.Generator
    ) -> tuple[np.ndarray, dict]:
        """Move the clients: draw the fields at the new positions given their old values.

        Parameters
        ----------
        state : dict
            From :meth:`sample_site_db` or a previous update.
        old_site, new_site : ShadowingSite
            The clients before and after the move (same n, same order).
        rng : numpy.random.Generator
            Source of the innovations (n normals per field, drawn whether or not clients moved).

        Returns
        -------
        shadowing_db : numpy.ndarray, shape (n,)
            Shadowing at the new positions, dB.
        state : dict
            Updated state.
        """
        old_pos = state["positions_m"]
        new_pos = np.asarray(new_site.positions_m, dtype=float)
        if new_pos.shape != old_pos.shape:
            raise ValueError(
                f"new_site must have the same clients as the state, got positions of shape {new_pos.shape}, "
                f"expected {old_pos.shape}"
            )
        d_corr = self._field_decorrelation_m(new_site)
        fields = np.empty_like(state["fields"])
        moved = np.hypot(*(new_pos - old_pos).T) > 0
        for f in range(2):
            noise = rng.standard_normal((new_pos.shape[0],))
            old = state["fields"][f]
            fields[f] = old
            if not moved.any():
                continue
            # Condition the moved clients' new values on every client's old value (unmoved
            # clients' old positions are their new ones, so they stay put exactly).
            k_oo = _exp_correlation(old_pos, old_pos, d_corr[f])
            k_mo = _exp_correlation(new_pos[moved], old_pos, d_corr[f])
            k_mm = _exp_correlation(new_pos[moved], new_pos[moved], d_corr[f])
            factor = scipy.linalg.cho_factor(k_oo + 1e-10 * np.eye(k_oo.shape[0]), lower=True)
            gain = scipy.linalg.cho_solve(factor, k_mo.T).T  # K_mo K_oo^-1, shape (m, n)
            mean = gain @ old
            cov = k_mm - gain @ k_mo.T
            fields[f, moved] = mean + _sqrt_psd(cov) @ noise[moved]
        new_state = {"positions_m": new_pos.copy(), "fields": fields}
        return self._values_db(new_state, new_site), new_state

    # ------------------------------------------------------------------ helpers
    def _field_decorrelation_m(self, site: ShadowingSite) -> tuple[float, float]:
        """(LOS-field, NLOS-field) decorrelation distances in metres."""
        if self.params.decorrelation_m != MODEL:
            return float(self.params.decorrelation_m), float(self.params.decorrelation_m)
        model = site.model_decorrelation_m
        if model is None:
            raise ValueError(
                "decorrelation_m='model' needs a path-loss model with shadowing_decorrelation_m, got "
                "none; give a number"
            )
        model = np.broadcast_to(np.asarray(model, dtype=float), (site.n_clients,))
        los = site.los if site.los is not None else np.zeros(site.n_clients, dtype=bool)
        # The model gives one value per state; read it off any client in that state (or ask the
        # model's default when no client is in it: the field is then unused).
        los_vals, nlos_vals = model[los], model[~los]
        d_los = float(los_vals[0]) if los_vals.size else float(model.max())
        d_nlos = float(nlos_vals[0]) if nlos_vals.size else float(model.max())
        return d_los, d_nlos

    def _values_db(self, state: dict, site: ShadowingSite) -> np.ndarray:
        n = site.n_clients
        sigma = _resolve("sigma_db", self.params.sigma_db, site.model_sigma_db, n)
        los = site.los if site.los is not None else np.zeros(n, dtype=bool)
        return sigma * np.where(los, state["fields"][0], state["fields"][1])


def _exp_correlation(a_m: np.ndarray, b_m: np.ndarray, decorrelation_m: float) -> np.ndarray:
    """``exp(-|a_i - b_j| / d_corr)``, shape (len(a), len(b))."""
    return np.exp(-scipy.spatial.distance.cdist(a_m, b_m) / decorrelation_m)


def _sqrt_psd(cov: np.ndarray) -> np.ndarray:
    """A matrix ``L`` with ``L L^T = cov`` for a symmetric PSD ``cov`` (Cholesky, else eigen)."""
    if cov.size == 0:
        return cov
    try:
        return scipy.linalg.cholesky(cov + 1e-12 * np.eye(cov.shape[0]), lower=True)
    except np.linalg.LinAlgError:
        w, v = np.linalg.eigh((cov + cov.T) / 2.0)
        return v * np.sqrt(np.clip(w, 0.0, None))


def _gaussian(corr: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One zero-mean draw with covariance ``corr``."""
    noise = rng.standard_normal(corr.shape[0])
    return _sqrt_psd(corr) @ noise
