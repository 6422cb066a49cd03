"""FedAvg: every client trains the whole model locally and uploads it (McMahan et al., 2017).

The first baseline of the SCALA papers.  One round: the server broadcasts the global model to the
cohort; each client runs its local work — T iterations on minibatches of B_k samples (the same
eq. (3) sizes SCALA uses, so both algorithms process the same samples per round) or
``local_epochs`` passes over its data — stepping its optimizer (``client_optimizer``: fresh each
round unless ``training.client_optimizer_state: persist``) and uploads its model; the server
averages the models weighted by |D_k|.

The FL baselines (FedProx, FedDyn, FedDecorr, FedLogit, FedLC, FedNTD, FedCBS) are subclasses that
override the hooks below and nothing else of the protocol, so they send exactly what FedAvg sends:

* :meth:`FedAvg.begin_round` — after the broadcast, before the clients start (e.g. keep a copy of
  the global weights w^t for a proximal term);
* :meth:`FedAvg.local_objective` — the loss of one local iteration from the minibatch (default:
  :meth:`FedAvg.local_loss` of the model's logits);
* :meth:`FedAvg.local_loss` — the loss from the logits (plain cross-entropy here);
* :meth:`FedAvg.after_local_training` — on the client, after its local iterations, before its
  upload (e.g. FedDyn's per-client state update);
* :meth:`FedAvg.aggregate` — the server's rule that turns the uploaded models into the new global
  model (weighted average by |D_k| here).

Everything the hooks compute inside :meth:`FedAvg.local_objective` is metered as the FLOPs of the
``local_step`` (and timed on the client); state a subclass keeps goes into
:meth:`~sfl_sim.algorithms.base.Algorithm.extra_state` / ``load_extra_state``.

A client's process is written once; its local steps run through a :class:`LocalSteps` — at the
client's events (``execution: loop``) or recorded and run stacked after the straggler policy
(:class:`StackedLocalSteps`, ``execution: vectorised``, for the subclasses that keep the hooks
:attr:`FedAvg.stacked_steps` names).
"""
from __future__ import annotations

import abc
import copy
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.algorithms._exec.compressed import SentModel, flat, float_keys, send_model, unflat
from sfl_sim.algorithms._exec.execution import StackedSteps
from sfl_sim.algorithms._exec.vectorised import CohortSteps
from sfl_sim.algorithms.base import ALGORITHMS, Algorithm, TrainingSetup, state_bytes, tensor_bytes, weighted_average
from sfl_sim.algorithms.local_work import ClientWork
from sfl_sim.engine import SERVER, Lost, Outcome, RoundContext, SimSteps
from sfl_sim.engine.asynchronous import Dispatch
from sfl_sim.optim import make_optimizer


@ALGORITHMS.register("fedavg")
class FedAvg(Algorithm):
    """Federated averaging over the simulated cell.

    Parameters
    ----------
    setup : TrainingSetup

    Attributes
    ----------
    model : nn.Module
        The global model.
    stacked_steps : StackedSteps
        Class attribute: the local step runs stacked (``execution: vectorised``) as long as a
        subclass keeps FedAvg's round, local work and plain cross-entropy step.
    """

    stacked_steps: ClassVar[StackedSteps | None] = StackedSteps(
        hooks=("round_process", "plan_local_work", "local_objective", "local_loss", "after_local_training"),
        step="FedAvg step", module=lambda algo: algo.model, what="model",
        condition=lambda algo: None if algo.setup.compression.codec("updates") is None else
        "compression.updates is set; the stacked step trains the models after they are uploaded, so the "
        "update cannot be encoded at the upload")

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        self.model = copy.deepcopy(setup.model)

    def global_model(self) -> nn.Module:
        return self.model

    def state_dict(self) -> dict[str, Any]:
        return {"model": self.model.state_dict(), **self.extra_state(), **self.stream_state(),
                **self.optimizer_state(), **self.compression_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.load_extra_state(state)
        self.load_stream_state(state)
        self.load_optimizer_state(state)
        self.load_compression_state(state)

    def compression_refusal(self, path: str) -> str | None:
        """FedAvg's round compresses the ``updates`` its clients upload and the ``model_download``
        it broadcasts (while a subclass keeps :meth:`round_process`); it has no activations or
        activation gradients."""
        if path in ("updates", "model_download") and type(self).round_process is FedAvg.round_process:
            return None
        return super().compression_refusal(path)

    # -- hooks -----------------------------------------------------------------------------------
    def begin_round(self, cohort: np.ndarray) -> None:
        """Called once per round after the broadcast of the global model, before local training."""

    def local_objective(self, client: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Loss of one local iteration on the minibatch ``(x, y)``: ``local_loss(model(x))`` by default."""
        return self.local_loss(client, model, model(x), y)

    def local_loss(self, client: int, model: nn.Module, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Loss of one local iteration from the logits; plain softmax cross-entropy for FedAvg."""
        return F.cross_entropy(logits, labels)

    def after_local_training(self, client: int, model: nn.Module) -> None:
        """Called on client ``client`` after its local iterations, before it uploads ``model``."""

    def aggregate(self, cohort: np.ndarray, local: dict[int, nn.Module]) -> None:
        """Set the global model from the uploaded local models: average weighted by |D_k|."""
        weights = self.setup.client_data_sizes[cohort].astype(float)
        self.model.load_state_dict(weighted_average([local[k].state_dict() for k in cohort.tolist()], weights))

    # -- one round -------------------------------------------------------------------------------
    def round_process(self, ctx: RoundContext, cohort: np.ndarray) -> SimSteps[None]:
        clients = cohort.tolist()
        work = self.drawn_local_work(cohort)
        sent: SentModel | None = None
        if self.setup.compression.codec("model_download") is None:
            yield ctx.broadcast(state_bytes(self.model), "model")
        else:
            sent = yield from self._broadcast_compressed(ctx)
        decode_flops = 0.0 if sent is None else sent.decode_flops
        ctx.allocate_uplink({k: 8 * self._upload_bytes() for k in clients})  # the round's uplink payload
        self.begin_round(cohort)
        local = self.working_copies(self.model, clients)
        steps = self.local_steps()
        jobs = {k: ctx.process(self._client(ctx, work[k], local[k], steps, decode_flops)) for k in clients}
        # The straggler policy decides whose models count (a whole upload took the local iterations;
        # with local epochs clients differ, and the deadline budget is the longest one's).
        kept = yield from ctx.gather(jobs, local_iterations=max(w.iterations for w in work.values()))
        steps.finish(local, kept)
        if kept:  # nobody delivered: the global model stays as it was
            self.observe_local_models({k: local[k] for k in kept})
            self.aggregate(np.asarray(kept, dtype=np.int64), local)
            if sent is not None:  # the server's exact w^t plus what the round moved
                sent.keep_exact(self.model)
        elif sent is not None:  # ... the server's own, not the copy it sent
            self.model.load_state_dict(sent.exact)

    def local_steps(self) -> LocalSteps:
        """This round's local steps for :attr:`execution` (make them after the round began: the
        stacked ones take the round's learning rate)."""
        return StackedLocalSteps(self) if self.execution == "vectorised" else LocalSteps(self)

    def _client(self, ctx: RoundContext, work: ClientWork, model: nn.Module,
                steps: LocalSteps, decode_flops: float = 0.0) -> SimSteps[Outcome]:
        """Client k's local work on ``model`` (every iteration timed on its device), then its upload;
        first, with ``compression.model_download``, the decoding of the downloaded model."""
        k = work.client
        if decode_flops > 0:
            yield from ctx.compute(k, decode_flops, "decompress_model")
        step = steps.start(k, model)
        for t in range(work.iterations):
            x, y = work.batch(t)
            yield from ctx.compute(k, step(x, y), "local_step")
        steps.end(k, model)
        if self.setup.compression.codec("updates") is None:
            return (yield ctx.upload(k, state_bytes(model), "model"))  # DELIVERED or Lost("outage")
        return (yield from self._upload_update(ctx, k, model))

    def _upload_bytes(self) -> int:
        """Bytes of a client's model upload, declared before training: the model's, or with
        ``compression.updates`` the payload of its floating-point entries' delta plus the
        integer buffers."""
        codec = self.setup.compression.codec("updates")
        if codec is None:
            return state_bytes(self.model)
        state = self.model.state_dict()
        floats = [v for v in state.values() if torch.is_floating_point(v)]
        n = sum(v.numel() for v in floats)
        like = floats[0].new_zeros(n) if floats else torch.zeros(0)
        return codec.payload_bytes(like) + tensor_bytes(*(v for v in state.values() if not torch.is_floating_point(v)))

    def _upload_update(self, ctx: RoundContext, k: int, model: nn.Module) -> SimSteps[Outcome]:
        """Client k's upload with ``compression.updates``: the delta of its floating-point state
        entries from the global model w^t, flattened into one vector, is encoded (error feedback
        per client when asked); integer buffers go as they are.  ``model`` becomes w^t plus the
        decoded delta — what the server reconstructs and averages."""
        glob = self.model.state_dict()
        local = model.state_dict()
        floats = float_keys(local)
        delta = flat(local, floats) - flat(glob, floats)
        coded = self.setup.compression.encode("updates", k, delta)
        if coded.encode_flops > 0:
            yield from ctx.compute(k, coded.encode_flops, "compress_update")
        exact = tensor_bytes(*(v for key, v in local.items() if key not in floats))
        sent = yield ctx.upload(k, coded.nbytes + exact, "model")
        if isinstance(sent, Lost):
            return sent
        if coded.decode_flops > 0:
            yield from ctx.compute(SERVER, coded.decode_flops, "decompress_update", client=k)
        rebuilt = unflat(coded.decoded, glob, floats)
        model.load_state_dict({**local, **{key: glob[key] + rebuilt[key] for key in floats}})
        return sent

    def _broadcast_compressed(self, ctx: RoundContext) -> SimSteps[SentModel]:
        """The broadcast with ``compression.model_download`` (:func:`send_model`): encoded once by
        the server, one payload for the cohort.  Until the aggregation :attr:`model` *is* the
        decoded model (the model the clients start from, take deltas from and, in the
        subclasses' hooks, keep as w^t); after it the server adds back what the send lost
        (:meth:`SentModel.keep_exact`)."""
        sent = send_model(self.setup.compression, self.model, SERVER)
        if sent.encode_flops > 0:
            yield from ctx.compute(SERVER, sent.encode_flops, "compress_model")
        yield ctx.broadcast(sent.nbytes, "model")
        return sent


#: One local step of a client on a minibatch ``(x, y)``; returns its FLOPs.
LocalStep = Callable[[torch.Tensor, torch.Tensor], float]


class LocalSteps:
    """How a round's FL local steps run: at the client's events, on its working copy, through its
    optimizer — the loop, the reference.

    Every step draws its randomness from the client's own stream (:meth:`Algorithm.client_stream`).

    Parameters
    ----------
    algo : FedAvg
    dispatch : Dispatch, optional
        The asynchronous dispatch whose own stream the steps draw from; default: the round's.
    """

    def __init__(self, algo: FedAvg, dispatch: Dispatch | None = None) -> None:
        self.algo = algo
        self.dispatch = dispatch

    def start(self, k: int, model: nn.Module) -> LocalStep:
        """Client k begins its local work on ``model``; returns its step (metered as ``local_step``)."""
        algo = self.algo
        optimizer = algo.client_optimizer(k, model.parameters())

        def step(x: torch.Tensor, y: torch.Tensor) -> float:
            def run() -> None:
                with algo.client_stream(k, self.dispatch):  # its dropout from its own stream, not in event order
                    loss = algo.local_objective(k, model, x, y)
                    loss.backward()
                    algo.optimizer_step(optimizer)

            return algo.meter.run("local_step", len(y), run)[1]

        return step

    def end(self, k: int, model: nn.Module) -> None:
        """Client k has done its local steps; it uploads ``model`` next."""
        with self.algo.client_stream(k, self.dispatch):
            self.algo.after_local_training(k, model)

    def finish(self, local: dict[int, nn.Module], kept: list[int]) -> None:
        """The straggler policy kept ``kept``; their models are aggregated next."""


class StackedLocalSteps(LocalSteps):
    """The same steps recorded as their events fire and run stacked by :class:`CohortSteps` once
    the straggler policy decided whose models count: the same minibatch draws, compute jobs and
    FLOPs, in the same event order.  Only for FedAvg's plain step (:attr:`FedAvg.stacked_steps`)."""

    def __init__(self, algo: FedAvg) -> None:
        super().__init__(algo)
        self.cohort = CohortSteps(algo.model, algo.learning_rate)

    def start(self, k: int, model: nn.Module) -> LocalStep:
        algo = self.algo

        def step(x: torch.Tensor, y: torch.Tensor) -> float:
            self.cohort.record(k, x, y)
            return algo.metered_flops("local_step", len(y), lambda: self._dry_step(k, x, y))

        return step

    def end(self, k: int, model: nn.Module) -> None:
        """Nothing: the steps have not run yet, and ``after_local_training`` is FedAvg's (none)."""

    def finish(self, local: dict[int, nn.Module], kept: list[int]) -> None:
        self.cohort.run(local, kept)  # the kept clients' recorded steps, stacked

    def _dry_step(self, k: int, x: torch.Tensor, y: torch.Tensor) -> None:
        """One local step on a throwaway copy of the global model with a throwaway optimizer
        (metered once for its FLOPs; no client optimizer of the run is made or stepped)."""
        algo = self.algo
        model = copy.deepcopy(algo.model)
        algo.local_objective(k, model, x, y).backward()
        algo.optimizers.step(make_optimizer(algo.setup.training, model.parameters(), algo.learning_rate))


class GlobalTeacherFedAvg(FedAvg):
    """FedAvg whose local objective also sees the round's global model as a frozen teacher.

    At the start of each round the global model is copied, frozen and put in eval mode; the
    local step runs it on the same minibatch (inside the metered step, so its forward pass is
    charged as client compute) and hands both logits to :meth:`distilled_loss`.  FedNTD and
    FedVLS override only that method.  Abstract and not registered: a base, not an algorithm.
    """

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        self._teacher: nn.Module | None = None

    def begin_round(self, cohort: np.ndarray) -> None:
        self._teacher = copy.deepcopy(self.model).eval()
        for p in self._teacher.parameters():
            p.requires_grad_(False)

    def local_objective(self, client: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        logits = model(x)
        assert self._teacher is not None  # begin_round set it
        with torch.no_grad():
            global_logits = self._teacher(x)
        return self.distilled_loss(client, logits, global_logits, y)

    @abc.abstractmethod
    def distilled_loss(self, client: int, logits: torch.Tensor, global_logits: torch.Tensor,
                       labels: torch.Tensor) -> torch.Tensor:
        """Loss of one local step from the local and the global model's logits."""

