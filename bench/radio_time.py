"""Host time per round of a radio in time (a time-varying fading and in-round mobility) against
today's static round, at 100 clients per round (no torch work at all).

The stand-in round of :mod:`bench.engine_events` (SCALA's event pattern: per local iteration every
client computes, uploads activations and labels, downloads the gradients; then its model) runs
through the real :class:`~sfl_sim.engine.Simulator` on the ``cellular_100clients`` scenario's
cell, as built (static clients, no fading: today's round), and on the same cell with a
time-varying fading (Clarke's sum of sinusoids, a stand-in until the real component is merged)
and a timed mobility (clients circling the base station at 3 m/s, a stand-in), so that every
upload's bits are integrated over the changing channel (:mod:`sfl_sim.channel.radio_state`).  The
two kinds of round are interleaved in one process (static, in time, in time, static...) so machine
noise hits both alike; prints the median host milliseconds per round of each and their ratio
(the target: at most 1.3).

    python bench/radio_time.py [--size 100] [--rounds 12]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.engine_events import round_process  # noqa: E402


class SumOfSinusoidsFading:
    """Stand-in time-varying fading: |h|^2 of ``m`` equal-power sinusoids at Doppler ``f_D cos a``."""

    time_varying = True

    def __init__(self, m: int = 8) -> None:
        self.m = m

    def start(self, n_clients: int, doppler_hz: np.ndarray, rng: np.random.Generator) -> None:
        self._fd = np.asarray(doppler_hz, dtype=float)
        self._w = 2 * np.pi * self._fd[:, None] * np.cos(rng.uniform(0.0, 2 * np.pi, (n_clients, self.m)))
        self._phase = rng.uniform(0.0, 2 * np.pi, (n_clients, self.m))

    def power_gain_at(self, client_ids: np.ndarray, t_s: Any) -> np.ndarray:
        ids = np.asarray(client_ids, dtype=int)
        t = np.broadcast_to(np.asarray(t_s, dtype=float), ids.shape)
        h = np.exp(1j * (self._w[ids] * t[:, None] + self._phase[ids])).sum(axis=1) / np.sqrt(self.m)
        return np.abs(h) ** 2

    def coherence_time_s(self, client_ids: np.ndarray) -> np.ndarray:
        fd = self._fd[np.asarray(client_ids, dtype=int)]
        with np.errstate(divide="ignore"):
            return np.where(fd > 0, 0.423 / fd, np.inf)  # Rappaport's 0.423 / f_D (stand-in)

    def state_dict(self) -> dict[str, Any]:
        return {"w": self._w, "phase": self._phase, "fd": self._fd}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._w, self._phase, self._fd = state["w"], state["phase"], state["fd"]


class CircleMobility:
    """Stand-in timed mobility: each client circles the base station at its start radius."""

    timed = True

    def __init__(self, speed_m_per_s: float = 3.0) -> None:
        self.speed = speed_m_per_s

    def start(self, positions_m: np.ndarray, rng: np.random.Generator, radius_m: float | None = None,
              min_distance_m: float | None = None) -> np.ndarray:
        p = np.asarray(positions_m, dtype=float)
        self._r, self._theta0 = np.hypot(p[:, 0], p[:, 1]), np.arctan2(p[:, 1], p[:, 0])
        return p

    def positions_at(self, t_s: float) -> np.ndarray:
        theta = self._theta0 + self.speed * t_s / self._r
        return np.stack([self._r * np.cos(theta), self._r * np.sin(theta)], axis=1)

    def velocities_at(self, t_s: float) -> np.ndarray:
        theta = self._theta0 + self.speed * t_s / self._r
        return self.speed * np.stack([-np.sin(theta), np.cos(theta)], axis=1)

    def nominal_speed_m_per_s(self) -> np.ndarray:
        return np.full(self._r.shape, self.speed)

    def state_dict(self) -> dict[str, Any]:
        return {"r": self._r, "theta0": self._theta0}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._r, self._theta0 = state["r"], state["theta0"]


def cells(size: int) -> tuple[Any, Any]:
    """The scenario's cell as built, and the same cell with the stand-ins (a radio in time)."""
    from sfl_sim.channel import Cell
    from sfl_sim.config import load_scenario
    from sfl_sim.config.scenario_files import resolve_scenario
    from sfl_sim.kit.seeding import stream
    from sfl_sim.runs.build import build_cell

    cfg = load_scenario(resolve_scenario("cellular_100clients"),
                        extra={"clients": {"count": 10 * size, "participation": 0.1}})
    static = build_cell(cfg)
    c, seed = cfg.cell, cfg.seed
    in_time = Cell(static.placement, static.pathloss, static.shadowing, static.rate, static.allocator,
                   n_clients=cfg.clients.count, tx_power_w=c.client_tx_power_w,
                   noise_psd_dbm_per_hz=c.noise_psd_dbm_per_hz, uplink_bandwidth_hz=c.uplink_bandwidth_hz,
                   downlink_bandwidth_hz=c.downlink.bandwidth_hz, server_tx_power_w=c.downlink.server_tx_power_w,
                   placement_rng=stream(seed, "placement"), shadowing_rng=stream(seed, "shadowing"),
                   los_rng=stream(seed, "los"), interference_rng=stream(seed, "interference"),
                   downlink_rate=static.downlink_rate, numerology=c.numerology,
                   fading=SumOfSinusoidsFading(), mobility=CircleMobility(3.0),
                   fading_process_rng=stream(seed, "fading_process"), mobility_rng=stream(seed, "mobility_process"))
    return static, in_time


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args(argv)
    from sfl_sim.engine import SERVER, Simulator

    sims = {name: Simulator(cell, np.full(10 * args.size, 5e9), 1e12)
            for name, cell in zip(("static", "in_time"), cells(args.size), strict=True)}
    rng = np.random.default_rng(0)
    ms: dict[str, list[float]] = {"static": [], "in_time": []}
    for i in range(args.rounds + 1):
        cohort = np.sort(rng.choice(10 * args.size, args.size, replace=False))
        order = ("static", "in_time") if i % 2 == 0 else ("in_time", "static")
        for name in order:
            sim = sims[name]
            start = time.perf_counter()
            duration_s = sim.run_round(lambda ctx, ids=cohort: round_process(ctx, ids, SERVER), cohort)
            elapsed = time.perf_counter() - start
            sim.cell.move(duration_s, rng)
            if i > 0:  # the first round warms up
                ms[name].append(elapsed * 1e3)
    med = {name: statistics.median(v) for name, v in ms.items()}
    print(f"{args.size} clients per round, medians of {args.rounds} interleaved rounds each")
    print(f"static today:                       {med['static']:8.1f} ms/round")
    print(f"time-varying fading + in-round move: {med['in_time']:8.1f} ms/round")
    print(f"ratio: {med['in_time'] / med['static']:.3f} (target <= 1.3)")


if __name__ == "__main__":
    main()
