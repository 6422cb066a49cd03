"""The command line as a user meets it: scenarios by name, listings, version, logs, result files, output dirs.

One short real run (Fashion-MNIST slice, see test_end_to_end.py) is shared by the tests of what a
run prints and writes.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
from importlib import metadata

import pytest

from sfl_sim import catalog
from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.analysis.comparison import CSV_COLUMNS, write_summary_files
from sfl_sim.analysis.tta import tta_column_name
from sfl_sim.channel import REGISTRIES
from sfl_sim.cli import _print_summaries, main
from sfl_sim.config import scenario_files
from sfl_sim.config.scenario_files import SCENARIO_DIR, describe
from sfl_sim.runs.progress import header_line
from tests.helpers import small_scenario, write_yaml

SMALL = small_scenario(seed=3, rounds=3, eval_every_rounds=2, eval_samples=200, algorithms=["scala", "fedavg"],
                       width=8, fc=16, train=1000, test=500, batch_size=32, clients=10, participation=0.3)


def cli(args: list[str]) -> tuple[int, str, str]:
    """Run ``sfl-sim ARGS`` in-process; stdout and stderr are plain StringIO (not terminals)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


# ----------------------------------------------------------------------------- scenarios by name


def test_cli_resolves_a_shipped_name_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(["channel", "cellular_100clients", "--set", "clients.count=5"])
    assert code == 0, err
    assert (tmp_path / "runs" / "cellular_100clients" / "cell_report" / "cell.csv").exists()


def test_cli_exits_2_with_one_line_on_an_unknown_scenario(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(["scenario", "nothing_like_it", "--check"])
    assert code == 2
    assert err.count("\n") == 1 and "'nothing_like_it'" in err and "sfl-sim scenarios" in err


def test_sfl_sim_scenarios_lists_every_shipped_file_with_its_description():
    code, out, _ = cli(["scenarios"])
    assert code == 0
    lines = out.splitlines()
    files = sorted(SCENARIO_DIR.rglob("*.yaml"))
    for path in files:
        name = path.relative_to(SCENARIO_DIR).with_suffix("").as_posix()
        (line,) = [ln for ln in lines if ln.split()[:1] == [name]]
        assert line.endswith(describe(path))
    assert len(lines) == len(files) + 1  # one line each, then where the files are
    assert out == scenario_files.listing() + "\n"


# ----------------------------------------------------------------------------- list and version


def test_list_algorithms_names_every_registered_algorithm():
    code, out, _ = cli(["list", "algorithms"])
    assert code == 0
    listed = [ln.split()[0] for ln in out.splitlines() if ln.startswith("  ") and not ln.strip().startswith(
        "parameters:")]
    assert listed == ALGORITHMS.names()


def test_list_without_kind_covers_every_kind_including_every_channel_kind():
    code, out, _ = cli(["list"])
    assert code == 0
    headings = [ln.split(" (")[0] for ln in out.splitlines() if ln and not ln.startswith(" ")]
    assert headings == list(catalog.KINDS)
    assert set(REGISTRIES) <= set(headings)


def test_list_singular_and_plural_agree_and_unknown_kind_exits_2():
    assert cli(["list", "selector"])[1] == cli(["list", "selectors"])[1]
    code, out, err = cli(["list", "gizmos"])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "'gizmos'" in err and "algorithm" in err and "mobility" in err


def test_version_prints_the_installed_package_version():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert out.getvalue().strip() == f"sfl-sim {metadata.version('sfl-sim')}"


# ----------------------------------------------------------------------------- one real run


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """The SMALL scenario run once with progress on, stderr not a terminal."""
    root = tmp_path_factory.mktemp("cli_run")
    path = write_yaml(root, {**SMALL, "output_dir": str(root / "out")}, "small.yaml")
    code, out, err = cli(["scenario", str(path)])
    assert code == 0, err
    return {"root": root, "scenario": path, "out_dir": root / "out", "stdout": out, "stderr": err}


@pytest.mark.slow
def test_non_terminal_log_has_headers_and_one_plain_line_per_evaluation_and_no_carriage_return(small_run):
    err = small_run["stderr"]
    assert "\r" not in err
    lines = err.splitlines()
    assert lines[0] == header_line("small", "scala", (1, 2), "cpu", small_run["out_dir"] / "scala", 3)
    assert header_line("small", "fedavg", (2, 2), "cpu", small_run["out_dir"] / "fedavg", 3) in lines
    for label in ("scala", "fedavg"):  # evaluations after rounds 2 and 3 (the last round always)
        assert [ln.split(",")[0] for ln in lines if ln.startswith(label + ": round")] == [
            f"{label}: round 2/3", f"{label}: round 3/3"]
    assert len(lines) == 6


@pytest.mark.slow
def test_summary_csv_equals_the_summary_json_files(small_run):
    out_dir = small_run["out_dir"]
    with (out_dir / "summary.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["label"] for r in rows] == ["scala", "fedavg"]
    for row in rows:
        summary = json.loads((out_dir / row["label"] / "summary.json").read_text())
        for column in CSV_COLUMNS:
            expected = summary[column]
            got = row[column]
            assert (got == expected if isinstance(expected, str) else float(got) == expected), column
        for target, seconds in summary["time_to_accuracy_s"].items():
            got = row[tta_column_name(float(target))]
            assert (got == "" if seconds is None else float(got) == seconds), target
        assert len(row) == len(CSV_COLUMNS) + len(summary["time_to_accuracy_s"])


def test_summary_md_is_written_and_the_printed_table_fits_80_columns(small_run):
    md = (small_run["out_dir"] / "summary.md").read_text()
    assert "| scala |" in md and "| fedavg |" in md and "Simulated time to accuracy" in md
    stdout = small_run["stdout"]
    assert "summary.csv" in stdout and "simulated time to accuracy" in stdout
    assert f"tables also in {small_run['out_dir'] / 'summary.csv'} and summary.md" in stdout
    tables = [line for line in stdout.splitlines() if str(small_run["out_dir"]) not in line]
    assert len(tables) > 8 and max(len(line) for line in tables) <= 80


@pytest.mark.slow
def test_plot_writes_beside_the_runs_by_default_and_still_takes_out(small_run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = [str(small_run["out_dir"] / "scala"), str(small_run["out_dir"] / "fedavg")]
    code, out, err = cli(["plot", *runs])
    assert code == 0, err
    assert (small_run["out_dir"] / "plots" / "accuracy_vs_time.png").read_bytes()[:4] == b"\x89PNG"
    assert not list(tmp_path.iterdir())  # nothing in the working directory
    assert cli(["plot", *runs, "--out", str(tmp_path / "old")])[0] == 0  # the alias of --output-dir
    assert (tmp_path / "old" / "uplink_vs_time.png").exists()


@pytest.mark.slow
def test_channel_writes_under_the_scenario_output_dir_by_default_and_still_takes_out(small_run, tmp_path,
                                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(["channel", str(small_run["scenario"])])
    assert code == 0, err
    report = small_run["out_dir"] / "cell_report"
    assert (report / "cell.csv").exists() and (report / "cell.png").exists()
    assert f"wrote {report / 'cell.csv'}" in out
    assert not list(tmp_path.iterdir())
    for flag in ("-o", "--output-dir", "--out"):
        assert cli(["channel", str(small_run["scenario"]), flag, str(tmp_path / flag)])[0] == 0
        assert (tmp_path / flag / "cell.csv").exists()


def test_print_summaries_names_the_files_the_run_wrote(tmp_path, capsys):
    base = {"label": "x", "rounds_completed": 1, "final_test_accuracy": 0.5, "best_test_accuracy": 0.5,
            "final_sim_time_s": 1.0, "host_time_s": 1.0, "uplink_bytes": 0, "time_to_accuracy_s": {"0.5": 1.0}}
    csv_path, md_path = write_summary_files([base, {}], tmp_path / "scenario")  # what sfl_sim.run writes
    _print_summaries([base, {}], tmp_path / "scenario")
    out = capsys.readouterr().out
    assert f"results in {tmp_path / 'scenario'}/" in out
    assert f"(tables also in {csv_path} and {md_path.name})" in out
    assert csv_path.exists() and md_path.exists()
