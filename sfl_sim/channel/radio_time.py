"""What a :class:`~sfl_sim.channel.radio_state.RadioState` says about time, per client, read only:
the speed a fading's Doppler is computed from and that Doppler (for ``clients.csv`` and the
``sfl-sim channel`` report).

Both follow the rule the radio state starts its time-varying fading with
(:mod:`sfl_sim.channel.radio_state`): a fading whose ``speed_m_per_s`` is set (a drop-based
evaluation: clients that stay put but fade as at that speed) fixes every client's speed; otherwise
each client's nominal mobility speed (a timed mobility's ``nominal_speed_m_per_s``, a step model's
``max_speed_m_per_s``, 0 for static clients).  Nothing here draws or advances anything.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sfl_sim.channel.link.fading_time import doppler_hz

if TYPE_CHECKING:
    from sfl_sim.channel.radio_state import RadioState

__all__ = ["doppler_speed_m_per_s", "fading_doppler_hz", "fixed_fading_speed_m_per_s"]


def fixed_fading_speed_m_per_s(radio: RadioState) -> float | None:
    """The speed a time-varying fading fixes for every client's Doppler (its ``speed_m_per_s``), m/s;
    None when it fixes none or the fading is not time-varying."""
    if not radio.time_varying:
        return None
    fixed = getattr(radio.fading, "speed_m_per_s", None)
    return None if fixed is None else float(fixed)


def doppler_speed_m_per_s(radio: RadioState) -> np.ndarray:
    """Each client's speed its Doppler is computed from, shape (n,), m/s (module docstring): the
    time-varying fading's fixed ``speed_m_per_s`` when it has one, else the radio state's
    ``nominal_speed_m_per_s`` (also without a time-varying fading: the speed the clients move at)."""
    fixed = fixed_fading_speed_m_per_s(radio)
    if fixed is not None:
        return np.full(radio.n_clients, fixed)
    return np.array(radio.nominal_speed_m_per_s, dtype=float)


def fading_doppler_hz(radio: RadioState) -> np.ndarray:
    """Each client's maximum Doppler ``f_D = v f_c / c`` the time-varying fading runs at, shape (n,),
    Hz (:func:`~sfl_sim.channel.link.fading_time.doppler_hz` of :func:`doppler_speed_m_per_s` on the
    radio state's carrier, the values it was started with); NaN without a time-varying fading (an
    i.i.d. block fading has no Doppler)."""
    if not radio.time_varying:
        return np.full(radio.n_clients, np.nan)
    return np.asarray(doppler_hz(doppler_speed_m_per_s(radio), radio.carrier_frequency_hz), dtype=float)
