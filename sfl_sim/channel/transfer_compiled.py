"""A smooth fading's transfer integration, compiled (numba): the radio state's fast path.

:meth:`RadioState.transfer_ends_s <sfl_sim.channel.radio_state.RadioState.transfer_ends_s>`
integrates a transfer's rate over 2-point Gauss-Legendre panels of a fifth of the client's
coherence time (:mod:`sfl_sim.channel.radio_state`, "A transfer in time").  In numpy each panel's
nodes cost a chain of array operations (1 to 2 us a node over a round's tens of thousands to
millions of them) and a transfer computed alone costs a few hundred microseconds of calls
(``bench/radio_time.py``'s docstring).  Here one call walks every transfer's panels in a loop:

- the built-in sum-of-sinusoids fadings, exactly :class:`~sfl_sim.channel.link.fading_time.JakesFading`
  and :class:`~sfl_sim.channel.link.fading_time.RicianJakesFading` (a subclass may change the
  gain): the gain needs only the sums of cosines ``X = sum_n cos(w_n t + phi_n)`` of each
  quadrature (Rician-Jakes adds its line-of-sight phasor, evaluated at each node by cosine and
  sine).  Each sinusoid's cosine at the two nodes is evaluated (with the sine, from the same
  argument ``x``) at every :data:`ANCHOR_PANELS`-th panel of the transfer (panels 0, 128, 256 ...
  of its own grid, whatever chunk a call starts at) and carried from one panel to the next
  between them by the three-term recurrence ``cos(x + a) = 2 cos(a) cos(x) - cos(x - a)``
  (``a = w h``, ``h`` the panel) in Reinsch's form, ``d <- d + (2 cos a - 2) y, y <- y + d``
  with ``d = cos(x) - cos(x - a)`` started as ``cos(x) (1 - cos a) - sin(x) sin(a)`` and
  ``2 cos a - 2 = -4 sin^2(a / 2)`` (no cancellation for small ``a``; the plain form's error
  grows as ``1 / sin a``: measured 3.7e-12 against 1.6e-13 on a sum over 256 panels at 3 km/h,
  where the smallest ``a`` is 8e-5): three operations per sinusoid and node instead of a complex
  turn's six, on four adjacent numbers per sinusoid (both quadratures at both nodes), so the
  loops are vector operations.  The sums go in four lanes (term ``n`` in lane ``n % 4``), the
  lanes added pairwise: a fixed order of our choice, which the processor overlaps;
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

The numbers: every transfer is computed on its own (its cosines, its sums), so its end is the
same number alone or with others and however a call is cut in chunks (a chunk restarts at its
panel's anchor and recurs forward as the walk did), and the same run to run (numba without
``fastmath``: no reassociation, no fused multiply-add).  The recurrence's error stays at the
anchor's own (the rounding of its argument ``w t + phi``, up to about 1e-12 in a sum of 16 at
120 km/h, 3 s into a round): measured against cosines of the node times in extended precision,
the largest error of a sum over 256 panels is that of the complex turns (1.6e-13 / 9.7e-13 /
2.9e-12 at 3 / 30 / 120 km/h, the turns' 1.7e-13 / 9.7e-13 / 2.9e-12), hence the anchors 128
panels apart (our choice; they were 32 with the turns): a quarter of the anchors' sines and cosines per
panel.  Against the numpy path the gains differ in the last bits (the numpy path turns its
phases by angle-addition sums in another order, and its cosines and logarithms are numpy's, not
the C library's), so the ends agree within a relative tolerance of the transfer's duration,
:data:`NUMPY_AGREEMENT` (measured: at most 2.4e-14 on a fixed cell's Shannon rates, 6.5e-14 with
Gauss-Markov mobility at 120 km/h, as with the turns; ``tests/channel/test_transfer_compiled.py``),
except where a node's SNR lies within rounding of a table rate's CQI threshold: there the two
paths may pick neighbouring CQIs at that node (both are the table's rate at an SNR within 1e-15
of the other).

The cost (``bench/transfer_kernel.py``, synthetic transfers, ns per node, the turns' kernel
against this one, its docstring's table): about half at 30 and 120 km/h (85-90 -> 42-45), 0.77
at 3 km/h (110 -> 85: a few tens of panels a transfer, where the sines and cosines of its start
dominate, about 2 us a transfer either way); in ``bench/radio_time.py``'s rounds 120 km/h went
from 320-390 to 255-285 ms a round, 30 km/h from 145-160 to 120-145.  What it took, measured
at 120 km/h: the helpers inlined in numba's IR (``inline="always"``; called per node with arrays
they cost about 40 ns a node, their calls' overhead with the arrays' reference counts, our
reading), the sums of both quadratures at both nodes in one loop over 16 adjacent lanes (each
sum in a loop of its own, four lanes: about 45 ns a panel), the recurrence instead of the turns.
What is left, per panel of about 80 ns (ablations): two logarithms (about 14 ns), the
recurrence (about 11 ns), the anchors' sines and cosines (about 6 ns), the grid time's lookup
(about 4 ns), the sums (about 2 ns) and the loop's own scalar work.

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
#: Panels between two exactly evaluated cosines (our choice: the recurrence's error stays at the
#: anchor's own over 256 panels; module docstring).
ANCHOR_PANELS = 128
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
    does not know (exactly the built-in Jakes and Rician-Jakes classes, started, with as many
    sinusoids in each quadrature)."""
    from sfl_sim.channel.link.fading_time import JakesFading, RicianJakesFading

    kind = type(fading)
    if kind not in (JakesFading, RicianJakesFading) or getattr(fading, "_n", None) is None:
        return None
    if np.shape(fading._omega_c) != np.shape(fading._omega_s):
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


def _inline(function: Any) -> Any:
    # inlined in numba's own IR: no call, and no reference counting of the arrays passed per node
    if numba is None:  # pragma: no cover
        return function
    return numba.njit(cache=True, error_model="numpy", nogil=True, inline="always")(function)


@_inline
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


@_inline
def _exact(om: np.ndarray, ph: np.ndarray, k2: np.ndarray, sn: np.ndarray, m: int, t_start: float, h: float,
           j: int, nodes: np.ndarray, y: np.ndarray, d: np.ndarray) -> None:
    # the cosines of panel j's nodes, y[4 n + g] = cos(x) (x = om[4 n + g] t_i + ph[4 n + g], t_i
    # node g // 2's time), and d their steps from the panel before, cos(x) - cos(x - a) =
    # cos(x) (1 - cos a) - sin(x) sin(a) from the same x
    for i in range(2):
        t = t_start + h * (float(j) + nodes[i])
        for n in range(m):
            for g in range(2 * i, 2 * i + 2):
                q = 4 * n + g
                x = om[q] * t + ph[q]
                c = np.cos(x)
                y[q] = c
                d[q] = -0.5 * k2[q] * c - sn[q] * np.sin(x)


@_inline
def _recur(k2: np.ndarray, y: np.ndarray, d: np.ndarray) -> None:
    # the cosines one panel on: d <- d + (2 cos a - 2) y, y <- y + d (Reinsch's form of
    # cos(x + a) = 2 cos(a) cos(x) - cos(x - a), stable for small a), element-wise
    for q in range(y.size):
        step = d[q] + k2[q] * y[q]
        d[q] = step
        y[q] = y[q] + step


@_inline
def _sums(y: np.ndarray, m: int, lanes: np.ndarray, out: np.ndarray) -> None:
    # out[g] = sum over n of y[4 n + g]: term n in lane n % 4 (lanes[4 (n % 4) + g]), the lanes
    # summed pairwise, a fixed order (our choice: four chains of additions instead of one, which
    # the processor overlaps; the 16 lanes are 16 adjacent numbers, added as vectors)
    for q in range(16):
        lanes[q] = 0.0
    full = m // 4
    for p in range(full):
        for q in range(16):
            lanes[q] += y[16 * p + q]
    for q in range(16 * full, 4 * m):
        lanes[q - 16 * full] += y[q]
    for g in range(4):
        out[g] = (lanes[g] + lanes[4 + g]) + (lanes[8 + g] + lanes[12 + g])


@_inline
def _gain(kind: int, xc: float, xs: float, los_amp: float, scatter_amp: float, scale: float,
          m: float, los: float) -> float:
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
    m = omega_c.shape[1]  # sinusoids per quadrature (the same for both: fading_terms)
    # four numbers per sinusoid n, at 4 n + g: g = 0, 1 the in-phase and quadrature sinusoids at
    # node 0, g = 2, 3 at node 1 (adjacent numbers: the loops below are vector operations)
    om = np.empty(4 * m)
    ph = np.empty(4 * m)
    sn = np.empty(4 * m)
    k2 = np.empty(4 * m)
    y = np.empty(4 * m)  # the cosines at the current panel
    d = np.empty(4 * m)  # their steps from the panel before
    lanes = np.empty(16)
    sums = np.empty(4)  # the sums at the current panel: node 0's in-phase, quadrature, node 1's
    scale = 1.0 / np.sqrt(m)
    u1 = nodes[0]
    u2 = nodes[1]
    rates = np.empty(2)
    for r in range(ids.size):
        k = ids[r]
        h = panel[r]
        t_start = t0[r]
        for n in range(m):
            for i in range(2):
                om[4 * n + 2 * i] = omega_c[k, n]
                ph[4 * n + 2 * i] = phase_c[k, n]
                om[4 * n + 2 * i + 1] = omega_s[k, n]
                ph[4 * n + 2 * i + 1] = phase_s[k, n]
            for g in range(2):
                a = om[4 * n + g] * h
                half = np.sin(0.5 * a)
                k2[4 * n + g] = -4.0 * (half * half)  # 2 cos(a) - 2, without cancellation
                sn[4 * n + g] = np.sin(a)
                k2[4 * n + g + 2] = k2[4 * n + g]
                sn[4 * n + g + 2] = sn[4 * n + g]
        j = next_panel[r]
        acc = done[r]
        status[r] = STUCK
        # the cosines at panel j: evaluated at its anchor, recurred forward as a walk from the anchor does
        anchor = (j // ANCHOR_PANELS) * ANCHOR_PANELS
        _exact(om, ph, k2, sn, m, t_start, h, anchor, nodes, y, d)
        for _ in range(j - anchor):
            _recur(k2, y, d)
        while j < max_panels:
            _sums(y, m, lanes, sums)
            outside = False
            for i in range(2):
                t = t_start + h * (float(j) + nodes[i])
                c = int(np.floor(t / step_s)) - index0[r]  # step_s inf: grid time 0
                if c < 0 or c >= span[r]:
                    outside = True
                    break
                los = omega_los[k] * t + phase_los[k]
                g = _gain(kind, sums[2 * i], sums[2 * i + 1], los_amp, scatter_amp, scale, float(m), los)
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
            if j % ANCHOR_PANELS == 0:  # the cosines at the next panel: evaluated at an anchor, else recurred
                _exact(om, ph, k2, sn, m, t_start, h, j, nodes, y, d)
            else:
                _recur(k2, y, d)
        done[r] = acc
        next_panel[r] = j
