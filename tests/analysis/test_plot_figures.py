"""``sfl-sim plot``'s figures, drawn by the report's figure code: one line per run; and the analysis
modules use one another's public names only."""

from __future__ import annotations

import ast
from pathlib import Path

import matplotlib.colors
import numpy as np
import pytest
from matplotlib.colors import same_color

import sfl_sim.analysis
from sfl_sim.analysis import load_runs
from sfl_sim.analysis.figures import MAX_EVALUATION_DOTS, runs_figure
from tests.analysis.synthetic_runs import write_run


def _dots_and_ends(ax, color):
    """A run's evaluation dots (filled in its colour) and its last-evaluation marker (○: white, edged in it)."""
    marked = [ln for ln in ax.lines if ln.get_marker() == "o" and same_color(ln.get_markeredgecolor(), color)]
    dots = [ln for ln in marked if same_color(ln.get_markerfacecolor(), color)]
    ends = [ln for ln in marked if same_color(ln.get_markerfacecolor(), "white")]
    return dots, ends


def test_a_line_per_run_is_the_runs_curve_labelled_as_given(tmp_path):
    runs = load_runs([write_run(tmp_path / "a", "scala", 0), write_run(tmp_path / "b", "fedavg", 1)])
    fig = runs_figure([("A", runs[0].metrics), ("B", runs[1].metrics)], "uplink_vs_time", "Uplink")
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["A", "B"]  # no "(1 seed)"
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("simulated time (s)", "cumulative uplink (MB)",
                                                                  "Uplink")
    assert not ax.collections  # one run: no band
    for run, color in zip(runs, ("C0", "C1"), strict=True):
        want = np.column_stack([run.metrics["sim_time_s"], run.metrics["uplink_bytes"] / 1e6])
        dots, ends = _dots_and_ends(ax, color)
        assert len(dots) == 1 and len(ends) == 1
        np.testing.assert_allclose(dots[0].get_xydata(), want)  # a dot at every evaluation, MB against s
        np.testing.assert_allclose(ends[0].get_xydata(), want[-1:])  # ○ at the last


def test_a_run_of_many_evaluations_is_a_line_without_dots(tmp_path):
    d = write_run(tmp_path / "long", "scala", 0, overrides={"rounds": MAX_EVALUATION_DOTS + 5, "eval_every_rounds": 1})
    (run,) = load_runs([d])
    assert len(run.metrics) > MAX_EVALUATION_DOTS
    fig = runs_figure([("long", run.metrics)], "accuracy_vs_time", "t")
    dots, ends = _dots_and_ends(fig.axes[0], "C0")
    assert not dots and len(ends) == 1
    assert fig.legends[0].get_title().get_text() == "one line per run; ○ its last evaluation"
    assert fig.axes[0].get_ylabel() == "test accuracy (%)"
    assert fig.axes[0].lines[0].get_ydata().max() == pytest.approx(100 * run.metrics["test_accuracy"].max())


def test_a_run_without_points_keeps_the_colours_of_the_others(tmp_path):
    runs = load_runs([write_run(tmp_path / "a", "scala", 0), write_run(tmp_path / "b", "fedavg", 1)])
    lines = [("none", runs[0].metrics.assign(client_energy_j=np.nan)),
             ("some", runs[1].metrics.assign(client_energy_j=runs[1].metrics["sim_time_s"]))]
    fig = runs_figure(lines, "accuracy_vs_energy", "t")
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["some"]
    ax = fig.axes[0]
    assert all(same_color(ln.get_markeredgecolor() if ln.get_linestyle() == "None" else ln.get_color(), "C1")
               for ln in ax.lines)  # the colour of its place in ``lines``, in every figure of the runs
    assert not runs_figure(lines[:1], "accuracy_vs_energy", "t").legends  # nothing to draw: no legend


def test_analysis_modules_import_no_private_name_of_another():
    package = Path(sfl_sim.analysis.__file__).parent
    private = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sfl_sim."):
                private += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not private


def test_more_than_ten_lines_never_repeat_a_colour_and_pattern(tmp_path):
    """Twelve lines (the scheduler study has 12 settings): lines 10 and 11 share C0 and C1 with lines 0 and 1,
    so they are drawn dash-dot, in the axes and in the legend."""
    run = load_runs([write_run(tmp_path / "a", "scala", 0)])[0]
    fig = runs_figure([(f"s{i}", run.metrics) for i in range(12)], "accuracy_vs_time", "t")
    handles = fig.legends[0].legend_handles
    looks = {(tuple(np.round(matplotlib.colors.to_rgba(h.get_color()), 6)), str(h.get_linestyle()))
             for h in handles}
    assert len(handles) == 12 and len(looks) == 12
    assert same_color(handles[10].get_color(), handles[0].get_color())
    assert handles[10].get_linestyle() != handles[0].get_linestyle()
