"""Train once, time many: what a bandwidth sweep costs by re-timing one training run, side by side.

Trains the default scenario's SCALA (``cellular_100clients``) once with its work record, then
re-times it at ``--points`` uplink bandwidths (log-spaced, 1 to 50 MHz) with ``sfl_sim.runs.retime``
(the data set loaded once for the sweep), and prints the host seconds of the training, of the whole
sweep and per point, and their ratio (the issue asks for at most 1.3).  With ``--overhead`` it also
trains the same run without the work record, the two interleaved, and prints what recording costs;
it always prints the record's size per round.

    python bench/retime.py [--rounds 150] [--points 20] [--overhead] [--out DIR]

``--rounds`` cuts the training (and so the record) to fit a CPU: both sides scale with the rounds.

With ``--runs``, complete run directories (e.g. the default scenario's SCALA and FedAvg) are swept
instead, and ``--figure`` draws their time to each ``--target`` accuracy against the bandwidth (with
a CSV of the points beside it):

    python bench/retime.py --runs runs/x/scala runs/x/fedavg --points 20 --target 0.7 --target 0.6 \
        --figure tta_vs_bandwidth.png
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np


def train(out: Path, rounds: int, record: bool) -> float:
    """Host seconds of one training run of SCALA into ``out/scala``."""
    from sfl_sim.config import validate
    from sfl_sim.config.scenario_files import resolve_scenario
    from sfl_sim.config.yaml_io import read_yaml_file
    from sfl_sim.runs.build import build_run
    from sfl_sim.runs.runner import run_one

    raw = read_yaml_file(resolve_scenario("cellular_100clients"))
    raw.update(rounds=rounds, output_dir=str(out), algorithms=[{"name": "scala"}])
    cfg = validate(raw)
    start = time.perf_counter()
    run = build_run(cfg, cfg.algorithms[0])
    run_one(run, out / "scala", progress=False, record_work=record)
    return time.perf_counter() - start


def sweep(run_dir: Path, out: Path, points: int, dataset: object) -> list[tuple[float, Path]]:
    """Re-time ``run_dir`` at ``points`` log-spaced uplink bandwidths (1 to 50 MHz) into ``out``."""
    from sfl_sim.runs.retime import retime

    done = []
    for i, hz in enumerate(np.logspace(6, np.log10(50e6), points)):
        retime(run_dir, {"cell.uplink_bandwidth_hz": float(hz)}, out / f"{i:02d}", dataset=dataset)
        done.append((float(hz), out / f"{i:02d}"))
    return done


def figure(runs: list[Path], points: int, targets: list[float], path: Path, dataset: object, work: Path) -> None:
    """Time to each of ``targets`` against the bandwidth (one panel per target, one line per run
    directory); a CSV of every point beside the PNG."""
    import csv

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sfl_sim.runs.rundir.files import RunDir
    from sfl_sim.runs.rundir.schema import first_time_reaching_s

    fig, axes = plt.subplots(1, len(targets), figsize=(4.6 * len(targets), 4.0), squeeze=False)
    rows = []
    for run_dir in runs:
        summary = RunDir(run_dir).read_summary() or {}
        label = str(summary.get("label", run_dir.name))
        start = time.perf_counter()
        swept = sweep(run_dir, work / label, points, dataset)
        print(f"{label}: {points} re-timings in {time.perf_counter() - start:.1f} s host")
        metrics = {hz: RunDir(d).read_metrics_rows() for hz, d in swept}
        for ax, target in zip(axes[0], targets, strict=True):
            xs, ys = [], []
            for hz, m in metrics.items():
                t = first_time_reaching_s([r["round"] for r in m], [r["sim_time_s"] for r in m],
                                          [r["test_accuracy"] for r in m], target)
                rows.append({"algorithm": label, "target": target, "uplink_bandwidth_hz": hz, "time_to_target_s": t})
                if t is not None:
                    xs.append(hz / 1e6)
                    ys.append(t)
            never = f" (not reached in {summary.get('rounds_completed', '?')} rounds)"
            ax.plot(xs, ys, marker="o", markersize=3, label=label if xs else label + never)
    for ax, target in zip(axes[0], targets, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("uplink bandwidth (MHz)")
        ax.set_ylabel(f"simulated time to {target:.0%} test accuracy (s)")
        ax.set_title(f"time to {target:.0%}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{points}-point bandwidth sweep by re-timing one training per algorithm", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    with path.with_suffix(".csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, ["algorithm", "target", "uplink_bandwidth_hz", "time_to_target_s"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"figure: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--points", type=int, default=20)
    parser.add_argument("--overhead", action="store_true", help="also train without the record, side by side")
    parser.add_argument("--out", type=Path, help="keep the runs here (default: a temporary folder)")
    parser.add_argument("--runs", type=Path, nargs="+", help="sweep these complete runs instead of training one")
    parser.add_argument("--figure", type=Path, help="with --runs: the PNG of time to --target against bandwidth")
    parser.add_argument("--target", type=float, action="append", help="accuracy target(s) of the figure (0.7)")
    args = parser.parse_args()

    from sfl_sim.api import _load
    from sfl_sim.runs.build import load_dataset
    from sfl_sim.runs.rundir.work import work_path

    out = args.out or Path(tempfile.mkdtemp(prefix="retime-bench-"))
    if args.runs:
        figure(args.runs, args.points, args.target or [0.7], args.figure or out / "tta_vs_bandwidth.png",
               load_dataset(_load("cellular_100clients")), out)
        return
    try:
        trained_s = train(out / "trained", args.rounds, record=True)
        size = work_path(out / "trained" / "scala").stat().st_size
        print(f"training: {args.rounds} rounds of SCALA in {trained_s:.1f} s host; work record {size} bytes, "
              f"{size / args.rounds:.0f} bytes per round")
        if args.overhead:
            plain_s = train(out / "plain", args.rounds, record=False)
            again_s = train(out / "again", args.rounds, record=True)
            print(f"recording: with {trained_s:.1f} s and {again_s:.1f} s, without {plain_s:.1f} s host: "
                  f"{(trained_s + again_s) / 2 / plain_s:.3f} x")
        dataset = load_dataset(_load("cellular_100clients"))
        start = time.perf_counter()
        sweep(out / "trained" / "scala", out / "sweep", args.points, dataset)
        sweep_s = time.perf_counter() - start
        print(f"sweep: {args.points} re-timings in {sweep_s:.1f} s host ({sweep_s / args.points:.2f} s each); "
              f"sweep / training = {sweep_s / trained_s:.3f}")
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
