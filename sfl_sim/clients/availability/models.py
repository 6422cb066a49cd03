"""The built-in availability models: ``always``, ``trace`` and ``markov``."""
from __future__ import annotations

import bisect
import math
import typing
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from sfl_sim.clients.availability.base import AVAILABILITY
from sfl_sim.clients.availability.files import shown
from sfl_sim.clients.availability.readers import DeviceTrace, TraceEndedError, TraceError, read_trace
from sfl_sim.kit.checks import check_int
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel, Positive

__all__ = ["AlwaysAvailable", "TraceAvailability", "MarkovAvailability", "DAY_S"]

#: Period of the diurnal cycle.
DAY_S = 86_400.0


def _check_prepare(n_clients: int, rng: np.random.Generator) -> int:
    n = check_int("n_clients", n_clients, minimum=1)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: got {type(rng).__name__}; allowed: a numpy.random.Generator")
    return n


class _Prepared(Component):
    _n: int | None = None

    def _clients(self, clients: typing.Any) -> np.ndarray:
        if self._n is None:
            raise RuntimeError(f"{type(self).__name__}: call prepare(n_clients, rng) first")
        idx = np.asarray(clients, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self._n):
            raise ValueError(f"clients: got indices in [{idx.min()}, {idx.max()}]; allowed: 0 .. {self._n - 1}")
        return idx


@AVAILABILITY.register("always")
class AlwaysAvailable(_Prepared):
    """Every client is online at every time (the simulator's behaviour without availability)."""

    def prepare(self, n_clients: int, rng: np.random.Generator) -> None:
        """See :class:`~sfl_sim.clients.availability.Availability`; draws nothing."""
        self._n = _check_prepare(n_clients, rng)

    def online(self, clients: np.ndarray, t_s: float) -> np.ndarray:
        """All True."""
        return np.ones(self._clients(clients).size, dtype=bool)

    def next_change_s(self, client: int, t_s: float) -> float:
        """``inf``: nothing ever changes."""
        self._clients([client])
        return math.inf



@AVAILABILITY.register("trace")
class TraceAvailability(_Prepared):
    """Replays an availability trace file (CSV intervals, FLASH JSON or FedScale pickle).
    """

    class Params(ParamsModel):
        path: Annotated[str, Doc("The trace file.")]
        format: Annotated[Literal["csv", "flash", "fedscale"], Doc(
            "Its format (see :mod:`sfl_sim.clients.availability.readers`).")] = "csv"
        mapping: Annotated[Literal["seeded", "order"], Doc(
            "How simulated clients get trace devices: ``seeded`` draws them from the prepare ``rng`` (distinct "
            "devices when the trace has at least as many as there are clients, else with repeats); ``order`` gives "
            "client ``i`` the trace's ``i``-th device (the file's order; FedScale's by client id) and needs at "
            "least as many devices as clients.")] = "seeded"
        on_end: Annotated[Literal["wrap", "stop"], Doc(
            "A run longer than a device's trace: ``wrap`` repeats the trace over its span; ``stop`` raises "
            "TraceEndedError (one line) when a time past the end is asked.")] = "wrap"

    params: Params

    def __post_init__(self) -> None:
        self.devices: list[DeviceTrace] = read_trace(self.params.path, self.params.format)
        self.device_of: np.ndarray | None = None

    def prepare(self, n_clients: int, rng: np.random.Generator) -> None:
        """Map the ``n_clients`` clients to trace devices (see ``mapping``)."""
        n = _check_prepare(n_clients, rng)
        count = len(self.devices)
        if self.params.mapping == "order":
            if n > count:
                raise TraceError(f"{self.params.path}: mapping 'order' got {n} clients for {count} trace devices; "
                                 f"allowed: at most {count} clients, or mapping 'seeded'")
            self.device_of = np.arange(n, dtype=np.int64)
        else:
            self.device_of = rng.choice(count, size=n, replace=n > count).astype(np.int64)
        self._n = n

    def _device_of(self, client: int) -> DeviceTrace:
        """The trace device ``client`` replays (after :meth:`prepare`, which ``_clients`` checks)."""
        assert self.device_of is not None, "prepare() sets device_of before any client is looked up"
        return self.devices[int(self.device_of[client])]

    def _local(self, device: DeviceTrace, t_s: float) -> float:
        """``t_s`` in the device's trace span (wrapped), or the error for ``stop``."""
        span = device.end_s - device.origin_s
        if t_s < device.end_s:
            if t_s >= device.origin_s or self.params.on_end == "stop":
                return t_s  # before its first message a stopped trace knows no interval: offline
        elif self.params.on_end == "stop":
            raise TraceEndedError(f"{self.params.path}: time {t_s:g} s is past the end of device "
                                  f"{shown(device.device)}'s "
                                  f"trace ({device.end_s:g} s) and on_end is 'stop'; allowed: a shorter run, "
                                  f"or on_end 'wrap'")
        return device.origin_s + (t_s - device.origin_s) % span

    @staticmethod
    def _inside(device: DeviceTrace, u: float) -> bool:
        i = int(np.searchsorted(device.starts_s, u, side="right")) - 1
        return i >= 0 and u < device.ends_s[i]

    def online(self, clients: np.ndarray, t_s: float) -> np.ndarray:
        """Whether each client's device is inside one of its intervals at ``t_s``."""
        idx = self._clients(clients)
        return np.array([self._inside(d, self._local(d, float(t_s)))
                         for d in (self._device_of(c) for c in idx)], dtype=bool)

    def next_change_s(self, client: int, t_s: float) -> float:
        """The next interval end (online) or start (offline) after ``t_s``, across wraps; with
        ``stop``, at most the trace's end (past which :meth:`online` raises)."""
        device = self._device_of(int(self._clients([client])[0]))
        t_s = float(t_s)
        u = self._local(device, t_s)
        base = t_s - u  # a multiple of the span when wrapped, 0 otherwise
        span = device.end_s - device.origin_s
        state = self._inside(device, u)
        bounds = np.concatenate([device.starts_s, device.ends_s])
        bounds = np.unique(bounds[(bounds >= device.origin_s) & (bounds <= device.end_s)])
        for cycle in range(3):  # the rest of this span, then whole spans: a flip shows within two
            shift = base + cycle * span
            for b in bounds:
                at = shift + b
                if at <= t_s:
                    continue
                if self.params.on_end == "stop" and at >= device.end_s:
                    return device.end_s
                # the state at shift + b, from b itself (no float modulo): the span's end is its origin
                local = b if b < device.end_s else device.origin_s
                if self._inside(device, local) != state:
                    return float(at)
            if self.params.on_end == "stop":
                return device.end_s
        return math.inf



@AVAILABILITY.register("markov")
class MarkovAvailability(_Prepared):
    """Two-state on/off continuous-time Markov chain per client, optionally with a 24 h cycle.

    Online periods last ``Exp(mean_on_s)``; offline ones end at rate
    ``(1 + diurnal_amplitude * cos(2 pi (t - peak_hour h) / 24 h)) / mean_off_s`` (drawn by
    thinning), so with amplitude 0 the long-run online fraction is
    ``mean_on_s / (mean_on_s + mean_off_s)``.  A client starts online with that probability.
    Each client draws from its own generator seeded from the prepare ``rng``, so a client's
    path does not depend on the order in which clients are asked about.
    """

    class Params(ParamsModel):
        mean_on_s: Annotated[Positive, Doc("Mean online duration without modulation, seconds (> 0).")]
        mean_off_s: Annotated[Positive, Doc("Mean offline duration without modulation, seconds (> 0).")]
        diurnal_amplitude: Annotated[float, Field(ge=0, lt=1), Doc(
            "Relative swing of the come-online rate over the day, in [0, 1).")] = 0.0
        peak_hour: Annotated[float, Field(ge=0, lt=24), Doc(
            "Hour of the day (simulated time 0 is midnight) at which clients come online fastest.")] = 20.0

    params: Params

    def prepare(self, n_clients: int, rng: np.random.Generator) -> None:
        """Seed one generator per client from ``rng`` and draw each client's initial state."""
        n = _check_prepare(n_clients, rng)
        seeds = rng.integers(0, 2**63 - 1, size=n)
        self._rngs = [np.random.default_rng(int(s)) for s in seeds]
        p_on = self.params.mean_on_s / (self.params.mean_on_s + self.params.mean_off_s)
        self._start_online = [bool(r.random() < p_on) for r in self._rngs]
        self._changes: list[list[float]] = [[] for _ in range(n)]
        self._n = n

    def _on_rate(self, t_s: float) -> float:
        phase = 2 * math.pi * (t_s - self.params.peak_hour * 3600.0) / DAY_S
        return (1 + self.params.diurnal_amplitude * math.cos(phase)) / self.params.mean_off_s

    def _extend(self, c: int, t_s: float) -> None:
        """Draw client ``c``'s switching times until one lies after ``t_s``."""
        changes, rng = self._changes[c], self._rngs[c]
        while not changes or changes[-1] <= t_s:
            now = changes[-1] if changes else 0.0
            online = self._start_online[c] != (len(changes) % 2 == 1)
            if online:
                changes.append(now + rng.exponential(self.params.mean_on_s))
                continue
            top = (1 + self.params.diurnal_amplitude) / self.params.mean_off_s
            while True:  # thinning: candidates at the top rate, kept with probability rate/top
                now += rng.exponential(1 / top)
                if rng.random() * top <= self._on_rate(now):
                    break
            changes.append(now)

    def _state(self, c: int, t_s: float) -> bool:
        self._extend(c, t_s)
        flips = bisect.bisect_right(self._changes[c], t_s)
        return self._start_online[c] != (flips % 2 == 1)

    def online(self, clients: np.ndarray, t_s: float) -> np.ndarray:
        """Each client's state at ``t_s`` (``t_s`` >= 0)."""
        idx = self._clients(clients)
        return np.array([self._state(int(c), float(t_s)) for c in idx], dtype=bool)

    def next_change_s(self, client: int, t_s: float) -> float:
        """The client's first switching time after ``t_s``."""
        c = int(self._clients([client])[0])
        self._extend(c, float(t_s))
        changes = self._changes[c]
        return float(changes[bisect.bisect_right(changes, float(t_s))])

