"""The channel in time in ``sfl-sim channel`` (:mod:`sfl_sim.reports.channel`): the Doppler and
coherence time of a time-varying fading, its empirical autocorrelation against the model's, and the
speeds of a timed mobility.

:func:`fading_autocorrelation` estimates, from the fading component's complex envelope
(``envelope_at``), the autocorrelation ``R(tau) = E[h(t) h*(t + tau)]`` (its real part, over the
sample power ``R(0)``) of the cell's clients over the report's time, ``rounds x round_s`` seconds;
:func:`autocorrelation_figure` draws it next to the model's curve (``fading_autocorrelation.png``):

- ``jakes``: Clarke's ``J0(2 pi f_D tau)`` (:class:`~sfl_sim.channel.link.fading_time.JakesFading`);
- ``rician_jakes``: ``(K cos(w_D cos(theta_0) tau) + J0(w_D tau)) / (K + 1)``, ``w_D = 2 pi f_D``,
  with each client's line-of-sight angle ``theta_0`` (its state,
  :class:`~sfl_sim.channel.link.fading_time.RicianJakesFading`: the specular phasor's
  autocorrelation is that cosine; over many clients, ``theta_0`` uniform, it averages to ``J0``),
  with ``J0`` drawn beside it;
- ``gauss_markov``: ``rho^(tau / dt)``, ``rho = J0(2 pi f_D dt)``, on lags that are multiples of
  its ``update_interval_s`` ``dt``, with ``J0`` drawn beside it (the AR(1) decorrelates more slowly
  than Clarke's model past the first step);
- any other time-varying fading with an ``envelope_at``: the estimate alone.

Clients with different Dopplers: the model curve is the mean of the clients' curves.  The lags run
to :data:`LAG_DOPPLER_PERIODS` over the median Doppler (the first lobes of ``J0``) in
:data:`LAG_POINTS` steps; the samples are taken in segments of :data:`SEGMENT_LAGS` times the
longest lag, spread evenly over the report's time (at most :data:`MAX_SEGMENTS` per client; one,
which may run past it, when the report's time is shorter than a segment), and the clients are an
even subset when all of them would take more than :data:`MAX_SAMPLES` samples.  Nothing here
draws from a run's stream: the envelope is a function of time of the component the cell started.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import j0

from sfl_sim.channel.link.fading_time import GaussMarkovFading, JakesFading, RicianJakesFading
from sfl_sim.channel.radio_time import fading_doppler_hz, fixed_fading_speed_m_per_s

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from sfl_sim.channel import Cell

__all__ = ["Autocorrelation", "fading_autocorrelation", "autocorrelation_figure", "doppler_line", "mobility_line",
           "AUTOCORRELATION_FILE", "LAG_DOPPLER_PERIODS", "LAG_POINTS", "SEGMENT_LAGS", "MAX_SEGMENTS",
           "MAX_SAMPLES"]

#: The report's figure of the fading in time (written for a time-varying fading only).
AUTOCORRELATION_FILE = "fading_autocorrelation.png"
#: The longest lag shown, in periods of the median Doppler ``1 / f_D`` (our choice: ``J0`` has
#: its first five zeros before ``f_D tau = 3``).
LAG_DOPPLER_PERIODS = 3.0
#: Lag steps from 0 to the longest lag (our choice: 20 points per lobe of ``J0``).
LAG_POINTS = 120
#: A segment of samples spans this many longest lags (our choice: each lag is averaged over
#: ~10x as many pairs as the lag is long).
SEGMENT_LAGS = 10
#: The most segments per client (our choice: bounds the work for a long report).
MAX_SEGMENTS = 16
#: The most envelope samples in all (our choice: about a second of numpy work for ``jakes`` with 16
#: sinusoids).
MAX_SAMPLES = 2_000_000


@dataclass(frozen=True)
class Autocorrelation:
    """The empirical autocorrelation of a cell's fading envelope and its model (module docstring).

    Attributes
    ----------
    fading : str
        The fading's class name.
    lag_s : numpy.ndarray, shape (L,)
        Lags, s (from 0).
    empirical : numpy.ndarray, shape (L,)
        ``Re R(tau) / R(0)`` over the clients and segments.
    model : numpy.ndarray or None, shape (L,)
        The model's autocorrelation at the lags (mean over the clients), None when unknown.
    model_label : str
        What ``model`` is.
    clarke : numpy.ndarray, shape (L,)
        ``J0(2 pi f_D tau)``, mean over the clients (equal to ``model`` for ``jakes``).
    doppler_hz : numpy.ndarray
        The Doppler of each client used, Hz.
    clients : int
        Clients averaged over.
    segments : int
        Segments per client.
    segment_s : float
        A segment's length, s.
    window_s : float
        The report's time the segments are spread over, s.
    gain_time_s, gain_db : numpy.ndarray
        One client's power gain (dB) over its first segment, for the figure's second panel.
    """

    fading: str
    lag_s: np.ndarray
    empirical: np.ndarray
    model: np.ndarray | None
    model_label: str
    clarke: np.ndarray
    doppler_hz: np.ndarray
    clients: int
    segments: int
    segment_s: float
    window_s: float
    gain_time_s: np.ndarray
    gain_db: np.ndarray

    def max_deviation(self) -> float:
        """The largest ``|empirical - model|`` over the lags (NaN without a model)."""
        return math.nan if self.model is None else float(np.max(np.abs(self.empirical - self.model)))


def fading_autocorrelation(cell: Cell, window_s: float) -> Autocorrelation | None:
    """The autocorrelation of ``cell``'s time-varying fading over ``window_s`` seconds (module
    docstring); None when the fading is not time-varying, has no ``envelope_at``, or every client's
    Doppler is 0 (the envelope does not change).

    Parameters
    ----------
    cell : Cell
        A cell as a run builds it (its radio state started the fading).
    window_s : float
        The report's time, s (``rounds x round_s``), > 0.
    """
    radio = cell.radio
    fading = radio.fading
    envelope = getattr(fading, "envelope_at", None)
    if not radio.time_varying or envelope is None:
        return None
    doppler_all = fading_doppler_hz(radio)
    moving = np.flatnonzero(doppler_all > 0)
    if moving.size == 0:
        return None
    f_median = float(np.median(doppler_all[moving]))
    longest_s = LAG_DOPPLER_PERIODS / f_median
    dt_grid = float(fading.params.update_interval_s) if isinstance(fading, GaussMarkovFading) else None
    # an AR(1)'s lags on its own grid (its autocorrelation there is rho^k)
    step_s = (longest_s / LAG_POINTS if dt_grid is None
              else max(1, round(longest_s / LAG_POINTS / dt_grid)) * dt_grid)
    per_segment = SEGMENT_LAGS * LAG_POINTS + 1
    segment_s = (per_segment - 1) * step_s
    clients = np.arange(radio.n_clients)
    if clients.size * per_segment > MAX_SAMPLES:  # an even subset of the clients
        keep = max(1, MAX_SAMPLES // per_segment)
        clients = clients[np.linspace(0, clients.size - 1, keep).round().astype(int)]
    segments = int(min(MAX_SEGMENTS, max(1, window_s // segment_s),
                       max(1, MAX_SAMPLES // (clients.size * per_segment))))
    starts = np.linspace(0.0, max(0.0, window_s - segment_s), segments)
    if dt_grid is not None:  # mid-step, so each sample's step index is exact
        starts = (np.floor(starts / dt_grid) + 0.5) * dt_grid
    offsets = step_s * np.arange(per_segment)
    total = np.zeros(LAG_POINTS + 1, dtype=complex)
    for k in clients.tolist():
        times = (starts[:, None] + offsets[None, :]).ravel()
        h = np.asarray(envelope(np.full(times.size, k), times)).reshape(segments, per_segment)
        for lag in range(LAG_POINTS + 1):
            total[lag] += np.sum(h[:, :per_segment - lag] * np.conj(h[:, lag:])) / (per_segment - lag)
    empirical = (total / total[0]).real
    lag_s = step_s * np.arange(LAG_POINTS + 1)
    fd = doppler_all[clients]
    clarke = j0(2.0 * np.pi * fd[:, None] * lag_s[None, :]).mean(axis=0)
    model: np.ndarray | None
    if isinstance(fading, RicianJakesFading):
        k = 10.0 ** (fading.params.k_factor_db / 10.0)
        los = np.asarray(fading.state_dict()["los_angle_rad"], dtype=float)[clients]
        specular = np.cos(2.0 * np.pi * (fd * np.cos(los))[:, None] * lag_s[None, :]).mean(axis=0)
        model, label = (k * specular + clarke) / (k + 1.0), "(K cos(2π f_D cos θ₀ τ) + J0(2π f_D τ)) / (K+1)"
    elif isinstance(fading, JakesFading):
        model, label = clarke, "J0(2π f_D τ) (Clarke)"
    elif dt_grid is not None:
        rho = j0(2.0 * np.pi * fd * dt_grid)
        model, label = (rho[:, None] ** np.round(lag_s / dt_grid)[None, :]).mean(axis=0), "ρ^(τ/dt), ρ = J0(2π f_D dt)"
    else:
        model, label = None, "no model curve known for this fading"
    first = int(clients[np.argmin(np.abs(fd - f_median))])
    gain_t = starts[0] + offsets
    h0 = np.asarray(envelope(np.full(gain_t.size, first), gain_t))
    power = np.maximum(h0.real**2 + h0.imag**2, 1e-12)  # a zero of the envelope: -120 dB on the plot
    return Autocorrelation(fading=type(fading).__name__, lag_s=lag_s, empirical=empirical, model=model,
                           model_label=label, clarke=clarke, doppler_hz=fd, clients=int(clients.size),
                           segments=segments, segment_s=segment_s, window_s=float(window_s),
                           gain_time_s=gain_t - gain_t[0], gain_db=10.0 * np.log10(power))


def autocorrelation_figure(data: Autocorrelation, width_in: float = 7.0) -> Figure:
    """``axes[0]``: the empirical autocorrelation (markers) against lag (ms) with the model's curve
    and, for a model other than Clarke's, ``J0`` dashed; ``axes[1]``: one client's power gain (dB)
    over its first segment's first longest lag x 2."""
    from sfl_sim.reports.channel_figures import _pyplot

    plt = _pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(width_in, 0.43 * width_in), width_ratios=(1.35, 1.0),
                                 layout="constrained")
    lag_ms = data.lag_s * 1e3
    if data.model is not None:
        ax.plot(lag_ms, data.model, color="k", lw=1.3, label=f"model: {data.model_label}")
    if data.model is None or data.fading in ("GaussMarkovFading", "RicianJakesFading"):
        ax.plot(lag_ms, data.clarke, color="0.45", lw=1.0, ls="--", label="Clarke: J0(2π f_D τ)")
    every = max(1, data.lag_s.size // 40)
    ax.plot(lag_ms[::every], data.empirical[::every], "o", ms=3.2, mfc="none", color="C0",
            label=f"empirical ({data.clients} clients × {data.segments} × {data.segment_s:.3g} s)")
    ax.axhline(0.0, color="0.7", lw=0.6)
    fd = data.doppler_hz
    doppler = f"{fd[0]:.3g} Hz" if np.ptp(fd) == 0 else f"{fd.min():.3g}-{fd.max():.3g} Hz"
    ax.set(xlabel="lag τ (ms)", ylabel="Re R(τ) / R(0)", xlim=(0.0, float(lag_ms[-1])), ylim=(-0.55, 1.05),
           title=f"{data.fading}: envelope autocorrelation, f_D {doppler}")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=7, loc="best", framealpha=0.9)
    ax.grid(alpha=0.3)
    show = data.gain_time_s <= 2 * data.lag_s[-1]
    bx.plot(data.gain_time_s[show] * 1e3, data.gain_db[show], color="C0", lw=0.9)
    bx.axhline(0.0, color="0.6", lw=0.6, ls=":")
    bx.set(xlabel="time (ms)", ylabel="|h(t)|² (dB)", ylim=(max(-40.0, float(np.min(data.gain_db[show])) - 2), 10.0),
           title="one client's power gain")
    bx.title.set_fontsize(9)
    bx.grid(alpha=0.3)
    return fig


def _spread(values: np.ndarray, fmt: str) -> str:
    v = np.asarray(values, dtype=float)
    return f"{format(v.min(), fmt)}/{format(float(np.median(v)), fmt)}/{format(v.max(), fmt)}"


def doppler_line(cell: Cell, name: str | None = None) -> str | None:
    """One line on a time-varying fading (called ``name``, default its class name): its Doppler and
    coherence time (min/median/max over the clients), where its speed comes from and the step a
    transfer is integrated over; None without one."""
    radio = cell.radio
    if not radio.time_varying:
        return None
    fd = fading_doppler_hz(radio)
    fixed = fixed_fading_speed_m_per_s(radio)
    speed = (f"speed {fixed:g} m/s for every client (fading speed_m_per_s: drop-based)" if fixed is not None
             else "speed: each client's mobility speed")
    coherence = np.asarray(radio.coherence_time_s, dtype=float)
    finite = coherence[np.isfinite(coherence)]
    coherence_text = (f"coherence time min/median/max {_spread(finite * 1e3, '.3g')} ms"
                      + (f" ({coherence.size - finite.size} clients at f_D = 0: none)" if finite.size < coherence.size
                         else "") if finite.size else "coherence time: none (f_D = 0 for every client)")
    return (f"fading {name or type(radio.fading).__name__} in time: Doppler f_D min/median/max {_spread(fd, '.3g')} Hz "
            f"({speed}; carrier {radio.carrier_frequency_hz / 1e9:g} GHz); {coherence_text}; "
            f"transfers integrated by {radio.transfer_rule}")


def mobility_line(cell: Cell, name: str | None = None) -> str | None:
    """One line on a timed mobility (called ``name``, default its class name): its nominal speeds
    and the large-scale grid; None for a mobility that moves between rounds (or not at all)."""
    radio = cell.radio
    if not radio.timed:
        return None
    name = name or type(radio.large_scale.mobility).__name__
    return (f"mobility {name} (timed): nominal speed min/median/max {_spread(radio.nominal_speed_m_per_s, '.3g')} "
            f"m/s; shadowing and LOS updated every {radio.large_scale_step_s:.3g} s, positions every "
            f"{radio.position_step_s:.3g} s within a transfer")
