"""Host cost of the per-client record (``clients.csv``, ``metrics.client_record``) per round.

SCALA rounds of the default scenario through the simulator at ``--sizes`` clients per round (10 n
clients, 10 % participation, as ``bench/overhead.py``), each followed, as a run's round is, by the
record step: read the round (:func:`sfl_sim.engine.client_rounds.client_rounds`), make its rows
(:func:`sfl_sim.runs.runner.client_rows`) and append them to ``clients.csv``
(:meth:`sfl_sim.runs.rundir.files.RunDir.append_clients`).  Rounds alternate with and without the
step (on, off, off, on, ...) so machine noise hits both alike; the first pair warms up and is
dropped.  Printed per size, with ``/proc/loadavg`` before and after:

* the step's own median (wall and CPU seconds) and its share of the median round without it:
  the number the goal (<= 2 % of a round) is about, read in the same rounds;
* the ratio of the medians of rounds with and without it (side by side; on a loaded machine the
  rounds' noise is larger than the step, so this ratio scatters around 1 by more than it costs).

Quick (default, a minute or two on a 2-core CPU): 8 samples per client, 2 iterations, 4 rounds each.

    python bench/client_record.py
    python bench/client_record.py --sizes 100 --rounds 8 --samples-per-client 32 --local-iterations 5
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from sfl_sim.clients.selection import cohort_size  # noqa: E402
from sfl_sim.config import AlgorithmSpec, apply_override, load_scenario_raw, parse_override, validate  # noqa: E402
from sfl_sim.config.scenario_files import resolve_scenario  # noqa: E402
from sfl_sim.engine import Simulator  # noqa: E402
from sfl_sim.engine.client_rounds import client_rounds  # noqa: E402
from sfl_sim.runs import runner  # noqa: E402
from sfl_sim.runs.host import LongLivedObjects, load_average  # noqa: E402
from sfl_sim.runs.rundir.files import RunDir  # noqa: E402


def measure(size: int, scenario: str = "cellular_100clients", rounds: int = 4, samples_per_client: int = 8,
            local_iterations: int = 2, overrides: Sequence[str] = ()) -> dict[str, float]:
    """Median host seconds of a round without the record step, of the step, and of a round with it,
    at ``size`` clients per round (wall and CPU time)."""
    raw = load_scenario_raw(resolve_scenario(scenario))
    for text in overrides:
        apply_override(raw, *parse_override(text))
    raw.update(eval_samples=100, algorithms=[{"name": "scala"}])
    raw.setdefault("clients", {}).update(count=10 * size, participation=0.1)
    raw.setdefault("training", {}).update(batch_size=samples_per_client * size, local_iterations=local_iterations)
    cfg = validate(raw)
    run = runner.build_run(cfg, AlgorithmSpec(name="scala"))
    algo = run.algorithm
    sim = Simulator(run.cell, run.client_flops_per_s, cfg.server.compute_flops_per_s)
    select_rng = np.random.default_rng(2)
    n = cohort_size(cfg.clients.count, cfg.clients.participation)
    long_lived = LongLivedObjects()  # as run_one does after the first round
    tmp = tempfile.TemporaryDirectory(prefix="client_record_")
    files = RunDir(Path(tmp.name))
    files.start_logs(run.setup.num_classes, clients=True)
    wall: dict[str, list[float]] = {"on": [], "off": [], "step": []}
    cpu: dict[str, list[float]] = {"on": [], "off": [], "step": []}
    rnd = [0]

    def one_round(record: bool, keep: bool) -> None:
        cohort = run.selector.select(cfg.clients.count, n, select_rng)
        start, start_cpu = time.perf_counter(), time.process_time()
        sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
        step_wall = step_cpu = 0.0
        if record:  # as a run's round: read the round before the cell moves, append the rows
            s_wall, s_cpu = time.perf_counter(), time.process_time()
            rnd[0] += 1
            files.append_clients(runner.client_rows(rnd[0], client_rounds(sim)))
            step_wall, step_cpu = time.perf_counter() - s_wall, time.process_time() - s_cpu
        if keep:
            side = "on" if record else "off"
            wall[side].append(time.perf_counter() - start)
            cpu[side].append(time.process_time() - start_cpu)
            if record:
                wall["step"].append(step_wall)
                cpu["step"].append(step_cpu)

    try:
        for i in range(rounds + 1):  # the first pair warms up and is dropped
            for record in ((True, False) if i % 2 == 0 else (False, True)):
                one_round(record, keep=i > 0)
            if i == 0:
                long_lived.after_round()
    finally:
        long_lived.end()
        tmp.cleanup()
    med = {k: statistics.median(v) for k, v in wall.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    return {"clients_per_round": n, "off_s": med["off"], "on_s": med["on"], "step_s": med["step"],
            "step_share": med["step"] / med["off"], "step_cpu_share": med_cpu["step"] / med_cpu["off"],
            "ratio": med["on"] / med["off"], "cpu_ratio": med_cpu["on"] / med_cpu["off"]}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100], help="clients per round")
    parser.add_argument("--rounds", type=int, default=4, help="rounds each way, after a warm-up pair")
    parser.add_argument("--samples-per-client", type=int, default=8)
    parser.add_argument("--local-iterations", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                        help="scenario override, as sfl-sim scenario --set")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"load average before: {load_average()}", flush=True)
    print(f"{'clients/round':>13}  {'round s':>8}  {'record s':>9}  {'share':>7}  {'(CPU)':>7}  "
          f"{'on/off':>7}  {'(CPU)':>7}  (goal: share <= 2 %)", flush=True)
    for size in args.sizes:
        r = measure(size, rounds=args.rounds, samples_per_client=args.samples_per_client,
                    local_iterations=args.local_iterations, overrides=args.overrides)
        print(f"{r['clients_per_round']:>13}  {r['off_s']:>8.3f}  {r['step_s']:>9.5f}  {100 * r['step_share']:>6.2f}%  "
              f"{100 * r['step_cpu_share']:>6.2f}%  {r['ratio']:>7.3f}  {r['cpu_ratio']:>7.3f}", flush=True)
    print(f"load average after: {load_average()}", flush=True)


if __name__ == "__main__":
    main()
