"""Tests for the offline analysis package (runs, time-to-accuracy, plots)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from sfl_sim.analysis import (
    METRICS_COLUMNS,
    Run,
    RunFormatError,
    load_run,
    load_runs,
    plot_accuracy_vs_time,
    plot_runs,
    plot_uplink_vs_time,
    summary_table,
    time_to_accuracy_s,
)

HEADER = "round,sim_time_s,test_accuracy,test_loss,uplink_bytes,downlink_bytes,client_flops,server_flops,host_time_s"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# (round, sim_time_s, test_accuracy, test_loss, uplink, downlink, client_flops, server_flops, host_time_s)
ROWS_A = [
    (1, 10.0, 0.40, 1.60, 1_000_000, 2_000_000, 1.0e9, 2.0e9, 0.5),
    (2, 20.5, 0.65, 1.10, 2_000_000, 4_000_000, 2.0e9, 4.0e9, 1.0),
    (3, 31.0, 0.70, 0.90, 3_000_000, 6_000_000, 3.0e9, 6.0e9, 1.5),
    (4, 42.0, 0.68, 0.95, 4_000_000, 8_000_000, 4.0e9, 8.0e9, 2.0),
]
ROWS_B = [
    (2, 5.0, 0.30, 2.00, 500_000, 700_000, 5.0e8, 6.0e8, 0.25),
    (4, 9.0, 0.55, 1.40, 1_000_000, 1_400_000, 1.0e9, 1.2e9, 0.75),
    (6, 14.0, 0.62, 1.20, 1_500_000, 2_100_000, 1.5e9, 1.8e9, 1.25),
]


def write_run(
    root: Path,
    name: str,
    rows,
    *,
    label: str | None,
    algorithm: str,
    status: str = "complete",
    schema_version=1,
    extra_summary: dict | None = None,
    header: str = HEADER,
) -> Path:
    run_dir = root / name
    run_dir.mkdir(parents=True)
    (run_dir / "scenario.yaml").write_text(
        f"algorithm:\n  name: {algorithm}\n  cut_layer: 2\nseed: 7\nclients:\n  count: 4\n",
        encoding="utf-8",
    )
    lines = [header] + [",".join(repr(v) if isinstance(v, float) else str(v) for v in r) for r in rows]
    (run_dir / "metrics.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    last = rows[-1] if rows else None
    summary = {
        "schema_version": schema_version,
        "algorithm": algorithm,
        "status": status,
        "rounds_completed": last[0] if last else 0,
        "final_test_accuracy": last[2] if last else float("nan"),
        "final_sim_time_s": last[1] if last else 0.0,
        "host_time_s": last[-1] if last else 0.0,
        "some_future_key": {"nested": [1, 2]},
    }
    if label is not None:
        summary["label"] = label
    if extra_summary:
        summary.update(extra_summary)
    (run_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return run_dir


@pytest.fixture
def two_runs(tmp_path: Path) -> list[Path]:
    a = write_run(tmp_path, "run_a", ROWS_A, label="SCALA cut=2", algorithm="scala")
    b = write_run(tmp_path, "run_b", ROWS_B, label=None, algorithm="sfl_v1", status="running")
    return [a, b]


# --------------------------------------------------------------------------- runs


def test_load_run_round_trips(two_runs):
    run = load_run(two_runs[0])
    assert isinstance(run, Run)
    assert run.path == two_runs[0]
    assert run.label == "SCALA cut=2"
    assert run.scenario["algorithm"]["name"] == "scala"
    assert run.scenario["seed"] == 7
    assert run.summary["some_future_key"] == {"nested": [1, 2]}  # unknown keys tolerated
    assert run.summary["status"] == "complete"
    assert list(run.metrics.columns) == list(METRICS_COLUMNS)
    expected = pd.DataFrame(ROWS_A, columns=list(METRICS_COLUMNS))
    pd.testing.assert_frame_equal(run.metrics, expected, check_dtype=False)
    assert run.metrics["round"].dtype.kind == "i"
    assert run.algorithm == "scala"


def test_label_falls_back_to_directory_name(two_runs):
    run = load_run(str(two_runs[1]))  # str paths accepted too
    assert run.label == "run_b"
    assert run.summary["status"] == "running"


def test_load_runs_keeps_order(two_runs):
    runs = load_runs(reversed(two_runs))
    assert [r.label for r in runs] == ["run_b", "SCALA cut=2"]
    with pytest.raises(TypeError):
        load_runs(two_runs[0])


def test_header_only_metrics_loads(tmp_path):
    run = load_run(write_run(tmp_path, "fresh", [], label="fresh", algorithm="fl", status="running"))
    assert len(run.metrics) == 0
    assert list(run.metrics.columns) == list(METRICS_COLUMNS)
    row = summary_table([run], targets=(0.5,)).iloc[0]
    assert row["rounds_completed"] == 0
    assert math.isnan(row["final_test_accuracy"]) and math.isnan(row["tta_0.50_s"])


def test_bad_schema_version_names_dir_and_versions(tmp_path):
    d = write_run(tmp_path, "future", ROWS_A, label="x", algorithm="scala", schema_version=2)
    with pytest.raises(RunFormatError) as exc:
        load_run(d)
    msg = str(exc.value)
    assert f"run dir {d} has schema_version 2; this analysis reads 1" in msg


def test_missing_schema_version_is_an_error(tmp_path):
    d = write_run(tmp_path, "noversion", ROWS_A, label="x", algorithm="scala")
    summary = json.loads((d / "summary.json").read_text())
    del summary["schema_version"]
    (d / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(RunFormatError, match="schema_version"):
        load_run(d)


@pytest.mark.parametrize("missing", ["scenario.yaml", "metrics.csv", "summary.json"])
def test_missing_file_is_named(two_runs, missing):
    (two_runs[0] / missing).unlink()
    with pytest.raises(FileNotFoundError, match=missing.replace(".", r"\.")):
        load_run(two_runs[0])


def test_missing_dir_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        load_run(tmp_path / "nope")


def test_missing_column_is_named(tmp_path):
    header = HEADER.replace(",test_loss", "")
    rows = [r[:3] + r[4:] for r in ROWS_A]
    d = write_run(tmp_path, "r", rows, label="x", algorithm="scala", header=header)
    with pytest.raises(RunFormatError) as exc:
        load_run(d)
    assert "test_loss" in str(exc.value) and "metrics.csv" in str(exc.value)


def test_extra_column_is_named(tmp_path):
    header = HEADER + ",wall_clock"
    rows = [r + (1.0,) for r in ROWS_A]
    d = write_run(tmp_path, "r", rows, label="x", algorithm="scala", header=header)
    with pytest.raises(RunFormatError) as exc:
        load_run(d)
    assert "wall_clock" in str(exc.value) and "metrics.csv" in str(exc.value)


def test_non_numeric_value_is_named(tmp_path):
    rows = [list(r) for r in ROWS_A]
    rows[1][2] = "oops"
    d = write_run(tmp_path, "r", [tuple(r) for r in rows], label="x", algorithm="scala")
    with pytest.raises(RunFormatError, match="test_accuracy"):
        load_run(d)


# --------------------------------------------------------------------------- tta


def test_time_to_accuracy_hand_values(two_runs):
    m = load_run(two_runs[0]).metrics
    assert time_to_accuracy_s(m, 0.40) == 10.0  # exact equality counts as reached
    assert time_to_accuracy_s(m, 0.50) == 20.5
    assert time_to_accuracy_s(m, 0.65) == 20.5  # exact equality
    assert time_to_accuracy_s(m, 0.66) == 31.0
    assert time_to_accuracy_s(m, 0.70) == 31.0  # exact equality; later dip ignored
    assert time_to_accuracy_s(m, 0.0) == 10.0
    assert math.isnan(time_to_accuracy_s(m, 0.71))
    assert math.isnan(time_to_accuracy_s(m, 1.0))


def test_time_to_accuracy_uses_round_order_not_row_order():
    m = pd.DataFrame(
        {"round": [3, 1, 2], "sim_time_s": [30.0, 10.0, 20.0], "test_accuracy": [0.9, 0.1, 0.8]}
    )
    assert time_to_accuracy_s(m, 0.8) == 20.0


def test_time_to_accuracy_rejects_percentages_and_bad_frames():
    m = pd.DataFrame({"sim_time_s": [1.0], "test_accuracy": [0.5]})
    with pytest.raises(ValueError, match="fraction"):
        time_to_accuracy_s(m, 70)
    with pytest.raises(KeyError, match="test_accuracy"):
        time_to_accuracy_s(pd.DataFrame({"sim_time_s": [1.0]}), 0.5)
    assert math.isnan(time_to_accuracy_s(m.iloc[0:0], 0.1))


def test_summary_table_columns_and_values(two_runs):
    runs = load_runs(two_runs)
    table = summary_table(runs, targets=(0.5, 0.7))
    assert list(table.columns) == [
        "label",
        "algorithm",
        "seed",
        "status",
        "evaluated",
        "rounds_completed",
        "rounds_planned",
        "client_updates",
        "final_test_accuracy",
        "best_test_accuracy",
        "final_sim_time_s",
        "host_time_s",
        "uplink_bytes",
        "downlink_bytes",
        "client_flops",
        "server_flops",
        "client_energy_j",
        "client_rounds",
        "dropped_clients",
        "drop_rate",
        "rounds_all_lost",
        "uplink_attempts",
        "outage_rate",
        "retransmissions",
        "dropped_transmissions",
        "harq_retransmissions",
        "tta_0.50_s",
        "tta_0.70_s",
    ]
    assert len(table) == 2
    a, b = table.iloc[0], table.iloc[1]
    assert a["label"] == "SCALA cut=2" and a["algorithm"] == "scala" and a["status"] == "complete"
    assert a["rounds_completed"] == 4 and a["seed"] == 7
    assert a["final_test_accuracy"] == pytest.approx(0.68)
    assert a["best_test_accuracy"] == pytest.approx(0.70)
    assert a["final_sim_time_s"] == 42.0
    assert a["host_time_s"] == 2.0
    assert a["uplink_bytes"] == 4_000_000 and a["downlink_bytes"] == 8_000_000
    assert a["client_flops"] == 4.0e9 and a["server_flops"] == 8.0e9
    assert a["tta_0.50_s"] == 20.5 and a["tta_0.70_s"] == 31.0

    assert b["label"] == "run_b" and b["algorithm"] == "sfl_v1" and b["status"] == "running"
    assert b["rounds_completed"] == 6
    assert b["best_test_accuracy"] == pytest.approx(0.62)
    assert b["final_sim_time_s"] == 14.0 and b["host_time_s"] == 1.25
    assert b["uplink_bytes"] == 1_500_000 and b["server_flops"] == 1.8e9
    assert b["tta_0.50_s"] == 9.0
    assert math.isnan(b["tta_0.70_s"])


def test_summary_table_default_targets_and_odd_target_names(two_runs):
    runs = load_runs(two_runs)
    table = summary_table(runs)
    assert "tta_0.70_s" in table.columns
    odd = summary_table(runs, targets=[0.655])
    assert list(odd.columns)[-1] == "tta_0.655_s"
    assert odd["tta_0.655_s"].iloc[0] == 31.0


# --------------------------------------------------------------------------- plots


def _assert_png(path: Path) -> None:
    assert path.is_file()
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 1000


@pytest.mark.slow
def test_individual_plots_write_png(two_runs, tmp_path):
    runs = load_runs(two_runs)
    acc = plot_accuracy_vs_time(runs, tmp_path / "out" / "acc.png")
    up = plot_uplink_vs_time(runs, str(tmp_path / "out" / "up.png"))
    assert acc == tmp_path / "out" / "acc.png"
    assert isinstance(up, Path)
    _assert_png(acc)
    _assert_png(up)
    with pytest.raises(ValueError):
        plot_accuracy_vs_time([], tmp_path / "empty.png")


def test_plot_runs_creates_out_dir(two_runs, tmp_path):
    out_dir = tmp_path / "plots" / "nested"
    paths = plot_runs(two_runs, out_dir)
    assert [p.name for p in paths] == ["accuracy_vs_time.png", "uplink_vs_time.png"]
    assert all(p.parent == out_dir for p in paths)
    for p in paths:
        _assert_png(p)


# --------------------------------------------------------------------------- imports


@pytest.mark.slow
def test_analysis_never_imports_torch_simpy_or_the_simulator():
    """The analysis reads run directories through their schema: of sfl_sim it loads only itself, the
    run directory's package, the error types (``sfl_sim.errors``, no imports of its own: a report
    refuses an output folder with :class:`~sfl_sim.errors.RunDirError`) and the package roots on
    the way there."""
    code = (
        "import sfl_sim.analysis, sfl_sim.analysis.runs, sfl_sim.analysis.tta, sfl_sim.analysis.plots, "
        "sfl_sim.runs.rundir.schema, sfl_sim.analysis.study_data, sfl_sim.analysis.stats, "
        "sfl_sim.analysis.tables, sfl_sim.analysis.figures, sfl_sim.analysis.report; import sys; "
        "ours = ('sfl_sim', 'sfl_sim._legacy_imports', 'sfl_sim.errors', 'sfl_sim.runs', 'sfl_sim.runs.rundir'); "
        "bad = [m for m in sys.modules if m in ('torch', 'simpy') or m.startswith('sfl_sim') and m not in ours "
        "and not m.startswith(('sfl_sim.analysis', 'sfl_sim.runs.rundir.'))]; "
        "assert not bad, bad"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
