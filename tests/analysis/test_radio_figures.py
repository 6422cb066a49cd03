"""The report's figures of what the radio did (clients.csv), the clients' energy (energy.csv) and a metric
against a numeric setting field: what they draw, checked on the artists, not on pixels."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Rectangle

from sfl_sim.analysis.figure_style import text_boxes_overlap
from sfl_sim.analysis.figures import setting_figure
from sfl_sim.analysis.radio_data import client_energy, energy_fairness, time_breakdown
from sfl_sim.analysis.radio_figures import TIME_PART_LABELS, breakdown_figure, cdf_caption, cdf_figure, energy_figure
from sfl_sim.analysis.readers import read_clients
from sfl_sim.analysis.report_figures import line_field_of, radio_figures, sweep_figures
from sfl_sim.analysis.study_data import load_study
from sfl_sim.analysis.sweep import numeric_fields, sweep_groups
from sfl_sim.runs.rundir.schema import CLIENT_SPAN_COLUMN, CLIENT_TIME_COLUMNS, CLIENTS_COLUMNS, CLIENTS_FILE
from tests.analysis.synthetic_runs import write_run

BANDWIDTHS_HZ = (5.0e6, 20.0e6)
GRANT_COLUMNS = ("uplink_granted_rb_mean", "uplink_rb_s", "uplink_transport_blocks", "uplink_scheduled_rate_bps",
                 "uplink_sinr_used_db")
ALGOS = ("scala", "fedavg")
SEEDS = (0, 1, 2)


def write_clients(run_dir: Path, seed: int, bandwidth_hz: float, rounds: int = 5, cohort: int = 3) -> pd.DataFrame:
    """A clients.csv in the schema's shape: the time parts add up to the span; SINR and rate from the seed."""
    rng = np.random.default_rng([seed, int(bandwidth_hz)])
    rows = []
    for r in range(1, rounds + 1):
        for c in range(cohort):
            parts = dict(zip(CLIENT_TIME_COLUMNS, rng.uniform(0.0, 2.0, len(CLIENT_TIME_COLUMNS)), strict=True))
            sinr = float(rng.normal(5.0, 6.0))
            row = {col: 0 for col in CLIENTS_COLUMNS}
            row.update(round=r, client=c, outcome="kept" if sinr > -5 else "outage", distance_m=100.0 + 10 * c, los=-1,
                       sinr_db=sinr, snr_db=sinr + 1, uplink_share_hz=bandwidth_hz / cohort, cqi="",
                       uplink_rate_bps=bandwidth_hz / cohort * np.log2(1 + 10 ** (sinr / 10)), downlink_rate_bps="",
                       **parts)
            row.update({col: "" for col in GRANT_COLUMNS})  # the static split: no grants recorded
            row[CLIENT_SPAN_COLUMN] = sum(parts.values())
            rows.append(row)
    with open(run_dir / CLIENTS_FILE, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(CLIENTS_COLUMNS))
        w.writeheader()
        w.writerows(rows)
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("radio")
    for si, bw in enumerate(BANDWIDTHS_HZ):
        for a in ALGOS:
            for s in SEEDS:
                d = write_run(root / f"bw{si}" / a / f"seed{s}", a, s, overrides={"cell.uplink_bandwidth_hz": bw},
                              setting_index=si)
                write_clients(d, s, bw)
    return load_study(root)


@pytest.mark.slow
def test_breakdown_parts_add_up_to_the_span_and_bars_stack_them(study):
    clients = study.clients
    assert len(clients) == len(BANDWIDTHS_HZ) * len(ALGOS) * len(SEEDS) * 5 * 3
    table = time_breakdown(clients)
    assert len(table) == 4 and (table["n_runs"] == 3).all() and (table["client_rounds"] == 45).all()
    np.testing.assert_allclose(table[list(CLIENT_TIME_COLUMNS)].sum(axis=1), table[CLIENT_SPAN_COLUMN])
    fig = breakdown_figure(table, study.settings, ALGOS)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(bars) == 4 * len(CLIENT_TIME_COLUMNS)
    tops = {}
    for b in bars:
        tops[round(b.get_x(), 6)] = max(tops.get(round(b.get_x(), 6), 0.0), b.get_y() + b.get_height())
    np.testing.assert_allclose(sorted(tops.values()), sorted(table[CLIENT_SPAN_COLUMN]))
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(TIME_PART_LABELS.values())
    assert ax.get_ylabel() == "mean client time per round (s)" and not fig.texts  # no caption in the image


@pytest.mark.slow
def test_each_group_of_bars_is_labelled_with_its_setting(study):
    table = time_breakdown(study.clients)
    third = table[table["algorithm"] == "fedavg"].assign(algorithm="splitfed_v1")
    for algorithms, table_of in ((ALGOS, table), ((*ALGOS, "splitfed_v1"), pd.concat([table, third]))):
        # three bars a group: each group's centre is its middle bar's tick, which must not hide the label
        ax = breakdown_figure(table_of, study.settings, algorithms).axes[0]
        labels = [t.get_text() for t in ax.get_xticklabels(minor=True)]
        assert len(labels) == len(study.settings) and all(labels), labels
        assert [t.get_text() for t in ax.get_xticklabels()] == list(algorithms) * len(study.settings)


@pytest.mark.slow
def test_cdfs_have_one_line_per_setting_and_end_at_one(study):
    clients = study.clients
    for column in ("sinr_db", "uplink_rate_bps"):
        fig = cdf_figure(clients, column, study.settings)
        lines = fig.axes[0].lines
        assert len(lines) == 2 and all(ln.get_ydata()[-1] == 1.0 for ln in lines)
        assert all("(45 client-rounds)" not in t.get_text() for t in fig.legends[0].get_texts())
        assert all("(90 client-rounds)" in t.get_text() for t in fig.legends[0].get_texts())
    assert cdf_figure(clients, "uplink_rate_bps", study.settings).axes[0].get_xscale() == "log"


@pytest.mark.slow
def test_energy_per_client_and_jain_index(study):
    energy = client_energy(study)
    assert len(energy) == 12 * 10
    fair = energy_fairness(energy)
    # synthetic_runs: client c spends a (c + 1)/55 share of every round's energy
    assert fair["jain_mean"].to_numpy() == pytest.approx(55 ** 2 / (10 * 385))
    fig = energy_figure(energy, fair, study.settings, ALGOS)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(fig.axes[0].lines) == 4 and all(t.endswith("(Jain's index 0.79)") for t in texts)


@pytest.mark.slow
def test_sweep_against_a_numeric_field(study):
    assert numeric_fields(study) == ["cell.uplink_bandwidth_hz"]
    (rest, points), = sweep_groups(study, "cell.uplink_bandwidth_hz")
    assert rest == "" and [x for x, _ in points] == list(BANDWIDTHS_HZ)
    figs = sweep_figures(study, ALGOS, (0.3,), 6.4, set(), n_boot=200)
    assert [f.stem for f in figs] == ["figures/sweep/tta_s_vs_uplink_bandwidth_hz",
                                      "figures/sweep/final_test_accuracy_vs_uplink_bandwidth_hz"]
    ax = figs[0].figure.axes[0]
    assert ax.get_xlabel() == "cell.uplink_bandwidth (MHz)" and "3 seeds" not in figs[0].caption
    assert len([ln for ln in ax.lines if ln.get_marker() == "o"]) == 2  # one line per algorithm
    assert "(3/3, 3/3 seeds)" in figs[0].figure.legends[0].get_texts()[0].get_text()


@pytest.mark.slow
def test_radio_figures_only_for_runs_that_recorded_them(study, tmp_path):
    figs = radio_figures(study, ALGOS, 6.4, set())
    assert [f.stem.rsplit("/", 1)[1] for f in figs] == ["round_time_breakdown", "sinr_cdf", "uplink_rate_cdf",
                                                        "client_energy_cdf"]  # no downlink rate: all empty
    bare = write_run(tmp_path / "bare", "scala", 0, with_rounds_csv=False)
    assert radio_figures(load_study(bare), ALGOS, 6.4, set()) == []


def test_the_report_reads_clients_csv_through_the_one_reader(study):
    """StudyData.clients is readers.read_clients per run, with the run's keys in front (one reader)."""
    run = study.runs.iloc[0]
    mine = study.clients.loc[study.clients["run_id"] == run["run_id"], list(CLIENTS_COLUMNS)].reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, read_clients(Path(run["path"]))[list(CLIENTS_COLUMNS)])
    assert list(study.clients.columns[:4]) == ["run_id", "setting", "algorithm", "seed"]


def test_the_uplink_rate_cdf_plots_the_rate_a_client_got() -> None:
    """Under a dynamic scheduler the scheduled rate (clients.csv's share rate is the static share's,
    what the outage rule judges); under the static split, the share's rate."""
    from sfl_sim.analysis.radio_data import UPLINK_RATE_GOT, with_uplink_rate_got

    clients = pd.DataFrame({"uplink_rate_bps": [10e6, 10e6, 4e6],
                            "uplink_scheduled_rate_bps": [25e6, 3e6, np.nan]})  # RR, RR, static
    assert with_uplink_rate_got(clients)[UPLINK_RATE_GOT].tolist() == [25e6, 3e6, 4e6]
    assert "scheduled rate" in cdf_caption(UPLINK_RATE_GOT)


def _crowded_breakdown(n_settings: int, algorithms: tuple[str, ...]) -> pd.DataFrame:
    rows = []
    for i in range(n_settings):
        for a in algorithms:
            rows.append({"setting": f"cell.uplink_bandwidth_hz={5 * (i + 1)}e+06, scheduler=proportional_fair",
                         "algorithm": a, "n_runs": 2, "client_rounds": 10,
                         **{p: 0.1 * (k + 1) for k, p in enumerate(CLIENT_TIME_COLUMNS)}})
    table = pd.DataFrame(rows)
    table[CLIENT_SPAN_COLUMN] = table[list(CLIENT_TIME_COLUMNS)].sum(axis=1)
    return table


@pytest.mark.parametrize("n_settings, algorithms", [(2, ("fedavg", "fedasync")),
                                                    (3, ("fedavg", "fedbuff", "scala_semiasync", "async_sfl")),
                                                    (1, ("fedavg", "fedbuff", "fedasync", "scala", "splitfed_v1"))])
def test_breakdown_tick_labels_do_not_overlap_at_column_width(n_settings, algorithms):
    table = _crowded_breakdown(n_settings, algorithms)
    settings = list(dict.fromkeys(table["setting"]))
    fig = breakdown_figure(table, settings, algorithms, width_in=3.5)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    major, minor = ax.get_xticklabels(), ax.get_xticklabels(minor=True)
    assert [t.get_text() for t in major] == list(algorithms) * n_settings
    assert not text_boxes_overlap(major, renderer)
    assert not text_boxes_overlap(minor, renderer)
    assert not text_boxes_overlap([*major, *minor], renderer, pad_px=0.0)  # settings below the algorithms


def test_energy_curves_all_look_different_and_jain_is_named():
    settings = [f"bw={k}" for k in range(9)]
    algorithms = ["fedavg", "scala"]
    energy = pd.DataFrame([{"run_id": f"{s}-{a}", "setting": s, "algorithm": a, "seed": 0, "client": c,
                            "energy_j": 1.0 + c + k}
                           for k, s in enumerate(settings) for a in algorithms for c in range(6)])
    fig = energy_figure(energy, energy_fairness(energy), settings, algorithms, width_in=3.5)
    lines = fig.axes[0].lines
    assert len(lines) == 18
    looks = {(ln.get_color(), ln.get_linestyle(), ln.get_marker()) for ln in lines}
    assert len(looks) == 18  # no two of the 18 curves drawn alike
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert all("(Jain's index " in t and "J =" not in t for t in texts), texts


def test_sweep_axis_in_mhz_with_ticks_at_the_swept_values(study):
    figs = sweep_figures(study, ALGOS, (0.3,), 3.5, set(), n_boot=200)
    fig = figs[0].figure
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_xlabel() == "cell.uplink_bandwidth (MHz)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["5", "20"]
    assert not ax.xaxis.get_offset_text().get_text()  # no "1e7" beside the axis


@pytest.mark.slow
def test_sweep_lines_by_a_setting_field(tmp_path):
    root = tmp_path / "runs"
    for si, (bw, sched) in enumerate([(b, s) for s in ("rr", "pf") for b in BANDWIDTHS_HZ]):
        for s in (0, 1):
            write_run(root / f"p{si}" / f"seed{s}", "fedavg", s, setting_index=si,
                      overrides={"cell.uplink_bandwidth_hz": bw, "cell.scheduler": sched})
    st = load_study(root)
    per_value = sweep_figures(st, ("fedavg",), (), 3.5, set(), n_boot=200)
    assert len(per_value) == 2  # one figure per scheduler
    with pytest.raises(ValueError, match=r"^lines: got 'schedulr'; allowed: a setting field of the study "):
        line_field_of(st, "schedulr")
    figs = sweep_figures(st, ("fedavg",), (), 3.5, set(), n_boot=200, line_field=line_field_of(st, "scheduler"))
    assert len(figs) == 1
    texts = [t.get_text() for t in figs[0].figure.legends[0].get_texts()]
    assert sorted(t.split(" (")[0] for t in texts) == ["fedavg, scheduler=pf", "fedavg, scheduler=rr"]


def test_a_target_label_hides_no_end_marker(study):
    m = study.metrics.loc[study.metrics["setting"] == study.settings[0]]
    last = m.sort_values("round").groupby("run_id").tail(1)
    target = float(last["test_accuracy"].iloc[0])  # a seed that ends right on the target line
    fig = setting_figure(study, study.settings[0], targets=(target,), width_in=3.5)
    fig.canvas.draw()
    ax = fig.axes[0]
    (label,) = ax.texts
    box = label.get_window_extent(fig.canvas.get_renderer())
    ends = [ln for ln in ax.lines if ln.get_marker() == "o" and ln.get_linestyle() == "None"]
    assert ends and all(label.get_zorder() < ln.get_zorder() for ln in ends)
    for ln in ends:
        pts = ax.transData.transform(ln.get_xydata())
        assert not any(box.contains(x, y) for x, y in pts)
