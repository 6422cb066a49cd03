"""What every split-learning algorithm shares: the round skeleton, its messages, and the hooks to change it.

A split federated learning (SFL) round over a cohort C with T local iterations always has the
same shape, and the algorithms differ only in a few places:

1. **distribution** of the client-side model w_c: broadcast to the cohort (default), or nothing
   when clients keep their own model across rounds (SplitFedV3);
2. T times (or, with ``training.local_epochs``, once per batch of its E epochs — each client its
   own count), every client k: take its batch (B_k examples by eq. 3, or b), forward through its
   copy of w_c and upload the activations A_k and the labels Y_k (a :class:`ClientActivations`);
3. the **server** turns the activations into an update of the server-side model w_s and,
   unless the clients learn from a local loss, into a :class:`Reply` per client — the activation
   gradient G_k and any extras — which the client downloads, backpropagates and uses to update
   its copy of w_c (every update is a step of a ``torch.optim`` optimizer: the client's
   :meth:`~sfl_sim.algorithms.base.Algorithm.client_optimizer`, the server's
   :meth:`~sfl_sim.algorithms.base.Algorithm.server_optimizer`).  How the server works through the
   cohort is a :mod:`server mode <sfl_sim.algorithms.split.server_modes>`: ``"concatenated"`` (one step
   on the concatenation; SCALA, CA-SFL, Minibatch-SFL), ``"per_client"`` (one copy of w_s per
   client, averaged by |D_k| after the round; SplitFedV1, V3, LLA-SFL, SFLLocalLoss, BESplit) or
   ``"sequential"`` (one w_s, client after client; SplitFedV2);
4. every client uploads its w_c,k^T and the server averages them by |D_k| (default), or keeps
   them apart (SplitFedV3).

Which hook to override for what
-------------------------------
Torch work (no simulated time; the base meters its FLOPs and charges them to the right device):

* :meth:`SplitFedBase.client_forward` — what a client computes before it uploads (A_k; a
  local-loss method also takes its own step here);
* :meth:`SplitFedBase.client_backward` — what a client does with G_k (backward, optimizer step);
* :meth:`SplitFedBase.per_client_loss` — the server's loss on one client's logits;
* :meth:`SplitFedBase.server_on_activations` — the server's whole step on one client's
  activations (``per_client`` / ``sequential``), returning the :class:`Reply`;
* :meth:`SplitFedBase.server_on_concatenation` — the server's step on a concatenation
  (``concatenated``), returning one :class:`Reply` per client.

Timed steps (SimPy generators; override to add work, calling ``super()``):

* :meth:`SplitFedBase.client_on_reply` — everything a client does after the reply arrived
  (default: one ``client_backward`` job);
* :meth:`SplitFedBase.server_on_client` — the server job on one client's activations.

The round: :meth:`SplitFedBase.distribute`, :meth:`SplitFedBase.finish_client` (the upload of
w_c,k), :meth:`SplitFedBase.aggregate`, :meth:`SplitFedBase.client_side` (what the clients train
and exchange) and the ``server_mode``.  State beyond :attr:`SplitFedBase.full_model` and the
optimizers: :meth:`~sfl_sim.algorithms.base.Algorithm.extra_state` / ``load_extra_state``.  Class attributes:
:attr:`SplitFedBase.server_replies`
(False: nothing goes back to the clients during the iterations) and
:attr:`SplitFedBase.client_forward_kind` (the step kind :meth:`client_forward` is metered as).
To add compute, wrap it in :meth:`client_compute` / :meth:`server_compute`; to add a message,
use ``ctx.upload`` / ``ctx.download`` with its kind, or put a tensor in :attr:`Reply.extras`.

Stragglers and lost payloads: the server waits through the engine's
:meth:`~sfl_sim.engine.RoundContext.gather`, so the scenario's straggler policy applies.  In
``concatenated`` mode it applies at every iteration (a late client is dropped from that
concatenation and, having no gradient to continue from, from the rest of the round); in the other
modes it applies to the end-of-round uploads (budget T x ``deadline_s``).  A client whose upload is
lost after outage, or that the server drops, leaves the round with a
:class:`~sfl_sim.engine.Lost` that says why; only the clients that finished are aggregated.

A client's iteration is written once; its torch work runs through a :class:`ClientSteps` — at
the client's events (``execution: loop``) or deferred and stacked (:class:`StackedClientSteps`,
``execution: vectorised``, for the subclasses that keep the hooks
:attr:`SplitFedBase.stacked_steps` names).

Every message goes through the engine's primitives with the kind of what crosses the air
(``client_model``, ``activations``, ``labels``, ``activation_gradients``...), so the counters by
kind and ``rounds.csv`` tell the protocols apart.  Server-side models never cross the air: the
server-side copies and their average live on the server (SplitFed's "main server" and "fed
server" are taken to be wired together).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar, cast

import numpy as np
import simpy
import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.algorithms._exec.compressed import SentModel, send_model
from sfl_sim.algorithms._exec.execution import StackedSteps
from sfl_sim.algorithms._exec.vectorised import StackedClientSide
from sfl_sim.algorithms.base import Algorithm, TrainingSetup, state_bytes, tensor_bytes, weighted_average
from sfl_sim.algorithms.split import server_modes
from sfl_sim.algorithms.split.messages import ClientActivations, ClientStep, Exchange, Reply, SplitRound
from sfl_sim.algorithms.split.server_modes import ServerMode, ServerModeName
from sfl_sim.algorithms.streams import TorchStreams
from sfl_sim.engine import DELIVERED, SERVER, Lost, Outcome, RoundContext, SimSteps
from sfl_sim.models import probe_output
from sfl_sim.optim import make_optimizer

Result = TypeVar("Result")


class SplitFedBase(Algorithm):
    """The split-learning round of the module docstring; subclasses override only their hooks.

    Parameters
    ----------
    setup : TrainingSetup

    Attributes
    ----------
    client_model, server_model : nn.Sequential
        The two parts of the global model (they share modules with :attr:`full_model`).
    full_model : nn.Module
        The whole model, client part then server part: :meth:`global_model` and the ``"model"``
        of :meth:`state_dict`.  A subclass that replaces a part (SCALA-PE adds a bottleneck)
        assigns a new one made of the new parts.
    server_mode : ServerMode
        How the server works through the activations (:mod:`sfl_sim.algorithms.split.server_modes`):
        what :meth:`make_server_mode` gives.
    server_replies : bool
        Class attribute: the server sends each client a :class:`Reply` per iteration (False for
        methods whose clients learn from a local loss; the server then computes no G_k at all).
    client_forward_kind : str
        Class attribute: step kind :meth:`client_forward` is metered and counted as.
    stacked_steps : StackedSteps
        Class attribute: the client steps run stacked (``execution: vectorised``) as long as a
        subclass keeps the default client hooks and local work, and the server replies.
    """

    server_replies: ClassVar[bool] = True
    #: This round's compressed client-side broadcast (``model_download``), None without one.
    _sent_side: SentModel | None = None
    client_forward_kind: ClassVar[str] = "client_forward"
    stacked_steps: ClassVar[StackedSteps | None] = StackedSteps(
        hooks=("client_forward", "client_backward", "client_on_reply", "plan_local_work"),
        step="client step", module=lambda algo: algo.client_side(), what="client side",
        condition=lambda algo: algo._stacking_condition())

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        self.server_mode = server_modes.server_mode(self.make_server_mode())
        # per-client server copies draw from their own streams, seeded from the seed the model
        # was just initialised with (the run's model_init stream), kept across rounds
        self.copy_streams = (TorchStreams(torch.initial_seed(), setup.device, "server_copy")
                             if isinstance(self.server_mode, server_modes.PerClientServer) else None)
        model = copy.deepcopy(setup.model)
        self.client_model, self.server_model = model.split(setup.split_point)
        self.full_model: nn.Module = model

    def make_server_mode(self) -> ServerModeName | ServerMode:
        """How the server works through the activations: ``"concatenated"``, ``"per_client"`` (the
        default), ``"sequential"`` or a :class:`~sfl_sim.algorithms.split.server_modes.ServerMode`;
        called once, in the constructor, after the parameters are set (``self.params``)."""
        return "per_client"

    # -- state -----------------------------------------------------------------------------------
    def global_model(self) -> nn.Module:
        return self.full_model

    def state_dict(self) -> dict[str, Any]:
        streams = {} if self.copy_streams is None else {"client_streams": self.copy_streams.state_dict()}
        return {"model": self.full_model.state_dict(), **streams, **self.extra_state(), **self.stream_state(),
                **self.optimizer_state(), **self.compression_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.full_model.load_state_dict(state["model"])
        if self.copy_streams is not None:
            self.copy_streams.load_state_dict(state.get("client_streams", {}))
        self.load_extra_state(state)
        self.load_stream_state(state)
        self.load_optimizer_state(state)
        self.load_compression_state(state)

    def _stacking_condition(self) -> str | None:
        """The family's further reasons to run the loop (:attr:`stacked_steps`)."""
        if not self.server_replies:
            return f"{type(self).__name__} sends no gradients back (server_replies is False)"
        compressed = [p for p in ("activations", "gradients") if self.setup.compression.codec(p) is not None]
        if compressed:
            return (f"compression.{compressed[0]} is set; the stacked client step computes the activations "
                    f"after they are uploaded, so they cannot be encoded at the upload")
        return None

    def compression_refusal(self, path: str) -> str | None:
        """Split learning compresses ``activations`` (A_k up; labels exact) and ``gradients``
        (G_k down, when the server replies) and, while a subclass keeps :meth:`distribute`, the
        broadcast of the client side w_c (``model_download``); the client-model upload is not compressed."""
        if path == "activations":
            return None
        if path == "gradients":
            return None if self.server_replies else \
                f"{type(self).__name__} sends no activation gradients back (its clients learn from a local loss)"
        if path == "model_download":
            return None if type(self).distribute is SplitFedBase.distribute else \
                f"{type(self).__name__} sends its client side its own way, not as one broadcast of w_c"
        return super().compression_refusal(path)

    @property
    def activation_probe(self) -> torch.Tensor:
        """:attr:`client_model`'s output for one zero sample, shape ``(1, *activation_shape)``, with
        the activations' dtype and device (a dry run: eval mode, no autograd, no random draws).

        Computed on first use and again whenever :attr:`client_model` is replaced, so a subclass
        may read it in its constructor before or after it replaces the client model."""
        cached = self.__dict__.get("_activation_probe")
        if cached is None or cached[0] is not self.client_model:
            output = probe_output(self.client_model, tuple(self.setup.train_x.shape[1:]))
            cached = self.__dict__["_activation_probe"] = (self.client_model, output)
        return cached[1]

    @property
    def activation_shape(self) -> tuple[int, ...]:
        """Per-sample shape of the activations A_k this algorithm's clients upload, e.g. ``(64, 7, 7)``:
        that of :attr:`activation_probe` (SCALA-PE's includes its bottleneck)."""
        return tuple(self.activation_probe.shape[1:])

    @property
    def activation_bits_per_sample(self) -> float:
        """Bits one sample's activations and label take on the uplink."""
        return 8.0 * (tensor_bytes(self.activation_probe) + self.setup.train_y[:1].element_size())

    # -- the round: distribution, client upload, aggregation --------------------------------------
    def client_side(self) -> nn.Module:
        """The module each client receives, trains and returns (the client-side model here).

        Returns
        -------
        nn.Module
            Its deep copies are the clients' working copies (``ClientStep.model``)."""
        return self.client_model

    def distribute(self, ctx: RoundContext, clients: list[int]) -> SimSteps[dict[int, nn.Module]]:
        """Start of the round (Algorithm 2, line 7): broadcast the client side; ``yield from`` it.

        Parameters
        ----------
        ctx : RoundContext
        clients : list of int
            The cohort.

        Returns
        -------
        dict of int to nn.Module
            Each client's working copy of :meth:`client_side` (:meth:`working_copies`).
        """
        side = self.client_side()
        if self.setup.compression.codec("model_download") is None:
            yield ctx.broadcast(state_bytes(side), "client_model")
        else:  # side is the decoded w_c until the round ends (send_model)
            self._sent_side = sent = send_model(self.setup.compression, side, SERVER)
            yield from _charge(ctx, SERVER, sent.encode_flops, "compress_model")
            yield ctx.broadcast(sent.nbytes, "client_model")
        return self.working_copies(side, clients)

    def finish_client(self, ctx: RoundContext, k: int, model: nn.Module) -> SimSteps[Outcome]:
        """Client k after its last iteration (line 22): upload of w_c,k^T; ``yield from`` it.

        Parameters
        ----------
        ctx : RoundContext
        k : int
        model : nn.Module
            Client k's working copy.

        Returns
        -------
        Delivered or Lost
            Whether the upload arrived.
        """
        return (yield ctx.upload(k, state_bytes(model), "client_model"))

    def aggregate(self, cohort: np.ndarray, local: dict[int, nn.Module],
                  servers: dict[int, nn.Module] | None) -> None:
        """End of the round: set the global model from the clients that finished.

        Default: the client models (and the per-client server copies, if any) averaged by |D_k|
        (eq. 10).  Not called when nobody finished.

        Parameters
        ----------
        cohort : ndarray of int64
            The clients that finished, in cohort order.
        local : dict of int to nn.Module
            Every cohort client's working copy (use those of ``cohort``).
        servers : dict of int to nn.Module, or None
            Per-client server copies (``per_client`` mode), else None.
        """
        clients = cohort.tolist()
        weights = self.setup.client_data_sizes[cohort].astype(float)
        self.client_side().load_state_dict(weighted_average([local[k].state_dict() for k in clients], weights))
        if servers is not None:
            self.server_model.load_state_dict(weighted_average([servers[k].state_dict() for k in clients], weights))

    # -- client hooks ------------------------------------------------------------------------------
    def client_forward(self, step: ClientStep) -> torch.Tensor:
        """Torch work of a client before it uploads, metered as :attr:`client_forward_kind`.

        Runs right after the client drew its minibatch (``step.x``, ``step.y``).

        Parameters
        ----------
        step : ClientStep
            ``step.model`` is the client's working copy of :meth:`client_side`.

        Returns
        -------
        Tensor, shape (B_k, *activation_shape)
            A_k = h(w_c,k; X_k), with its graph (:meth:`client_backward` backpropagates through it).
        """
        return step.model(step.x)

    def client_on_reply(self, ctx: RoundContext, step: ClientStep, reply: Reply) -> SimSteps[None]:
        """Everything client k does once the server's reply is downloaded; ``yield from`` it.

        Default: one job of kind ``client_backward`` running :meth:`client_backward`.  Override
        to add timed work before or after (wrap it in :meth:`client_compute`).

        Parameters
        ----------
        ctx : RoundContext
        step : ClientStep
            This iteration, with ``step.activations`` set.
        reply : Reply
        """
        yield from self.client_compute(ctx, step, "client_backward", lambda: self.client_backward(step, reply))

    def client_backward(self, step: ClientStep, reply: Reply) -> None:
        """Torch work of a client with its reply: backpropagate G_k, then a step of client k's
        optimizer over w_c,k (:meth:`client_optimizer`).

        Parameters
        ----------
        step : ClientStep
        reply : Reply
            ``reply.activation_grad`` is G_k, shaped like ``step.activations``.
        """
        assert step.activations is not None  # client_forward set it before the upload
        step.activations.backward(reply.activation_grad)
        self.optimizer_step(self.client_optimizer(step.client, step.model.parameters()))

    # -- server hooks ------------------------------------------------------------------------------
    def per_client_loss(self, k: int, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Server loss on one client's activations (``per_client``/``sequential``): cross-entropy.

        Parameters
        ----------
        k : int
        logits : Tensor, shape (B_k, N)
        labels : LongTensor, shape (B_k,)

        Returns
        -------
        Tensor
            A scalar loss.
        """
        return F.cross_entropy(logits, labels)

    def server_on_activations(self, server: nn.Module, upload: ClientActivations,
                              want_reply: bool) -> Reply | None:
        """Torch work of the server on one client's activations: forward through ``server``,
        :meth:`per_client_loss`, backward, a step of ``server``'s optimizer (:meth:`server_side_optimizer`).

        Runs when the server job gets the server (``per_client`` and ``sequential`` modes).

        Parameters
        ----------
        server : nn.Module
            The server-side model to step (the client's copy, or the one w_s).
        upload : ClientActivations
        want_reply : bool
            Compute G_k (False: no activation gradient is computed at all).

        Returns
        -------
        Reply or None
            G_k (None when ``want_reply`` is False).
        """
        a_k = upload.activations.requires_grad_(want_reply)
        loss = self.per_client_loss(upload.client, server(a_k), upload.labels)
        loss.backward()
        self.optimizer_step(self.server_side_optimizer(server, upload.client))
        return Reply(cast(torch.Tensor, a_k.grad)) if want_reply else None  # backward filled it

    def server_side_optimizer(self, server: nn.Module, client: int) -> torch.optim.Optimizer:
        """The optimizer of a server-side model a server hook steps: the server's, persisting across
        rounds, for the one :attr:`server_model` (``concatenated``, ``sequential``); client
        ``client``'s (name ``"server_copy"``, with the client's state semantics) for its per-client
        copy W_S,k (``per_client``), which is the server half of that client's model."""
        if server is self.server_model:
            return self.server_optimizer(server.parameters())
        return self.client_optimizer(client, server.parameters(), name="server_copy")

    def server_on_concatenation(self, uploads: Sequence[ClientActivations]) -> list[Reply]:
        """Torch work of the server on the concatenation of an iteration (``concatenated``):
        update w_s and return each client's reply.

        Parameters
        ----------
        uploads : sequence of ClientActivations
            The clients kept in this iteration, in cohort order (A_k detached).

        Returns
        -------
        list of Reply
            One per upload, in the same order.
        """
        raise NotImplementedError(f"{type(self).__name__} uses server_mode='concatenated' "
                                  f"without a server_on_concatenation")

    def server_on_client(self, ctx: RoundContext, server: nn.Module, upload: ClientActivations,
                         want_reply: bool) -> SimSteps[Reply | None]:
        """One server job on one client's activations: :meth:`server_on_activations`, timed on
        the server as ``server_step``; ``yield from`` it.

        Returns
        -------
        Reply or None
        """
        def step() -> Reply | None:
            with self.copy_stream(upload.client):
                return self.server_on_activations(server, upload, want_reply)

        return (yield from self.server_compute(ctx, "server_step", upload.activations.shape[0], step,
                                               client=upload.client))

    def copy_stream(self, client: int) -> contextlib.AbstractContextManager[None]:
        """The block draws from client ``client``'s server-copy stream (``per_client`` mode,
        :mod:`sfl_sim.algorithms.streams`); in the other modes, from the run's (the one w_s steps
        in an order no timing changes: iteration after iteration, or the clients' fixed order)."""
        return contextlib.nullcontext() if self.copy_streams is None else self.copy_streams.of(client)

    # -- metered compute and messages (helpers for hooks) -----------------------------------------
    def client_compute(self, ctx: RoundContext, step: ClientStep, kind: str,
                       fn: Callable[[], Result]) -> SimSteps[Result]:
        """Run ``fn()`` as client work of ``kind`` on B_k samples: its FLOPs are metered (once per
        kind) and charged to client k's device; ``yield from`` it.  Returns ``fn()``'s result.

        ``fn()`` draws its randomness (the client side's dropout...) from client k's own stream
        (:meth:`~sfl_sim.algorithms.base.Algorithm.client_stream`), so the order
        in which the clients' events fire never changes it."""
        def own() -> Result:
            with self.client_stream(step.client, step.dispatch):
                return fn()

        result, flops = self.meter.run(kind, step.batch_size, own)
        yield from ctx.compute(step.client, flops, kind)
        return result

    def server_compute(self, ctx: RoundContext, kind: str, n_samples: int,
                       fn: Callable[[], Result], client: int | None = None) -> SimSteps[Result]:
        """Run ``fn()`` as server work of ``kind`` on ``n_samples`` samples (metered, queued on
        the one server); ``yield from`` it.  Returns ``fn()``'s result.

        ``client``: the client whose server-side work this is: with ``server.edge`` it runs on the
        edge server holding that client's state (:meth:`RoundContext.compute`); None (work on many
        clients' data at once, a concatenation): the cloud's server."""
        result, flops = self.meter.run(kind, n_samples, fn)
        if client is None:
            yield from ctx.compute(SERVER, flops, kind)
        else:
            yield from ctx.compute(SERVER, flops, kind, client=client)
        return result

    @property
    def server_steps_at_cloud(self) -> bool:
        """True when the server's steps on the activations run on the cloud, on many clients' data
        at once (``concatenated`` modes: SCALA, CA-SFL, the triggered server): with
        ``server.edge`` the activations and labels then cross the backhaul from the client's cell
        to the cloud, and the replies back (:meth:`upload_activations`, :meth:`download_reply`)."""
        return isinstance(self.server_mode, server_modes.ConcatenatedServer)

    def _codec_client(self, k: int) -> int | None:
        """Where the server's codec work on client k's activations and gradients runs: with the
        steps on the cloud (:attr:`server_steps_at_cloud`) the cloud (None: the activations are
        decoded there, after the backhaul, and the gradients encoded before it), else client k's
        edge (``k``), where its server step runs (with ``server.edge``; without one, the one server
        either way)."""
        return None if self.server_steps_at_cloud else k

    def handover_state_bytes(self) -> int:
        """One client's server-side state a handover moves (:meth:`Algorithm.handover_state_bytes`):
        ``per_client``: the client's copy of w_s (its state's bytes).  ``sequential`` (SplitFedV2,
        SFLLocalLoss): 0 (our reading: the one shared w_s follows the server's order, moving to the
        edge of each client whose step comes next, :class:`~sfl_sim.algorithms.split.server_modes.SequentialServer`;
        a client's handover moves none of it).  ``concatenated`` (SCALA, CA-SFL): 0 (our reading:
        the one shared w_s is stepped on the cohort's concatenation on the cloud's server, so a
        client's handover moves none of it).  Nothing is re-sent either: activations already at the
        cloud stay there; an upload on the air at the handover pauses for the interruption (the
        radio gives no rate while the client has no link) and goes on to the new cell, whose edge
        relays it to the cloud; the reply goes from the cloud to the edge of the client's cell then
        (:meth:`RoundContext.backhaul`)."""
        if self.server_steps_at_cloud or isinstance(self.server_mode, server_modes.SequentialServer):
            return 0
        return state_bytes(self.server_model)

    def upload_activations(self, ctx: RoundContext, k: int, acts: torch.Tensor,
                           labels: torch.Tensor, iteration: int | None = None,
                           nbytes: int | None = None) -> SimSteps[Outcome]:
        """A_k then Y_k over client k's uplink (labels as int64, as torch holds them).

        ``iteration`` is the coherence block of both transfers: with ``coherence: per_iteration``
        each local iteration's uploads see a new fading draw.  ``nbytes``: the bytes A_k takes
        (its compressed payload's), else those of ``acts``.  With ``server.edge`` and the steps on
        the cloud (:attr:`server_steps_at_cloud`), both then cross the backhaul to the cloud, as
        one payload."""
        acts_bytes = tensor_bytes(acts) if nbytes is None else nbytes
        sent = yield ctx.upload(k, acts_bytes, "activations", block=iteration)
        if isinstance(sent, Lost):
            return sent
        sent = yield ctx.upload(k, tensor_bytes(labels), "labels", block=iteration)
        if not isinstance(sent, Lost) and self.server_steps_at_cloud:
            yield from ctx.backhaul(k, {"activations": acts_bytes, "labels": tensor_bytes(labels)}, to_cloud=True)
        return sent

    def download_reply(self, ctx: RoundContext, k: int, reply: Reply,
                       grad_bytes: int | None = None) -> SimSteps[None]:
        """G_k (kind ``activation_gradients``; ``grad_bytes``: its compressed payload's bytes, else
        those of the tensor), then each extra under its own kind.  With ``server.edge`` and the
        steps on the cloud (:attr:`server_steps_at_cloud`), the reply first crosses the backhaul
        from the cloud to the edge of the client's cell, as one payload."""
        nbytes = tensor_bytes(reply.activation_grad) if grad_bytes is None else grad_bytes
        if self.server_steps_at_cloud:
            yield from ctx.backhaul(k, {"activation_gradients": nbytes,
                                        **{kind: tensor_bytes(t) for kind, t in reply.extras.items()}}, to_cloud=False)
        yield ctx.download(k, nbytes, "activation_gradients")
        for kind, tensor in reply.extras.items():
            yield ctx.download(k, tensor_bytes(tensor), kind)

    # -- one round ---------------------------------------------------------------------------------
    def round_process(self, ctx: RoundContext, cohort: np.ndarray) -> SimSteps[None]:
        clients = cohort.tolist()
        work = self.drawn_local_work(cohort)
        batch = {k: work[k].batch_size for k in clients}
        local = yield from self.distribute(ctx, clients)
        # The band is shared by the activation uploads: declare each client's (B_k samples).
        codec = self.setup.compression.codec("activations")
        if codec is None:
            per_sample_bits = self.activation_bits_per_sample
            ctx.allocate_uplink({k: batch[k] * per_sample_bits for k in clients})
        else:  # the compressed payload of B_k samples, and the exact labels
            probe, label_bytes = self.activation_probe, self.setup.train_y[:1].element_size()
            ctx.allocate_uplink({k: 8.0 * (codec.payload_bytes(probe.expand(batch[k], *probe.shape[1:]))
                                           + batch[k] * label_bytes) for k in clients})
        steps = StackedClientSteps(self, local) if self.execution == "vectorised" else ClientSteps(self)
        rnd = SplitRound(ctx, clients, batch, local, self.server_mode.server_copies(self, clients),
                         Exchange(ctx, clients, {k: work[k].iterations for k in clients}), work=work,
                         steps=steps)
        jobs = self.server_mode.start_clients(
            rnd, lambda k, start, done: ctx.process(self._client_round(rnd, k, start, done)))
        server = self.server_mode.start_server(self, rnd)
        kept = yield from self.server_mode.finish(self, rnd, jobs, server)
        # the final word (with server.edge: less whom a handover's drop discarded meanwhile; a later
        # handover of the others no longer drops them); without an edge, kept as it is
        kept = ctx.keep(kept)
        steps.finish()
        if kept:  # nobody finished: the global model stays as it was
            self.aggregate(np.asarray(kept, dtype=np.int64), local, rnd.servers)
            if self._sent_side is not None:  # the server's exact w_c plus what the round moved
                self._sent_side.keep_exact(self.client_side())
        elif self._sent_side is not None:  # ... the server's own w_c, not the copy it sent
            self.client_side().load_state_dict(self._sent_side.exact)
        self._sent_side = None

    def _client_round(self, rnd: SplitRound, k: int, start: simpy.Event | None,
                      done: simpy.Event | None) -> SimSteps[Outcome]:
        """Client k's round: the decoding of a compressed w_c download, wait for its turn (if any),
        its local iterations, then :meth:`finish_client`."""
        if self._sent_side is not None:
            yield from _charge(rnd.ctx, k, self._sent_side.decode_flops, "decompress_model")
        if start is not None:
            yield start
        outcome: Outcome = DELIVERED
        for t in range(rnd.exchange.count(k)):
            outcome = yield from self._iteration(rnd, k, t)
            if isinstance(outcome, Lost):
                rnd.exchange.leave(k, t, outcome)
                break
        if done is not None:
            done.succeed()  # the next client may start; this one uploads its model meanwhile
        if isinstance(outcome, Lost):
            return outcome
        return (yield from self.finish_client(rnd.ctx, k, rnd.local[k]))

    def _iteration(self, rnd: SplitRound, k: int, t: int) -> SimSteps[Outcome]:
        """One local iteration of client k (lines 9-13, 17-19): forward, upload, reply, backward."""
        ctx = rnd.ctx
        x, y = rnd.work[k].batch(t)
        step = ClientStep(k, t, rnd.local[k], x, y)
        steps = rnd.steps
        assert steps is not None  # round_process sets them
        step.activations = yield from steps.forward(ctx, step)
        plan = self.setup.compression
        if plan.codec("activations") is None:
            sent = yield from self.upload_activations(ctx, k, step.activations, y, iteration=t)
            received = step.activations.detach()
        else:  # the client encodes, the server decodes and trains on what it decoded
            coded = plan.encode("activations", k, step.activations)
            yield from _charge(ctx, k, coded.encode_flops, "compress_activations")
            sent = yield from self.upload_activations(ctx, k, step.activations, y, iteration=t, nbytes=coded.nbytes)
            if not isinstance(sent, Lost):  # on the server that steps on them: k's edge, or the cloud
                yield from _charge(ctx, SERVER, coded.decode_flops, "decompress_activations", self._codec_client(k))
            received = coded.decoded
        if isinstance(sent, Lost):
            rnd.exchange.send(t, k, sent)
            return sent
        rnd.exchange.send(t, k, ClientActivations(k, received, y))
        if not self.server_replies:
            return sent
        answer = yield rnd.exchange.reply(t, k)
        if isinstance(answer, Lost):  # left out by the server (straggler policy)
            return answer
        if plan.codec("gradients") is None:
            yield from self.download_reply(ctx, k, answer)
        else:  # the server encodes G_k, the client backpropagates what it decoded
            coded = plan.encode("gradients", k, answer.activation_grad)
            yield from _charge(ctx, SERVER, coded.encode_flops, "compress_gradients", self._codec_client(k))
            yield from self.download_reply(ctx, k, answer, grad_bytes=coded.nbytes)
            yield from _charge(ctx, k, coded.decode_flops, "decompress_gradients")
            answer = dataclasses.replace(answer, activation_grad=coded.decoded)
        yield from steps.on_reply(ctx, step, answer)
        return DELIVERED


def _charge(ctx: RoundContext, who: int, flops: float, kind: str, client: int | None = None) -> SimSteps[None]:
    """``flops`` of codec work of ``kind`` on ``who`` (nothing at all for none: no event); with
    ``who`` :data:`SERVER`, ``client``: the client whose work it is (with ``server.edge``, on its
    edge; None: the cloud), as in :meth:`RoundContext.compute`."""
    if flops > 0:
        if client is None:
            yield from ctx.compute(who, flops, kind)
        else:
            yield from ctx.compute(who, flops, kind, client=client)


class ClientSteps:
    """How a round's split client steps run: at the client's events, through the client hooks —
    the loop, the reference.

    Parameters
    ----------
    algo : SplitFedBase
    """

    def __init__(self, algo: SplitFedBase) -> None:
        self.algo = algo

    def forward(self, ctx: RoundContext, step: ClientStep) -> SimSteps[torch.Tensor]:
        """:meth:`SplitFedBase.client_forward`, timed on the client; ``yield from`` it.  Returns A_k."""
        algo = self.algo
        return (yield from algo.client_compute(ctx, step, algo.client_forward_kind, lambda: algo.client_forward(step)))

    def on_reply(self, ctx: RoundContext, step: ClientStep, reply: Reply) -> SimSteps[None]:
        """:meth:`SplitFedBase.client_on_reply`; ``yield from`` it."""
        yield from self.algo.client_on_reply(ctx, step, reply)

    def activations_ready(self) -> None:
        """The server is about to read uploaded activations (they are computed already here)."""

    def finish(self) -> None:
        """The round's clients are done (every step has run here)."""


class StackedClientSteps(ClientSteps):
    """The same steps with the clients' torch work deferred to a :class:`StackedClientSide`: the
    same minibatch draws, compute jobs, uploads and downloads, in the same event order.  Only for
    the default client hooks (:attr:`SplitFedBase.stacked_steps`).

    Parameters
    ----------
    algo : SplitFedBase
    local : dict of int to nn.Module
        The round's working copies of the client side (written back by :meth:`finish`).
    """

    def __init__(self, algo: SplitFedBase, local: dict[int, nn.Module]) -> None:
        super().__init__(algo)
        probe = algo.activation_probe
        self.stacked = StackedClientSide(algo.client_side(), local, algo.learning_rate,
                                         lambda b_k: probe.new_empty((b_k, *probe.shape[1:])))

    def forward(self, ctx: RoundContext, step: ClientStep) -> SimSteps[torch.Tensor]:
        """Queue the forward; the returned A_k is filled when the server first reads activations."""
        algo, kind = self.algo, self.algo.client_forward_kind
        acts = self.stacked.forward_later(step.client, step.iteration, step.x)
        flops = algo.metered_flops(kind, step.batch_size, lambda: algo.client_forward(self._dry_step(step)))
        yield from ctx.compute(step.client, flops, kind)
        return acts

    def on_reply(self, ctx: RoundContext, step: ClientStep, reply: Reply) -> SimSteps[None]:
        """Queue the backward of G_k (run before the client's weights are next needed), timed as
        the loop's ``client_backward``."""
        self.stacked.backward_later(step.client, step.iteration, reply.activation_grad)
        yield from ctx.compute(step.client, self._backward_flops(step, reply), "client_backward")

    def activations_ready(self) -> None:
        self.stacked.flush()

    def finish(self) -> None:
        self.stacked.finish()  # the last backwards, and the weights into the working copies

    def _dry_step(self, step: ClientStep) -> ClientStep:
        """``step`` on a throwaway copy of the client side (metered once for its FLOPs)."""
        return ClientStep(step.client, step.iteration, copy.deepcopy(self.algo.client_side()), step.x, step.y)

    def _backward_flops(self, step: ClientStep, reply: Reply) -> float:
        """FLOPs of :meth:`SplitFedBase.client_backward` on B_k samples; the first time metered on
        a throwaway copy whose forward runs outside the meter (as in the loop, where it ran before)."""
        algo = self.algo
        per_sample = algo.meter.flops_per_sample.get("client_backward")
        if per_sample is not None:
            return per_sample * step.batch_size
        dry = self._dry_step(step)
        dry.activations = algo.client_forward(dry)

        def dry_backward() -> None:  # the default client_backward, with a throwaway optimizer (none of the run's)
            cast(torch.Tensor, dry.activations).backward(reply.activation_grad)  # set just above
            algo.optimizers.step(make_optimizer(algo.setup.training, dry.model.parameters(), algo.learning_rate))

        return algo.metered_flops("client_backward", step.batch_size, dry_backward)
