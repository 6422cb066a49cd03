"""The compiled transfer integration's kernel (:func:`sfl_sim.channel.transfer_compiled.integrate`)
against an older revision's, on the same synthetic transfers: host nanoseconds per Gauss-Legendre
node.

Synthetic transfers (no cell, no engine): a started ``jakes`` fading (M = 16) of 100 clients at
2 GHz and ``--speeds-kmh`` (panels of a fifth of the coherence time, as the radio state cuts
them), 400 transfers from random starts lasting 20 to 300 ms (about 2 to 35 panels at 3 km/h,
20 to 350 at 30 km/h, 80 to 1400 at 120 km/h), the Shannon rate on tables of a position grid of
0.1 s (large-scale gains around 20 dB SNR).  Both kernels are compiled first, then called
alternately (``--repeats`` times each), fresh outputs each call; printed: the median ns per node
of each and their ratio, and the largest difference of the ends relative to the transfers'
durations.

    python bench/transfer_kernel.py [--old 224704a] [--repeats 15] [--speeds-kmh 3 30 120]

``--old`` names a git revision whose ``sfl_sim/channel/transfer_compiled.py`` is loaded (by
``git show``) as the old kernel.

Measured (``--repeats 21``, twice, load 1.7-1.8 on the 2 shared cores: other helpers' work; the
old kernel 224704a, its phasors turned panel to panel, against the cosines' recurrence of
:mod:`sfl_sim.channel.transfer_compiled`)::

    km/h   nodes     old ns/node    new ns/node    new/old     max |d end| / duration
    3      17 590    108.5 / 113.7  83.8 / 88.4    0.77 / 0.78  4.2e-15
    30     169 808   128.1 / 86.7   54.4 / 45.4    0.42 / 0.52  2.4e-14
    120    674 174   83.5 / 90.5    42.3 / 45.2    0.51 / 0.50  1.9e-14

The single runs' spread on this machine is large (the same kernel against itself read 0.77 to
1.46 at the first tries): compare ratios of one run, not numbers across runs.  At 3 km/h a
transfer has about 22 panels, and its start (the anchor's 128 sines and cosines and the 64 sines of
the recurrence's coefficients, about 2 us) is most of its cost, in both kernels.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sfl_sim.channel import transfer_compiled  # noqa: E402
from sfl_sim.channel.link.fading_time import HALF_CORRELATION_ARG, JakesFading, doppler_hz  # noqa: E402
from sfl_sim.channel.radio_state import _GL_NODES, _GL_WEIGHTS, PANEL_FRACTION  # noqa: E402

CARRIER_HZ = 2e9
STEP_S = 0.1


def old_kernel(rev: str, where: Path) -> Any:
    """The module ``transfer_compiled`` as it was at git revision ``rev``."""
    source = subprocess.run(["git", "show", f"{rev}:sfl_sim/channel/transfer_compiled.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = where / "transfer_compiled_old.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("transfer_compiled_old", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def case(speed_kmh: float, k: int = 400, n: int = 100, seed: int = 0) -> dict[str, Any]:
    """The kernel's arguments for ``k`` synthetic transfers at ``speed_kmh`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    fading = JakesFading(speed_m_per_s=speed_kmh / 3.6)
    fd = doppler_hz(speed_kmh / 3.6, CARRIER_HZ)
    fading.start(n, np.full(n, fd), rng)
    terms = transfer_compiled.fading_terms(fading)
    assert terms is not None
    h = PANEL_FRACTION * HALF_CORRELATION_ARG / (2.0 * np.pi * fd)
    ids = rng.integers(0, n, k).astype(np.int64)
    t0 = rng.uniform(0.0, 3.0, k)
    duration = rng.uniform(0.02, 0.3, k)
    b = 1e6
    bits = b * np.log2(1.0 + 100.0) * duration  # about the mean rate's bits over the duration
    index0 = np.floor(t0 / STEP_S).astype(np.int64)
    span = (np.floor((t0 + 10.0 * duration) / STEP_S).astype(np.int64) - index0 + 1)
    width = int(span.max())
    gain = 100.0 * 10.0 ** (rng.normal(0.0, 0.5, (k, width)))
    return {"fading": terms, "ids": ids, "t0": t0, "panel": np.full(k, h), "bits": bits, "index0": index0,
            "span": span, "power": np.ones((k, width)), "gain": gain, "share": np.full(k, b),
            "denominator": np.ones(k)}


def run(module: Any, c: dict[str, Any]) -> tuple[float, np.ndarray, int]:
    """One call: (seconds, ends, nodes walked)."""
    k = c["ids"].size
    done, next_panel = np.zeros(k), np.zeros(k, dtype=np.int64)
    ends, status = np.empty(k), np.zeros(k, dtype=np.int64)
    start = time.perf_counter()
    module.integrate(*c["fading"], c["ids"], c["t0"], c["panel"], c["bits"], _GL_NODES, _GL_WEIGHTS, STEP_S,
                     c["index0"], c["span"], c["power"], c["gain"], c["share"], c["denominator"],
                     transfer_compiled.RATE_SHANNON, np.inf, np.zeros(1), 1.0, done, next_panel, 10_000_000,
                     ends, status)
    elapsed = time.perf_counter() - start
    assert np.all(status == transfer_compiled.DONE), "a synthetic transfer outran its table"
    return elapsed, ends, 2 * int(np.sum(next_panel + 1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="224704a", help="git revision of the old kernel")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--speeds-kmh", type=float, nargs="+", default=[3.0, 30.0, 120.0])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as where:
        old = old_kernel(args.old, Path(where))
        print(f"old: {args.old}, new: the working tree; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"{'speed':>8} {'nodes':>9} {'old ns/node':>12} {'new ns/node':>12} {'new/old':>8} "
              f"{'max |d end|/dur':>16}")
        for speed in args.speeds_kmh:
            c = case(speed)
            run(old, c), run(transfer_compiled, c)  # compiled (and warm) first
            times: dict[str, list[float]] = {"old": [], "new": []}
            for i in range(args.repeats):
                for name, module in ((("old", old), ("new", transfer_compiled)) if i % 2 == 0
                                     else (("new", transfer_compiled), ("old", old))):
                    elapsed, ends, nodes = run(module, c)
                    times[name].append(elapsed)
                    if name == "old":
                        old_ends = ends
                    else:
                        new_ends = ends
            per = {name: statistics.median(v) / nodes * 1e9 for name, v in times.items()}
            worst = float(np.max(np.abs(new_ends - old_ends) / (old_ends - c["t0"])))
            print(f"{speed:>8g} {nodes:>9d} {per['old']:>12.1f} {per['new']:>12.1f} "
                  f"{per['new'] / per['old']:>8.3f} {worst:>16.2e}")


if __name__ == "__main__":
    main()
