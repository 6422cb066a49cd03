"""``sfl-sim report`` and ``sfl-sim plot`` over study, scenario and run directories."""

from __future__ import annotations

import pandas as pd
import pytest

from sfl_sim.analysis import load_runs
from sfl_sim.analysis.figures import runs_figure
from sfl_sim.analysis.plots import plot_runs, run_labels
from sfl_sim.analysis.study_data import find_run_dirs
from sfl_sim.cli import main
from tests.analysis.synthetic_runs import PARTITIONS, write_run, write_study


@pytest.fixture
def study_dir(tmp_path):
    write_study(tmp_path / "study", algorithms=("scala", "fedavg"), seeds=(0, 1), coordinates=True)
    return tmp_path / "study"


@pytest.mark.slow
def test_report_command_defaults_to_dir_report(study_dir, capsys):
    assert main(["report", str(study_dir), "--reference", "fedavg", "--targets", "0.5,0.6",
                 "--band", "minmax"]) == 0
    out = study_dir / "report"
    assert (out / "README.md").is_file() and (out / "accuracy.tex").is_file()
    tta = pd.read_csv(out / "tta.csv")
    assert sorted(tta["target"].unique()) == [0.5, 0.6] and "speedup_low" in tta.columns
    assert "wrote" in capsys.readouterr().out
    # a second report over the same dir does not pick up the first one's files as runs
    assert main(["report", str(study_dir), "-o", str(study_dir / "again"), "--no-figures"]) == 0
    assert not (study_dir / "again" / "figures").exists()


@pytest.mark.slow
def test_report_command_over_several_run_dirs(tmp_path):
    a = write_run(tmp_path / "runs" / "cellular" / "scala", "scala", 0)
    b = write_run(tmp_path / "runs" / "cellular_seed1" / "scala", "scala", 1)
    assert main(["report", str(a), str(b), "--targets", "0.5"]) == 0
    acc = pd.read_csv(tmp_path / "runs" / "report" / "accuracy.csv")
    assert acc.loc[0, "n_runs"] == 2 and acc.loc[0, "algorithm"] == "scala"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["report", "{tmp}/empty"], "no run directories"),
        (["report", "{tmp}/nope"], "does not exist"),
        (["report", "{study}", "--reference", "fedprox"], "unknown reference 'fedprox'"),
        (["report", "{study}", "--targets", "70"], "fraction"),
        (["report", "{study}", "--targets", "0"], "--targets: got 0.0; allowed: fractions in (0, 1]"),
        (["report", "{study}", "--targets", "0.6,0"], "--targets: got 0.0; allowed: fractions in (0, 1]"),
    ],
)
def test_report_command_errors_are_one_line_exit_2(tmp_path, study_dir, capsys, argv, message):
    (tmp_path / "empty").mkdir()
    argv = [a.format(tmp=tmp_path, study=study_dir) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("sfl-sim report: ")


@pytest.mark.slow
def test_plot_accepts_a_study_dir_and_labels_seeds_apart(study_dir):
    assert main(["plot", str(study_dir)]) == 0
    for name in ("accuracy_vs_time.png", "uplink_vs_time.png"):
        assert (study_dir / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    runs = load_runs(find_run_dirs(study_dir))
    labels = run_labels(runs)
    assert len(set(labels)) == len(labels) == 8
    assert "scala (partition=quantity(alpha=2), seed 1)" in labels
    fig = runs_figure(list(zip(labels, [r.metrics for r in runs], strict=True)), "accuracy_vs_time", "t")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == labels
    fig.canvas.draw()  # the legend is outside the axes
    assert not fig.legends[0].get_window_extent().overlaps(fig.axes[0].get_window_extent())


def test_plot_labels_only_what_differs(tmp_path):
    for s in (0, 1):
        write_run(tmp_path / f"seed{s}" / "scala", "scala", s)
    write_run(tmp_path / "seed0" / "fedavg", "fedavg", 0)
    runs = load_runs(find_run_dirs(tmp_path))
    assert sorted(run_labels(runs)) == ["fedavg", "scala (seed 0)", "scala (seed 1)"]


def test_plot_labels_copies_by_directory(tmp_path):
    a = write_run(tmp_path / "a" / "scala", "scala", 0)
    b = write_run(tmp_path / "b" / "scala", "scala", 0)
    assert run_labels(load_runs([a, b])) == [f"scala [{a}]", f"scala [{b}]"]
    # a copy is one more line of the plot, not a duplicate seed the report refuses
    assert [p.name for p in plot_runs([a, b], tmp_path / "plots")] == [
        "accuracy_vs_time.png", "uplink_vs_time.png", "accuracy_vs_energy.png"]


@pytest.mark.slow
def test_plot_keeps_output_dir_flags(tmp_path):
    d = write_run(tmp_path / "r" / "scala", "scala", 0, overrides={"data.partition": PARTITIONS[1]})
    for flag in ("-o", "--out", "--output-dir"):
        out = tmp_path / f"plots{flag}"
        assert main(["plot", str(d), flag, str(out)]) == 0
        assert (out / "accuracy_vs_time.png").is_file()
    assert plot_runs(tmp_path / "r", tmp_path / "p")[0].is_file()


def test_plot_of_a_dir_without_runs_is_exit_2(tmp_path, capsys):
    assert main(["plot", str(tmp_path)]) == 2
    assert "no run directories" in capsys.readouterr().err
