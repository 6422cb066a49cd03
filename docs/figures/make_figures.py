"""Make the documentation's figures from real runs of the program, never by hand.

Run by the MkDocs build (the ``gen-files`` plugin, ``mkdocs.yml``), which adds the PNGs to the site
under ``figures/`` without writing them to ``docs/``; ``python docs/figures/make_figures.py OUT``
writes them to ``OUT`` instead. Each figure comes from what a user would run:

- ``cell_map.png``: the cell of the default scenario, as ``sfl-sim channel`` draws it (no training);
- ``fading_autocorrelation.png``, ``fading_autocorrelation_ar1.png``: a time-varying fading's envelope
  autocorrelation against the model's, as ``sfl-sim channel`` draws it (``jakes``, ``gauss_markov``);
- ``bler_curves.png``: the link chain's BLER against SINR for every CQI of the uplink's table, from
  the curves the simulator itself reads (:func:`sfl_sim.channel.link.bler.cqi_curves`);
- ``accuracy_vs_time.png``, ``round_time_breakdown.png``, ``scheduler_grants.png``: from one tiny
  training run (:data:`TINY_RUN`: FedAvg and SCALA, 10 clients, 10 rounds on a slice of Fashion-MNIST,
  a slot-form proportional-fair scheduler tracing its grants), with the functions ``sfl-sim plot``
  and ``sfl-sim report`` use.

The tiny run takes about half a minute of CPU, so it is cached in ``.cache/docs-figures/KEY/``,
``KEY`` a hash of the scenario and of every source file of ``sfl_sim``: a changed program runs it
again, an unchanged one reuses it (delete the folder to force a new run).
"""
from __future__ import annotations

import hashlib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "docs-figures"

#: The tiny training run the run figures come from (a scenario, as its YAML would say it).
TINY_RUN: dict[str, Any] = {
    "name": "docs_tiny", "seed": 0, "rounds": 10, "eval_every_rounds": 1, "eval_samples": 500,
    "algorithms": [{"name": "fedavg"}, {"name": "scala"}],
    "training": {"batch_size": 32, "local_iterations": 5, "learning_rate": 0.05, "torch_threads": 1},
    "data": {"dataset": {"name": "fashion_mnist", "max_train_samples": 2000, "max_test_samples": 500},
             "partition": {"name": "quantity", "alpha": 2}},
    "model": {"name": "alexnet", "split_point": "S2",
              "params": {"conv_channels": [8, 16, 16, 16, 16], "fc_features": [32, 32]}},
    "clients": {"count": 10, "participation": 0.5},
    "cell": {"scheduler": {"name": "proportional_fair", "fidelity": "slot"}},
    "metrics": {"slot_trace": True},
}

#: Every figure: its file name under ``figures/`` and the function that draws it.
FIGURES: dict[str, Callable[[Any], Any]] = {}

#: A column's width in a paper, inches: the figures are drawn at the size a reader sees them.
WIDTH_IN = 6.0


def figure(name: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    def register(draw: Callable[[Any], Any]) -> Callable[[Any], Any]:
        FIGURES[name] = draw
        return draw
    return register


def _key() -> str:
    """The cache key: the tiny run's scenario and every source file the run executes."""
    digest = hashlib.sha256(json.dumps(TINY_RUN, sort_keys=True).encode())
    for path in sorted((ROOT / "sfl_sim").rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def tiny_runs() -> list[Path]:
    """The run directories of :data:`TINY_RUN` (one per algorithm), run now or found in the cache."""
    import yaml

    out = CACHE / _key()
    done = out / "done.json"
    if not done.is_file():
        import sfl_sim

        out.mkdir(parents=True, exist_ok=True)
        scenario = out / "docs_tiny.yaml"
        scenario.write_text(yaml.safe_dump(TINY_RUN, sort_keys=False))
        results = sfl_sim.run(scenario, output_dir=out / "runs")
        done.write_text(json.dumps([str(Path(r.path).relative_to(out)) for r in results]))
    return [out / p for p in json.loads(done.read_text())]


# --- the figures ---------------------------------------------------------------------------------------

@figure("cell_map.png")
def cell_map(_: Any) -> bytes:
    """The default scenario's cell as ``sfl-sim channel`` draws it."""
    import tempfile

    import sfl_sim
    from sfl_sim.reports.channel import channel_report

    cfg = sfl_sim.load_scenario("cellular_100clients")
    with tempfile.TemporaryDirectory() as tmp:
        channel_report(cfg, Path(tmp), stream=io.StringIO(), rounds=5)
        return (Path(tmp) / "cell.png").read_bytes()


@figure("bler_curves.png")
def bler_curves(plt: Any) -> Any:
    """BLER against SINR for every CQI of the uplink's table, at one code block of 8448 bits."""
    import numpy as np

    from sfl_sim.channel.link.bler import cqi_curves

    sinr_db = np.linspace(-10, 30, 400)
    curves = cqi_curves("cqi_table1", "uplink")
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.4), layout="constrained")
    colours = plt.get_cmap("viridis")(np.linspace(0, 0.95, len(curves)))
    for cqi, (curve, colour) in enumerate(zip(curves, colours, strict=True), start=1):
        bler = curve.bler(sinr_db, 8448)
        ax.semilogy(sinr_db, bler, color=colour, lw=1.2)
        crossing = sinr_db[np.argmax(bler < 0.1)] if (bler < 0.1).any() else None
        if crossing is not None and cqi % 2 == 1:
            ax.annotate(str(cqi), (crossing, 0.1), textcoords="offset points", xytext=(-9, -11), fontsize=7,
                        color=colour)
    ax.axhline(0.1, color="0.3", ls="--", lw=0.8)
    ax.text(29.5, 0.12, "10 % BLER: the CQI\na client reports", fontsize=8, color="0.3", ha="right", va="bottom")
    ax.set(xlabel="SINR (dB)", ylabel="block error rate", ylim=(1e-4, 1.2), xlim=(-10, 30),
           title="CQI 1-15 (uplink, CQI table 1): BLER against SINR")
    ax.grid(True, which="major", alpha=0.3)
    return fig


def _fading_in_time(fading: dict[str, Any]) -> Any:
    """The autocorrelation figure ``sfl-sim channel`` writes for a time-varying fading, at a column's
    width: 20 clients that stay put and fade as at 3 m/s (drop-based) on the default 2 GHz carrier,
    over the report's default 20 rounds x 1 s (no training; about a second)."""
    from sfl_sim.config import validate
    from sfl_sim.reports.channel_time import autocorrelation_figure, fading_autocorrelation
    from sfl_sim.runs.build import build_cell

    cfg = validate({"seed": 0, "clients": {"count": 20, "participation": 0.5},
                            "cell": {"fading": {**fading, "speed_m_per_s": 3.0}}})
    data = fading_autocorrelation(build_cell(cfg), 20.0)
    return autocorrelation_figure(data, width_in=WIDTH_IN)


@figure("fading_autocorrelation.png")
def fading_autocorrelation_jakes(_: Any) -> Any:
    """Clarke's model by a sum of sinusoids (``jakes``): the envelope's autocorrelation against J0."""
    return _fading_in_time({"name": "jakes"})


@figure("fading_autocorrelation_ar1.png")
def fading_autocorrelation_ar1(_: Any) -> Any:
    """The AR(1) ``gauss_markov`` fading on its 1 ms grid: rho^k against J0."""
    return _fading_in_time({"name": "gauss_markov"})


@figure("accuracy_vs_time.png")
def accuracy_vs_time(_: Any) -> bytes:
    """Test accuracy against simulated time, as ``sfl-sim plot`` draws it."""
    import tempfile

    from sfl_sim.analysis import load_runs, plot_accuracy_vs_time

    with tempfile.TemporaryDirectory() as tmp:
        path = plot_accuracy_vs_time(load_runs(tiny_runs()), Path(tmp) / "a.png")
        return Path(path).read_bytes()


def _clients() -> Any:
    import pandas as pd

    from sfl_sim.runs.rundir.schema import CLIENTS_FILE

    frames = []
    for run in tiny_runs():
        frame = pd.read_csv(run / CLIENTS_FILE)
        frames.append(frame.assign(run_id=run.name, setting="tiny run", algorithm=run.name))
    return pd.concat(frames, ignore_index=True)


@figure("round_time_breakdown.png")
def round_time_breakdown(_: Any) -> Any:
    """Where a client's round went, per algorithm, as ``sfl-sim report`` draws it."""
    from sfl_sim.analysis.radio_data import time_breakdown
    from sfl_sim.analysis.radio_figures import breakdown_figure

    clients = _clients()
    table = time_breakdown(clients)
    return breakdown_figure(table, ["tiny run"], list(dict.fromkeys(clients["algorithm"])), width_in=WIDTH_IN)


@figure("scheduler_grants.png")
def scheduler_grants(plt: Any) -> Any:
    """The slot-form proportional-fair scheduler's uplink grants over one round (``slots.csv``)."""
    import pandas as pd

    from sfl_sim.runs.rundir.schema import SLOTS_FILE

    run = next(r for r in tiny_runs() if (r / SLOTS_FILE).is_file() and "fedavg" in r.name)
    slots = pd.read_csv(run / SLOTS_FILE)
    one = slots[slots["round"] == slots["round"].min()]
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 2.8), layout="constrained")
    points = ax.scatter(one["time_s"] * 1e3, one["client"], c=one["rbs"], s=6, marker="s", cmap="viridis",
                        linewidths=0)
    failed = one[one["failed"] == 1]
    if len(failed):
        ax.scatter(failed["time_s"] * 1e3, failed["client"], s=14, marker="x", color="crimson", lw=0.8,
                   label="transport block failed (HARQ)")
        ax.legend(loc="upper right", fontsize=8)
    fig.colorbar(points, ax=ax, label="resource blocks")
    ax.set(xlabel="simulated time in the round (ms)", ylabel="client",
           title=f"proportional fair, slot form: grants in round {int(one['round'].min())} ({run.name})")
    ax.set_yticks(sorted(one["client"].unique()))
    return fig


@figure("async_timeline.png")
def async_timeline(_: Any) -> bytes:
    """A tiny default FedBuff run's timeline (``tools/async_timeline.py``: who computes, who waits,
    when the server steps), made once per cache key like :func:`tiny_runs`."""
    import importlib.util
    import tempfile

    out = CACHE / _key() / "async_timeline.png"
    if not out.is_file():
        spec = importlib.util.spec_from_file_location("async_timeline", ROOT / "tools" / "async_timeline.py")
        assert spec is not None and spec.loader is not None
        tool = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tool)
        with tempfile.TemporaryDirectory() as tmp:
            tool.timeline(tool.tiny_run(Path(tmp)), out)
    return out.read_bytes()


# --- writing -------------------------------------------------------------------------------------------

def write(open_file: Callable[[str], Any]) -> None:
    """Draw every figure and write it through ``open_file(path)`` (binary), ``path`` under ``figures/``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for name, draw in FIGURES.items():
        made = draw(plt)
        if isinstance(made, bytes):
            data = made
        else:
            buffer = io.BytesIO()
            made.savefig(buffer, format="png", dpi=150)
            plt.close(made)
            data = buffer.getvalue()
        with open_file(f"figures/{name}") as fh:
            fh.write(data)


def _local_open(root: Path) -> Callable[[str], Any]:
    def opener(path: str) -> Any:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        return target.open("wb")
    return opener


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python docs/figures/make_figures.py OUT_DIR")
    sys.path.insert(0, str(ROOT))
    write(_local_open(Path(sys.argv[1])))
elif __name__ == "<run_path>":  # run by mkdocs-gen-files (runpy.run_path)
    import mkdocs_gen_files

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    write(lambda path: mkdocs_gen_files.open(path, "wb"))
