"""Per-client table and picture of a scenario's cell, without training (``sfl-sim channel``).

:func:`channel_report` builds the cell exactly as a run would (:func:`sfl_sim.runs.build.build_cell`,
same seeded streams), prints one row per client and writes ``cell.csv`` and ``cell.png``.
"""
from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from sfl_sim.channel import Harq, McsTableRate
from sfl_sim.clients.selection import cohort_size
from sfl_sim.runs.rundir.schema import CELL_FILE, CELL_REPORT_COLUMNS

if TYPE_CHECKING:
    from sfl_sim.config import Scenario

__all__ = ["channel_report", "summary_statistics", "COLOUR_BY", "SUMMARY_COLUMNS"]

#: What the cell figure can colour the clients by.
COLOUR_BY = ("rate", "cqi")


def channel_report(cfg: Scenario, out_dir: Path, stream: TextIO | None = None,
                   colour_by: str = "rate") -> dict[str, np.ndarray]:
    """Build the cell of a validated scenario, print its per-client table, write cell.csv and cell.png.

    Parameters
    ----------
    cfg : Scenario
        A validated scenario (:func:`sfl_sim.config.validate`).
    out_dir : pathlib.Path
        Directory for ``cell.csv`` and ``cell.png`` (created if missing).
    stream : text stream, optional
        Where the table is printed; default ``sys.stdout``.
    colour_by : {"rate", "cqi"}, default "rate"
        What colours the clients in ``cell.png``: the uplink rate on the cohort's share, or the CQI
        there (needs ``cell.rate: mcs_table``).

    Returns
    -------
    dict of str to numpy.ndarray, each shape (n_clients,)
        The columns of :data:`sfl_sim.runs.rundir.schema.CELL_REPORT_COLUMNS`: ``client``; position ``x_m``, ``y_m`` and
        ``distance_m`` (m); ``los`` (1 LOS, 0 NLOS, -1 when the path-loss model has no LOS
        state); ``pathloss_db`` and ``shadowing_db`` (dB); ``snr_db`` (signal over thermal noise)
        on an equal share of the uplink among a cohort of ``round(clients.count *
        clients.participation)`` clients; ``uplink_rate_cohort_share_bps`` on that share and
        ``uplink_rate_full_band_bps`` on the whole uplink band (bit/s, no fading, at the SINR);
        ``sinr_db`` on the cohort's share (the interference model's first draw; ``snr_db``
        without interference); ``cqi`` and ``mcs_efficiency_bps_per_hz`` (the TS 38.214 table
        efficiency of that CQI; 0 below CQI 1) on that share with ``cell.rate: mcs_table``, NaN
        (empty in the CSV) with any other rate model; ``tx_power_w`` on that share (the power
        control's power); with ``cell.rate: mcs_table``, ``bler`` (the error
        rate of a first transmission of one slot's transport block at the client's CQI on that share)
        and ``expected_transmissions`` (its HARQ copies on average, under ``cell.harq`` or HARQ's
        defaults; :class:`channel.Harq`), NaN for another rate model or a client out of range.

    Raises
    ------
    sfl_sim.config.ConfigError
        If the cell cannot be built from the scenario, or ``colour_by`` is unknown or ``cqi``
        without an MCS-table rate model.
    """
    import sys

    from sfl_sim.errors import ConfigError

    if colour_by not in COLOUR_BY:
        raise ConfigError(f"colour_by: got {colour_by!r}; allowed: one of {', '.join(COLOUR_BY)}")

    from sfl_sim.runs.build import build_cell, build_harq  # build imports torch; keep it out of module import

    cell = build_cell(cfg)
    n = cell.n_clients
    k = cohort_size(cfg.clients.count, cfg.clients.participation)
    ids = np.arange(n)
    band_hz = cell.uplink_bandwidth_hz
    share = cell.uplink_link_at_bandwidth(ids, band_hz / k)
    full = cell.uplink_link_at_bandwidth(ids, band_hz)
    snr_db = cell.describe(n_sharing=k)["snr_db"]
    cqi, efficiency = _cqi(cell.rate, share.snr_db)
    if colour_by == "cqi" and cqi.dtype.kind == "f":
        raise ConfigError(f"colour_by: got 'cqi' with cell.rate {cell.rate!r}; allowed: cqi only with cell.rate: "
                          f"mcs_table (or colour_by: rate)")
    table: dict[str, np.ndarray] = {
        "client": ids,
        "x_m": cell.positions_m[:, 0].copy(),
        "y_m": cell.positions_m[:, 1].copy(),
        "distance_m": cell.distance_m.copy(),
        "los": np.full(n, -1) if cell.los is None else cell.los.astype(int),
        "pathloss_db": cell.pathloss_db.copy(),
        "shadowing_db": cell.shadowing_db.copy(),
        "snr_db": snr_db,
        "uplink_rate_cohort_share_bps": share.rate_bps,
        "uplink_rate_full_band_bps": full.rate_bps,
        "sinr_db": share.snr_db,
        "cqi": cqi,
        "mcs_efficiency_bps_per_hz": efficiency,
        "tx_power_w": share.tx_power_w,
    }
    harq = build_harq(cfg, cell) or (Harq(cell.rate) if isinstance(cell.rate, McsTableRate) else None)
    if harq is None:
        table["bler"] = table["expected_transmissions"] = np.full(n, np.nan)
    else:
        table["bler"], table["expected_transmissions"] = harq.slot_block(share.rate_bps, share.snr_db)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _write_csv(table, out / CELL_FILE)
    _plot(cell, table, out / "cell.png", k, colour_by)
    _print_table(table, stream or sys.stdout, cell, k)
    return table


def _cqi(rate: Any, sinr_db: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CQI and table efficiency at each SINR for a CQI-table rate model (``cqi(sinr_linear)`` and
    ``cqi_index`` / ``efficiency_bps_per_hz`` rows); NaN for any other rate model."""
    if not all(hasattr(rate, a) for a in ("cqi", "cqi_index", "efficiency_bps_per_hz")):
        nan = np.full(sinr_db.shape, np.nan)
        return nan, nan.copy()
    cqi = np.asarray(rate.cqi(10.0 ** (np.asarray(sinr_db, dtype=float) / 10.0)), dtype=int)
    rows = {int(c): float(e) for c, e in zip(rate.cqi_index, rate.efficiency_bps_per_hz, strict=True)}
    return cqi, np.array([rows.get(int(c), 0.0) for c in cqi])


def _write_csv(table: Mapping[str, np.ndarray], path: Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CELL_REPORT_COLUMNS)
        for i in range(len(table["client"])):
            writer.writerow([_cell_text(table[c][i]) for c in CELL_REPORT_COLUMNS])


def _cell_text(value: Any) -> str:
    if isinstance(value, (np.integer, int)):
        return str(int(value))
    if np.isnan(value):
        return ""  # a column that does not apply to this cell (CQI without a CQI table)
    return repr(float(value))


def _print_table(table: Mapping[str, np.ndarray], stream: TextIO, cell: Any, k: int) -> None:
    print(
        f"{cell!r}\nuplink {cell.uplink_bandwidth_hz / 1e6:g} MHz; share = band / {k} (cohort size); "
        f"rates in Mbit/s",
        file=stream,
    )
    header = f"{'client':>6} {'x_m':>8} {'y_m':>8} {'dist_m':>8} {'los':>4} {'PL_dB':>7} {'SF_dB':>7} " \
             f"{'SNR_dB':>7} {'SINR_dB':>7} {'CQI':>3} {'P_dBm':>6} {'r_share':>9} {'r_band':>9} " \
             f"{'BLER':>8} {'E[tx]':>6}"
    print(header, file=stream)
    for i in range(len(table["client"])):
        los = {1: "LOS", 0: "NLOS", -1: "-"}[int(table["los"][i])]
        print(
            f"{int(table['client'][i]):>6} {table['x_m'][i]:>8.1f} {table['y_m'][i]:>8.1f} "
            f"{table['distance_m'][i]:>8.1f} {los:>4} {table['pathloss_db'][i]:>7.2f} "
            f"{table['shadowing_db'][i]:>7.2f} {table['snr_db'][i]:>7.2f} {table['sinr_db'][i]:>7.2f} "
            f"{_cqi_text(table['cqi'][i]):>3} {_dbm_text(table['tx_power_w'][i]):>6} "
            f"{table['uplink_rate_cohort_share_bps'][i] / 1e6:>9.3f} "
            f"{table['uplink_rate_full_band_bps'][i] / 1e6:>9.3f} "
            f"{_maybe(table['bler'][i], '.2e'):>8} {_maybe(table['expected_transmissions'][i], '.3f'):>6}",
            file=stream,
        )
    _print_summary(table, stream)


#: The columns :func:`_print_summary` sums up: (column, printed name, scale dividing the column).
SUMMARY_COLUMNS: tuple[tuple[str, str, float], ...] = (
    ("distance_m", "distance (m)", 1.0),
    ("pathloss_db", "path loss (dB)", 1.0),
    ("snr_db", "SNR on the share (dB)", 1.0),
    ("sinr_db", "SINR on the share (dB)", 1.0),
    ("uplink_rate_cohort_share_bps", "uplink rate on the share (Mbit/s)", 1e6),
    ("uplink_rate_full_band_bps", "uplink rate on the band (Mbit/s)", 1e6),
)


def summary_statistics(table: Mapping[str, np.ndarray]) -> dict[str, tuple[float, float, float]]:
    """Median and 5th/95th percentiles over the clients of the :data:`SUMMARY_COLUMNS` of a report table.

    Returns
    -------
    dict of str to (float, float, float)
        Column -> (5th percentile, median, 95th percentile) over its finite values, in the column's
        units (``nan`` when it has none); numpy's default (linear) percentile interpolation.
    """
    out = {}
    for column, _, _ in SUMMARY_COLUMNS:
        v = np.asarray(table[column], dtype=float)
        v = v[np.isfinite(v)]
        p5, p50, p95 = np.percentile(v, [5, 50, 95]) if v.size else (np.nan,) * 3
        out[column] = (float(p5), float(p50), float(p95))
    return out


def _print_summary(table: Mapping[str, np.ndarray], stream: TextIO) -> None:
    stats = summary_statistics(table)
    print(f"over the {len(table['client'])} clients: median [5th, 95th percentile]", file=stream)
    for column, name, scale in SUMMARY_COLUMNS:
        p5, p50, p95 = (x / scale for x in stats[column])
        print(f"  {name:<34} {p50:>9.2f} [{p5:.2f}, {p95:.2f}]", file=stream)


def _maybe(value: float, fmt: str) -> str:
    """``value`` formatted, or ``-`` where it does not apply (NaN), as the CQI column shows it."""
    return "-" if np.isnan(value) else format(value, fmt)


def _cqi_text(value: Any) -> str:
    return "-" if np.isnan(value) else str(int(value))


def _dbm_text(power_w: float) -> str:
    return f"{10.0 * np.log10(power_w) + 30.0:.1f}" if power_w > 0 else "-inf"


def _plot(cell: Any, table: Mapping[str, np.ndarray], path: Path, k: int, colour_by: str = "rate") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    try:
        radius = cell.radius_m
        ax.add_patch(plt.Circle((0.0, 0.0), radius, fill=False, color="0.4", linestyle="--", label="cell edge"))
        if colour_by == "cqi":
            cqi = np.asarray(table["cqi"], dtype=int)
            top = int(max(15, cqi.max()))
            points = ax.scatter(table["x_m"], table["y_m"], c=cqi, cmap=plt.get_cmap("viridis", top + 1),
                                vmin=-0.5, vmax=top + 0.5, s=28, edgecolors="k", linewidths=0.3)
            fig.colorbar(points, ax=ax, label=f"CQI on band/{k} (0: out of range)", ticks=range(0, top + 1, 3))
        else:
            rate_mbps = table["uplink_rate_cohort_share_bps"] / 1e6
            points = ax.scatter(table["x_m"], table["y_m"], c=rate_mbps, cmap="viridis", s=28, edgecolors="k",
                                linewidths=0.3)
            fig.colorbar(points, ax=ax, label=f"uplink rate on band/{k}, Mbit/s")
        ax.plot([0.0], [0.0], marker="^", color="red", markersize=12, linestyle="none", label="base station")
        ax.set_xlim(-1.05 * radius, 1.05 * radius)
        ax.set_ylim(-1.05 * radius, 1.05 * radius)
        ax.set_aspect("equal")
        ax.set_xlabel("x, m")
        ax.set_ylabel("y, m")
        ax.set_title(f"{cell.n_clients} clients; {type(cell.pathloss).__name__}")
        ax.legend(loc="upper right", fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
