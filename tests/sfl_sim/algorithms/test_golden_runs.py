"""Every registered algorithm reproduces its stored fixed-seed run bit for bit.

Each case trains one algorithm for two rounds on a tiny AlexNet (dropout, max-pooling and a
two-layer server side, so every step kind and the torch random stream matter) through the real
:class:`~sfl_sim.engine.Simulator`, under one of three engine settings:

* ``plain`` — ideal downlink, wait for all, no fading;
* ``lossy`` — broadcast downlink, Rayleigh fading redrawn per transmission, outage with one
  retransmission then a drop, over-selection keeping two of three clients;
* ``deadline`` — Rayleigh fading per round, outage dropped at once, a per-iteration deadline
  that the slowest client misses.

It compares with ``golden_runs.json``: the sha256 of every tensor, array and number of the
algorithm's ``state_dict()`` (walked in key order), the engine counters (``Counters.as_dict()``
with the counts by kind), the clock, each round's duration and who was dropped why.  A refactor
must keep every entry; a change that is *meant* to change a run regenerates only its own
entries, and says so in its commit message:

    SFL_SIM_REGENERATE_GOLDEN=ca_sfl/plain,ca_sfl/lossy python -m pytest tests/sfl_sim/algorithms/test_golden_runs.py
    SFL_SIM_REGENERATE_GOLDEN=all python -m pytest tests/sfl_sim/algorithms/test_golden_runs.py

(the regenerating run rewrites the named entries of the file and passes).  Runs are
bit-reproducible on one machine and torch build; the file was made on the project's CI machine.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest
import torch

from channel import (Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, OutagePolicy, RayleighFading,
                     ShannonRate, TR36814Macro)
from sfl_sim.algorithms import ALGORITHMS, TrainingSetup
from sfl_sim.algorithms.conformance import conformance_setup
from sfl_sim.engine import Simulator

GOLDEN = Path(__file__).with_name("golden_runs.json")
ENV = "SFL_SIM_REGENERATE_GOLDEN"

COHORTS = [[0, 1, 2], [0, 1, 3]]  # round 2 brings a newcomer (client 3) and two known clients
DISTANCES_M = [60.0, 200.0, 380.0, 470.0]
CLIENT_FLOPS_PER_S = np.array([2.0e4, 2.0e5, 2.0e5, 1.0e5])  # client 0 is the slow one

#: Parameter variants that take another code path than the defaults.
VARIANTS: Dict[str, Dict[str, Any]] = {
    "splitfed_v2[parallel]": {"name": "splitfed_v2", "sequential_clients": False},
    "sfl_local_loss[sequential]": {"name": "sfl_local_loss", "server_mode": "sequential"},
    "sfl_local_loss[hidden]": {"name": "sfl_local_loss", "aux_hidden": 3},
    "splitfed_v3[average_all]": {"name": "splitfed_v3", "eval_client_model": "average_all"},
    "scala[local_data]": {"name": "scala", "label_prior": "local_data"},
    "minibatch_sfl[samples]": {"name": "minibatch_sfl", "server_weighting": "samples"},
    "fedconcat[stage2]": {"name": "fedconcat", "encoder_rounds": 1, "n_clusters": 2},
    "besplit_a[flatten_global]": {"name": "besplit_a", "aux_head": "flatten", "eval_on": "global"},
}
ENGINES = ("plain", "lossy", "deadline")


def _specs() -> Dict[str, Dict[str, Any]]:
    specs = {name: {"name": name} for name in ALGORITHMS.names()}
    specs.update(VARIANTS)
    return specs


def case_ids() -> List[str]:
    return [f"{spec}/{engine}" for spec in _specs() for engine in ENGINES]


def _setup() -> TrainingSetup:
    """The conformance check's tiny setup (client k holds mostly class k, some of class k+1), with
    the seeds the digests were made with: data 11, initial weights 1, minibatches 5."""
    return conformance_setup(11, init_seed=1, minibatch_seed=5)


def _simulator(engine: str) -> Simulator:
    rng = np.random.default_rng(0)
    fading = None if engine == "plain" else RayleighFading()
    cell = Cell(FixedDistancePlacement(DISTANCES_M), TR36814Macro(), NoShadowing(), ShannonRate(), EqualAllocation(),
                n_clients=len(DISTANCES_M), tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=2.0e5, downlink_bandwidth_hz=2.0e5, server_tx_power_w=1.0,
                placement_rng=rng, shadowing_rng=rng, fading=fading)
    # Seed 15 puts a far client into outage in both rounds of ``deadline`` (one draw per round).
    fading_rng = np.random.default_rng(15 if engine == "deadline" else 7)
    if engine == "plain":
        return Simulator(cell, CLIENT_FLOPS_PER_S, 1.0e7, fading_rng=fading_rng)
    # Rates on a third of the band without fading: 1.5e6, 1.0e6, 0.8e6 and 0.7e6 bit/s; below
    # 7e5 the farthest client falls into outage about one transmission in two, the nearest almost never.
    if engine == "lossy":
        outage = OutagePolicy(min_rate_bps=7.0e5, max_attempts=2, on_outage="retransmit")
        return Simulator(cell, CLIENT_FLOPS_PER_S, 1.0e7, downlink_mode="broadcast", fading_rng=fading_rng,
                         coherence="per_transmission", outage=outage, straggler_policy="over_selection",
                         keep_clients=2)
    # Client 0 needs about 0.6 s per local iteration: it misses the deadline, the others mostly not.
    outage = OutagePolicy(min_rate_bps=7.0e5, max_attempts=1, on_outage="drop")
    return Simulator(cell, CLIENT_FLOPS_PER_S, 1.0e7, fading_rng=fading_rng, coherence="per_round", outage=outage,
                     straggler_policy="deadline", deadline_s=0.4)


def _digest(obj: Any, h: "hashlib._Hash") -> None:
    """Feed every leaf of a state dict into ``h``, keys and types included, in key order."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(obj, np.ndarray):  # hashed as the tensor it converts to (a state may switch)
        _digest(torch.from_numpy(np.ascontiguousarray(obj)), h)
    elif isinstance(obj, dict):
        h.update(b"{")
        for key, value in obj.items():
            h.update(repr(key).encode())
            _digest(value, h)
        h.update(b"}")
    elif isinstance(obj, (list, tuple)):
        h.update(b"[")
        for value in obj:
            _digest(value, h)
        h.update(b"]")
    elif obj is None or isinstance(obj, (bool, int, float, str, np.number)):
        h.update(f"{type(obj).__name__}:{obj!r}".encode())
    else:
        raise TypeError(f"cannot digest a {type(obj).__name__} in a state dict")


def run_case(case: str) -> Dict[str, Any]:
    """The record of one case: weights digest, counters, clock, per-round durations and drops."""
    spec_id, engine = case.split("/")
    spec = dict(_specs()[spec_id])
    name = spec.pop("name")
    setup = _setup()
    torch.manual_seed(2)  # auxiliary heads and other layers built at construction
    algo = ALGORITHMS.get(name)(setup, **spec)
    sim = _simulator(engine)
    torch.manual_seed(3)  # dropout
    rounds = []
    for cohort in COHORTS:
        cohort = np.array(cohort, dtype=np.int64)
        duration = sim.run_round(lambda ctx, c=cohort: algo.run_round(ctx, c), cohort)
        rounds.append({"duration_s": duration,
                       "dropped": {str(k): why for k, why in sorted(sim.last_round.dropped.items())}})
    h = hashlib.sha256()
    _digest(algo.state_dict(), h)
    return {"state_sha256": h.hexdigest(), "counters": sim.counters.as_dict(), "clock_s": sim.now_s,
            "rounds": rounds}


def _load() -> Dict[str, Any]:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


def _to_regenerate() -> set:
    value = os.environ.get(ENV, "")
    if value == "all":
        return set(case_ids())
    return {c for c in value.split(",") if c}


#: Torch threads the golden file was made with: the split of a reduction among threads changes
#: its rounding, so a test run before this one that set another count must not change the bits.
GOLDEN_TORCH_THREADS = 2


@pytest.fixture(autouse=True)
def _golden_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(GOLDEN_TORCH_THREADS)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("case", case_ids())
def test_run_matches_golden(case: str) -> None:
    got = json.loads(json.dumps(run_case(case)))  # as the file holds it (str keys, JSON floats)
    if case in _to_regenerate():
        golden = _load()
        golden[case] = got
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
        return
    golden = _load()
    assert case in golden, f"no golden entry for {case}; generate it with {ENV}={case}"
    want = golden[case]
    assert got["counters"] == want["counters"]
    assert got["rounds"] == want["rounds"]
    assert got["clock_s"] == want["clock_s"]
    assert got["state_sha256"] == want["state_sha256"]


def test_every_registered_algorithm_has_golden_entries() -> None:
    golden = _load()
    missing = [c for c in case_ids() if c not in golden]
    assert not missing, f"no golden entries for {missing}; generate them with {ENV}=<case,...>"
