"""Bad scenarios stop before any work with one message naming the field, the value and what is allowed."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sfl_sim.cli import main

BASE = Path(__file__).resolve().parents[2] / "scenarios" / "cellular_100clients.yaml"


def run_with(tmp_path: Path, capsys, overrides: list[str], scenario: Path = BASE) -> tuple[int, str]:
    args = ["scenario", str(scenario), "-o", str(tmp_path / "out"), "--no-progress", "--check"]
    for o in overrides:
        args += ["--set", o]
    code = main(args)
    return code, capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("override, words", [
    (["cell.uplink_bandwidth_hz=-5"], ["cell.uplink_bandwidth_hz", "-5", "> 0"]),
    (["clients.participation=1.5"], ["clients.participation", "1.5", "(0, 1]"]),
    (["model.split_point=S9"], ["model.split_point", "S9", "S1, S2, S3, S4, S5"]),
    (["clients.cuont=3"], ["clients.cuont", "allowed keys", "count"]),
    (["rounds=many"], ["rounds", "many", "integer"]),
    (["training.learning_rate=[1, 2]"], ["training.learning_rate", "[1, 2]", "number"]),
    (["cell.pathloss.name=tr38901"], ["cell.pathloss.name", "tr38901", "tr36814_macro"]),
    (["data.partition.alpha=0"], ["data.partition", "alpha"]),
    (["cell.placement.radius_m=-1"], ["cell.placement", "radius_m"]),
    (["algorithms=[{name: scalla}]"], ["algorithms[0].name", "scalla", "scala"]),
    (["clients.compute_flops_per_s_max=1.0"], ["clients.compute_flops_per_s_max", "compute_flops_per_s_min"]),
])
def test_bad_field_exits_nonzero_with_message(tmp_path: Path, capsys, override, words) -> None:
    code, err = run_with(tmp_path, capsys, override)
    assert code != 0
    assert len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, (w, err)
    assert not (tmp_path / "out").exists()  # stopped before any work


def test_unknown_top_level_key_in_file(tmp_path: Path, capsys) -> None:
    data = yaml.safe_load(BASE.read_text())
    data["bandwith_hz"] = 1
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    code, err = run_with(tmp_path, capsys, [], path)
    assert code == 2 and "bandwith_hz" in err and "allowed keys" in err


def test_missing_dataset_says_how_to_get_it(tmp_path: Path, capsys) -> None:
    code, err = run_with(tmp_path, capsys, [f"data.dataset.data_root={tmp_path / 'nowhere'}"])
    assert code == 2
    assert "train-images-idx3-ubyte" in err and "dataset-fashion-mnist" in err


@pytest.mark.slow
def test_valid_scenario_checks_clean(tmp_path: Path, capsys) -> None:
    code = main(["scenario", str(BASE), "--check", "-o", str(tmp_path / "o")])
    assert code == 0
