"""The network of cells in ``sfl-sim channel`` (a scenario with ``cell.network``): the clients'
tracks, serving cells and handovers over the report's rounds, drawn as ``network_map.png``, and
the lines of the report's text (cells, clients per cell, handovers by cause).

:func:`network_tracks` builds the cell as a run does (:func:`sfl_sim.runs.build.build_cell`) and
walks its radio over ``rounds x round_s`` seconds in steps (the mobility's stream ``mobility``, as
:func:`~sfl_sim.reports.channel.round_draws` moves its clients), taking each client's position on
the layout's torus and serving cell at every step; the handovers are the radio's own events
(:meth:`~sfl_sim.channel.radio_state.RadioState.handovers_between`), each drawn where its client
was at the step nearest its time.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sfl_sim.channel.network import NO_CELL
from sfl_sim.kit.seeding import stream as seeded_stream

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from sfl_sim.config import Scenario

__all__ = ["NETWORK_MAP_FILE", "MAX_TRACKS", "MAX_STEPS", "NetworkTracks", "network_tracks", "network_lines",
           "network_map_figure"]

#: The figure's file name in the report's folder.
NETWORK_MAP_FILE = "network_map.png"
#: The most clients whose tracks are drawn (the first ones; our choice: more is a tangle).
MAX_TRACKS = 40
#: The most steps a track is sampled at (our choice: a smooth line on a page).
MAX_STEPS = 2000
#: The longest step between two track samples, s (our choice: 0.1 s moves a 30 m/s client 3 m).
MAX_STEP_S = 0.1


@dataclass(frozen=True)
class NetworkTracks:
    """The clients of a network over time.

    Attributes
    ----------
    grid : HexGrid
        The layout.
    times_s : numpy.ndarray, shape (T,)
        The sample times, s (0 first).
    positions_m : numpy.ndarray, shape (T, n, 2)
        Each client's position on the layout's torus at each time, m.
    serving : numpy.ndarray, shape (T, n)
        Its serving cell then (:data:`~sfl_sim.channel.network.NO_CELL` while it has no link).
    events : tuple of HandoverEvent
        The handovers in ``[0, times_s[-1])``, in time order.
    event_positions_m : numpy.ndarray, shape (len(events), 2)
        Where each event's client was at the sample nearest the event.
    """

    grid: Any
    times_s: np.ndarray
    positions_m: np.ndarray
    serving: np.ndarray
    events: tuple[Any, ...]
    event_positions_m: np.ndarray

    @property
    def n_clients(self) -> int:
        """Number of clients."""
        return int(self.positions_m.shape[1])

    def clients_per_cell(self) -> np.ndarray:
        """Clients served by each cell at time 0, shape (n_cells,)."""
        start = self.serving[0]
        return np.bincount(start[start != NO_CELL], minlength=self.grid.n_cells)


def network_tracks(cfg: Scenario, duration_s: float, step_s: float | None = None) -> NetworkTracks | None:
    """The tracks of the scenario's clients over ``duration_s`` seconds (None without
    ``cell.network``).  ``step_s``: the sampling step (default the shorter of :data:`MAX_STEP_S`
    and ``duration_s / 200``, at most :data:`MAX_STEPS` steps)."""
    from sfl_sim.runs.build import build_cell  # build imports torch; keep it out of module import

    if cfg.cell.network is None:
        return None
    cell = build_cell(cfg)
    net = cell.radio.network
    assert net is not None
    duration = float(duration_s)
    step = float(step_s) if step_s is not None else min(MAX_STEP_S, duration / 200.0)
    count = max(1, min(MAX_STEPS, math.ceil(duration / step - 1e-9)))
    times = np.linspace(0.0, duration, count + 1)
    rng = seeded_stream(cfg.seed, "mobility")
    ids = np.arange(cell.n_clients)
    positions = np.empty((times.size, ids.size, 2))
    serving = np.empty((times.size, ids.size), dtype=int)
    for i, t in enumerate(times.tolist()):
        if i:
            cell.move(t - times[i - 1], rng)
        positions[i] = _in_layout(net.grid, net.positions_at(t))
        serving[i] = net.serving_cell(ids, t)
    events = net.handovers_between(0.0, duration)
    nearest = np.clip(np.rint(np.array([e.time_s for e in events]) / (duration / count)).astype(int), 0, count)
    where = positions[nearest, [e.client for e in events]] if events else np.zeros((0, 2))
    return NetworkTracks(net.grid, times, positions, serving, tuple(events), np.asarray(where).reshape(-1, 2))


def network_lines(tracks: NetworkTracks, rounds: int, round_s: float) -> list[str]:
    """The report's lines: the layout and its cells, the clients per cell at the start, the
    handovers over the walked time by cause and per client."""
    grid = tracks.grid
    p = grid.params
    per_cell = tracks.clients_per_cell()
    sectors = int(p.sectors_per_site)
    layout = f"{grid.n_sites} site{'s' if grid.n_sites > 1 else ''}" + (f" x {sectors} sectors" if sectors > 1 else "")
    lines = [
        f"network: hexgrid {layout} = {grid.n_cells} cell{'s' if grid.n_cells > 1 else ''}, ISD {grid.isd_m:g} m"
        f"{', wrap-around' if grid.n_sites > 1 else ''}",
        f"  clients per cell at the start: min/median/max {per_cell.min()}/{np.median(per_cell):g}/{per_cell.max()}"
        f" ({int((per_cell == 0).sum())} cells without clients; {tracks.n_clients} clients)",
    ]
    duration = float(tracks.times_s[-1])
    counts = Counter(e.cause for e in tracks.events)
    causes = ", ".join(f"{cause} {counts[cause]}" for cause in sorted(counts)) or "none"
    total = sum(counts.values())
    rate = total / tracks.n_clients / duration * 60.0 if duration > 0 else 0.0
    lines.append(f"  handovers over the {rounds} x {round_s:g} s walked: {total} ({causes}); "
                 f"{rate:.3g} per client per minute")
    return lines


def _cell_colours(n_cells: int) -> list[Any]:
    """A colour per cell: tab20's, in turn (our choice: neighbours differ on the 7- and 19-site layouts)."""
    from matplotlib import colormaps

    cmap = colormaps["tab20"]
    order = list(range(0, 20, 2)) + list(range(1, 20, 2))  # the ten strong hues first, then their light ones
    return [cmap(order[c % 20]) for c in range(n_cells)]


def _in_layout(grid: Any, points_m: np.ndarray) -> np.ndarray:
    """Each point's image inside the layout's hexagons (the torus's points drawn where their
    nearest site is: the plane tiled by the layout's translations), shape (n, 2)."""
    offsets = grid.wrapped_offsets_m(points_m)                      # (n, sites, 2): point -> site image
    nearest = np.argmin(np.einsum("nsd,nsd->ns", offsets, offsets), axis=1)
    rows = np.arange(offsets.shape[0])
    return grid.site_positions_m[nearest] - offsets[rows, nearest]


def network_map_figure(tracks: NetworkTracks, width_in: float = 6.4) -> Figure:
    """The map: each cell's region tinted in its colour, the sites, the tracks of the first
    :data:`MAX_TRACKS` clients coloured by their serving cell (grey while no link), their starts,
    and the handovers (A3 and radio link failure) where they happened.  ``axes[0]`` the map."""
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Polygon

    from sfl_sim.channel.network.state import layout_radius_m
    from sfl_sim.reports.channel_figures import _pyplot

    plt = _pyplot()
    grid = tracks.grid
    small = width_in < 5.0
    font = 6.0 if small else 8.0
    fig, ax = plt.subplots(figsize=(width_in, width_in * 0.92), layout="constrained")
    colours = _cell_colours(grid.n_cells)
    for c in range(grid.n_cells):
        ax.add_patch(Polygon(grid.cell_polygon_m(c), closed=True, facecolor=colours[c], alpha=0.16,
                             edgecolor="0.55", linewidth=0.5, zorder=0))
    for s in range(grid.n_sites):
        ax.add_patch(Polygon(grid.site_polygon_m(s), closed=True, fill=False, edgecolor="0.35",
                             linewidth=0.9, zorder=1))
    sites = grid.site_positions_m
    ax.plot(sites[:, 0], sites[:, 1], "^", color="k", markersize=4 if small else 6, zorder=5)
    sectored = grid.n_cells != grid.n_sites
    if not small or grid.n_cells <= 7:
        for c in range(grid.n_cells):  # the cell's number inside its region, off the site marker
            site = sites[int(grid.cell_site[c])]
            below = site + np.array([0.0, -0.22 * grid.isd_m])
            centre = grid.cell_polygon_m(c).mean(axis=0) if sectored else below
            ax.text(centre[0], centre[1], str(c), fontsize=font, color="0.25", ha="center", va="center",
                    fontweight="bold", zorder=2)
    shown = min(MAX_TRACKS, tracks.n_clients)
    jump = 0.5 * grid.isd_m  # a step longer than this is a wrap across the torus: the line breaks there
    for k in range(shown):
        xy = tracks.positions_m[:, k]
        cells = tracks.serving[:, k]
        seg = np.stack([xy[:-1], xy[1:]], axis=1)
        keep = np.hypot(*(xy[1:] - xy[:-1]).T) < jump
        # darker than the cell's tint, so that a track stands out over its own cell
        seg_colour = [tuple(0.8 * v for v in colours[c][:3]) if c != NO_CELL else (0.5, 0.5, 0.5)
                      for c in cells[:-1][keep].tolist()]
        ax.add_collection(LineCollection(seg[keep], colors=seg_colour, linewidths=0.9 if small else 1.2, zorder=3))
        ax.plot(xy[0, 0], xy[0, 1], "o", color="k", markersize=1.5 if small else 2.2, zorder=4)
    on = np.array([e.client < shown for e in tracks.events], dtype=bool)
    causes = np.array([e.cause for e in tracks.events])
    marks = {"a3": ("x", "k", "A3 handover"), "rlf": ("v", "red", "radio link failure")}
    for cause, (marker, colour, _) in marks.items():
        at = on & (causes == cause) if causes.size else np.zeros(0, dtype=bool)
        if at.any():
            pts = tracks.event_positions_m[at]
            ax.scatter(pts[:, 0], pts[:, 1], marker=marker, color=colour, s=10 if small else 22,
                       linewidths=0.8 if small else 1.1, zorder=6)
    extent = layout_radius_m(grid) * 1.04
    ax.set_xlim(-extent, extent)
    ax.set_ylim(-extent, extent)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)", fontsize=font)
    ax.set_ylabel("y (m)", fontsize=font)
    ax.tick_params(labelsize=font - 1)
    handles = [Line2D([], [], marker="^", color="k", linestyle="none", markersize=5, label="site"),
               Line2D([], [], color="0.3", lw=1.2, label="track (colour: serving cell)"),
               Line2D([], [], marker="o", color="k", linestyle="none", markersize=2.5, label="start")]
    handles += [Line2D([], [], marker=m, color=c, linestyle="none", markersize=5, label=lab)
                for cause, (m, c, lab) in marks.items() if cause == "a3" or (causes == cause).any()]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles) if not small else 3,
               fontsize=font - 0.5, frameon=False)
    duration = float(tracks.times_s[-1])
    ax.set_title(f"{grid.n_cells} cells on {grid.n_sites} site{'s' if grid.n_sites > 1 else ''}: "
                 f"{shown} of {tracks.n_clients} clients over {duration:g} s, their {int(on.sum())} handovers",
                 fontsize=font)
    return fig
