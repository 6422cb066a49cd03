"""What every split-learning algorithm shares: the round skeleton, its messages and their timing.

A split federated learning (SFL) round over a cohort C with T local iterations always has the
same shape, and the algorithms differ only in a few places:

1. **distribution** of the client-side model w_c: broadcast to the cohort (default), or nothing
   when clients keep their own model across rounds (SplitFedV3);
2. T times, every client k: sample B_k examples (eq. 3), forward through its copy of w_c and
   upload the activations A_k and the labels Y_k;
3. the **server** turns the activations into an update of the server-side model w_s and,
   unless the clients learn from a local loss, into activation gradients G_k sent back to each
   client, which backpropagates them and updates its copy of w_c.  Three server modes:

   * ``"concatenated"`` — wait for every client's A_k, one step on the concatenation (SCALA,
     CA-SFL, Minibatch-SFL); subclasses implement :meth:`SplitFedBase.server_step`;
   * ``"per_client"`` — one copy of w_s per client, each stepped on its own client's activations
     as they arrive; the copies are averaged by |D_k| after the round (SplitFedV1, V3, LLA-SFL,
     SFLLocalLoss).  The server is one device, so the copies' jobs queue on it;
   * ``"sequential"`` — one w_s, stepped on one client's activations after another in a fixed
     order (SplitFedV2): client k+1's server step cannot start before client k's has finished;

4. every client uploads its w_c,k^T and the server averages them by |D_k| (default), or keeps
   them apart (SplitFedV3).

Stragglers and lost payloads: the server waits through the engine's
:meth:`~sfl_sim.engine.RoundContext.gather`, so the scenario's straggler policy applies.  In
``concatenated`` mode it applies at every iteration (a late client is dropped from that
concatenation and, having no gradient to continue from, from the rest of the round); in the other
modes it applies to the end-of-round uploads (budget T x ``deadline_s``).  A client whose upload is
lost after outage, or that the server drops, leaves the round; only the clients that finished are
aggregated.

Every message goes through the engine's primitives with the kind of what crosses the air
(``client_model``, ``activations``, ``labels``, ``activation_gradients``...), so the counters by
kind and ``rounds.csv`` tell the protocols apart.  Server-side models never cross the air: the
server-side copies and their average live on the server (SplitFed's "main server" and "fed
server" are taken to be wired together).
"""
from __future__ import annotations

import copy
from typing import Any, Dict, Generator, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.algorithms.base import Algorithm, TrainingSetup, state_bytes, tensor_bytes, weighted_average
from sfl_sim.engine.simulator import SERVER

SERVER_MODES = ("concatenated", "per_client", "sequential")


class SplitFedBase(Algorithm):
    """The split-learning round of the module docstring; subclasses override only their delta.

    Parameters
    ----------
    setup : TrainingSetup
    server_mode : {"concatenated", "per_client", "sequential"}

    Attributes
    ----------
    client_model, server_model : nn.Sequential
        The two parts of the global model (they share modules with :meth:`global_model`).
    """

    def __init__(self, setup: TrainingSetup, server_mode: str = "per_client") -> None:
        super().__init__(setup)
        if server_mode not in SERVER_MODES:
            raise ValueError(f"server_mode={server_mode!r}; allowed: {', '.join(SERVER_MODES)}")
        self.server_mode = server_mode
        model = copy.deepcopy(setup.model)
        self.client_model, self.server_model = model.split(setup.split_point)
        self._full = model

    # -- state -----------------------------------------------------------------------------------
    def global_model(self) -> nn.Module:
        return self._full

    def state_dict(self) -> Dict[str, Any]:
        return {"model": self._full.state_dict()}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self._full.load_state_dict(state["model"])

    # -- hooks subclasses override -----------------------------------------------------------------
    def client_side(self) -> nn.Module:
        """The module each client receives, trains and returns (the client-side model here)."""
        return self.client_model

    def distribute(self, ctx: Any, clients: List[int]) -> Generator:
        """Line 7 of Algorithm 2: broadcast the client side; returns each client's working copy."""
        side = self.client_side()
        yield ctx.broadcast(state_bytes(side), "client_model")
        return {k: copy.deepcopy(side) for k in clients}

    def finish_client(self, ctx: Any, k: int, model: nn.Module) -> Generator:
        """Client k after its last iteration: upload of w_c,k^T (line 22); returns whether it arrived."""
        delivered = yield ctx.upload(k, state_bytes(model), "client_model")
        return delivered

    def aggregate(self, cohort: np.ndarray, local: Dict[int, nn.Module],
                  servers: Optional[Dict[int, nn.Module]]) -> None:
        """Average the clients' models (and the server-side copies, if any) by |D_k| (eq. 10)."""
        clients = cohort.tolist()
        weights = self.setup.client_data_sizes[cohort].astype(float)
        self.client_side().load_state_dict(weighted_average([local[k].state_dict() for k in clients], weights))
        if servers is not None:
            self.server_model.load_state_dict(weighted_average([servers[k].state_dict() for k in clients], weights))

    def per_client_loss(self, k: int, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Loss of one client's activations on the server (``per_client``/``sequential`` modes)."""
        return F.cross_entropy(logits, labels)

    def server_step(self, clients: List[int], parts: List[tuple[torch.Tensor, torch.Tensor]]) -> List[torch.Tensor]:
        """``concatenated`` mode: update w_s on the parts and return each client's G_k."""
        raise NotImplementedError(f"{type(self).__name__} uses server_mode='concatenated' without a server_step")

    def _activation_bits_per_sample(self) -> float:
        """Bits one sample's activations and label take on the uplink (dry run once, cached)."""
        if getattr(self, "_act_bits", None) is None:
            with torch.no_grad():
                was_training = self.client_model.training
                self.client_model.eval()
                acts = self.client_model(self.setup.train_x[:1])
                self.client_model.train(was_training)
            self._act_bits = 8.0 * (tensor_bytes(acts) + self.setup.train_y[:1].element_size())
        return self._act_bits

    # -- one round -------------------------------------------------------------------------------
    def round_process(self, ctx: Any, cohort: np.ndarray) -> Generator:
        clients = cohort.tolist()
        batch = self.cohort_batch_sizes(cohort)
        local = yield from self.distribute(ctx, clients)
        # The band is shared by the activation uploads: declare each client's (B_k samples).
        per_sample_bits = self._activation_bits_per_sample()
        ctx.allocate_uplink({k: batch[k] * per_sample_bits for k in clients})
        servers = ({k: copy.deepcopy(self.server_model) for k in clients}
                   if self.server_mode == "per_client" else None)

        # One event per (iteration, client): activations arrived at the server / G_k ready.
        # An arrival carries None when the payload was lost; a G_k of None drops the client.
        iterations = range(self.setup.local_iterations)
        arrived = [{k: ctx.event() for k in clients} for _ in iterations]
        grads = [{k: ctx.event() for k in clients} for _ in iterations]
        jobs = dict(zip(clients, self.client_jobs(ctx, clients, batch, local, arrived, grads)))
        server = self.server_jobs(ctx, clients, servers, arrived, grads)
        if self.server_mode == "concatenated":
            # The straggler policy acted at every iteration; wait for the clients still in.
            still_in = yield server[0]
            yield ctx.all_of([jobs[k] for k in still_in])
            kept = [k for k in still_in if jobs[k].value]
            for k in set(still_in) - set(kept):
                ctx.dropped.setdefault(k, "outage")
        else:
            kept = yield from ctx.gather(jobs, local_iterations=self.setup.local_iterations)
        if kept:  # nobody finished: the global model stays as it was
            self.aggregate(np.asarray(kept, dtype=np.int64), local, servers)

    def client_jobs(self, ctx: Any, clients: List[int], batch: Dict[int, int], local: Dict[int, nn.Module],
                    arrived: List[Dict[int, Any]], grads: List[Dict[int, Any]]) -> List[Any]:
        """One process per client, all in parallel."""
        return [ctx.process(self._client(ctx, k, batch[k], local[k], arrived, grads)) for k in clients]

    def server_jobs(self, ctx: Any, clients: List[int], servers: Optional[Dict[int, nn.Module]],
                    arrived: List[Dict[int, Any]], grads: List[Dict[int, Any]]) -> List[Any]:
        """The server's processes for the round's server mode."""
        iterations = range(self.setup.local_iterations)
        if self.server_mode == "concatenated":
            return [ctx.process(self._server_concatenated(ctx, clients, arrived, grads))]
        if self.server_mode == "per_client":
            # Per-client server jobs start as activations arrive and queue on the one server.
            return [ctx.process(self._server_single(ctx, k, servers[k], arrived[t][k], grads[t][k]))
                    for t in iterations for k in clients]
        order = [(t, k) for t in iterations for k in clients]
        return [ctx.process(self._server_sequential(ctx, order, arrived, grads))]

    def _client(self, ctx: Any, k: int, b_k: int, model: nn.Module, arrived: List[Dict[int, Any]],
                grads: List[Dict[int, Any]]) -> Generator:
        """Client k's round: T iterations (lines 9-13, 17-19), then :meth:`finish_client`.

        Returns whether the client finished (False once it is dropped or a payload is lost)."""
        for t in range(self.setup.local_iterations):
            if not (yield from self._client_iteration(ctx, k, b_k, model, arrived[t][k], grads[t][k])):
                return False
        return (yield from self.finish_client(ctx, k, model))

    def upload_activations(self, ctx: Any, k: int, acts: torch.Tensor, labels: torch.Tensor) -> Generator:
        """A_k then Y_k over client k's uplink (labels as int64, as torch holds them); returns
        whether both arrived."""
        if not (yield ctx.upload(k, tensor_bytes(acts), "activations")):
            return False
        return (yield ctx.upload(k, tensor_bytes(labels), "labels"))

    def forward_and_send(self, ctx: Any, k: int, b_k: int, forward: Any, arrived: Any, grad: Any) -> Generator:
        """First half of a client iteration: sample B_k examples, forward them through
        ``forward``, upload A_k and Y_k, wait for the server's reply.

        Returns ``(x, y, acts, reply)``, or None when the client is out of the round (its upload
        was lost after outage, or the server dropped it and replied None).
        """
        x, y = self.sample_batch(k, b_k)
        acts, flops = self.meter.run("client_forward", b_k, lambda: forward(x))
        yield from ctx.compute(k, flops, "client_forward")
        if not (yield from self.upload_activations(ctx, k, acts, y)):
            arrived.succeed(None)
            return None
        arrived.succeed((acts.detach(), y))
        reply = yield grad
        if reply is None:  # dropped by the server (straggler policy)
            return None
        return x, y, acts, reply

    def _client_iteration(self, ctx: Any, k: int, b_k: int, model: nn.Module, arrived: Any, grad: Any) -> Generator:
        sent = yield from self.forward_and_send(ctx, k, b_k, model, arrived, grad)
        if sent is None:
            return False
        _x, _y, acts, g_k = sent
        yield ctx.download(k, tensor_bytes(g_k), "activation_gradients")

        def backward() -> None:
            acts.backward(g_k)
            self.sgd_step(list(model.parameters()))

        _, flops = self.meter.run("client_backward", b_k, backward)
        yield from ctx.compute(k, flops, "client_backward")
        return True

    def _server_concatenated(self, ctx: Any, clients: List[int], arrived: List[Dict[int, Any]],
                             grads: List[Dict[int, Any]]) -> Generator:
        """The server's T iterations: gather the clients (straggler policy), one step on the
        concatenation of those kept.  Returns the clients still in after the last iteration."""
        active = list(clients)
        for t in range(self.setup.local_iterations):
            kept = yield from ctx.gather({k: arrived[t][k] for k in active})
            for k in active:
                if k not in kept:
                    grads[t][k].succeed(None)  # left out of this concatenation: the client stops
            active = kept
            if not active:
                break
            parts = [arrived[t][k].value for k in active]
            n_samples = int(sum(a.shape[0] for a, _ in parts))
            act_grads, flops = self.meter.run("server_step", n_samples, lambda: self.server_step(active, parts))
            yield from ctx.compute(SERVER, flops, "server_step")
            for k, g in zip(active, act_grads):
                grads[t][k].succeed(g)
        return active

    def _server_single(self, ctx: Any, k: int, server: nn.Module, arrived: Any, grad: Any) -> Generator:
        """One server job: wait for client k's activations, step ``server`` on them."""
        received = yield arrived
        if received is None:  # lost after outage: the client has left the round
            return
        yield from self._server_client_step(ctx, k, server, *received, grad)

    def _server_sequential(self, ctx: Any, order: Sequence[tuple[int, int]], arrived: List[Dict[int, Any]],
                           grads: List[Dict[int, Any]]) -> Generator:
        """One server-side model stepped on (iteration, client) after (iteration, client), in ``order``."""
        for t, k in order:
            received = yield arrived[t][k]
            if received is not None:  # None: lost after outage, the client has left the round
                yield from self._server_client_step(ctx, k, self.server_model, *received, grads[t][k])

    def _server_client_step(self, ctx: Any, k: int, server: nn.Module, a_k: torch.Tensor, y_k: torch.Tensor,
                            grad: Any) -> Generator:
        """Forward/backward of ``server`` on A_k, SGD step; G_k to ``grad`` unless it is None (then
        no activation gradient is computed at all: nothing goes back to the client)."""
        a_k = a_k.requires_grad_(grad is not None)

        def step() -> Optional[torch.Tensor]:
            loss = self.per_client_loss(k, server(a_k), y_k)
            loss.backward()
            self.sgd_step(list(server.parameters()))
            return a_k.grad

        g_k, flops = self.meter.run("server_step", a_k.shape[0], step)
        yield from ctx.compute(SERVER, flops, "server_step")
        if grad is not None:
            grad.succeed(g_k)
