"""The README's "Bring your own channel model" example runs as written and changes the run."""
from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import yaml

from sfl_sim.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Bring your own channel model")
    return text[start:text.index("\n## ", start + 5)]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", _section(), flags=re.S)


def _small_scenario(tmp_path: Path, cell: dict) -> Path:
    data = {
        "seed": 1, "rounds": 1, "eval_every_rounds": 1, "eval_samples": 100,
        "algorithms": [{"name": "scala"}],
        "training": {"batch_size": 20, "local_iterations": 1, "torch_threads": 1},
        "data": {"dataset": {"name": "fashion_mnist", "max_train_samples": 600, "max_test_samples": 100},
                 "partition": {"name": "quantity", "alpha": 2}},
        "model": {"name": "alexnet", "params": {"conv_channels": [4, 4, 4, 4, 4], "fc_features": [8, 8]}},
        "clients": {"count": 10, "participation": 0.2},
        "cell": cell,
    }
    path = tmp_path / f"s{len(list(tmp_path.glob('s*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_readme_component_loads_from_yaml_passes_conformance_and_changes_the_run(tmp_path: Path, monkeypatch) -> None:
    (python_code,) = _blocks("python")
    (yaml_text,) = _blocks("yaml")
    (bash_cmd,) = _blocks("bash")
    user_dir = tmp_path / "user"
    user_dir.mkdir()
    (user_dir / "my_channel.py").write_text(python_code)
    monkeypatch.syspath_prepend(str(user_dir))

    # The conformance command of the README, run as a user would.
    out = subprocess.run(bash_cmd.strip(), shell=True, cwd=user_dir, capture_output=True, text=True,
                         env={"PYTHONPATH": str(user_dir), "PATH": str(Path(sys.executable).parent)})
    assert out.returncode == 0, out.stderr
    assert "pathloss" in out.stdout

    custom_cell = yaml.safe_load(yaml_text)["cell"]
    runs = {}
    for name, cell in (("default", {}), ("custom", custom_cell)):
        assert main(["scenario", str(_small_scenario(tmp_path, cell)), "-o", str(tmp_path / name),
                     "--no-progress"]) == 0
        with (tmp_path / name / "scala" / "cell.csv").open() as fh:
            runs[name] = list(csv.DictReader(fh))
        with (tmp_path / name / "scala" / "metrics.csv").open() as fh:
            runs[name + "_metrics"] = list(csv.DictReader(fh))
    assert runs["default"][0]["pathloss_db"] != runs["custom"][0]["pathloss_db"]
    assert runs["default_metrics"][-1]["sim_time_s"] != runs["custom_metrics"][-1]["sim_time_s"]  # [0] is round 0, t = 0
