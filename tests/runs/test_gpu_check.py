"""The prepared device check (bench/gpu_check.sh) rehearsed on the CPU: tiny rounds, a small budget,
every step run and logged, one archive with the benches' and the headline's tables."""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("SFL_SIM_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))


@pytest.mark.slow
def test_the_device_check_runs_on_the_cpu_and_writes_one_archive(tmp_path) -> None:
    if not (DATA / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"Fashion-MNIST not installed at {DATA}")
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable, "TMPDIR": str(tmp_path)}
    done = subprocess.run(["bash", str(ROOT / "bench" / "gpu_check.sh"), "--device", "cpu", "--tiny",
                           "--budget-s", "240", "--carry", str(tmp_path / "no-carry")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.tar.gz"]
    with tarfile.open(out / "gpu_check.tar.gz") as tar:
        tar.extractall(tmp_path / "x", filter="data")
    check = tmp_path / "x" / "gpu_check"
    steps = (check / "steps.txt").read_text()
    for name in ("env", "tests_fast", "tests_long", "bench_gpu", "bench_feddyn", "headline", "headline_table"):
        assert f"{name} rc=0 " in steps, steps
    assert "install skipped (all import)" in steps and f"data {DATA}" in steps
    assert "host s/round" in (check / "bench_gpu.txt").read_text()
    assert "FedDyn/FedAvg" in (check / "bench_feddyn.txt").read_text()
    table = (check / "headline_table.txt").read_text()
    for name, paper in (("scala", "90.70"), ("feddyn", "85.53"), ("fedavg", "81.72"), ("fedprox", "85.09")):
        assert any(line.startswith(name) and paper in line for line in table.splitlines()), table
    assert not list(check.rglob("*.pt"))  # no checkpoints in the archive
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("tmp.")]  # its temporary folder is gone
