"""BESplit: bias-compensated, evidential split federated learning (besplit.txt §3-4, Appendix D).

Two registered variants over the SplitFedV1 round of :mod:`sfl_sim.algorithms.split.base`
(per-client server-side copies W_S,k stepped as activations arrive, the paper's "vanilla SFL"):

* ``besplit_g`` — EA + BCC; reports the global model W_g = [W_C,g, W_S,g];
* ``besplit_a`` — EA + BCC + DTD; every client also trains a lightweight auxiliary model
  W_A,k = [W_Ae,k, W_Ah,k] and the reported accuracy/loss is that of the auxiliary models
  (see *Evaluation* below), through the :meth:`~sfl_sim.algorithms.base.Algorithm.evaluate`
  hook the runner calls.

One round (cohort C, T local iterations):

1. broadcast of w_c (kind ``client_model``), as SplitFedV1;
2. at the round start the server plans BCC from the client state records (CSRs) it holds:
   P_k = record counts M_k normalised, P_g = the sum of all records' counts normalised,
   d_k = JS(P_k, P_g) for the cohort clients that have a record, biased set by the largest gap
   (eq. 11), greedy matching on the eq. (33) edge weights, over-represented classes (eq. 13)
   and a ratio rho_{i,j,n} per class (eqs. 31-32, case 3 midpoint) from the EA weights of the
   records as they stand (w_{t-1} of Appendix D.2);
3. T times every client: forward, upload of A_k and Y_k; the server turns logits into evidence
   e = phi(logits), alpha = e + 1 and steps W_S,k on the evidential loss (eq. 5, lambda_t =
   min(1, round / ``anneal_rounds``)); it adds the batch's evidence and uncertainties to client
   k's fresh record.  For a matched pair (i, j) the server waits for both batches, then steps
   W_S,i on A_i plus the rows of A_j whose class is in C_{j->i} (floor(rho n_c) of the n_c
   rows of class c, the first ones of the random batch) and W_S,j symmetrically, in one server
   job; the gradient of each shared row goes back only to the client it came from, added to that
   client's G_k.  If one of the pair is lost, the other one is stepped alone.  The CSR of a
   client only counts its own rows;
4. G_k goes down (``activation_gradients``); ``besplit_a`` also sends the server's logits for
   the batch (B_k x N floats, kind ``teacher_logits``), the global-model teacher of KD-G; the
   client backpropagates G_k, then (``besplit_a``) runs one auxiliary step on the same batch
   (kind ``aux_step``, metered): eq. (18) with the client-side smashed data of this batch as
   KD-C teacher and the teacher logits as KD-G teacher;
5. the fresh records are merged into the stored ones by the staleness-aware EMA (eq. 6), the
   client uploads w_c,k (``client_model``) and both sides are averaged with the EA weights
   (eqs. 7-10) of the finished clients instead of |D_k|.

Choices where the paper is open (each a parameter where it matters):

* ``evidence="softplus"`` (phi; also ``relu``, ``exp``); ``anneal_rounds=10`` (T of
  lambda_t, counted in rounds); ``ema_beta=0.5`` (beta of eq. 6); ``eps=1e-8``; Q of eq. (8)
  averages over the classes a record has seen (unseen rows are 0/0).
* ``uncertainty_reduce="mean"``: eq. (9) divides by the *sum* over classes of a client's
  per-class mean uncertainty, and a class the client never showed adds nothing to it, so the
  printed ratio hands the largest weights to the clients with the fewest classes — the most
  biased ones, against the text's aim.  Measured (Fashion-MNIST, 100 clients, 10 per round,
  Dirichlet beta = 0.1, seed 0): with ``"sum"`` two-class clients got weights 0.34-0.54 of a
  10-client cohort and BESplit-G ended at 53.6 % after 50 rounds; with ``"mean"`` (the mean over
  the classes seen) 60.7 %.  ``"sum"`` is eq. (9) as printed.
* ``epistemic="relative_entropy"``: eq. (4) is the differential entropy of Dir(alpha), which is
  negative (at most -log Gamma(N)) and more negative the more certain the model, so eq. (9)'s
  ratio on it weights the *less* certain client up.  We sum exp(H - H[Dir(1)]) in (0, 1]
  instead, the same ordering on a positive scale (:func:`~sfl_sim.algorithms.terms.besplit.epistemic_measure`);
  ``"entropy"`` is eq. (4).  Eq. (4) as printed also has log Gamma(S) inside the class sum; we use
  the Dirichlet's differential entropy, which the text defines.
* CSRs are built by the server from what it already receives (the logits of its own forward
  and the labels Y_k): **no extra message** for records, EA weights or BCC (the paper's
  "decoupling heavy intermediate activations from lightweight CSRs" without a transfer).
  Server-side models never cross the air (main and fed server wired together).
* BCC runs once per round plan, over the cohort clients that already have a record (a client's
  first participation only builds its record); ``bcc=False`` switches it off; ``rho_max=1``.
  In a pair the server waits for both batches of an iteration (the paper's opportunistic
  streaming variant is not modelled).
* DTD (``besplit_a``): W_Ae has the client-side model's architecture, initialised from the
  w_c the client receives at its first participation; W_Ah is ``AdaptiveAvgPool2d(1) ->
  Flatten -> Linear(channels, N)`` on 4-D activations (``Flatten -> Linear`` otherwise),
  initialised at construction from the global torch generator (seeded by the runner).  This
  matches Table 8 (auxiliary model slightly larger than the client side).  The auxiliary model is
  personal: it stays on the client, never crosses the air and is not aggregated.  tau = 5,
  lambda_C = 0.2, lambda_G = 0.3 (§5.1).  KD-G's teacher p_g is the server's prediction for the
  batch, i.e. [W_C,k, W_S,k] which start every round as W_g (the client never downloads the full
  model, §4.3).
* ``normalise_relations=True`` (not in the paper): the relational matrices of eq. (16) are
  divided by their mean off-diagonal entry before eq. (17), as relational KD does; the raw
  squared distances of wide activations (thousands) made the auxiliary models diverge to NaN in
  a Fashion-MNIST run.  ``False`` is eq. (17) as printed.
* ``aux_head="pool"``: W_Ah is ``AdaptiveAvgPool2d(1) -> Flatten -> Linear`` as Table 8's
  parameter counts imply (a few hundred head parameters); ``"flatten"`` is ``Flatten -> Linear``
  on the whole activation map.  Measured on Fashion-MNIST (narrow AlexNet, S2, one client of a
  Dirichlet beta = 0.1 split, 200 SGD steps at lr 0.01, evidential loss): the pooled head reached
  73 % on the client's own label distribution, the flattened head 98 % — global average pooling
  after two conv blocks throws most of the class information away.
* Evaluation of ``besplit_a``.  Which clients (``eval_clients``): ``"cohort"`` (default) — the
  clients that finished the latest round; ``"all"`` — every client that has an auxiliary model;
  scores are unweighted means over those clients.  Before any client has one, the initial
  auxiliary model is scored.  On which test distribution (``eval_on``): ``"local"`` (default) —
  each auxiliary model on its own client's label distribution, i.e. the expected accuracy and
  loss on a local test split D_k^te ~ P_k (§3.1 splits every D_k into training and test sets):
  ``sum_n P_k(n) acc_k(n)`` with acc_k(n) measured on the test images of class n and P_k the
  client's training label distribution; ``"global"`` — on the whole (balanced) test set, the
  distribution P_g of eq. (2).  A personal model trained on a few classes scores far lower on
  ``"global"``.
"""
from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import (
    Annotated,
    Any,
    Literal,
    cast,
)

import numpy as np
import simpy
import torch
from pydantic import Field
from torch import nn

from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup, weighted_average
from sfl_sim.algorithms.split.base import SplitFedBase
from sfl_sim.algorithms.split.messages import ClientActivations, ClientStep, Reply, SplitRound
from sfl_sim.algorithms.split.server_modes import PerClientServer, ServerSide
from sfl_sim.algorithms.terms import besplit as bt
from sfl_sim.engine import Lost, RoundContext, SimSteps
from sfl_sim.kit.params import FIXED, Doc, Positive, PositiveInt
from sfl_sim.models.evaluation import Scores, class_accuracy_of

#: BCC plan of a round: per ordered pair (i, j), {class: rho} of i's rows sent to W_S,j.
Share = dict[tuple[int, int], dict[int, float]]


def _host_array(value: torch.Tensor | np.ndarray) -> np.ndarray:
    """A record field as a host float64 array (checkpoints hold tensors; older ones arrays)."""
    return torch.as_tensor(value).detach().cpu().double().numpy()


def _record_of(stored: Mapping[str, Any]) -> bt.StateRecord:
    """A client state record from its checkpoint form (:meth:`BESplit.extra_state`)."""
    evidence, counts, u_ale, u_epi = (_host_array(stored[f]) for f in ("evidence", "counts", "u_ale", "u_epi"))
    return bt.StateRecord(evidence, counts, u_ale, u_epi, int(stored["last_round"]))



class BESplit(SplitFedBase):
    """BESplit over SplitFedV1 (module docstring).  ``dtd`` selects BESplit-A.

    Parameters
    ----------
    setup : TrainingSetup
    """

    class Params(SplitFedBase.Params):
        """BESplit's parameters (what a scenario sets beside ``name``)."""

        dtd: Annotated[bool, Doc("Train and report the clients' auxiliary models (BESplit-A).")] = False
        ea: Annotated[bool, Doc("Evidential Aggregation (else |D_k| weights).")] = True
        bcc: Annotated[bool, Doc("Bias-Compensated Collaboration.")] = True
        evidence: Annotated[Literal[bt.EVIDENCE_FUNCTIONS], Doc(  # type: ignore[valid-type]
            "The evidence function of the evidential loss.")] = "softplus"
        anneal_rounds: Annotated[PositiveInt, Doc("Rounds over which the annealing coefficient reaches 1.")] = 10
        ema_beta: Annotated[float, Field(gt=0, lt=1), Doc("Decay of the clients' state records (EMA).")] = 0.5
        eps: Annotated[float, Doc("Small constant of the EA weights.")] = 1e-8
        uncertainty_reduce: Annotated[Literal["sum", "mean"], Doc(
            "How a client's per-class uncertainties reduce to one number (module docstring).")] = "mean"
        epistemic: Annotated[Literal[bt.EPISTEMIC_MEASURES], Doc(  # type: ignore[valid-type]
            "Epistemic measure the state records sum (:func:`sfl_sim.algorithms.terms.besplit.epistemic_measure`)."
        )] = "relative_entropy"
        rho_max: Annotated[float, Field(ge=0, le=1), Doc("Largest share of a class sent to a partner.")] = 1.0
        tau: Annotated[Positive, Doc("DTD temperature (eq. 18).")] = 5.0
        lambda_c: Annotated[float, Doc("DTD weight lambda_c (eq. 18).")] = 0.2
        lambda_g: Annotated[float, Doc("DTD weight lambda_g (eq. 18).")] = 0.3
        eval_clients: Annotated[Literal["cohort", "all"], Doc(
            "Whose auxiliary models are scored: the latest cohort's or every client's.")] = "cohort"
        eval_on: Annotated[Literal["local", "global"], Doc(
            "Test distribution the auxiliary models are scored on (module docstring).")] = "local"
        aux_head: Annotated[Literal["pool", "flatten"], Doc("Architecture of the auxiliary head W_Ah.")] = "pool"
        normalise_relations: Annotated[bool, Doc("Scale-free relational matrices in KD-C (module docstring).")] = \
            True

    params: Params

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        self.records: dict[int, bt.StateRecord] = {}
        # This round's server outputs per client, kept on the device and folded into a record at
        # commit time: one host transfer per client and round instead of one per server step.
        self._fresh: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {}
        self._round = 0
        self.last_finished: list[int] = []
        self.aux_models: dict[int, nn.Module] = {}
        self._aux_head_init = self._make_aux_head() if self.params.dtd else None

    # -- auxiliary model ---------------------------------------------------------------------------
    def make_server_mode(self) -> BCCServer:
        return BCCServer()

    def _make_aux_head(self) -> nn.Module:
        shape = self.activation_shape
        if len(shape) == 3 and self.params.aux_head == "pool":
            head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(shape[0], self.setup.num_classes))
        else:
            head = nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(shape)), self.setup.num_classes))
        return head.to(self.setup.device)

    def _new_aux(self) -> nn.Module:
        # only BESplit-A (dtd) makes auxiliary models, and it has the head
        return nn.Sequential(copy.deepcopy(self.client_model), cast(nn.Module, copy.deepcopy(self._aux_head_init)))

    # -- evaluation and state --------------------------------------------------------------------
    def evaluate(self, evaluate_fn: Callable[..., tuple[float, float]], x: torch.Tensor, y: torch.Tensor,
                 batch_size: int) -> tuple[float, float]:
        if not self.params.dtd:
            return super().evaluate(evaluate_fn, x, y, batch_size)
        pairs = self.evaluation_pairs()
        n = self.setup.num_classes
        rows: Sequence[tuple[float, ...]]
        if self.params.eval_on == "global":
            results = [evaluate_fn(m, x, y, batch_size) for _, m in pairs]
            rows, per_class = [tuple(r) for r in results], [class_accuracy_of(r, n) for r in results]
        else:
            rows, per_class = self._local_scores(evaluate_fn, pairs, x, y, batch_size)
        scores = np.asarray(rows, dtype=float)
        with warnings.catch_warnings():  # a class no model could be scored on stays NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            class_accuracy = np.nanmean(np.asarray(per_class, dtype=float), axis=0)
        return Scores(float(scores[:, 0].mean()), float(scores[:, 1].mean()), class_accuracy)

    def evaluation_description(self) -> str | None:
        if not self.params.dtd:
            return super().evaluation_description()
        which = "latest cohort's" if self.params.eval_clients == "cohort" else "every client's"
        where = ("each on its client's label distribution (class accuracies of the test set weighted by P_k)"
                 if self.params.eval_on == "local" else "each on the whole test set")
        return f"mean over the {which} auxiliary models, {where}"

    def _local_scores(self, evaluate_fn: Callable[..., tuple[float, float]],
                      pairs: list[tuple[int | None, nn.Module]], x: torch.Tensor, y: torch.Tensor,
                      batch_size: int) -> tuple[list[tuple[float, ...]], list[np.ndarray]]:
        """(accuracy, loss) of each model on its client's label distribution (``eval_on="local"``),
        and each model's accuracy per class.

        Per class n the model is scored on the test images of class n; the client's score is the
        P_k-weighted mean over the classes it holds that the test set has (P_k renormalised over
        them; on the whole test set if it has none of them).  The initial model (client ``None``)
        is scored on the pooled distribution of all clients.  Every class is scored (for
        ``classes.csv``), so each model sees the test set once."""
        counts = self.setup.client_label_counts.double().cpu().numpy()
        n_classes = self.setup.num_classes
        by_class = {}  # class -> its test images, sliced once for all the models
        for n in range(n_classes):
            mask = y == n
            if bool(mask.any()):
                by_class[n] = (x[mask], y[mask])
        out: list[tuple[float, ...]] = []
        per_class: list[np.ndarray] = []
        for k, model in pairs:
            p = counts[k] if k is not None else counts.sum(axis=0)
            class_scores = {n: tuple(evaluate_fn(model, *by_class[n], batch_size)) for n in by_class}
            acc = np.full(n_classes, np.nan)
            for n, (a, _) in class_scores.items():
                acc[n] = a
            per_class.append(acc)
            held = [n for n in by_class if p[n] > 0]
            if not held:  # none of the client's classes is in the test set: score on all of it
                out.append(tuple(evaluate_fn(model, x, y, batch_size)))
                continue
            scores = np.array([class_scores[n] for n in held], dtype=float)
            w = p[held]
            out.append(tuple(w @ scores / w.sum()))
        return out, per_class

    def evaluation_pairs(self) -> list[tuple[int | None, nn.Module]]:
        """(client, model) pairs :meth:`evaluate` averages the scores of; BESplit-G: the global
        model (client ``None``); BESplit-A: the auxiliary models, or the initial one (``None``)."""
        if not self.params.dtd:
            return [(None, self.global_model())]
        ks = self.last_finished if self.params.eval_clients == "cohort" else sorted(self.aux_models)
        ks = [k for k in ks if k in self.aux_models]
        return [(k, self.aux_models[k]) for k in ks] if ks else [(None, self._new_aux())]

    def extra_state(self) -> dict[str, Any]:
        """Round counter, client state records (as float64 tensors, so a checkpoint loads with
        ``torch.load(weights_only=True)``) and the auxiliary models."""
        return {"round": self._round, "last_finished": list(self.last_finished),
                "records": {k: {"evidence": torch.tensor(r.evidence), "counts": torch.tensor(r.counts),
                                "u_ale": torch.tensor(r.u_ale), "u_epi": torch.tensor(r.u_epi),
                                "last_round": r.last_round} for k, r in self.records.items()},
                "aux_head_init": None if self._aux_head_init is None else self._aux_head_init.state_dict(),
                "aux_models": {k: m.state_dict() for k, m in self.aux_models.items()}}

    def load_extra_state(self, state: Mapping[str, Any]) -> None:
        self._round = int(state["round"])
        self.last_finished = [int(k) for k in state["last_finished"]]
        self.records = {int(k): _record_of(r) for k, r in state["records"].items()}
        if self._aux_head_init is not None and state["aux_head_init"] is not None:
            self._aux_head_init.load_state_dict(state["aux_head_init"])
        self.aux_models = {}
        for k, s in state["aux_models"].items():
            model = self._new_aux()
            model.load_state_dict(s)
            self.aux_models[int(k)] = model

    # -- round -------------------------------------------------------------------------------------
    def round_process(self, ctx: RoundContext, cohort: np.ndarray) -> SimSteps[None]:
        self._round += 1
        self._fresh = {}
        yield from super().round_process(ctx, cohort)
        self._commit_records()  # records of clients that took part but were not aggregated

    def distribute(self, ctx: RoundContext, clients: list[int]) -> SimSteps[dict[int, nn.Module]]:
        local = yield from super().distribute(ctx, clients)
        if self.params.dtd:
            for k in clients:  # first participation: W_Ae from the received w_c (on the device)
                if k not in self.aux_models:
                    self.aux_models[k] = nn.Sequential(copy.deepcopy(local[k]),
                                                       cast(nn.Module, copy.deepcopy(self._aux_head_init)))
        return local

    def _commit_records(self) -> None:
        for k, batches in self._fresh.items():
            fresh = bt.StateRecord.empty(self.setup.num_classes)
            fresh.accumulate(torch.cat([a for a, _ in batches]), torch.cat([y for _, y in batches]),
                             self.params.epistemic)
            self.records[k] = bt.ema_update(self.records.get(k), fresh, self.params.ema_beta, self._round)
        self._fresh = {}

    def _weights(self, clients: list[int]) -> np.ndarray:
        if not self.params.ea:
            return self.setup.client_data_sizes[clients].astype(float)
        empty = bt.StateRecord.empty(self.setup.num_classes)
        return bt.ea_weights([self.records.get(k, empty) for k in clients], self.params.eps,
                             self.params.uncertainty_reduce)

    def aggregate(self, cohort: np.ndarray, local: dict[int, nn.Module],
                  servers: dict[int, nn.Module] | None) -> None:
        """EMA of the records (eq. 6), then both sides averaged with the EA weights (eq. 10)."""
        self._commit_records()
        clients = cohort.tolist()
        self.last_finished = clients
        w = self._weights(clients)
        self.client_model.load_state_dict(weighted_average([local[k].state_dict() for k in clients], w))
        assert servers is not None  # BCCServer is per-client: it made the copies
        self.server_model.load_state_dict(weighted_average([servers[k].state_dict() for k in clients], w))

    # -- BCC plan ------------------------------------------------------------------------------------
    def plan_bcc(self, clients: list[int]) -> tuple[list[tuple[int, int]], Share]:
        """Pairs of the round and, per ordered pair (i, j), {class: rho} of i's rows sent to W_S,j."""
        known = [k for k in clients if k in self.records and self.records[k].counts.sum() > 0]
        if not self.params.bcc or len(known) < 2:
            return [], {}
        total = cast(np.ndarray, sum(r.counts for r in self.records.values()))  # known: records exist
        p_g = total / total.sum()
        dists = {k: self.records[k].counts / self.records[k].counts.sum() for k in known}
        biased = bt.biased_clients({k: bt.js_divergence(dists[k], p_g) for k in known})
        pairs = bt.greedy_matching(biased, dists, p_g)
        w = dict(zip(known, self._weights(known), strict=True))
        share: Share = {}
        for i, j in pairs:
            for a, b in ((i, j), (j, i)):
                share[(a, b)] = {int(n): bt.transfer_ratio(dists[a][n], dists[b][n], p_g[n], w[a], w[b],
                                                            self.params.rho_max)
                                 for n in bt.overrepresented_classes(dists[a], dists[b])}
        return pairs, share

    @staticmethod
    def shared_rows(labels: torch.Tensor, ratios: dict[int, float]) -> torch.Tensor:
        """Rows of a batch shared with the partner: floor(rho_n n_c) first rows of each class n."""
        if not ratios:
            return torch.zeros(0, dtype=torch.int64, device=labels.device)
        y = labels.cpu()  # one host copy of B_k labels, not one device sync per shared class
        picked = []
        for n, rho in sorted(ratios.items()):
            rows = torch.nonzero(y == n).flatten()
            picked.append(rows[:int(np.floor(rho * len(rows) + 1e-9))])
        return torch.cat(picked).to(labels.device)

    # -- server --------------------------------------------------------------------------------------
    def _server_loss(self, k: int, logits: torch.Tensor, labels: torch.Tensor, n_own: int) -> torch.Tensor:
        """Evidential loss (eq. 5); the first ``n_own`` rows go into client k's fresh record."""
        alpha = bt.evidence(logits, self.params.evidence) + 1
        self._fresh.setdefault(k, []).append((alpha[:n_own].detach(), labels[:n_own].detach()))
        return bt.evidential_loss(alpha, labels, bt.annealing(self._round, self.params.anneal_rounds))

    def per_client_loss(self, k: int, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self._server_loss(k, logits, labels, len(labels))

    def server_on_activations(self, server: nn.Module, upload: ClientActivations,
                              want_reply: bool) -> Reply | None:
        """Evidential step of one client's copy W_S,k; the reply carries the teacher logits (DTD)."""
        a_k = upload.activations.requires_grad_(True)
        logits = server(a_k)
        self.per_client_loss(upload.client, logits, upload.labels).backward()
        self.optimizer_step(self.server_side_optimizer(server, upload.client))
        return self._reply(cast(torch.Tensor, a_k.grad), logits)  # backward filled it

    def server_on_pair(self, servers: dict[int, nn.Module], a: ClientActivations, b: ClientActivations,
                       a_to_b: torch.Tensor, b_to_a: torch.Tensor) -> tuple[Reply, Reply]:
        """BCC step of a matched pair (module docstring, step 3): W_S,a on A_a plus the rows
        ``b_to_a`` of A_b, W_S,b symmetrically, one backward; each shared row's gradient goes to
        the client it came from."""
        i, j = a.client, b.client
        a_i, a_j = a.activations.requires_grad_(True), b.activations.requires_grad_(True)
        y_i, y_j = a.labels, b.labels
        with self.copy_stream(i):  # each copy's dropout from its own client's stream
            logits_i = servers[i](torch.cat([a_i, a_j[b_to_a]]))
        with self.copy_stream(j):
            logits_j = servers[j](torch.cat([a_j, a_i[a_to_b]]))
        loss = (self._server_loss(i, logits_i, torch.cat([y_i, y_j[b_to_a]]), len(y_i))
                + self._server_loss(j, logits_j, torch.cat([y_j, y_i[a_to_b]]), len(y_j)))
        loss.backward()
        self.optimizer_step(self.server_side_optimizer(servers[i], i))  # each copy its own optimizer
        self.optimizer_step(self.server_side_optimizer(servers[j], j))
        # backward filled both gradients
        return (self._reply(cast(torch.Tensor, a_i.grad), logits_i[:len(y_i)]),
                self._reply(cast(torch.Tensor, a_j.grad), logits_j[:len(y_j)]))

    def _reply(self, grad: torch.Tensor, logits: torch.Tensor) -> Reply:
        """G_k, with the server's logits for the batch as KD-G teacher when the clients distil."""
        return Reply(grad, {"teacher_logits": logits.detach()} if self.params.dtd else {})

    # -- client --------------------------------------------------------------------------------------
    def client_on_reply(self, ctx: RoundContext, step: ClientStep, reply: Reply) -> SimSteps[None]:
        """Backward of G_k, then (BESplit-A) one auxiliary DTD step on the same batch."""
        yield from super().client_on_reply(ctx, step, reply)
        if self.params.dtd:
            teacher = reply.extras["teacher_logits"]
            yield from self.client_compute(ctx, step, "aux_step", lambda: self._aux_step(step, teacher))

    def _aux_step(self, step: ClientStep, teacher: torch.Tensor) -> None:
        """Eq. (18): KD-C from this batch's client-side activations, KD-G from the teacher logits."""
        assert step.activations is not None  # client_forward set it before the upload
        aux = cast(nn.Sequential, self.aux_models[step.client])  # (client side, head), made by distribute
        z_c = step.activations.detach()
        z_ae = aux[0](step.x)
        p = self.params
        loss = bt.dtd_loss(aux[1](z_ae), step.y, z_c, z_ae, teacher, p.tau, p.lambda_c, p.lambda_g,
                           bt.annealing(self._round, p.anneal_rounds), p.evidence, p.normalise_relations)
        loss.backward()
        self.optimizer_step(self.client_optimizer(step.client, aux.parameters(), name="aux"))


class BCCServer(PerClientServer):
    """SplitFedV1's per-client server copies, with BESplit's matched pairs stepped together.

    At the round start the plan comes from :meth:`BESplit.plan_bcc`; every iteration each pair
    (i, j) is one server job that waits for both uploads, and each unpaired client one job."""

    def start_server(self, algo: ServerSide, rnd: SplitRound) -> list[simpy.Process]:
        besplit = cast(BESplit, algo)  # this mode is BESplit's own
        servers = rnd.servers
        assert servers is not None  # server_copies made them
        pairs, share = besplit.plan_bcc(rnd.clients)
        pair_of = {k: pair for pair in pairs for k in pair}
        jobs = []
        for t in range(rnd.exchange.iterations):
            iterating = set(rnd.exchange.iterating(t, rnd.clients))
            for i, j in pairs:
                if i in iterating and j in iterating:
                    jobs.append(rnd.ctx.process(self._serve_pair(besplit, rnd, t, i, j, share)))
            for k in rnd.clients:  # unpaired, or its partner has no iteration t (local epochs)
                if k in iterating and not (k in pair_of and set(pair_of[k]) <= iterating):
                    jobs.append(rnd.ctx.process(self.serve(algo, rnd, servers[k], t, k)))
        return jobs

    def _serve_pair(self, algo: BESplit, rnd: SplitRound, t: int, i: int, j: int, share: Share) -> SimSteps[None]:
        """One BCC job of a pair at iteration t; if one upload is lost the other is stepped alone."""
        servers = rnd.servers
        assert servers is not None  # server_copies made them
        got = {i: (yield rnd.exchange.upload(t, i)), j: (yield rnd.exchange.upload(t, j))}
        if isinstance(got[i], Lost) or isinstance(got[j], Lost):
            for k in (i, j):
                if not isinstance(got[k], Lost):
                    yield from self.step_and_answer(algo, rnd, servers[k], t, got[k])
            return
        rnd.activations_ready()
        to_j = algo.shared_rows(got[i].labels, share.get((i, j), {}))  # rows of i's batch for W_S,j
        to_i = algo.shared_rows(got[j].labels, share.get((j, i), {}))
        n_samples = len(got[i].labels) + len(got[j].labels) + len(to_i) + len(to_j)
        # with edge servers the pair's job runs where client i's state is (our choice: one job, one place)
        reply_i, reply_j = yield from algo.server_compute(
            rnd.ctx, "server_step", n_samples, lambda: algo.server_on_pair(servers, got[i], got[j], to_j, to_i),
            client=i)
        rnd.exchange.answer(t, i, reply_i)
        rnd.exchange.answer(t, j, reply_j)


@ALGORITHMS.register("besplit_g")
class BESplitG(BESplit):
    """BESplit-G: EA + BCC, reports the global model."""

    class Params(BESplit.Params):
        dtd: Annotated[bool, FIXED] = False

    params: Params


@ALGORITHMS.register("besplit_a")
class BESplitA(BESplit):
    """BESplit-A: EA + BCC + DTD, reports the clients' auxiliary models."""

    class Params(BESplit.Params):
        dtd: Annotated[bool, FIXED] = True

    params: Params
