"""Synthetic run directories in the simulator's real format (for the analysis tests).

Files are written the way :class:`sfl_sim.runs.rundir.files.RunDir` writes them: ``csv.writer`` rows (CRLF line
ends), ``yaml.safe_dump`` of a resolved scenario, ``json.dumps`` of a summary with
``schema_version``. Values are deterministic functions of (algorithm, setting, seed).
"""

from __future__ import annotations

import copy
import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from sfl_sim.runs.rundir.schema import ENERGY_COLUMNS, METRICS_COLUMNS, ROUNDS_COLUMNS

BASE_SCENARIO: dict[str, Any] = {
    "name": "synthetic",
    "seed": 0,
    "rounds": 10,
    "eval_every_rounds": 2,
    "eval_samples": 2000,
    "eval_batch_size": 1000,
    "target_accuracies": [0.5, 0.6, 0.7],
    "device": "auto",
    "output_dir": "runs/synthetic",
    "training": {"batch_size": 320, "local_iterations": 5, "learning_rate": 0.01, "torch_threads": None},
    "data": {
        "dataset": {"name": "fashion_mnist", "data_root": None},
        "partition": {"name": "quantity", "alpha": 2},
    },
    "model": {"name": "alexnet", "split_point": "S2", "params": {"conv_channels": [32, 64]}},
    "clients": {"count": 100, "participation": 0.1, "selection": None},
    "server": {"compute_flops_per_s": 1.0e12},
    "cell": {"placement": {"name": "uniform_disc", "radius_m": 500.0}, "pathloss": {"name": "tr36814_macro"}},
}

# per algorithm: (asymptotic accuracy, seconds per round, uplink bytes per round, client, server FLOPs)
ALGOS: dict[str, tuple[float, float, float, float, float]] = {
    "scala": (0.80, 10.0, 2.0e6, 1.0e9, 4.0e9),
    "fedavg": (0.72, 25.0, 9.0e6, 6.0e9, 0.0),
    "splitfed_v1": (0.76, 12.0, 2.5e6, 1.2e9, 4.5e9),
    "fedprox": (0.70, 26.0, 9.0e6, 6.5e9, 0.0),
    "fedlc": (0.74, 25.0, 9.0e6, 6.0e9, 0.0),
}


def _write_csv(path: Path, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        w.writerows(rows)


def scenario_for(algorithm: str, seed: int, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The resolved scenario of one synthetic run (dotted-path overrides applied)."""
    sc = copy.deepcopy(BASE_SCENARIO)
    sc["seed"] = seed
    for path, value in (overrides or {}).items():
        node = sc
        parts = path.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = copy.deepcopy(value)
    sc["algorithm"] = {"name": algorithm}
    sc["device_used"] = "cpu"
    return sc


def write_run(
    run_dir: Path,
    algorithm: str,
    seed: int,
    *,
    overrides: dict[str, Any] | None = None,
    setting_index: int = 0,
    round0: bool = True,
    with_rounds_csv: bool = True,
    status: str = "complete",
    coordinates: dict[str, Any] | None = None,
    label: str | None = None,
    accuracies: Sequence[float] | None = None,
    duration_jitter: float = 0.2,
    rounds_run: int | None = None,
    round0_accuracy: float = 0.1,
) -> Path:
    """Write one run directory; returns it.

    The accuracy after round r is ``a (1 - exp(-r / 3)) + noise`` (noise from the seed), or the
    given ``accuracies`` (one per evaluated round, round 0 excluded). Round durations and bytes
    vary with the seed so that means and stds are not trivial: a round lasts
    ``s (1 + duration_jitter U)`` seconds, U uniform in [0, 1), so a larger jitter spreads the
    seeds' evaluation and end times. ``rounds_run`` stops the run after that many rounds (of the
    scenario's ``rounds``), as a time budget or a kill would.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    sc = scenario_for(algorithm, seed, overrides)
    if label is not None:
        sc["algorithm"]["label"] = label
    n_rounds, every = sc["rounds"], sc["eval_every_rounds"]
    acc_inf, sec, up, cf, sf = ALGOS.get(algorithm, (0.6, 15.0, 3.0e6, 2.0e9, 1.0e9))
    rng = np.random.default_rng([seed, setting_index, sum(map(ord, algorithm))])
    acc_inf = acc_inf - 0.03 * setting_index

    rounds_rows, metrics_rows, energy_rows = [], [], []
    t = 0.0
    cum = np.zeros(4)
    if round0:
        metrics_rows.append([0, 0.0, round0_accuracy, 2.30, 0, 0, 0.0, 0.0, 0.01])
    last = n_rounds if rounds_run is None else rounds_run
    evals = [r for r in range(1, last + 1) if r % every == 0 or r == last]
    for r in range(1, last + 1):
        dur = float(sec * (1.0 + duration_jitter * rng.random()))
        t += dur
        per = np.array([up * (1 + 0.1 * rng.random()), up / 2, cf, sf])
        per[:2] = np.round(per[:2])
        cum += per
        # client energy: 2 W for the round's duration, client c of the 10 taking a (c + 1) / 55 share
        # (no random draw, so the other columns are as they were before energy existed)
        shares = [2.0 * dur * (c + 1) / 55 for c in range(10)]
        energy_rows += [[r, c, 0.0, 0.0, 0.0, e, e] for c, e in enumerate(shares)]
        given = dict(zip(ROUNDS_COLUMNS[:11], [r, t, dur, 0.01, int(per[0]), int(per[1]), per[2], per[3], 0, 0, 0],
                         strict=True))
        given.update(client_energy_j=math.fsum(shares), cohort=" ".join(map(str, range(10))), dropped="")
        rounds_rows.append([given.get(c, 0) for c in ROUNDS_COLUMNS])  # columns added later: 0
        if r in evals:
            k = evals.index(r)
            acc = (accuracies[k] if accuracies is not None
                   else float(acc_inf * (1 - math.exp(-r / 3)) + 0.02 * rng.standard_normal()))
            metrics_rows.append([r, t, acc, 1.0 - acc, int(cum[0]), int(cum[1]), cum[2], cum[3], 0.01 * r])
    _write_csv(run_dir / "metrics.csv", METRICS_COLUMNS, metrics_rows)
    if with_rounds_csv:
        _write_csv(run_dir / "rounds.csv", ROUNDS_COLUMNS, rounds_rows)
        _write_csv(run_dir / "energy.csv", ENERGY_COLUMNS, energy_rows)
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump(sc, sort_keys=False))
    trained = [row for row in metrics_rows if row[0] >= 1]
    summary: dict[str, Any] = {
        "schema_version": 1,
        "label": label or algorithm,
        "algorithm": algorithm,
        "status": status,
        "evaluated": "global model on the test set",
        "seed": seed,
        "rounds_completed": trained[-1][0] if trained else 0,
        "rounds_planned": n_rounds,
        "final_test_accuracy": trained[-1][2] if trained else None,
        "best_test_accuracy": max(row[2] for row in trained) if trained else None,
    }
    if coordinates is not None:
        summary["coordinates"] = coordinates
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    _write_csv(run_dir / "cell.csv", ["client", "x_m", "y_m"], [[i, 1.0 * i, 2.0 * i] for i in range(3)])
    return run_dir


PARTITIONS: list[dict[str, Any]] = [
    {"name": "quantity", "alpha": 2},
    {"name": "quantity", "alpha": 4},
    {"name": "dirichlet", "beta": 0.05},
    {"name": "dirichlet", "beta": 0.1},
]


def write_study(
    root: Path,
    algorithms: Sequence[str] = ("scala", "fedavg"),
    seeds: Sequence[int] = (0, 1, 2),
    partitions: Sequence[dict[str, Any]] = PARTITIONS[:2],
    *,
    coordinates: bool = False,
    **kwargs: Any,
) -> list[Path]:
    """A study directory: one run per (partition, algorithm, seed), named by its coordinates."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "study.yaml").write_text(yaml.safe_dump({
        "base": "synthetic", "seeds": list(seeds),
        "grid": {"data.partition": list(partitions), "algorithms": [[{"name": a}] for a in algorithms]},
    }))
    dirs = []
    for si, part in enumerate(partitions):
        tag = part["name"] + "_" + "_".join(f"{k}{v}" for k, v in part.items() if k != "name")
        for a in algorithms:
            for s in seeds:
                coords = ({"data.partition": part, "algorithms": [{"name": a}], "seed": s}
                          if coordinates else None)
                dirs.append(write_run(root / f"partition={tag}" / f"algorithms={a}" / f"seed={s}", a, s,
                                      overrides={"data.partition": part}, setting_index=si,
                                      coordinates=coords, **kwargs))
    return dirs
