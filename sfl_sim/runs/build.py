"""Build every part of a run from a validated scenario, before any training.

Everything a scenario names — data set, partition, model, cell, algorithm, selector, engine — is
built here, so a bad component name, parameter or plug-in stops the run with a one-line
:class:`~sfl_sim.errors.ConfigError` naming the scenario field, before any work.  ``--check``
runs exactly this.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch

from sfl_sim.algorithms import ALGORITHMS, Algorithm, TrainingSetup
from sfl_sim.algorithms._exec.compressed import CompressionPlan
from sfl_sim.algorithms._exec.execution import ExecutionRefused, ExecutionRequest
from sfl_sim.algorithms._exec.flop_meter import FlopMeter
from sfl_sim.algorithms.asynchronous import AsynchronousAlgorithm, is_asynchronous
from sfl_sim.channel import CELL_KINDS, HARQ, SCHEDULERS, Cell, NoHarq, OutagePolicy
from sfl_sim.channel.conformance import conformance_problem
from sfl_sim.channel.link.downlink import downlink_rate_params
from sfl_sim.channel.link.rate import RATES
from sfl_sim.channel.link.resource_grid import slot_duration_s
from sfl_sim.channel.link.scheduling import is_dynamic
from sfl_sim.channel.network.association import HANDOVER
from sfl_sim.channel.network.hexgrid import NETWORK
from sfl_sim.channel.network.state import NetworkPlacement, layout_radius_m
from sfl_sim.channel.protocols import HarqModel, Scheduler
from sfl_sim.clients.availability import AVAILABILITY, AlwaysAvailable, Availability
from sfl_sim.clients.availability.capability import ClientCapability, client_capability, read_capability
from sfl_sim.clients.energy import ENERGY, EnergyLedger
from sfl_sim.clients.selection import SELECTORS, cohort_size, takes_available
from sfl_sim.compression import COMPRESSORS
from sfl_sim.config import AlgorithmSpec, ComponentSpec, Scenario
from sfl_sim.config.models import CellSection, CompressorSpec
from sfl_sim.data import DATASETS, PARTITIONERS, ArrayDataset, DatasetNotFoundError
from sfl_sim.engine import Counters, Simulator
from sfl_sim.engine.edge import HANDOVER_POLICIES, EdgeServers, HandoverPolicy, check_handover_policy
from sfl_sim.errors import ConfigError
from sfl_sim.kit.checks import one_line
from sfl_sim.kit.params import params_model
from sfl_sim.kit.protocols import ComponentProtocolError
from sfl_sim.kit.registry import ComponentParameterError, ComponentValueError, UnknownComponentError, accepted_params
from sfl_sim.kit.seeding import stream, torch_seed
from sfl_sim.models import build_model
from sfl_sim.optim import check_optimizer, settings_from_config
from sfl_sim.runs import host


def _describe_call(spec: ComponentSpec) -> str:
    params = ", ".join(f"{k}={v!r}" for k, v in spec.params.items())
    return f"{spec.name}({params})"


def component(registry: Any, spec: ComponentSpec, field: str, *args: Any, **extra: Any) -> Any:
    """Build a component from its spec; every failure is one line naming the scenario field.

    Parameters
    ----------
    registry : sfl_sim.kit.registry.Registry
    spec : ComponentSpec
    field : str
        Dotted scenario field, e.g. ``"cell.pathloss"`` (used in messages).
    *args, **extra
        Positional and keyword arguments the project passes (e.g. an algorithm's setup).

    Raises
    ------
    ConfigError
        Unknown name, a name that is not a class, a constructor that rejects its parameters or
        raises anything at all (the message names the class and what it raised).
    """
    try:
        return registry.build(spec.name, *args, **spec.params, **extra)
    except UnknownComponentError as exc:
        raise ConfigError(f"{field}.name: {exc}") from None
    except ComponentValueError as exc:  # the parameter model's line, under the scenario field
        raise ConfigError(f"{field}.{exc.detail}, for {spec.name}") from None
    except (ComponentParameterError, ComponentProtocolError) as exc:
        raise ConfigError(f"{field}: {one_line(exc)}") from None
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{field}: {spec.as_dict()!r} rejected: {one_line(exc)}") from exc
    except Exception as exc:  # a plug-in's constructor may raise anything; the user needs the field
        raise ConfigError(f"{field}: {_describe_call(spec)} raised {type(exc).__name__}: {one_line(exc)}") from exc


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

    cfg: Scenario
    label: str
    device: torch.device
    dataset: ArrayDataset
    cell: Cell
    client_flops_per_s: np.ndarray
    partition: list[np.ndarray]
    setup: TrainingSetup
    algorithm: Algorithm
    selector: Any
    test_x: torch.Tensor
    test_y: torch.Tensor
    availability: Availability | None = None  # prepared; None: every client always online
    capability: ClientCapability | None = None  # the device trace's speeds, when one is named
    ledger: EnergyLedger | None = None  # None with energy.enabled false
    scheduler: Scheduler | None = None  # cell.scheduler as built and checked (None: build it from cfg)


def build_cell(cfg: Scenario) -> Cell:
    """The cell of a scenario, from its named, seeded streams (``placement``, ``shadowing``, ``los``,
    ``interference``)."""
    c = cfg.cell
    seed = cfg.seed
    down = c.downlink
    parts = {str(kind.cell_argument): component(kind.registry, uplink_rate_spec(c) if kind.name == "rate"
                                                 else getattr(c, kind.name), kind.field)
             for kind in CELL_KINDS}
    downlink_rate = component(RATES, downlink_rate_spec(c), "cell.downlink.rate")
    for kind in CELL_KINDS:
        conform(kind.name, parts[str(kind.cell_argument)], kind.field, cfg.clients.count)
    conform("rate", downlink_rate, "cell.downlink.rate", cfg.clients.count)
    network: dict[str, Any] = {}
    if c.network is not None:  # a network of cells drops the clients over its hexagons
        grid = component(NETWORK, c.network, "cell.network")
        parts["placement"] = NetworkPlacement(grid)
        network = {"network": grid, "handover": component(HANDOVER, c.handover, "cell.handover"),
                   "network_rng": stream(seed, "network"), "radius_m": layout_radius_m(grid)}
    try:
        return Cell(
            **parts,
            n_clients=cfg.clients.count,
            tx_power_w=c.client_tx_power_w,
            noise_psd_dbm_per_hz=c.noise_psd_dbm_per_hz,
            uplink_bandwidth_hz=c.uplink_bandwidth_hz,
            downlink_bandwidth_hz=down.bandwidth_hz,
            server_tx_power_w=down.server_tx_power_w,
            placement_rng=stream(seed, "placement"),
            shadowing_rng=stream(seed, "shadowing"),
            los_rng=stream(seed, "los"),
            interference_rng=stream(seed, "interference"),
            # a time-varying fading's and a timed mobility's own streams, started once per run
            fading_process_rng=stream(seed, "fading_process"),
            mobility_rng=stream(seed, "mobility_process"),
            out_of_range=c.out_of_range,
            downlink_rate=downlink_rate,
            numerology=c.numerology,
            **network,
        )
    except ConfigError:
        raise
    except Exception as exc:  # components run inside the cell: a plug-in may raise anything
        raise ConfigError(f"cell: {one_line(exc)}") from exc


def conform(kind: str, part: Any, field: str, n_clients: int) -> None:
    """Refuse a component that fails its kind's conformance check (a path loss with a flipped sign,
    a fading whose mean power is not 1: :func:`sfl_sim.channel.conformance.conformance_problem`),
    in one line naming the scenario field.

    Raises
    ------
    ConfigError
    """
    try:
        problem = conformance_problem(kind, part, n_clients)
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:  # the component refused its own parameters on the check's scene
        raise ConfigError(f"{field}: {one_line(exc)}") from None
    if problem is not None:
        raise ConfigError(f"{field}: not physically possible: {problem}")


def _declared_rate_params(name: str) -> Any:
    """The parameters rate model ``name`` accepts (None: any, or an unknown name, which is refused
    where ``cell.rate`` is built, with its own line)."""
    try:
        return accepted_params(RATES.get(name))
    except Exception:
        return None


def uplink_rate_spec(c: CellSection) -> ComponentSpec:
    """``cell.rate`` with the gNB's noise figure (``cell.gnb_noise_figure_db``) where the model
    declares ``noise_figure_db`` and the scenario gives it none."""
    declared = _declared_rate_params(c.rate.name)
    if declared is None or "noise_figure_db" not in declared or "noise_figure_db" in c.rate.params:
        return c.rate
    return ComponentSpec(name=c.rate.name, **{**c.rate.params, "noise_figure_db": c.gnb_noise_figure_db})


def downlink_rate_spec(c: CellSection) -> ComponentSpec:
    """``cell.downlink.rate``, or the uplink's rate (:func:`uplink_rate_spec`) with the downlink's
    own parameters (:func:`sfl_sim.channel.link.downlink.downlink_rate_params`)."""
    if c.downlink.rate is not None:
        return c.downlink.rate
    uplink = uplink_rate_spec(c)
    params = downlink_rate_params(uplink.params, _declared_rate_params(c.rate.name), c.downlink.ue_noise_figure_db)
    return ComponentSpec(name=c.rate.name, **params)


def selected_per_round(cfg: Scenario) -> int:
    """Clients selected per round: the cohort, or more of them with over-selection (the engine
    keeps the first ``cohort_size`` to deliver)."""
    n_clients = cfg.clients.count
    n = cohort_size(n_clients, cfg.clients.participation)
    if cfg.stragglers.policy == "over_selection":
        n = min(n_clients, math.ceil(n * (1.0 + cfg.stragglers.over_selection_fraction)))
    return n


def check_cohort_limits(cfg: Scenario, spec: AlgorithmSpec, field: str) -> None:
    """An algorithm's parameters that count clients fit the scenario's clients, checked from the
    parameters alone (no data, no model): by ``--check`` and a run's build, and by a study's
    up-front validation of every grid point (:class:`sfl_sim.study.validate.PointChecker`).

    - ``concurrency`` C (asynchronous): at most ``clients.count`` (C clients train at once);
    - ``buffer_size`` K (without ``period_s``): at most C (K arrivals need K clients in flight;
      :class:`sfl_sim.engine.asynchronous.AsyncPolicy` makes the same check on the built policy);
    - ``trigger_clients`` (semi-asynchronous SCALA): at most the clients selected per round (a
      larger K waits for every client of the round: plain SCALA, silently).

    A plug-in without a parameter model is checked by its build only.

    Raises
    ------
    ConfigError
        One line naming the parameter, its value and the limit.
    """
    try:
        cls = ALGORITHMS.get(spec.name)
        model = params_model(cls, ALGORITHMS.supplied)
        given = {k: v for k, v in spec.params.items() if k not in ALGORITHMS.supplied}
        params = None if model is None else model.model_validate(given)
    except (ValueError, TypeError):  # an unknown name or a bad parameter: its own check says so
        return
    if params is None:
        return
    n_clients, per_round = cfg.clients.count, selected_per_round(cfg)
    cohort = cohort_size(n_clients, cfg.clients.participation)
    trigger = getattr(params, "trigger_clients", None)
    if isinstance(trigger, int) and trigger > per_round:
        raise ConfigError(f"{field}.trigger_clients: got {trigger}; allowed: at most the {per_round} clients selected "
                          f"per round, or null (a larger one waits for every client: plain SCALA), for {spec.name}")
    if not is_asynchronous(cls):
        return
    concurrency = getattr(params, "concurrency", None)
    if isinstance(concurrency, int) and concurrency > n_clients:
        raise ConfigError(f"{field}.concurrency: got {concurrency}; allowed: at most clients.count ({n_clients}) "
                          f"or null (the cohort, {cohort}), for {spec.name}")
    concurrency = concurrency if isinstance(concurrency, int) else cohort
    buffer_size = getattr(params, "buffer_size", None)
    if getattr(params, "period_s", None) is None and isinstance(buffer_size, int) and buffer_size > concurrency:
        raise ConfigError(f"{field}.buffer_size: got {buffer_size}; allowed: at most the concurrency ({concurrency}: "
                          f"K arrivals need K clients in flight), for {spec.name}")


def async_resolution(cfg: Scenario, spec: AlgorithmSpec) -> dict[str, Any] | None:
    """What an asynchronous algorithm's policy resolves to for the scenario's cohort — C, K, the
    period and the refill rule, a ``null`` (relative) default made a number — as ``resolved.yaml``
    records it (``components.algorithm.resolved``); None for a synchronous algorithm, a plug-in
    without a parameter model, or parameters their own checks refuse."""
    try:
        cls = ALGORITHMS.get(spec.name)
        if not (isinstance(cls, type) and issubclass(cls, AsynchronousAlgorithm)):
            return None
        model = params_model(cls, ALGORITHMS.supplied)
        if model is None:
            return None
        params = model.model_validate({k: v for k, v in spec.params.items() if k not in ALGORITHMS.supplied})
        policy = cls.policy_for(params, cohort_size(cfg.clients.count, cfg.clients.participation))
    except (ValueError, TypeError):  # an unknown name or a bad parameter: its own check says so
        return None
    return {"concurrency": policy.concurrency, "buffer_size": None if policy.period_s is not None
            else policy.buffer_size, "period_s": policy.period_s, "refill": policy.refill}


def _check_asynchrony(cfg: Scenario, algorithm: Algorithm, field: str, label: str) -> None:
    """An asynchronous algorithm's policy is valid for the scenario's cohort and has no straggler
    policy to apply; the evaluation grid ``eval_every_sim_s`` is for asynchronous algorithms only
    (a synchronous run is evaluated after its rounds).

    Raises
    ------
    ConfigError
    """
    if not isinstance(algorithm, AsynchronousAlgorithm):
        if cfg.eval_every_sim_s is not None:
            names = ", ".join(n for n in ALGORITHMS.names() if is_asynchronous(ALGORITHMS.get(n)))
            raise ConfigError(f"eval_every_sim_s: got {cfg.eval_every_sim_s!r}; allowed: null with the synchronous "
                              f"algorithm {label} (the evaluation grid is for asynchronous ones: {names})")
        return
    if cfg.server.edge is not None:
        raise ConfigError(f"server.edge: got {cfg.server.edge.model_dump()!r}; allowed: null with the asynchronous "
                          f"algorithm {label} (edge servers, handovers and the backhaul are timed per round)")
    if cfg.stragglers.policy != "wait_all":
        raise ConfigError(f"stragglers.policy: got {cfg.stragglers.policy!r}; allowed: wait_all with the asynchronous "
                          f"algorithm {label} (its server never waits for a cohort)")
    if cfg.cell.interference.params.get("rb_load") == "own_cell":
        raise ConfigError(f"cell.interference.rb_load: got 'own_cell'; allowed: a fraction in [0, 1] with the "
                          f"asynchronous algorithm {label} (its dispatch groups overlap: there is no round to "
                          f"measure the cell's load over)")
    try:
        algorithm.async_policy(cohort_size(cfg.clients.count, cfg.clients.participation))
    except ValueError as exc:
        raise ConfigError(f"{field}.{exc}, for {label}") from None


def build_handover_policy(cfg: Scenario) -> HandoverPolicy | None:
    """``server.edge.on_handover`` built and checked (:func:`sfl_sim.engine.edge.check_handover_policy`);
    None without ``server.edge``.

    Raises
    ------
    ConfigError
        One line naming the field: an unknown name, a refused parameter, a failed conformance check.
    """
    edge = cfg.server.edge
    if edge is None:
        return None
    field = "server.edge.on_handover"
    policy = component(HANDOVER_POLICIES, edge.on_handover, field)
    try:
        check_handover_policy(policy, edge.on_handover.name)
    except (AssertionError, ComponentProtocolError) as exc:
        raise ConfigError(f"{field}: {one_line(exc)}") from None
    return cast(HandoverPolicy, policy)


def build_edge(cfg: Scenario, algorithm: Algorithm) -> EdgeServers | None:
    """The engine's edge servers (``server.edge``) with the algorithm's byte counts, computed here
    where torch is (:meth:`Algorithm.handover_state_bytes`, :meth:`Algorithm.aggregate_bytes`);
    None without ``server.edge``."""
    edge, policy = cfg.server.edge, build_handover_policy(cfg)
    if edge is None or policy is None:
        return None
    return EdgeServers(edge.compute_flops_per_s, edge.backhaul_bps, edge.backhaul_latency_s, policy,
                       int(algorithm.handover_state_bytes()), int(algorithm.aggregate_bytes()))


def build_outage(cfg: Scenario) -> OutagePolicy:
    """The outage rule of a scenario's ``cell.outage`` section."""
    try:
        return OutagePolicy(**cfg.cell.outage.model_dump())
    except ValueError as exc:
        raise ConfigError(f"cell.outage: {exc}") from None


def drawn_compute_flops_per_s(cfg: Scenario) -> np.ndarray:
    """Each client's compute speed, FLOP/s, shape (clients.count,), as a run without a device trace
    (``clients.capability``) draws it: uniform in [``compute_flops_per_s_min``, ``_max``] from the
    seeded stream ``compute``."""
    c = cfg.clients
    return stream(cfg.seed, "compute").uniform(c.compute_flops_per_s_min, c.compute_flops_per_s_max, size=c.count)


def build_harq(cfg: Scenario, cell: Cell) -> HarqModel | None:
    """The HARQ model of a scenario's ``cell.harq``, built with the cell's rate model as its first
    argument; None for no HARQ (the field absent, or ``none``: the engine's plain upload path)."""
    if cfg.cell.harq is None:
        return None
    harq = component(HARQ, cfg.cell.harq, "cell.harq", cell.rate, **_cell_slot(cfg))
    if isinstance(harq, NoHarq):
        return None
    conform("harq", harq, "cell.harq", cfg.clients.count)
    return harq


def _cell_slot(cfg: Scenario) -> dict[str, float]:
    """``{"slot_s": the cell's slot}`` for a HARQ model that declares ``slot_s`` and was given none
    in the scenario (``1 ms / 2^mu``, ``cell.numerology``; a given one equals it, the scenario's
    check saw to that); ``{}`` otherwise."""
    spec = cfg.cell.harq
    assert spec is not None
    try:
        model = params_model(HARQ.get(spec.name), HARQ.supplied)
    except (ValueError, TypeError):
        return {}  # an unknown name: component() says so in one line
    if model is None or "slot_s" not in model.model_fields or spec.params.get("slot_s") is not None:
        return {}
    return {"slot_s": slot_duration_s(cfg.cell.numerology)}


def _check_traced_rates_unscheduled(cfg: Scenario, scheduler: Scheduler, capability: ClientCapability | None) -> None:
    """A device trace's link rates and a dynamic scheduler exclude each other: a traced rate is a
    measured throughput, not a link whose resource blocks a scheduler can hand out, and the band
    would serve that client on the channel's link instead (the unicast downlink's band only in
    ``unicast`` mode).

    Raises
    ------
    ConfigError
    """
    if capability is None or not is_dynamic(scheduler):
        return
    traced = {"uplink_bps": capability.uplink_bps}
    if cfg.cell.downlink.mode == "unicast":
        traced["downlink_bps"] = capability.downlink_bps
    for column, rates in traced.items():
        n = int(np.isfinite(rates).sum())
        if n:
            raise ConfigError(f"cell.scheduler: got {cfg.cell.scheduler.name!r}; allowed: static with "
                              f"clients.capability's traced {column} ({n} clients have one: a traced rate is a "
                              f"measured throughput, not resource blocks a scheduler can share)")


# The schedulers built so far, by (cell.scheduler, clients.count): built and checked once, then
# reused by every check, plan, report and run of the process (a policy is pure: it holds no state).
_SCHEDULERS_BUILT: dict[tuple[str, int], Scheduler] = {}
# our choice: a study process sees a handful of scheduler settings; past this many the cache starts over
_SCHEDULERS_KEPT = 64


def build_scheduler(cfg: Scenario) -> Scheduler:
    """The MAC scheduler of a scenario's ``cell.scheduler``; a dynamic one must pass the scheduler
    conformance check first (a plug-in granting more RBs than exist, RBs to an empty buffer or
    negative grants is refused in one line, before any work).  Built once per setting and client
    count and the same object returned after (the run's checks, its plan, its reports and its
    engine ask one scheduler); a refused one is not kept, so it is refused again."""
    key = (repr(cfg.cell.scheduler.model_dump()), cfg.clients.count)
    built = _SCHEDULERS_BUILT.get(key)
    if built is None:
        built = component(SCHEDULERS, cfg.cell.scheduler, "cell.scheduler")
        if is_dynamic(built):
            conform("scheduler", built, "cell.scheduler", cfg.clients.count)
        if len(_SCHEDULERS_BUILT) >= _SCHEDULERS_KEPT:
            _SCHEDULERS_BUILT.clear()
        _SCHEDULERS_BUILT[key] = built
    return built


def load_dataset(cfg: Scenario) -> ArrayDataset:
    """Load the scenario's data set; a missing, corrupt or refused file is one line naming it.

    Raises
    ------
    DatasetNotFoundError
        Files missing (the message says what to install where).
    ConfigError
        Files corrupt or refused (e.g. a CIFAR pickle that would run code), or a loader that
        returns something other than an :class:`ArrayDataset`.
    """
    loader = component(DATASETS, cfg.data.dataset, "data.dataset")
    try:
        dataset = loader.load()
    except DatasetNotFoundError:
        raise
    except (ValueError, OSError) as exc:  # DatasetFormatError, IdxFormatError: the message names the file
        raise ConfigError(f"data.dataset: {cfg.data.dataset.name} could not be read: {one_line(exc)}") from None
    except Exception as exc:
        raise ConfigError(f"data.dataset: {_describe_call(cfg.data.dataset)}.load() raised "
                          f"{type(exc).__name__}: {one_line(exc)}") from exc
    if not isinstance(dataset, ArrayDataset):
        raise ConfigError(f"data.dataset: {cfg.data.dataset.name}.load() returned a {type(dataset).__name__}; "
                          f"allowed: a sfl_sim.data.ArrayDataset")
    return dataset


def _split(cfg: Scenario, dataset: ArrayDataset) -> list[np.ndarray]:
    """The partition, checked: K index arrays, disjoint, non-empty, inside the training set."""
    n_clients = cfg.clients.count
    partitioner = component(PARTITIONERS, cfg.data.partition, "data.partition")
    try:
        parts = partitioner.split(dataset.train_y, n_clients, dataset.num_classes, stream(cfg.seed, "partition"))
    except ValueError as exc:
        raise ConfigError(f"data.partition: {one_line(exc)}") from None
    except Exception as exc:
        raise ConfigError(f"data.partition: {_describe_call(cfg.data.partition)}.split raised "
                          f"{type(exc).__name__}: {one_line(exc)}") from exc
    where = f"data.partition: {cfg.data.partition.name}.split returned"
    if not isinstance(parts, (list, tuple)) or len(parts) != n_clients:
        raise ConfigError(f"{where} {type(parts).__name__} of length {len(parts) if hasattr(parts, '__len__') else '?'}"
                          f"; allowed: a list of {n_clients} index arrays (one per client)")
    n = len(dataset.train_y)
    out = []
    for k, ix in enumerate(parts):
        arr = np.asarray(ix)
        if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 \
                or arr.max() >= n:
            raise ConfigError(f"{where} a bad index array for client {k} (shape {arr.shape}, dtype {arr.dtype}); "
                              f"allowed: non-empty integer indices in [0, {n})")
        out.append(arr.astype(np.int64))
    if sum(len(a) for a in out) != len(np.unique(np.concatenate(out))):
        raise ConfigError(f"{where} overlapping index arrays; allowed: disjoint client data sets")
    return out


def _training_field(cfg: Scenario, spec: AlgorithmSpec, name: str) -> str:
    """Where the run's value of training field ``name`` comes from: the algorithm's ``training:``
    block when it sets it, else the shared section (for error messages)."""
    if spec.training is not None and name in spec.training.model_fields_set:
        return f"algorithms[{cfg.algorithms.index(spec)}].training.{name}"
    return f"training.{name}"


def build_run(cfg: Scenario, algorithm_spec: AlgorithmSpec, dataset: ArrayDataset | None = None,
              threads: int | None = None) -> Run:
    """Build every part of one run of ``cfg`` with ``algorithm_spec``.

    Parameters
    ----------
    cfg : Scenario
        Validated scenario (:func:`sfl_sim.config.validate`).
    algorithm_spec : AlgorithmSpec
        One entry of ``cfg.algorithms``.
    dataset : ArrayDataset, optional
        Already loaded data set (several algorithms of one scenario share it).
    threads : int, optional
        Torch threads when the scenario leaves ``training.torch_threads`` null (a study worker's
        share of the cores); without it, the cores free now (:func:`sfl_sim.runs.host.default_torch_threads`).

    Raises
    ------
    ConfigError
        On any component that cannot be built from the scenario.
    DatasetNotFoundError
        If the data set's files are missing (message says what to install where).
    """
    seed = cfg.seed
    device = resolve_device(cfg.device)
    torch.set_num_threads(cfg.training.torch_threads or threads or host.default_torch_threads())
    t = cfg.training_for(algorithm_spec.label)
    if dataset is None:
        dataset = load_dataset(cfg)
    partition = _split(cfg, dataset)
    n_train = len(dataset.train_y)
    where = _training_field(cfg, algorithm_spec, "batch_size")
    if t.batch_size > n_train:
        raise ConfigError(f"{where}: got {t.batch_size}; allowed: at most the {n_train} "
                          f"training samples of {dataset.name}")
    if t.local_epochs is None and t.batch_size < selected_per_round(cfg):
        raise ConfigError(
            f"{where}: got {t.batch_size}; allowed: at least the number of clients "
            f"selected per round ({selected_per_round(cfg)}) so every client gets B_k >= 1 (eq. 3)")
    settings = settings_from_config(t)
    try:
        check_optimizer(settings, t.learning_rate)
    except UnknownComponentError as exc:
        raise ConfigError(f"{_training_field(cfg, algorithm_spec, 'optimizer')}.name: {one_line(exc)}") from None
    except (ComponentParameterError, TypeError, ValueError) as exc:
        raise ConfigError(f"{_training_field(cfg, algorithm_spec, 'optimizer')}: {settings.optimizer} rejected "
                          f"{dict(settings.optimizer_params)!r}: {one_line(exc)}") from None
    except Exception as exc:  # a plug-in optimizer may raise anything
        raise ConfigError(f"{_training_field(cfg, algorithm_spec, 'optimizer')}: {settings.optimizer} raised "
                          f"{type(exc).__name__}: {one_line(exc)}") from exc

    # Same seed → same initial weights for every algorithm of the scenario.
    torch.manual_seed(torch_seed(seed, "model_init"))
    m = cfg.model
    try:
        model = build_model(m.name, dataset.input_shape, dataset.num_classes, **m.params)
    except UnknownComponentError as exc:
        raise ConfigError(f"model.name: {exc}") from None
    except ComponentValueError as exc:
        raise ConfigError(f"model.params.{exc.detail}, for {m.name}") from None
    except ValueError as exc:
        raise ConfigError(f"model.params: {m.params!r} rejected: {one_line(exc)}") from None
    if m.split_point not in model.split_points:
        raise ConfigError(f"model.split_point: got {m.split_point!r}; split point does not exist for "
                          f"{m.name}; allowed: {', '.join(model.split_points)}")
    model.to(device)

    cell = build_cell(cfg)
    build_outage(cfg)  # checked now, used by the engine
    build_handover_policy(cfg)  # likewise
    build_harq(cfg, cell)  # likewise
    scheduler = build_scheduler(cfg)  # the one built for this setting, kept for the engine
    train_x, train_y = dataset.tensors("train", device)
    capability = build_capability(cfg, model, train_x[:1])
    _check_traced_rates_unscheduled(cfg, scheduler, capability)
    client_flops_per_s = drawn_compute_flops_per_s(cfg) if capability is None else capability.compute_flops_per_s
    availability = build_availability(cfg)
    test_x, test_y = dataset.tensors("test", device)
    if cfg.eval_samples is not None and cfg.eval_samples < len(test_y):
        pick = np.sort(stream(seed, "eval_subset").choice(len(test_y), cfg.eval_samples, replace=False))
        rows = torch.from_numpy(pick).to(device)
        test_x, test_y = test_x[rows], test_y[rows]
    compression = cfg.compression_for(algorithm_spec.label)
    setup = TrainingSetup(
        model=model, split_point=m.split_point, train_x=train_x, train_y=train_y,
        client_indices=[torch.from_numpy(ix).to(device) for ix in partition],
        num_classes=dataset.num_classes, batch_size=t.batch_size, local_iterations=t.local_iterations,
        learning_rate=t.learning_rate, device=device, minibatch_rng=stream(seed, "minibatch"), training=settings,
        execution=_execution_request(cfg, device))
    compressors = build_compressors(compression)
    algorithm_field = f"algorithms[{cfg.algorithms.index(algorithm_spec)}]"  # which entry, when several
    check_cohort_limits(cfg, algorithm_spec, algorithm_field)
    algorithm = component(ALGORITHMS, algorithm_spec, algorithm_field, setup)
    if not isinstance(algorithm, Algorithm):
        raise ConfigError(f"{algorithm_field}: {algorithm_spec.name} built a {type(algorithm).__name__}; allowed: a "
                          f"subclass of sfl_sim.algorithms.Algorithm")
    _check_asynchrony(cfg, algorithm, algorithm_field, algorithm_spec.label)
    applied = applied_compression(algorithm, algorithm_spec.label, compression)
    setup.compression = CompressionPlan.of({path: compressors[path] for path in applied},
                                           torch_seed(seed, "compression"))
    try:
        _ = algorithm.execution  # resolved now, so that a refusal comes before any work
    except ExecutionRefused as exc:
        raise ConfigError(f"execution: got 'vectorised', which {algorithm_spec.label} cannot run: {exc}; "
                          f"allowed: loop, or auto (which falls back to the loop)") from None
    selection = selection_spec(cfg, type(algorithm))
    selector = component(SELECTORS, selection, "clients.selection")
    try:
        selector.prepare(setup.client_label_counts.cpu().numpy().astype(np.int64))
    except Exception as exc:
        raise ConfigError(f"clients.selection: {_describe_call(selection)}.prepare raised {type(exc).__name__}: "
                          f"{one_line(exc)}") from exc
    if (availability is not None or cfg.energy.battery is not None) and not takes_available(selector):
        why = "energy.battery" if availability is None else f"clients.availability {cfg.clients.availability.name}"
        raise ConfigError(f"clients.selection: {_describe_call(selection)}.select takes no 'available' argument; "
                          f"allowed with {why}: a selector whose select(n_clients, n_selected, rng, "
                          f"available=None) picks among the online (and charged) clients")
    return Run(cfg, algorithm_spec.label, device, dataset, cell, client_flops_per_s, partition,
               setup, algorithm, selector, test_x, test_y, availability, capability,
               build_ledger(cfg, client_flops_per_s), scheduler)


def build_availability(cfg: Scenario) -> Availability | None:
    """The scenario's ``clients.availability``, prepared from the ``availability`` stream; None for
    ``always`` (the engine and selection then skip availability altogether)."""
    spec = cfg.clients.availability
    model = component(AVAILABILITY, spec, "clients.availability")
    try:
        model.prepare(cfg.clients.count, stream(cfg.seed, "availability"))
    except ValueError as exc:  # TraceError: the line names the file
        raise ConfigError(f"clients.availability: {one_line(exc)}") from None
    except Exception as exc:
        raise ConfigError(f"clients.availability: {_describe_call(spec)}.prepare raised {type(exc).__name__}: "
                          f"{one_line(exc)}") from exc
    return None if isinstance(model, AlwaysAvailable) else model


def forward_flops_per_sample(model: torch.nn.Module, x: torch.Tensor) -> float:
    """FLOPs of one forward pass of ``model`` on the one sample ``x`` (eval mode, no gradients, so
    no random draw: dropout is off)."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            _, flops = FlopMeter().run("forward", 1, lambda: model(x))
    finally:
        model.train(was_training)
    return float(flops)


def build_capability(cfg: Scenario, model: torch.nn.Module, sample_x: torch.Tensor) -> ClientCapability | None:
    """The clients' speeds from ``clients.capability`` (None when unset: the uniform draw).  A trace
    in ms per sample (FedScale) becomes FLOP/s with the model's forward FLOPs per sample."""
    spec = cfg.clients.capability
    if spec is None:
        return None
    try:
        trace = read_capability(spec.path, spec.format)
        per_sample = forward_flops_per_sample(model, sample_x) if np.isfinite(trace.ms_per_sample).any() else None
        got = client_capability(trace, cfg.clients.count, spec.mapping, stream(cfg.seed, "capability"), per_sample)
    except ValueError as exc:  # TraceError: the line names the file
        raise ConfigError(f"clients.capability: {one_line(exc)}") from None
    if not spec.links:
        nan = np.full(cfg.clients.count, np.nan)
        got = ClientCapability(got.device_of, got.compute_flops_per_s, nan, nan.copy())
    return got


def build_compressors(given: dict[str, tuple[str, CompressorSpec] | None]) -> dict[str, tuple[Any, bool]]:
    """``{path: (compressor, error_feedback)}`` of a run from :meth:`Scenario.compression_for`; a bad
    compressor name or parameter is one line naming the scenario field."""
    return {path: (component(COMPRESSORS, spec, field), spec.error_feedback)
            for path, entry in given.items() if entry is not None for field, spec in (entry,)}


def applied_compression(algorithm: Algorithm, label: str,
                        given: dict[str, tuple[str, CompressorSpec] | None]) -> list[str]:
    """The paths of ``given`` (:meth:`Scenario.compression_for`) that ``algorithm`` compresses.

    A path of the algorithm's own ``compression:`` block that it lacks is refused; a path of the
    top-level block applies to the algorithms that have it (``activations`` to the split ones,
    ``updates`` to FedAvg's family), but an algorithm that has none of the top-level block's
    paths refuses the block, which would do nothing for it.

    Raises
    ------
    ConfigError
        One line naming the field, the compressor and why the algorithm cannot apply it.
    """
    applied: list[str] = []
    shared: list[tuple[str, CompressorSpec, str]] = []
    for path, entry in given.items():
        if entry is None:
            continue
        field, spec = entry
        why = algorithm.compression_refusal(path)
        if why is None:
            applied.append(path)
            continue
        if field.startswith("algorithms["):
            raise ConfigError(f"{field}: got {spec.name!r}, which {label} cannot apply: {why}; allowed: no {path} "
                              f"compressor for this algorithm (null)")
        shared.append((field, spec, why))
    from_top = [p for p, e in given.items() if e is not None and not e[0].startswith("algorithms[")]
    if from_top and len(shared) == len(from_top):
        field, spec, why = shared[0]
        raise ConfigError(f"{field}: got {spec.name!r}, which {label} cannot apply: {why}; allowed: a path "
                          f"{label} has, or null for it in its own compression: block")
    return applied


def build_ledger(cfg: Scenario, client_flops_per_s: np.ndarray) -> EnergyLedger | None:
    """The run's energy ledger (``energy:``), None when ``energy.enabled`` is false.

    Raises
    ------
    ConfigError
        On a device energy model that cannot be built (one line naming ``energy.device``'s field).
    """
    energy = cfg.energy
    if not energy.enabled:
        return None
    model = component(ENERGY, energy.device, "energy.device")
    capacity_j = None
    if energy.battery is not None:
        capacity_j = stream(cfg.seed, "battery").uniform(energy.battery.capacity_min_j, energy.battery.capacity_max_j,
                                                         size=cfg.clients.count)
    return EnergyLedger(model, client_flops_per_s, energy.server_j_per_flop, capacity_j)


def selection_spec(cfg: Scenario, algorithm_class: type) -> ComponentSpec:
    """The client selector of a run: ``clients.selection``, else the algorithm's own
    (:attr:`~sfl_sim.algorithms.Algorithm.default_selection`), else uniform."""
    return cfg.clients.selection or ComponentSpec.model_validate(
        getattr(algorithm_class, "default_selection", None) or {"name": "uniform"})


def _execution_request(cfg: Scenario, device: torch.device) -> ExecutionRequest:
    """What the scenario's ``execution`` asks of the algorithm: ``loop`` or ``vectorised`` as
    written; ``auto`` is ``prefer_vectorised`` on a device where vectorised was measured faster
    (:func:`sfl_sim.runs.host.auto_execution`; the algorithm falls back to the loop where it cannot),
    else ``loop``."""
    if cfg.execution == "auto":
        return "prefer_vectorised" if host.auto_execution(device) == "vectorised" else "loop"
    return cfg.execution


def build_simulator(run: Run, start_time_s: float = 0.0, counters: Counters | None = None,
                    fading_rng: np.random.Generator | None = None,
                    harq_rng: np.random.Generator | None = None) -> Simulator:
    """The engine of a run (its clock, cell, compute budgets, outage, HARQ and straggler rules, and
    the client state it is given: availability, and the energy ledger where batteries run out)."""
    cfg = run.cfg
    battery = run.ledger if run.ledger is not None and run.ledger.battery else None
    return Simulator(run.cell, run.client_flops_per_s, cfg.server.compute_flops_per_s,
                     cfg.cell.downlink.mode, start_time_s=start_time_s, counters=counters,
                     fading_rng=fading_rng, coherence=cfg.cell.coherence, outage=build_outage(cfg),
                     straggler_policy=cfg.stragglers.policy, deadline_s=cfg.stragglers.deadline_s,
                     keep_clients=cohort_size(cfg.clients.count, cfg.clients.participation),
                     harq=build_harq(cfg, run.cell), harq_rng=harq_rng,
                     availability=run.availability, battery=battery,
                     uplink_bps=None if run.capability is None else run.capability.uplink_bps,
                     downlink_bps=None if run.capability is None else run.capability.downlink_bps,
                     scheduler=run.scheduler if run.scheduler is not None else build_scheduler(cfg),
                     numerology=cfg.cell.numerology, slot_trace=cfg.metrics.slot_trace, seed=cfg.seed,
                     edge=build_edge(cfg, run.algorithm))


def cell_table(run: Run) -> dict[str, Any]:
    """``cell.csv``: the columns of :data:`sfl_sim.runs.rundir.schema.CELL_COLUMNS` (per client position,
    distance, path loss, shadowing, SNR and rate at an equal share of the cohort, compute budget,
    data size and classes held).

    Raises
    ------
    ConfigError
        If the cell's SNR or rate come out non-finite (a plug-in or an extreme link budget).
    """
    n_sharing = cohort_size(run.cfg.clients.count, run.cfg.clients.participation)
    try:
        info = run.cell.describe(n_sharing=n_sharing)  # SNR and rate on an equal share of the cohort
    except Exception as exc:
        raise ConfigError(f"cell: {one_line(exc)}") from exc
    for key in ("snr_db", "uplink_rate_bps"):
        bad = ~np.isfinite(np.asarray(info[key], dtype=float))
        if bad.any():
            raise ConfigError(f"cell: {key} is not finite for {int(bad.sum())} client(s) (e.g. client "
                              f"{int(np.flatnonzero(bad)[0])}); check the link budget (power, bandwidth, noise) "
                              f"and the channel components")
    table = {"client": np.asarray(info.pop("client")).tolist(),
             "x_m": run.cell.positions_m[:, 0].tolist(), "y_m": run.cell.positions_m[:, 1].tolist()}
    table.update({k: np.asarray(v).tolist() for k, v in info.items()})
    table["compute_flops_per_s"] = run.client_flops_per_s.tolist()
    table["data_samples"] = [len(ix) for ix in run.partition]
    labels = run.dataset.train_y
    table["classes_held"] = [int(len(np.unique(labels[ix]))) for ix in run.partition]
    return table
