"""The sector antenna (TR 38.901 Table 7.3-1 element pattern) against hand numbers, and three
sectors per site in a run: 21 cells on 7 sites."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.channel.network import HexGrid
from sfl_sim.channel.network.antenna import element_gain_dbi
from sfl_sim.config.loading import validate
from sfl_sim.runs.build import build_cell
from tests.helpers import small_scenario


@pytest.mark.parametrize(("phi", "theta", "gain"), [
    (0.0, 90.0, 8.0),                                   # boresight: G_E,max
    (32.5, 90.0, 8.0 - 3.0),                            # half the 3 dB beamwidth: 12 (1/2)^2 = 3 dB
    (65.0, 90.0, 8.0 - 12.0),                           # the beamwidth: 12 dB
    (-65.0, 90.0, 8.0 - 12.0),                          # symmetric
    (90.0, 90.0, 8.0 - 12.0 * (90.0 / 65.0) ** 2),      # 23.0059 dB: -15.0059 dBi
    (180.0, 90.0, 8.0 - 30.0),                          # behind: A_max
    (300.0, 90.0, 8.0 - 12.0 * (60.0 / 65.0) ** 2),     # -60 deg wrapped
    (0.0, 122.5, 8.0 - 3.0),                            # 32.5 deg below the horizon: 3 dB
    (0.0, 180.0, 8.0 - 23.0059171598),                  # straight down: 12 (90/65)^2, under SLA_V
    (60.0, 120.0, 8.0 - 12.0 * (60 / 65) ** 2 - 12.0 * (30 / 65) ** 2),  # both cuts: 12.781 dB
    (120.0, 120.0, 8.0 - 30.0),                         # 30 + 2.556 capped at A_max
])
def test_the_element_pattern_gives_the_table_numbers(phi: float, theta: float, gain: float) -> None:
    """TR 38.901 Table 7.3-1: A_H = -min(12 (phi/65)^2, 30), A_V = -min(12 ((theta-90)/65)^2, 30),
    A = -min(-(A_V + A_H), 30), G = 8 dBi + A."""
    assert float(element_gain_dbi(phi, theta)) == pytest.approx(gain, abs=1e-9)


def test_three_sector_gains_on_a_site_by_hand() -> None:
    """A point 200 m from the centre site at 30 deg (sector 0's boresight): sector 0 sees it at
    0 deg, sector 1 (150 deg) at -120 deg, sector 2 (270 deg) at 120 deg; with the site 23.5 m
    above it the zenith is 90 + atan(23.5 / 200) = 96.70 deg: A_V = -12 (6.70/65)^2 = -0.1276 dB."""
    grid = HexGrid(n_sites=7, isd_m=500.0, sectors_per_site=3)
    u = np.array([math.cos(math.radians(30.0)), math.sin(math.radians(30.0))])
    gains = grid.cell_antenna_gains_dbi((200.0 * u)[None, :], height_difference_m=23.5)[0]
    a_v = 12.0 * (math.degrees(math.atan(23.5 / 200.0)) / 65.0) ** 2
    assert a_v == pytest.approx(0.1276, abs=1e-4)
    assert gains[0] == pytest.approx(8.0 - a_v, abs=1e-9)
    assert gains[1] == pytest.approx(8.0 - 30.0, abs=1e-9)
    assert gains[2] == pytest.approx(8.0 - 30.0, abs=1e-9)
    assert gains.shape == (21,)
    assert np.all(HexGrid(n_sites=7, isd_m=500.0, sectors_per_site=1).cell_antenna_gains_dbi(
        (200.0 * u)[None, :]) == 0.0)


def test_a_scenario_with_three_sectors_runs_21_cells_and_the_sectors_differ_by_the_pattern() -> None:
    """``network: {name: hexgrid, n_sites: 7}`` (three sectors by default) builds; each client's
    coupling losses to the three sectors of a site differ by the pattern's gains only; every client
    starts on the cell of strongest RSRP."""
    raw = small_scenario()
    raw["clients"] = {**raw.get("clients", {}), "count": 40}
    raw["cell"] = {"network": {"name": "hexgrid", "n_sites": 7}}
    cell = build_cell(validate(raw))
    radio = cell.radio
    net = radio.network
    assert net is not None and radio.n_cells == 21
    loss = net.cell_losses_at(0.0)
    grid = net.grid
    from sfl_sim.channel.network.state import torus_positions_m

    gains = grid.cell_antenna_gains_dbi(torus_positions_m(grid, cell.positions_m))
    site = loss + gains  # the site's loss, the same for its three sectors
    np.testing.assert_allclose(site[:, 0::3], site[:, 1::3], rtol=0, atol=1e-9)
    np.testing.assert_allclose(site[:, 0::3], site[:, 2::3], rtol=0, atol=1e-9)
    serving = radio.serving_cell(np.arange(40), 0.0)
    np.testing.assert_array_equal(serving, np.argmin(loss, axis=1))
    assert len(set(serving.tolist())) > 7  # sectors, not only sites, serve
    links = radio.links(np.arange(40), 0.0, payload_bits=1e6)
    assert np.all(links.rate_bps > 0)
