"""The report's "what the radio lost" table against the runs' own rounds.csv and clients.csv."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sfl_sim.analysis import load_study
from sfl_sim.analysis.radio_table import DROPS_SHORTEN_ROUNDS, has_radio_losses, radio_table
from sfl_sim.analysis.report import write_report
from sfl_sim.cli import main
from sfl_sim.runs.rundir.schema import CLIENT_KEPT, CLIENT_TIME_COLUMNS
from tests.helpers import small_scenario, write_yaml


@pytest.mark.slow
def test_drops_outage_and_harq_per_setting_match_the_runs(tmp_path: Path) -> None:
    data = {**small_scenario(algorithms=["fedavg", "splitfed_v1"], rounds=3, clients=6, participation=1.0),
            "cell": {"rate": {"name": "mcs_table"}, "fading": {"name": "rayleigh"}, "coherence": "per_transmission",
                     "uplink_bandwidth_hz": 1.0e6, "harq": {"mode": "sampled", "max_transmissions": 4},
                     "outage": {"min_snr_db": 26.0, "on_outage": "retransmit", "max_attempts": 2}}}
    out = tmp_path / "out"
    assert main(["scenario", str(write_yaml(tmp_path, data)), "-o", str(out), "--no-progress"]) == 0
    study = load_study(out)
    assert has_radio_losses(study)
    table = radio_table(study).set_index("algorithm")
    for label in ("fedavg", "splitfed_v1"):
        rounds = pd.read_csv(out / label / "rounds.csv")
        clients = pd.read_csv(out / label / "clients.csv", keep_default_na=False)
        row = table.loc[label]
        assert row["drop_rate"] == pytest.approx(rounds["dropped_clients"].sum() / len(clients), rel=1e-12)
        failed = rounds["retransmissions"].sum() + rounds["dropped_transmissions"].sum()
        assert row["outage_rate"] == pytest.approx(failed / rounds["uplink_attempts"].sum(), rel=1e-12)
        assert row["harq_per_round"] == pytest.approx(rounds["harq_retransmissions"].mean(), rel=1e-12)
        assert row["round_s"] == pytest.approx(rounds["round_sim_time_s"].mean(), rel=1e-12)
        by_cause = clients.loc[clients["outcome"] != CLIENT_KEPT, "outcome"].value_counts() / len(clients)
        for cause, share in by_cause.items():
            assert row[f"drops_{cause}"] == pytest.approx(share, rel=1e-12)
        assert row["compute_s"] == pytest.approx(clients["compute_s"].mean(), rel=1e-12)
    report = tmp_path / "report"
    written = write_report([out], report)
    text = (report / "radio.md").read_text()
    assert "What the radio lost" in text and "drop %" in text
    assert (DROPS_SHORTEN_ROUNDS in text) == bool((table["drop_rate"] > 0).any())
    assert report / "radio.csv" in written


def test_a_lossless_study_has_no_radio_table(tmp_path: Path) -> None:
    rounds = pd.DataFrame({"run_id": [0], "setting": ["s"], "algorithm": ["a"], "seed": [0], "dropped_clients": [0],
                           "retransmissions": [0], "dropped_transmissions": [0], "harq_retransmissions": [0]})

    class _Study:  # only what has_radio_losses reads
        pass
    study = _Study()
    study.rounds = rounds  # type: ignore[attr-defined]
    assert not has_radio_losses(study)  # type: ignore[arg-type]
    study.rounds = rounds.assign(harq_retransmissions=[1])  # type: ignore[attr-defined]
    assert has_radio_losses(study)  # type: ignore[arg-type]


def test_a_study_with_handovers_shows_them_per_round(tmp_path: Path) -> None:
    """rounds.csv's edge columns (a network with edge servers): the table appears for handovers alone and
    shows their per-round means, the backhaul in MB."""
    from sfl_sim.analysis.radio_table import _per_run

    rounds = pd.DataFrame({"run_id": [0, 0], "setting": ["s", "s"], "algorithm": ["a", "a"], "seed": [0, 0],
                           "dropped_clients": [0, 0], "retransmissions": [0, 0], "dropped_transmissions": [0, 0],
                           "harq_retransmissions": [0, 0], "uplink_attempts": [4, 4], "round_sim_time_s": [2.0, 4.0],
                           "handovers": [1, 2], "handover_lost_s": [0.05, 0.3], "migrations": [1, 1],
                           "backhaul_bytes": [3e6, 5e6], "backhaul_energy_j": [8 * 3e6 * 1e-6, 8 * 5e6 * 1e-6]})

    class _Study:  # only what has_radio_losses and _per_run read
        clients = pd.DataFrame()
    study = _Study()
    study.rounds = rounds  # type: ignore[attr-defined]
    assert has_radio_losses(study)  # type: ignore[arg-type]
    row = _per_run(study).iloc[0]  # type: ignore[arg-type]
    assert (row["handovers"], row["migrations"], row["backhaul_bytes"]) == (1.5, 1.0, 4.0)
    assert row["handover_lost_s"] == pytest.approx(0.175)
    assert row["backhaul_energy_j"] == pytest.approx(8 * 4e6 * 1e-6)  # J, not scaled
    # no energy ledger, or a rounds.csv older than the column: unknown, not 0
    study.rounds = rounds.assign(backhaul_energy_j=[np.nan, np.nan])  # type: ignore[attr-defined]
    assert np.isnan(_per_run(study).iloc[0]["backhaul_energy_j"])  # type: ignore[arg-type]


def _study_with_cells(cells: dict[int, list[float]], n_cells: dict[int, float], settings: dict[int, str]):
    """A StudyData of runs 0.. with the given clients.csv cells (one client-round each), summary n_cells
    (NaN: no network) and setting; nothing lost on the radio."""
    from sfl_sim.analysis.study_data import StudyData

    ids = sorted(cells)
    runs = pd.DataFrame({"run_id": ids, "setting": [settings[i] for i in ids], "algorithm": "a", "seed": ids,
                         "n_cells": [n_cells[i] for i in ids]})
    rounds = pd.DataFrame([{"run_id": i, "setting": settings[i], "algorithm": "a", "seed": i, "round": 1,
                            "dropped_clients": 0, "retransmissions": 0, "dropped_transmissions": 0,
                            "harq_retransmissions": 0, "uplink_attempts": len(cells[i]), "round_sim_time_s": 1.0}
                           for i in ids])
    clients = pd.DataFrame([{"run_id": i, "setting": settings[i], "algorithm": "a", "seed": i, "round": 1,
                             "client": k, "cell": c, "outcome": CLIENT_KEPT, **dict.fromkeys(CLIENT_TIME_COLUMNS, 0.5)}
                            for i in ids for k, c in enumerate(cells[i])])
    return StudyData(runs=runs, metrics=pd.DataFrame(), rounds=rounds, setting_fields=("f",),
                     settings=tuple(dict.fromkeys(settings[i] for i in ids)), algorithms=("a",), clients=clients)


def test_a_network_settings_cell_load_counts_idle_cells_and_no_link() -> None:
    """Per run: the largest and smallest share of its client-rounds a cell served (-1, no link, is no cell's;
    a cell that served none has 0), the mean over seeds; a run whose clients.csv does not say counts for
    none; a setting without a network shows none."""
    from sfl_sim.analysis.radio_table import has_cell_load, radio_layouts, radio_title

    cells = {0: [0, 0, 1, -1], 1: [2, 2, 2, 1],  # network, seeds 0 and 1; cell 2 (seed 0) and 0 (seed 1) idle
             2: [np.nan] * 4,  # network, seed 2: clients.csv written before its cell column
             3: [0, 0, 0, 0]}  # one cell, no network
    study = _study_with_cells(cells, {0: 3.0, 1: 3.0, 2: 3.0, 3: np.nan}, {0: "net", 1: "net", 2: "net", 3: "one"})
    assert has_cell_load(study)
    table = radio_table(study).set_index("setting")
    assert table.loc["net", "n_cells"] == 3
    assert table.loc["net", "cell_share_max"] == pytest.approx((2 / 4 + 3 / 4) / 2, rel=1e-12)
    assert table.loc["net", "cell_share_min"] == 0.0
    assert np.isnan(table.loc["one", ["n_cells", "cell_share_max", "cell_share_min"]].to_numpy(float)).all()
    layout = radio_layouts(table.reset_index(), study)[0]
    assert layout.title == radio_title(table) == "What the radio lost, and the cells' load"
    headers = [c[0] for c in layout.columns]
    rows = {g: dict(zip(headers, cells_, strict=True)) for g, [(_, cells_)] in layout.groups}
    assert [rows["net"][h] for h in ("cells", "busiest cell %", "least-busy cell %")] == ["3", "62.5", "0.0"]
    assert [rows["one"][h] for h in ("cells", "busiest cell %", "least-busy cell %")] == ["-", "-", "-"]


def test_runs_without_a_network_keep_the_table_as_it_was() -> None:
    from sfl_sim.analysis.radio_table import CELL_LOAD_COLUMNS, has_cell_load, radio_layouts

    study = _study_with_cells({0: [0, 0]}, {0: np.nan}, {0: "one"})
    assert not has_cell_load(study)
    table = radio_table(study)
    assert not set(CELL_LOAD_COLUMNS) & set(table.columns)
    layout = radio_layouts(table, study)[0]
    assert layout.title == "What the radio lost" and not any("cell" in c[0] for c in layout.columns)
    assert not any("network" in n for n in layout.notes)
