"""Model-inversion attack on SCALA and SCALA-PE (SCALA journal §5.7, Table VI style).

Trains ``scala`` and ``scala_pe`` with :func:`sfl_sim.runs.runner.build_run` / :func:`run_one` on a
scenario (default: ``scenarios/cellular_100clients.yaml``, Fashion-MNIST) with VGG-11 at split
S2 (narrow widths by default, see ``--channels``), then, for each trained client-side model
(SCALA-PE: with its bottleneck encoder), trains a separately initialised attacker
(:func:`sfl_sim.privacy.train_attacker`) and prints test accuracy and the attacker's
reconstruction MSE / SSIM / PSNR on test images side by side.

Attacker's auxiliary data: the last ``--aux`` images of the training set, *held out* -- the
clients' partition is built from the rest (the attacker has data from the same distribution,
but not the clients' own samples).  Reconstructions are scored on the first ``--attack-test``
test images, in [0, 1] pixels (data range 1).

Example (CPU, a few minutes)::

    OMP_NUM_THREADS=1 python bench/privacy_attack.py --rounds 10
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from sfl_sim.config import load_scenario_raw, validate
from sfl_sim.privacy import evaluate_attack, train_attacker
from sfl_sim.runs.host import eval_batch_size
from sfl_sim.runs.runner import build_run, evaluate, run_one


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default="scenarios/cellular_100clients.yaml")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--channels", type=int, nargs=8, default=[16, 32, 64, 64, 128, 128, 128, 128],
                    help="VGG-11 conv widths (narrow by default)")
    ap.add_argument("--fc", type=int, nargs=2, default=[128, 128])
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--bottleneck-channels", type=int, default=8)
    ap.add_argument("--bottleneck-stride", type=int, default=2)
    ap.add_argument("--inverter-channels", type=int, default=32, help="simulated inverter (SCALA-PE)")
    ap.add_argument("--attacker-channels", type=int, default=64)
    ap.add_argument("--attacker-epochs", type=int, default=5)
    ap.add_argument("--aux", type=int, default=5000, help="held-out training images for the attacker")
    ap.add_argument("--attack-test", type=int, default=1000)
    ap.add_argument("--eval-samples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="/tmp/sfl_privacy_attack")
    args = ap.parse_args()

    raw = load_scenario_raw(args.scenario)
    raw.update(rounds=args.rounds, seed=args.seed, eval_every_rounds=args.rounds, eval_samples=args.eval_samples,
               output_dir=args.out, device="cpu")
    raw["model"] = {"name": "vgg11", "split_point": "S2",
                    "params": {"conv_channels": list(args.channels), "fc_features": list(args.fc)}}
    raw["algorithms"] = [{"name": "scala"},
                         {"name": "scala_pe", "alpha": args.alpha, "bottleneck_channels": args.bottleneck_channels,
                          "bottleneck_stride": args.bottleneck_stride, "inverter_channels": args.inverter_channels}]
    cfg = validate(raw)

    from sfl_sim.data import DATASETS  # loaded once, the held-out slice cut off before partitioning
    full = DATASETS.create(cfg.data.dataset.name, **cfg.data.dataset.params).load()
    n = len(full.train_y)
    clients_data = dataclasses.replace(full, train_x=full.train_x[:n - args.aux], train_y=full.train_y[:n - args.aux])
    aux_x = full.tensors("train", "cpu")[0][n - args.aux:]
    test_x = full.tensors("test", "cpu")[0][:args.attack_test]

    rows = []
    for spec in cfg.algorithms:
        t0 = time.time()
        run = build_run(cfg, spec, dataset=clients_data)
        run_one(run, Path(args.out) / spec.label, progress=False)
        algo = run.algorithm
        acc, _ = evaluate(algo.global_model(), run.test_x, run.test_y, eval_batch_size(cfg.eval_batch_size, run.device))
        client = algo.client_model
        attacker = train_attacker(client, aux_x, mean=full.mean, std=full.std, channels=args.attacker_channels,
                                  epochs=args.attacker_epochs, seed=args.seed)
        scores = evaluate_attack(client, attacker, test_x, mean=full.mean, std=full.std)
        act_shape = tuple(client(aux_x[:1]).shape[1:])
        rows.append({"algorithm": spec.name, "accuracy": acc, **scores, "activation_shape": act_shape,
                     "seconds": round(time.time() - t0, 1)})
        print(json.dumps(rows[-1]), flush=True)

    print(f"\n{args.rounds} rounds, VGG-11 S2 conv widths {args.channels}, alpha={args.alpha}, bottleneck "
          f"{args.bottleneck_channels}ch/stride {args.bottleneck_stride}, attacker {args.attacker_channels}ch "
          f"x {args.attacker_epochs} epochs on {args.aux} held-out images, scored on {args.attack_test} test images")
    print(f"{'method':<10} {'accuracy':>9} {'MSE':>8} {'SSIM':>7} {'PSNR':>7}  activations")
    for r in rows:
        print(f"{r['algorithm']:<10} {r['accuracy']:>9.4f} {r['mse']:>8.4f} {r['ssim']:>7.4f} {r['psnr']:>7.2f}  "
              f"{r['activation_shape']}")


if __name__ == "__main__":
    main()
