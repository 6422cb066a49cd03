"""What a scenario's radio gives its clients, without training (``sfl-sim channel``).

:func:`channel_report` builds the cell exactly as a run would (:func:`sfl_sim.runs.build.build_cell`,
same seeded streams), prints one row per client (the cell as the first round finds it, no fading) and
writes ``cell.csv``; then it draws N rounds of what a run redraws (:func:`round_draws`: fading,
the interference of the neighbouring cells, positions under mobility), prints their median and
5th/95th percentiles over clients and draws and writes ``channel_draws.csv``; the figures
(:mod:`sfl_sim.reports.channel_figures`) are ``cell.png`` (map, parameters, compute budgets),
``channel_cdfs.png`` and ``pathloss.png``.  For a channel in time (:mod:`sfl_sim.reports.channel_time`)
a line gives a time-varying fading's Doppler and coherence time, with ``fading_autocorrelation.png``
(its envelope's autocorrelation over the report's ``rounds x round_s`` seconds against the model's),
and a line a timed mobility's speeds.  For a network of cells (``cell.network``,
:mod:`sfl_sim.reports.network_map`) lines give the cells, the clients per cell and the handovers
by cause, with ``network_map.png`` (sites, cells, client tracks coloured by serving cell,
handovers).
"""
from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from sfl_sim.channel import Harq, McsTableRate, ShannonRate, linear_to_db
from sfl_sim.channel.link.peak import PEAK_CAPS
from sfl_sim.clients.selection import cohort_size
from sfl_sim.kit.seeding import stream as seeded_stream
from sfl_sim.reports import channel_figures, channel_time, network_map
from sfl_sim.runs.rundir import marker
from sfl_sim.runs.rundir.schema import CELL_FILE, CELL_REPORT_COLUMNS

if TYPE_CHECKING:
    from sfl_sim.config import Scenario

__all__ = ["channel_report", "round_draws", "summary_statistics", "draw_statistics", "COLOUR_BY", "SUMMARY_COLUMNS",
           "DRAW_COLUMNS", "DRAW_SUMMARY_COLUMNS", "DEFAULT_ROUNDS", "MAX_ROUNDS", "DEFAULT_ROUND_S", "DRAWS_FILE",
           "FIGURES"]

#: What the cell figure can colour the clients by.
COLOUR_BY = ("rate", "cqi")

#: Rounds drawn by default: 20 x the cell's clients draws, enough for the 5th and 95th percentiles.
DEFAULT_ROUNDS = 20

#: The most rounds a report draws: our choice.  10,000 rounds x the cell's clients is far beyond
#: what the 5th and 95th percentiles need (the default is 20), and keeps the draws (one CSV row per
#: round and client) finite in time and memory: 1e9 rounds ran for ever and wrote nothing.
MAX_ROUNDS = 10_000

#: Simulated time between two drawn rounds by default, s: how far mobile clients move between them.
DEFAULT_ROUND_S = 1.0

#: The per-draw file of the report (one row per round and client, :data:`DRAW_COLUMNS`).
DRAWS_FILE = "channel_draws.csv"

#: The report's figures, in the order written.
FIGURES = ("cell.png", "channel_cdfs.png", "pathloss.png")

#: Columns of :data:`DRAWS_FILE`: per drawn round and client. ``noise_rise_db`` is the round's
#: interference over thermal noise (0 without interference); ``snr_db`` is over thermal noise only,
#: ``sinr_db`` with the interference; ``uplink_fading_gain_db`` / ``downlink_fading_gain_db`` the
#: round's small-scale power gains; rates in bit/s (downlink NaN with ``cell.downlink.mode: ideal``);
#: ``outage`` 1 where the uplink is in outage (:func:`round_draws`).
DRAW_COLUMNS: tuple[str, ...] = (
    "round", "client", "distance_m", "los", "pathloss_db", "shadowing_db", "noise_rise_db",
    "uplink_fading_gain_db", "snr_db", "sinr_db", "uplink_bandwidth_hz", "tx_power_w", "uplink_rate_bps",
    "downlink_fading_gain_db", "downlink_rate_bps", "outage",
)

#: The columns of the draws summed up in the text: (column, printed name, scale dividing the column).
DRAW_SUMMARY_COLUMNS: tuple[tuple[str, str, float], ...] = (
    ("noise_rise_db", "interference over noise (dB)", 1.0),
    ("uplink_fading_gain_db", "uplink fading gain (dB)", 1.0),
    ("snr_db", "SNR (dB)", 1.0),
    ("sinr_db", "SINR (dB)", 1.0),
    ("uplink_rate_bps", "uplink rate (Mbit/s)", 1e6),
    ("downlink_rate_bps", "downlink rate (Mbit/s)", 1e6),
)


def channel_report(cfg: Scenario, out_dir: Path, stream: TextIO | None = None,
                   colour_by: str = "rate", rounds: int = DEFAULT_ROUNDS,
                   round_s: float = DEFAULT_ROUND_S,
                   draws_out: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Build the cell of a validated scenario, print its per-client table and its distribution over
    ``rounds`` rounds' draws, write cell.csv, channel_draws.csv and the figures (:data:`FIGURES`).

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
    rounds : int, default :data:`DEFAULT_ROUNDS`
        Rounds drawn (:func:`round_draws`), >= 1.
    round_s : float, default :data:`DEFAULT_ROUND_S`
        Simulated time between drawn rounds, s, > 0 (how far mobile clients move; static: no effect).
    draws_out : dict, optional
        Filled with the draws (:func:`round_draws`' columns) when given.

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
        defaults; :class:`sfl_sim.channel.Harq`), NaN for another rate model or a client out of range.

    Raises
    ------
    sfl_sim.config.ConfigError
        If the cell cannot be built from the scenario, ``colour_by`` is unknown or ``cqi``
        without an MCS-table rate model, or ``rounds`` or ``round_s`` is out of range.
    sfl_sim.errors.RunDirError
        If ``out_dir`` cannot be written or holds a file of the report's names that sfl-sim did not
        write (:mod:`sfl_sim.runs.rundir.marker`).
    """
    import sys

    from sfl_sim.errors import ArgumentError, ConfigError

    if colour_by not in COLOUR_BY:
        raise ConfigError(f"colour_by: got {colour_by!r}; allowed: one of {', '.join(COLOUR_BY)}")
    # named as the report's own options: the scenario's `rounds` field is not what was given
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or not 1 <= rounds <= MAX_ROUNDS:
        raise ArgumentError(f"channel --rounds: got {rounds!r}; allowed: an integer in [1, {MAX_ROUNDS:,}] (rounds of "
                          f"draws for the report, not the scenario's rounds)")
    if isinstance(round_s, bool) or not isinstance(round_s, (int, float)) or not (0 < round_s < math.inf):
        raise ArgumentError(f"channel --round-s: got {round_s!r}; allowed: a number of seconds > 0")
    # before any work; the autocorrelation figure is written for a time-varying fading only
    marker.claim_folder(out_dir, "cell_report", (CELL_FILE, DRAWS_FILE, *FIGURES, channel_time.AUTOCORRELATION_FILE,
                                                 network_map.NETWORK_MAP_FILE))

    from sfl_sim.channel.link.downlink import downlink_outage
    from sfl_sim.runs.build import build_cell, build_harq  # build imports torch; keep it out of module import

    cell = build_cell(cfg)
    n = cell.n_clients
    k = cohort_size(cfg.clients.count, cfg.clients.participation)
    ids = np.arange(n)
    band_hz = cell.uplink_bandwidth_hz
    share = cell.uplink_link_at_bandwidth(ids, band_hz / k)
    full = cell.uplink_link_at_bandwidth(ids, band_hz)
    snr_db = cell.describe(n_sharing=k)["snr_db"]
    cqi, efficiency = _cqi(cell.rate, share.snr_db, share.rate_bps)
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
    draws = round_draws(cfg, rounds, round_s)
    if draws_out is not None:
        draws_out.update(draws)
    compute = _compute_flops_per_s(cfg)
    out = Path(out_dir)
    _write_csv(table, out / CELL_FILE, CELL_REPORT_COLUMNS)
    _write_csv(draws, out / DRAWS_FILE, DRAW_COLUMNS)
    channel_figures.write_figures(out, cfg, cell, table, draws, compute, k, colour_by)
    text = stream or sys.stdout
    _print_table(table, text, cell, k)
    print(grid_line(cfg), file=text)
    uncapped = _uncapped_shannon_line(cell.rate, full.snr_db)
    if uncapped:
        print(uncapped, file=text)
    print(downlink_outage(cell, k).line(cfg.cell.downlink.mode), file=text)
    _print_draws(draws, text, cfg, rounds)
    _print_time(cell, cfg, out, rounds, round_s, text)
    _print_network(cfg, out, rounds, round_s, text)
    return table


def _print_network(cfg: Scenario, out: Path, rounds: int, round_s: float, stream: TextIO) -> None:
    """A network of cells (:mod:`sfl_sim.reports.network_map`): its lines and
    :data:`~sfl_sim.reports.network_map.NETWORK_MAP_FILE` over ``rounds x round_s`` seconds; a figure
    of an earlier report in ``out`` (ours: the folder is claimed) is removed without a network."""
    figure = out / network_map.NETWORK_MAP_FILE
    tracks = network_map.network_tracks(cfg, rounds * round_s)
    if tracks is None:
        figure.unlink(missing_ok=True)
        return
    for line in network_map.network_lines(tracks, rounds, round_s):
        print(line, file=stream)
    channel_figures.save(network_map.network_map_figure(tracks), figure)
    shown = min(network_map.MAX_TRACKS, tracks.n_clients)
    print(f"  {network_map.NETWORK_MAP_FILE}: cells, sites, the tracks of {shown} of {tracks.n_clients} clients "
          f"coloured by serving cell, handovers marked", file=stream)


def _print_time(cell: Any, cfg: Scenario, out: Path, rounds: int, round_s: float, stream: TextIO) -> None:
    """The channel in time (:mod:`sfl_sim.reports.channel_time`): a time-varying fading's Doppler line
    and :data:`~sfl_sim.reports.channel_time.AUTOCORRELATION_FILE` over ``rounds x round_s`` seconds,
    a timed mobility's line; a figure of an earlier report in ``out`` (ours: the folder is claimed)
    is removed when the fading is not time-varying."""
    figure = out / channel_time.AUTOCORRELATION_FILE
    for line in (channel_time.doppler_line(cell, cfg.cell.fading.name),
                 channel_time.mobility_line(cell, cfg.cell.mobility.name)):
        if line:
            print(line, file=stream)
    data = channel_time.fading_autocorrelation(cell, rounds * round_s) if cell.radio.time_varying else None
    if data is None:
        figure.unlink(missing_ok=True)
        return
    channel_figures.save(channel_time.autocorrelation_figure(data), figure)
    deviation = data.max_deviation()
    against = "" if math.isnan(deviation) else f"; largest |empirical - model| {deviation:.3f}"
    print(f"  {channel_time.AUTOCORRELATION_FILE}: envelope autocorrelation over {data.clients} clients x "
          f"{data.segments} segments of {data.segment_s:.3g} s in the {rounds} x {round_s:g} s drawn, lags to "
          f"{data.lag_s[-1] * 1e3:.3g} ms{against}", file=stream)


def grid_line(cfg: Scenario) -> str:
    """One line on the uplink's resource grid and who hands it out: the numerology (TS 38.211 Table 4.2-1,
    clause 4.3.2: subcarrier spacing 15 * 2^mu kHz, slot 1 ms / 2^mu), the RBs of the band (TS 38.101-1 Table
    5.3.2-1) and the scheduler with its fidelity, or the static split."""
    from sfl_sim.channel.link.resource_grid import n_rb, slot_duration_s, subcarrier_spacing_hz
    from sfl_sim.engine.band import scheduling_form
    from sfl_sim.runs.build import build_scheduler

    mu, band_hz = cfg.cell.numerology, cfg.cell.uplink_bandwidth_hz
    scs_hz = subcarrier_spacing_hz(mu)
    try:
        rbs = f"{n_rb(band_hz, scs_hz)} RBs of {12 * scs_hz / 1e3:g} kHz in {band_hz / 1e6:g} MHz"
    except ValueError:
        rbs = f"{band_hz / 1e6:g} MHz has no entry in TS 38.101-1 Table 5.3.2-1 at {scs_hz / 1e3:g} kHz"
    scheduler = build_scheduler(cfg)
    name = cfg.cell.scheduler.name
    form = scheduling_form(scheduler)
    how = (f"scheduler {name} ({form} form)" if form != "static"
           else f"scheduler {name} (each round's equal shares of the band, cell.allocation)")
    return (f"uplink grid: numerology {mu} ({scs_hz / 1e3:g} kHz subcarriers, {slot_duration_s(mu) * 1e3:g} ms "
            f"slots), {rbs}; {how}")


def round_draws(cfg: Scenario, rounds: int = DEFAULT_ROUNDS, round_s: float = DEFAULT_ROUND_S) -> dict[str, np.ndarray]:
    """What a run's radio redraws, over ``rounds`` rounds, for every client of the cell.

    Uses the run's own streams the way the engine does: the cell is built as a run builds it
    (:func:`sfl_sim.runs.build.build_cell`: placement, shadowing, LOS and the neighbouring cells'
    clients from their streams, drawn once per run as in a run); each round takes the uplink and
    then the downlink fading gains from the run's ``fading`` stream (as ``engine.radio.Uplink`` and
    ``Downlink`` do; a time-varying fading's gains at the round's start, ``(r - 1) x round_s``,
    drawing nothing) and, between rounds, :meth:`Cell.move <sfl_sim.channel.Cell.move>` by
    ``round_s`` redraws the interference (which neighbouring clients transmit, from the cell's
    ``interference`` stream) and moves the clients (``mobility`` stream; static: they stay). A run
    draws for one cohort of ``k = round(clients.count x participation)`` clients a round; here
    every client is drawn, as a member of a group of ``k`` (``numpy.array_split`` of the clients
    in order: groups of ``k`` or ``k + 1``) whose members share the band as the allocator splits
    it (no payload declared) and, for a unicast downlink, the downlink band; a broadcast goes at the
    group's slowest full-band rate. So the draws follow the run's distributions and seeds, not its
    exact per-client values (which depend on the cohorts and on redraws within a round:
    ``per_iteration`` / ``per_transmission`` coherence, retransmissions).

    Outage: the ``cell.outage`` rule (rate below ``min_rate_bps`` or SINR below ``min_snr_db``),
    and always a rate of 0 (no usable MCS), as the engine has it.

    Returns
    -------
    dict of str to numpy.ndarray, each shape (rounds x n_clients,)
        :data:`DRAW_COLUMNS`, rounds 1..``rounds``, clients in order within a round.
    """
    from sfl_sim.runs.build import build_cell, build_outage  # build imports torch; keep it out of module import

    cell = build_cell(cfg)
    outage = build_outage(cfg)
    fading_rng = seeded_stream(cfg.seed, "fading")
    mobility_rng = seeded_stream(cfg.seed, "mobility")
    n = cell.n_clients
    k = cohort_size(cfg.clients.count, cfg.clients.participation)
    groups = np.array_split(np.arange(n), max(1, n // k))
    mode = cfg.cell.downlink.mode
    columns: dict[str, list[np.ndarray]] = {c: [] for c in DRAW_COLUMNS}
    for r in range(1, rounds + 1):
        if r > 1:
            cell.move(round_s, mobility_rng)
        rise_db = float(linear_to_db(cell.noise_rise_linear))
        t_s = (r - 1) * round_s  # the round's start on the report's clock
        for ids in groups:
            up_gain = _fading_gains(cell, ids, fading_rng, t_s)
            up = cell.uplink_link(ids, fading_gain=up_gain)
            down_gain = np.full(ids.size, np.nan)
            down_bps = np.full(ids.size, np.nan)
            if mode != "ideal":
                down_gain = _fading_gains(cell, ids, fading_rng, t_s)
                if mode == "broadcast":
                    down_bps = np.full(ids.size, cell.broadcast_rate_bps(ids, fading_gain=down_gain))
                else:
                    down_bps = cell.downlink_rates_bps(ids, fading_gain=down_gain)
            failed = outage.is_outage(up.rate_bps, up.snr_db) | (up.rate_bps <= 0.0)
            row = {
                "round": np.full(ids.size, r), "client": ids, "distance_m": cell.distance_m[ids],
                "los": np.full(ids.size, -1) if cell.los is None else cell.los[ids].astype(int),
                "pathloss_db": cell.pathloss_db[ids], "shadowing_db": cell.shadowing_db[ids],
                "noise_rise_db": np.full(ids.size, rise_db), "uplink_fading_gain_db": _db(up_gain),
                # the noise rise is (N0 F + I) / (N0 F): over thermal noise only, the SINR times it
                "snr_db": up.snr_db + rise_db, "sinr_db": up.snr_db, "uplink_bandwidth_hz": up.bandwidth_hz,
                "tx_power_w": up.tx_power_w, "uplink_rate_bps": up.rate_bps,
                "downlink_fading_gain_db": _db(down_gain), "downlink_rate_bps": down_bps,
                "outage": failed.astype(int),
            }
            for c in DRAW_COLUMNS:
                columns[c].append(np.asarray(row[c]))
    return {c: np.concatenate(v) for c, v in columns.items()}


def _fading_gains(cell: Any, ids: np.ndarray, fading_rng: np.random.Generator, t_s: float) -> np.ndarray:
    """The round's fading gains of ``ids``: a draw from the run's ``fading`` stream, as the engine
    takes one per round; a time-varying fading's gains at the round's start ``t_s`` instead (no
    draw: as ``engine.radio.Uplink`` and ``Downlink`` read them, uplink and downlink alike)."""
    if cell.radio.time_varying:
        return cell.radio.fading_at(ids, t_s)
    return cell.sample_fading(ids, fading_rng)


def _db(gain: np.ndarray) -> np.ndarray:
    """Power gains in dB (0 is -inf dB); NaN (a gain not drawn: the ideal downlink) stays NaN."""
    g = np.asarray(gain, dtype=float)
    out = np.full(g.shape, np.nan)
    drawn = ~np.isnan(g)
    if drawn.any():
        out[drawn] = linear_to_db(g[drawn])
    return out


def _compute_flops_per_s(cfg: Scenario) -> np.ndarray | None:
    """The clients' compute budgets as a run draws them, FLOP/s; None with a device trace (its speeds
    need the model, which this report does not build)."""
    if cfg.clients.capability is not None:
        return None
    from sfl_sim.runs.build import drawn_compute_flops_per_s

    return drawn_compute_flops_per_s(cfg)


def draw_statistics(draws: Mapping[str, np.ndarray]) -> dict[str, tuple[float, float, float]]:
    """Median and 5th/95th percentiles over clients and draws of the :data:`DRAW_SUMMARY_COLUMNS`,
    and the outage share.

    Returns
    -------
    dict of str to (float, float, float)
        Column -> (5th percentile, median, 95th percentile) over its finite values (NaN when none:
        the downlink rate with an ideal downlink); ``outage`` -> (share, share, share) of the
        client-draws in outage, in [0, 1].
    """
    out = {column: _percentiles(draws[column]) for column, _, _ in DRAW_SUMMARY_COLUMNS}
    share = float(np.mean(draws["outage"])) if len(draws["outage"]) else math.nan
    out["outage"] = (share, share, share)
    return out


def _print_draws(draws: Mapping[str, np.ndarray], stream: TextIO, cfg: Scenario, rounds: int) -> None:
    stats = draw_statistics(draws)
    n = len(draws["client"]) // rounds
    redrawn = ["fading" if cfg.cell.fading.name != "none" else "fading (none)",
               "interference" if cfg.cell.interference.name == "first_tier" else "interference (fixed)",
               "positions" if cfg.cell.mobility.name != "static" else "positions (static)"]
    print(f"over {rounds} rounds' draws x {n} clients ({', '.join(redrawn)}): median [5th, 95th percentile]",
          file=stream)
    for column, name, scale in DRAW_SUMMARY_COLUMNS:
        p5, p50, p95 = (x / scale for x in stats[column])
        if math.isnan(p50):
            print(f"  {name:<34} {'-':>9} ({'ideal downlink' if 'downlink' in column else 'none'})", file=stream)
        else:
            print(f"  {name:<34} {p50:>9.2f} [{p5:.2f}, {p95:.2f}]", file=stream)
    rule = _outage_rule(cfg)
    print(f"  {'uplink outage (share of draws)':<34} {100 * stats['outage'][1]:>8.1f}% ({rule})", file=stream)


def _outage_rule(cfg: Scenario) -> str:
    o = cfg.cell.outage
    parts = ([f"rate < {o.min_rate_bps / 1e6:g} Mbit/s"] if o.min_rate_bps > 0 else []) + (
        [f"SINR < {o.min_snr_db:g} dB"] if o.min_snr_db is not None else [])
    return "rate 0" + "".join(f" or {p}" for p in parts) + (" (cell.outage)" if parts else "")


def _uncapped_shannon_line(rate: Any, full_band_snr_db: np.ndarray) -> str:
    """For an uncapped ``shannon`` uplink: that its rates may pass TS 38.306's single-layer peak,
    how many clients' full-band rates do, and how to cap it; "" for any other rate model."""
    if not isinstance(rate, ShannonRate) or rate.max_spectral_efficiency_bps_per_hz is not None:
        return ""
    peak = PEAK_CAPS["ts38306_uplink"]
    se = np.log2(1.0 + 10.0 ** (np.asarray(full_band_snr_db, dtype=float) / 10.0))
    over = int(np.count_nonzero(se > peak))
    return (f"cell.rate shannon is uncapped: a rate may exceed TS 38.306 clause 4.1.2's single-layer uplink peak "
            f"({peak:.4f} bit/s/Hz of the RBs; {over} of {se.size} clients do on the full band); "
            f"cap it with cell.rate.max_spectral_efficiency_bps_per_hz: ts38306_uplink, or use attenuated_shannon")


def _cqi(rate: Any, sinr_db: np.ndarray, rate_bps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CQI and table efficiency of each link (its SINR and the rate it got) for a CQI-table rate model
    (``cqi_of_rate(sinr_linear, rate_bps)`` and ``cqi_index`` / ``efficiency_bps_per_hz`` rows); NaN
    for any other rate model."""
    if not all(hasattr(rate, a) for a in ("cqi_of_rate", "cqi_index", "efficiency_bps_per_hz")):
        nan = np.full(sinr_db.shape, np.nan)
        return nan, nan.copy()
    sinr = 10.0 ** (np.asarray(sinr_db, dtype=float) / 10.0)
    cqi = np.array([rate.cqi_of_rate(s, r) for s, r in zip(sinr.tolist(), np.asarray(rate_bps).tolist(),
                                                            strict=True)], dtype=int)
    rows = {int(c): float(e) for c, e in zip(rate.cqi_index, rate.efficiency_bps_per_hz, strict=True)}
    return cqi, np.array([rows.get(int(c), 0.0) for c in cqi])


def _write_csv(table: Mapping[str, np.ndarray], path: Path, columns: tuple[str, ...]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for i in range(len(table["client"])):
            writer.writerow([_cell_text(table[c][i]) for c in columns])


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
    return {column: _percentiles(table[column]) for column, _, _ in SUMMARY_COLUMNS}


def _percentiles(values: np.ndarray) -> tuple[float, float, float]:
    """(5th percentile, median, 95th percentile) of the finite values; NaN when there are none."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    p5, p50, p95 = np.percentile(v, [5, 50, 95]) if v.size else (np.nan,) * 3
    return float(p5), float(p50), float(p95)


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
