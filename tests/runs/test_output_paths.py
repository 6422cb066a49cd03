"""Default output folders of `sfl-sim channel` and `sfl-sim plot`: under the scenario or run directory."""
from __future__ import annotations

from pathlib import Path

import pytest

from sfl_sim.runs.output_paths import cell_report_dir, plot_dir


def test_cell_report_goes_under_the_scenario_output_dir():
    assert cell_report_dir("runs/cellular_100clients") == Path("runs/cellular_100clients/cell_report")


def test_plots_of_one_scenario_go_in_its_directory():
    assert plot_dir(["runs/s/scala", "runs/s/fedavg"]) == Path("runs/s/plots")
    assert plot_dir(["runs/s/scala"]) == Path("runs/s/plots")


def test_plots_of_runs_from_different_scenarios_go_in_the_first_run():
    assert plot_dir(["runs/a/scala", "runs/b/scala"]) == Path("runs/a/scala/plots")


def test_no_run_directory_is_an_error_naming_the_argument():
    with pytest.raises(ValueError, match="run_dirs"):
        plot_dir([])
