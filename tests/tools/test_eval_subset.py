"""tools/eval_subset.py: a run's final model scored on the subset equals what the run itself recorded."""
import csv
import subprocess
import sys
from pathlib import Path

import pytest

from sfl_sim.cli import main
from tests.helpers import small_scenario, write_yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_subset_score_equals_the_runs_own_evaluation(tmp_path: Path) -> None:
    data = small_scenario(algorithms=["fedavg", "scala"], rounds=2, eval_samples=60, test=200)
    out = tmp_path / "out"
    assert main(["scenario", str(write_yaml(tmp_path, data)), "-o", str(out), "--no-progress"]) == 0
    runs = [out / "fedavg", out / "scala"]
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "eval_subset.py"), *map(str, runs),
                             "--samples", "60"], capture_output=True, text=True, check=True)
    rows = list(csv.DictReader(result.stdout.splitlines()))
    assert [r["label"] for r in rows] == ["fedavg", "scala"]
    for row, run in zip(rows, runs, strict=True):
        last = list(csv.DictReader((run / "metrics.csv").open()))[-1]
        assert int(row["round"]) == int(last["round"]) == 2
        # the same 60 images the run drew for its own evaluation, the same weights: the same accuracy
        assert float(row["accuracy_subset"]) == pytest.approx(float(last["test_accuracy"]), abs=5e-5)
        assert 0.0 <= float(row["accuracy_whole"]) <= 1.0
