"""How far the golden runs' trained state moves under other CPU kernels, and under a real change.

The golden test (``tests/algorithms/test_golden_runs.py``) compares each algorithm's
trained state with a stored fingerprint within a relative tolerance (``GOLDEN_RTOL``).  This
script measures the two sides the tolerance must lie between, over every golden case:

* **host noise** — the same runs with other kernels: 1 torch thread instead of 2, ATen's CPU
  capability forced to AVX2 or to no vectorisation (``ATEN_CPU_CAPABILITY``), oneDNN and MKL held
  to AVX2 (``ONEDNN_MAX_CPU_ISA``, ``MKL_CBWR``), oneDNN off (``torch.backends.mkldnn``), and all
  of those at once.  Each runs in its own process (the variables are read at start);
* **real changes** — the runs with one of the test's ``PERTURBATIONS``: learning rate x (1 + 1e-3),
  one optimizer step left out, one step taken twice, one minibatch with one sample changed.

Per setting it prints how many cases kept every bit, and the largest distance (the fingerprint's
relative error, :func:`state_fingerprint.float_error`, maximised over leaves) over the cases with
the case it came from; per change the smallest distance over the cases it changed, and how many
it left bit-identical (a change that no result depends on).  Host noise must stay far below
the tolerance, every change far above it.

    python bench/golden_tolerance.py                     # everything (about 2 minutes on 2 cores)
    python bench/golden_tolerance.py --cases fedavg/plain scala/lossy
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests are a package: tests.algorithms.test_golden_runs

#: name -> (torch threads, extra environment, oneDNN on) of each kernel setting.
SETTINGS: dict[str, tuple] = {
    "reference (2 threads)": (2, {}, True),
    "1 thread": (1, {}, True),
    "ATEN_CPU_CAPABILITY=avx2": (2, {"ATEN_CPU_CAPABILITY": "avx2"}, True),
    "ATEN_CPU_CAPABILITY=default": (2, {"ATEN_CPU_CAPABILITY": "default"}, True),
    "oneDNN+MKL AVX2": (2, {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}, True),
    "oneDNN off": (2, {}, False),
    "all of them, 1 thread": (1, {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2",
                                   "MKL_ENABLE_INSTRUCTIONS": "AVX2"}, False),
}


def _worker(out: Path, threads: int, mkldnn: bool, perturbation: str | None, cases: Sequence[str]) -> None:
    import torch

    import tests.algorithms.test_golden_runs as golden

    torch.set_num_threads(threads)
    torch.backends.mkldnn.enabled = mkldnn
    result = {}
    for case in cases or golden.case_ids():
        state, record = golden.train_case(case, perturbation)
        result[case] = {"state": golden.fingerprint(state), "sha256": golden.state_sha256(state), "record": record}
    out.write_text(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "cases": result}))


def _run(tmp: Path, label: str, threads: int, env: dict[str, str], mkldnn: bool, perturbation: str | None,
         cases: Sequence[str]) -> dict:
    out = tmp / f"{abs(hash(label))}.json"
    cmd = [sys.executable, __file__, "--worker", str(out), "--threads", str(threads), *(["--no-mkldnn"] * (not mkldnn)),
           *(["--perturbation", perturbation] if perturbation else []), "--cases", *cases]
    subprocess.run(cmd, check=True, env={**os.environ, **env})
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", default=[], help="golden cases (default: all)")
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS)[1:], choices=list(SETTINGS)[1:],
                        help="kernel settings to compare with the reference (default: all)")
    parser.add_argument("--changes", nargs="*", default=None, help="perturbations (default: all the test's)")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--no-mkldnn", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--perturbation", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker, args.threads, not args.no_mkldnn, args.perturbation, args.cases)
        return

    from state_fingerprint import state_distance

    from tests.algorithms.test_golden_runs import GOLDEN_RTOL, PERTURBATIONS, case_rtol

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        runs = {label: _run(Path(tmp), label, threads, env, mkldnn, None, args.cases)
                for label, (threads, env, mkldnn) in SETTINGS.items()
                if label == "reference (2 threads)" or label in args.settings}
        changed = {p: _run(Path(tmp), p, 2, {}, True, p, args.cases)
                   for p in (PERTURBATIONS if args.changes is None else args.changes)}
    ref = runs["reference (2 threads)"]["cases"]

    def compare(result: dict) -> list[tuple]:
        rows = []
        for case, got in result["cases"].items():
            want = ref[case]
            same_record = got["record"] == want["record"]
            distance = state_distance(got["state"], want["state"])
            rows.append((distance, case, got["sha256"] == want["sha256"], same_record))
        return rows

    wider = sorted({f"{c.split('/')[0]} {case_rtol(c):g}" for c in ref if case_rtol(c) != GOLDEN_RTOL})
    print(f"{len(ref)} golden cases; GOLDEN_RTOL = {GOLDEN_RTOL:g} (wider: {', '.join(wider) or 'none'}); "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("host noise (other kernels, same training): distance to the reference, the 3 largest")
    print(f"  {'setting':30} {'capability':11} {'bit-identical':>13}  largest (case: distance, / its tolerance)")
    noise = 0.0
    for label, result in runs.items():
        if label == "reference (2 threads)":
            continue
        rows = compare(result)
        assert all(r[3] for r in rows), f"{label}: counters, clock or rounds changed"
        worst = sorted(rows, key=lambda r: r[0] / case_rtol(r[1]), reverse=True)[:3]
        noise = max(noise, max(r[0] / case_rtol(r[1]) for r in rows))
        print(f"  {label:30} {result['capability']:11} {sum(r[2] for r in rows):>6}/{len(rows):<6}  "
              + "; ".join(f"{r[1]}: {r[0]:.3g}, {r[0] / case_rtol(r[1]):.2g}" for r in worst))
    print("\nreal changes (same kernels): distance over the cases they changed, the 3 smallest")
    print(f"  {'change':16} {'no effect':>9} {'record moved':>12}  smallest (case: distance, / its tolerance)")
    signal = math.inf
    for label, result in changed.items():
        rows = compare(result)
        moved = [r for r in rows if not r[2]]
        signal = min([signal] + [r[0] / case_rtol(r[1]) for r in moved])
        print(f"  {label:16} {len(rows) - len(moved):>9} {sum(not r[3] for r in rows):>12}  "
              + "; ".join(f"{r[1]}: {r[0]:.3g}, {r[0] / case_rtol(r[1]):.2g}"
                          for r in sorted(moved, key=lambda r: r[0] / case_rtol(r[1]))[:3]))
    print(f"\nlargest host noise {noise:.2g} of the tolerance, smallest real change {signal:.3g} times the tolerance "
          f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
