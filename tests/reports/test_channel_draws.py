"""``sfl-sim channel`` over rounds' draws: the run's streams used as the engine uses them, the summary
statistics, and what the figures draw (artists, not pixels)."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from sfl_sim.channel import linear_to_db
from sfl_sim.config import validate
from sfl_sim.kit.seeding import stream
from sfl_sim.reports.channel import (
    DRAW_COLUMNS,
    DRAW_SUMMARY_COLUMNS,
    DRAWS_FILE,
    FIGURES,
    channel_report,
    draw_statistics,
    round_draws,
)
from sfl_sim.reports.channel_figures import cdf_figure, cell_figure, parameter_lines, pathloss_figure
from sfl_sim.runs.build import build_cell, drawn_compute_flops_per_s

ROUNDS = 4


def cfg_with(**cell):
    return validate({
        "seed": 5,
        "clients": {"count": 8, "participation": 0.5},
        "cell": {"uplink_bandwidth_hz": 10e6, "client_tx_power_w": 0.2, **cell},
    })


def busy_cfg():
    """Rayleigh fading, first-tier interference, LOS-aware path loss, shadowing, an SINR outage rule and
    a unicast downlink: everything the report draws."""
    return cfg_with(fading={"name": "rayleigh"}, interference={"name": "first_tier", "activity": 0.3},
                    pathloss={"name": "tr38901_uma", "los": "stochastic"},
                    shadowing={"name": "lognormal", "sigma_db": 6.0},
                    outage={"min_snr_db": 0.0, "max_attempts": 2, "on_outage": "retransmit"},
                    downlink={"mode": "unicast", "bandwidth_hz": 10e6, "server_tx_power_w": 10.0})


def test_draws_use_the_runs_streams_as_the_engine_does():
    cfg = busy_cfg()
    draws = round_draws(cfg, ROUNDS)
    assert set(draws) == set(DRAW_COLUMNS) and all(v.shape == (ROUNDS * 8,) for v in draws.values())
    np.testing.assert_array_equal(draws["round"], np.repeat(np.arange(1, ROUNDS + 1), 8))
    np.testing.assert_array_equal(draws["client"], np.tile(np.arange(8), ROUNDS))
    # by hand: the cell as a run builds it; per round and group of k = 4, uplink then downlink gains from
    # the run's fading stream; between rounds Cell.move redraws the interference
    cell, fading, mobility = build_cell(cfg), stream(5, "fading"), stream(5, "mobility")
    for r in range(ROUNDS):
        if r:
            cell.move(1.0, mobility)
        rows = slice(8 * r, 8 * r + 8)
        np.testing.assert_allclose(draws["noise_rise_db"][rows], linear_to_db(cell.noise_rise_linear))
        for ids in (np.arange(4), np.arange(4, 8)):
            up_gain, down_gain = cell.sample_fading(ids, fading), cell.sample_fading(ids, fading)
            up = cell.uplink_link(ids, fading_gain=up_gain)
            at = slice(8 * r + ids[0], 8 * r + ids[-1] + 1)
            np.testing.assert_array_equal(draws["sinr_db"][at], up.snr_db)
            np.testing.assert_array_equal(draws["uplink_rate_bps"][at], up.rate_bps)
            np.testing.assert_array_equal(draws["downlink_rate_bps"][at],
                                          cell.downlink_rates_bps(ids, fading_gain=down_gain))
            np.testing.assert_array_equal(draws["outage"][at], ((up.snr_db < 0.0) | (up.rate_bps <= 0)).astype(int))
    assert len(np.unique(draws["noise_rise_db"])) == ROUNDS  # redrawn every round
    np.testing.assert_allclose(draws["snr_db"] - draws["sinr_db"], draws["noise_rise_db"])
    again = round_draws(cfg, ROUNDS)
    assert all(np.array_equal(draws[c], again[c], equal_nan=True) for c in DRAW_COLUMNS)  # same seed, same numbers


def test_statistics_are_over_clients_and_draws_and_say_the_outage_share():
    draws = round_draws(busy_cfg(), ROUNDS)
    stats = draw_statistics(draws)
    p5, p50, p95 = stats["sinr_db"]
    assert p50 == pytest.approx(np.median(draws["sinr_db"])) and p5 <= p50 <= p95
    assert stats["outage"][1] == pytest.approx(np.mean((draws["sinr_db"] < 0.0) | (draws["uplink_rate_bps"] <= 0)))
    ideal = draw_statistics(round_draws(cfg_with(), 2))
    assert np.isnan(ideal["downlink_rate_bps"]).all() and ideal["outage"][1] == 0.0


@pytest.mark.slow
def test_report_prints_the_draws_and_writes_them_and_the_figures(tmp_path):
    out = io.StringIO()
    channel_report(busy_cfg(), tmp_path, stream=out, rounds=ROUNDS)
    for name in (DRAWS_FILE, *FIGURES):
        assert (tmp_path / name).stat().st_size > 100
    with open(tmp_path / DRAWS_FILE) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == ROUNDS * 8 and list(rows[0]) == list(DRAW_COLUMNS)
    text = out.getvalue()
    assert f"over {ROUNDS} rounds' draws x 8 clients (fading, interference, positions (static))" in text
    assert all(name in text for _, name, _ in DRAW_SUMMARY_COLUMNS)
    assert "uplink outage (share of draws)" in text and "(rate 0 or SINR < 0 dB (cell.outage))" in text


def test_bad_rounds_is_one_line(tmp_path):
    from sfl_sim.errors import ConfigError

    for rounds, round_s, says in ((0, 1.0, "channel --rounds: got 0; allowed: an integer in [1, 10,000]"),
                                  (2.5, 1.0, "channel --rounds: got 2.5"),
                                  (10**9, 1.0, "channel --rounds: got 1000000000"),  # ran for ever
                                  (3, 0.0, "channel --round-s: got 0.0")):
        with pytest.raises(ConfigError) as err:
            channel_report(cfg_with(), tmp_path, stream=io.StringIO(), rounds=rounds, round_s=round_s)
        assert "\n" not in str(err.value) and str(err.value).startswith(says), err.value


@pytest.mark.slow
def test_figures_draw_the_map_the_cdfs_and_the_path_loss():
    cfg = busy_cfg()
    cell = build_cell(cfg)
    draws = round_draws(cfg, ROUNDS)
    table = {"x_m": cell.positions_m[:, 0], "y_m": cell.positions_m[:, 1], "distance_m": cell.distance_m,
             "los": cell.los.astype(int), "pathloss_db": cell.pathloss_db, "shadowing_db": cell.shadowing_db,
             "cqi": np.zeros(8)}
    fig = cell_figure(cfg, cell, table, draws, drawn_compute_flops_per_s(cfg), 4)
    world, _, box, compute = fig.axes
    labels = [t.get_text() for t in world.get_legend().get_texts()]
    assert {"cell edge", "neighbouring sites", "neighbouring cells' clients", "base station"} <= set(labels)
    assert {"LOS", "NLOS"} & set(labels) and any(lb.startswith("outage in") for lb in labels)
    sites = next(ln for ln in world.lines if ln.get_label() == "neighbouring sites")
    assert len(sites.get_xdata()) == 6
    assert "interference: first_tier (activity=0.3)" in box.texts[0].get_text()
    assert compute.get_ylabel() == "compute budget, GFLOP/s"
    np.testing.assert_allclose(np.sort(compute.collections[0].get_offsets()[:, 1].data), np.sort(
        drawn_compute_flops_per_s(cfg)[draws["outage"].reshape(-1, 8).mean(axis=0) < 0.5] / 1e9))

    cdfs = cdf_figure(cfg, draws)
    snr_axes = cdfs.axes[0]
    assert [ln.get_label() for ln in snr_axes.lines][:2] == ["SNR (thermal noise)", "SINR"]
    assert all(ln.get_ydata()[-1] == 1.0 for ln in snr_axes.lines[:2])
    assert len(snr_axes.lines[1].get_xdata()) == ROUNDS * 8
    assert cdfs.axes[1].get_title() == "uplink rate" and cdfs.axes[2].get_title() == "downlink rate"
    assert cdfs.axes[2].lines[0].get_ydata()[-1] == 1.0

    pl = pathloss_figure(cell, table)
    ax = pl.axes[0]
    curves = {ln.get_label(): ln for ln in ax.lines}
    assert set(curves) == {"TR38901UMa, LOS", "TR38901UMa, NLOS"}
    nlos = curves["TR38901UMa, NLOS"]
    np.testing.assert_allclose(nlos.get_ydata(), cell.pathloss.loss_db(nlos.get_xdata(), los=np.zeros(200, bool)))
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "distance to the base station, m"


def test_parameter_box_names_every_radio_part():
    names = [line.split(":")[0] for line in parameter_lines(cfg_with(), 4) if not line.startswith(" ")]
    assert names == ["clients", "placement", "uplink", "noise PSD", "path loss", "shadowing", "fading", "rate",
                     "allocation", "power control", "interference", "mobility", "downlink", "outage", "HARQ"]


def test_channel_rounds_out_of_range_names_the_option_not_the_scenario(tmp_path, capsys):
    from sfl_sim.cli import main
    from tests.helpers import small_scenario, write_yaml

    path = write_yaml(tmp_path, small_scenario())
    for rounds in ("0", "1000000000"):
        code = main(["channel", str(path), "--rounds", rounds, "-o", str(tmp_path / "cell")])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith(f"sfl-sim: channel --rounds: got {rounds}; allowed"), err
        assert "invalid scenario" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "cell").exists()
