"""``sfl-sim traces FILE``: devices, online fraction by hour of day, sessions, speeds; one-line bad input."""
from __future__ import annotations

import csv
import pickle

import numpy as np
import pytest

from sfl_sim.cli import main
from sfl_sim.reports.traces import trace_report


def test_availability_summary_by_hand(tmp_path) -> None:
    # device 0 online 01:00-01:30 and 02:00-03:00 of a 4 h trace; device 1 never online
    path = tmp_path / "t.csv"
    path.write_text("client,start_s,end_s\n0,3600,5400\n0,7200,10800\n2,0,14400\n")
    report = trace_report(path, out_dir=tmp_path / "r")
    s = report.summary
    assert s["devices"] == 3 and s["never_online"] == 1 and s["sessions"] == 3
    hourly = s["online_fraction_by_hour"]
    # hours 0..3 observed by all three devices (span 4 h); device 2 online throughout
    assert hourly[:4] == pytest.approx([1 / 3, (0.5 + 1) / 3, (1 + 1) / 3, 1 / 3])
    assert hourly[4:] == [None] * 20
    assert s["session_s"]["median"] == 3600.0 and s["session_s"]["max"] == 14400.0
    with open(report.files[0]) as fh:
        rows = list(csv.DictReader(fh))
    assert [r["sessions"] for r in rows] == ["2", "0", "1"]
    assert float(rows[0]["online_fraction"]) == pytest.approx(5400 / 14400)
    assert report.files[1].stat().st_size > 0


@pytest.mark.slow
def test_capability_fedscale_and_cli(tmp_path, capsys) -> None:
    path = tmp_path / "client_device_capacity"
    path.write_bytes(pickle.dumps({1: {"computation": 10.0, "communication": 100.0},
                                   2: {"computation": 30.0, "communication": 300.0}}))
    code = main(["traces", str(path), "--kind", "capability", "--format", "fedscale", "-o", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == 0 and "2 devices" in out and "traces.png" in out
    with open(tmp_path / "r" / "traces.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [float(r["ms_per_sample"]) for r in rows] == [10.0, 30.0]
    assert [float(r["uplink_bps"]) for r in rows] == [1e5, 3e5] and rows[0]["compute_flops_per_s"] == ""
    assert np.isnan(trace_report(path, "fedscale", "capability", out_dir=tmp_path / "r2").summary[
        "compute_flops_per_s"].get("median", np.nan))


@pytest.mark.parametrize("args, words", [
    (["--format", "flash", "--kind", "capability"], ["--format", "flash", "allowed"]),
    ([], ["header", "client,start_s,end_s"]),
    (["--format", "fedscale"], ["refuses global"]),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, words) -> None:
    path = tmp_path / "x"
    if "fedscale" in args:
        path.write_bytes(pickle.dumps(print))
    else:
        path.write_text("who,when\n1,2\n")
    code = main(["traces", str(path), *args, "-o", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and all(w in err[0] for w in words), err
