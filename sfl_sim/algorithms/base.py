"""What every algorithm shares: the training setup, minibatch sampling, eq. (3), aggregation.

An algorithm implements :meth:`Algorithm.round_process`, a SimPy generator written with the
primitives of :class:`sfl_sim.engine.RoundContext`.  The engine times and counts what the
algorithm declares (compute on a device, a payload over a link); the algorithm does the real
torch work between the yields.
"""
from __future__ import annotations

import abc
import functools
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generator, List, Mapping, Optional, Sequence

import numpy as np
import torch
from torch import nn

from channel.registry import Registry
from sfl_sim.algorithms.flop_meter import FlopMeter
from sfl_sim.algorithms.working_copies import WorkingCopyPools
from sfl_sim.engine import RoundContext
from sfl_sim.models import SplittableModel

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
        B, the server-side minibatch split over the cohort by eq. (3).
    local_iterations : int
        T, local iterations per round.
    learning_rate : float
        SGD step size eta.
    device : torch.device
    minibatch_rng : numpy.random.Generator
        Stream for minibatch sampling (the only randomness algorithms draw themselves).
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


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A host array as a tensor on ``device``, without a host sync.

    On CPU the tensor shares the array's memory.  On a GPU the array goes through pinned memory
    with a non-blocking copy: a copy from ordinary (pageable) memory waits for the device, i.e.
    a sync per call (the caching host allocator keeps the pinned block until the copy is done).
    """
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if device.type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


#: Clients summed per matrix-vector product by the stacked (GPU) average: bounds its memory.
STACK_CHUNK = 256


def weighted_average(states: Sequence[Mapping[str, torch.Tensor]], weights: Sequence[float]) -> Dict[str, torch.Tensor]:
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
    out: Dict[str, torch.Tensor] = {}
    for key, ref in states[0].items():
        if not torch.is_floating_point(ref):
            out[key] = ref.clone()  # integer buffers (counters) are not averaged
            continue
        acc = torch.zeros_like(ref, dtype=torch.float64)
        for wk, state in zip(w.tolist(), states):
            acc += wk * state[key].to(torch.float64)
        out[key] = acc.to(ref.dtype)
    return out


def weighted_average_stacked(states: Sequence[Mapping[str, torch.Tensor]],
                             weights: Sequence[float]) -> Dict[str, torch.Tensor]:
    """:func:`weighted_average` over stacked states: per tensor, ``stack`` the clients' copies and
    reduce them with one float64 matrix-vector product per :data:`STACK_CHUNK` clients.

    The weights are host numbers, sent to the device once (no host sync); the result equals the
    sequential sum within float64 rounding (another summation order)."""
    if len(states) != len(weights) or not states:
        raise ValueError(f"need one weight per state, got {len(states)} states and {len(weights)} weights")
    w64 = np.asarray(weights, dtype=np.float64) / float(np.sum(weights))
    w_on: Dict[torch.device, torch.Tensor] = {}
    out: Dict[str, torch.Tensor] = {}
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


def overridden(obj: Any, base: type, names: Sequence[str]) -> List[str]:
    """The methods of ``names`` that ``type(obj)`` defines differently from ``base``."""
    return [n for n in names if getattr(type(obj), n) is not getattr(base, n)]


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

    #: How the cohort's client steps run: ``"loop"`` (one client after another, the reference) or
    #: ``"vectorised"`` (stacked, :mod:`sfl_sim.algorithms.vectorised`); set from the scenario's
    #: ``execution`` by :func:`sfl_sim.build.build_run` after :meth:`vectorise_refusal` allowed it.
    execution: str = "loop"

    def __init__(self, setup: TrainingSetup) -> None:
        self.setup = setup
        self.meter = FlopMeter()

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
        runner's :func:`sfl_sim.runner.evaluate`).  Default: the :meth:`global_model`.  An
        algorithm whose reported model is something else (e.g. BESplit-A's per-client auxiliary
        models) overrides this hook, and :meth:`evaluation_description` with it."""
        return evaluate_fn(self.global_model(), x, y, batch_size)

    def evaluation_description(self) -> str:
        """What :meth:`evaluate` scores, in words (written to ``summary.json`` as ``evaluated``),
        so that curves of differently evaluated algorithms are not compared unawares."""
        return GLOBAL_MODEL_EVALUATION

    @abc.abstractmethod
    def state_dict(self) -> Dict[str, Any]:
        """Everything needed to resume training (weights, optimizer state)."""

    @abc.abstractmethod
    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""

    def vectorise_refusal(self) -> Optional[str]:
        """Why this algorithm cannot run ``execution: vectorised`` (None when it can).

        Default: it has no vectorised path.  FedAvg (and FedCBS) and the split-learning
        algorithms with the default client hooks have one (:mod:`sfl_sim.algorithms.vectorised`)."""
        return f"{type(self).__name__} has no vectorised path"

    # -- shared helpers ------------------------------------------------------------------------
    def metered_flops(self, kind: str, n_samples: int, dry_run: Callable[[], Any]) -> float:
        """FLOPs of a step of ``kind`` on ``n_samples`` samples without running it: from the
        meter's cache, or — the first time — by metering ``dry_run()``, the same step done on a
        throwaway copy (the vectorised path runs the real step later, stacked)."""
        per_sample = self.meter.flops_per_sample.get(kind)
        if per_sample is None:
            _, flops = self.meter.run(kind, n_samples, dry_run)
            return flops
        return per_sample * n_samples

    def working_copies(self, source: nn.Module, keys: Sequence[Any]) -> Dict[Any, nn.Module]:
        """One working copy of ``source`` per key (e.g. per cohort client) for this round.

        What ``{k: copy.deepcopy(source) for k in keys}`` gives, bit for bit, but the copies are
        made once and refilled with ``source``'s weights, buffers and flags on later rounds
        (:mod:`sfl_sim.algorithms.working_copies`).  They are valid until the next call for the
        same ``source``: call once per round, and deep-copy one that must outlive the round.
        """
        pools = self.__dict__.get("_working_copy_pools")
        if pools is None:  # lazily: a plug-in's __init__ may not call ours first
            pools = self.__dict__["_working_copy_pools"] = WorkingCopyPools()
        return pools.take_for(source, keys)

    def cohort_batch_sizes(self, cohort: np.ndarray) -> Dict[int, int]:
        """B_k of each cohort client by eq. (3)."""
        sizes = self.setup.client_data_sizes[cohort]
        return dict(zip(cohort.tolist(), proportional_batch_sizes(sizes, self.setup.batch_size).tolist()))

    def sample_batch(self, client: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A random minibatch of ``size`` samples of client ``client``'s data (without
        replacement inside the batch, unless the client holds fewer samples than ``size``)."""
        indices = self.setup.client_indices[client]
        n = len(indices)
        pick = self.setup.minibatch_rng.choice(n, size=size, replace=size > n)
        rows = indices[to_device(pick, indices.device)]
        return self.setup.train_x[rows], self.setup.train_y[rows]

    def sgd_step(self, params: Sequence[torch.nn.Parameter]) -> None:
        """Plain SGD update w <- w - eta * grad, then clear the gradients."""
        with torch.no_grad():
            for p in params:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-self.setup.learning_rate)
                    p.grad = None
