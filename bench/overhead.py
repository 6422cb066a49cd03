"""Overhead of the simulator: one SCALA round through the engine versus a bare PyTorch loop.

Both sides do the same training math on the default scenario (Fashion-MNIST, the scenario's
AlexNet, 10 clients of 100, B = 320, T = 5): per iteration every client forwards its minibatch,
the server runs once on the concatenation, updates with the P_s-adjusted loss, computes each G_k
with the P_k-adjusted loss, clients backpropagate; then the client models are averaged.  The
simulator side adds what it exists for: SimPy processes and events, FLOP metering, byte counting
and channel rates.  Rounds are interleaved (sim, bare, sim, bare, ...) so machine noise hits
both alike; the ratio of the medians is printed.  Target: <= 1.10 on CPU.

Usage: python bench/overhead.py [--rounds N] [--device cpu|cuda] [--scenario PATH]
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from sfl_sim import runner
from sfl_sim.algorithms.base import proportional_batch_sizes, weighted_average
from sfl_sim.algorithms.losses import label_distribution, logit_adjusted_cross_entropy
from sfl_sim.config import AlgorithmSpec, load_scenario
from sfl_sim.engine import Simulator
from sfl_sim.selection import cohort_size

ROOT = Path(__file__).resolve().parents[1]


def bare_round(client_model, server_model, setup, cohort, rng, lr):
    """SCALA's training math for one round in plain PyTorch, no engine."""
    sizes = setup.client_data_sizes[cohort]
    batch = proportional_batch_sizes(sizes, setup.batch_size)
    local = [copy.deepcopy(client_model) for _ in cohort]
    n_classes = setup.num_classes
    for _t in range(setup.local_iterations):
        acts, labels = [], []
        for model, k, b in zip(local, cohort, batch):
            ix = setup.client_indices[k]
            rows = ix[torch.from_numpy(rng.choice(len(ix), size=b, replace=False)).to(ix.device)]
            acts.append(model(setup.train_x[rows]))
            labels.append(setup.train_y[rows])
        cat = torch.cat([a.detach() for a in acts]).requires_grad_(True)
        y = torch.cat(labels)
        logits = server_model(cat)
        params = list(server_model.parameters())
        server_loss = logit_adjusted_cross_entropy(logits, y, label_distribution(y, n_classes))
        split = [int(b) for b in batch]
        client_loss = sum(logit_adjusted_cross_entropy(lk, yk, label_distribution(yk, n_classes))
                          for lk, yk in zip(logits.split(split), y.split(split)))
        grads = torch.autograd.grad(server_loss, params, retain_graph=True)
        g_acts = torch.autograd.grad(client_loss, cat)[0].split(split)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.add_(g, alpha=-lr)
        for model, a, g in zip(local, acts, g_acts):
            a.backward(g)
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(p.grad, alpha=-lr)
                    p.grad = None
    client_model.load_state_dict(weighted_average([m.state_dict() for m in local], sizes.astype(float)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="measured rounds per side")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "cellular_100clients.yaml"))
    args = parser.parse_args()

    cfg = load_scenario(args.scenario, extra={"device": args.device})
    run = runner.build_run(cfg, AlgorithmSpec(name="scala"))
    algo = run.algorithm
    sim = Simulator(run.cell, run.client_flops_per_s, cfg.server.compute_flops_per_s)
    bare_client = copy.deepcopy(algo.client_model)
    bare_server = copy.deepcopy(algo.server_model)
    bare_rng = np.random.default_rng(1)
    select_rng = np.random.default_rng(2)
    n = cohort_size(cfg.clients.count, cfg.clients.participation)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

    def sim_round(cohort):
        sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)

    def plain_round(cohort):
        bare_round(bare_client, bare_server, run.setup, cohort, bare_rng, cfg.training.learning_rate)

    sim_s, bare_s = [], []
    for i in range(args.rounds + 1):  # the first pair warms up (allocator, FLOP metering) and is dropped
        cohort = run.selector.select(cfg.clients.count, n, select_rng)
        for fn, out in ((sim_round, sim_s), (plain_round, bare_s)) if i % 2 == 0 else \
                ((plain_round, bare_s), (sim_round, sim_s)):
            sync()
            start = time.perf_counter()
            fn(cohort)
            sync()
            if i > 0:
                out.append(time.perf_counter() - start)
    ratio = statistics.median(sim_s) / statistics.median(bare_s)
    print(f"device {args.device}, {args.rounds} rounds each, torch threads {torch.get_num_threads()}")
    print(f"simulator round: median {statistics.median(sim_s):.3f} s  (min {min(sim_s):.3f})")
    print(f"bare loop round: median {statistics.median(bare_s):.3f} s  (min {min(bare_s):.3f})")
    print(f"overhead ratio (simulator / bare): {ratio:.3f}  target <= 1.10")


if __name__ == "__main__":
    main()
