"""Build a run from a validated scenario and drive it round by round.

Everything a scenario names is built by :func:`build_run` *before* any training, so a bad
component name or parameter stops the run with a :class:`~sfl_sim.config.ConfigError` naming the
field.  :func:`run_one` then loops over rounds: select the cohort, let the engine run the
algorithm's round on the simulated clock, evaluate at the cadence, append a metrics row, rewrite
the summary and the checkpoint.  An interrupted run resumes from its last checkpoint with the same
numbers it would have produced.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from analysis.tta import time_to_accuracy_s
from channel import (ALLOCATORS, FADING, MOBILITY, PATHLOSS, PLACEMENTS, RATES, SHADOWING, Cell, OutagePolicy,
                     UnknownComponentError)
from sfl_sim.algorithms import ALGORITHMS, Algorithm, TrainingSetup
from sfl_sim.config import ConfigError, algorithm_label
from sfl_sim.data import DATASETS, PARTITIONERS, ArrayDataset
from sfl_sim.engine import Counters, Simulator
from sfl_sim.models import build_model
from sfl_sim.progress import RunProgress
from sfl_sim.results import METRICS_COLUMNS, ROUNDS_COLUMNS, RunWriter, read_metrics_rows
from sfl_sim.seeding import stream, torch_seed
from sfl_sim.selection import SELECTORS, cohort_size


def _component(registry: Any, spec: Mapping[str, Any], field: str, *args: Any, **extra: Any) -> Any:
    """Build a component from ``{"name": ..., **params}``; errors name the scenario field."""
    params = {k: v for k, v in spec.items() if k not in ("name", "label")}
    try:
        factory = registry.get(spec["name"])
        return factory(*args, **params, **extra)
    except UnknownComponentError as exc:
        raise ConfigError(f"{field}.name: {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{field}: {spec!r} rejected: {exc}") from exc


def resolve_device(name: str) -> torch.device:
    """``auto`` → CUDA when available, else CPU; ``cuda`` without a GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device: got 'cuda' but torch sees no CUDA device; allowed here: cpu, auto")
    return torch.device(name)


@dataclass
class Run:
    """A built run: every part ready, nothing trained yet."""

    cfg: Dict[str, Any]
    label: str
    device: torch.device
    dataset: ArrayDataset
    cell: Cell
    client_flops_per_s: np.ndarray
    partition: List[np.ndarray]
    setup: TrainingSetup
    algorithm: Algorithm
    selector: Any
    test_x: torch.Tensor
    test_y: torch.Tensor


def build_cell(cfg: Mapping[str, Any]) -> Cell:
    """The cell of a scenario, from its named, seeded streams (``placement``, ``shadowing``)."""
    c = cfg["cell"]
    seed = cfg["seed"]
    down = c["downlink"]
    try:
        return Cell(
            _component(PLACEMENTS, c["placement"], "cell.placement"),
            _component(PATHLOSS, c["pathloss"], "cell.pathloss"),
            _component(SHADOWING, c["shadowing"], "cell.shadowing"),
            _component(RATES, c["rate"], "cell.rate"),
            _component(ALLOCATORS, c["allocation"], "cell.allocation"),
            n_clients=cfg["clients"]["count"],
            tx_power_w=c["client_tx_power_w"],
            noise_psd_dbm_per_hz=c["noise_psd_dbm_per_hz"],
            uplink_bandwidth_hz=c["uplink_bandwidth_hz"],
            downlink_bandwidth_hz=down["bandwidth_hz"],
            server_tx_power_w=down["server_tx_power_w"],
            placement_rng=stream(seed, "placement"),
            shadowing_rng=stream(seed, "shadowing"),
            los_rng=stream(seed, "los"),
            fading=_component(FADING, c["fading"], "cell.fading"),
            mobility=_component(MOBILITY, c["mobility"], "cell.mobility"),
        )
    except ValueError as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"cell: {exc}") from exc


def selected_per_round(cfg: Mapping[str, Any]) -> int:
    """Clients selected per round: the cohort, or more of them with over-selection (the engine
    keeps the first ``cohort_size`` to deliver)."""
    n_clients = cfg["clients"]["count"]
    n = cohort_size(n_clients, cfg["clients"]["participation"])
    if cfg["stragglers"]["policy"] == "over_selection":
        n = min(n_clients, math.ceil(n * (1.0 + cfg["stragglers"]["over_selection_fraction"])))
    return n


def build_outage(cfg: Mapping[str, Any]) -> OutagePolicy:
    """The outage rule of a scenario's ``cell.outage`` section."""
    try:
        return OutagePolicy(**cfg["cell"]["outage"])
    except ValueError as exc:
        raise ConfigError(f"cell.outage: {exc}") from exc


def build_run(cfg: Dict[str, Any], algorithm_spec: Mapping[str, Any],
              dataset: Optional[ArrayDataset] = None) -> Run:
    """Build every part of one run of ``cfg`` with ``algorithm_spec``.

    Parameters
    ----------
    cfg : dict
        Validated scenario (:func:`sfl_sim.config.validate`).
    algorithm_spec : dict
        One entry of ``cfg["algorithms"]``.
    dataset : ArrayDataset, optional
        Already loaded data set (several algorithms of one scenario share it).

    Raises
    ------
    ConfigError
        On any component that cannot be built from the scenario.
    DatasetNotFoundError
        If the data set's files are missing (message says what to install where).
    """
    seed = cfg["seed"]
    device = resolve_device(cfg["device"])
    if cfg["training"]["torch_threads"]:
        torch.set_num_threads(cfg["training"]["torch_threads"])
    if dataset is None:
        loader = _component(DATASETS, cfg["data"]["dataset"], "data.dataset")
        dataset = loader.load()
    n_clients = cfg["clients"]["count"]
    partitioner = _component(PARTITIONERS, cfg["data"]["partition"], "data.partition")
    try:
        partition = partitioner.split(dataset.train_y, n_clients, dataset.num_classes, stream(seed, "partition"))
    except ValueError as exc:
        raise ConfigError(f"data.partition: {exc}") from exc
    if cfg["training"]["batch_size"] < selected_per_round(cfg):
        raise ConfigError(
            f"training.batch_size: got {cfg['training']['batch_size']}; allowed: at least the number of clients "
            f"selected per round ({selected_per_round(cfg)}) so every client gets B_k >= 1")

    # Same seed → same initial weights for every algorithm of the scenario.
    torch.manual_seed(torch_seed(seed, "model_init"))
    m = cfg["model"]
    try:
        model = build_model(m["name"], dataset.input_shape, dataset.num_classes, **m["params"])
    except UnknownComponentError as exc:
        raise ConfigError(f"model.name: {exc}") from exc
    except ValueError as exc:
        raise ConfigError(f"model.params: {m['params']!r} rejected: {exc}") from exc
    if m["split_point"] not in model.split_points:
        raise ConfigError(f"model.split_point: got {m['split_point']!r}; split point does not exist for "
                          f"{m['name']}; allowed: {', '.join(model.split_points)}")
    model.to(device)

    cell = build_cell(cfg)
    build_outage(cfg)  # checked now, used by the engine
    clients = cfg["clients"]
    client_flops_per_s = stream(seed, "compute").uniform(
        clients["compute_flops_per_s_min"], clients["compute_flops_per_s_max"], size=n_clients)

    train_x, train_y = dataset.tensors("train", device)
    test_x, test_y = dataset.tensors("test", device)
    if cfg["eval_samples"] is not None and cfg["eval_samples"] < len(test_y):
        pick = np.sort(stream(seed, "eval_subset").choice(len(test_y), cfg["eval_samples"], replace=False))
        rows = torch.from_numpy(pick).to(device)
        test_x, test_y = test_x[rows], test_y[rows]
    t = cfg["training"]
    setup = TrainingSetup(
        model=model, split_point=m["split_point"], train_x=train_x, train_y=train_y,
        client_indices=[torch.from_numpy(ix).to(device) for ix in partition],
        num_classes=dataset.num_classes, batch_size=t["batch_size"], local_iterations=t["local_iterations"],
        learning_rate=t["learning_rate"], device=device, minibatch_rng=stream(seed, "minibatch"))
    algorithm = _component(ALGORITHMS, algorithm_spec, "algorithms", setup)
    selection = clients["selection"] or type(algorithm).default_selection or {"name": "uniform"}
    selector = _component(SELECTORS, selection, "clients.selection")
    selector.prepare(setup.client_label_counts.cpu().numpy().astype(np.int64))
    return Run(cfg, algorithm_label(algorithm_spec), device, dataset, cell, client_flops_per_s, partition,
               setup, algorithm, selector, test_x, test_y)


@torch.no_grad()
def evaluate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int) -> tuple[float, float]:
    """Test accuracy (fraction) and mean cross-entropy of ``model`` on ``(x, y)``."""
    was_training = model.training
    model.eval()
    correct, loss_sum = 0, 0.0
    for start in range(0, len(y), batch_size):
        logits = model(x[start:start + batch_size])
        target = y[start:start + batch_size]
        loss_sum += float(F.cross_entropy(logits, target, reduction="sum"))
        correct += int((logits.argmax(dim=1) == target).sum())
    model.train(was_training)
    return correct / len(y), loss_sum / len(y)


def _cell_table(run: Run) -> Dict[str, Any]:
    n_sharing = cohort_size(run.cfg["clients"]["count"], run.cfg["clients"]["participation"])
    info = run.cell.describe(n_sharing=n_sharing)  # SNR and rate on an equal share of the cohort
    table = {"client": np.asarray(info.pop("client")).tolist(),
             "x_m": run.cell.positions_m[:, 0].tolist(), "y_m": run.cell.positions_m[:, 1].tolist()}
    table.update({k: np.asarray(v).tolist() for k, v in info.items()})
    table["compute_flops_per_s"] = run.client_flops_per_s.tolist()
    table["data_samples"] = [len(ix) for ix in run.partition]
    labels = run.dataset.train_y
    table["classes_held"] = [int(len(np.unique(labels[ix]))) for ix in run.partition]
    return table


def _time_to_accuracy(rows: List[Dict[str, float]], targets: List[float]) -> Dict[str, Optional[float]]:
    """Simulated time to each target accuracy (None when not reached), via :mod:`analysis.tta`."""
    metrics = pd.DataFrame(rows)
    out: Dict[str, Optional[float]] = {}
    for target in targets:
        t = time_to_accuracy_s(metrics, target)
        out[f"{target:g}"] = None if math.isnan(t) else t
    return out


def _rng_state(run: Run, streams: Dict[str, np.random.Generator]) -> Dict[str, Any]:
    state: Dict[str, Any] = {name: rng.bit_generator.state for name, rng in streams.items()}
    state["minibatch"] = run.setup.minibatch_rng.bit_generator.state
    state["torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        state["torch_cuda"] = torch.cuda.get_rng_state_all()
    return state


def run_one(run: Run, run_dir: Path, resume: bool = False, progress: bool = True,
            on_round: Optional[Callable[[int, Dict[str, Any]], None]] = None,
            position: tuple[int, int] = (1, 1)) -> Dict[str, Any]:
    """Train ``run`` for ``cfg['rounds']`` rounds, writing ``run_dir`` as it goes.

    Parameters
    ----------
    run : Run
    run_dir : Path
    resume : bool
        Continue from ``run_dir/checkpoint.pt`` when it exists.
    progress : bool
        Show a header line and the progress on stderr (:class:`sfl_sim.progress.RunProgress`).
    on_round : callable, optional
        Called after every round with (round, info) — used by tests and benchmarks.
    position : (int, int)
        This run's number (from 1) and the number of runs of the scenario, for the header line.

    Returns
    -------
    dict
        The final summary.
    """
    cfg = run.cfg
    writer = RunWriter(run_dir)
    selection_rng = stream(cfg["seed"], "selection")
    fading_rng, mobility_rng = stream(cfg["seed"], "fading"), stream(cfg["seed"], "mobility")
    torch.manual_seed(torch_seed(cfg["seed"], "dropout"))
    start_round, sim_time_s, host_offset_s, counters = 0, 0.0, 0.0, Counters()
    if resume and writer.checkpoint_path.exists():
        ckpt = torch.load(writer.checkpoint_path, map_location=run.device, weights_only=False)
        run.algorithm.load_state_dict(ckpt["algorithm"])
        start_round, sim_time_s, host_offset_s = ckpt["round"], ckpt["sim_time_s"], ckpt["host_time_s"]
        counters = Counters.from_dict(ckpt["counters"])
        for name, rng in (("selection", selection_rng), ("fading", fading_rng), ("mobility", mobility_rng)):
            rng.bit_generator.state = ckpt["rng"][name]
        run.cell = ckpt["cell"]  # positions, LOS and shadowing as they were at the checkpoint
        run.selector.load_state_dict(ckpt["selector"])  # stateful selectors (class_balanced)
        run.setup.minibatch_rng.bit_generator.state = ckpt["rng"]["minibatch"]
        torch.set_rng_state(ckpt["rng"]["torch"])
        if "torch_cuda" in ckpt["rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(ckpt["rng"]["torch_cuda"])
        run.algorithm.meter.flops_per_sample.update(ckpt.get("flops_per_sample", {}))
    keep = start_round if resume else None
    writer.start_log("metrics.csv", METRICS_COLUMNS, keep_through_round=keep)
    writer.start_log("rounds.csv", ROUNDS_COLUMNS, keep_through_round=keep)
    scenario = copy.deepcopy(cfg)
    scenario.pop("algorithms")
    scenario["algorithm"] = next(a for a in cfg["algorithms"] if algorithm_label(a) == run.label)
    scenario["device_used"] = str(run.device)
    writer.write_scenario(scenario)
    writer.write_table("cell.csv", _cell_table(run))

    sim = Simulator(run.cell, run.client_flops_per_s, cfg["server"]["compute_flops_per_s"],
                    cfg["cell"]["downlink"]["mode"], start_time_s=sim_time_s, counters=counters,
                    fading_rng=fading_rng, coherence=cfg["cell"]["coherence"], outage=build_outage(cfg),
                    straggler_policy=cfg["stragglers"]["policy"], deadline_s=cfg["stragglers"]["deadline_s"],
                    keep_clients=cohort_size(cfg["clients"]["count"], cfg["clients"]["participation"]))
    n_cohort = selected_per_round(cfg)
    rounds = cfg["rounds"]
    rows = read_metrics_rows(writer.metrics_path)
    host_start = time.perf_counter() - host_offset_s
    bar = RunProgress(progress)
    bar.start(cfg["name"], run.label, position, run.device, run_dir, rounds, start_round)
    summary: Dict[str, Any] = {}
    try:
        for rnd in range(start_round + 1, rounds + 1):
            cohort = run.selector.select(cfg["clients"]["count"], n_cohort, selection_rng)
            before = sim.counters.as_dict()
            duration_s = sim.run_round(lambda ctx: run.algorithm.round_process(ctx, cohort), cohort)
            run.cell.move(duration_s, mobility_rng)  # clients move while the round runs (static: no-op)
            after = sim.counters.as_dict()
            writer.append_log("rounds.csv", ROUNDS_COLUMNS, {
                "round": rnd, "sim_time_s": sim.now_s, "round_sim_time_s": duration_s,
                **{k: after[k] - before[k] for k in ("uplink_bytes", "downlink_bytes", "client_flops", "server_flops",
                                                     "retransmissions", "dropped_transmissions", "dropped_clients")},
                "cohort": " ".join(map(str, cohort.tolist())),
                "dropped": " ".join(f"{k}:{why}" for k, why in sorted(sim.last_round.dropped.items()))})
            last = rnd == rounds
            if rnd % cfg["eval_every_rounds"] == 0 or last:
                acc, loss = run.algorithm.evaluate(evaluate, run.test_x, run.test_y, cfg["eval_batch_size"])
                c = sim.counters
                row = {"round": rnd, "sim_time_s": sim.now_s, "test_accuracy": acc, "test_loss": loss,
                       "uplink_bytes": c.uplink_bytes, "downlink_bytes": c.downlink_bytes,
                       "client_flops": c.client_flops, "server_flops": c.server_flops,
                       "host_time_s": time.perf_counter() - host_start}
                writer.append_log("metrics.csv", METRICS_COLUMNS, row)
                rows.append({k: float(v) for k, v in row.items()})
                summary = _summary(run, rows, sim, "complete" if last else "running")
                writer.write_summary(summary)
                _save_checkpoint(writer, run, rnd, sim, row["host_time_s"],
                                 {"selection": selection_rng, "fading": fading_rng, "mobility": mobility_rng})
                bar.evaluated(rnd, sim.now_s, acc, row["host_time_s"])
            if on_round is not None:
                on_round(rnd, {"sim_time_s": sim.now_s, "cohort": cohort})
            bar.advance()
    finally:
        bar.close()
    if not summary:  # nothing left to run (resumed a finished run)
        summary = writer.read_summary() or {}
    return summary


def _summary(run: Run, rows: List[Dict[str, float]], sim: Simulator, status: str) -> Dict[str, Any]:
    last = rows[-1]
    c = sim.counters
    return {
        "label": run.label,
        "algorithm": next(a for a in run.cfg["algorithms"] if algorithm_label(a) == run.label)["name"],
        "status": status,
        "evaluated": run.algorithm.evaluation_description(),
        "seed": run.cfg["seed"],
        "device": str(run.device),
        "rounds_completed": int(last["round"]),
        "rounds_planned": run.cfg["rounds"],
        "final_test_accuracy": last["test_accuracy"],
        "best_test_accuracy": max(r["test_accuracy"] for r in rows),
        "final_sim_time_s": last["sim_time_s"],
        "host_time_s": last["host_time_s"],
        "uplink_bytes": c.uplink_bytes,
        "downlink_bytes": c.downlink_bytes,
        "client_flops": c.client_flops,
        "server_flops": c.server_flops,
        "retransmissions": c.retransmissions,
        "dropped_transmissions": c.dropped_transmissions,
        "dropped_clients": c.dropped_clients,
        "traffic_and_compute_by_kind": c.by_kind,
        "flops_per_sample": dict(run.algorithm.meter.flops_per_sample),
        "time_to_accuracy_s": _time_to_accuracy(rows, run.cfg["target_accuracies"]),
    }


def _save_checkpoint(writer: RunWriter, run: Run, rnd: int, sim: Simulator, host_time_s: float,
                     streams: Dict[str, np.random.Generator]) -> None:
    tmp = writer.checkpoint_path.with_name("checkpoint.pt.tmp")
    torch.save({"round": rnd, "sim_time_s": sim.now_s, "host_time_s": host_time_s,
                "counters": sim.counters.as_dict(), "algorithm": run.algorithm.state_dict(),
                "rng": _rng_state(run, streams), "cell": run.cell,
                "flops_per_sample": dict(run.algorithm.meter.flops_per_sample),
                "selector": run.selector.state_dict()}, tmp)
    tmp.replace(writer.checkpoint_path)


def run_scenario(cfg: Dict[str, Any], resume: bool = False, progress: bool = True) -> List[Dict[str, Any]]:
    """Run every algorithm of a validated scenario, each into ``output_dir/<label>``.

    Every part is built for every algorithm before the first one trains, so a bad parameter of
    the last algorithm stops the scenario before any work.

    Raises
    ------
    ConfigError
        If a run directory already holds results and ``resume`` is False (nothing is overwritten).
    """
    out = Path(cfg["output_dir"])
    dataset = _component(DATASETS, cfg["data"]["dataset"], "data.dataset").load()
    runs = [build_run(cfg, spec, dataset) for spec in cfg["algorithms"]]
    for run in runs:
        run_dir = out / run.label
        if (run_dir / "metrics.csv").exists() and not resume:
            raise ConfigError(f"output_dir: {str(run_dir)!r} already holds a run; pass --resume to continue it "
                              f"or choose another --output-dir")
    summaries = []
    for i, run in enumerate(runs, 1):
        summaries.append(run_one(run, out / run.label, resume=resume, progress=progress, position=(i, len(runs))))
        # free this run's tensors before the next one trains
        run.algorithm = None  # type: ignore[assignment]
    return summaries
