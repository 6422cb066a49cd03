"""Conformance check: does an algorithm behave like one the simulator can run, resume and compare?

:func:`check_algorithm` builds the algorithm on a tiny setup (a narrow AlexNet on 8x8 images,
four clients with skewed labels, two local iterations) and runs it through the real
:class:`~sfl_sim.engine.Simulator`.  It raises :class:`ConformanceError` — one line naming the
algorithm, the check and what was wrong — or returns a report of the checks that passed.  Use
it on a new algorithm before putting it in a scenario::

    from sfl_sim.algorithms.conformance import check_algorithm
    check_algorithm("my_method:MySCALA", temperature=2.0)

Checks, in order
----------------
``subclass``        the class derives from :class:`~sfl_sim.algorithms.Algorithm`;
``hooks``           it defines no method of :data:`RETIRED_HOOKS`, which no training path calls
                    (``sample_batch``: every minibatch comes from ``plan_local_work``);
``builds``          it builds on the tiny setup with the given parameters;
``rounds run``      two rounds finish and take simulated time;
``evaluates``       ``evaluate`` gives a finite accuracy in [0, 1] and a finite loss;
``bytes counted``   uplink bytes > 0 (payloads go through ``ctx.upload`` with their real size);
``flops counted``   client or server FLOPs > 0 (compute goes through ``ctx.compute``);
``plain state``     ``state_dict()`` holds only tensors, numbers, strings, None and
                    lists/tuples/dicts of them (checkpoints load with ``weights_only=True``);
``same seed``       the same seed gives the same state and counters twice;
``saves``           ``state_dict()`` survives ``torch.save`` + ``torch.load(weights_only=True)``;
``restores``        ``load_state_dict`` on a fresh instance restores identical weights and state;
``optimizer state`` with SGD momentum, client optimizer state kept per client and a step
                    schedule, a fresh instance loaded from ``state_dict()`` trains the next round
                    to exactly the weights the original reaches (the state dict includes
                    :meth:`~sfl_sim.algorithms.Algorithm.optimizer_state`, and updates go through
                    ``client_optimizer``/``server_optimizer`` and ``optimizer_step``);
``lost payloads``   rounds in which uploads fail after outage and a straggler misses its
                    deadline still finish, and record who was dropped (the algorithm waits
                    through ``ctx.gather`` and handles :class:`~sfl_sim.engine.Lost`).

An asynchronous algorithm (:class:`~sfl_sim.algorithms.asynchronous.AsynchronousAlgorithm`) is
driven by the :class:`~sfl_sim.engine.asynchronous.AsyncDriver` instead, with its
``async_policy`` for a cohort of 3 (its parameters must fit the four clients: e.g.
``concurrency=3, buffer_size=2``) and the clients picked in id order: a "round" above is an
aggregation, ``lost payloads`` runs two aggregations with uploads lost after outage (no deadline:
an asynchronous server waits for no cohort) and looks for the losses the driver recorded.  The
``optimizer state`` check does not apply: the state an asynchronous run has in flight (clients
mid-training) is no checkpoint's, and a resumed asynchronous run replays from its start
(:mod:`sfl_sim.runs.asynchronous`).
"""
from __future__ import annotations

import functools
import io
import math
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F

from sfl_sim.algorithms.asynchronous import AsynchronousAlgorithm, is_asynchronous
from sfl_sim.algorithms.base import ALGORITHMS, Algorithm, TrainingSetup
from sfl_sim.channel import (
    Cell,
    EqualAllocation,
    FixedDistancePlacement,
    NoShadowing,
    OutagePolicy,
    ShannonRate,
    TR36814Macro,
)
from sfl_sim.engine import Simulator
from sfl_sim.engine.asynchronous import Aggregation, AsyncDriver
from sfl_sim.kit.conformance import ConformanceReport
from sfl_sim.models import build_model
from sfl_sim.optim import TrainingSettings

__all__ = ["RETIRED_HOOKS", "ConformanceError", "check_algorithm", "conformance_setup"]


N_CLASSES = 4
DATA_SIZES = (10, 14, 8, 16)
COHORTS = ((0, 1, 2), (0, 1, 3))
DISTANCES_M = (60.0, 200.0, 380.0, 470.0)
CLIENT_FLOPS_PER_S = (2.0e4, 2.0e5, 2.0e5, 1.0e5)
SERVER_FLOPS_PER_S = 1.0e7
_PLAIN = (torch.Tensor, bool, int, float, str, type(None))


#: Method names a plug-in may take for hooks but no training path calls, with what to override
#: instead: a definition would be silently ignored, so the check refuses it.
RETIRED_HOOKS = {
    "sample_batch": "every minibatch comes from plan_local_work(cohort), which returns a ClientWork per client "
                    "(sfl_sim.algorithms.local_work); override that to change which samples a client trains on",
}


class ConformanceError(AssertionError):
    """An algorithm failed a conformance check (the message is one line: algorithm, check, why)."""


class _Report(ConformanceReport):
    kind = "algorithm"
    error = ConformanceError


#: Training settings of the ``optimizer state`` check: every kind of state an optimizer bank keeps.
STATEFUL_TRAINING = TrainingSettings(optimizer="sgd", optimizer_params={"momentum": 0.9},
                                     client_optimizer_state="persist", lr_schedule="step",
                                     lr_schedule_params={"step_size_rounds": 1, "gamma": 0.5})


def _round(sim: Simulator, algo: Algorithm, cohort: np.ndarray) -> float:
    """One round of ``algo`` with ``cohort`` on ``sim``: its simulated duration."""
    return sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)


def conformance_setup(seed: int = 0, training: TrainingSettings | None = None, *,
                      init_seed: int | None = None, minibatch_seed: int | None = None) -> TrainingSetup:
    """The tiny setup of the check: AlexNet (conv 2-3-3-3-2, fc 5-4) on 1x8x8 images split at S2,
    four clients of 10, 14, 8 and 16 samples holding mostly one class each, B = 8, T = 2.

    ``seed`` draws the data; the initial weights and the minibatches use ``seed + 1`` and
    ``seed + 2`` unless ``init_seed`` / ``minibatch_seed`` say otherwise (the golden runs pin theirs)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(sum(DATA_SIZES), 1, 8, 8, generator=gen)
    y = torch.empty(len(x), dtype=torch.int64)
    indices, start = [], 0
    for k, size in enumerate(DATA_SIZES):
        rows = torch.arange(start, start + size)
        y[rows] = torch.tensor([(k + (i % 3 == 2)) % N_CLASSES for i in range(size)])
        indices.append(rows)
        start += size
    torch.manual_seed(seed + 1 if init_seed is None else init_seed)
    model = build_model("alexnet", (1, 8, 8), N_CLASSES, conv_channels=[2, 3, 3, 3, 2], fc_features=[5, 4])
    return TrainingSetup(model=model, split_point="S2", train_x=x, train_y=y, client_indices=indices,
                         num_classes=N_CLASSES, batch_size=8, local_iterations=2, learning_rate=0.05,
                         device=torch.device("cpu"),
                         minibatch_rng=np.random.default_rng(seed + 2 if minibatch_seed is None else minibatch_seed),
                         training=training if training is not None else TrainingSettings())


def _in_id_order(n: int, busy: frozenset[int]) -> np.ndarray:
    """The asynchronous check's selector: the first ``n`` clients not in flight, by id."""
    return np.array([k for k in range(len(DISTANCES_M)) if k not in busy][:n], dtype=np.int64)


def _simulator(lossy: bool, asynchronous: bool = False) -> Simulator:
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement(list(DISTANCES_M)), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=len(DISTANCES_M), tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=2.0e5, placement_rng=rng, shadowing_rng=rng)
    if not lossy:
        return Simulator(cell, np.array(CLIENT_FLOPS_PER_S), SERVER_FLOPS_PER_S)
    # The two far clients are always in outage (their rate on a third of the band is below the
    # threshold) and client 0 is slow: uploads are lost and a straggler misses the deadline.
    rates = cell.uplink_rates_bps(np.array([0, 1, 2]))
    outage = OutagePolicy(min_rate_bps=float(rates[1] + rates[2]) / 2, max_attempts=1, on_outage="drop")
    if asynchronous:  # no cohort to wait for: no deadline
        return Simulator(cell, np.array(CLIENT_FLOPS_PER_S), SERVER_FLOPS_PER_S, outage=outage)
    return Simulator(cell, np.array(CLIENT_FLOPS_PER_S), SERVER_FLOPS_PER_S, outage=outage,
                     straggler_policy="deadline", deadline_s=0.4)


def _resolve(spec: str | type | Mapping[str, Any], params: dict[str, Any]) -> tuple[str, Any, dict[str, Any]]:
    if isinstance(spec, Mapping):
        params = {**{k: v for k, v in spec.items() if k not in ("name", "label")}, **params}
        spec = spec["name"]
    if isinstance(spec, str):
        return spec, ALGORITHMS.get(spec), params
    return getattr(spec, "__qualname__", repr(spec)), spec, params


def _build(report: _Report, cls: type, params: dict[str, Any], seed: int,
           training: TrainingSettings | None = None) -> Algorithm:
    setup = conformance_setup(seed, training)
    torch.manual_seed(seed + 3)  # layers an algorithm adds at construction
    return report.attempt("builds", lambda: cls(setup, **params))


def _train(report: _Report, algo: Algorithm, seed: int,
           lossy: bool = False) -> tuple[Simulator, list[float], bool]:
    """Two rounds (an asynchronous algorithm: two aggregations) on a fresh simulator: it, their
    simulated durations, and whether any client was recorded as dropped."""
    sim = _simulator(lossy, is_asynchronous(algo))
    torch.manual_seed(seed + 4)  # dropout
    what = "lost payloads" if lossy else "rounds run"
    if isinstance(algo, AsynchronousAlgorithm):
        policy = report.attempt("builds", lambda: algo.async_policy(len(COHORTS[0])))
        driver = AsyncDriver(sim, policy, algo, _in_id_order)
        times = [0.0] + [cast(Aggregation, report.attempt(what, driver.advance)).time_s for _ in COHORTS]
        lost = any(group.dropped for group in driver.take_groups())
        return sim, [b - a for a, b in zip(times[:-1], times[1:], strict=True)], lost
    durations = []
    for cohort in COHORTS:
        cohort_ids = np.array(cohort, dtype=np.int64)
        durations.append(report.attempt(what, functools.partial(_round, sim, algo, cohort_ids)))
    return sim, durations, bool(sim.last_round.dropped)


def _run(report: _Report, cls: type, params: dict[str, Any],
         seed: int) -> tuple[Algorithm, Simulator, list[float], tuple[float, float]]:
    """Build, train two rounds, evaluate (evaluation may touch the state, as SplitFedV3's does)."""
    algo = _build(report, cls, params, seed)
    sim, durations, _ = _train(report, algo, seed)
    setup = algo.setup
    scores = report.attempt("evaluates", lambda: algo.evaluate(_evaluate, setup.train_x, setup.train_y, 16))
    return algo, sim, durations, scores


def _non_plain(obj: object, path: str = "state_dict()") -> list[str]:
    """Paths of the leaves of ``obj`` that are not plain (tensor, number, string, None)."""
    if isinstance(obj, Mapping):
        return [p for key, value in obj.items() for p in _non_plain(value, f"{path}[{key!r}]")]
    if isinstance(obj, (list, tuple)):
        return [p for i, value in enumerate(obj) for p in _non_plain(value, f"{path}[{i}]")]
    return [] if isinstance(obj, _PLAIN) else [f"{path} is a {type(obj).__module__}.{type(obj).__qualname__}"]


def _same(a: object, b: object) -> bool:
    """Two states are equal: same structure, tensors bit for bit (dtype and shape included)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
                and a.shape == b.shape and torch.equal(a.cpu(), b.cpu()))
    return type(a) is type(b) and a == b


@torch.no_grad()
def _evaluate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int) -> tuple[float, float]:
    was_training = model.training
    model.eval()
    logits = torch.cat([model(x[i:i + batch_size]) for i in range(0, len(y), batch_size)])
    model.train(was_training)
    return float((logits.argmax(dim=1) == y).float().mean()), float(F.cross_entropy(logits, y))


def _check_optimizer_state(report: _Report, cls: type, params: dict[str, Any], seed: int) -> None:
    """Two rounds with stateful optimizers, then a third round from the original and from a fresh
    instance loaded with its state dict (and the same random streams): the same weights."""
    algo = _build(report, cls, params, seed, STATEFUL_TRAINING)
    _train(report, algo, seed)
    state = io.BytesIO()
    torch.save(report.attempt("optimizer state", algo.state_dict), state)
    state.seek(0)
    twin = _build(report, cls, params, seed, STATEFUL_TRAINING)  # same data; untrained, so its weights differ
    report.attempt("optimizer state", lambda: twin.load_state_dict(torch.load(state, weights_only=True)))
    twin.setup.minibatch_rng.bit_generator.state = algo.setup.minibatch_rng.bit_generator.state
    cohort = np.array(COHORTS[0], dtype=np.int64)
    after = []
    for model in (algo, twin):
        sim = _simulator(False)
        torch.manual_seed(seed + 5)  # dropout
        report.attempt("optimizer state", functools.partial(_round, sim, model, cohort))
        after.append(model.global_model().state_dict())
    report.check(_same(after[0], after[1]), "optimizer state",
                 "a fresh instance loaded from state_dict() trains the next round to other weights than the "
                 "original with SGD momentum and kept client state; put self.optimizer_state() into state_dict() "
                 "and call self.load_optimizer_state(state) in load_state_dict()")


def check_algorithm(spec_or_class: str | type[Algorithm] | Mapping[str, Any], seed: int = 0,
                    **params: Any) -> dict[str, Any]:
    """Build, run, seed-check and checkpoint an algorithm on a tiny setup (module docstring).

    Parameters
    ----------
    spec_or_class : str, class or mapping
        A registered name (``"scala"``), ``"package.module:Class"``, the class itself, or a
        scenario entry ``{"name": ..., **params}``.
    seed : int
        Seed of the tiny setup and of the runs.
    **params
        Constructor parameters of the algorithm (after the :class:`TrainingSetup`).

    Returns
    -------
    dict
        ``algorithm``, ``checks`` (the names of the checks passed, in order) and what the two
        rounds counted: ``uplink_bytes``, ``downlink_bytes``, ``client_flops``, ``server_flops``,
        ``sim_time_s``.

    Raises
    ------
    ConformanceError
        (an ``AssertionError``) naming the algorithm and the first check it fails.
    sfl_sim.kit.registry.UnknownComponentError
        When a name does not resolve.
    """
    name, cls, params = _resolve(spec_or_class, params)
    report = _Report(name)
    with torch.random.fork_rng(devices=[]):  # leave the caller's torch stream as it was
        report.check(isinstance(cls, type) and issubclass(cls, Algorithm), "subclass",
                     f"{cls!r} does not derive from sfl_sim.algorithms.Algorithm")
        retired = [hook for hook in RETIRED_HOOKS if hasattr(cls, hook)]
        report.check(not retired, "hooks", f"it defines {retired[0]}, which no training path calls; "
                                           f"{RETIRED_HOOKS[retired[0]]}" if retired else "")
        algo, sim, durations, (acc, loss) = _run(report, cls, params, seed)
        report.check(all(math.isfinite(d) and d > 0 for d in durations), "rounds run",
                     f"round durations {durations} s; allowed: finite and > 0 (compute and transfers take time)")
        c = sim.counters
        report.check(c.uplink_bytes > 0, "bytes counted",
                     "no uplink bytes after two rounds; send payloads with ctx.upload(client, nbytes, kind)")
        report.check(c.client_flops > 0 or c.server_flops > 0, "flops counted",
                     "no client or server FLOPs after two rounds; charge compute with ctx.compute (or the "
                     "client_compute / server_compute helpers)")
        report.check(0.0 <= acc <= 1.0 and math.isfinite(loss), "evaluates",
                     f"accuracy {acc!r}, loss {loss!r}; allowed: accuracy in [0, 1], finite loss")

        state = report.attempt("plain state", algo.state_dict)
        odd = _non_plain(state)
        report.check(not odd, "plain state", f"{odd[0] if odd else ''}; allowed: tensors, numbers, strings, None "
                                             f"and lists/tuples/dicts of them (convert arrays with torch.tensor)")
        twin, twin_sim, _, _ = _run(report, cls, params, seed)
        report.check(_same(state, twin.state_dict()) and c.as_dict() == twin_sim.counters.as_dict(), "same seed",
                     "two runs with the same seed end with different weights or counters; draw randomness "
                     "from setup.minibatch_rng or the seeded torch generator only")
        buffer = io.BytesIO()
        torch.save(state, buffer)
        buffer.seek(0)
        loaded = report.attempt("saves", lambda: torch.load(buffer, weights_only=True))
        fresh = _build(report, cls, params, seed + 10)  # other initial weights, to see them replaced
        report.attempt("restores", lambda: fresh.load_state_dict(loaded))
        report.check(_same(state, fresh.state_dict()), "restores",
                     "load_state_dict(state_dict()) on a fresh instance does not give back the same state")
        report.check(_same(algo.global_model().state_dict(), fresh.global_model().state_dict()), "restores",
                     "the restored global model's weights differ")

        if not is_asynchronous(cls):  # an asynchronous run resumes by replay (module docstring)
            _check_optimizer_state(report, cls, params, seed)
        _, _, dropped = _train(report, _build(report, cls, params, seed), seed, lossy=True)
        report.check(dropped, "lost payloads",
                     "no client recorded as dropped in a round where uploads fail after outage and client 0 "
                     "misses the deadline; wait for clients with ctx.gather and let a lost upload's Lost end "
                     "the client's process")
    return {"algorithm": name, "checks": list(report.passed), "uplink_bytes": c.uplink_bytes,
            "downlink_bytes": c.downlink_bytes, "client_flops": c.client_flops, "server_flops": c.server_flops,
            "sim_time_s": sim.now_s}
