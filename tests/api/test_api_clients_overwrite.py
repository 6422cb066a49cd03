"""The API's per-client record (``RunResult.clients``, ``load_study``'s ``clients``) and its explicit
``overwrite=True`` (``--overwrite``): the old run's files go only once the new scenario validated."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import sfl_sim
from sfl_sim.analysis.readers import read_clients
from sfl_sim.analysis.study_data import load_study
from sfl_sim.cli import main
from sfl_sim.runs.rundir.schema import CLIENTS_COLUMNS, CLIENTS_FILE
from tests.helpers import small_scenario, write_yaml


def test_a_run_without_the_file_reads_as_an_empty_frame_with_the_columns(tmp_path: Path) -> None:
    frame = read_clients(tmp_path)
    assert list(frame.columns) == list(CLIENTS_COLUMNS) and frame.empty
    assert pd.api.types.is_numeric_dtype(frame["sinr_db"])


def test_a_file_written_before_a_column_existed_reads_in_todays_columns(tmp_path: Path) -> None:
    older = [c for c in CLIENTS_COLUMNS if c != "cqi"]
    row = {c: "1" for c in older} | {"outcome": "outage"}
    (tmp_path / CLIENTS_FILE).write_text(",".join(older) + "\n" + ",".join(row[c] for c in older) + "\n")
    frame = read_clients(tmp_path)
    assert list(frame.columns) == list(CLIENTS_COLUMNS) and frame["cqi"].isna().all()
    assert frame["outcome"].tolist() == ["outage"] and frame["span_s"].tolist() == [1.0]


@pytest.mark.slow
def test_clients_reach_the_api_and_the_study_and_overwrite_replaces_a_run(tmp_path: Path, capsys) -> None:
    path = write_yaml(tmp_path, small_scenario(rounds=1, train=200, test=100))
    out = tmp_path / "out"
    (first,) = sfl_sim.run(path, output_dir=out)
    assert list(first.clients.columns) == list(CLIENTS_COLUMNS)
    assert len(first.clients) == 3 and first.clients["round"].tolist() == [1, 1, 1]  # 6 clients x 0.5
    study = load_study(out)
    assert len(study.clients) == 3 and study.clients["algorithm"].unique().tolist() == ["fedavg"]

    (out / "fedavg" / "mine.txt").write_text("kept")
    with pytest.raises(sfl_sim.RunDirError, match="--overwrite"):
        sfl_sim.run(path, output_dir=out)
    with pytest.raises(sfl_sim.RunDirError, match="overwrite: got it with resume"):
        sfl_sim.run(path, output_dir=out, overwrite=True, resume=True)
    with pytest.raises(sfl_sim.ConfigError, match="overwrite: got it with seeds"):
        sfl_sim.run(path, output_dir=out, overwrite=True, seeds=[0, 1])
    with pytest.raises(sfl_sim.ConfigError, match="rounds"):  # refused before anything is removed
        sfl_sim.run(path, output_dir=out, overwrite=True, overrides=["rounds=-1"])
    assert (out / "fedavg" / CLIENTS_FILE).exists()

    (again,) = sfl_sim.run(path, output_dir=out, overwrite=True, overrides=["metrics.client_record=false"])
    assert again.status == "complete" and again.clients.empty  # the old clients.csv went with the old run
    assert not (out / "fedavg" / CLIENTS_FILE).exists() and (out / "fedavg" / "mine.txt").read_text() == "kept"
    assert main(["scenario", str(path), "-o", str(out), "--overwrite", "--no-progress"]) == 0
    assert (out / "fedavg" / CLIENTS_FILE).exists()


def test_a_file_with_its_header_only_reads_as_an_empty_frame(tmp_path: Path) -> None:
    (tmp_path / CLIENTS_FILE).write_text(",".join(CLIENTS_COLUMNS) + "\n")  # a run that failed in round 1
    frame = read_clients(tmp_path)
    assert frame.empty and list(frame.columns) == list(CLIENTS_COLUMNS)
