"""Per-round host time, GPU utilisation and GPU memory of the default and the paper's scenario.

For each scenario (``--scenarios``: cellular_100clients, the CPU-sized default, and
cellular_100clients_paper, full-width AlexNet) and algorithm (``--algorithms``), rounds run
through the simulator on ``--device`` after one warm-up round; prints the median wall-clock
seconds of a round on the host, the mean GPU utilisation over the timed rounds (``nvidia-smi``
sampled every 100 ms; "-" without it or on the CPU) and the peak GPU memory torch allocated
(``torch.cuda.max_memory_allocated``; "-" on the CPU).  Absolute numbers of one machine, for a
header or a commit message, not for a test.

    python bench/gpu.py --device cuda                         # 5 timed rounds each, T = 5
    python bench/gpu.py --device cpu --rounds 1 --local-iterations 1 --scenarios cellular_100clients
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from sfl_sim.clients.selection import cohort_size  # noqa: E402
from sfl_sim.config import load_scenario_raw, validate  # noqa: E402
from sfl_sim.config.scenario_files import resolve_scenario  # noqa: E402
from sfl_sim.engine import Simulator  # noqa: E402
from sfl_sim.runs import runner  # noqa: E402

SCENARIOS = ("cellular_100clients", "cellular_100clients_paper")


class _Utilisation:
    """``nvidia-smi`` sampling the GPU's utilisation (%) every 100 ms while it is open."""

    def __init__(self, enabled: bool) -> None:
        self.proc: subprocess.Popen[str] | None = None
        if enabled and shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                          "-lms", "100", "-i", "0"], stdout=subprocess.PIPE, text=True)

    def stop(self) -> float | None:
        """Stop sampling; the mean utilisation (%) seen, or None without samples."""
        if self.proc is None:
            return None
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=10)
        values = [float(v) for v in out.split() if v.strip().replace(".", "", 1).isdigit()]
        return statistics.fmean(values) if values else None


def measure(scenario: str, algorithm: str, device: str = "cuda", rounds: int = 5,
            local_iterations: int | None = None) -> dict[str, float | None]:
    """Median host seconds per round, mean GPU utilisation (%) and peak GPU memory (bytes)."""
    raw = load_scenario_raw(resolve_scenario(scenario))
    raw.update(device=device, eval_samples=100, algorithms=[{"name": algorithm}])
    if local_iterations is not None:
        raw.setdefault("training", {})["local_iterations"] = local_iterations
    cfg = validate(raw)
    run = runner.build_run(cfg, cfg.algorithms[0])
    sim = Simulator(run.cell, run.client_flops_per_s, cfg.server.compute_flops_per_s)
    count = cfg.clients.count
    n = cohort_size(count, cfg.clients.participation)
    rng = np.random.default_rng(0)
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def one_round() -> float:
        cohort = run.selector.select(count, n, rng)
        sync()
        start = time.perf_counter()
        sim.run_round(lambda ctx: run.algorithm.run_round(ctx, cohort), cohort)
        sync()
        return time.perf_counter() - start

    one_round()  # warm-up: FLOP metering, working copies, cuDNN's algorithm search
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    sampler = _Utilisation(cuda)
    times = [one_round() for _ in range(rounds)]
    utilisation = sampler.stop()
    peak = float(torch.cuda.max_memory_allocated()) if cuda else None
    return {"round_s": statistics.median(times), "gpu_util_pct": utilisation, "gpu_peak_bytes": peak}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS))
    parser.add_argument("--algorithms", nargs="+", default=["scala", "fedavg", "feddyn"])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (after one warm-up)")
    parser.add_argument("--local-iterations", type=int, default=None, help="T (default: the scenario's, 5)")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here")
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(f"device {args.device} ({name}), torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"medians of {args.rounds} rounds", flush=True)
    print(f"{'scenario':<26} {'algorithm':>9}  {'host s/round':>12}  {'GPU util %':>10}  {'GPU peak MiB':>12}")
    for scenario in args.scenarios:
        for algorithm in args.algorithms:
            r = measure(scenario, algorithm, args.device, args.rounds, args.local_iterations)
            util = "-" if r["gpu_util_pct"] is None else f"{r['gpu_util_pct']:.0f}"
            peak = "-" if r["gpu_peak_bytes"] is None else f"{r['gpu_peak_bytes'] / 2**20:.0f}"
            print(f"{scenario:<26} {algorithm:>9}  {r['round_s']:>12.3f}  {util:>10}  {peak:>12}", flush=True)


if __name__ == "__main__":
    main()
