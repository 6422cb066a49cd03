"""Re-timing a finished run (``sfl_sim.runs.retime``): the field table, the refusals before any work,
and exactness: a re-timed run equals a full run under the same settings in every column that is
not host time, for every synchronous algorithm of the default model with its dropout, under a
bandwidth, a rate-model and a compute-budget change (one that reorders the clients' compute events:
their dropout masks come from each client's own stream, :mod:`sfl_sim.algorithms.streams`, so no
re-timing is refused)."""
from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

import sfl_sim
from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms.asynchronous import is_asynchronous
from sfl_sim.config import Scenario
from sfl_sim.config.models import ComponentSpec
from sfl_sim.errors import ConfigError, RunDirError
from sfl_sim.models.alexnet import AlexNet
from sfl_sim.runs.retime import RetimeRefused, retime
from sfl_sim.runs.retime_fields import FIELD_KINDS, TIMING, changed_fields, field_kind
from sfl_sim.runs.rundir import work
from sfl_sim.runs.rundir.schema import RETIMED_FROM, WORK_SHA256
from tests.helpers import read_rows, small_scenario, write_yaml

#: Files compared between a re-timed and a full run (host-time columns left out).
COMPARED = ("metrics.csv", "rounds.csv", "energy.csv", "classes.csv", "cell.csv", "clients.csv")

#: The kinds of change the exactness tests re-time under.
CHANGES: dict[str, list[str]] = {
    "bandwidth": ["cell.uplink_bandwidth_hz=3e6"],
    "rate_model": ["cell.rate={name: mcs_table}"],
    # the slowest client now 300 times slower than the fastest (10 before): the clients' local steps
    # end in another order, which reordered their dropout draws while they came from one stream
    "compute": ["clients.compute_flops_per_s_min=1e8", "clients.compute_flops_per_s_max=3e10",
                "server.compute_flops_per_s=3e11"],
}

#: The default AlexNet's dropout probability (before its two hidden linear layers).
DEFAULT_DROPOUT = AlexNet.Params().dropout

#: The algorithms a run of which keeps a work record (an asynchronous one keeps none: refused).
SYNCHRONOUS = sorted(n for n in ALGORITHMS.names() if not is_asynchronous(ALGORITHMS.get(n)))


def _leaf_fields(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every field of the scenario schema, down to a component spec or a plain value."""
    out = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        inner = [a for a in typing.get_args(info.annotation) if isinstance(a, type)] or [info.annotation]
        sections = [a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)
                    and not issubclass(a, ComponentSpec)]
        out.extend(_leaf_fields(sections[0], path + ".") if sections else [path])
    return out


def test_every_scenario_field_is_classified() -> None:
    fields = _leaf_fields(Scenario)
    assert len(fields) > 40
    unclassified = [f for f in fields if field_kind(f) is None]
    assert not unclassified, f"classify these in sfl_sim.runs.retime.FIELD_KINDS: {unclassified}"
    assert all(any(f == key or f.startswith(key + ".") for f in fields) for key in FIELD_KINDS), \
        "FIELD_KINDS names a field the schema does not have"


def test_field_kind_takes_the_longest_prefix() -> None:
    assert field_kind("cell.rate.name") == TIMING
    assert field_kind("clients.count") == "training"
    assert field_kind("clients.compute_flops_per_s_max") == TIMING
    assert changed_fields({"a": {"b": 1, "c": [1]}}, {"a": {"b": 2, "c": [1]}, "d": 3}) == ["a.b", "d"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Every synchronous algorithm trained for 2 rounds on the small scenario, its AlexNet with the
    default model's dropout: (out, scenario)."""
    tmp = tmp_path_factory.mktemp("retime")
    data = small_scenario(algorithms=SYNCHRONOUS, rounds=2, local_iterations=3)
    data["model"]["params"]["dropout"] = DEFAULT_DROPOUT  # what the default model has (stated: it is the point)
    data["cell"] = {"downlink": {"mode": "ideal"}}
    path = tmp / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    sfl_sim.run(str(path), output_dir=tmp / "source")
    return tmp, data


@pytest.fixture(scope="module")
def full_runs(trained: tuple[Path, dict[str, Any]]) -> dict[str, Path]:
    """The full runs of every algorithm under each change of :data:`CHANGES`."""
    tmp, _ = trained
    out = {}
    for change, overrides in CHANGES.items():
        out[change] = tmp / f"full_{change}"
        sfl_sim.run(str(tmp / "s.yaml"), overrides=overrides, output_dir=out[change])
    return out


def _same(full: Path, retimed: Path) -> None:
    for name in COMPARED:
        if (full / name).exists():
            assert read_rows(retimed / name, host_time=False) == read_rows(full / name, host_time=False), name
    # work_sha256: a re-timed run keeps its source's record (under another scheduler, not the full run's)
    keep = lambda s: {k: v for k, v in s.items()  # noqa: E731
                      if "host" not in k and k not in ("output_dir", "path", WORK_SHA256)}
    a, b = (json.loads((d / "summary.json").read_text()) for d in (full, retimed))
    assert keep(a) == keep(b)


@pytest.mark.slow
@pytest.mark.parametrize("change", list(CHANGES))
@pytest.mark.parametrize("algorithm", SYNCHRONOUS)
def test_a_retimed_run_equals_the_full_run(trained, full_runs, tmp_path: Path, change: str, algorithm: str) -> None:
    """No synchronous algorithm's training depends on the timing: every re-timing goes through
    (a refusal here would be a false one) and equals the full run."""
    tmp, _ = trained
    retime(tmp / "source" / algorithm, CHANGES[change], tmp_path / algorithm)
    _same(full_runs[change] / algorithm, tmp_path / algorithm)


def test_the_default_model_has_dropout() -> None:
    assert DEFAULT_DROPOUT > 0  # else the re-timings above would not test what they are for


@pytest.mark.slow
def test_fedavg_of_the_default_model_retimes_to_other_compute_budgets(tmp_path: Path) -> None:
    """FedAvg of the default AlexNet (paper widths, dropout before its hidden linear layers), 3
    rounds, re-timed to other client compute budgets: not refused (its dropout masks were drawn
    from one stream in the order the clients' steps ended), and equal to the full runs."""
    data = small_scenario(algorithms=["fedavg"], rounds=3, local_iterations=3, clients=10, train=400, test=100)
    data["model"] = {"name": "alexnet"}
    path = write_yaml(tmp_path, data)
    sfl_sim.run(str(path), output_dir=tmp_path / "source")
    for i, budgets in enumerate([["clients.compute_flops_per_s_min=1e8"],
                                 ["clients.compute_flops_per_s_min=5e9", "clients.compute_flops_per_s_max=6e9"]]):
        sfl_sim.run(str(path), overrides=budgets, output_dir=tmp_path / f"full{i}")
        retime(tmp_path / "source" / "fedavg", budgets, tmp_path / f"retimed{i}")
        _same(tmp_path / f"full{i}" / "fedavg", tmp_path / f"retimed{i}")


@pytest.mark.slow
def test_a_retimed_run_names_its_source_and_can_be_retimed_again(trained, tmp_path: Path) -> None:
    tmp, _ = trained
    first = tmp_path / "first"
    retime(tmp / "source" / "fedavg", {"cell.uplink_bandwidth_hz": 5e6}, first)
    record = yaml.safe_load((first / "resolved.yaml").read_text())
    assert record[RETIMED_FROM] == {"run": str((tmp / "source" / "fedavg").resolve()),
                                    "set": {"cell.uplink_bandwidth_hz": 5e6}}
    assert not (first / "checkpoint.pt").exists()
    assert work.read_rounds(first) == work.read_rounds(tmp / "source" / "fedavg")
    back = tmp_path / "back"
    retime(first, {"cell.uplink_bandwidth_hz": 20e6}, back)
    _same(tmp / "source" / "fedavg", back)


@pytest.mark.slow
@pytest.mark.parametrize(("override", "field"), [
    ("training.learning_rate=0.5", "training.learning_rate"),
    ("seed=3", "seed"),
    ("model.split_point=S1", "model.split_point"),
    ("clients.participation=0.2", "clients.participation"),
    ("algorithms=[{name: fedprox}]", "algorithms"),
])
def test_a_training_field_is_refused_before_any_work(trained, tmp_path: Path, override: str, field: str) -> None:
    tmp, _ = trained
    with pytest.raises(RetimeRefused, match=rf"^{field}\S*: changes training") as info:
        retime(tmp / "source" / "fedavg", [override], tmp_path / "out")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_bad_input_is_one_line(trained, tmp_path: Path) -> None:
    tmp, _ = trained
    with pytest.raises(ConfigError, match="cell.uplink_bandwidth_hz"):
        retime(tmp / "source" / "fedavg", ["cell.uplink_bandwidth_hz=-1"], tmp_path / "a")
    with pytest.raises(RunDirError, match="allowed: a complete run directory"):
        retime(tmp_path, [], tmp_path / "b")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x").write_text("")
    with pytest.raises(RunDirError, match="not empty"):
        retime(tmp / "source" / "fedavg", [], tmp_path / "c")


@pytest.mark.slow
def test_a_decision_that_goes_otherwise_refuses_and_leaves_nothing(trained, tmp_path: Path) -> None:
    """A deadline the slowest client now misses: the straggler policy would drop it."""
    tmp, _ = trained
    with pytest.raises(RetimeRefused, match=r"round 1, client \d+: dropped \(deadline\) by the straggler policy "
                                            r"where the record kept it") as info:
        retime(tmp / "source" / "fedavg", ["stragglers.policy=deadline", "stragglers.deadline_s=1e-6"],
               tmp_path / "out")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_command_line_retimes_and_refuses_in_one_line(trained, tmp_path: Path, capsys) -> None:
    from sfl_sim.cli import main

    tmp, _ = trained
    source = str(tmp / "source" / "scala")
    assert main(["retime", source, "--set", "cell.uplink_bandwidth_hz=5e6", "-o", str(tmp_path / "a"),
                 "--no-progress"]) == 0
    assert (tmp_path / "a" / "metrics.csv").is_file()
    capsys.readouterr()
    assert main(["retime", source, "--set", "training.batch_size=12", "-o", str(tmp_path / "b"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "training.batch_size: changes training" in err
    result = sfl_sim.retime(source, overrides={"server.compute_flops_per_s": 1e10}, output_dir=tmp_path / "c")
    assert result.ok and result.summary["label"] == "scala" and len(result.metrics) == 3


@pytest.mark.slow
def test_an_asynchronous_run_is_refused_in_one_line(tmp_path: Path) -> None:
    data = small_scenario(algorithms=[{"name": "fedbuff", "concurrency": 2, "buffer_size": 2}], rounds=2,
                          local_iterations=1)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    sfl_sim.run(str(path), output_dir=tmp_path / "source")
    assert not work.work_path(tmp_path / "source" / "fedbuff").exists()
    with pytest.raises(RetimeRefused, match="asynchronous") as info:
        retime(tmp_path / "source" / "fedbuff", CHANGES["bandwidth"], tmp_path / "out")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_scheduled_run_retimes_to_the_full_run(tmp_path: Path) -> None:
    # A round-robin band (fluid) is re-run by the replay like the static split: re-timing a scheduled
    # run under a bandwidth change equals the full run under it, and back under static too.
    data = small_scenario(algorithms=["fedavg", "scala"], rounds=2, local_iterations=2)
    data["cell"] = {"downlink": {"mode": "unicast"}, "scheduler": {"name": "round_robin"}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    sfl_sim.run(str(path), output_dir=tmp_path / "source")
    change = {"cell.uplink_bandwidth_hz": 10e6}
    sfl_sim.run(str(path), overrides=[f"{k}={v}" for k, v in change.items()], output_dir=tmp_path / "full")
    sfl_sim.run(str(path), overrides=["cell.scheduler=static"], output_dir=tmp_path / "static")
    for algorithm in ("fedavg", "scala"):
        retime(tmp_path / "source" / algorithm, change, tmp_path / "retimed" / algorithm)
        _same(tmp_path / "full" / algorithm, tmp_path / "retimed" / algorithm)
        retime(tmp_path / "source" / algorithm, {"cell.scheduler": "static"}, tmp_path / "to_static" / algorithm)
        _same(tmp_path / "static" / algorithm, tmp_path / "to_static" / algorithm)
