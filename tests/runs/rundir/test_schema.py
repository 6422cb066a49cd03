"""The run-file schema is defined once (sfl_sim.runs.rundir.schema) and shared by writer and reader."""

from __future__ import annotations

import math
import subprocess
import sys


def test_writer_and_reader_share_one_schema():
    from sfl_sim.analysis import runs
    from sfl_sim.runs.rundir import files as run_dir
    from sfl_sim.runs.rundir import schema

    for name in ("SCHEMA_VERSION", "METRICS_COLUMNS", "ROUNDS_COLUMNS", "CELL_COLUMNS"):
        assert getattr(run_dir, name) is getattr(schema, name)
    assert runs.METRICS_COLUMNS is schema.METRICS_COLUMNS
    assert runs.SCHEMA_VERSION is schema.SCHEMA_VERSION
    assert schema.ROUNDS_COLUMNS[:-2] == schema.ROUNDS_NUMERIC_COLUMNS  # all but cohort and dropped
    assert schema.ROUNDS_COLUMNS[-2:] == ("cohort", "dropped")
    assert set(schema.CUMULATIVE_COLUMNS) <= set(schema.METRICS_COLUMNS) & set(schema.ROUNDS_COLUMNS)


def test_writer_uses_the_schema_file_names(tmp_path):
    from sfl_sim.runs.rundir import schema
    from sfl_sim.runs.rundir.files import RUN_FILES, RunDir

    w = RunDir(tmp_path / "run")
    w.write_scenario({"seed": 0})
    w.write_summary({"status": "running"})
    w.start_logs(num_classes=2)
    assert (tmp_path / "run" / schema.SCENARIO_FILE).is_file()
    assert (tmp_path / "run" / schema.SUMMARY_FILE).is_file()
    assert w.metrics_path.name == schema.METRICS_FILE
    assert w.checkpoint_path.name == schema.CHECKPOINT_FILE
    assert w.read_summary()["schema_version"] == schema.SCHEMA_VERSION
    assert w.read_scenario()["seed"] == 0  # in today's shape: every other field at its default
    assert w.present() == {schema.SCENARIO_FILE, schema.SUMMARY_FILE, schema.METRICS_FILE, schema.ROUNDS_FILE,
                           schema.CLASSES_FILE}
    assert set(RUN_FILES) == ({getattr(schema, n) for n in dir(schema) if n.endswith("_FILE")}
                              - {schema.STUDY_FILE, schema.STUDY_STATUS_FILE})
    assert w.classes_path.read_text().splitlines()[0] == ",".join(schema.classes_columns(2))


def test_schema_import_is_light():
    code = (
        "import sfl_sim.runs.rundir.schema, sys; "
        "ours = ('sfl_sim', 'sfl_sim._legacy_imports', 'sfl_sim.runs', 'sfl_sim.runs.rundir', "
        "'sfl_sim.runs.rundir.schema'); "
        "bad = [m for m in sys.modules if m in ('pandas', 'matplotlib', 'torch', 'simpy') "
        "or m.startswith('sfl_sim') and m not in ours]; "
        "assert not bad, bad"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_best_trained_accuracy_is_defined_once_and_used_by_every_reader(tmp_path):
    import pandas as pd

    from sfl_sim.analysis.tta import best_test_accuracy
    from sfl_sim.runs.rundir.schema import best_trained_accuracy

    # round 0 (the initial model) is left out, a NaN is skipped, the first round reaching the max wins
    rounds, acc = [0, 1, 2, 3, 4], [0.9, 0.5, float("nan"), 0.7, 0.7]
    assert best_trained_accuracy(rounds, acc) == (0.7, 3)
    assert best_trained_accuracy([0], [0.9]) is None
    assert best_test_accuracy(pd.DataFrame({"round": rounds, "test_accuracy": acc})) == 0.7
    assert math.isnan(best_test_accuracy(pd.DataFrame({"round": [0], "test_accuracy": [0.9]})))


def test_run_statuses_are_one_literal_and_its_constants():
    from typing import get_args

    from sfl_sim.runs.rundir import schema

    assert schema.RUN_STATUSES == get_args(schema.RunStatus) == (schema.RUNNING, schema.COMPLETE, schema.DIVERGED,
                                                                   schema.FAILED)
