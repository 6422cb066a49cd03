"""Uplink interference at the cell's base station, as a noise rise over the receiver's thermal noise.

An interference model turns the interference ``I`` (W/Hz) at the base station into the noise rise
``IoT = (N + I) / N`` (interference over thermal), ``N = N0 F`` the receiver noise PSD with the rate
model's noise figure.  The cell hands the rate model the noise PSD ``N0 x IoT``; the rate model
applies its noise figure ``F`` and so sees ``N0 F IoT = N0 F + I``: every uplink SNR becomes the
SINR ``p g / (b (N0 F + I))``, and every rate model (Shannon, gap, TR 36.942, CQI tables) reads
its rate from that SINR.  The interference is wideband: every client of the cell sees the same
``I`` at the base station.  Only the uplink is disturbed (interference from neighbouring base
stations on the downlink is not modelled).

- ``none``: :class:`NoInterference`, ``IoT = 1`` (the default: the SINR is the SNR).
- ``noise_rise``: :class:`NoiseRise`, a fixed ``IoT`` in dB (a planning margin).
- ``first_tier``: :class:`FirstTierInterference`, the six neighbouring cells of a hexagonal layout.

Random draws come from the cell's ``interference`` stream (only ``first_tier`` draws).
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np

from sfl_sim.channel.large_scale.geometry import distances_m
from sfl_sim.channel.limits import ACTIVITY, INTER_SITE_DISTANCE_M, NOISE_RISE_DB, RB_LOAD
from sfl_sim.channel.link.power_control import transmit_power_w
from sfl_sim.channel.protocols import (
    Interference,
    LosAwarePathLoss,
    ShadowingDecorrelationSource,
    ShadowingSigmaSource,
    ShadowingSite,
    SiteShadowing,
    UplinkScene,
)
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel
from sfl_sim.kit.registry import Registry

__all__ = ["INTERFERENCE", "NoInterference", "NoiseRise", "FirstTierInterference", "first_tier_sites_m",
           "in_own_hexagon"]

#: Placement batches tried to fill a neighbour's hexagon before giving up (each keeps the points of
#: the disc that fall in the hexagon: about 83 % of a uniform disc of the same circumradius).
_HEXAGON_BATCHES = 1000

INTERFERENCE = Registry("interference", protocol=Interference)


@INTERFERENCE.register("none")
class NoInterference(Component):
    """No interference: the noise rise is 1 and the SINR is the SNR."""

    def deploy(self, scene: UplinkScene, rng: np.random.Generator) -> None:
        """Nothing to place."""
        return None

    def noise_rise_linear(self, scene: UplinkScene, layout: Any, rng: np.random.Generator) -> float:
        """1.0."""
        return 1.0


@INTERFERENCE.register("noise_rise")
class NoiseRise(Component):
    """A fixed interference over thermal: ``I = N0 F (10^(IoT/10) - 1)`` on the uplink.

    The usual abstraction of other-cell interference in uplink link budgets (3GPP TR 36.942
    clause 4.5 and TR 38.901-based budgets quote an IoT target or "noise rise" of a few dB).

    Raises
    ------
    ValueError
        For a value out of range.
    """

    class Params(ParamsModel):
        noise_rise_db: Annotated[float, NOISE_RISE_DB, Doc(
            "Interference over thermal in dB, in [0, 60] (0: no interference); no default: a value says what is "
            "assumed of the neighbours.")]

    params: Params

    def __post_init__(self) -> None:
        self._rise = 10.0 ** (self.params.noise_rise_db / 10.0)

    def deploy(self, scene: UplinkScene, rng: np.random.Generator) -> None:
        """Nothing to place."""
        return None

    def noise_rise_linear(self, scene: UplinkScene, layout: Any, rng: np.random.Generator) -> float:
        """``10^(noise_rise_db / 10)``; draws nothing."""
        return self._rise


def first_tier_sites_m(inter_site_distance_m: float) -> np.ndarray:
    """Centres of the six first-tier neighbours of a hexagonal layout, shape (6, 2), metres.

    With the serving base station at the origin, the neighbours sit at the inter-site distance
    ``ISD`` at angles 30 deg + i x 60 deg (i = 0..5): the first ring of the hexagonal grid of
    3GPP TR 36.942 clause 4.2 and TR 38.901 clause 7.2 (19 sites = the centre, 6 of the first tier
    and 12 of the second; this model keeps the first tier, which carries most of the interference).
    A hexagon of circumradius ``R`` gives ``ISD = 2 R cos 30 deg = sqrt(3) R``.
    """
    angles = np.pi / 6.0 + np.arange(6) * np.pi / 3.0
    return inter_site_distance_m * np.stack([np.cos(angles), np.sin(angles)], axis=1)


def in_own_hexagon(local_m: np.ndarray, inter_site_distance_m: float) -> np.ndarray:
    """Whether each position (relative to its site, metres, shape (n, 2)) lies in that site's hexagon.

    The hexagon of a site in the grid of :func:`first_tier_sites_m` is the set of points nearer it
    than any other site (its Voronoi cell): the points whose projection on the direction of each of
    the six neighbours is at most ``ISD / 2``.  A client there is associated with its own site.
    """
    directions = first_tier_sites_m(1.0)
    return np.all(np.asarray(local_m, dtype=float) @ directions.T <= inter_site_distance_m / 2.0, axis=1)


@INTERFERENCE.register("first_tier")
class FirstTierInterference(Component):
    """Uplink interference from the six first-tier cells of a hexagonal layout (reuse 1).

    Geometry: the neighbouring base stations sit at :func:`first_tier_sites_m` (``ISD`` =
    ``inter_site_distance_m``, default ``sqrt(3) R`` with ``R`` the cell radius: hexagons of
    circumradius ``R`` tile the plane; 3GPP TR 36.942 clause 4.2, TR 38.901 Table 7.2-1).  Each
    neighbour has as many clients as the cell, dropped once around its base station by the cell's
    placement and kept only inside the neighbour's own hexagon (:func:`in_own_hexagon`; a point of
    the placement outside it is drawn again): a client nearer another base station than its own
    would be served there, and a disc of radius ``R`` around a site at ``sqrt(3) R`` puts about
    3 % of its points nearer our base station.  Path loss (and LOS state, for LOS-aware models) and
    shadowing come from the cell's models, drawn independently for the link to its own base station
    and to ours (the inter-site shadowing correlation of TR 38.901 is not modelled); a site-aware
    shadowing (``sample_site_db``, e.g. ``sigma_db: model``) sees each link's distance, LOS state
    and the path-loss model's sigma, as in the cell.

    Each draw (at construction, then once per round as the cell moves on) every neighbouring
    client transmits with probability ``activity``; the active clients of a cell share the band
    equally (``b = B / k_active``) and send at the power the cell's power control gives them on
    that share with their coupling loss to their own base station.  The interference PSD at our
    base station is the wideband average ``I = sum_active p_j g_j / B`` (``g_j`` the gain to our
    base station): the active clients of a neighbour cover its band, so whichever of them shares
    a given sub-band, the expected PSD there is ``sum_j p_j g_j / B``.  The noise rise is
    ``1 + I / (N0 F)``.

    Load.  A neighbour whose scheduler keeps only a fraction ``rho`` of its resource blocks busy
    (``rb_load``; its clients send on the RBs it grants and the rest are idle) puts its power on a
    given RB of ours with probability ``rho``, so the expected PSD there is ``rho sum_j p_j g_j / B``:
    ``I`` scales with the neighbours' RB load.  The fractional-load picture is that of Kumar et
    al., "Autonomous inter cell interference avoidance under fractional load for downlink long
    term evolution" (Aalborg University / Nokia Siemens Networks: under fractional load only a
    subset of the RBs carries a cell's traffic, which lowers the inter-cell interference); Sionna
    SYS likewise spreads a user's power over the subcarriers allocated to it only
    (``sionna.sys.utils.spread_across_subcarriers``).  One load for all six neighbours, scaling
    the wideband mean, is our choice.  ``rb_load`` 1 (the default) is a fully loaded neighbour:
    the numbers without the parameter.

    ``rb_load: own_cell`` couples the neighbours' load to this cell's: each round's draw takes the
    RB load this cell's uplink had in the round just run (the fraction of its RB-time with a
    transmission on it, :meth:`RoundContext.uplink_load <sfl_sim.engine.RoundContext.uplink_load>`:
    the scheduler's grants, or the static shares' air time), as if every neighbour ran the same
    workload as ours (statistically identical cells; our choice, the simplest closure of the
    load coupling); the draw at construction, before any round, takes fully loaded neighbours
    (1).  A scheduler that leaves RBs idle (a static share held while its client computes, a
    band with nobody to serve) then lowers the interference the next round sees.

    Raises
    ------
    ValueError
        For a parameter out of range (an inter-site distance below ``sqrt(3) R``: at deployment).
    """

    class Params(ParamsModel):
        activity: Annotated[float, ACTIVITY, Doc(
            "Probability that a neighbouring client transmits in a round, in [0, 1] (0: no interference).  With "
            "fixed power every active client adds its full power, so this sets the neighbours' load: "
            "``clients.participation`` (0.1 in the shipped scenario: 10 of 100 clients) loads each neighbour like "
            "the cell, whose cohort is what transmits at once; 1 would have all of a neighbour's clients on the "
            "air.  No default, for that reason.")]
        inter_site_distance_m: Annotated[Annotated[float, INTER_SITE_DISTANCE_M] | None, Doc(
            "Distance to the neighbouring base stations in metres, at least ``sqrt(3) R`` (checked when the cell "
            "deploys it, which knows ``R``: closer, the neighbours' hexagons overlap this cell); null: "
            "``sqrt(3) R``.")] = None
        rb_load: Annotated[Annotated[float, RB_LOAD] | Literal["own_cell"], Doc(
            "Fraction of a neighbouring cell's resource blocks in use, in [0, 1]: the interference PSD scales with it "
            "(1: fully loaded neighbours, each transmitting client's power over the whole band; 0.5: half of "
            "their RBs idle at any time); ``own_cell``: each round, the load this cell's uplink had in the round "
            "before (1 before the first).")] = 1.0

    params: Params

    @property
    def follows_own_load(self) -> bool:
        """True with ``rb_load: own_cell``: :meth:`noise_rise_linear` takes the cell's own load."""
        return self.params.rb_load == "own_cell"

    def deploy(self, scene: UplinkScene, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Drop each neighbour's clients and draw their losses to both base stations.

        Returns
        -------
        dict
            ``cell`` (int, shape (6 n,): the neighbour 0..5 of each client), ``positions_m``
            (6 n, 2) around our base station, ``coupling_own_db`` and ``coupling_ours_db``
            (path loss plus shadowing to its own and to our base station, dB) and
            ``nominal_tx_power_w`` (its configured power).
        """
        n = scene.n_clients
        hexagon_isd_m = math.sqrt(3.0) * scene.radius_m  # hexagons of circumradius R tile at sqrt(3) R
        isd = self.params.inter_site_distance_m if self.params.inter_site_distance_m is not None else hexagon_isd_m
        if isd < hexagon_isd_m * (1.0 - 1e-9):  # closer, the neighbours' hexagons overlap this cell
            raise ValueError(f"inter_site_distance_m: got {isd:g} m; allowed: at least sqrt(3) R = "
                             f"{hexagon_isd_m:g} m for the cell radius R = {scene.radius_m:g} m (hexagonal cells of "
                             f"circumradius R tile at that distance, TR 36.942 clause 4.2; closer neighbouring cells "
                             f"lie on top of this one)")
        los_pathloss = scene.pathloss if isinstance(scene.pathloss, LosAwarePathLoss) else None

        def coupling_db(positions_m: np.ndarray) -> np.ndarray:
            """Path loss plus shadowing of the links from ``positions_m`` (relative to the receiving site)."""
            distance = distances_m(positions_m)
            los = None
            if los_pathloss is None:
                loss = np.asarray(scene.pathloss.loss_db(distance), dtype=float)
            else:
                los = rng.random(distance.shape) < np.asarray(los_pathloss.los_probability(distance), dtype=float)
                loss = np.asarray(los_pathloss.loss_db(distance, los=los), dtype=float)
            if not isinstance(scene.shadowing, SiteShadowing):
                return loss + np.asarray(scene.shadowing.sample_db(distance.size, rng), dtype=float)
            site = ShadowingSite(positions_m=positions_m, distance_m=distance, los=los,
                                 model_sigma_db=_per_link(scene.pathloss, ShadowingSigmaSource,
                                                          "shadowing_sigma_db", los, distance.size),
                                 model_decorrelation_m=_per_link(scene.pathloss, ShadowingDecorrelationSource,
                                                                 "shadowing_decorrelation_m", los, distance.size))
            return loss + np.asarray(scene.shadowing.sample_site_db(site, rng)[0], dtype=float)

        cells, positions, own, ours = [], [], [], []
        for i, centre in enumerate(first_tier_sites_m(isd)):
            local = self._drop_in_hexagon(scene, n, isd, rng)
            here = local + centre
            own.append(coupling_db(local))
            ours.append(coupling_db(here))
            cells.append(np.full(n, i))
            positions.append(here)
        return {
            "cell": np.concatenate(cells),
            "positions_m": np.concatenate(positions),
            "coupling_own_db": np.concatenate(own),
            "coupling_ours_db": np.concatenate(ours),
            "nominal_tx_power_w": np.tile(np.asarray(scene.tx_power_w, dtype=float), 6),
        }

    @staticmethod
    def _drop_in_hexagon(scene: UplinkScene, n: int, isd: float, rng: np.random.Generator) -> np.ndarray:
        """``n`` positions of the cell's placement (relative to the site) inside the site's hexagon."""
        kept: list[np.ndarray] = []
        count = 0
        for _ in range(_HEXAGON_BATCHES):
            if count >= n:
                break
            batch = np.asarray(scene.placement.sample_positions_m(n, rng), dtype=float)
            inside = batch[in_own_hexagon(batch, isd)]
            kept.append(inside)
            count += len(inside)
        if count < n:
            raise ValueError(f"interference.inter_site_distance_m: got {isd:g} m; allowed: a distance whose "
                             f"hexagons (circumradius ISD / sqrt(3)) hold the placement's clients (none fell "
                             f"inside in {_HEXAGON_BATCHES} draws)")
        return np.concatenate(kept)[:n] if n else np.zeros((0, 2))

    def interference_psd_w_per_hz(self, scene: UplinkScene, layout: dict[str, np.ndarray],
                                  active: np.ndarray, own_load: float | None = None) -> float:
        """Interference PSD ``rho sum_active p_j g_j / B`` at our base station for a given activity
        mask (W/Hz); ``rho`` is ``rb_load``, or with ``own_cell`` ``own_load`` (1 when None)."""
        band = scene.uplink_bandwidth_hz
        k_active = np.bincount(layout["cell"][active], minlength=6)
        share = np.where(active, band / np.maximum(k_active[layout["cell"]], 1), 0.0)
        power = transmit_power_w(scene.power_control, layout["nominal_tx_power_w"], share, layout["coupling_own_db"],
                                 band)
        received = np.where(active, power * 10.0 ** (-layout["coupling_ours_db"] / 10.0), 0.0)
        rb_load = self.params.rb_load
        load = (1.0 if own_load is None else float(own_load)) if rb_load == "own_cell" else float(rb_load)
        return float(load * (received.sum() / band))

    def noise_rise_linear(self, scene: UplinkScene, layout: dict[str, np.ndarray], rng: np.random.Generator,
                          own_load: float | None = None) -> float:
        """One draw: which neighbouring clients transmit (``activity``), then ``1 + I / (N0 F)``;
        ``own_load`` is the cell's uplink load of the round before (used with ``rb_load: own_cell``)."""
        active = rng.random(layout["cell"].shape) < self.params.activity
        return 1.0 + self.interference_psd_w_per_hz(scene, layout, active, own_load) / scene.noise_floor_w_per_hz


def _per_link(pathloss: Any, protocol: type, method: str, los: np.ndarray | None, n: int) -> np.ndarray | None:
    """The path-loss model's per-link shadowing parameter (``method``), broadcast to ``n`` links, or None."""
    if not isinstance(pathloss, protocol):
        return None
    return np.array(np.broadcast_to(np.asarray(getattr(pathloss, method)(los), dtype=float), (n,)))
