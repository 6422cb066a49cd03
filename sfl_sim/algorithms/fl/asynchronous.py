"""FedBuff and FedAsync: FedAvg's clients, an asynchronous server.

A client does exactly what a FedAvg client does in a round (:class:`~sfl_sim.algorithms.fl.fedavg.FedAvg`:
its local work, its local steps through its optimizer, its upload of the whole model), from the
model the server sent it at its dispatch; only the server differs.  The driver
(:mod:`sfl_sim.engine.asynchronous`) decides when the server aggregates; this module decides how.

**FedBuff** (Nguyen et al., AISTATS 2022, "Federated Learning with Buffered Asynchronous
Aggregation", Algorithm 1 as we read it): a client's update is Delta_k = x_k - x^{u_k}, its trained
model minus the model it started from; the server buffers K updates, then

    x^{v+1} = x^v + eta_g * sum_k w_k s(tau_k) Delta_k / sum_k w_k,

with tau_k = v - u_k the update's staleness, s the staleness scaling (1 / sqrt(1 + tau) in the
paper; ``staleness_scaling: none`` for s = 1) and eta_g the server learning rate.  The paper
averages the buffer uniformly (1/K); we weight by w_k = |D_k| within the buffer, FedAvg's weights —
our choice, so that with K = C (every slot freed at the flush, ``refill: on_use``), eta_g = 1 and
s = 1 FedBuff *is* FedAvg: its updates all start from x^v (tau = 0) and the sum equals FedAvg's
weighted average.  In that case (every tau 0, eta_g 1, every s 1) the new model is computed by
FedAvg's own aggregation, :func:`~sfl_sim.algorithms.base.weighted_average` of the trained models,
so the two trajectories are equal bit for bit, not just within rounding.

Defaults, so that a default FedBuff is asynchronous (a K = C, ``on_use`` default made every
staleness 0: FedAvg, bit for bit):

* ``refill: on_arrival`` — a client's slot is refilled as soon as its update arrives (the
  publisher's abstract: the server "aggregates client updates in a private buffer until K updates
  have been received", while clients go on training; Algorithm 1 samples a new client at each
  arrival, as we read it), so the next client starts from the model of that moment, stale by the
  time its update is used;
* ``buffer_size: null`` — K = half the concurrency, at least 1
  (:func:`~sfl_sim.algorithms.asynchronous.half_the_concurrency`): **our choice**.  We could not
  read the paper's experiments section (their K and concurrency C); what we read states only that
  K is well below the number of clients training at once.  A fixed K (the previous default, 10)
  is refused by a cohort smaller than K; half of C fits every cohort, and the resolved K is
  recorded in ``resolved.yaml`` (``components.algorithm.resolved``);
* ``staleness_scaling: sqrt`` and ``server_lr: 1`` as before (the paper's scaling; eta_g 1 our choice).

**FedAsync** (Xie, Koyejo and Gupta, 2019, "Asynchronous Federated Optimization"): every arrival
is applied at once (K = 1),

    x^{v+1} = (1 - alpha_v) x^v + alpha_v x_new,    alpha_v = alpha * s(v - u),

with s ``constant``, ``polynomial`` (a) or ``hinge`` (a, b) (:func:`~sfl_sim.algorithms.asynchronous.staleness_weight`).
The paper's local proximal term (rho) is FedProx's; it is left out here (rho = 0).  With the period
rule not available and K fixed to 1, several arrivals are never mixed at once.

FedAsync's defaults are asynchronous as they stand: K is 1, so with C > 1 clients in flight every
update but the first of a burst is stale.  Its refill stays ``on_use``, which for K = 1 frees a
slot at the arrival too (the update is used at once) and starts the next client from the model
just updated, as FedAsync's scheduler hands a worker the latest model (as we read the paper).

Not supported (refused at build): compression of any path, ``execution: vectorised``.  The client
optimizers are closed and the learning-rate schedule steps at every aggregation (a version plays
the part of a round).
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
import simpy
import torch
from pydantic import Field
from torch import nn

from sfl_sim.algorithms._exec.execution import StackedSteps
from sfl_sim.algorithms.asynchronous import (
    AsynchronousAlgorithm,
    AsyncParams,
    StalenessFunction,
    half_the_concurrency,
    staleness_weight,
)
from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup, state_bytes, weighted_average
from sfl_sim.algorithms.fl.fedavg import FedAvg, LocalSteps
from sfl_sim.channel.limits import SIMULATED_INTERVAL_S
from sfl_sim.engine import RoundContext, SimSteps
from sfl_sim.engine.asynchronous import Arrival, Dispatch, RefillRule
from sfl_sim.kit.params import Doc, Positive

__all__ = ["AsyncFedAvg", "FedAsync", "FedBuff"]


class AsyncFedAvg(AsynchronousAlgorithm, FedAvg):
    """FedAvg's clients under an asynchronous server (module docstring); abstract, not registered."""

    class Params(FedAvg.Params, AsyncParams):
        """The parameters of an asynchronous FedAvg."""

    params: Params
    stacked_steps: ClassVar[StackedSteps | None] = None

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        self._local: dict[int, nn.Module] = {}  # dispatch sequence -> the client's working model
        self._start: dict[int, dict[str, torch.Tensor]] = {}  # dispatch sequence -> the model it started from

    def compression_refusal(self, path: str) -> str | None:
        return f"{type(self).__name__} (asynchronous) compresses no path"

    def dispatch(self, ctx: RoundContext, group: Sequence[Dispatch],
                 in_flight: Sequence[int]) -> SimSteps[Mapping[int, simpy.Event]]:
        clients = np.asarray([d.client for d in group], dtype=np.int64)
        start = {name: t.detach().clone() for name, t in self.model.state_dict().items()}
        local = {d.sequence: copy.deepcopy(self.model) for d in group}  # the model of this moment
        # B split over those in flight; the group's draws made now, as a synchronous round's
        work = self.drawn_local_work(np.asarray(in_flight, dtype=np.int64), clients.tolist())
        yield ctx.broadcast(state_bytes(self.model), "model")
        ctx.allocate_uplink({k: 8 * self._upload_bytes() for k in clients.tolist()})
        self.begin_round(clients)
        jobs = {}
        for d in group:
            self._local[d.sequence], self._start[d.sequence] = local[d.sequence], start
            steps = LocalSteps(self, dispatch=d)  # the dispatch draws from its own stream
            jobs[d.sequence] = ctx.process(self._client(ctx, work[d.client], local[d.sequence], steps))
        return jobs

    def discard(self, arrival: Arrival) -> None:
        self._local.pop(arrival.dispatch.sequence, None)
        self._start.pop(arrival.dispatch.sequence, None)
        self.end_dispatch(arrival.dispatch)

    def aggregate_updates(self, used: Sequence[Arrival], staleness: Sequence[int]) -> None:
        sequences = [a.dispatch.sequence for a in used]
        models = {s: self._local.pop(s) for s in sequences}
        starts = {s: self._start.pop(s) for s in sequences}
        for a in used:
            self.end_dispatch(a.dispatch)
        self.observe_local_models({a.client: models[a.dispatch.sequence] for a in used})
        self.server_update(used, staleness, models, starts)
        self.optimizers.end_round()  # a version is a round for the client optimizers and the schedule

    def server_update(self, used: Sequence[Arrival], staleness: Sequence[int], models: Mapping[int, nn.Module],
                      starts: Mapping[int, Mapping[str, torch.Tensor]]) -> None:
        """Set :attr:`model` from the used updates (``models`` and ``starts`` by dispatch sequence)."""
        raise NotImplementedError


@ALGORITHMS.register("fedbuff")
class FedBuff(AsyncFedAvg):
    """FedBuff: buffered asynchronous aggregation (module docstring).

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(AsyncFedAvg.Params):
        """FedBuff's parameters (what a scenario sets beside ``name``)."""

        buffer_size: Annotated[int | None, Field(ge=1), Doc(
            "K, updates per aggregation, at most the concurrency C (null: half of C, at least 1; our choice, "
            "recorded in resolved.yaml).")] = None
        server_lr: Annotated[Positive, Doc("eta_g, the server learning rate (1: the buffer's average is added).")] = 1.0
        staleness_scaling: Annotated[Literal["sqrt", "none"], Doc(
            "s(tau): sqrt is 1 / sqrt(1 + tau) (the paper's), none is 1.")] = "sqrt"
        # SIMULATED_INTERVAL_S's bound (a Range inside `| None` would leave the Doc on the inner type)
        period_s: Annotated[float | None, Field(ge=SIMULATED_INTERVAL_S.low, allow_inf_nan=False), Doc(
            "Aggregate every period_s simulated seconds (>= 1e-3: the 1 ms NR subframe) with what has arrived, "
            "instead of every K updates (null: every K).")] = None
        refill: Annotated[RefillRule, Doc(
            "When a delivered client's slot frees: on_arrival (when its update arrives: FedBuff's Algorithm 1, "
            "the default) or on_use (when the server has used it: with K = C every update is fresh, FedAvg).")] = \
            "on_arrival"

    params: Params

    @classmethod
    def buffer_size_for(cls, params: Any, concurrency: int) -> int:
        return half_the_concurrency(concurrency) if params.buffer_size is None else int(params.buffer_size)

    @classmethod
    def period_for(cls, params: Any) -> float | None:
        return params.period_s

    def server_update(self, used: Sequence[Arrival], staleness: Sequence[int], models: Mapping[int, nn.Module],
                      starts: Mapping[int, Mapping[str, torch.Tensor]]) -> None:
        weights = self.setup.client_data_sizes[[a.client for a in used]].astype(float)
        scale = [1.0 if self.params.staleness_scaling == "none" else staleness_weight("sqrt", t) for t in staleness]
        states = [models[a.dispatch.sequence].state_dict() for a in used]
        if self.params.server_lr == 1.0 and all(t == 0 for t in staleness) and all(s == 1.0 for s in scale):
            # every update started from x^v: x^v + sum w (x_k - x^v) / sum w is FedAvg's average
            self.model.load_state_dict(weighted_average(states, weights))
            return
        current = self.model.state_dict()
        w = weights / weights.sum()
        new: dict[str, torch.Tensor] = {}
        for key, ref in current.items():
            if not torch.is_floating_point(ref):
                new[key] = states[0][key].clone()  # integer buffers: as weighted_average does
                continue
            acc = torch.zeros_like(ref, dtype=torch.float64)
            for wk, sk, state, a in zip(w.tolist(), scale, states, used, strict=True):
                acc += wk * sk * (state[key].to(torch.float64) - starts[a.dispatch.sequence][key].to(torch.float64))
            new[key] = (ref.to(torch.float64) + self.params.server_lr * acc).to(ref.dtype)
        self.model.load_state_dict(new)


@ALGORITHMS.register("fedasync")
class FedAsync(AsyncFedAvg):
    """FedAsync: every arrival mixed into the model at once (module docstring).

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(AsyncFedAvg.Params):
        """FedAsync's parameters (what a scenario sets beside ``name``)."""

        alpha: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False), Doc(
            "alpha, the mixing weight, in (0, 1] (the paper's experiments use 0.6 and smaller).")] = 0.6
        staleness_function: Annotated[StalenessFunction, Doc(
            "s(tau): constant, polynomial ((tau + 1)^-a) or hinge (1 up to b, then 1 / (a (tau - b) + 1)); "
            "sqrt is FedBuff's 1 / sqrt(1 + tau).")] = "polynomial"
        a: Annotated[float, Field(gt=0, allow_inf_nan=False), Doc("a of the polynomial and hinge functions.")] = 0.5
        b: Annotated[float, Field(ge=0, allow_inf_nan=False), Doc("b of the hinge function.")] = 4.0

    params: Params

    def server_update(self, used: Sequence[Arrival], staleness: Sequence[int], models: Mapping[int, nn.Module],
                      starts: Mapping[int, Mapping[str, torch.Tensor]]) -> None:
        p = self.params
        state = self.model.state_dict()
        for arrival, tau in zip(used, staleness, strict=True):  # K = 1: one at a time
            alpha = p.alpha * staleness_weight(p.staleness_function, tau, p.a, p.b)
            local = models[arrival.dispatch.sequence].state_dict()
            state = weighted_average([state, local], [1.0 - alpha, alpha]) if alpha < 1.0 else \
                {k: v.clone() for k, v in local.items()}
        self.model.load_state_dict(state)
