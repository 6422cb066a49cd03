"""Shared helpers of the channel tests (import them as ``tests.channel.helpers``; the fixtures
built on them are in ``conftest.py``): the thermal noise floor and a small cell."""
from __future__ import annotations

from typing import Any

import numpy as np

from sfl_sim.channel import (
    Cell,
    EqualAllocation,
    FixedDistancePlacement,
    NoShadowing,
    ShannonRate,
    TR36814Macro,
    dbm_to_w,
)

#: Thermal noise at 290 K, dBm/Hz and W/Hz (10^(-20.4) W/Hz ~ 3.98e-21 W/Hz).
N0_DBM_PER_HZ = -174.0
N0_W_PER_HZ = dbm_to_w(N0_DBM_PER_HZ)


def small_cell(placement: Any = None, pathloss: Any = None, shadowing: Any = None, rate: Any = None,
               allocator: Any = None, *, n_clients: int = 3, seed: int = 0, **overrides: Any) -> Cell:
    """A cell of fresh components, same arguments, same cell.

    Defaults: clients at 100, 300 and 500 m (``FixedDistancePlacement``), TR 36.814 macro path
    loss, no shadowing, Shannon rate, equal shares; 0.2 W clients, -174 dBm/Hz, a 3 MHz uplink, a
    20 MHz downlink from a 1 W server.  Streams: placement ``seed``, shadowing ``seed + 1``, LOS
    ``seed + 2``.  ``overrides`` are any other :class:`~channel.Cell` keywords (``fading``,
    ``mobility``, ``tx_power_w`` ...), or replace the ones above.
    """
    kwargs: dict = dict(
        n_clients=n_clients, tx_power_w=0.2, noise_psd_dbm_per_hz=N0_DBM_PER_HZ, uplink_bandwidth_hz=3e6,
        downlink_bandwidth_hz=20e6, server_tx_power_w=1.0, placement_rng=np.random.default_rng(seed),
        shadowing_rng=np.random.default_rng(seed + 1), los_rng=np.random.default_rng(seed + 2),
    )
    kwargs.update(overrides)
    return Cell(
        placement if placement is not None else FixedDistancePlacement([100.0, 300.0, 500.0]),
        pathloss if pathloss is not None else TR36814Macro(),
        shadowing if shadowing is not None else NoShadowing(),
        rate if rate is not None else ShannonRate(),
        allocator if allocator is not None else EqualAllocation(),
        **kwargs,
    )
