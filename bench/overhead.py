"""Overhead of the simulator: SCALA rounds through the engine versus a bare PyTorch loop, per cohort size.

Both sides do the same training math on the default scenario's data and model: per iteration
every client forwards its minibatch, the server runs once on the concatenation, updates with the
P_s-adjusted loss, computes each G_k with the P_k-adjusted loss, clients backpropagate; then the
client models are averaged.  The bare loop is written as one would by hand, with preallocated
client models (weights copied in each round).  The simulator side adds what it exists for: SimPy
processes and events, FLOP metering, byte counting, channel rates, the straggler machinery.

For each cohort size n (``--sizes``; clients per round) the federation has 10 n clients (10 %
participation, as the scenario), every client draws ``--samples-per-client`` samples (B = n x
that) and runs ``--local-iterations`` iterations.  Rounds are interleaved (sim, bare, bare, sim,
...) so machine noise hits both alike; the first pair warms up and is dropped; the ratio of the
medians is printed per size, of host (wall) seconds and of this process's CPU seconds, with
``/proc/loadavg`` before and after: on a machine other jobs load, a round waits for a core for
a varying while, which the wall clock counts and the CPU time does not (with 1 thread the CPU
ratio is the steadier one; on a GPU only the wall clock means anything).  Target: <= 1.05 at every
size.  Torch runs ``--threads`` threads (default 1: on a shared 2-core machine a second thread
mostly waits for a core, which makes both sides noisy).

The simulator side also charges each round to the energy ledger and writes its ``energy.csv``
rows, as a run does (:func:`sfl_sim.runs.runner.charge_energy`); that step is timed on its own too, and
its median over the median simulator round without it is printed as the ledger's share (``-``
with ``--set energy.enabled=false``).  ``--set FIELD=VALUE`` changes the scenario as
``sfl-sim scenario --set`` does.

Quick (default, a few minutes on a 2-core CPU): 8 samples per client, 2 iterations, 3 rounds.
The scenario's own work per client (B_k = 32, T = 5) and more rounds:

    python bench/overhead.py --samples-per-client 32 --local-iterations 5 --rounds 8
    python bench/overhead.py --device cuda --sizes 10 100 1000
"""
from __future__ import annotations

import argparse
import copy
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

from sfl_sim.algorithms._exec.working_copies import WorkingCopies  # noqa: E402
from sfl_sim.algorithms.base import proportional_batch_sizes, weighted_average  # noqa: E402
from sfl_sim.algorithms.terms.logit_adjustment import label_distribution, logit_adjusted_cross_entropy  # noqa: E402
from sfl_sim.clients.selection import cohort_size  # noqa: E402
from sfl_sim.config import AlgorithmSpec, apply_override, load_scenario_raw, parse_override, validate  # noqa: E402
from sfl_sim.config.scenario_files import resolve_scenario  # noqa: E402
from sfl_sim.engine import Simulator  # noqa: E402
from sfl_sim.runs import runner  # noqa: E402
from sfl_sim.runs.host import LongLivedObjects, load_average  # noqa: E402
from sfl_sim.runs.rundir.files import RunDir  # noqa: E402


def bare_round(client_model, server_model, copies, setup, cohort, rng, lr):
    """SCALA's training math for one round in plain PyTorch, no engine."""
    sizes = setup.client_data_sizes[cohort]
    batch = proportional_batch_sizes(sizes, setup.batch_size)
    local = copies.take(len(cohort))  # preallocated, weights copied in
    n_classes = setup.num_classes
    for _t in range(setup.local_iterations):
        acts, labels = [], []
        for model, k, b in zip(local, cohort, batch, strict=True):
            ix = setup.client_indices[k]
            pick = rng.choice(len(ix), size=b, replace=b > len(ix))
            rows = ix[torch.from_numpy(pick).to(ix.device)]
            acts.append(model(setup.train_x[rows]))
            labels.append(setup.train_y[rows])
        cat = torch.cat([a.detach() for a in acts]).requires_grad_(True)
        y = torch.cat(labels)
        logits = server_model(cat)
        params = list(server_model.parameters())
        server_loss = logit_adjusted_cross_entropy(logits, y, label_distribution(y, n_classes))
        split = [int(b) for b in batch]
        client_loss = sum(logit_adjusted_cross_entropy(lk, yk, label_distribution(yk, n_classes))
                          for lk, yk in zip(logits.split(split), y.split(split), strict=True))
        grads = torch.autograd.grad(server_loss, params, retain_graph=True)
        g_acts = torch.autograd.grad(client_loss, cat)[0].split(split)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p.add_(g, alpha=-lr)
        for model, a, g in zip(local, acts, g_acts, strict=True):
            a.backward(g)
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(p.grad, alpha=-lr)
                    p.grad = None
    client_model.load_state_dict(weighted_average([m.state_dict() for m in local], sizes.astype(float)))


def measure(size: int, scenario: str = "cellular_100clients", device: str = "cpu", rounds: int = 3,
            samples_per_client: int = 8, local_iterations: int = 2, overrides: Sequence[str] = ()) -> dict[str, float]:
    """Median host seconds per round of the simulator and of the bare loop at ``size`` clients per
    round, and of the simulator's energy-ledger step (``nan`` with the ledger off)."""
    raw = load_scenario_raw(resolve_scenario(scenario))
    for text in overrides:
        apply_override(raw, *parse_override(text))
    raw.update(device=device, eval_samples=100, algorithms=[{"name": "scala"}])
    raw.setdefault("clients", {}).update(count=10 * size, participation=0.1)
    raw.setdefault("training", {}).update(batch_size=samples_per_client * size, local_iterations=local_iterations)
    cfg = validate(raw)
    run = runner.build_run(cfg, AlgorithmSpec(name="scala"))
    algo = run.algorithm
    sim = Simulator(run.cell, run.client_flops_per_s, cfg.server.compute_flops_per_s)
    bare_client = copy.deepcopy(algo.client_model)
    bare_server = copy.deepcopy(algo.server_model)
    copies = WorkingCopies(bare_client)
    bare_rng = np.random.default_rng(1)
    select_rng = np.random.default_rng(2)
    n = cohort_size(cfg.clients.count, cfg.clients.participation)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    long_lived = LongLivedObjects()  # as run_one does after the first round

    tmp = tempfile.TemporaryDirectory(prefix="overhead_energy_")  # energy.csv written as a run writes it
    files = RunDir(Path(tmp.name))
    files.start_logs(run.setup.num_classes, energy=run.ledger is not None)
    ledger_s: list[float] = []
    ledger_cpu_s: list[float] = []
    rnd = [0]

    def sim_round(cohort):
        sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
        if run.ledger is not None:  # as a run's round: charge the ledger, append the energy.csv rows
            start, start_cpu = time.perf_counter(), time.process_time()
            rnd[0] += 1
            rows, _ = runner.charge_energy(run, sim, rnd[0])
            files.append_energy(rows)
            ledger_s.append(time.perf_counter() - start)
            ledger_cpu_s.append(time.process_time() - start_cpu)

    def plain_round(cohort):
        bare_round(bare_client, bare_server, copies, run.setup, cohort, bare_rng, cfg.training.learning_rate)

    sim_s: list[float] = []
    bare_s: list[float] = []
    cpu: dict[str, list[float]] = {"sim": [], "bare": []}
    try:
        for i in range(rounds + 1):  # the first pair warms up (allocator, FLOP metering, copies) and is dropped
            cohort = run.selector.select(cfg.clients.count, n, select_rng)
            order = ((sim_round, sim_s, "sim"), (plain_round, bare_s, "bare")) if i % 2 == 0 else \
                ((plain_round, bare_s, "bare"), (sim_round, sim_s, "sim"))
            for fn, out, side in order:
                sync()
                start, start_cpu = time.perf_counter(), time.process_time()
                fn(cohort)
                sync()
                if i > 0:
                    out.append(time.perf_counter() - start)
                    cpu[side].append(time.process_time() - start_cpu)
            if i == 0:
                long_lived.after_round()
    finally:
        long_lived.end()
        tmp.cleanup()
    ledger = statistics.median(ledger_s[1:]) if ledger_s else float("nan")  # [0]: the warm-up round's
    ledger_cpu = statistics.median(ledger_cpu_s[1:]) if ledger_cpu_s else float("nan")
    return {"clients_per_round": n, "sim_s": statistics.median(sim_s), "bare_s": statistics.median(bare_s),
            "ratio": statistics.median(sim_s) / statistics.median(bare_s),
            "cpu_ratio": statistics.median(cpu["sim"]) / statistics.median(cpu["bare"]),
            "ledger_s": ledger,
            "ledger_share": ledger / (statistics.median(sim_s) - ledger),
            "ledger_cpu_share": ledger_cpu / (statistics.median(cpu["sim"]) - ledger_cpu)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000], help="clients per round")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds per side and size")
    parser.add_argument("--samples-per-client", type=int, default=8, help="B_k (the scenario: 32)")
    parser.add_argument("--local-iterations", type=int, default=2, help="T (the scenario: 5)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--scenario", default="cellular_100clients")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                        help="scenario override, as sfl-sim scenario --set (e.g. energy.enabled=false)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here")
    print(f"SCALA, {args.scenario} model and data, device {args.device}, B_k = {args.samples_per_client}, "
          f"T = {args.local_iterations}, medians of {args.rounds} rounds per side"
          + (f", --set {' '.join(args.overrides)}" if args.overrides else ""))
    print(f"load average before: {load_average()}")
    print(f"{'clients/round':>13}  {'simulator s':>11}  {'bare loop s':>11}  {'ratio':>6}  {'CPU-time ratio':>14}"
          f"  {'ledger s':>8}  {'ledger share':>12}  {'(CPU time)':>10}  (target <= 1.05)")
    for size in args.sizes:
        r = measure(size, args.scenario, args.device, args.rounds, args.samples_per_client, args.local_iterations,
                    args.overrides)
        ledger = ("       -             -           -" if r["ledger_s"] != r["ledger_s"] else
                  f"{r['ledger_s']:>8.4f}  {100 * r['ledger_share']:>11.2f}%  {100 * r['ledger_cpu_share']:>9.2f}%")
        print(f"{r['clients_per_round']:>13}  {r['sim_s']:>11.3f}  {r['bare_s']:>11.3f}  {r['ratio']:>6.3f}  "
              f"{r['cpu_ratio']:>14.3f}  {ledger}", flush=True)
    print(f"torch threads {torch.get_num_threads()}; load average after: {load_average()}")


if __name__ == "__main__":
    main()
