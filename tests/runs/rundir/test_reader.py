"""The torch-free reads of a run directory (:class:`sfl_sim.runs.rundir.reader.RunFiles`): the
analysis layer reads through them, not through the rules for older run directories directly."""
from __future__ import annotations

import ast
import math
import subprocess
import sys

from sfl_sim.runs.rundir.files import RunDir
from sfl_sim.runs.rundir.reader import RunFiles
from sfl_sim.runs.rundir.schema import CLASSES_FILE, ROUNDS_COLUMNS, ROUNDS_FILE
from tests.helpers import ROOT


def test_a_log_reads_in_todays_columns(tmp_path) -> None:
    files = RunFiles(tmp_path)
    assert files.log_text(ROUNDS_FILE) is None  # no file
    (tmp_path / ROUNDS_FILE).write_text("round,sim_time_s\r\n1,2.5\r\n")  # an older file: two columns
    header, row = files.log_text(ROUNDS_FILE).splitlines()
    assert header.split(",") == list(ROUNDS_COLUMNS)
    cells = dict(zip(ROUNDS_COLUMNS, row.split(","), strict=True))
    assert (cells["round"], cells["sim_time_s"]) == ("1", "2.5")
    assert {v for k, v in cells.items() if k not in ("round", "sim_time_s")} == {""}
    assert "per-class accuracy" in RunFiles.why_missing(CLASSES_FILE)
    assert isinstance(RunDir(tmp_path), RunFiles)  # the run's own reads are the same


def test_the_reader_imports_neither_torch_nor_the_engine() -> None:
    code = ("import sys; from sfl_sim.runs.rundir import reader; reader.sections_added_later(); "
            "bad = [m for m in sys.modules if m in ('torch', 'simpy') "
            "or m.startswith(('sfl_sim.engine', 'sfl_sim.algorithms'))]; assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_the_analysis_reads_run_directories_through_the_reader() -> None:
    direct = []
    for path in sorted((ROOT / "sfl_sim" / "analysis").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else [])
            direct += [f"{path.name}: {n}" for n in names if n.startswith("sfl_sim.runs.rundir.upgrade")]
    assert not direct, direct


def test_an_older_slots_log_reads_cell_0_only_without_a_network(tmp_path) -> None:
    import yaml

    from sfl_sim.runs.rundir.schema import SCENARIO_FILE, SLOTS_COLUMNS, SLOTS_FILE

    (tmp_path / SLOTS_FILE).write_text("round,slot,time_s,client,rbs,tb_bits,failed\n1,0,0.0,3,10,1200,0\n")
    files = RunFiles(tmp_path)
    for cell, read in [({"network": None}, "0"), ({}, "0"),  # one cell (a run made before networks: no field)
                       ({"network": {"name": "hexgrid", "n_sites": 7}}, "")]:  # a network: not recorded, unknown
        (tmp_path / SCENARIO_FILE).write_text(yaml.safe_dump({"cell": cell}))
        header, row = files.log_text(SLOTS_FILE).splitlines()
        assert header.split(",") == list(SLOTS_COLUMNS)
        assert row.split(",") == ["1", "0", "0.0", "3", "10", "1200", "0", read]


def test_an_older_clients_log_reads_cell_0_only_without_a_network(tmp_path) -> None:
    """clients.csv written before its cell column: one cell (no network) served every client-round, cell 0;
    a network run's rows do not say which cell served them (empty, unknown), as slots.csv's."""
    import yaml

    from sfl_sim.analysis.readers import read_clients
    from sfl_sim.runs.rundir.schema import CLIENTS_COLUMNS, CLIENTS_FILE, SCENARIO_FILE

    old = [c for c in CLIENTS_COLUMNS if c != "cell"]
    row = {c: "0" for c in old} | {"round": "1", "client": "3", "outcome": "kept", "uplink_bytes": "1200"}
    (tmp_path / CLIENTS_FILE).write_text(",".join(old) + "\n" + ",".join(row[c] for c in old) + "\n")
    files = RunFiles(tmp_path)
    for cell, read in [({"network": None}, "0"), ({}, "0"),  # one cell (a run made before networks: no field)
                       ({"network": {"name": "hexgrid", "n_sites": 7}}, "")]:  # a network: not recorded, unknown
        (tmp_path / SCENARIO_FILE).write_text(yaml.safe_dump({"cell": cell}))
        header, line = files.log_text(CLIENTS_FILE).splitlines()
        assert header.split(",") == list(CLIENTS_COLUMNS)
        got = dict(zip(CLIENTS_COLUMNS, line.split(","), strict=True))
        assert got["cell"] == read and all(got[c] == row[c] for c in old)
        frame = read_clients(tmp_path)  # the analysis reads it the same way
        assert len(frame) == 1 and (frame["cell"].iloc[0] == 0.0 if read else math.isnan(frame["cell"].iloc[0]))
