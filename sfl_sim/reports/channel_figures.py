"""The figures of ``sfl-sim channel`` (:mod:`sfl_sim.reports.channel`), drawn from its table and draws.

* ``cell.png`` (:func:`cell_figure`): the map (clients coloured by their median uplink rate over the
  draws, or by CQI; LOS / NLOS as marker shapes; clients in outage marked; the neighbouring sites and
  their clients where ``cell.interference`` places them), the scenario's radio parameters in a box
  beside it, and the clients' compute budgets against their uplink rates.
* ``channel_cdfs.png`` (:func:`cdf_figure`): CDFs over clients and draws of SNR and SINR, uplink and
  downlink rate.
* ``pathloss.png`` (:func:`pathloss_figure`): each client's path loss (and path loss plus shadowing)
  against distance, LOS / NLOS marked, over the path-loss model's curve(s).

Each function returns a matplotlib Figure (tests read its artists); :func:`write_figures` saves them.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sfl_sim.channel.link.interference import first_tier_sites_m
from sfl_sim.channel.protocols import LosAwarePathLoss

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from sfl_sim.channel import Cell
    from sfl_sim.config import Scenario

__all__ = ["cell_figure", "cdf_figure", "pathloss_figure", "parameter_lines", "write_figures", "save",
           "OUTAGE_MOSTLY", "LOS_MARKERS"]

#: A client is drawn as "mostly in outage" from this share of its draws on (and as "sometimes" below it).
OUTAGE_MOSTLY = 0.5

#: Marker of a client by its LOS state (1 LOS, 0 NLOS, -1 a path-loss model without LOS state).
LOS_MARKERS = {1: ("o", "LOS"), 0: ("s", "NLOS"), -1: ("o", None)}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_figures(out: Path, cfg: Scenario, cell: Cell, table: Mapping[str, np.ndarray],
                  draws: Mapping[str, np.ndarray], compute_flops_per_s: np.ndarray | None, k: int,
                  colour_by: str) -> list[Path]:
    """Draw and save the three figures under ``out`` (120 dpi); return their paths."""
    figures = {
        "cell.png": cell_figure(cfg, cell, table, draws, compute_flops_per_s, k, colour_by),
        "channel_cdfs.png": cdf_figure(cfg, draws),
        "pathloss.png": pathloss_figure(cell, table),
    }
    return [save(fig, out / name) for name, fig in figures.items()]


def save(fig: Figure, path: Path) -> Path:
    """Save ``fig`` at the report's 120 dpi and close it; return ``path``."""
    plt = _pyplot()
    try:
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return path


def _spec_text(spec: Any) -> str:
    """``name (field=value, ...)`` of a component spec in the scenario (its dump)."""
    d = spec.model_dump() if hasattr(spec, "model_dump") else dict(spec)
    name = d.pop("name", "?")
    rest = ", ".join(f"{f}={v:g}" if isinstance(v, float) else f"{f}={v}" for f, v in d.items() if v is not None)
    return f"{name} ({rest})" if rest else str(name)


def parameter_lines(cfg: Scenario, k: int, width: int = 52) -> list[str]:
    """The scenario's radio parameters, one ``name: value`` a line (wrapped at ``width``), for the box."""
    c = cfg.cell
    down = c.downlink
    out = c.outage
    rule = [f"rate < {out.min_rate_bps:g} bit/s"] if out.min_rate_bps > 0 else []
    rule += [f"SINR < {out.min_snr_db:g} dB"] if out.min_snr_db is not None else []
    items = [
        ("clients", f"{cfg.clients.count}, cohort k = {k}, seed {cfg.seed}"),
        ("placement", _spec_text(c.placement)),
        ("uplink", f"{c.uplink_bandwidth_hz / 1e6:g} MHz (share B/k = {c.uplink_bandwidth_hz / k / 1e6:g} MHz), "
                   f"P = {10 * math.log10(c.client_tx_power_w) + 30:.1f} dBm"),
        ("noise PSD", f"{c.noise_psd_dbm_per_hz:g} dBm/Hz"),
        ("path loss", _spec_text(c.pathloss)),
        ("shadowing", _spec_text(c.shadowing)),
        ("fading", f"{_spec_text(c.fading)}, {c.coherence}"),
        ("rate", _spec_text(c.rate)),
        ("allocation", _spec_text(c.allocation)),
        ("power control", _spec_text(c.power_control)),
        ("interference", _spec_text(c.interference)),
        ("mobility", _spec_text(c.mobility)),
        ("downlink", down.mode if down.mode == "ideal" else
         f"{down.mode}, {down.bandwidth_hz / 1e6:g} MHz, {10 * math.log10(down.server_tx_power_w) + 30:.1f} dBm"),
        ("outage", " or ".join(rule) if rule else "none"),
        ("HARQ", "none" if c.harq is None else _spec_text(c.harq)),
    ]
    lines = []
    for name, value in items:
        lines += textwrap.wrap(f"{name}: {value}", width=width, subsequent_indent="  ")
    return lines


def _per_client(draws: Mapping[str, np.ndarray], column: str, n: int, how: str = "median") -> np.ndarray:
    """A draws column summed up per client (``median`` or ``mean`` over its draws)."""
    values = np.asarray(draws[column], dtype=float).reshape(-1, n)
    return np.median(values, axis=0) if how == "median" else values.mean(axis=0)


def _neighbour_sites(cell: Cell) -> tuple[np.ndarray, np.ndarray, float] | None:
    """(site centres (6, 2), their clients' positions (6 n, 2), inter-site distance in m) of a first-tier
    interference, else None."""
    layout = cell.interference_layout
    if not isinstance(layout, Mapping) or "positions_m" not in layout:
        return None
    isd = getattr(getattr(cell.interference, "params", None), "inter_site_distance_m", None)
    # FirstTierInterference's default inter-site distance: hexagons of circumradius R, sqrt(3) R
    isd = isd if isd is not None else math.sqrt(3.0) * cell.radius_m
    return first_tier_sites_m(isd), np.asarray(layout["positions_m"], dtype=float), isd


def _hexagon_m(centre: np.ndarray, inter_site_distance_m: float) -> np.ndarray:
    """Corners (7, 2), closed, of a site's hexagon (:func:`sfl_sim.channel.link.interference.in_own_hexagon`):
    circumradius ISD / sqrt(3), corners at 0, 60, ... degrees (the sides face the neighbours at 30 + k 60)."""
    angles = np.arange(7) * np.pi / 3.0
    return centre + inter_site_distance_m / math.sqrt(3.0) * np.stack([np.cos(angles), np.sin(angles)], axis=1)


def cell_figure(cfg: Scenario, cell: Cell, table: Mapping[str, np.ndarray], draws: Mapping[str, np.ndarray],
                compute_flops_per_s: np.ndarray | None, k: int, colour_by: str = "rate") -> Figure:
    """The map, the parameter box and the compute budgets (see the module docstring).

    Axes: ``fig.axes[0]`` the map, ``[1]`` its colour bar, ``[2]`` the parameter box, ``[3]`` compute
    budget (GFLOP/s) against median uplink rate (Mbit/s).
    """
    plt = _pyplot()
    n = cell.n_clients
    rounds = len(draws["client"]) // n
    fig = plt.figure(figsize=(12.5, 6.2))
    grid = fig.add_gridspec(2, 2, width_ratios=(1.35, 1.0), height_ratios=(1.0, 1.0))
    ax = fig.add_subplot(grid[:, 0])
    radius = cell.radius_m
    ax.add_patch(plt.Circle((0.0, 0.0), radius, fill=False, color="0.4", linestyle="--", label="cell edge"))
    extent = 1.05 * radius
    neighbours = _neighbour_sites(cell)
    if neighbours is not None:
        sites, others, isd = neighbours
        ax.scatter(others[:, 0], others[:, 1], s=4, color="0.75", label="neighbouring cells' clients", zorder=1)
        ax.plot(sites[:, 0], sites[:, 1], marker="^", color="0.35", markersize=9, linestyle="none",
                label="neighbouring sites")
        for centre in sites:
            corners = _hexagon_m(centre, isd)
            ax.plot(corners[:, 0], corners[:, 1], color="0.6", linestyle=":", linewidth=0.8)
        extent = float(np.max(np.abs(sites))) + isd / math.sqrt(3.0) * 1.02
    if colour_by == "cqi":
        value = np.asarray(table["cqi"], dtype=int)
        top = int(max(15, value.max()))
        style = {"cmap": plt.get_cmap("viridis", top + 1), "vmin": -0.5, "vmax": top + 0.5}
        label = f"CQI on band/{k}, first round, no fading (0: out of range)"
    else:
        value = _per_client(draws, "uplink_rate_bps", n) / 1e6
        style = {"cmap": "viridis", "vmin": float(np.min(value)), "vmax": float(max(np.max(value), 1e-12))}
        label = f"median uplink rate over {rounds} rounds' draws, Mbit/s"
    los = np.asarray(table["los"], dtype=int)
    points = None
    for state, (marker, name) in LOS_MARKERS.items():
        at = los == state
        if at.any():
            points = ax.scatter(table["x_m"][at], table["y_m"][at], c=value[at], marker=marker, s=34,
                                edgecolors="k", linewidths=0.4, zorder=3, label=name, **style)
    colourbar = fig.colorbar(points, ax=ax, label=label, shrink=0.8)
    if colour_by == "cqi":
        colourbar.set_ticks(range(0, top + 1, 3))
    share = _per_client(draws, "outage", n, "mean")
    mostly, sometimes = share >= OUTAGE_MOSTLY, (share > 0) & (share < OUTAGE_MOSTLY)
    if mostly.any():
        ax.scatter(table["x_m"][mostly], table["y_m"][mostly], marker="x", s=90, color="red", linewidths=2,
                   zorder=4, label=f"outage in ≥ {OUTAGE_MOSTLY:.0%} of draws")
    if sometimes.any():
        ax.scatter(table["x_m"][sometimes], table["y_m"][sometimes], marker="o", s=110, facecolors="none",
                   edgecolors="orange", linewidths=1.6, zorder=4, label="outage in some draws")
    ax.plot([0.0], [0.0], marker="^", color="red", markersize=12, linestyle="none", label="base station", zorder=5)
    ax.set_xlim(-extent, extent)
    ax.set_ylim(-extent, extent)
    ax.set_aspect("equal")
    ax.set_xlabel("x, m")
    ax.set_ylabel("y, m")
    ax.set_title(f"{n} clients; {type(cell.pathloss).__name__}; {share.mean():.1%} of client-draws in outage",
                 fontsize=10)
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels()
    # LOS / NLOS: the shape is the point, not the colour of whichever client came first
    shapes = {name: marker for marker, name in LOS_MARKERS.values() if name}
    handles = [Line2D([], [], marker=shapes[lb], color="0.6", markeredgecolor="k", linestyle="none")
               if lb in shapes else h for h, lb in zip(handles, labels, strict=True)]
    ax.legend(handles, labels, loc="upper right", fontsize=7, framealpha=0.85)

    box = fig.add_subplot(grid[0, 1])
    box.axis("off")
    box.text(0.0, 1.0, "\n".join(parameter_lines(cfg, k)), va="top", ha="left", family="monospace", fontsize=7.5,
             transform=box.transAxes, bbox={"boxstyle": "round", "facecolor": "0.96", "edgecolor": "0.6"})
    box.set_title("radio parameters", fontsize=10, loc="left")

    comp = fig.add_subplot(grid[1, 1])
    rate_mbps = _per_client(draws, "uplink_rate_bps", n) / 1e6
    if compute_flops_per_s is None:
        comp.axis("off")
        comp.text(0.5, 0.5, "compute speeds come from the device trace\n(clients.capability): not drawn here",
                  ha="center", va="center", fontsize=9)
    else:
        gflops = np.asarray(compute_flops_per_s, dtype=float) / 1e9
        comp.scatter(rate_mbps[~mostly], gflops[~mostly], s=16, color="C0", label="clients")
        if mostly.any():
            comp.scatter(rate_mbps[mostly], gflops[mostly], marker="x", s=40, color="red",
                         label=f"outage in ≥ {OUTAGE_MOSTLY:.0%} of draws")
        comp.set_xlabel("median uplink rate over the draws, Mbit/s")
        comp.set_ylabel("compute budget, GFLOP/s")
        comp.set_title("compute budget against uplink rate (slow in both: stragglers)", fontsize=10)
        comp.legend(fontsize=7, loc="best")
        comp.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
    return v, np.arange(1, v.size + 1) / v.size


def cdf_figure(cfg: Scenario, draws: Mapping[str, np.ndarray]) -> Figure:
    """CDFs over clients and draws: ``axes[0]`` SNR and SINR (dB), ``axes[1]`` uplink rate, ``axes[2]``
    downlink rate (Mbit/s; a note instead with an ideal downlink). The outage rule's threshold, when
    set, is a vertical line on the SINR or rate axis."""
    plt = _pyplot()
    n_draws = len(draws["client"])
    rounds = int(np.max(draws["round"])) if n_draws else 0
    fig, axes = plt.subplots(1, 3, figsize=(13.0, 4.0))
    ax = axes[0]
    for column, name, style in (("snr_db", "SNR (thermal noise)", "--"), ("sinr_db", "SINR", "-")):
        x, y = _ecdf(draws[column])
        ax.step(x, y, where="post", linestyle=style, label=name)
    outage = cfg.cell.outage
    if outage.min_snr_db is not None:
        ax.axvline(outage.min_snr_db, color="red", linewidth=1, label=f"outage: SINR < {outage.min_snr_db:g} dB")
    ax.set_xlabel("dB, on the uplink share")
    ax.set_title("SNR and SINR", fontsize=10)
    for ax, column, title in ((axes[1], "uplink_rate_bps", "uplink rate"),
                              (axes[2], "downlink_rate_bps", "downlink rate")):
        x, y = _ecdf(np.asarray(draws[column], dtype=float) / 1e6)
        if x.size == 0:
            ax.text(0.5, 0.5, f"cell.downlink.mode: {cfg.cell.downlink.mode}\n(no downlink rate)", ha="center",
                    va="center", transform=ax.transAxes)
            ax.set_xticks([])
        else:
            ax.step(x, y, where="post", label=f"{cfg.cell.downlink.mode}" if "down" in column else "per client")
            if "up" in column and outage.min_rate_bps > 0:
                ax.axvline(outage.min_rate_bps / 1e6, color="red", linewidth=1,
                           label=f"outage: rate < {outage.min_rate_bps / 1e6:g} Mbit/s")
        ax.set_xlabel("Mbit/s")
        ax.set_title(title, fontsize=10)
    for ax in axes:
        ax.set_ylim(0.0, 1.02)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8, loc="upper left" if ax is axes[0] else "lower right")
    axes[0].set_ylabel(f"CDF over clients x {rounds} rounds' draws")
    fig.tight_layout()
    return fig


def _plain_log_ticks(ax: Any, low: float, high: float) -> None:
    """Log x axis ticked at 1-2-5 steps in plain numbers (matplotlib's default labels read 4x10^1)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    decades = range(int(math.floor(math.log10(low))), int(math.ceil(math.log10(high))) + 1)
    ticks = [m * 10.0 ** e for e in decades for m in (1, 2, 5) if low <= m * 10.0 ** e <= high]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def pathloss_figure(cell: Cell, table: Mapping[str, np.ndarray]) -> Figure:
    """Path loss against distance: the model's curve (LOS and NLOS curves for a LOS-aware model), each
    client's path loss (filled, marker by LOS state) and path loss plus shadowing (hollow)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.8, 4.6))
    d_min = max(float(cell.min_distance_m), 1.0)
    grid = np.geomspace(d_min, float(cell.radius_m), 200)
    model = cell.pathloss
    name = type(model).__name__
    if isinstance(model, LosAwarePathLoss):  # one curve per LOS state
        ax.plot(grid, model.loss_db(grid, los=np.ones(grid.size, dtype=bool)), color="C2", label=f"{name}, LOS")
        ax.plot(grid, model.loss_db(grid, los=np.zeros(grid.size, dtype=bool)), color="C3", label=f"{name}, NLOS")
    else:
        ax.plot(grid, model.loss_db(grid), color="k", label=name)
    los = np.asarray(table["los"], dtype=int)
    d = np.asarray(table["distance_m"], dtype=float)
    pl = np.asarray(table["pathloss_db"], dtype=float)
    total = pl + np.asarray(table["shadowing_db"], dtype=float)
    shadowed = bool(np.any(table["shadowing_db"] != 0))
    for state, (marker, label) in LOS_MARKERS.items():
        at = los == state
        if not at.any():
            continue
        colour = {1: "C2", 0: "C3", -1: "C0"}[state]
        ax.scatter(d[at], pl[at], marker=marker, s=22, color=colour, zorder=3,
                   label=f"clients{', ' + label if label else ''}: path loss")
        if shadowed:
            ax.scatter(d[at], total[at], marker=marker, s=26, facecolors="none", edgecolors=colour, zorder=3,
                       label=f"clients{', ' + label if label else ''}: + shadowing")
    ax.set_xscale("log")
    _plain_log_ticks(ax, d_min, float(cell.radius_m))
    ax.set_xlabel("distance to the base station, m")
    ax.set_ylabel("loss, dB")
    ax.set_title("path loss against distance", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
