"""When a round can start: the clients online at a simulated time, or the first time anyone is.

A round waits when nobody is online: the clock moves to the earliest next change of any client
(a round never starts empty).  When no client is online and none ever changes, no round can
start, which is an error of one line.
"""
from __future__ import annotations

import math

import numpy as np

from sfl_sim.clients.availability.base import Availability
from sfl_sim.errors import UserError

__all__ = ["NobodyOnlineError", "round_start"]


class NobodyOnlineError(UserError):
    """No client is online now and none will ever come online."""


def round_start(model: Availability, n_clients: int, t_s: float) -> tuple[float, np.ndarray]:
    """The first time ``>= t_s`` at which at least one client is online, and the online mask then.

    Parameters
    ----------
    model : Availability
        Prepared for ``n_clients``.
    n_clients : int
    t_s : float
        Simulated time the round would start.

    Raises
    ------
    NobodyOnlineError
        No client is online at ``t_s`` and no client's state ever changes after it.
    """
    clients = np.arange(n_clients)
    while True:
        online = np.asarray(model.online(clients, t_s), dtype=bool)
        if online.any():
            return t_s, online
        nxt = min(float(model.next_change_s(int(c), t_s)) for c in clients)
        if not math.isfinite(nxt):
            raise NobodyOnlineError(f"clients.availability: no client is online at {t_s:g} s and none comes "
                                    f"online later; allowed: a model or trace in which some client is online")
        t_s = nxt
