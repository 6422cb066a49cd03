"""The timeline of an asynchronous run: who computes, who waits, when the server steps.

Draws, from an asynchronous run directory's ``staleness.csv`` (each update the server used: its
client, when it was dispatched and when it arrived, the aggregation that used it), ``clients.csv``
(each such update's downlink, compute and uplink air time) and ``rounds.csv`` (the simulated time
of each aggregation), one row per client:

* a bar per update from its dispatch to its arrival, cut into the model's download (its
  ``downlink_s``), the client's computation (``compute_s``), its time waiting for the radio
  (what is left) and its upload (``uplink_air_s``, drawn last, ending at the arrival);
* a thin line from its arrival to the aggregation that used it (the update waiting in the buffer),
  labelled with its staleness;
* a vertical line at every aggregation (a server step: a new model version).

With no run directory given it first makes one: a tiny FedBuff run with its defaults (8 clients,
a cohort of 4, so C = 4 and K = 2, slots refilled on arrival) on the Fashion-MNIST slice the
tests use, its clients' compute budgets spread over 20-200 MFLOP/s and its uplink 1 MHz wide (so
that compute and radio both show), the model sent to each client on its own downlink.  The docs'
figure (``docs/concepts/img/async_timeline.png``) is made so::

    python tools/async_timeline.py -o docs/concepts/img/async_timeline.png

Usage::

    python tools/async_timeline.py [RUN_DIR] [-o OUT.png] [--until-s SECONDS]
"""
from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tiny_run(directory: Path) -> Path:
    """A tiny default FedBuff run in ``directory``; its run directory."""
    import yaml

    import sfl_sim

    sys.path.insert(0, str(ROOT))
    from tests.helpers import small_scenario

    data = small_scenario(rounds=8, algorithms=["fedbuff"], clients=8, participation=0.5, local_iterations=2)
    data["clients"].update(compute_flops_per_s_min=2e7, compute_flops_per_s_max=2e8)  # slow and fast clients
    data["cell"] = {"downlink": {"mode": "unicast"}, "uplink_bandwidth_hz": 1e6}  # the radio's share visible
    path = directory / "fedbuff.yaml"
    path.write_text(yaml.safe_dump(data))
    sfl_sim.run(str(path), output_dir=directory / "run")
    return directory / "run" / "fedbuff"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def timeline(run_dir: Path, out: Path, until_s: float | None = None) -> Path:
    """Draw ``run_dir``'s timeline (module docstring) into ``out``; the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from sfl_sim.runs.rundir.files import RunDir

    files = RunDir(run_dir)
    if not files.staleness_path.exists():
        raise SystemExit(f"{run_dir}: no {files.staleness_path.name}; allowed: an asynchronous run's directory")
    updates = _rows(files.staleness_path)
    steps = {int(r["round"]): float(r["sim_time_s"]) for r in files.read_rounds_rows()}
    # clients.csv's rows of an asynchronous run are not keyed by the aggregation that used the update:
    # an update is matched to its client's row whose span (dispatch to arrival) is the update's
    spans: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in _rows(files.clients_path):
        spans[row["client"]].append(row)
    clients = sorted({int(u["client"]) for u in updates})
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(clients) + 2.0))
    colours = {"download": "#9ecae1", "compute": "#3182bd", "radio wait": "#fdd0a2", "upload": "#e6550d",
               "not recorded": "#d9d9d9"}
    for update in updates:
        y = clients.index(int(update["client"]))
        start, arrival = float(update["dispatched_s"]), float(update["arrived_s"])
        if until_s is not None and start > until_s:
            continue
        own = spans[update["client"]]
        row = next((r for r in own if abs(float(r["span_s"]) - (arrival - start)) <= 1e-9 * max(1.0, arrival)), None)
        if row is None:  # no row of its times (clients.csv off, or not written): the span alone
            ax.barh(y, arrival - start, left=start, height=0.6, color=colours["not recorded"], edgecolor="none")
        else:
            own.remove(row)
            down, compute, up = (float(row.get(k) or 0.0) for k in ("downlink_s", "compute_s", "uplink_air_s"))
            wait = max(0.0, arrival - start - down - compute - up)
            t = start
            for kind, width in (("download", down), ("compute", compute), ("radio wait", wait), ("upload", up)):
                ax.barh(y, width, left=t, height=0.6, color=colours[kind], edgecolor="none")
                t += width
        used = steps.get(int(update["round"]), arrival)
        ax.plot([arrival, used], [y, y], color="black", linewidth=1)
        ax.plot([used], [y], marker="|", color="black", markersize=9)
        ax.annotate(f"τ={update['staleness']}", (used, y + 0.32), fontsize=7, ha="center")
    for version, at in sorted(steps.items()):
        if until_s is None or at <= until_s:
            ax.axvline(at, color="grey", linestyle="--", linewidth=0.8)
            ax.annotate(f"v{version}", (at, len(clients) - 0.05), fontsize=7, ha="center", color="grey")
    ax.set_yticks(range(len(clients)), [f"client {k}" for k in clients])
    ax.set_ylim(-0.6, len(clients) + 0.25)
    ax.set_xlabel("simulated time (s)")
    ax.set_title(f"{run_dir.name}: who computes, who waits, when the server steps (dashed: aggregation v)")
    handles = [Patch(color=c, label=k) for k, c in colours.items() if k != "not recorded"]
    handles.append(Patch(color="black", label="update waiting in the buffer (τ: its staleness)"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, fontsize=8, frameon=False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", nargs="?", type=Path, help="an asynchronous run directory (default: make a "
                                                               "tiny FedBuff run)")
    parser.add_argument("-o", "--output", type=Path, default=Path("async_timeline.png"))
    parser.add_argument("--until-s", type=float, default=None, help="draw the updates dispatched by then")
    args = parser.parse_args(argv)
    if args.run_dir is not None:
        print(timeline(args.run_dir, args.output, args.until_s))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        print(timeline(tiny_run(Path(tmp)), args.output, args.until_s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
