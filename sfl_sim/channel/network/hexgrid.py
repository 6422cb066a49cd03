"""A network of hexagonal cells: sites on a hexagonal grid, sectors, wrap-around distances, client drops.

Pure geometry (numpy only); nothing here is wired into the :class:`~sfl_sim.channel.Cell` or the
engine yet.

Layout
------
Sites sit on the hexagonal lattice of inter-site distance ``ISD`` spanned by the unit vectors
``u0`` at 30 deg and ``u1`` at 90 deg: site ``q u0 + r u1`` (``q``, ``r`` integers), in rings of
hexagonal distance 0, 1, 2 around the centre: 1, 7 or 19 sites (``1 + 3 N (N + 1)`` for ``N``
rings), the layouts of 3GPP TR 36.942 clause 4.2 and TR 38.901 clause 7.2 (19 sites) and of
Sionna SYS's ``HexGrid`` (``get_num_hex_in_grid``).  The first ring is where
:func:`sfl_sim.channel.link.interference.first_tier_sites_m` puts it (30 deg + i x 60 deg), so the
two modules agree.  Each site's cell is its Voronoi region: a hexagon with a vertex at 0 deg,
inradius ``ISD / 2`` and circumradius ``R = ISD / sqrt(3)``.

Sectors
-------
With ``sectors_per_site: 3`` each site serves three cells, whose antennas point at the boresight
azimuths ``sector_boresights_deg`` (default 30, 150, 270 deg: the orientations of the 19-site /
57-cell layout as the MathWorks reproduction of ITU-R M.2412's evaluation configuration sets them,
our reading; Sionna SYS points its sectors at 60, 180, 300 deg on the same site grid).  A point
of a site's hexagon belongs to the sector whose boresight is nearest in azimuth (a 120 deg wedge):
a geometric cell, for dropping and plotting; which cell serves a client is the association's
business (:mod:`sfl_sim.channel.network.association`), from received powers.

Wrap-around
-----------
An edge site sees fewer interferers than the centre one; the wrap-around model (ITU-R M.2412
and TR 38.901 system evaluations; Sionna SYS ``HexGrid.mirror_cell_loc``) surrounds the layout
with six copies of itself and takes, for every (point, site), the distance to the nearest of the
site's seven images.  The copies are translated by ``T_k = ISD (N u0 + (N + 1) u1)`` rotated by
``k x 60 deg`` (``k = 0..5``), of length ``ISD sqrt(3 N^2 + 3 N + 1)``: ``sqrt(7) ISD`` for 7 sites
and ``sqrt(19) ISD`` for 19, so the 7 (19) sites and their translates tile the plane exactly once.
These are Sionna's mirror displacements (offset coordinates ``(2N+1, 0)`` etc., the same vectors).
A 1-site network has no wrap-around (its copies would be its own neighbours): its distances are
plain ones.

The 1-site network and today's cell
-----------------------------------
Today's single cell (:class:`~sfl_sim.channel.large_scale.geometry.UniformDiscPlacement`) is a
disc of radius 500 m; a 1-site network's cell is a hexagon of circumradius ``ISD / sqrt(3)``, which
is a different region (a hexagon of circumradius ``R`` has area ``3 sqrt(3) / 2 R^2``, about 0.83
of the disc of radius ``R``).  The integration into runs keeps today's disc for the 1-site case,
so that every golden run is unchanged; a hexagonal 1-site network is a new scenario.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Literal

import numpy as np

from sfl_sim.channel.limits import INTER_SITE_DISTANCE_M, MIN_DISTANCE_M
from sfl_sim.channel.network.protocols import NetworkLayout
from sfl_sim.kit.checks import check_count, invalid
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, Field, ParamsModel, model_validator
from sfl_sim.kit.registry import Registry

__all__ = ["NETWORK", "HexGrid", "SUPPORTED_SITES", "n_rings", "lattice_sites", "wraparound_translations",
           "hexagon_vertices",
           "in_hexagon", "RING_SITES"]

#: Site counts of a network of 0, 1 or 2 rings around the centre: ``1 + 3 N (N + 1)``.
RING_SITES = {0: 1, 1: 7, 2: 19}
#: The site counts :class:`HexGrid` builds.
SUPPORTED_SITES = tuple(RING_SITES.values())

#: Directions of the lattice vectors u0 (30 deg) and u1 (90 deg), unit length.
_U0 = np.array([math.cos(math.pi / 6.0), math.sin(math.pi / 6.0)])
_U1 = np.array([0.0, 1.0])
#: Outward normals of a site hexagon's six edges (the directions of its six neighbours).
_EDGE_NORMALS = np.stack([np.cos(np.pi / 6.0 + np.arange(6) * np.pi / 3.0),
                          np.sin(np.pi / 6.0 + np.arange(6) * np.pi / 3.0)], axis=1)
#: Draws per batch when dropping by rejection, as a multiple of the clients still missing (a point
#: of the bounding box lands in the hexagon with probability 3/4, less the exclusion disc).
_DROP_OVERSAMPLING = 2
#: Batches tried before giving up (an exclusion disc covering almost the whole hexagon).
_DROP_BATCHES = 1000


def n_rings(n_sites: int) -> int:
    """The number of rings of a layout of ``n_sites`` sites (0 for 1, 1 for 7, 2 for 19).

    Raises
    ------
    ValueError
        For another count, in one line naming the ones supported.
    """
    for rings, count in RING_SITES.items():
        if n_sites == count and not isinstance(n_sites, bool):
            return rings
    raise invalid("n_sites", n_sites, "one of " + ", ".join(str(c) for c in SUPPORTED_SITES)
                  + " (0, 1 or 2 rings of hexagonal sites)")


def _rotation(angle_rad: float) -> np.ndarray:
    c, s = math.cos(angle_rad), math.sin(angle_rad)
    return np.array([[c, -s], [s, c]])


def lattice_sites(n_sites: int, isd_m: float) -> np.ndarray:
    """Site positions of a 1-, 7- or 19-site layout, shape (n_sites, 2), metres.

    The centre first, then ring 1, then ring 2; within a ring by azimuth from 0 deg
    counter-clockwise (ring 1 as :func:`~sfl_sim.channel.link.interference.first_tier_sites_m`).
    """
    rings = n_rings(n_sites)
    isd = float(INTER_SITE_DISTANCE_M.check("isd_m", isd_m))
    points = []
    for q in range(-rings, rings + 1):
        for r in range(-rings, rings + 1):
            ring = max(abs(q), abs(r), abs(q + r))  # the hexagonal distance of axial (q, r)
            if ring <= rings:
                xy = q * _U0 + r * _U1
                # Rounded so that 0 deg and 360 - 1e-14 deg sort alike.
                azimuth = round(math.degrees(math.atan2(xy[1], xy[0])) % 360.0, 6) % 360.0
                points.append((ring, azimuth, xy))
    points.sort(key=lambda p: (p[0], p[1]))
    return isd * np.array([p[2] for p in points])


def wraparound_translations(n_sites: int, isd_m: float) -> np.ndarray:
    """The translations of the layout's images, shape (7, 2) metres (the zero vector first), or
    (1, 2) (only the zero vector) for a 1-site network.

    ``T_k = ISD (N u0 + (N + 1) u1)`` rotated by ``k x 60 deg``, ``N`` the number of rings: see
    the module docstring.
    """
    rings = n_rings(n_sites)
    isd = float(INTER_SITE_DISTANCE_M.check("isd_m", isd_m))
    if rings == 0:
        return np.zeros((1, 2))
    base = isd * (rings * _U0 + (rings + 1) * _U1)
    return np.vstack([np.zeros(2)] + [_rotation(k * math.pi / 3.0) @ base for k in range(6)])


def in_hexagon(local_m: np.ndarray, isd_m: float) -> np.ndarray:
    """Whether each point (relative to its site, shape (n, 2), metres) lies in the site's hexagon:
    its projection on each neighbour's direction is at most ``ISD / 2`` (boundary included)."""
    return np.all(np.asarray(local_m, dtype=float) @ _EDGE_NORMALS.T <= isd_m / 2.0 * (1.0 + 1e-12), axis=1)


def hexagon_vertices(center_m: Sequence[float], isd_m: float) -> np.ndarray:
    """The six vertices of a site's hexagon (circumradius ``ISD / sqrt(3)``, a vertex at 0 deg),
    counter-clockwise, shape (6, 2), metres: for plotting."""
    radius = isd_m / math.sqrt(3.0)
    angles = np.arange(6) * np.pi / 3.0
    return np.asarray(center_m, dtype=float) + radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)


def _hexagon_radius_m(azimuth_rad: np.ndarray, isd_m: float) -> np.ndarray:
    """Distance from a site to its hexagon's edge along each azimuth: ``(ISD/2) / cos(a - n)``
    with ``n`` the nearest edge normal."""
    offset = (np.asarray(azimuth_rad) - np.pi / 6.0) % (np.pi / 3.0)
    offset = np.where(offset > np.pi / 6.0, offset - np.pi / 3.0, offset)
    return isd_m / 2.0 / np.cos(offset)


def _wrap_deg(angle_deg: np.ndarray) -> np.ndarray:
    """An angle in (-180, 180] deg."""
    return 180.0 - (180.0 - np.asarray(angle_deg, dtype=float)) % 360.0


#: The ``network`` kind's registry (``cell.network``).
NETWORK = Registry("network", protocol=NetworkLayout)


@NETWORK.register("hexgrid")
class HexGrid(Component):
    """A network of 1, 7 or 19 hexagonal sites, each of one cell or three sectors (1, 3, 7, 19, 21,
    57 cells), with wrap-around distances and uniform client drops.

    Cells are numbered site-major: cell ``c`` is sector ``c % sectors_per_site`` of site
    ``c // sectors_per_site``.

    Raises
    ------
    ValueError
        One line naming the parameter for an unsupported site count, a non-positive
        ``isd_m``, a ``min_distance_m`` not below ``isd_m / 2`` or boresights that are not three
        distinct azimuths.
    """

    class Params(ParamsModel):
        n_sites: Annotated[Literal[1, 7, 19], Doc(
            "Number of sites: 1, 7 or 19 (0, 1 or 2 rings around the centre; TR 38.901 clause 7.2 evaluates "
            "19).")] = 19
        isd_m: Annotated[float, INTER_SITE_DISTANCE_M, Doc(
            "Inter-site distance in metres, in ``sfl_sim.channel.limits.INTER_SITE_DISTANCE_M`` (TR 38.901 Table "
            "7.2-1: 500 m UMa, 200 m UMi).")] = 500.0
        sectors_per_site: Annotated[Literal[1, 3], Doc(
            "Cells per site: 1 (omnidirectional) or 3 sectors.")] = 3
        sector_boresights_deg: Annotated[Sequence[float], Field(min_length=3, max_length=3), Doc(
            "Boresight azimuths of the three sectors in degrees, counter-clockwise from the x axis (default 30, 150, "
            "270: the 57-cell evaluation layout as our reading of ITU-R M.2412 / TR 38.901 gives it).")] = \
            (30.0, 150.0, 270.0)
        min_distance_m: Annotated[float, MIN_DISTANCE_M, Doc(
            "Clients are dropped at least this far from their site (2-D), metres; must be < ``isd_m / 2``.  "
            "Default 35 m: the default of ``uniform_disc`` (where the default TR 36.814 macro path loss starts "
            "to hold).")] = 35.0

        @model_validator(mode="after")
        def _consistent(self) -> HexGrid.Params:
            if self.min_distance_m >= self.isd_m / 2.0:
                raise ValueError(f"min_distance_m: got {self.min_distance_m!r}; allowed: below isd_m / 2 = "
                                 f"{self.isd_m / 2.0:g} m (the hexagon's inradius; nothing would be left to drop in)")
            boresights = [float(b) % 360.0 for b in self.sector_boresights_deg]
            if not all(math.isfinite(b) for b in boresights) or len({round(b, 9) for b in boresights}) != 3:
                raise ValueError(f"sector_boresights_deg: got {list(self.sector_boresights_deg)!r}; allowed: three "
                                 "distinct finite azimuths in degrees")
            return self

    params: Params

    def __post_init__(self) -> None:
        p = self.params
        self._sites = lattice_sites(p.n_sites, p.isd_m)
        self._sites.flags.writeable = False
        self._translations = wraparound_translations(p.n_sites, p.isd_m)
        self._translations.flags.writeable = False
        boresights = [0.0] if p.sectors_per_site == 1 else [float(b) % 360.0 for b in p.sector_boresights_deg]
        self._boresights = np.array(boresights)

    # ------------------------------------------------------------------ layout
    @property
    def n_sites(self) -> int:
        """Number of sites."""
        return int(self.params.n_sites)

    @property
    def n_cells(self) -> int:
        """Number of cells: sites x sectors per site."""
        return self.n_sites * int(self.params.sectors_per_site)

    @property
    def isd_m(self) -> float:
        """The inter-site distance, metres."""
        return float(self.params.isd_m)

    @property
    def site_positions_m(self) -> np.ndarray:
        """Site positions, shape (n_sites, 2), metres (read-only; see :func:`lattice_sites`)."""
        return self._sites

    @property
    def wraparound_translations_m(self) -> np.ndarray:
        """The layout's image translations, shape (7, 2) or (1, 2) for 1 site, metres (read-only)."""
        return self._translations

    @property
    def cell_site(self) -> np.ndarray:
        """The site of each cell, shape (n_cells,)."""
        return np.repeat(np.arange(self.n_sites), int(self.params.sectors_per_site))

    @property
    def cell_boresight_deg(self) -> np.ndarray:
        """Each cell's boresight azimuth in degrees, shape (n_cells,) (0 for omnidirectional cells)."""
        return np.tile(self._boresights, self.n_sites)

    def site_polygon_m(self, site: int) -> np.ndarray:
        """The hexagon of ``site``, shape (6, 2), metres (for plotting)."""
        return hexagon_vertices(self._sites[check_count("site", site) % self.n_sites], self.isd_m)

    def cell_polygon_m(self, cell: int) -> np.ndarray:
        """The region of ``cell`` (its site's hexagon cut to the sector's 120 deg wedge), counter-clockwise,
        metres (for plotting): the site, the edge point on one wedge border, the hexagon vertices
        inside the wedge, the edge point on the other border; the hexagon for an omnidirectional cell."""
        cell = check_count("cell", cell)
        if cell >= self.n_cells:
            raise invalid("cell", cell, f"a cell index in [0, {self.n_cells - 1}]")
        sectors = int(self.params.sectors_per_site)
        site = self._sites[cell // sectors]
        if sectors == 1:
            return hexagon_vertices(site, self.isd_m)
        boresight = self._boresights[cell % sectors]
        start, stop = math.radians(boresight - 60.0), math.radians(boresight + 60.0)
        vertex_angles = np.arange(6) * np.pi / 3.0
        inside = [a for a in vertex_angles if 0.0 < (a - start) % (2 * np.pi) < (stop - start)]
        inside.sort(key=lambda a: (a - start) % (2 * np.pi))
        angles = np.array([start, *inside, stop])
        radius = _hexagon_radius_m(angles, self.isd_m)
        border = site + radius[:, None] * np.stack([np.cos(angles), np.sin(angles)], axis=1)
        return np.vstack([site, border])

    # ------------------------------------------------------------ wrap-around
    def wrapped_offsets_m(self, points_m: np.ndarray) -> np.ndarray:
        """The vector from each point to the nearest image of each site, shape (n, n_sites, 2), metres.

        Parameters
        ----------
        points_m : array_like, shape (n, 2)
            Positions in metres (inside the layout; a point outside is wrapped like one inside).

        Returns
        -------
        numpy.ndarray, shape (n, n_sites, 2)
            ``site + T* - point`` with ``T*`` the translation (:attr:`wraparound_translations_m`) that
            minimises its length; ties go to the first translation (the zero one first).
        """
        pts = _points("points_m", points_m)
        images = self._sites[None, :, :] + self._translations[:, None, :]        # (7, n_sites, 2)
        vectors = images[None, :, :, :] - pts[:, None, None, :]                 # (n, 7, n_sites, 2)
        nearest = np.argmin(np.einsum("nksd,nksd->nks", vectors, vectors), axis=1)  # (n, n_sites)
        return np.take_along_axis(vectors, nearest[:, None, :, None], axis=1)[:, 0]

    def wraparound_distances_m(self, points_m: np.ndarray) -> np.ndarray:
        """2-D distance from each point to the nearest image of each site, shape (n, n_sites), metres."""
        pts = _points("points_m", points_m)
        px, py = pts[:, 0:1], pts[:, 1:2]
        nearest = None
        for tx, ty in self._translations.tolist():  # the squared distance to each image, the least kept
            dx = (self._sites[:, 0] + tx)[None, :] - px
            dy = (self._sites[:, 1] + ty)[None, :] - py
            squared = dx * dx + dy * dy
            nearest = squared if nearest is None else np.minimum(nearest, squared)
        assert nearest is not None
        return np.sqrt(nearest)

    def cell_distances_m(self, points_m: np.ndarray) -> np.ndarray:
        """:meth:`wraparound_distances_m` per cell (a sector's distance is its site's), shape (n, n_cells)."""
        return self.wraparound_distances_m(points_m)[:, self.cell_site]

    def cell_azimuth_offsets_deg(self, points_m: np.ndarray) -> np.ndarray:
        """Azimuth of each point seen from each cell's (nearest) site image, relative to the cell's
        boresight, in (-180, 180] deg, shape (n, n_cells): what a sector antenna pattern reads."""
        offsets = -self.wrapped_offsets_m(points_m)[:, self.cell_site]         # site -> point
        azimuth = np.degrees(np.arctan2(offsets[..., 1], offsets[..., 0]))
        return _wrap_deg(azimuth - self.cell_boresight_deg[None, :])

    def cell_antenna_gains_dbi(self, points_m: np.ndarray, height_difference_m: float = 0.0) -> np.ndarray:
        """The gain of each cell's antenna towards each point, dBi, shape (n, n_cells): 0 for an
        omnidirectional cell (one sector per site); with three sectors, the TR 38.901 Table 7.3-1
        element pattern (:func:`~sfl_sim.channel.network.antenna.element_gain_dbi`) at the point's
        azimuth from the sector's boresight (seen from the nearest site image) and its zenith angle
        ``90 + atan(height_difference_m / d_2D)`` deg (the site ``height_difference_m`` above the
        point; 0: the horizon, the vertical cut flat)."""
        pts = _points("points_m", points_m)
        if int(self.params.sectors_per_site) == 1:
            return np.zeros((pts.shape[0], self.n_cells))
        from sfl_sim.channel.network.antenna import element_gain_dbi

        offsets = -self.wrapped_offsets_m(pts)[:, self.cell_site]         # site -> point
        azimuth = np.degrees(np.arctan2(offsets[..., 1], offsets[..., 0])) - self.cell_boresight_deg[None, :]
        zenith = 90.0 + np.degrees(np.arctan2(float(height_difference_m), np.hypot(offsets[..., 0], offsets[..., 1])))
        return element_gain_dbi(azimuth, zenith)

    def geometric_cell(self, points_m: np.ndarray) -> np.ndarray:
        """The cell whose region holds each point: the nearest site (with wrap-around) and, with three
        sectors, the sector of nearest boresight.  Shape (n,) integers.  Not the serving cell (that
        is chosen from received powers, :mod:`sfl_sim.channel.network.association`)."""
        sites = np.argmin(self.wraparound_distances_m(points_m), axis=1)
        sectors = int(self.params.sectors_per_site)
        if sectors == 1:
            return sites
        off = self.cell_azimuth_offsets_deg(points_m)
        cells = sites[:, None] * sectors + np.arange(sectors)[None, :]
        of_site = np.take_along_axis(off, cells, axis=1)
        return sites * sectors + np.argmin(np.abs(of_site), axis=1)

    # ------------------------------------------------------------------- drops
    def drop_uniform(self, n_clients: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Clients uniform over the network's area (the union of its hexagons), each at least
        ``min_distance_m`` from its site.

        All hexagons have the same area, so each client's site is drawn uniformly, then its
        position uniformly in that site's hexagon less the exclusion disc (by rejection from the
        hexagon's bounding box, in batches).

        Parameters
        ----------
        n_clients : int
            Number of clients, >= 0.
        rng : numpy.random.Generator
            Source of all randomness (the sites first, then the batches of candidate points).

        Returns
        -------
        positions_m : numpy.ndarray, shape (n_clients, 2)
            Positions in metres.
        site : numpy.ndarray, shape (n_clients,)
            The site each client was dropped in (its geometric site, not an association).
        """
        n = check_count("n_clients", n_clients)
        site = rng.integers(0, self.n_sites, size=n)
        isd, r_min = self.isd_m, float(self.params.min_distance_m)
        half_width, half_height = isd / math.sqrt(3.0), isd / 2.0  # a vertex at 0 deg: the box is 2R x ISD
        local = np.empty((n, 2))
        filled = 0
        for _ in range(_DROP_BATCHES):
            if filled == n:
                break
            batch = rng.uniform((-half_width, -half_height), (half_width, half_height),
                                size=(_DROP_OVERSAMPLING * (n - filled) + 8, 2))
            keep = batch[in_hexagon(batch, isd) & (np.hypot(batch[:, 0], batch[:, 1]) >= r_min)]
            take = min(len(keep), n - filled)
            local[filled:filled + take] = keep[:take]
            filled += take
        if filled < n:  # pragma: no cover - min_distance_m < ISD/2 leaves a quarter of the box at least
            raise ValueError(f"min_distance_m: got {r_min!r}; allowed: a distance that leaves room in the hexagon")
        return self._sites[site] + local, site


def _points(name: str, value: np.ndarray) -> np.ndarray:
    pts = np.asarray(value, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 2:
        raise ValueError(f"{name}: got an array of shape {pts.shape}; allowed: shape (n, 2)")
    if not np.all(np.isfinite(pts)):
        raise ValueError(f"{name}: got a non-finite coordinate; allowed: finite numbers (metres)")
    return pts
