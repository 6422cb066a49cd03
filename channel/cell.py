"""The large-scale radio state of one cell: client positions, path loss, shadowing, rates.

A :class:`Cell` is assembled from swappable components (placement, path loss, shadowing, rate
model, bandwidth allocator) that the caller creates through the registries.  The clients are
dropped once, on construction; the per-client arrays are read-only afterwards so that every
training round sees the same large-scale channel.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from ._checks import check_array, check_count, check_scalar, readonly
from .geometry import distances_m as _distances_m
from .units import dbm_to_w, linear_to_db

__all__ = ["Cell"]


class Cell:
    """Large-scale state of one cell with ``n_clients`` clients and a server at the origin.

    Parameters
    ----------
    placement : object
        Has ``sample_positions_m(n_clients, rng) -> ndarray (n, 2)`` (see ``PLACEMENTS``).
    pathloss : object
        Has ``loss_db(distance_m) -> ndarray`` (see ``PATHLOSS``).
    shadowing : object
        Has ``sample_db(n_clients, rng) -> ndarray (n,)`` (see ``SHADOWING``).
    rate : object
        Has ``rate_bps(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz)`` (see ``RATES``).
    allocator : object
        Has ``allocate_hz(total_bandwidth_hz, payload_bits, gain_linear) -> ndarray (k,)``
        (see ``ALLOCATORS``).
    n_clients : int
        Number of clients, >= 1.
    tx_power_w : float or array_like, shape (n_clients,)
        Client transmit power in W, > 0.
    noise_psd_dbm_per_hz : float
        Receiver noise power spectral density in dBm/Hz (e.g. -174), finite.
    uplink_bandwidth_hz : float
        Uplink band shared by the clients of one phase, in Hz, > 0.
    downlink_bandwidth_hz : float, optional
        Downlink band in Hz, > 0; needed only by the downlink methods.
    server_tx_power_w : float, optional
        Server (base station) transmit power in W, > 0; needed only by the downlink methods.
    placement_rng, shadowing_rng : numpy.random.Generator
        Separate streams, so changing the shadowing model does not move the clients.

    Raises
    ------
    ValueError
        For any out-of-range parameter, or a component that returns arrays of the wrong shape.
    TypeError
        If an rng is not a ``numpy.random.Generator``.
    """

    def __init__(
        self,
        placement: Any,
        pathloss: Any,
        shadowing: Any,
        rate: Any,
        allocator: Any,
        *,
        n_clients: int,
        tx_power_w: Any,
        noise_psd_dbm_per_hz: float,
        uplink_bandwidth_hz: float,
        downlink_bandwidth_hz: Optional[float] = None,
        server_tx_power_w: Optional[float] = None,
        placement_rng: np.random.Generator,
        shadowing_rng: np.random.Generator,
    ) -> None:
        n = check_count("n_clients", n_clients)
        if n < 1:
            raise ValueError(f"n_clients must be an integer >= 1, got {n_clients!r}")
        for name, rng in (("placement_rng", placement_rng), ("shadowing_rng", shadowing_rng)):
            if not isinstance(rng, np.random.Generator):
                raise TypeError(f"{name} must be a numpy.random.Generator, got {type(rng).__name__}")

        power = check_array("tx_power_w", tx_power_w, minimum=0.0, strict=True)
        if power.ndim == 0:
            power = np.full(n, float(power))
        elif power.shape != (n,):
            raise ValueError(
                f"tx_power_w must be a scalar or have shape ({n},) (one per client), got shape {power.shape}"
            )
        noise_dbm = check_scalar("noise_psd_dbm_per_hz", noise_psd_dbm_per_hz, minimum=-np.inf)
        self._uplink_bandwidth_hz = check_scalar(
            "uplink_bandwidth_hz", uplink_bandwidth_hz, minimum=0.0, strict=True
        )
        self._downlink_bandwidth_hz = (
            None
            if downlink_bandwidth_hz is None
            else check_scalar("downlink_bandwidth_hz", downlink_bandwidth_hz, minimum=0.0, strict=True)
        )
        self._server_tx_power_w = (
            None
            if server_tx_power_w is None
            else check_scalar("server_tx_power_w", server_tx_power_w, minimum=0.0, strict=True)
        )

        self.placement, self.pathloss, self.shadowing = placement, pathloss, shadowing
        self.rate, self.allocator = rate, allocator
        self._n_clients = n
        self._noise_psd_dbm_per_hz = noise_dbm
        self._noise_psd_w_per_hz = float(dbm_to_w(noise_dbm))
        self._tx_power_w = readonly(power)

        positions = np.asarray(placement.sample_positions_m(n, placement_rng), dtype=float)
        if positions.shape != (n, 2):
            raise ValueError(f"placement {placement!r} returned shape {positions.shape}, expected ({n}, 2)")
        distance = _distances_m(positions)
        pathloss_db = np.asarray(pathloss.loss_db(distance), dtype=float)
        if pathloss_db.shape != (n,):
            raise ValueError(f"pathloss {pathloss!r} returned shape {pathloss_db.shape}, expected ({n},)")
        shadowing_db = np.asarray(shadowing.sample_db(n, shadowing_rng), dtype=float)
        if shadowing_db.shape != (n,):
            raise ValueError(f"shadowing {shadowing!r} returned shape {shadowing_db.shape}, expected ({n},)")

        self._positions_m = readonly(positions)
        self._distance_m = readonly(distance)
        self._pathloss_db = readonly(pathloss_db)
        self._shadowing_db = readonly(shadowing_db)
        # Shadowing is extra loss in dB, so it adds to the path loss before converting to linear.
        self._gain_linear = readonly(np.power(10.0, -(pathloss_db + shadowing_db) / 10.0))

    # ------------------------------------------------------------------ read-only state
    @property
    def n_clients(self) -> int:
        """Number of clients in the cell."""
        return self._n_clients

    @property
    def positions_m(self) -> np.ndarray:
        """Client positions, shape (n, 2), metres; server at the origin."""
        return self._positions_m

    @property
    def distance_m(self) -> np.ndarray:
        """Client-server distances, shape (n,), metres."""
        return self._distance_m

    @property
    def pathloss_db(self) -> np.ndarray:
        """Path loss per client, shape (n,), dB."""
        return self._pathloss_db

    @property
    def shadowing_db(self) -> np.ndarray:
        """Shadowing per client, shape (n,), dB (positive = extra loss)."""
        return self._shadowing_db

    @property
    def gain_linear(self) -> np.ndarray:
        """Linear channel power gain ``10^(-(pathloss_db + shadowing_db)/10)``, shape (n,)."""
        return self._gain_linear

    @property
    def tx_power_w(self) -> np.ndarray:
        """Client transmit power, shape (n,), W."""
        return self._tx_power_w

    @property
    def noise_psd_dbm_per_hz(self) -> float:
        """Noise power spectral density, dBm/Hz."""
        return self._noise_psd_dbm_per_hz

    @property
    def noise_psd_w_per_hz(self) -> float:
        """Noise power spectral density, W/Hz."""
        return self._noise_psd_w_per_hz

    @property
    def uplink_bandwidth_hz(self) -> float:
        """Total uplink band, Hz."""
        return self._uplink_bandwidth_hz

    @property
    def downlink_bandwidth_hz(self) -> Optional[float]:
        """Total downlink band, Hz, or None if not configured."""
        return self._downlink_bandwidth_hz

    @property
    def server_tx_power_w(self) -> Optional[float]:
        """Server transmit power, W, or None if not configured."""
        return self._server_tx_power_w

    # ------------------------------------------------------------------ rates
    def uplink_rates_bps(self, client_ids: Any, payload_bits: Any = None) -> np.ndarray:
        """Uplink rate of each client in a group that transmits in the same phase.

        The allocator splits ``uplink_bandwidth_hz`` among exactly these clients, then the rate
        model gives each client's rate on its share.

        Parameters
        ----------
        client_ids : array_like of int, shape (k,)
            Distinct client indices in ``[0, n_clients)``.
        payload_bits : float or array_like, shape (k,), optional
            Bits each client will send, >= 0; passed to the allocator (a scalar is broadcast).

        Returns
        -------
        numpy.ndarray, shape (k,)
            Rates in bit/s, in the order of ``client_ids``.
        """
        ids = self._check_ids(client_ids)
        return self._shared_rates(ids, payload_bits, self._uplink_bandwidth_hz, self._tx_power_w[ids])

    def downlink_rates_bps(self, client_ids: Any, payload_bits: Any = None) -> np.ndarray:
        """Downlink rate to each client when the server sends them separate data in one phase.

        Same as :meth:`uplink_rates_bps` with ``downlink_bandwidth_hz`` and ``server_tx_power_w``,
        except that the server has one power amplifier: ``server_tx_power_w`` is spread over the
        band at a flat spectral density, so a client's sub-band b_k carries P b_k / B.

        Parameters
        ----------
        client_ids : array_like of int, shape (k,)
            Distinct client indices in ``[0, n_clients)``.
        payload_bits : float or array_like, shape (k,), optional
            Bits the server will send to each client, >= 0.

        Returns
        -------
        numpy.ndarray, shape (k,)
            Rates in bit/s.

        Raises
        ------
        ValueError
            If the cell was built without ``downlink_bandwidth_hz`` or ``server_tx_power_w``.
        """
        ids = self._check_ids(client_ids)
        band, power = self._downlink_config("downlink_rates_bps")
        return self._shared_rates(ids, payload_bits, band, power, power_per_hz=True)

    def broadcast_rate_bps(self, client_ids: Any) -> float:
        """Rate of one server transmission on the whole downlink band received by all clients.

        Every receiver must decode, so the rate is the minimum of their full-band rates.

        Parameters
        ----------
        client_ids : array_like of int, shape (k,), k >= 1
            Distinct client indices in ``[0, n_clients)``.

        Returns
        -------
        float
            Broadcast rate in bit/s.

        Raises
        ------
        ValueError
            If ``client_ids`` is empty or the downlink is not configured.
        """
        ids = self._check_ids(client_ids)
        if ids.size == 0:
            raise ValueError("client_ids must name at least one receiver for a broadcast, got []")
        band, power = self._downlink_config("broadcast_rate_bps")
        rates = self.rate.rate_bps(band, power, self._gain_linear[ids], self._noise_psd_w_per_hz)
        return float(np.min(rates))

    def describe(self) -> Dict[str, np.ndarray]:
        """Per-client summary for printing and result files.

        SNR and rate assume every client transmits at once on an equal share
        ``uplink_bandwidth_hz / n_clients`` (a reference point, not what a given phase uses).

        Returns
        -------
        dict of str to numpy.ndarray, each shape (n,)
            ``client`` (int), ``distance_m``, ``pathloss_db``, ``shadowing_db``, ``snr_db``,
            ``uplink_rate_bps``.
        """
        share_hz = self._uplink_bandwidth_hz / self._n_clients
        snr = self._tx_power_w * self._gain_linear / (share_hz * self._noise_psd_w_per_hz)
        rate = self.rate.rate_bps(share_hz, self._tx_power_w, self._gain_linear, self._noise_psd_w_per_hz)
        return {
            "client": np.arange(self._n_clients),
            "distance_m": self._distance_m.copy(),
            "pathloss_db": self._pathloss_db.copy(),
            "shadowing_db": self._shadowing_db.copy(),
            "snr_db": np.asarray(linear_to_db(snr), dtype=float),
            "uplink_rate_bps": np.asarray(rate, dtype=float),
        }

    def __repr__(self) -> str:
        return (
            f"Cell(n_clients={self._n_clients}, placement={self.placement!r}, pathloss={self.pathloss!r}, "
            f"shadowing={self.shadowing!r}, rate={self.rate!r}, allocator={self.allocator!r})"
        )

    # ------------------------------------------------------------------ helpers
    def _check_ids(self, client_ids: Any) -> np.ndarray:
        ids = np.asarray(client_ids)
        if ids.ndim != 1:
            raise ValueError(f"client_ids must be a 1-D array of client indices, got shape {ids.shape}")
        if ids.size == 0:
            return ids.astype(int)
        if not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"client_ids must be integers, got dtype {ids.dtype} ({client_ids!r})")
        if ids.min() < 0 or ids.max() >= self._n_clients:
            raise ValueError(f"client_ids must lie in [0, {self._n_clients}), got {client_ids!r}")
        # A client listed twice would receive two bandwidth shares: always a caller bug.
        if np.unique(ids).size != ids.size:
            raise ValueError(f"client_ids must be distinct, got {client_ids!r}")
        return ids.astype(int)

    def _downlink_config(self, method: str) -> tuple:
        if self._downlink_bandwidth_hz is None or self._server_tx_power_w is None:
            raise ValueError(
                f"{method} needs downlink_bandwidth_hz and server_tx_power_w, got "
                f"downlink_bandwidth_hz={self._downlink_bandwidth_hz!r}, "
                f"server_tx_power_w={self._server_tx_power_w!r}; pass both (> 0) to Cell"
            )
        return self._downlink_bandwidth_hz, self._server_tx_power_w

    def _shared_rates(
        self, ids: np.ndarray, payload_bits: Any, band_hz: float, power_w: Any, power_per_hz: bool = False
    ) -> np.ndarray:
        if ids.size == 0:
            return np.zeros(0)
        payload = None
        if payload_bits is not None:
            payload = check_array("payload_bits", payload_bits, minimum=0.0)
            if payload.ndim == 0:
                payload = np.full(ids.size, float(payload))
            elif payload.shape != ids.shape:
                raise ValueError(
                    f"payload_bits must be a scalar or have shape {ids.shape} (one per client id), "
                    f"got shape {payload.shape}"
                )
        gains = self._gain_linear[ids]
        shares = np.asarray(self.allocator.allocate_hz(band_hz, payload, gains), dtype=float)
        # Check plug-in allocators here so a bad one fails loudly instead of inventing spectrum.
        if shares.shape != ids.shape or np.any(~(shares >= 0)):
            raise ValueError(
                f"allocator {self.allocator!r} must return {ids.size} non-negative shares, got {shares!r}"
            )
        if shares.sum() > band_hz * (1.0 + 1e-9):
            raise ValueError(
                f"allocator {self.allocator!r} allocated {shares.sum():g} Hz, more than the band {band_hz:g} Hz"
            )
        if power_per_hz:  # one transmitter's power spread flat over the band
            power_w = power_w * shares / band_hz
        return np.asarray(self.rate.rate_bps(shares, power_w, gains, self._noise_psd_w_per_hz), dtype=float)
