"""A smooth fading's transfer integration, compiled (numba): the radio state's fast path.

:meth:`RadioState.transfer_ends_s <sfl_sim.channel.radio_state.RadioState.transfer_ends_s>`
integrates a transfer's rate over 2-point Gauss-Legendre panels of a fifth of the client's
coherence time (:mod:`sfl_sim.channel.radio_state`, "A transfer in time").  In numpy each panel's
nodes cost a chain of array operations (1 to 2 us a node over a round's tens of thousands to
millions of them) and a transfer computed alone costs a few hundred microseconds of calls
(``bench/radio_time.py``'s docstring).  Here one call walks every transfer's panels in a loop:

- the built-in sum-of-sinusoids fadings, exactly :class:`~sfl_sim.channel.link.fading_time.JakesFading`
  and :class:`~sfl_sim.channel.link.fading_time.RicianJakesFading` (a subclass may change the
  gain): each sinusoid's phasor ``exp(i (w t + phi))`` at the two nodes is evaluated by cosine
  and sine at every :data:`ANCHOR_PANELS`-th panel of the transfer (panels 0, 32, 64 ... of its
  own grid, whatever chunk a call starts at) and turned by ``exp(i w h)`` (``h`` the panel)
  from one panel to the next between them;
- the rate models whose formula the loop knows, exactly :class:`~sfl_sim.channel.link.rate.ShannonRate`
  (``b log2(1 + SNR)``, its cap) and :class:`~sfl_sim.channel.link.link_rate.McsTableRate` with
  the ``gap`` mapping (the highest CQI whose efficiency is at most ``log2(1 + SNR / Gamma)``);
  the SNR ``p (g f) / (b N0 F)`` with the power ``p`` and the large-scale gain ``g`` of the
  position grid time of the node (computed by the radio state in numpy, per grid time, and
  handed in as a table), ``f`` the fading;
- the bits of a panel, their sum in order along the transfer, the panel of the last bit and
  the place in it (:meth:`RadioState._within_panel
  <sfl_sim.channel.radio_state.RadioState._within_panel>`'s rule, written for one transfer):
  the numpy path's algorithm step for step.

Any other fading or rate model, a network of cells, or ``SFL_SIM_RADIO_NUMPY=1`` (a switch for
the tests that compare both paths, and for debugging) keeps the numpy path.

The numbers: every transfer is computed on its own (its phasors, its sums), so its end is the
same number alone or with others and however a call is cut in chunks (a chunk restarts at its
panel's anchor and turns forward as the walk did), and the same run to run (numba without
``fastmath``: no reassociation, no fused multiply-add).  Against the numpy path the gains differ
in the last bits (the numpy path turns its phases by angle-addition sums in another order, and
its cosines and logarithms are numpy's, not the C library's), so the ends agree within a
relative tolerance of the transfer's duration, :data:`NUMPY_AGREEMENT` (measured: at most
about 1e-14 on Shannon rates; ``tests/channel/test_transfer_compiled.py``), except where a node's
SNR lies within rounding of a table rate's CQI threshold: there the two paths may pick
neighbouring CQIs at that node (both are the table's rate at an SNR within 1e-15 of the other).

Compiled on first use (``cache=True``: numba keeps the machine code next to this module).
Without numba (:data:`AVAILABLE` False) the numpy path runs.
"""
from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

numba: Any
try:  # numba is a declared dependency; without it the numpy path runs
    import numba
except ImportError:  # pragma: no cover - an installation without numba
    numba = None

__all__ = ["AVAILABLE", "ANCHOR_PANELS", "NUMPY_AGREEMENT", "RATE_SHANNON", "RATE_MCS_GAP", "enabled",
           "fading_terms", "rate_terms", "integrate"]

#: Whether numba could be imported.
AVAILABLE = numba is not None
#: Panels between two exactly evaluated phasors (our choice: the turns' rounding stays within a
#: few tens of ulps; the numpy path's ``ANCHOR_STEPS``).
ANCHOR_PANELS = 32
#: The relative agreement of a transfer's duration between this path and the numpy path the
#: tests hold it to (our choice, above what was measured: see the module docstring).
NUMPY_AGREEMENT = 1e-12
#: The rate codes :func:`integrate` knows.
RATE_SHANNON, RATE_MCS_GAP = 0, 1
#: :func:`integrate`'s outcome per transfer: through (its end written); the table of grid times
#: ran out (carry on from ``next_panel``); too many panels (its rate stays 0).
DONE, MORE, STUCK = 0, 1, 2


def enabled() -> bool:
    """Whether the compiled path is used: numba is importable and ``SFL_SIM_RADIO_NUMPY`` is not 1."""
    return AVAILABLE and os.environ.get("SFL_SIM_RADIO_NUMPY", "") != "1"


def fading_terms(fading: Any) -> tuple[Any, ...] | None:
    """The arrays :func:`integrate` evaluates ``fading``'s gains from, or None for a fading it
    does not know (exactly the built-in Jakes and Rician-Jakes classes, started)."""
    from sfl_sim.channel.link.fading_time import JakesFading, RicianJakesFading

    kind = type(fading)
    if kind not in (JakesFading, RicianJakesFading) or getattr(fading, "_n", None) is None:
        return None
    n = int(fading._n)
    if kind is RicianJakesFading:
        los = (1, float(fading._los_amp), float(fading._scatter_amp), np.ascontiguousarray(fading._omega_los, float),
               np.ascontiguousarray(fading._los_phase, float))
    else:
        los = (0, 0.0, 1.0, np.zeros(n), np.zeros(n))
    return (np.ascontiguousarray(fading._omega_c, float), np.ascontiguousarray(fading._phase_c, float),
            np.ascontiguousarray(fading._omega_s, float), np.ascontiguousarray(fading._phase_s, float), *los)


def rate_terms(model: Any) -> tuple[int, float, float, float, np.ndarray] | None:
    """``(code, noise factor, cap or gap, 1 - overhead, efficiencies)`` of a rate model
    :func:`integrate` knows (exactly :class:`ShannonRate`; :class:`McsTableRate` with the ``gap``
    mapping), None for any other."""
    from sfl_sim.channel.link.link_rate import McsTableRate
    from sfl_sim.channel.link.rate import ShannonRate

    if type(model) is ShannonRate:
        cap = model.max_spectral_efficiency_bps_per_hz
        return (RATE_SHANNON, float(model._noise_factor), math.inf if cap is None else float(cap), 1.0,
                np.zeros(1))
    if type(model) is McsTableRate and model.params.mapping == "gap":
        return (RATE_MCS_GAP, float(model._noise_factor), float(model.gap_linear),
                1.0 - float(model.overhead_fraction), np.ascontiguousarray(model.efficiency_bps_per_hz, float))
    return None


def _njit(function: Any) -> Any:
    if numba is None:  # pragma: no cover
        return function
    return numba.njit(cache=True, error_model="numpy", nogil=True)(function)


@_njit
def _rate(code: int, b: float, snr: float, cap: float, eff: np.ndarray, keep: float) -> float:
    # ShannonRate.rate_bps / McsTableRate.rate_bps (gap) on a share b > 0, in their order
    if code == 0:
        rate = b * np.log2(1.0 + snr)
        if cap < math.inf:
            rate = min(rate, b * cap)
        return rate
    se = np.log2(1.0 + snr / cap)  # cap: the gap here
    k = 0  # searchsorted(eff, se, side="right"): how many efficiencies are <= se
    while k < eff.size and eff[k] <= se:
        k += 1
    chosen = eff[k - 1] if k > 0 else 0.0
    return b * (chosen * keep)


@_njit
def _within_panel(remaining: float, panel_bits: float, r1: float, r2: float, u1: float, u2: float,
                  panel: float) -> float:
    # RadioState._within_panel for one transfer, the same operations
    b = (r2 - r1) / (u2 - u1)
    a = r1 - b * u1
    zero = -a / b
    rising = a < 0 and b > 0
    falling = a + b < 0 and b < 0
    if rising:
        whole = b * ((1 - zero) * (1 - zero)) / 2
    elif falling:
        whole = a * zero + b * zero * zero / 2
    else:
        whole = a + b / 2
    x = remaining / panel * (whole / (panel_bits / panel))
    if rising:
        u = zero + np.sqrt(2.0 * x / b)
    else:
        root = np.sqrt(a * a + 2.0 * b * x)
        u = 2.0 * x / (a + root)
    if whole > 0 and np.isfinite(u) and u >= 0 and u <= 1:
        return u
    mean = remaining / panel_bits
    if mean < 0.0:
        return 0.0
    if mean > 1.0:
        return 1.0
    return mean


@_njit
def _phasors(om: np.ndarray, ph: np.ndarray, t: float, re: np.ndarray, im: np.ndarray) -> None:
    for n in range(om.size):
        theta = om[n] * t + ph[n]
        re[n] = np.cos(theta)
        im[n] = np.sin(theta)


@_njit
def _turn(re: np.ndarray, im: np.ndarray, cr: np.ndarray, ci: np.ndarray) -> None:
    for n in range(re.size):
        a, b = re[n], im[n]
        re[n] = a * cr[n] - b * ci[n]
        im[n] = a * ci[n] + b * cr[n]


@_njit
def _gain(kind: int, re_c: np.ndarray, re_s: np.ndarray, los_amp: float, scatter_amp: float, scale: float,
          m: float, los: float) -> float:
    xc = 0.0
    xs = 0.0
    for n in range(re_c.size):
        xc += re_c[n]
    for n in range(re_s.size):
        xs += re_s[n]
    if kind == 0:
        return (xc * xc + xs * xs) / m
    real = los_amp * np.cos(los) + scatter_amp * (scale * xc)
    imag = los_amp * np.sin(los) + scatter_amp * (scale * xs)
    return real * real + imag * imag


@_njit
def integrate(omega_c: np.ndarray, phase_c: np.ndarray, omega_s: np.ndarray, phase_s: np.ndarray, kind: int,
              los_amp: float, scatter_amp: float, omega_los: np.ndarray, phase_los: np.ndarray,
              ids: np.ndarray, t0: np.ndarray, panel: np.ndarray, bits: np.ndarray, nodes: np.ndarray,
              weights: np.ndarray, step_s: float, index0: np.ndarray, span: np.ndarray, power: np.ndarray,
              gain_ls: np.ndarray, share: np.ndarray, denominator: np.ndarray, code: int, cap: float,
              eff: np.ndarray, keep: float, done: np.ndarray, next_panel: np.ndarray, max_panels: int,
              ends: np.ndarray, status: np.ndarray) -> None:
    """Walk each transfer's panels from ``next_panel[r]`` (its bits so far ``done[r]``) until its
    last bit (``ends[r]``, ``status[r] = DONE``), a node past its table of grid times
    (``index0[r] .. + span[r] - 1`` of ``floor(t / step_s)``: ``MORE``, ``done`` and
    ``next_panel`` carried) or ``max_panels`` panels (``STUCK``).  ``power[r, c]`` and
    ``gain_ls[r, c]``: the transmit power and large-scale gain at grid time ``index0[r] + c``;
    ``share``: the occupied bandwidth (> 0), ``denominator``: ``share N0 F``."""
    m_c = omega_c.shape[1]
    m_s = omega_s.shape[1]
    re_c = np.empty((2, m_c))
    im_c = np.empty((2, m_c))
    re_s = np.empty((2, m_s))
    im_s = np.empty((2, m_s))
    cr_c = np.empty(m_c)
    ci_c = np.empty(m_c)
    cr_s = np.empty(m_s)
    ci_s = np.empty(m_s)
    scale = 1.0 / np.sqrt(m_c)
    u1 = nodes[0]
    u2 = nodes[1]
    rates = np.empty(2)
    for r in range(ids.size):
        k = ids[r]
        h = panel[r]
        t_start = t0[r]
        for n in range(m_c):
            cr_c[n] = np.cos(omega_c[k, n] * h)
            ci_c[n] = np.sin(omega_c[k, n] * h)
        for n in range(m_s):
            cr_s[n] = np.cos(omega_s[k, n] * h)
            ci_s[n] = np.sin(omega_s[k, n] * h)
        j = next_panel[r]
        acc = done[r]
        status[r] = STUCK
        # the phasors at panel j: from its anchor, turned forward as a walk from the anchor does
        anchor = (j // ANCHOR_PANELS) * ANCHOR_PANELS
        for i in range(2):
            t = t_start + h * (float(anchor) + nodes[i])
            _phasors(omega_c[k], phase_c[k], t, re_c[i], im_c[i])
            _phasors(omega_s[k], phase_s[k], t, re_s[i], im_s[i])
            for _ in range(j - anchor):
                _turn(re_c[i], im_c[i], cr_c, ci_c)
                _turn(re_s[i], im_s[i], cr_s, ci_s)
        while j < max_panels:
            outside = False
            for i in range(2):
                t = t_start + h * (float(j) + nodes[i])
                c = int(np.floor(t / step_s)) - index0[r]  # step_s inf: grid time 0
                if c < 0 or c >= span[r]:
                    outside = True
                    break
                los = omega_los[k] * t + phase_los[k]
                g = _gain(kind, re_c[i], re_s[i], los_amp, scatter_amp, scale, float(m_c), los)
                snr = power[r, c] * (gain_ls[r, c] * g) / denominator[r]
                rates[i] = _rate(code, share[r], snr, cap, eff, keep)
            if outside:
                status[r] = MORE
                break
            got = (rates[0] * weights[0] + rates[1] * weights[1]) * h
            total = acc + got
            if total >= bits[r]:
                u = _within_panel(bits[r] - acc, got, rates[0], rates[1], u1, u2, h)
                ends[r] = t_start + h * float(j) + h * u
                status[r] = DONE
                break
            acc = total
            j += 1
            for i in range(2):  # the phasors at the next panel: evaluated at an anchor, else turned
                if j % ANCHOR_PANELS == 0:
                    t = t_start + h * (float(j) + nodes[i])
                    _phasors(omega_c[k], phase_c[k], t, re_c[i], im_c[i])
                    _phasors(omega_s[k], phase_s[k], t, re_s[i], im_s[i])
                else:
                    _turn(re_c[i], im_c[i], cr_c, ci_c)
                    _turn(re_s[i], im_s[i], cr_s, ci_s)
        done[r] = acc
        next_panel[r] = j
