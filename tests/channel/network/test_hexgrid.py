"""The hexagonal network: site counts, ISD, wrap-around distances against hand calculations, drops."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.channel.network import HexGrid, hexagon_vertices, lattice_sites, wraparound_translations
from sfl_sim.channel.network.hexgrid import in_hexagon

ISD = 500.0
SQ3 = math.sqrt(3.0)


def _site_index(grid: HexGrid, xy: tuple[float, float]) -> int:
    hits = np.flatnonzero(np.hypot(*(grid.site_positions_m - np.array(xy)).T) < 1e-6)
    assert hits.size == 1, xy
    return int(hits[0])


@pytest.mark.parametrize(("n_sites", "sectors", "n_cells"), [(1, 1, 1), (1, 3, 3), (7, 1, 7), (7, 3, 21),
                                                             (19, 1, 19), (19, 3, 57)])
def test_site_and_cell_counts(n_sites, sectors, n_cells):
    grid = HexGrid(n_sites=n_sites, isd_m=ISD, sectors_per_site=sectors)
    assert grid.site_positions_m.shape == (n_sites, 2)
    assert grid.n_cells == n_cells
    assert grid.cell_site.tolist() == [c // sectors for c in range(n_cells)]


@pytest.mark.parametrize("n_sites", [7, 19])
def test_sites_are_one_isd_from_their_nearest_neighbour_and_in_rings(n_sites):
    sites = lattice_sites(n_sites, ISD)
    assert np.allclose(sites[0], 0.0)
    d = np.hypot(*(sites[:, None, :] - sites[None, :, :]).transpose(2, 0, 1))
    np.fill_diagonal(d, np.inf)
    assert np.allclose(d.min(axis=1), ISD)
    # Ring 1 at ISD (30 deg + i 60 deg, as first_tier_sites_m); ring 2 at 2 ISD and sqrt(3) ISD.
    radii = np.sort(np.hypot(sites[:, 0], sites[:, 1]))
    expected = [0.0] + [ISD] * 6 + ([SQ3 * ISD] * 6 + [2 * ISD] * 6 if n_sites == 19 else [])
    assert np.allclose(radii, expected)
    assert np.allclose(sites[1:7], ISD * np.stack([np.cos(np.radians(30 + 60 * np.arange(6))),
                                                   np.sin(np.radians(30 + 60 * np.arange(6)))], axis=1))


def test_wraparound_translations_by_hand():
    # 7 sites: T0 = ISD (u0 + 2 u1) = ISD (sqrt(3)/2, 5/2), length sqrt(7) ISD; 19 sites: ISD (2 u0 + 3 u1) =
    # ISD (sqrt(3), 4), length sqrt(19) ISD.
    t7 = wraparound_translations(7, ISD)
    t19 = wraparound_translations(19, ISD)
    assert np.allclose(t7[0], 0.0) and np.allclose(t7[1], [ISD * SQ3 / 2, ISD * 2.5])
    assert np.allclose(t19[1], [ISD * SQ3, ISD * 4.0])
    assert np.allclose(np.hypot(*t7[1:].T), math.sqrt(7) * ISD)
    assert np.allclose(np.hypot(*t19[1:].T), math.sqrt(19) * ISD)
    assert wraparound_translations(1, ISD).shape == (1, 2)
    # Sionna SYS's mirror displacement (offset coordinates (2N+1, 0) -> x = 1.5 R (2N+1), y = sqrt(3) R / 2 with
    # R = ISD / sqrt(3)) is one of ours: the same chirality.
    r = ISD / SQ3
    assert np.min(np.hypot(*(t7 - [4.5 * r, SQ3 * r / 2]).T)) < 1e-9
    assert np.min(np.hypot(*(t19 - [7.5 * r, SQ3 * r / 2]).T)) < 1e-9


@pytest.mark.parametrize("n_sites", [7, 19])
def test_the_sites_and_their_translates_tile_the_lattice_once(n_sites):
    # Every site's images are distinct lattice points: no two sites differ by a combination of translations.
    sites = lattice_sites(n_sites, ISD)
    t = wraparound_translations(n_sites, ISD)[1:3]
    images = [s + a * t[0] + b * t[1] for s in sites for a in range(-3, 4) for b in range(-3, 4)]
    keys = {(round(x, 3), round(y, 3)) for x, y in images}
    assert len(keys) == len(images)


def test_wraparound_from_each_site_of_seven_sees_all_others_at_one_isd():
    # On the 7-site torus every site's six neighbours are exactly the six other sites.
    grid = HexGrid(n_sites=7, isd_m=ISD, sectors_per_site=1)
    d = grid.wraparound_distances_m(grid.site_positions_m)
    assert np.allclose(np.diag(d), 0.0)
    assert np.allclose(d[~np.eye(7, dtype=bool)], ISD)


def test_wraparound_from_each_site_of_nineteen_sees_two_full_rings():
    grid = HexGrid(n_sites=19, isd_m=ISD, sectors_per_site=1)
    d = np.sort(grid.wraparound_distances_m(grid.site_positions_m), axis=1)
    expected = [0.0] + [ISD] * 6 + [SQ3 * ISD] * 6 + [2 * ISD] * 6
    assert np.allclose(d, np.array(expected)[None, :])


def test_a_point_just_outside_the_seven_site_edge_is_nearest_the_opposite_site():
    grid = HexGrid(n_sites=7, isd_m=ISD, sectors_per_site=1)
    point = np.array([[740.0, 240.0]])  # beyond site 1's (433, 250) hexagon vertex at (721.7, 250)
    far = _site_index(grid, (-ISD * SQ3 / 2, -ISD / 2))  # the site on the opposite side, (-433, -250)
    # Its image under T = ISD (3 sqrt(3)/2, 1/2) sits at (sqrt(3) ISD, 0) = (866.03, 0).
    by_hand = math.hypot(SQ3 * ISD - 740.0, 0.0 - 240.0)
    d = grid.wraparound_distances_m(point)[0]
    assert d[far] == pytest.approx(by_hand, rel=1e-12)
    assert by_hand == pytest.approx(271.0764, abs=1e-4)
    assert int(np.argmin(d)) == far
    near = _site_index(grid, (ISD * SQ3 / 2, ISD / 2))
    assert d[near] == pytest.approx(math.hypot(740.0 - ISD * SQ3 / 2, 240.0 - ISD / 2), rel=1e-12)  # no wrap
    assert np.allclose(grid.wrapped_offsets_m(point)[0, far], [SQ3 * ISD - 740.0, -240.0])


def test_a_point_just_outside_the_nineteen_site_edge_wraps_to_the_left_edge():
    grid = HexGrid(n_sites=19, isd_m=ISD, sectors_per_site=1)
    point = np.array([[1170.0, 10.0]])  # beyond the (866, 0) site's vertex at (1154.7, 0)
    far = _site_index(grid, (-SQ3 * ISD, 0.0))
    # T = ISD (2 u0 + 3 u1) rotated by -60 deg = ISD (5 sqrt(3)/2, 1/2): the image of (-866, 0) is (1299.04, 250).
    image = (-SQ3 * ISD + 5 * SQ3 / 2 * ISD, ISD / 2)
    d = grid.wraparound_distances_m(point)[0]
    assert d[far] == pytest.approx(math.hypot(image[0] - 1170.0, image[1] - 10.0), rel=1e-12)
    assert int(np.argmin(d)) == far
    # A point at the centre sees plain distances.
    centre = grid.wraparound_distances_m(np.zeros((1, 2)))[0]
    assert np.allclose(centre, np.hypot(*grid.site_positions_m.T))


def test_one_site_network_has_plain_distances_and_a_hexagon_not_the_disc():
    grid = HexGrid(n_sites=1, isd_m=ISD, sectors_per_site=1, min_distance_m=35.0)
    pts = np.array([[100.0, -50.0], [3000.0, 4000.0]])
    assert np.allclose(grid.wraparound_distances_m(pts)[:, 0], [math.hypot(100, -50), 5000.0])
    # The hexagon's circumradius is ISD / sqrt(3), its inradius ISD / 2; its area 3 sqrt(3) / 2 R^2.
    vertices = grid.site_polygon_m(0)
    assert np.allclose(np.hypot(*vertices.T), ISD / SQ3)
    x, y = vertices.T
    area = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    assert area == pytest.approx(1.5 * SQ3 * (ISD / SQ3) ** 2)


def test_sector_polygons_split_the_hexagon_and_follow_the_boresights():
    grid = HexGrid(n_sites=1, isd_m=ISD, sectors_per_site=3)
    assert grid.cell_boresight_deg.tolist() == [30.0, 150.0, 270.0]
    areas = []
    for cell in range(3):
        x, y = grid.cell_polygon_m(cell).T
        areas.append(0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))
    assert np.allclose(areas, 1.5 * SQ3 * (ISD / SQ3) ** 2 / 3)
    # Points along each boresight belong to that sector; azimuth offsets are measured from the boresight.
    pts = 100.0 * np.stack([np.cos(np.radians([30, 150, 270])), np.sin(np.radians([30, 150, 270]))], axis=1)
    assert grid.geometric_cell(pts).tolist() == [0, 1, 2]
    assert np.allclose(np.diag(grid.cell_azimuth_offsets_deg(pts)), 0.0)
    assert grid.cell_azimuth_offsets_deg(pts)[0, 1] == pytest.approx(-120.0)


def test_drops_are_in_the_hexagons_outside_the_exclusion_disc_and_seeded():
    grid = HexGrid(n_sites=19, isd_m=ISD, sectors_per_site=3, min_distance_m=35.0)
    pos, site = grid.drop_uniform(4000, np.random.default_rng(5))
    local = pos - grid.site_positions_m[site]
    assert np.all(in_hexagon(local, ISD)) and np.all(np.hypot(*local.T) >= 35.0)
    again, site_again = grid.drop_uniform(4000, np.random.default_rng(5))
    assert np.array_equal(pos, again) and np.array_equal(site, site_again)
    counts = np.bincount(site, minlength=19)  # equal-area hexagons: each site ~ Binomial(4000, 1/19)
    sd = math.sqrt(4000 / 19 * (1 - 1 / 19))
    assert np.all(np.abs(counts - 4000 / 19) < 5 * sd)
    # Uniform over the hexagon: the mean offset from the site is 0 within 5 standard errors.
    assert np.all(np.abs(local.mean(axis=0)) < 5 * local.std(axis=0) / math.sqrt(4000))
    assert np.array_equal(grid.geometric_cell(pos) // 3, site)
    assert grid.drop_uniform(0, np.random.default_rng(0))[0].shape == (0, 2)


def test_hexagon_vertices_have_a_vertex_at_zero_degrees():
    v = hexagon_vertices((10.0, 20.0), ISD)
    assert np.allclose(v[0], [10.0 + ISD / SQ3, 20.0])


@pytest.mark.parametrize(("params", "message"), [
    ({"n_sites": 5}, "n_sites"),
    ({"isd_m": -500.0}, "isd_m: got -500.0"),
    ({"isd_m": 60.0}, "min_distance_m: got 35.0; allowed: below isd_m / 2 = 30 m"),
    ({"sector_boresights_deg": [0.0, 0.0, 120.0]}, "sector_boresights_deg"),
    ({"sectors_per_site": 2}, "sectors_per_site"),
])
def test_bad_parameters_are_one_line(params, message):
    with pytest.raises(ValueError, match=message) as info:
        HexGrid(**params)
    assert "\n" not in str(info.value)


def test_lattice_sites_refuses_an_unsupported_count_in_one_line():
    with pytest.raises(ValueError, match=r"n_sites: got 21; allowed: one of 1, 7, 19"):
        lattice_sites(21, ISD)
    with pytest.raises(ValueError, match="points_m"):
        HexGrid().wraparound_distances_m(np.zeros(3))
