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
import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generator, Iterable, List, Mapping, Optional, Sequence

import numpy as np
import torch
from torch import nn

from channel.registry import Registry
from sfl_sim.algorithms.flop_meter import FlopMeter
from sfl_sim.algorithms.local_work import ClientWork, EpochWork, IterationWork, random_batch
from sfl_sim.engine import RoundContext
from sfl_sim.models import SplittableModel
from sfl_sim.optim import OptimizerBank, TrainingSettings

ALGORITHMS = Registry("algorithm")

#: :meth:`Algorithm.evaluation_description` of every algorithm that scores its global model.
GLOBAL_MODEL_EVALUATION = "global model on the test set"


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
    """

    model: SplittableModel
    split_point: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    client_indices: List[torch.Tensor]
    num_classes: int
    batch_size: int
    local_iterations: int
    learning_rate: float
    device: torch.device
    minibatch_rng: np.random.Generator
    training: TrainingSettings = field(default_factory=TrainingSettings)

    @functools.cached_property
    def client_label_counts(self) -> torch.Tensor:
        """(K, N) float32 label counts of every client's local data, on ``device`` (computed once)."""
        return torch.stack([torch.bincount(self.train_y[ix], minlength=self.num_classes)
                            for ix in self.client_indices]).to(torch.float32).to(self.device)

    @property
    def client_data_sizes(self) -> np.ndarray:
        """|D_k| of every client, shape (K,)."""
        return np.array([len(ix) for ix in self.client_indices], dtype=np.int64)


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


def weighted_average(states: Sequence[Mapping[str, torch.Tensor]], weights: Sequence[float]) -> Dict[str, torch.Tensor]:
    """Weighted average of state dicts (SCALA eq. 10, FedAvg): sum_k w_k s_k / sum_k w_k.

    Parameters
    ----------
    states : sequence of state dicts with the same keys and shapes
    weights : sequence of float, one per state (e.g. |D_k|)
    """
    if len(states) != len(weights) or not states:
        raise ValueError(f"need one weight per state, got {len(states)} states and {len(weights)} weights")
    w = torch.as_tensor(np.asarray(weights, dtype=np.float64) / float(np.sum(weights)))
    out: Dict[str, torch.Tensor] = {}
    for key, ref in states[0].items():
        if not torch.is_floating_point(ref):
            out[key] = ref.clone()  # integer buffers (counters) are not averaged
            continue
        acc = torch.zeros_like(ref, dtype=torch.float64)
        for wk, state in zip(w, states):
            acc += wk.item() * state[key].to(torch.float64)
        out[key] = acc.to(ref.dtype)
    return out


def tensor_bytes(*tensors: torch.Tensor) -> int:
    """Bytes of the given tensors as sent: numel x element size, summed."""
    return int(sum(t.numel() * t.element_size() for t in tensors))


def state_bytes(module: nn.Module) -> int:
    """Bytes of a model upload/download: every tensor of its state dict."""
    return tensor_bytes(*module.state_dict().values())


class Algorithm(abc.ABC):
    """Base of every training algorithm.

    Parameters
    ----------
    setup : TrainingSetup

    Attributes
    ----------
    default_selection : dict or None
        Client selector (component spec) this algorithm is defined with, used when the scenario
        leaves ``clients.selection`` unset; None means uniform selection.
    """

    default_selection: Optional[Dict[str, Any]] = None

    def __init__(self, setup: TrainingSetup) -> None:
        self.setup = setup
        self.meter = FlopMeter()
        self.optimizers = OptimizerBank(setup.training, setup.learning_rate)
        #: Set by the runner for a round it will evaluate (see :meth:`observe_local_models`).
        self.local_model_probe: Optional[Any] = None

    def run_round(self, ctx: RoundContext, cohort: np.ndarray) -> Generator:
        """The engine's entry to one round: :meth:`round_process` between the optimizers' round
        bookkeeping (client optimizers start fresh or from their kept state; afterwards the
        learning-rate schedule moves to the next round).  Use it as the simulator's round
        process: ``sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)``."""
        self.optimizers.begin_round()
        result = yield from self.round_process(ctx, cohort)
        self.optimizers.end_round()
        return result

    # -- what subclasses implement -------------------------------------------------------------
    @abc.abstractmethod
    def round_process(self, ctx: RoundContext, cohort: np.ndarray) -> Generator:
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

    def evaluate(self, evaluate_fn: Callable[..., tuple[float, float]], x: torch.Tensor, y: torch.Tensor,
                 batch_size: int) -> tuple[float, float]:
        """Test accuracy and loss the runner reports after a round.

        ``evaluate_fn(model, x, y, batch_size) -> (accuracy, loss)`` scores one model (the
        runner's :func:`sfl_sim.evaluation.evaluate`; its result also carries the per-class
        accuracy the runner writes to ``classes.csv``).  Default: the :meth:`global_model`.  An
        algorithm whose reported model is something else (e.g. BESplit-A's per-client auxiliary
        models) overrides this hook, and :meth:`evaluation_description` with it; returning a
        :class:`sfl_sim.evaluation.Scores` gives ``classes.csv`` its per-class accuracy (a plain
        pair leaves those cells empty)."""
        return evaluate_fn(self.global_model(), x, y, batch_size)

    def evaluation_description(self) -> str:
        """What :meth:`evaluate` scores, in words (written to ``summary.json`` as ``evaluated``),
        so that curves of differently evaluated algorithms are not compared unawares."""
        return GLOBAL_MODEL_EVALUATION

    @abc.abstractmethod
    def state_dict(self) -> Dict[str, Any]:
        """Everything needed to resume training: weights and :meth:`optimizer_state` (plain data only)."""

    @abc.abstractmethod
    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (and, through :meth:`load_optimizer_state`, the optimizers)."""

    # -- optimizers ----------------------------------------------------------------------------
    def client_optimizer(self, client: int, params: Iterable[nn.Parameter], name: str = "model",
                         lr: Optional[float] = None) -> torch.optim.Optimizer:
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
                         lr: Optional[float] = None) -> torch.optim.Optimizer:
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

    def optimizer_state(self) -> Dict[str, Any]:
        """``{"optimizers": ...}`` when the optimizers carry state (momentum or Adam buffers, a
        schedule's position, kept client states), else ``{}``: merge it into :meth:`state_dict`."""
        state = self.optimizers.state_dict()
        return {"optimizers": state} if state else {}

    def load_optimizer_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`optimizer_state` put into a state dict (nothing there: fresh optimizers)."""
        self.optimizers.load_state_dict(state.get("optimizers", {}))

    # -- local work ----------------------------------------------------------------------------
    def plan_local_work(self, cohort: np.ndarray) -> Dict[int, ClientWork]:
        """Each cohort client's local work this round (:mod:`sfl_sim.algorithms.local_work`):
        T iterations of eq. (3) batches, or ``local_epochs`` passes in batches of ``batch_size``."""
        epochs = self.setup.training.local_epochs
        if epochs is None:
            sizes = self.cohort_batch_sizes(cohort)
            return {k: IterationWork(self.setup, k, self.setup.local_iterations, sizes[k]) for k in cohort.tolist()}
        return {k: EpochWork(self.setup, k, epochs, self.setup.batch_size) for k in cohort.tolist()}

    # -- local models (evaluation) ---------------------------------------------------------------
    def observe_local_models(self, models: Mapping[int, nn.Module]) -> None:
        """Show the round's locally trained models (client -> model, before aggregation) to the
        runner's probe, when it attached one for a round it will evaluate (FedVLS's accuracy of
        local models on their vacant classes).  Algorithms with local models call it; it only
        reads them (eval mode, no gradients, no random draws)."""
        if self.local_model_probe is not None:
            self.local_model_probe.observe(models)

    # -- shared helpers ------------------------------------------------------------------------
    def cohort_batch_sizes(self, cohort: np.ndarray) -> Dict[int, int]:
        """B_k of each cohort client by eq. (3)."""
        sizes = self.setup.client_data_sizes[cohort]
        return dict(zip(cohort.tolist(), proportional_batch_sizes(sizes, self.setup.batch_size).tolist()))

    def sample_batch(self, client: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A random minibatch of ``size`` samples of client ``client``'s data (without
        replacement inside the batch, unless the client holds fewer samples than ``size``)."""
        return random_batch(self.setup, client, size)
