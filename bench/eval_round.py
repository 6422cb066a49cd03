"""Host time of an evaluated round against a training-only round, through the whole runner.

Runs the default scenario's FedAvg and SCALA for ``--rounds`` rounds with one evaluation, after
the last round (and the round-0 one every run makes), exactly as ``sfl-sim scenario`` would —
the rows, ``classes.csv``, the summary, the checkpoint — and reads each round's host time from
``rounds.csv`` (``round_host_time_s``).  It prints, per algorithm, the median training-only
round (round 1 is left out: it warms up the allocator, the FLOP meter and the working copies),
the evaluated round and their ratio.  The ratio is measured inside one run, from adjacent rounds,
so a busy machine slows both alike; the load average before and after is printed with it.

An evaluated round adds the evaluation of the global model on the test set (2,000 images in the
default scenario) and its rows; anything more a round does only when it is evaluated shows up
here.  ``--max-ratio`` flags a ratio above it.  ``--vacant`` adds a FedAvg run with
``metrics.local_vacant_class_accuracy: true`` (FedVLS's probe), to show what that metric costs.

    python bench/eval_round.py                        # FedAvg and SCALA, 4 rounds, about 2 minutes
    python bench/eval_round.py --vacant --rounds 6
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sfl_sim.config import load_scenario  # noqa: E402
from sfl_sim.config.scenario_files import resolve_scenario  # noqa: E402
from sfl_sim.runs import runner  # noqa: E402
from sfl_sim.runs.host import load_average  # noqa: E402
from sfl_sim.runs.rundir.schema import ROUNDS_FILE  # noqa: E402


def measure(algorithm: str, rounds: int = 4, scenario: str = "cellular_100clients", threads: int = 1,
            vacant: bool = False, device: str = "cpu") -> dict[str, float]:
    """Round host times of one run of ``algorithm``: ``rounds`` rounds, evaluated after the last.

    Returns
    -------
    dict
        ``training_s`` (median of rounds 2 .. rounds-1), ``evaluated_s`` (the last round) and
        ``ratio`` (evaluated / training).
    """
    if rounds < 3:
        raise ValueError(f"--rounds: got {rounds}; allowed: an integer >= 3 (round 1 warms up, the last is evaluated)")
    with tempfile.TemporaryDirectory() as out:
        cfg = load_scenario(resolve_scenario(scenario), overrides=[
            f"algorithms=[{{name: {algorithm}}}]", f"rounds={rounds}", f"eval_every_rounds={rounds}",
            f"training.torch_threads={threads}", f"metrics.local_vacant_class_accuracy={str(vacant).lower()}"],
            extra={"output_dir": out, "device": device})
        runner.run_scenario(cfg, progress=False)
        with (Path(out) / algorithm / ROUNDS_FILE).open(newline="") as fh:
            host_s = [float(r["round_host_time_s"]) for r in csv.DictReader(fh)]
    training = statistics.median(host_s[1:-1])
    return {"training_s": training, "evaluated_s": host_s[-1], "ratio": host_s[-1] / training}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithms", nargs="+", default=["fedavg", "scala"])
    parser.add_argument("--rounds", type=int, default=4, help="rounds per run (>= 3); the last one is evaluated")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--vacant", action="store_true", help="also FedAvg with metrics.local_vacant_class_accuracy")
    parser.add_argument("--max-ratio", type=float, default=2.0, help="flag an evaluated / training ratio above this")
    parser.add_argument("--scenario", default="cellular_100clients")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args(argv)
    runs = [(a, False) for a in args.algorithms] + ([("fedavg", True)] if args.vacant else [])
    print(f"{args.scenario}, {args.rounds} rounds per run (evaluated: the last), {args.threads} torch thread(s), "
          f"device {args.device}; load average before: {load_average()}", flush=True)
    print(f"{'run':>22}  {'training round s':>16}  {'evaluated round s':>17}  {'ratio':>6}")
    flagged: list[str] = []
    for algorithm, vacant in runs:
        r = measure(algorithm, args.rounds, args.scenario, args.threads, vacant, args.device)
        name = algorithm + (" + vacant metric" if vacant else "")
        mark = ""
        if not vacant and r["ratio"] > args.max_ratio:
            flagged.append(name)
            mark = f"  above {args.max_ratio:g}"
        print(f"{name:>22}  {r['training_s']:>16.3f}  {r['evaluated_s']:>17.3f}  {r['ratio']:>6.2f}{mark}", flush=True)
    print(f"load average after: {load_average()}")
    if flagged:
        print(f"an evaluated round costs more than {args.max_ratio:g} training rounds for: {', '.join(flagged)} "
              f"(see round_host_time_s in rounds.csv)")


if __name__ == "__main__":
    main()
