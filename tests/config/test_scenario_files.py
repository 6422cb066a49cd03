"""Shipped scenarios are package data, found by name from any directory, each with a description."""
from __future__ import annotations

from pathlib import Path

import pytest

from sfl_sim.config import ConfigError
from sfl_sim.config.scenario_files import (
    SCENARIO_DIR,
    ScenarioNotFoundError,
    describe,
    resolve_scenario,
    shipped_scenarios,
)

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(SCENARIO_DIR.rglob("*.yaml"))


def test_the_scenarios_live_in_the_package_and_the_root_folder_points_there():
    assert SCENARIO_DIR == ROOT / "sfl_sim" / "scenarios"
    assert len(FILES) > 2 and (SCENARIO_DIR / "paper").is_dir()
    assert (ROOT / "scenarios").is_symlink() and (ROOT / "scenarios").resolve() == SCENARIO_DIR
    assert (ROOT / "scenarios" / "cellular_100clients.yaml").is_file()  # every old path still works


def test_package_data_globs_cover_every_shipped_file():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["sfl_sim"]
    package = ROOT / "sfl_sim"
    covered = {p for g in globs for p in package.glob(g) if p.relative_to(package).parts[0] == "scenarios"}
    assert covered == set(FILES)


def test_shipped_names_are_the_paths_below_the_folder_without_suffix():
    named = shipped_scenarios()
    assert sorted(named.values()) == FILES
    assert named["cellular_100clients"] == SCENARIO_DIR / "cellular_100clients.yaml"
    assert named["paper/cifar10_alpha2"] == SCENARIO_DIR / "paper" / "cifar10_alpha2.yaml"


@pytest.mark.parametrize("text, name", [
    ("cellular_100clients.yaml", "cellular_100clients.yaml"),
    ("cellular_100clients", "cellular_100clients.yaml"),
    ("paper/cifar10_alpha2", "paper/cifar10_alpha2.yaml"),
    ("paper/cifar10_alpha2.yaml", "paper/cifar10_alpha2.yaml"),
    ("cifar10_alpha2", "paper/cifar10_alpha2.yaml"),  # a file name found in exactly one subfolder
    ("scenarios/cellular_100clients.yaml", "cellular_100clients.yaml"),  # the repository-relative form
])
def test_a_shipped_scenario_is_found_by_name_from_any_directory(text, name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_scenario(text) == SCENARIO_DIR / name


def test_a_file_on_disk_wins_over_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cellular_100clients.yaml").write_text("name: mine\n")
    assert resolve_scenario("cellular_100clients.yaml") == Path("cellular_100clients.yaml")
    assert resolve_scenario("cellular_100clients") == SCENARIO_DIR / "cellular_100clients.yaml"


def test_an_unknown_name_is_one_line_with_close_matches_and_the_listing_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioNotFoundError) as info:
        resolve_scenario("celular_100clients")
    message = str(info.value)
    assert "\n" not in message and "'celular_100clients'" in message
    assert "cellular_100clients" in message.split("closest:")[1] and "sfl-sim scenarios" in message
    assert isinstance(info.value, ConfigError)  # the CLI's scenario errors: exit 2, one line


def test_every_shipped_file_starts_with_a_one_line_description():
    for path in FILES:
        text = describe(path)
        assert 20 <= len(text) <= 120, f"{path}: first line {text!r}"
        assert not text.startswith("#")
