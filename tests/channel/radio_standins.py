"""Stand-ins for a time-varying fading and a timed mobility (tests only: the real ones are
:mod:`sfl_sim.channel.link.fading_time` and the timed mobility models)."""
from __future__ import annotations

from typing import Any

import numpy as np


class SumOfSinusoidsFading:
    """|h|^2 of a sum of ``m`` equal-power sinusoids at Doppler ``f_D cos(alpha)`` (Clarke's model,
    as a stand-in): a deterministic function of (the start's draws, client, t)."""

    time_varying = True

    def __init__(self, m: int = 8) -> None:
        self.m = m
        self.starts = 0

    def start(self, n_clients: int, doppler_hz: np.ndarray, rng: np.random.Generator) -> None:
        self.starts += 1
        self._fd = np.asarray(doppler_hz, dtype=float)
        self._alpha = rng.uniform(0.0, 2 * np.pi, (n_clients, self.m))
        self._phase = rng.uniform(0.0, 2 * np.pi, (n_clients, self.m))

    def power_gain_at(self, client_ids: np.ndarray, t_s: Any) -> np.ndarray:
        ids = np.asarray(client_ids, dtype=int)
        t = np.broadcast_to(np.asarray(t_s, dtype=float), ids.shape)
        arg = 2 * np.pi * self._fd[ids, None] * np.cos(self._alpha[ids]) * t[:, None] + self._phase[ids]
        h = np.exp(1j * arg).sum(axis=1) / np.sqrt(self.m)
        return np.abs(h) ** 2

    def coherence_time_s(self, client_ids: np.ndarray) -> np.ndarray:
        fd = self._fd[np.asarray(client_ids, dtype=int)]
        with np.errstate(divide="ignore"):
            return np.where(fd > 0, 0.423 / fd, np.inf)

    def state_dict(self) -> dict[str, Any]:
        return {"fd": self._fd.copy(), "alpha": self._alpha.copy(), "phase": self._phase.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._fd, self._alpha, self._phase = (np.array(state[k]) for k in ("fd", "alpha", "phase"))


class CircleMobility:
    """Each client on a circle around the base station at its start radius, ``speed`` m/s."""

    timed = True

    def __init__(self, speed_m_per_s: float = 3.0) -> None:
        self.speed = speed_m_per_s

    def start(self, positions_m: np.ndarray, rng: np.random.Generator, radius_m: float | None = None,
              min_distance_m: float | None = None) -> np.ndarray:
        p = np.asarray(positions_m, dtype=float)
        self._r = np.hypot(p[:, 0], p[:, 1])
        self._theta0 = np.arctan2(p[:, 1], p[:, 0]) + rng.uniform(0, 0.1, len(p))
        return self.positions_at(0.0)

    def positions_at(self, t_s: float) -> np.ndarray:
        theta = self._theta0 + self.speed * t_s / self._r
        return np.stack([self._r * np.cos(theta), self._r * np.sin(theta)], axis=1)

    def velocities_at(self, t_s: float) -> np.ndarray:
        theta = self._theta0 + self.speed * t_s / self._r
        return self.speed * np.stack([-np.sin(theta), np.cos(theta)], axis=1)

    def nominal_speed_m_per_s(self) -> np.ndarray:
        return np.full(self._r.shape, self.speed)

    def state_dict(self) -> dict[str, Any]:
        return {"r": self._r.copy(), "theta0": self._theta0.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._r, self._theta0 = np.array(state["r"]), np.array(state["theta0"])


class StepFading:
    """A time-varying fading whose gain is a step function of time: ``low`` before ``switch_s``,
    ``high`` from then on, for every client; no Doppler (an infinite coherence time, so a
    transfer's rate is re-evaluated every ``MAX_STEP_S``): transfers with hand-computable ends."""

    time_varying = True

    def __init__(self, switch_s: float, low: float = 1.0, high: float = 4.0) -> None:
        self.switch_s, self.low, self.high = switch_s, low, high

    def start(self, n_clients: int, doppler_hz: np.ndarray, rng: np.random.Generator) -> None:
        self._n = n_clients

    def power_gain_at(self, client_ids: np.ndarray, t_s: Any) -> np.ndarray:
        ids = np.asarray(client_ids, dtype=int)
        t = np.broadcast_to(np.asarray(t_s, dtype=float), ids.shape)
        return np.where(t < self.switch_s, self.low, self.high)

    def coherence_time_s(self, client_ids: np.ndarray) -> np.ndarray:
        return np.full(np.shape(client_ids), np.inf)

    def state_dict(self) -> dict[str, Any]:
        return {"n": self._n}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._n = state["n"]
