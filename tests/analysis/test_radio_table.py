"""The report's "what the radio lost" table against the runs' own rounds.csv and clients.csv."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from sfl_sim.analysis import load_study
from sfl_sim.analysis.radio_table import DROPS_SHORTEN_ROUNDS, has_radio_losses, radio_table
from sfl_sim.analysis.report import write_report
from sfl_sim.cli import main
from sfl_sim.runs.rundir.schema import CLIENT_KEPT
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
                           "backhaul_bytes": [3e6, 5e6]})

    class _Study:  # only what has_radio_losses and _per_run read
        clients = pd.DataFrame()
    study = _Study()
    study.rounds = rounds  # type: ignore[attr-defined]
    assert has_radio_losses(study)  # type: ignore[arg-type]
    row = _per_run(study).iloc[0]  # type: ignore[arg-type]
    assert (row["handovers"], row["migrations"], row["backhaul_bytes"]) == (1.5, 1.0, 4.0)
    assert row["handover_lost_s"] == pytest.approx(0.175)
