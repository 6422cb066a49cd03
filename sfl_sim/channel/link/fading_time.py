"""Small-scale fading as a process in time: each client's gain at any absolute simulated time.

These components implement :class:`~sfl_sim.channel.protocols.TimeVaryingFading`: ``start(n,
doppler_hz, rng)`` draws every client's state once per run, then ``power_gain_at(client_ids, t_s)``
gives ``|h(t)|^2`` (mean 1) as a deterministic function of the start generator's seed, the client
and the time, whatever was asked before and in whatever grouping (common random numbers: the
static, fluid and slot forms of a run and its re-timings see one channel).

=================  =======================================================================================
``jakes``          Clarke's isotropic Rayleigh fading by a sum of sinusoids (Xiao, Zheng & Beaulieu's
                   improved model); the complex envelope's autocorrelation is ``J0(2 pi f_D tau)``.
``gauss_markov``   First-order Gauss-Markov (AR(1)) complex Gaussian on a grid of ``update_interval_s``:
                   ``h[n+1] = rho h[n] + sqrt(1 - rho^2) w[n]``, ``rho = J0(2 pi f_D dt)``; the gain is
                   constant between grid points.
``rician_jakes``   Rician with K factor: a line-of-sight phasor with its own Doppler phase plus the
                   ``jakes`` scattered part.
=================  =======================================================================================

Each also keeps ``sample_power_gain(n, rng)``, an i.i.d. draw of its stationary marginal, so a
cell that does not know time yet runs it as a block-fading model.  The maximum Doppler frequency
of a client moving at ``v`` on carrier ``f_c`` is :func:`doppler_hz`.
"""
from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar

import numpy as np
from scipy.optimize import brentq
from scipy.special import j0

from sfl_sim.channel.large_scale.pathloss import SPEED_OF_LIGHT_M_PER_S
from sfl_sim.channel.limits import FADING_SINUSOIDS, FADING_UPDATE_INTERVAL_S, RICIAN_K_FACTOR_DB, SPEED_M_PER_S
from sfl_sim.channel.link.fading import FADING
from sfl_sim.kit.checks import check_count, check_state_keys, invalid, state_array
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel

__all__ = ["doppler_hz", "JakesFading", "GaussMarkovFading", "RicianJakesFading", "HALF_CORRELATION_ARG"]


def doppler_hz(speed_m_per_s: Any, carrier_hz: Any) -> np.ndarray:
    """Maximum Doppler frequency ``f_D = v f_c / c`` of a client moving at ``speed_m_per_s``.

    Parameters
    ----------
    speed_m_per_s : array_like
        Speeds, m/s, finite and >= 0.
    carrier_hz : array_like
        Carrier frequency, Hz, finite and > 0 (broadcast against the speeds).

    Returns
    -------
    numpy.ndarray
        ``f_D`` in Hz, the broadcast shape; ``c = 299 792 458 m/s`` exactly (the SI definition of the metre).

    Raises
    ------
    ValueError
        One line naming the argument and the value, for a negative or non-finite speed or a
        carrier that is not a finite positive number.
    """
    v = np.asarray(speed_m_per_s, dtype=float)
    f = np.asarray(carrier_hz, dtype=float)
    if not np.all(np.isfinite(v) & (v >= 0)):
        bad = v[~(np.isfinite(v) & (v >= 0))] if v.ndim else v
        raise invalid("speed_m_per_s", float(np.ravel(bad)[0]), "finite numbers >= 0 (m/s)")
    if not np.all(np.isfinite(f) & (f > 0)):
        bad = f[~(np.isfinite(f) & (f > 0))] if f.ndim else f
        raise invalid("carrier_hz", float(np.ravel(bad)[0]), "finite numbers > 0 (Hz)")
    return v * f / SPEED_OF_LIGHT_M_PER_S


#: ``x`` with ``J0(x) = 1/2`` on the first lobe: the complex envelope of Clarke's model is half
#: correlated after ``tau = x / (2 pi f_D)`` (about ``0.242 / f_D``); computed, not quoted.
HALF_CORRELATION_ARG = float(brentq(lambda x: j0(x) - 0.5, 0.5, 2.4))


# ---------------------------------------------------------------------- common part
def _power(h: np.ndarray) -> np.ndarray:
    """``|h|^2`` of complex envelopes, as ``re^2 + im^2`` (every complex-envelope model's gain)."""
    return h.real * h.real + h.imag * h.imag


class _TimeVarying(Component):
    """What every time-varying fading here shares: the started state and the argument checks."""

    time_varying: ClassVar[bool] = True
    #: Whether the gain is a smooth function of time (the radio state then integrates a transfer's
    #: rate by Gauss-Legendre panels; False: piecewise constant, held over steps).
    smooth_in_time: ClassVar[bool] = False
    _n: int | None = None

    def __post_init__(self) -> None:
        self._n = None
        self._doppler_hz = np.zeros(0)

    @property
    def speed_m_per_s(self) -> float | None:
        """The speed every client's Doppler is computed from (the ``speed_m_per_s`` parameter), m/s;
        None: the radio state takes each client's mobility speed."""
        return self.params.speed_m_per_s  # type: ignore[attr-defined]

    # -- what a subclass provides
    def _draw(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _set(self, state: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    _STATE_KEYS: ClassVar[tuple[str, ...]] = ()
    _STATE_SHAPES: ClassVar[dict[str, tuple[str, ...]]] = {}
    _STATE_DTYPES: ClassVar[dict[str, Any]] = {}

    # -- the protocol
    def start(self, n_clients: int, doppler_hz: Any, rng: np.random.Generator) -> None:
        """Draw every client's state.

        Parameters
        ----------
        n_clients : int
            Clients, >= 0.
        doppler_hz : array_like, shape (n_clients,)
            Maximum Doppler frequency of each client, Hz, finite and >= 0 (:func:`doppler_hz`).
        rng : numpy.random.Generator
            The run's fading stream; everything random is drawn here, once.

        Raises
        ------
        ValueError
            For a bad count or Doppler array (one line).
        """
        n = check_count("n_clients", n_clients)
        fd = np.array(doppler_hz, dtype=float, copy=True).reshape(-1) if np.ndim(doppler_hz) else \
            np.full(n, float(doppler_hz))
        if fd.shape != (n,):
            raise invalid("doppler_hz", f"shape {fd.shape}", f"shape ({n},), one per client")
        if not np.all(np.isfinite(fd) & (fd >= 0)):
            raise invalid("doppler_hz", float(fd[~(np.isfinite(fd) & (fd >= 0))][0]), "finite numbers >= 0 (Hz)")
        state = {"doppler_hz": fd, **self._draw(n, rng)}
        self._install(state)

    def power_gain_at(self, client_ids: Any, t_s: Any) -> np.ndarray:
        """``|h(t)|^2`` of each client id at each time.

        Parameters
        ----------
        client_ids : array_like of int, shape (k,)
            Clients (repeats allowed), in ``[0, n_clients)``.
        t_s : float or array_like, shape (k,)
            Absolute simulated times, s, finite and >= 0.

        Returns
        -------
        numpy.ndarray, shape (k,)
            Linear power gains, mean 1.
        """
        return self._gain(*self._ids_times(client_ids, t_s))

    def power_gain_unchecked(self, ids: np.ndarray, t_s: np.ndarray) -> np.ndarray:
        """:meth:`power_gain_at` without its argument checks: ``ids`` an integer array (k,) of
        started clients, ``t_s`` a float array of the same shape, finite and >= 0 (the radio state
        checked them once; a transfer's rate asks at thousands of steps)."""
        return self._gain(ids, t_s)

    def power_gain_panels(self, client_ids: np.ndarray, t0_s: np.ndarray, panel_s: np.ndarray, first: np.ndarray,
                          count: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The gains at a quadrature's nodes in panels of time: row ``r`` is client
        ``client_ids[r]`` at ``t0_s[r] + panel_s[r] * (first[r] + j + offsets[i])``, ``j <
        count[r]``; rows concatenated, shape (sum(count), len(offsets)).  Each value is
        :meth:`power_gain_unchecked` at that time (a model may override with the same gains up to
        float rounding, the same whatever other rows are asked with it).  Unchecked arguments."""
        ids = np.asarray(client_ids, dtype=np.intp)
        row = np.repeat(np.arange(ids.size), count)
        j = (np.repeat(first - np.cumsum(count) + count, count) + np.arange(row.size)).astype(float)
        t = t0_s[row][:, None] + panel_s[row][:, None] * (j[:, None] + offsets[None, :])
        p = offsets.size
        return self._gain(np.repeat(ids[row], p), t.reshape(-1)).reshape(-1, p)

    def _gain(self, ids: np.ndarray, t: np.ndarray) -> np.ndarray:
        """``|h|^2`` of the complex envelope (a model without a cheaper form of its own)."""
        return _power(self._envelope(ids, t))

    def _envelope(self, ids: np.ndarray, t: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _install(self, state: dict[str, Any]) -> None:
        self.__dict__.pop("_turns_kept", None)  # rotations of the previous state
        self._n = int(state["doppler_hz"].shape[0])
        self._doppler_hz = state["doppler_hz"]
        self._set(state)

    def _started(self) -> int:
        if self._n is None:
            raise ValueError(f"{type(self).__name__}: call start(n_clients, doppler_hz, rng) before asking for gains")
        return self._n

    def _ids(self, client_ids: Any) -> np.ndarray:
        n = self._started()
        ids = np.asarray(client_ids)
        if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
            raise invalid("client_ids", client_ids, "a 1-D array of integer client ids")
        ids = ids.astype(np.intp, copy=False)
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise invalid("client_ids", int(ids.max() if ids.max() >= n else ids.min()), f"ids in [0, {n - 1}]")
        return ids

    def _ids_times(self, client_ids: Any, t_s: Any) -> tuple[np.ndarray, np.ndarray]:
        ids = self._ids(client_ids)
        t = np.asarray(t_s, dtype=float)
        if t.ndim == 0:
            t = np.full(ids.shape, float(t))
        elif t.shape != ids.shape:
            raise invalid("t_s", f"shape {t.shape}", f"a scalar or shape {ids.shape}, one time per client id")
        if t.size and not (np.isfinite(t).all() and t.min() >= 0):
            bad = t[~(np.isfinite(t) & (t >= 0))]
            raise invalid("t_s", float(bad[0]), "finite times >= 0 (s)")
        return ids, t

    def state_dict(self) -> dict[str, Any]:
        """The per-client state as plain arrays (copies); ``{"started": False}`` before :meth:`start`.

        Returns
        -------
        dict
            ``started`` (bool), ``doppler_hz`` (n,) and the model's own arrays (see the class).
        """
        if self._n is None:
            return {"started": False}
        return {"started": True, "doppler_hz": self._doppler_hz.copy(),
                **{k: np.array(v, copy=True) for k, v in self._state().items()}}

    def _state(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` (arrays are copied): the gains continue as they were.

        Raises
        ------
        ValueError
            For other keys, or arrays of other shapes or non-finite values (one line).
        """
        owner = type(self).__name__
        if not isinstance(state, dict) or state.get("started") is False:
            check_state_keys(owner, state, ("started",))
            self.__post_init__()
            return
        check_state_keys(owner, state, ("started", "doppler_hz", *self._STATE_KEYS))
        n = int(np.shape(state["doppler_hz"])[0]) if np.ndim(state["doppler_hz"]) == 1 else -1
        sizes = {"n": n, "m": self._width()}
        loaded: dict[str, Any] = {"doppler_hz": state_array(owner, state, "doppler_hz", (n,))}
        for key in self._STATE_KEYS:
            shape = tuple(sizes[d] for d in self._STATE_SHAPES[key])
            loaded[key] = state_array(owner, state, key, shape, self._STATE_DTYPES.get(key, float))
            if np.iscomplexobj(loaded[key]) and not np.all(np.isfinite(loaded[key])):
                raise ValueError(f"{owner} state[{key!r}] must be finite, got {loaded[key]!r}")
        if not np.all(loaded["doppler_hz"] >= 0):
            raise invalid(f"{owner} state['doppler_hz']", loaded["doppler_hz"], "numbers >= 0 (Hz)")
        self._install(loaded)

    def _width(self) -> int:
        return 0


# ---------------------------------------------------------------------- Clarke / Jakes
@FADING.register("jakes")
class JakesFading(_TimeVarying):
    """Clarke's isotropic Rayleigh fading in time, by a sum of sinusoids (Xiao-Zheng-Beaulieu).

    Our reading of the improved Rayleigh model of C. Xiao, Y. R. Zheng and N. C. Beaulieu, "Novel
    sum-of-sinusoids simulation models for Rayleigh and Rician fading channels", IEEE Trans.
    Wireless Commun. 5(12), 2006 (the form of Zheng & Xiao, IEEE Commun. Lett. 6(6), 2002, with
    independent phases per sinusoid; we could not read the paper itself, so the tests check the
    statistics instead of the equation numbers)::

        X_c(t) = sqrt(2/M) sum_n cos(w_D t cos(a_n) + phi_n)
        X_s(t) = sqrt(2/M) sum_n cos(w_D t sin(a_n) + psi_n),   a_n = (2 pi n - pi + theta) / (4M)

    ``n = 1..M``, ``w_D = 2 pi f_D``, ``theta, phi_n, psi_n`` independent and uniform on
    ``[-pi, pi)``, drawn per client at :meth:`start`.  ``h = (X_c + j X_s) / sqrt(2)`` (our
    normalisation, so that ``E|h|^2 = 1``).  Because ``a_n`` is uniform on ``[(n-1) pi/(2M), n
    pi/(2M))`` the ``a_n`` together are uniform on ``[0, pi/2)``, and
    ``E[h(t) h*(t+tau)] = (2/pi) int_0^{pi/2} cos(w_D tau cos a) da = J0(w_D tau)`` for every ``M``
    (Clarke's autocorrelation); the envelope is Rayleigh as ``M`` grows.

    :meth:`coherence_time_s` is the lag at which ``J0(2 pi f_D tau)`` first falls to 1/2
    (:data:`HALF_CORRELATION_ARG` ``/ (2 pi f_D)``, about ``0.242 / f_D``): our definition, the
    50 % correlation threshold that textbooks use for coherence time (e.g. Rappaport, Wireless
    Communications, on coherence time; our reading), applied to the exact Clarke autocorrelation.

    ``sample_power_gain(n, rng)`` draws i.i.d. ``Exp(1)`` gains, the Rayleigh marginal, for a
    cell that does not know time (block fading).
    """

    class Params(ParamsModel):
        speed_m_per_s: Annotated[float | None, SPEED_M_PER_S, Doc(
            "The speed every client's Doppler is computed from, m/s, in [0, 1000]: a drop-based evaluation "
            "(clients stay where they were dropped, their channel fades as at this speed, as system-level "
            "evaluations fix a UE speed for fast fading); null: each client's mobility speed")] = None
        n_sinusoids: Annotated[int, FADING_SINUSOIDS, Doc(
            "Sinusoids M per quadrature component, in [4, 1024] (our choice: 16; 8 already gives "
            "good fourth-order statistics, Zheng & Xiao 2003).")] = 16

    params: Params
    smooth_in_time: ClassVar[bool] = True  # a sum of sinusoids
    _STATE_KEYS: ClassVar[tuple[str, ...]] = ("theta_rad", "phase_c_rad", "phase_s_rad")
    _STATE_SHAPES: ClassVar[dict[str, tuple[str, ...]]] = {
        "theta_rad": ("n",), "phase_c_rad": ("n", "m"), "phase_s_rad": ("n", "m")}

    def _width(self) -> int:
        return int(self.params.n_sinusoids)

    def _draw(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        m = self._width()
        return {"theta_rad": rng.uniform(-np.pi, np.pi, n),
                "phase_c_rad": rng.uniform(-np.pi, np.pi, (n, m)),
                "phase_s_rad": rng.uniform(-np.pi, np.pi, (n, m))}

    def _set(self, state: dict[str, np.ndarray]) -> None:
        m = self._width()
        self._theta, self._phase_c, self._phase_s = state["theta_rad"], state["phase_c_rad"], state["phase_s_rad"]
        alpha = (2.0 * np.pi * np.arange(1, m + 1)[None, :] - np.pi + self._theta[:, None]) / (4.0 * m)
        w_d = 2.0 * np.pi * self._doppler_hz[:, None]
        # angular frequencies of the sinusoids, rad/s (n, M): computed once, so a query is a few ops
        self._omega_c, self._omega_s = w_d * np.cos(alpha), w_d * np.sin(alpha)
        # both quadratures side by side (n, 2M), so that :meth:`_sums` takes one gather, product,
        # sum and cosine for both (a transfer's start asks one client at a time); the same numbers
        self._omega_cs = np.concatenate((self._omega_c, self._omega_s), axis=1)
        self._phase_cs = np.concatenate((self._phase_c, self._phase_s), axis=1)

    def _state(self) -> dict[str, np.ndarray]:
        return {"theta_rad": self._theta, "phase_c_rad": self._phase_c, "phase_s_rad": self._phase_s}

    def envelope_at(self, client_ids: Any, t_s: Any) -> np.ndarray:
        """The complex envelope ``h(t)`` of which :meth:`power_gain_at` is ``|h|^2`` (same
        arguments), shape (k,): for checking the statistics (its autocorrelation is ``J0``)."""
        return self._envelope(*self._ids_times(client_ids, t_s))

    def _sums(self, ids: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The quadratures' sums of cosines ``sum_n cos(w_n t + phi_n)`` (k,) each (unscaled).

        Both quadratures in one array (k, 2, M), each row's M terms summed along the last axis as
        two (k, M) arrays would be (the same order); one client by a slice, not a gather."""
        if ids.size == 1:
            i = int(ids[0])
            omega, phase = self._omega_cs[i:i + 1], self._phase_cs[i:i + 1]
        else:
            omega, phase = self._omega_cs[ids], self._phase_cs[ids]
        sums = np.cos(omega * t[:, None] + phase).reshape(ids.size, 2, self._width()).sum(axis=2)
        return sums[:, 0], sums[:, 1]

    def _envelope(self, ids: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Complex envelope ``h`` (k,) with ``E|h|^2 = 1``."""
        xc, xs = self._sums(ids, t)
        scale = 1.0 / math.sqrt(self._width())  # sqrt(2/M) / sqrt(2)
        return scale * (xc + 1j * xs)

    def _gain(self, ids: np.ndarray, t: np.ndarray) -> np.ndarray:
        return self._gain_of_sums(*self._sums(ids, t))

    def _gain_of_sums(self, xc: np.ndarray, xs: np.ndarray) -> np.ndarray:
        """``|h|^2`` from the quadratures' sums: ``(xc^2 + xs^2) / M`` (``|h|^2`` with ``h`` as in
        :meth:`_envelope`, in this order of operations: the one form every path here uses)."""
        return (xc * xc + xs * xs) / self._width()

    #: Steps of :meth:`power_gain_steps` from one exactly evaluated step to the next (our choice).
    ANCHOR_STEPS: ClassVar[int] = 32

    def power_gain_steps(self, client_ids: np.ndarray, t0_s: float, dt_s: np.ndarray, first: np.ndarray,
                         count: np.ndarray) -> np.ndarray:
        """The gains of steps in time: row ``r`` is client ``client_ids[r]`` at
        ``t0_s + dt_s[r] * (first[r] + i)``, ``i < count[r]``; rows concatenated, shape (sum(count),).

        The same gains as :meth:`power_gain_unchecked` at those times but for float rounding (a
        transfer's rate integrated over its steps asks thousands of them): the phases ``w t + phi``
        of every :data:`ANCHOR_STEPS`-th step of a row (steps 0, 32, 64 ... whatever ``first``)
        are evaluated as there, and the steps between turn them by ``w dt i`` (kept per client
        and step) by the angle-addition formula ``cos(a + b) = cos a cos b - sin a sin b``: one
        cosine and sine per anchor instead of a cosine per step; the sinusoids are summed in
        another order.  Arguments are not checked (the radio state checked them once).
        """
        span = self.ANCHOR_STEPS
        ids = np.asarray(client_ids, dtype=np.intp)
        # anchors on each row's own grid of steps 0, span, 2 span ... (whatever its first step: a
        # transfer's gains do not depend on how its steps are asked in chunks)
        lowest = first // span
        anchors = (first + count - 1) // span - lowest + 1
        row = np.repeat(np.arange(ids.size), anchors)
        within = np.arange(row.size) - np.repeat(np.cumsum(anchors) - anchors, anchors)
        t_a = t0_s + dt_s[row] * ((lowest[row] + within) * span)  # the anchors' times, as the steps' own
        who = ids[row]
        tt = t_a[:, None]
        # per anchor and quadrature [cos a, -sin a] (2M) times [cos b; sin b] per step, summed
        # over the sinusoids, is the quadrature's sum of cosines at each step
        theta_c = self._omega_c[who] * tt + self._phase_c[who]
        theta_s = self._omega_s[who] * tt + self._phase_s[who]
        turns = self._turns(ids, dt_s)
        lhs = [np.concatenate((np.cos(theta_c), -np.sin(theta_c)), axis=1),
               np.concatenate((np.cos(theta_s), -np.sin(theta_s)), axis=1)]
        out = np.empty(int(count.sum()))
        at, a0 = 0, 0
        for r, (n, na, skip) in enumerate(zip(count.tolist(), anchors.tolist(), (first - lowest * span).tolist(),
                                              strict=True)):
            # einsum's own loops: each step's terms summed in one order whatever the shape or the
            # memory's alignment (a BLAS matrix product's order can follow them)
            xc = np.einsum("ak,kl->al", lhs[0][a0:a0 + na], turns[r][0]).reshape(-1)[skip:skip + n]
            xs = np.einsum("ak,kl->al", lhs[1][a0:a0 + na], turns[r][1]).reshape(-1)[skip:skip + n]
            out[at:at + n] = self._gain_of_sums(xc, xs)
            at, a0 = at + n, a0 + na
        return out

    def power_gain_panels(self, client_ids: np.ndarray, t0_s: np.ndarray, panel_s: np.ndarray, first: np.ndarray,
                          count: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """:meth:`_TimeVarying.power_gain_panels` by angle addition, as :meth:`power_gain_steps`:
        the phases at every :data:`ANCHOR_STEPS`-th panel's start of a row (on its own grid of
        panels 0, 32, 64 ..., whatever ``first``) are evaluated, the nodes after it turn them by
        ``w panel (l + offsets[i])`` (kept per client, panel and offsets).  The same gains as
        :meth:`power_gain_unchecked` at those times but for float rounding, and each row's the same
        whatever rows are asked with it."""
        span, p = self.ANCHOR_STEPS, offsets.size
        ids = np.asarray(client_ids, dtype=np.intp)
        lowest = first // span
        anchors = (first + count - 1) // span - lowest + 1
        row = np.repeat(np.arange(ids.size), anchors)
        within = np.arange(row.size) - np.repeat(np.cumsum(anchors) - anchors, anchors)
        t_a = t0_s[row] + panel_s[row] * ((lowest[row] + within) * span)
        who = ids[row]
        tt = t_a[:, None]
        theta_c = self._omega_c[who] * tt + self._phase_c[who]
        theta_s = self._omega_s[who] * tt + self._phase_s[who]
        turns = self._turns(ids, panel_s, offsets)
        lhs = [np.concatenate((np.cos(theta_c), -np.sin(theta_c)), axis=1),
               np.concatenate((np.cos(theta_s), -np.sin(theta_s)), axis=1)]
        out = np.empty((int(count.sum()), p))
        at, a0 = 0, 0
        for r, (n, na, skip) in enumerate(zip(count.tolist(), anchors.tolist(), (first - lowest * span).tolist(),
                                              strict=True)):
            xc = np.einsum("ak,kl->al", lhs[0][a0:a0 + na], turns[r][0]).reshape(-1, p)[skip:skip + n]
            xs = np.einsum("ak,kl->al", lhs[1][a0:a0 + na], turns[r][1]).reshape(-1, p)[skip:skip + n]
            out[at:at + n] = self._gain_of_sums(xc, xs)
            at, a0 = at + n, a0 + na
        return out

    def _turns(self, ids: np.ndarray, dt_s: np.ndarray,
               offsets: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per row and quadrature: ``[cos; sin]`` of ``w dt i`` (shape (2M, ANCHOR_STEPS)), or with
        ``offsets`` of ``w dt (l + offsets[i])`` (columns ``l`` major, shape (2M, ANCHOR_STEPS p)),
        kept per (client, dt, offsets)."""
        kept: dict[tuple[int, float, Any], Any] = self.__dict__.setdefault("_turns_kept", {})
        if len(kept) > 4096:
            kept.clear()
        steps = np.arange(self.ANCHOR_STEPS, dtype=float)[:, None]
        tag = None
        if offsets is not None:
            tag = tuple(offsets.tolist())
            steps = (steps + offsets[None, :]).reshape(-1, 1)
        out = []
        for k, dt in zip(ids.tolist(), dt_s.tolist(), strict=True):
            turn = kept.get((k, dt, tag))
            if turn is None:
                turn = kept[(k, dt, tag)] = tuple(
                    np.concatenate((np.cos(b), np.sin(b)), axis=1).T.copy()
                    for b in (self._omega_c[k] * (dt * steps), self._omega_s[k] * (dt * steps)))
            out.append(turn)
        return out

    def coherence_time_s(self, client_ids: Any) -> np.ndarray:
        """Lag at which the envelope's correlation ``J0(2 pi f_D tau)`` falls to 1/2, s; inf for
        ``f_D = 0`` (see the class)."""
        fd = self._doppler_hz[self._ids(client_ids)]
        with np.errstate(divide="ignore"):
            return np.where(fd > 0, HALF_CORRELATION_ARG / (2.0 * np.pi * np.where(fd > 0, fd, 1.0)), np.inf)

    def sample_power_gain(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` i.i.d. ``Exp(1)`` gains (the Rayleigh marginal), for a cell without time."""
        return rng.exponential(1.0, check_count("n", n))


@FADING.register("rician_jakes")
class RicianJakesFading(JakesFading):
    """Rician fading in time: a line-of-sight phasor with its own Doppler phase plus Clarke scattering.

    Our reading of the Rician model of Xiao, Zheng & Beaulieu (IEEE Trans. Wireless Commun. 5(12),
    2006), whose specular part is a zero-mean stochastic sinusoid::

        h(t) = sqrt(K/(K+1)) exp(j (w_D t cos(theta_0) + phi_0)) + sqrt(1/(K+1)) h_s(t)

    with ``h_s`` the :class:`JakesFading` envelope (mean power 1), ``phi_0`` uniform on ``[-pi, pi)``
    and ``theta_0``, the angle between the line of sight and the direction of travel, drawn uniform
    on ``[-pi, pi)`` per client (our choice: the simulator knows no heading relative to the base
    station).  ``E|h|^2 = 1`` and the line of sight carries ``K / (K + 1)`` of the power.

    :meth:`coherence_time_s` is the scattered part's (as for :class:`JakesFading`): the
    line-of-sight phasor has constant power.  ``sample_power_gain`` draws the Rician marginal
    (as ``rician``) for a cell that does not know time.
    """

    class Params(JakesFading.Params):
        k_factor_db: Annotated[float, RICIAN_K_FACTOR_DB, Doc(
            "K in dB, in [-100, 100] (38.901 UMi LOS mean: 9 dB; very negative -> Rayleigh).")] = 9.0

    params: Params
    _STATE_KEYS: ClassVar[tuple[str, ...]] = (*JakesFading._STATE_KEYS, "los_angle_rad", "los_phase_rad")
    _STATE_SHAPES: ClassVar[dict[str, tuple[str, ...]]] = {
        **JakesFading._STATE_SHAPES, "los_angle_rad": ("n",), "los_phase_rad": ("n",)}

    def __post_init__(self) -> None:
        super().__post_init__()
        k = 10.0 ** (self.params.k_factor_db / 10.0)
        self._los_amp, self._scatter_amp = math.sqrt(k / (k + 1.0)), math.sqrt(1.0 / (k + 1.0))

    def _draw(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        state = super()._draw(n, rng)
        state["los_angle_rad"] = rng.uniform(-np.pi, np.pi, n)
        state["los_phase_rad"] = rng.uniform(-np.pi, np.pi, n)
        return state

    def _set(self, state: dict[str, np.ndarray]) -> None:
        super()._set(state)
        self._los_angle, self._los_phase = state["los_angle_rad"], state["los_phase_rad"]
        self._omega_los = 2.0 * np.pi * self._doppler_hz * np.cos(self._los_angle)

    def _state(self) -> dict[str, np.ndarray]:
        return {**super()._state(), "los_angle_rad": self._los_angle, "los_phase_rad": self._los_phase}

    def _envelope(self, ids: np.ndarray, t: np.ndarray) -> np.ndarray:
        los = self._omega_los[ids] * t + self._los_phase[ids]
        return self._los_amp * (np.cos(los) + 1j * np.sin(los)) + self._scatter_amp * super()._envelope(ids, t)

    def _gain(self, ids: np.ndarray, t: np.ndarray) -> np.ndarray:
        return _power(self._envelope(ids, t))

    def power_gain_steps(self, client_ids: np.ndarray, t0_s: float, dt_s: np.ndarray, first: np.ndarray,
                         count: np.ndarray) -> np.ndarray:
        """:meth:`JakesFading.power_gain_steps`, each step evaluated as :meth:`power_gain_at` does."""
        row = np.repeat(np.arange(np.size(client_ids)), count)
        local = np.arange(row.size) - np.repeat(np.cumsum(count) - count, count)
        return self._gain(np.asarray(client_ids, dtype=np.intp)[row], t0_s + dt_s[row] * (first[row] + local))

    #: Each node evaluated as :meth:`power_gain_at` does (the scattered part's rotations do not
    #: carry the line of sight).
    power_gain_panels = _TimeVarying.power_gain_panels

    def sample_power_gain(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` i.i.d. Rician gains with this K (as ``rician``), for a cell without time."""
        n = check_count("n", n)
        real = self._los_amp + self._scatter_amp * math.sqrt(0.5) * rng.standard_normal(n)
        imag = self._scatter_amp * math.sqrt(0.5) * rng.standard_normal(n)
        return real**2 + imag**2


# ---------------------------------------------------------------------- Gauss-Markov
#: SplitMix64 (G. Steele, D. Lea, C. Flood, "Fast splittable pseudorandom number generators",
#: OOPSLA 2014; constants of S. Vigna's reference splitmix64.c): output i of the stream of seed s
#: is mix(s + i * GAMMA), so any (stream, index) is one vectorised hash, whatever came before.
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)


def _uniform(keys: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Uniforms on [0, 1): output ``index + 1`` of SplitMix64 seeded with ``keys`` (broadcast)."""
    z = keys + (index + np.uint64(1)) * _GAMMA  # uint64 arithmetic wraps modulo 2^64, as in C
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z = z ^ (z >> _S31)
    return (z >> _S11).astype(np.float64) * (1.0 / 9007199254740992.0)  # top 53 bits / 2^53


def _complex_normal(keys: np.ndarray, index: np.ndarray) -> np.ndarray:
    """CN(0, 1) from the uniforms at ``index`` and ``index + 1``: ``|w|^2 = -ln U ~ Exp(1)``
    and a uniform phase (Box & Muller 1958, in polar form)."""
    u1, u2 = _uniform(keys, index), _uniform(keys, index + np.uint64(1))
    r = np.sqrt(-np.log1p(-u1))  # 1 - u1 is in (0, 1]
    a = 2.0 * np.pi * u2
    return r * np.cos(a) + 1j * (r * np.sin(a))


@FADING.register("gauss_markov")
class GaussMarkovFading(_TimeVarying):
    """First-order Gauss-Markov (AR(1)) Rayleigh fading on a time grid.

    ``h[0] ~ CN(0, 1)``, ``h[i+1] = rho h[i] + sqrt(1 - rho^2) w[i]`` with ``w[i] ~ CN(0, 1)``
    i.i.d. and ``rho = J0(2 pi f_D dt)`` per client (the lag-one value of Clarke's autocorrelation:
    the usual first-order autoregressive fading model, e.g. Baddour & Beaulieu, "Autoregressive
    modeling for fading channel simulation", IEEE Trans. Wireless Commun., 2005; our reading),
    ``dt = update_interval_s``.  The gain at ``t`` is ``|h[floor(t / dt)]|^2``: constant
    between grid points.  ``E[h[i] h*[i+k]] = rho^k`` and every ``h[i]`` is ``CN(0, 1)``.

    Order independence: the innovations come from a counter-based generator (SplitMix64, keyed
    per client by a 64-bit key drawn at :meth:`start`), addressed by (client, block of
    ``_BLOCK`` steps).  Per block the weighted innovation sum ``S_b = sum_m rho^(B-1-m) w[bB+m]``
    is drawn directly (``CN(0, sum_m rho^(2(B-1-m)))``), so the block starts follow
    ``h[(b+1)B] = rho^B h[bB] + sqrt(1 - rho^2) S_b`` and a jump of many steps costs one draw per
    block; the innovations inside the block asked for are drawn conditionally on ``S_b``
    (``w = z + v (S_b - v.z) / |v|^2``, ``z`` i.i.d. CN(0, 1), ``v_m = rho^(B-1-m)``: exact
    Gaussian conditioning), which leaves the ``w`` i.i.d. CN(0, 1).  Every value is computed the
    same way whatever was asked before (the cache only saves work), so a query at ``t`` gives the
    same bits in any order.  A query earlier than a client's cache recomputes from ``h[0]``.

    :meth:`coherence_time_s` is the lag at which this process's autocorrelation ``rho^(tau/dt)``
    falls to 1/2, ``dt ln(1/2) / ln(rho)`` (our definition, the 50 % threshold as for
    :class:`JakesFading`), at least one step; inf for ``f_D = 0``.  With ``rho <= 0`` (a step
    longer than ``2.405 / (2 pi f_D)``, the first zero of ``J0``) the grid is too coarse for this
    Doppler: consecutive values are (anti)correlated as ``J0`` says, but nothing in between.

    ``sample_power_gain(n, rng)`` draws i.i.d. ``Exp(1)`` gains (the stationary marginal).
    """

    class Params(ParamsModel):
        speed_m_per_s: Annotated[float | None, SPEED_M_PER_S, Doc(
            "The speed every client's Doppler is computed from, m/s, in [0, 1000]: a drop-based evaluation "
            "(clients stay where they were dropped, their channel fades as at this speed, as system-level "
            "evaluations fix a UE speed for fast fading); null: each client's mobility speed")] = None
        update_interval_s: Annotated[float, FADING_UPDATE_INTERVAL_S, Doc(
            "Grid step dt of the AR(1), s, in [1e-6, 10] (our choice: 1 ms, one NR slot at 15 kHz).")] = 1e-3

    params: Params
    #: Steps per block of the counter-based stream.  Our choice: a jump of N steps costs about
    #: N / B + B vectorised operations, and B = 32 keeps both small for N up to ~1000.
    _BLOCK: ClassVar[int] = 32
    _STATE_KEYS: ClassVar[tuple[str, ...]] = ("stream_key", "h0", "anchor_block", "anchor")
    _STATE_SHAPES: ClassVar[dict[str, tuple[str, ...]]] = {
        "stream_key": ("n",), "h0": ("n",), "anchor_block": ("n",), "anchor": ("n",)}
    # the 64-bit keys are saved as int64 (the same bits): every checkpoint format holds int64
    _STATE_DTYPES: ClassVar[dict[str, Any]] = {"stream_key": np.int64, "h0": complex, "anchor_block": np.int64,
                                               "anchor": complex}
    _CHUNK_BLOCKS: ClassVar[int] = 4096  # blocks drawn at once when walking far (bounds memory)

    def _draw(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        key = rng.integers(0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)
        h0 = (rng.standard_normal(n) + 1j * rng.standard_normal(n)) * math.sqrt(0.5)
        return {"stream_key": key.view(np.int64), "h0": h0, "anchor_block": np.zeros(n, dtype=np.int64),
                "anchor": h0.copy()}

    def _set(self, state: dict[str, np.ndarray]) -> None:
        b = self._BLOCK
        self._key = np.ascontiguousarray(state["stream_key"], dtype=np.int64).view(np.uint64)
        self._h0 = state["h0"].astype(complex)
        if np.any(state["anchor_block"] < 0):
            raise invalid(f"{type(self).__name__} state['anchor_block']", state["anchor_block"], "integers >= 0")
        self._anchor_block = state["anchor_block"].astype(np.int64)
        self._anchor = state["anchor"].astype(complex)
        rho = j0(2.0 * np.pi * self._doppler_hz * self.params.update_interval_s)
        self._rho = rho
        self._innov = np.sqrt(np.maximum(0.0, 1.0 - rho * rho))
        self._v = rho[:, None] ** np.arange(b - 1, -1, -1)[None, :]  # v_m = rho^(B-1-m), (n, B)
        self._v_norm2 = (self._v * self._v).sum(axis=1)  # >= 1 (the last term is rho^0)
        self._v_norm = np.sqrt(self._v_norm2)
        self._rho_b = rho**b
        n = self._h0.shape[0]
        self._path_block = np.full(n, -1, dtype=np.int64)  # the block whose path is cached, per client
        self._path = np.zeros((n, b), dtype=complex)

    def _state(self) -> dict[str, np.ndarray]:
        return {"stream_key": self._key.view(np.int64), "h0": self._h0, "anchor_block": self._anchor_block,
                "anchor": self._anchor}

    # the stream of one client: per block b, 2 + 2B uniforms at b * (2 + 2B): the block sum's
    # complex normal, then the B conditional innovations' z
    def _block_index(self, block: np.ndarray) -> np.ndarray:
        return block.astype(np.uint64) * np.uint64(2 + 2 * self._BLOCK)

    def _anchors(self, ids: np.ndarray, blocks: np.ndarray) -> np.ndarray:
        """``h[b B]`` of each (client, block) pair, from the client's cached block start when it is
        not later, else from ``h[0]``."""
        cached = self._anchor_block[ids]
        from_cache = cached <= blocks
        first = np.where(from_cache, cached, 0)
        a = np.where(from_cache, self._anchor[ids], self._h0[ids])
        todo = blocks - first
        done = np.zeros_like(todo)
        key, rho_b = self._key[ids], self._rho_b[ids]
        scale = self._innov[ids] * self._v_norm[ids]
        while np.any(done < todo):
            width = int(min(self._CHUNK_BLOCKS, (todo - done).max()))
            j = np.arange(width, dtype=np.int64)[None, :]
            index = self._block_index(first[:, None] + done[:, None] + j)
            xi = _complex_normal(key[:, None], index)  # (p, width): block sums / |v|
            for col in range(width):
                active = done + col < todo
                a = np.where(active, rho_b * a + scale * xi[:, col], a)
            done = np.minimum(todo, done + width)
        return a

    def _paths(self, ids: np.ndarray, blocks: np.ndarray) -> np.ndarray:
        """``h[bB + r]`` for ``r = 0..B-1`` of each (client, block) pair, shape (p, B)."""
        b = self._BLOCK
        a = self._anchors(ids, blocks)
        key = self._key[ids][:, None]
        base = self._block_index(blocks)[:, None]
        s = self._v_norm[ids] * _complex_normal(key[:, 0], base[:, 0])  # the block's S_b
        z = _complex_normal(key, base + np.uint64(2) + np.uint64(2) * np.arange(b, dtype=np.uint64)[None, :])
        rho, v = self._rho[ids], self._v[ids]
        vz = np.zeros(ids.shape[0], dtype=complex)
        for m in range(b):  # v . z in Horner form: a fixed order of operations
            vz = vz * rho + z[:, m]
        w = z + v * ((s - vz) / self._v_norm2[ids])[:, None]
        path = np.empty((ids.shape[0], b), dtype=complex)
        path[:, 0] = a
        c = self._innov[ids]
        for r in range(1, b):
            path[:, r] = rho * path[:, r - 1] + c * w[:, r - 1]
        # remember each client's latest block (its start and its path): saves work, changes no value
        last = np.r_[ids[1:] != ids[:-1], True] if ids.size else np.zeros(0, dtype=bool)
        li, lb = ids[last], blocks[last]
        further = lb > self._anchor_block[li]
        self._anchor_block[li[further]] = lb[further]
        self._anchor[li[further]] = a[last][further]
        self._path_block[li] = lb
        self._path[li] = path[last]
        return path

    def envelope_at(self, client_ids: Any, t_s: Any) -> np.ndarray:
        """The complex ``h[floor(t / dt)]`` of which :meth:`power_gain_at` is ``|h|^2`` (same
        arguments), shape (k,): for checking the statistics (``E[h[i] h*[i+k]] = rho^k``)."""
        return self._envelope(*self._ids_times(client_ids, t_s))

    def _envelope(self, ids: np.ndarray, t: np.ndarray) -> np.ndarray:
        step = np.floor(t / self.params.update_interval_s).astype(np.int64)
        block, r = np.divmod(step, self._BLOCK)
        hit = self._path_block[ids] == block
        h = np.empty(ids.shape[0], dtype=complex)
        h[hit] = self._path[ids[hit], r[hit]]
        miss = ~hit
        if np.any(miss):
            # one path per distinct (client, block), sorted by client then block
            pairs, inverse = np.unique(np.column_stack((ids[miss], block[miss])), axis=0, return_inverse=True)
            paths = self._paths(pairs[:, 0].astype(np.intp), pairs[:, 1])
            h[miss] = paths[inverse.reshape(-1), r[miss]]
        return h

    def coherence_time_s(self, client_ids: Any) -> np.ndarray:
        """Lag at which ``rho^(tau/dt)`` falls to 1/2, at least ``dt``; inf for ``f_D = 0`` (see the class)."""
        ids = self._ids(client_ids)
        rho, dt = self._rho[ids], self.params.update_interval_s
        with np.errstate(divide="ignore", invalid="ignore"):
            lag = dt * math.log(0.5) / np.log(np.where((rho > 0.5) & (rho < 1.0), rho, 0.25))
        return np.where(rho >= 1.0, np.inf, np.where(rho > 0.5, np.maximum(lag, dt), dt))

    def sample_power_gain(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` i.i.d. ``Exp(1)`` gains (the stationary marginal ``|CN(0, 1)|^2``), for a cell without time."""
        return rng.exponential(1.0, check_count("n", n))
