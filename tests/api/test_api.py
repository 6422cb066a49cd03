"""The Python API (``sfl_sim.run`` and friends) is the CLI: same files, same refusals, same lines.

The comparison runs the shipped ``cellular_100clients`` for one round, cut down by overrides, through
``sfl-sim scenario``, through ``sfl_sim.run`` and through the runner itself (the CLI calls the API,
so only the runner's own run shows that the API changes nothing in what runs), in this process.
"""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
import yaml

import sfl_sim
from sfl_sim.analysis.comparison import write_summary_files
from sfl_sim.cli import main
from sfl_sim.config import load_scenario
from sfl_sim.config.scenario_files import resolve_scenario
from sfl_sim.runs import runner
from sfl_sim.runs.rundir.schema import CELL_REPORT_COLUMNS as REPORT_COLUMNS
from sfl_sim.runs.rundir.schema import METRICS_COLUMNS
from tests.helpers import ROOT, read_rows, small_scenario, write_yaml

SMALL = ["rounds=1", "eval_samples=200", "data.dataset.max_train_samples=1000", "data.dataset.max_test_samples=300",
         "model.params.conv_channels=[4, 4, 4, 4, 4]", "model.params.fc_features=[8, 8]",
         "training.batch_size=32", "training.local_iterations=1", "training.torch_threads=1",
         "clients.count=10", "clients.participation=0.3"]
LABELS = ["scala", "fedavg"]


def cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> tuple[Path, Path, list, Path]:
    """The same scenario and seed run by the CLI, by the API and by the runner itself.

    Returns (CLI dir, API dir, API results, runner dir).  The CLI calls the API, so the runner's
    own run is the reference that the API (and with it the CLI) changes nothing in what runs.
    """
    tmp = tmp_path_factory.mktemp("api")
    sets = [a for s in SMALL for a in ("--set", s)]
    code, _, err = cli(["scenario", "cellular_100clients", "-o", str(tmp / "cli"), "--seed", "2", "--no-progress",
                        *sets])
    assert code == 0, err
    out, err_api = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err_api):
        results = sfl_sim.run("cellular_100clients", overrides=SMALL, output_dir=tmp / "api", seed=2)
    assert out.getvalue() == "" and err_api.getvalue() == ""  # nothing prints unless asked
    cfg = load_scenario(resolve_scenario("cellular_100clients"), SMALL, {"seed": 2, "output_dir": str(tmp / "runner")})
    write_summary_files(runner.run_scenario(cfg, progress=False), tmp / "runner")
    return tmp / "cli", tmp / "api", results, tmp / "runner"


@pytest.mark.slow
def test_run_returns_each_run_with_its_summary_and_metrics(both):
    _, api_dir, results, _ = both
    assert [r.label for r in results] == LABELS
    for r in results:
        assert r.path == api_dir / r.label and r.status == "complete" and r.ok and r.error == ""
        assert r.summary == json.loads((r.path / "summary.json").read_text())
        assert isinstance(r.summary["final_test_accuracy"], float) and r.summary["seed"] == 2
        assert list(r.metrics.columns) == list(METRICS_COLUMNS) and r.metrics["round"].tolist() == [0, 1]
        assert r.metrics["test_accuracy"].iloc[-1] == r.summary["final_test_accuracy"]


def _no_host_time(node):
    if isinstance(node, dict):
        return {k: _no_host_time(v) for k, v in node.items() if k != "host_time_s"}
    return node


@pytest.mark.slow
@pytest.mark.parametrize("reference", ["cli", "runner"])
def test_run_writes_the_files_the_cli_writes(both, reference):
    cli_dir, api_dir, _, runner_dir = both
    ref_dir = {"cli": cli_dir, "runner": runner_dir}[reference]
    names = sorted(p.relative_to(ref_dir).as_posix() for p in ref_dir.rglob("*"))
    assert names == sorted(p.relative_to(api_dir).as_posix() for p in api_dir.rglob("*"))
    for name in ("summary.csv", *(f"{label}/{f}" for label in LABELS
                                  for f in ("metrics.csv", "rounds.csv", "classes.csv", "cell.csv"))):
        assert read_rows(ref_dir / name, host_time=False) == read_rows(api_dir / name, host_time=False), name
    for label in LABELS:
        a, b = (json.loads((d / label / "summary.json").read_text()) for d in (ref_dir, api_dir))
        assert _no_host_time(a) == _no_host_time(b)
        a, b = (yaml.safe_load((d / label / "scenario.yaml").read_text()) for d in (ref_dir, api_dir))
        assert (a.pop("output_dir"), b.pop("output_dir")) == (str(ref_dir), str(api_dir)) and a == b
        a, b = (torch.load(d / label / "checkpoint.pt", weights_only=True) for d in (ref_dir, api_dir))
        assert a.pop("host_time_s") >= 0 and b.pop("host_time_s") >= 0
        assert a.keys() == b.keys() and a["round"] == b["round"] == 1
        for key, tensor in a["algorithm"]["model"].items():  # same host, same seed: the same weights
            assert torch.equal(tensor, b["algorithm"]["model"][key]), key


@pytest.mark.slow
def test_report_returns_the_tables_it_writes(both):
    _, api_dir, _, _ = both
    report = sfl_sim.report(api_dir, output_dir=api_dir.parent / "report", targets="0.1", figures=False)
    assert report.files[0] == report.path / "README.md" and all(p.is_file() for p in report.files)
    for name in ("accuracy", "tta", "overhead", "runs"):
        pd.testing.assert_frame_equal(getattr(report, name), pd.read_csv(report.path / f"{name}.csv"))
    assert sorted(report.runs["algorithm"]) == sorted(LABELS)


# ----------------------------------------------------------------------------- bad input


def _cli_line(args: list[str]) -> str:
    code, _, err = cli(args)
    assert code == 2 and err.count("\n") == 1, err
    return err.strip()


@pytest.mark.parametrize("kwargs, args", [
    (dict(scenario="no_such_scenario"), ["scenario", "no_such_scenario"]),
    (dict(scenario="cellular_100clients", overrides=["clients.participation=2"]),
     ["scenario", "cellular_100clients", "--set", "clients.participation=2"]),
    (dict(scenario="cellular_100clients", overrides=["rounds"]),
     ["scenario", "cellular_100clients", "--set", "rounds"]),
    (dict(scenario="cellular_100clients", seeds="0,x"), ["scenario", "cellular_100clients", "--seeds", "0,x"]),
    (dict(scenario="cellular_100clients", seeds=[0, 1], seed=3),
     ["scenario", "cellular_100clients", "--seeds", "0,1", "--seed", "3"]),
    (dict(scenario="cellular_100clients", seeds=[0], workers=0),
     ["scenario", "cellular_100clients", "--seeds", "0", "--workers", "0"]),
])
def test_bad_input_raises_the_config_error_whose_line_the_cli_prints(kwargs, args, tmp_path):
    out = str(tmp_path / "out")
    with pytest.raises(sfl_sim.ConfigError) as info:
        sfl_sim.run(output_dir=out, **kwargs)
    assert _cli_line([*args, "-o", out]) == f"sfl-sim: invalid scenario: {info.value}"
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_an_occupied_run_directory_raises_the_run_dir_error_the_cli_reports(tmp_path):
    path = write_yaml(tmp_path, small_scenario(rounds=1, train=200, test=100))
    sfl_sim.run(path, output_dir=tmp_path / "out")
    with pytest.raises(sfl_sim.RunDirError) as info:
        sfl_sim.run(path, output_dir=tmp_path / "out")
    assert "pass --resume" in str(info.value)
    assert _cli_line(["scenario", str(path), "-o", str(tmp_path / "out")]) == f"sfl-sim: {info.value}"
    (again,) = sfl_sim.run(path, output_dir=tmp_path / "out", resume=True)  # nothing left to do: the same run
    assert again.status == "complete" and again.metrics["round"].tolist() == [0, 1]


def test_overrides_as_a_mapping_equal_the_set_strings():
    a = sfl_sim.load_scenario("cellular_100clients", ["clients.participation=0.2", "data.partition={name: iid}"])
    b = sfl_sim.load_scenario("cellular_100clients", {"clients.participation": 0.2, "data.partition": {"name": "iid"}})
    assert a == b and a.clients.participation == 0.2
    assert sfl_sim.load_scenario(a) == a and sfl_sim.load_scenario(a, {"rounds": 2}).rounds == 2
    with pytest.raises(sfl_sim.ConfigError, match="clients.participation"):
        sfl_sim.load_scenario("cellular_100clients", {"clients.participation": 2})


# ----------------------------------------------------------------------------- studies, check, channel


@pytest.mark.slow
def test_seeds_run_as_a_study_and_a_rerun_skips_them(tmp_path):
    path = write_yaml(tmp_path, small_scenario(rounds=1, train=200, test=100))
    out = tmp_path / "study"
    plan = sfl_sim.check(path, seeds=[0, 1], output_dir=out)
    assert [r.name for r in plan.runs] == ["alg=fedavg__seed=0", "alg=fedavg__seed=1"]
    assert not any(r.done for r in plan.runs) and plan.seeds == (0, 1) and not out.exists()
    results = sfl_sim.run(path, seeds=[0, 1], output_dir=out)
    assert [(r.status, r.coordinates["seed"], r.path) for r in results] == \
        [("complete", s, out / f"alg=fedavg__seed={s}") for s in (0, 1)]
    assert all(len(r.metrics) == 2 for r in results)
    assert [r.status for r in sfl_sim.run(path, seeds=[0, 1], output_dir=out)] == ["skipped", "skipped"]
    assert all(r.done for r in sfl_sim.check(path, seeds=[0, 1], output_dir=out).runs)


@pytest.mark.slow
def test_check_builds_every_run_and_writes_nothing(tmp_path):
    path = write_yaml(tmp_path, small_scenario(rounds=1, train=200, test=100, algorithms=["fedavg", "scala"]))
    plan = sfl_sim.check(path, output_dir=tmp_path / "out")
    assert [(r.name, r.path, r.done) for r in plan.runs] == \
        [(label, tmp_path / "out" / label, False) for label in ("fedavg", "scala")]
    assert plan.base == path and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_channel_report_returns_the_table_it_writes_and_prints_only_when_asked(tmp_path, capsys):
    report = sfl_sim.channel_report("cellular_100clients", overrides={"clients.count": 5}, output_dir=tmp_path)
    assert capsys.readouterr().out == ""
    assert list(report.table.columns) == list(REPORT_COLUMNS) and len(report.table) == 5
    assert report.files == [tmp_path / "cell.csv", tmp_path / "channel_draws.csv", tmp_path / "cell.png",
                            tmp_path / "channel_cdfs.png", tmp_path / "pathloss.png"]
    assert len(report.draws) == 20 * 5 and report.draws["round"].max() == 20  # the default rounds
    pd.testing.assert_frame_equal(report.table, pd.read_csv(tmp_path / "cell.csv"), check_exact=True)
    stream = io.StringIO()
    sfl_sim.channel_report("cellular_100clients", overrides={"clients.count": 5}, output_dir=tmp_path, stream=stream)
    code, out, _ = cli(["channel", "cellular_100clients", "--set", "clients.count=5", "-o", str(tmp_path)])
    files = ", ".join(str(f) for f in report.files[:-1])
    assert code == 0 and out == stream.getvalue() + f"wrote {files} and {report.files[-1]}\n"


# ----------------------------------------------------------------------------- package


@pytest.mark.slow
def test_python_m_sfl_sim_is_the_command_and_prints_the_version():
    env = {"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)}
    done = subprocess.run([sys.executable, "-m", "sfl_sim", "--version"], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout.strip() == f"sfl-sim {metadata.version('sfl-sim')}"
    assert sfl_sim.__version__ == metadata.version("sfl-sim")
    bad = subprocess.run([sys.executable, "-m", "sfl_sim", "scenario", "no_such_scenario"], capture_output=True,
                         text=True, env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("sfl-sim: invalid scenario: scenario 'no_such_scenario'")


@pytest.mark.slow
def test_import_sfl_sim_loads_neither_torch_nor_pandas():
    code = ("import sys, sfl_sim; sfl_sim.run; sfl_sim.ConfigError; sfl_sim.__version__; "
            "print(sorted(m for m in ('torch', 'pandas', 'matplotlib') if m in sys.modules))")
    env = {"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_a_notebook_counts_as_interactive_so_progress_shows_a_bar(monkeypatch):
    from sfl_sim.runs.progress import interactive

    assert not interactive(io.StringIO())
    kernel = SimpleNamespace(config={"IPKernelApp": {}})
    monkeypatch.setitem(sys.modules, "IPython", SimpleNamespace(get_ipython=lambda: kernel))
    assert interactive(io.StringIO())
    monkeypatch.setitem(sys.modules, "IPython", SimpleNamespace(get_ipython=lambda: SimpleNamespace(config={})))
    assert not interactive(io.StringIO())  # a terminal IPython: no kernel, plain lines


def test_no_public_name_of_the_package_is_also_a_submodule() -> None:
    """``sfl_sim.run`` the function would be shadowed by a subpackage ``sfl_sim.run`` once anything
    imported it (as ``sfl_sim.trace_report`` was by the module of that name)."""
    import pkgutil

    submodules = {info.name for info in pkgutil.iter_modules(sfl_sim.__path__)}
    assert not submodules & set(sfl_sim.__all__), submodules & set(sfl_sim.__all__)


@pytest.mark.parametrize(("call", "says"), [
    (lambda: sfl_sim.run("cellular_100clients", overrides=5), "overrides: got int 5; allowed: a list of FIELD=VALUE"),
    (lambda: sfl_sim.load_scenario({"rounds": 2}), "name_or_path: got dict {'rounds': 2}; allowed: a scenario file"),
    (lambda: sfl_sim.retime(5, output_dir="o"), "run_dir: got int 5; allowed: a path"),
    (lambda: sfl_sim.retime("r", output_dir=7), "output_dir: got int 7; allowed: a path"),
    (lambda: sfl_sim.check("cellular_100clients", output_dir=3), "output_dir: got int 3; allowed: a path"),
    (lambda: sfl_sim.plan_study(3), "study: got int 3; allowed: a path"),
    (lambda: sfl_sim.report(5), "dirs: got int 5; allowed: a path"),
    (lambda: sfl_sim.plot([1, 2]), "dirs: got list [1, 2]; allowed: a path"),
    (lambda: sfl_sim.trace_report(4.5), "path: got float 4.5; allowed: a path"),
])
def test_a_wrong_argument_type_is_one_line_naming_the_argument(call, says):
    """Issue 50 item 16: TypeErrors from inside were raised."""
    from sfl_sim.errors import ArgumentError

    with pytest.raises(ArgumentError) as info:
        call()
    assert str(info.value).startswith(says) and "\n" not in str(info.value), info.value
