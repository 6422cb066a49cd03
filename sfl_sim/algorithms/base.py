"""What every algorithm shares: the training setup, local work, eq. (3), optimizers, aggregation.

An algorithm implements :meth:`Algorithm.round_process`, a SimPy generator written with the
primitives of :class:`sfl_sim.engine.RoundContext`.  The engine times and counts what the
algorithm declares (compute on a device, a payload over a link); the algorithm does the real
torch work between the yields.  The runner enters a round through :meth:`Algorithm.run_round`,
which wraps ``round_process`` in the optimizers' round bookkeeping (client optimizers fresh or
persisted, the learning-rate schedule stepped).

Every update goes through ``torch.optim``: a hook asks for the optimizer of what it trains —
:meth:`Algorithm.client_optimizer` (client k's, for this round) or
:meth:`Algorithm.server_optimizer` (the server's, across rounds) — and steps it with
:meth:`Algorithm.optimizer_step` (gradient clipping, step, gradients cleared).  The state
semantics are :mod:`sfl_sim.optim.bank`'s.
"""
from __future__ import annotations

import abc
import contextlib
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast, final

import numpy as np
import torch
from torch import nn

from sfl_sim.algorithms._exec.compressed import COMPRESSION_PATHS, CompressionPlan
from sfl_sim.algorithms._exec.execution import (
    ExecutionRequest,
    ResolvedExecution,
    StackedSteps,
    resolve_execution,
    vectorised_refusal,
)
from sfl_sim.algorithms._exec.flop_meter import FlopMeter
from sfl_sim.algorithms._exec.working_copies import Key, WorkingCopyPools
from sfl_sim.algorithms.local_work import ClientWork, EpochWork, IterationWork, draw_in_iteration_order, to_device
from sfl_sim.algorithms.protocols import LocalModelObserver
from sfl_sim.algorithms.streams import TorchStreams
from sfl_sim.engine import RoundContext, SimSteps
from sfl_sim.engine.asynchronous import Dispatch
from sfl_sim.kit.component import Component
from sfl_sim.kit.registry import Registry
from sfl_sim.models import SplittableModel
from sfl_sim.optim import OptimizerBank, TrainingSettings

ALGORITHMS = Registry("algorithm", supplied=("setup",))

@dataclass
class TrainingSetup:
    """Everything an algorithm trains with.

    Attributes
    ----------
    model : SplittableModel
        The initial global model (algorithms copy what they need).
    split_point : str
        Named cut of ``model`` (ignored by algorithms that train the whole model on the client).
    train_x : Tensor, shape (N, C, H, W)
        Normalised training images on ``device``.
    train_y : LongTensor, shape (N,)
    client_indices : list of LongTensor
        Sample indices of each client's local data D_k (on ``device``).
    num_classes : int
    batch_size : int
        B, the server-side minibatch split over the cohort by eq. (3); with
        ``training.local_epochs`` every client's batch b.
    local_iterations : int or None
        T, local iterations per round (None with ``training.local_epochs``).
    learning_rate : float
        The first round's step size eta (``training.lr_schedule`` moves it per round).
    device : torch.device
    minibatch_rng : numpy.random.Generator
        Stream for minibatch sampling (the only randomness algorithms draw themselves).
    training : TrainingSettings
        Optimizer, schedule, local epochs, clipping, client optimizer state (default: plain
        SGD at a constant rate, T iterations, no clipping, fresh client state).
    execution : {"loop", "vectorised", "prefer_vectorised"}
        How the cohort's client steps are asked to run (:data:`sfl_sim.algorithms._exec.execution.ExecutionRequest`;
        the algorithm resolves it: :attr:`Algorithm.execution`).  Default: the loop.
    compression : CompressionPlan
        The codecs of the paths the scenario's ``compression:`` compresses
        (:mod:`sfl_sim.algorithms._exec.compressed`).  Default: none.
    """

    model: SplittableModel
    split_point: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    client_indices: list[torch.Tensor]
    num_classes: int
    batch_size: int
    local_iterations: int | None
    learning_rate: float
    device: torch.device
    minibatch_rng: np.random.Generator
    training: TrainingSettings = field(default_factory=TrainingSettings)
    execution: ExecutionRequest = "loop"
    compression: CompressionPlan = field(default_factory=CompressionPlan)

    @functools.cached_property
    def client_label_counts(self) -> torch.Tensor:
        """(K, N) float32 label counts of every client's local data, on ``device`` (computed once)."""
        return torch.stack([torch.bincount(self.train_y[ix], minlength=self.num_classes)
                            for ix in self.client_indices]).to(torch.float32).to(self.device)

    @functools.cached_property
    def client_data_sizes(self) -> np.ndarray:
        """|D_k| of every client, shape (K,) (computed once: a round reads it for its cohort, and
        building it walks all K clients — 7.7 ms at K = 10,000).  Read-only."""
        sizes = np.array([len(ix) for ix in self.client_indices], dtype=np.int64)
        sizes.setflags(write=False)
        return sizes


def dispatch_stream(dispatch: Dispatch) -> str:
    """The key of an asynchronous dispatch's own client stream (:meth:`Algorithm.client_stream`)."""
    return f"dispatch{dispatch.sequence}/{dispatch.client}"


def proportional_batch_sizes(data_sizes: Sequence[int], total_batch: int) -> np.ndarray:
    """Per-client minibatch sizes B_k = |D_k| B / sum_j |D_j| (SCALA eq. 3), as integers.

    Rounded by largest remainder so that they add up to exactly ``total_batch``; every client
    gets at least one sample (so a client with very little data still takes part), and no
    client more samples than it holds when that is possible.

    Parameters
    ----------
    data_sizes : sequence of int, shape (n,)
        |D_k| of the cohort's clients.
    total_batch : int
        B.

    Returns
    -------
    ndarray of int64, shape (n,)
    """
    sizes = np.asarray(data_sizes, dtype=float)
    if sizes.ndim != 1 or len(sizes) == 0 or np.any(sizes <= 0):
        raise ValueError(f"data_sizes must be a non-empty list of positive sizes, got {list(data_sizes)}")
    if total_batch < len(sizes):
        raise ValueError(f"total_batch={total_batch} must be >= the number of clients ({len(sizes)})")
    exact = sizes * total_batch / sizes.sum()
    batch = np.maximum(np.floor(exact).astype(np.int64), 1)
    remainder = exact - np.floor(exact)
    # Hand out (or take back) the samples rounding left over, largest remainder first.
    order = np.argsort(-remainder, kind="stable")
    i = 0
    while batch.sum() < total_batch:
        batch[order[i % len(order)]] += 1
        i += 1
    order_back = np.argsort(remainder, kind="stable")
    i = 0
    while batch.sum() > total_batch:
        k = order_back[i % len(order_back)]
        if batch[k] > 1:
            batch[k] -= 1
        i += 1
    return batch


#: Clients summed per matrix-vector product by the stacked (GPU) average: bounds its memory.
STACK_CHUNK = 256


def weighted_average(states: Sequence[Mapping[str, torch.Tensor]],
                     weights: Sequence[float] | np.ndarray) -> dict[str, torch.Tensor]:
    """Weighted average of state dicts (SCALA eq. 10, FedAvg): sum_k w_k s_k / sum_k w_k.

    Summed in float64.  On CPU the states are added one after another in the order given (the
    reference order the golden runs pin); on a GPU each tensor of the state is stacked over the
    clients and reduced in one matrix-vector product per :data:`STACK_CHUNK` clients
    (:func:`weighted_average_stacked`: K x fewer kernel launches, equal within float64 rounding,
    which the float32 result almost never shows).

    Parameters
    ----------
    states : sequence of state dicts with the same keys and shapes
    weights : sequence of float, one per state (e.g. |D_k|)
    """
    if len(states) != len(weights) or not states:
        raise ValueError(f"need one weight per state, got {len(states)} states and {len(weights)} weights")
    first = next(iter(states[0].values()), None)
    if first is not None and first.device.type == "cuda":
        return weighted_average_stacked(states, weights)
    w = np.asarray(weights, dtype=np.float64) / float(np.sum(weights))
    out: dict[str, torch.Tensor] = {}
    for key, ref in states[0].items():
        if not torch.is_floating_point(ref):
            out[key] = ref.clone()  # integer buffers (counters) are not averaged
            continue
        acc = torch.zeros_like(ref, dtype=torch.float64)
        for wk, state in zip(w.tolist(), states, strict=True):
            acc += wk * state[key].to(torch.float64)
        out[key] = acc.to(ref.dtype)
    return out


def weighted_average_stacked(states: Sequence[Mapping[str, torch.Tensor]],
                             weights: Sequence[float] | np.ndarray) -> dict[str, torch.Tensor]:
    """:func:`weighted_average` over stacked states: per tensor, ``stack`` the clients' copies and
    reduce them with one float64 matrix-vector product per :data:`STACK_CHUNK` clients.

    The weights are host numbers, sent to the device once (no host sync); the result equals the
    sequential sum within float64 rounding (another summation order)."""
    if len(states) != len(weights) or not states:
        raise ValueError(f"need one weight per state, got {len(states)} states and {len(weights)} weights")
    w64 = np.asarray(weights, dtype=np.float64) / float(np.sum(weights))
    w_on: dict[torch.device, torch.Tensor] = {}
    out: dict[str, torch.Tensor] = {}
    for key, ref in states[0].items():
        if not torch.is_floating_point(ref):
            out[key] = ref.clone()
            continue
        w = w_on.get(ref.device)
        if w is None:
            w = w_on[ref.device] = to_device(w64, ref.device)
        acc = torch.zeros(ref.numel(), dtype=torch.float64, device=ref.device)
        for start in range(0, len(states), STACK_CHUNK):
            chunk = torch.stack([s[key].reshape(-1) for s in states[start:start + STACK_CHUNK]])
            acc.addmv_(chunk.to(torch.float64).t(), w[start:start + len(chunk)])
        out[key] = acc.view(ref.shape).to(ref.dtype)
    return out


def tensor_bytes(*tensors: torch.Tensor) -> int:
    """Bytes of the given tensors as sent: numel x element size, summed."""
    return int(sum(t.numel() * t.element_size() for t in tensors))


def state_bytes(module: nn.Module) -> int:
    """Bytes of a model upload/download: every tensor of its state dict."""
    return tensor_bytes(*module.state_dict().values())


class Algorithm(Component, abc.ABC):
    """Base of every training algorithm.

    An algorithm's scenario parameters are its ``Params`` model (:class:`sfl_sim.kit.component.Component`):
    a subclass extends its base's (``class Params(FedAvg.Params): ...``), reads them as
    ``self.params.<name>``, and its constructor takes ``(setup, **params)`` and passes the
    parameters on to ``super().__init__``.

    Parameters
    ----------
    setup : TrainingSetup

    Attributes
    ----------
    default_selection : dict or None
        Client selector (component spec) this algorithm is defined with, used when the scenario
        leaves ``clients.selection`` unset; None means uniform selection.
    stacked_steps : StackedSteps or None
        Class attribute: the declaration that this family's client steps can run stacked
        (:mod:`sfl_sim.algorithms._exec.execution`); None: the loop only.
    """

    default_selection: dict[str, Any] | None = None
    stacked_steps: ClassVar[StackedSteps | None] = None
    supplied_args: ClassVar[tuple[str, ...]] = ("setup",)

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(**params)
        self.setup = setup
        self.meter = FlopMeter()
        self.optimizers = OptimizerBank(setup.training, setup.learning_rate)
        # each client's own work draws from its own stream per round (sfl_sim.algorithms.streams),
        # seeded from the seed the model was just initialised with (the run's model_init stream)
        self.client_streams = TorchStreams(torch.initial_seed(), setup.device, "client_work")
        self.rounds_run = 0  # the round of client_stream (restored from the checkpoint)

    def run_round(self, ctx: RoundContext, cohort: np.ndarray,
                  local_model_observer: LocalModelObserver | None = None) -> SimSteps[None]:
        """The engine's entry to one round: :meth:`round_process` between the optimizers' round
        bookkeeping (client optimizers start fresh or from their kept state; afterwards the
        learning-rate schedule moves to the next round).  Use it as the simulator's round
        process: ``sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)``.

        Parameters
        ----------
        ctx : RoundContext
        cohort : ndarray of int64
        local_model_observer : LocalModelObserver, optional
            Shown this round's locally trained models by :meth:`observe_local_models` (the
            runner passes its vacant-class probe for a round it will evaluate, when the scenario
            asks for ``metrics.local_vacant_class_accuracy``); None: nobody looks.
        """
        self.optimizers.begin_round()
        self.__dict__["_local_model_observer"] = local_model_observer  # this round's only
        try:
            yield from self.round_process(ctx, cohort)
        finally:
            self.__dict__["_local_model_observer"] = None
        self.optimizers.end_round()
        self.client_streams.forget()  # no work draws from this round's streams again
        self.rounds_run += 1

    # -- what subclasses implement -------------------------------------------------------------
    @abc.abstractmethod
    def round_process(self, ctx: RoundContext, cohort: np.ndarray) -> SimSteps[None]:
        """One round as a SimPy generator (see :mod:`sfl_sim.engine.simulator`).

        Parameters
        ----------
        ctx : RoundContext
            The round's door to simulated time: ``compute``, ``upload``, ``download``,
            ``broadcast``, ``gather``, ``process``.
        cohort : ndarray of int64
            The clients selected for the round.
        """

    @abc.abstractmethod
    def global_model(self) -> nn.Module:
        """The model evaluated on the test set after a round."""

    def handover_state_bytes(self) -> int:
        """Bytes of one client's server-side state that a handover moves from one edge server to
        another (``server.edge`` with ``on_handover: migrate``, :mod:`sfl_sim.engine.edge`).

        Default 0: an algorithm without server-side work per client keeps nothing of a client at
        its edge that the client needs to go on (split algorithms override it)."""
        return 0

    def aggregate_bytes(self) -> int:
        """Bytes each cell's edge sends the cloud at a round's end, and gets back as the global
        model (``server.edge``: hierarchical aggregation).  Default: the state of
        :meth:`global_model` (our reading: each edge's aggregate is a whole model)."""
        return state_bytes(self.global_model())

    def evaluate(self, evaluate_fn: Callable[..., tuple[float, float]], x: torch.Tensor, y: torch.Tensor,
                 batch_size: int) -> tuple[float, float]:
        """Test accuracy and loss the runner reports after a round.

        ``evaluate_fn(model, x, y, batch_size) -> (accuracy, loss)`` scores one model (the
        runner's :func:`sfl_sim.models.evaluation.evaluate`; its result also carries the per-class
        accuracy the runner writes to ``classes.csv``).  Default: the :meth:`global_model`.  An
        algorithm whose reported model is something else (e.g. BESplit-A's per-client auxiliary
        models) overrides this hook, and :meth:`evaluation_description` with it; returning a
        :class:`sfl_sim.models.evaluation.Scores` gives ``classes.csv`` its per-class accuracy (a plain
        pair leaves those cells empty)."""
        return evaluate_fn(self.global_model(), x, y, batch_size)

    def evaluation_description(self) -> str | None:
        """What :meth:`evaluate` scores, in words (written to ``summary.json`` as ``evaluated``),
        so that curves of differently evaluated algorithms are not compared unawares; None (the
        default) for the global model, which the run directory records as
        :data:`sfl_sim.runs.rundir.schema.GLOBAL_MODEL_EVALUATION`."""
        return None

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume training: weights, :meth:`extra_state`,
        :meth:`stream_state` and :meth:`optimizer_state` (plain data only).  FedAvg and the
        split-learning base write ``{"model": ..., **extra_state(), **stream_state(),
        **optimizer_state()}``: their subclasses keep further state through :meth:`extra_state` /
        :meth:`load_extra_state`, not by overriding this."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`: the weights, then :meth:`load_extra_state`,
        :meth:`load_stream_state`, then (through :meth:`load_optimizer_state`) the optimizers."""

    def extra_state(self) -> dict[str, Any]:
        """State of this algorithm beyond the model weights and the optimizers that resuming needs
        (an auxiliary head, per-client models, counters), as plain data — tensors, numbers,
        strings, None and lists/tuples/dicts of them, so a checkpoint loads with
        ``weights_only=True``.  Its keys go into :meth:`state_dict` after ``"model"``; they must
        not be ``"model"``, ``"client_work"`` or ``"optimizers"``.  Default: none."""
        return {}

    def load_extra_state(self, state: Mapping[str, Any]) -> None:  # noqa: B027 (a hook: optional, default nothing)
        """Restore what :meth:`extra_state` put into a state dict (``state`` is the whole state
        dict; called after the model weights are loaded, before the optimizers).  Default: nothing."""

    # -- compression -----------------------------------------------------------------------------
    def compression_refusal(self, path: str) -> str | None:
        """Why this algorithm cannot compress ``path`` (one of
        :data:`~sfl_sim.algorithms._exec.compressed.COMPRESSION_PATHS`), or None when it does.

        The split-learning base compresses ``activations`` and ``gradients``, FedAvg's round
        ``updates``; an algorithm outside those paths refuses all three."""
        if path not in COMPRESSION_PATHS:
            return f"unknown compression path {path!r}; allowed: {', '.join(COMPRESSION_PATHS)}"
        return f"{type(self).__name__} has no {path} path to compress"

    def compression_state(self) -> dict[str, Any]:
        """``{"compression": ...}`` when the run compresses a path (the random stream and the
        error-feedback residuals, :meth:`CompressionPlan.state_dict`), else ``{}``: merge it into
        :meth:`state_dict`."""
        plan = self.setup.compression
        return {"compression": plan.state_dict()} if plan else {}

    def load_compression_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`compression_state` put into a state dict."""
        plan = self.setup.compression
        if plan:
            plan.load_state_dict(state["compression"])

    # -- the clients' random streams ---------------------------------------------------------------
    def client_stream(self, client: int, dispatch: Dispatch | None = None) -> contextlib.AbstractContextManager[None]:
        """The block draws its torch randomness (dropout masks...) from client ``client``'s own
        stream of this round (:mod:`sfl_sim.algorithms.streams`), not from the run's: wrap every
        piece of a client's own torch work in it, so that no change of timing reorders its draws.

        Parameters
        ----------
        client : int
        dispatch : Dispatch, optional
            An asynchronous algorithm's dispatch of ``client``: its stream is its own
            (``dispatch<sequence>/<client>``), seeded as that of the round numbered by the model
            version it starts from; default: this round's, ``round<n>/<client>`` with n the rounds
            :meth:`run_round` has finished.
        """
        if dispatch is None:
            return self.client_streams.of(f"round{self.rounds_run}/{client}")
        return self.client_streams.of(dispatch_stream(dispatch), seed=f"round{dispatch.version}/{client}")

    def stream_state(self) -> dict[str, Any]:
        """``{"client_work": ...}``: the round :meth:`client_stream` is at and the states of the
        streams that have drawn (none between rounds): merge it into :meth:`state_dict`."""
        return {"client_work": {"rounds_run": self.rounds_run, "streams": self.client_streams.state_dict()}}

    def load_stream_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`stream_state` put into a state dict (nothing there: round 0, no
        stream drawn)."""
        work = state.get("client_work", {})
        self.rounds_run = int(work.get("rounds_run", 0))
        self.client_streams.load_state_dict(work.get("streams", {}))

    # -- optimizers ----------------------------------------------------------------------------
    def client_optimizer(self, client: int, params: Iterable[nn.Parameter], name: str = "model",
                         lr: float | None = None) -> torch.optim.Optimizer:
        """Client ``client``'s optimizer ``name`` for this round, over ``params``.

        Created on the first call of the round over the parameters given (the client's working
        model of this round, whatever object that is); fresh each round it takes part, or loaded
        from its kept state with ``training.client_optimizer_state: persist``.  A per-client
        copy of the server side (SplitFedV1-style) counts as the client's and uses this too.

        Parameters
        ----------
        client : int
        params : iterable of Parameter
        name : str
            Which of the client's optimizers (one per model it trains).
        lr : float, optional
            A fixed learning rate instead of the round's (scheduled) one.
        """
        return self.optimizers.client(client, params, name, lr)

    def server_optimizer(self, params: Iterable[nn.Parameter], name: str = "model",
                         lr: float | None = None) -> torch.optim.Optimizer:
        """The server's optimizer ``name`` over ``params``; its state persists across rounds."""
        return self.optimizers.server(params, name, lr)

    def optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        """Clip the gradients (``training.max_grad_norm``), step ``optimizer`` and clear the
        gradients of its parameters.  With plain SGD this is the update w <- w - eta grad."""
        self.optimizers.step(optimizer)

    @property
    def learning_rate(self) -> float:
        """The current round's learning rate."""
        return self.optimizers.lr

    def optimizer_state(self) -> dict[str, Any]:
        """``{"optimizers": ...}`` when the optimizers carry state (momentum or Adam buffers, a
        schedule's position, kept client states), else ``{}``: merge it into :meth:`state_dict`."""
        state = self.optimizers.state_dict()
        return {"optimizers": state} if state else {}

    def load_optimizer_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`optimizer_state` put into a state dict (nothing there: fresh optimizers)."""
        self.optimizers.load_state_dict(state.get("optimizers", {}))

    # -- local work ----------------------------------------------------------------------------
    def plan_local_work(self, cohort: np.ndarray) -> dict[int, ClientWork]:
        """Each cohort client's local work this round (:mod:`sfl_sim.algorithms.local_work`):
        T iterations of eq. (3) batches, or ``local_epochs`` passes in batches of ``batch_size``.

        Every minibatch a training path uses comes from here (``work[k].batch(t)``, in both
        executions): override it, returning a :class:`ClientWork` per client, to change which
        samples a client trains on."""
        epochs = self.setup.training.local_epochs
        if epochs is None:
            sizes = self.cohort_batch_sizes(cohort)
            iterations = cast(int, self.setup.local_iterations)  # T is set when local_epochs is not
            return {k: IterationWork(self.setup, k, iterations, sizes[k]) for k in cohort.tolist()}
        return {k: EpochWork(self.setup, k, epochs, self.setup.batch_size) for k in cohort.tolist()}

    def drawn_local_work(self, cohort: np.ndarray, drawn: Sequence[int] | None = None) -> dict[int, ClientWork]:
        """:meth:`plan_local_work` with every minibatch drawn now, iteration by iteration in
        cohort order (:func:`~sfl_sim.algorithms.local_work.draw_in_iteration_order`): what a
        synchronous round trains on then depends on no event's time, so a re-timed run keeps its
        training under any timing change.

        Parameters
        ----------
        cohort : ndarray of int64
            The clients the work is planned over (eq. 3 splits B among them).
        drawn : sequence of int, optional
            The clients whose draws are made now, in this order (default: the cohort's): an
            asynchronous dispatch plans over the clients in flight and draws for the group it
            sends.
        """
        work = self.plan_local_work(cohort)
        draw_in_iteration_order(work, cohort.tolist() if drawn is None else list(drawn))
        return work

    # -- local models (evaluation) ---------------------------------------------------------------
    def observe_local_models(self, models: Mapping[int, nn.Module]) -> None:
        """Show the round's locally trained models (client -> model, before aggregation) to the
        observer :meth:`run_round` was given for this round, if any (FedVLS's accuracy of local
        models on their vacant classes).  Algorithms with local models call it; the observer only
        reads them (eval mode, no gradients, no random draws), so training is the same with or
        without one."""
        observer = self.__dict__.get("_local_model_observer")
        if observer is not None:
            observer.observe(models)

    # -- execution -------------------------------------------------------------------------------
    @property
    def execution(self) -> ResolvedExecution:
        """How this algorithm runs the cohort's client steps: ``"loop"`` (one client after another,
        the reference) or ``"vectorised"`` (stacked, :mod:`sfl_sim.algorithms._exec.vectorised`).

        Resolved from ``setup.execution`` on the first read after construction (the build reads
        it at once, so a refusal comes before any work) and fixed from then on.

        Raises
        ------
        sfl_sim.algorithms._exec.execution.ExecutionRefused
            ``setup.execution`` is ``"vectorised"`` and :meth:`vectorise_refusal` gives a reason.
        """
        mode = self.__dict__.get("_execution_mode")
        if mode is None:
            mode = self.__dict__["_execution_mode"] = resolve_execution(self.setup.execution, self)
        return mode

    @final
    def vectorise_refusal(self) -> str | None:
        """Why this algorithm cannot run ``execution: vectorised`` (None when it can).

        Decided by :func:`sfl_sim.algorithms._exec.execution.vectorised_refusal` from what the class
        declares: a family with a stacked path (FedAvg, the split-learning base) sets a
        :class:`~sfl_sim.algorithms._exec.execution.StackedSteps` as ``stacked_steps``; a subclass keeps
        the path while it keeps the hooks that declaration names.  Not a hook: declare, do not
        override."""
        return vectorised_refusal(self)

    # -- shared helpers ------------------------------------------------------------------------
    def metered_flops(self, kind: str, n_samples: int, dry_run: Callable[[], object]) -> float:
        """FLOPs of a step of ``kind`` on ``n_samples`` samples without running it: from the
        meter's cache, or — the first time — by metering ``dry_run()``, the same step done on a
        throwaway copy (the vectorised path runs the real step later, stacked)."""
        per_sample = self.meter.flops_per_sample.get(kind)
        if per_sample is None:
            _, flops = self.meter.run(kind, n_samples, dry_run)
            return flops
        return per_sample * n_samples

    def working_copies(self, source: nn.Module, keys: Sequence[Key]) -> dict[Key, nn.Module]:
        """One working copy of ``source`` per key (e.g. per cohort client) for this round.

        What ``{k: copy.deepcopy(source) for k in keys}`` gives, bit for bit, but the copies are
        made once and refilled with ``source``'s weights, buffers and flags on later rounds
        (:mod:`sfl_sim.algorithms._exec.working_copies`).  They are valid until the next call for the
        same ``source``: call once per round, and deep-copy one that must outlive the round.
        """
        pools = self.__dict__.get("_working_copy_pools")
        if pools is None:  # lazily: a plug-in's __init__ may not call ours first
            pools = self.__dict__["_working_copy_pools"] = WorkingCopyPools()
        return pools.take_for(source, keys)

    def cohort_batch_sizes(self, cohort: np.ndarray) -> dict[int, int]:
        """B_k of each cohort client by eq. (3)."""
        sizes = self.setup.client_data_sizes[cohort]
        return dict(zip(cohort.tolist(), proportional_batch_sizes(sizes, self.setup.batch_size).tolist(), strict=True))
