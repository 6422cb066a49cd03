"""``sfl-sim channel`` on a network of cells: ``network_map.png`` and the lines on cells, clients
per cell and handovers by cause."""
import io

import numpy as np

from sfl_sim.config import validate
from sfl_sim.reports.channel import channel_report
from sfl_sim.reports.network_map import NETWORK_MAP_FILE, network_lines, network_map_figure, network_tracks


def cfg(**cell):
    return validate({"seed": 3, "clients": {"count": 30, "participation": 0.5}, "cell": cell})


MOVING = {"network": {"name": "hexgrid", "n_sites": 7, "sectors_per_site": 1},
          "mobility": {"name": "gauss_markov", "mean_speed_m_per_s": 20.0, "min_distance_m": 35.0}}


def test_the_report_draws_the_network_map_and_says_cells_clients_and_handovers(tmp_path):
    out = io.StringIO()
    channel_report(cfg(**MOVING), tmp_path, stream=out, rounds=4, round_s=2.5)
    assert (tmp_path / NETWORK_MAP_FILE).stat().st_size > 20_000
    tracks = network_tracks(cfg(**MOVING), 10.0)
    per_cell = np.bincount(tracks.serving[0], minlength=7)
    counts = {c: sum(e.cause == c for e in tracks.events) for c in ("a3", "rlf")}
    assert counts["a3"] > 0
    lines = out.getvalue().splitlines()
    assert "network: hexgrid 7 sites = 7 cells, ISD 500 m, wrap-around" in lines
    assert (f"  clients per cell at the start: min/median/max {per_cell.min()}/{np.median(per_cell):g}/"
            f"{per_cell.max()} ({int((per_cell == 0).sum())} cells without clients; 30 clients)") in lines
    causes = ", ".join(f"{c} {n}" for c, n in sorted(counts.items()) if n)
    total = sum(counts.values())
    assert (f"  handovers over the 4 x 2.5 s walked: {total} ({causes}); {total / 30 / 10.0 * 60:.3g} per client "
            f"per minute") in lines
    assert per_cell.sum() == 30


def test_the_map_has_every_cell_the_tracks_and_the_handovers():
    tracks = network_tracks(cfg(**{**MOVING, "network": {"name": "hexgrid", "n_sites": 7}}), 6.0)
    assert tracks.grid.n_cells == 21
    fig = network_map_figure(tracks, width_in=3.5)
    ax = fig.axes[0]
    assert len(ax.patches) == 21 + 7  # the cells' regions and the sites' hexagons
    assert len(ax.collections) >= 30  # a track per client, then the handover marks
    assert fig.get_size_inches()[0] == 3.5
    # every drawn position lies in the layout's hexagons (the torus shown inside the layout)
    from sfl_sim.channel.network.hexgrid import in_hexagon

    pts = tracks.positions_m.reshape(-1, 2)
    inside = np.zeros(len(pts), dtype=bool)
    for site in tracks.grid.site_positions_m:
        inside |= in_hexagon(pts - site, tracks.grid.isd_m * (1 + 1e-9))
    assert inside.all()


def test_no_network_no_map_and_no_lines(tmp_path):
    channel_report(cfg(network={"name": "hexgrid", "n_sites": 1}), tmp_path, stream=io.StringIO(), rounds=1)
    assert (tmp_path / NETWORK_MAP_FILE).exists()  # an earlier report's map, in the folder it claimed
    out = io.StringIO()
    channel_report(cfg(), tmp_path, stream=out, rounds=2)
    assert not (tmp_path / NETWORK_MAP_FILE).exists()
    assert not any(x.startswith("network:") for x in out.getvalue().splitlines())
    assert network_tracks(cfg(), 1.0) is None


def test_lines_of_a_still_network():
    tracks = network_tracks(cfg(network={"name": "hexgrid", "n_sites": 1, "sectors_per_site": 3}), 1.0)
    lines = network_lines(tracks, 1, 1.0)
    assert lines[0] == "network: hexgrid 1 site x 3 sectors = 3 cells, ISD 500 m"
    assert lines[2] == "  handovers over the 1 x 1 s walked: 0 (none); 0 per client per minute"
