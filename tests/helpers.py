"""Shared helpers of the sfl_sim tests (import them as ``tests.helpers``): a tiny split model
and a hand-made training setup; a small real scenario (Fashion-MNIST slice, narrow AlexNet) and the
YAML, CLI and CSV plumbing around it.  Fixtures are in ``conftest.py``."""
from __future__ import annotations

import csv
import functools
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from torch import nn

from sfl_sim.algorithms import TrainingSetup
from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.cli import main
from sfl_sim.engine import Battery, Simulator
from sfl_sim.models import SplittableModel
from sfl_sim.runs.rundir.schema import HOST_TIME_COLUMNS

ROOT = Path(__file__).resolve().parents[1]


#: ``SFL_SIM_TEST_TORCH_THREADS=n python -m pytest ...`` runs the tests with n torch threads
#: (unset: torch's default, one per core; the golden runs then use 2).  Runs built from a scenario
#: still take the scenario's ``torch_threads``.
TORCH_THREADS_ENV = "SFL_SIM_TEST_TORCH_THREADS"


def torch_threads_from_env() -> int | None:
    """The thread count ``SFL_SIM_TEST_TORCH_THREADS`` asks for, or None when it is unset."""
    value = os.environ.get(TORCH_THREADS_ENV, "")
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise pytest.UsageError(f"{TORCH_THREADS_ENV}: {value!r} is not allowed; use a whole number >= 1")
    return int(value)


def tiny_model(num_classes: int = 3) -> SplittableModel:
    """Client: Conv2d(1, 2, 3) on 1x5x5 -> 2x3x3; server: Flatten + Linear(18, num_classes)."""
    torch.manual_seed(0)
    return SplittableModel(
        [nn.Conv2d(1, 2, kernel_size=3), nn.Sequential(nn.Flatten(), nn.Linear(18, num_classes))],
        {"S1": 1}, "S1", name="tiny", input_shape=(1, 5, 5))


def tiny_setup(n_clients: int = 2, samples_per_client: int = 8, batch_size: int = 8,
               local_iterations: int = 1, num_classes: int = 3, seed: int = 0) -> TrainingSetup:
    """Clients with equal data; client k holds labels {k % C, (k+1) % C}."""
    gen = torch.Generator().manual_seed(seed)
    n = n_clients * samples_per_client
    x = torch.randn(n, 1, 5, 5, generator=gen)
    y = torch.empty(n, dtype=torch.int64)
    indices = []
    for k in range(n_clients):
        rows = torch.arange(k * samples_per_client, (k + 1) * samples_per_client)
        y[rows] = torch.tensor([(k + i % 2) % num_classes for i in range(samples_per_client)])
        indices.append(rows)
    return TrainingSetup(model=tiny_model(num_classes), split_point="S1", train_x=x, train_y=y,
                         client_indices=indices, num_classes=num_classes, batch_size=batch_size,
                         local_iterations=local_iterations, learning_rate=0.1, device=torch.device("cpu"),
                         minibatch_rng=np.random.default_rng(seed))


def two_client_simulator(battery: Battery | None = None) -> Simulator:
    """Two clients at 50 m and 400 m on a 1 MHz uplink, 1e6 FLOP/s each, a 1e8 FLOP/s server (and
    ``battery``, what their batteries allow)."""
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([50.0, 400.0]), TR36814Macro(), NoShadowing(), ShannonRate(), EqualAllocation(),
                n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0, uplink_bandwidth_hz=1e6,
                placement_rng=rng, shadowing_rng=rng)
    return Simulator(cell, np.array([1e6, 1e6]), 1e8, battery=battery)


# -- small real scenarios ----------------------------------------------------------------------------
def small_scenario(*, name: str | None = "small", seed: int | None = 0, rounds: int = 2,
                   eval_every_rounds: int | None = 1, eval_samples: int = 100,
                   algorithms: list = ("fedavg",), partition: dict | None = None,
                   width: int = 4, fc: int = 8, split_point: str | None = "S2",
                   train: int = 600, test: int = 200, batch_size: int = 16, local_iterations: int = 1,
                   learning_rate: float | None = 0.01, clients: int = 6, participation: float = 0.5) -> dict:
    """A fresh scenario dict: a Fashion-MNIST slice (train/test samples), AlexNet with five conv layers
    of ``width`` channels and two FC layers of ``fc`` features, one torch thread.

    ``algorithms``: names or full entries; ``partition``: default quantity with alpha 2.  A ``None``
    for name, seed, eval_every_rounds, split_point or learning_rate leaves that key out (its default).
    """
    data: dict = {"name": name, "seed": seed, "rounds": rounds, "eval_every_rounds": eval_every_rounds,
                  "eval_samples": eval_samples,
                  "algorithms": [{"name": a} if isinstance(a, str) else dict(a) for a in algorithms],
                  "training": {"batch_size": batch_size, "local_iterations": local_iterations,
                               "learning_rate": learning_rate, "torch_threads": 1},
                  "data": {"dataset": {"name": "fashion_mnist", "max_train_samples": train, "max_test_samples": test},
                           "partition": dict(partition or {"name": "quantity", "alpha": 2})},
                  "model": {"name": "alexnet", "split_point": split_point,
                            "params": {"conv_channels": [width] * 5, "fc_features": [fc] * 2}},
                  "clients": {"count": clients, "participation": participation}}

    def drop_none(node: dict) -> dict:
        return {k: drop_none(v) if isinstance(v, dict) else v for k, v in node.items() if v is not None}
    return drop_none(data)


def write_yaml(directory: Path, data: dict, name: str = "s.yaml") -> Path:
    """``data`` as YAML in ``directory/name``; the path."""
    path = directory / name
    path.write_text(yaml.safe_dump(data))
    return path


def run_cli(capsys, *args: str) -> tuple[int, str]:
    """``sfl-sim scenario ARGS --no-progress`` in-process: exit code and stderr."""
    code = main(["scenario", *args, "--no-progress"])
    return code, capsys.readouterr().err


def finished_run(tmp_path: Path, capsys, data: dict) -> tuple[Path, Path]:
    """``data`` written to ``tmp_path/s.yaml`` and run to the end into ``tmp_path/out``: (scenario file, out)."""
    path = write_yaml(tmp_path, data)
    out = tmp_path / "out"
    code, err = run_cli(capsys, str(path), "-o", str(out))
    assert code == 0, err
    return path, out


def read_rows(path: Path, *, host_time: bool = True) -> list[dict]:
    """A CSV file's rows; ``host_time=False`` leaves out the host-time columns (``host_time_s``,
    ``round_host_time_s``: they differ run to run)."""
    with path.open() as fh:
        return [{k: v for k, v in r.items() if host_time or k not in HOST_TIME_COLUMNS} for r in csv.DictReader(fh)]


def doc_blocks(page: str, lang: str, heading: str | None = None) -> list[str]:
    """The ``lang`` code blocks of the documentation page ``docs/<page>``, or of its section
    ``heading`` (a heading of any level, up to the next heading of the same or a higher level)."""
    lines = (ROOT / "docs" / page).read_text().splitlines(keepends=True)
    if heading is not None:
        fenced, start, level = False, None, 0
        for i, line in enumerate(lines):
            fenced ^= line.startswith("```")
            mark = re.match(r"(#+) (.*?)(?: \{.*\})?$", line.rstrip("\n")) if not fenced else None
            if mark and start is None and mark[2] == heading:
                start, level = i, len(mark[1])
            elif mark and start is not None and len(mark[1]) <= level:
                lines = lines[start:i]
                break
        else:
            assert start is not None, f"no heading {heading!r} in docs/{page}"
            lines = lines[start:]
    return re.findall(rf"```{lang}\n(.*?)```", "".join(lines), flags=re.S)


@functools.lru_cache(maxsize=8)
def _validator_of(schema_json: str) -> Any:
    import jsonschema

    schema = json.loads(schema_json)
    return jsonschema.validators.validator_for(schema)(schema)


def schema_validator(schema: dict) -> Any:
    """A JSON-schema validator of ``schema``, built once per schema: ``jsonschema.validate`` checks the
    schema itself at every call (about 1 s for the scenario schema on the 2-core machine)."""
    return _validator_of(json.dumps(schema, sort_keys=True))


def line_three_cells_scenario() -> dict[str, Any]:
    """One client walking the straight line A -> B -> C of tests/channel/network (its ns-2 file): 7
    sites at ISD 500 m, one sector each, A3 with Hys 3 dB, TTT 320 ms and a 50 ms interruption,
    log-distance path loss of exponent 3.5, no shadowing (hand-computed handovers at 17.80 s and
    67.80 s: tests/channel/network/test_network_state.py)."""
    trace = Path(__file__).parent / "channel" / "network" / "data" / "line_three_cells.ns_movements"
    raw = small_scenario(clients=1, participation=1.0)
    raw["cell"] = {"network": {"name": "hexgrid", "n_sites": 7, "isd_m": 500.0, "sectors_per_site": 1},
                   "handover": {"name": "a3", "hysteresis_db": 3.0, "time_to_trigger_s": 0.32,
                                "interruption_time_s": 0.05},
                   "pathloss": {"name": "log_distance", "exponent": 3.5}, "shadowing": {"name": "none"},
                   "mobility": {"name": "trace", "path": str(trace)}}
    return raw


class ScriptedCells:
    """A scripted two-cell network for the engine's edge tests (a :class:`~sfl_sim.engine.edge.CellNetwork`):
    client k starts in ``start_cells[k]`` and follows ``events``' handovers (none: it stays);
    ``asked`` records the windows the engine looked for handovers in."""

    n_cells = 2

    def __init__(self, start_cells: list[int], events: list[Any] | None = None) -> None:
        self.start_cells, self.events = start_cells, events or []
        self.asked: list[tuple[float, float]] = []

    def serving_cell(self, client_ids: Any, t_s: float) -> np.ndarray:
        out = []
        for k in np.atleast_1d(np.asarray(client_ids)).tolist():
            cell = self.start_cells[k]
            for e in self.events:
                if e.client == k and e.time_s <= t_s:
                    cell = e.target_cell
            out.append(cell)
        return np.asarray(out, dtype=int)

    def handovers_between(self, t0_s: float, t1_s: float) -> tuple[Any, ...]:
        self.asked.append((t0_s, t1_s))
        return tuple(e for e in self.events if t0_s <= e.time_s < t1_s)


def timed_uploads(sim: Any, plan: list[tuple[int, float, int]]) -> tuple[dict[int, tuple[Any, float]], Any]:
    """Run one round of ``sim`` whose cohort is the plan's clients, each ``(client, start_s, nbytes)``
    uploading ``nbytes`` from ``start_s``: each client's outcome and the clock when it came, and the
    round's context (``sim.last_round``)."""
    out: dict[int, tuple[Any, float]] = {}

    def round_process(ctx: Any) -> Any:
        def one(client: int, start_s: float, nbytes: int) -> Any:
            yield ctx.env.timeout(start_s)
            value = yield ctx.upload(client, nbytes, "payload")
            out[client] = (value, ctx.now_s)

        yield ctx.all_of([ctx.process(one(*p)) for p in plan])

    sim.run_round(round_process, np.array(sorted({p[0] for p in plan})))
    return out, sim.last_round


def activations_then_labels(sim: Any, clients: list[int], iterations: int, activation_bytes: int,
                            label_bytes: int, period_s: float) -> list[tuple[int, float, float, float, float]]:
    """Run one round of ``sim`` in which each of ``clients`` uploads ``activation_bytes`` then, at
    the instant that ends, ``label_bytes`` (a follow-up), ``iterations`` times, the cohort starting
    together again every ``period_s``: each client's ``(client, start, middle, end, share_hz)``
    per iteration, in the order they ended."""
    seen: list[tuple[int, float, float, float, float]] = []

    def round_process(ctx: Any) -> Any:
        def one(k: int) -> Any:
            for _ in range(iterations):
                start = ctx.now_s
                yield ctx.upload(k, activation_bytes, "activations")
                middle = ctx.now_s
                yield ctx.upload(k, label_bytes, "labels")
                seen.append((k, start, middle, ctx.now_s, ctx.uplink_share_hz(k)))
                yield ctx.env.timeout(start + period_s - ctx.now_s)  # the cohort starts together again

        yield ctx.all_of([ctx.process(one(k)) for k in clients])

    sim.run_round(round_process, np.array(clients))
    return seen
