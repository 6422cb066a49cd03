"""Loss terms, state updates and model surgery of the federated-learning baselines.

Pure functions on tensors (no engine, no algorithm state), each tested alone against its written
formula.  The algorithms (``fedprox.py``, ``feddyn.py``, ...) only wire them into FedAvg's hooks.

References
----------
* FedProx — Li et al., "Federated Optimization in Heterogeneous Networks", MLSys 2020, eq. (2).
* FedDyn — Acar et al., "Federated Learning Based on Dynamic Regularization", ICLR 2021, Alg. 1.
* FedDecorr — Shi et al., "Towards Understanding and Mitigating Dimensional Collapse in
  Heterogeneous Federated Learning", ICLR 2023, eq. (5).
* FedLC — Zhang et al., "Federated Learning with Label Distribution Skew via Logits
  Calibration", ICML 2022, eq. (9) (as implemented by the authors: softmax over all classes).
* FedNTD — Lee et al., "Preservation of the Global Knowledge by Not-True Distillation in
  Federated Learning", NeurIPS 2022, eqs. (4)-(5).
* FedConcat — Diao, Li and He, "Exploiting Label Skews in Federated Learning with Model
  Concatenation", AAAI 2024 (K-means on label distributions, concatenated encoders).
* FedVLS — Guo et al., "Exploring Vacant Classes in Label-Skewed Federated Learning", AAAI 2025,
  eqs. (2)-(6) (``/work/shared/papers/fedvls-aaai.md``).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.kit.checks import check_choice


# -- FedProx ---------------------------------------------------------------------------------------
def proximal_term(params: Iterable[torch.Tensor], global_params: Iterable[torch.Tensor], mu: float) -> torch.Tensor:
    """FedProx's proximal term ``mu/2 * sum ||w - w^t||^2`` over all parameter tensors.

    ``global_params`` (the broadcast global weights w^t) are constants (no gradient).
    """
    terms = [((p - g.detach()) ** 2).sum() for p, g in zip(params, global_params, strict=True)]
    return 0.5 * mu * torch.stack(terms).sum()


# -- FedDyn ----------------------------------------------------------------------------------------
def flat(params: Iterable[torch.Tensor]) -> torch.Tensor:
    """All tensors flattened and concatenated into one vector (parameter order)."""
    return torch.cat([p.reshape(-1) for p in params])


def feddyn_regularizer(params: Sequence[torch.Tensor], global_params: Sequence[torch.Tensor] | torch.Tensor,
                       grad_state: torch.Tensor, alpha: float) -> torch.Tensor:
    """FedDyn's additions to client k's loss (Acar et al., Alg. 1, line 5):
    ``- <grad L_k(theta_k^{t-1}), theta> + alpha/2 ||theta - theta^{t-1}||^2``.

    Parameters
    ----------
    params : the local model's parameters theta (with gradient)
    global_params : the server's model theta^{t-1} received this round (constants): its tensors, or
        them already flattened (a caller that keeps the flat vector saves a concatenation per step)
    grad_state : Tensor, shape (n_params,)
        Client k's state ``grad L_k(theta_k^{t-1})`` flattened (zeros before its first round).
    alpha : float
    """
    theta = flat(params)
    theta_g = global_params if isinstance(global_params, torch.Tensor) else flat(global_params)
    return -(grad_state.detach() * theta).sum() + 0.5 * alpha * ((theta - theta_g.detach()) ** 2).sum()


def feddyn_client_state(grad_state: torch.Tensor, local_params: torch.Tensor, global_params: torch.Tensor,
                        alpha: float) -> torch.Tensor:
    """Client k's new state (Alg. 1, line 6):
    ``grad L_k(theta_k^t) = grad L_k(theta_k^{t-1}) - alpha (theta_k^t - theta^{t-1})`` (flat vectors)."""
    return grad_state - alpha * (local_params - global_params)


def feddyn_server_state(h: torch.Tensor, local_params: Sequence[torch.Tensor] | torch.Tensor,
                        global_params: torch.Tensor, alpha: float, n_clients: int) -> torch.Tensor:
    """Server state (Alg. 1, line 9): ``h^t = h^{t-1} - alpha/m sum_{k in P_t} (theta_k^t - theta^{t-1})``,
    ``m`` the number of clients in the whole federation (not the cohort).  ``local_params``: the
    cohort's flat models, as a list or already stacked (shape ``(|P_t|, n_params)``)."""
    drift = (_stacked(local_params) - global_params).sum(dim=0)
    return h - alpha / n_clients * drift


def feddyn_server_model(local_params: Sequence[torch.Tensor] | torch.Tensor, h: torch.Tensor,
                        alpha: float) -> torch.Tensor:
    """New server model (Alg. 1, line 10): ``theta^t = 1/|P_t| sum_{k in P_t} theta_k^t - h^t / alpha``
    (``local_params`` as in :func:`feddyn_server_state`)."""
    return _stacked(local_params).mean(dim=0) - h / alpha


def _stacked(vectors: Sequence[torch.Tensor] | torch.Tensor) -> torch.Tensor:
    """Flat vectors as one ``(n, n_params)`` tensor: stacked, unless they already are."""
    return vectors if isinstance(vectors, torch.Tensor) else torch.stack(list(vectors))


# -- FedDecorr -------------------------------------------------------------------------------------
def decorrelation_loss(features: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """FedDecorr's regulariser ``||K||_F^2 / d^2`` of a batch of representations (eq. 5).

    Each of the d feature dimensions is standardised over the batch (zero mean, unit variance,
    population variance plus ``eps``), ``K = Z^T Z / n`` is their correlation matrix (d x d), and the
    loss is its squared Frobenius norm divided by d^2.  The diagonal of K is constant (= 1 up to
    ``eps``) so only the off-diagonal correlations carry gradient.  A batch of one sample has no
    correlation: the loss is 0.

    Parameters
    ----------
    features : Tensor, shape (n, d)
    """
    n, d = features.shape
    if n < 2:
        return features.sum() * 0.0
    z = features - features.mean(dim=0, keepdim=True)
    z = z / torch.sqrt(z.pow(2).mean(dim=0, keepdim=True) + eps)
    corr = z.t() @ z / n
    return corr.pow(2).sum() / (d * d)


# -- FedLC -----------------------------------------------------------------------------------------
def logit_calibrated_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, class_counts: torch.Tensor,
                                   tau: float) -> torch.Tensor:
    """FedLC's calibrated loss: cross-entropy of ``s_c - tau * n_{k,c}^{-1/4}``, batch mean.

    ``n_{k,c}`` are client k's local sample counts per class.  A class the client does not hold
    (``n = 0``) gets ``-inf``: zero probability and no gradient, as in the authors' code where
    ``pow(0, -1/4) = inf``.  The labels present always have ``n > 0`` so the loss stays finite.

    Parameters
    ----------
    logits : Tensor, shape (n, C)
    labels : LongTensor, shape (n,)
    class_counts : Tensor, shape (C,)
    tau : float
    """
    shift = tau * class_counts.to(logits.dtype).pow(-0.25)
    if tau == 0:
        shift = torch.zeros_like(shift)
    return F.cross_entropy(logits - shift, labels)


# -- FedNTD ----------------------------------------------------------------------------------------
def not_true_logits(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Logits with the true class of each row removed, shape (n, C - 1), class order kept."""
    n, c = logits.shape
    keep = torch.ones_like(logits, dtype=torch.bool)
    keep[torch.arange(n, device=logits.device), labels] = False
    return logits[keep].reshape(n, c - 1)


def not_true_distillation_loss(local_logits: torch.Tensor, global_logits: torch.Tensor, labels: torch.Tensor,
                               tau: float) -> torch.Tensor:
    """FedNTD's L_NTD: ``tau^2 * mean_i KL( q~_g^tau(x_i) || q~_l^tau(x_i) )`` over the not-true classes.

    ``q~^tau`` is the softmax at temperature ``tau`` of the logits without the true class (eq. 4);
    the global model's prediction is the (constant) target.

    Parameters
    ----------
    local_logits, global_logits : Tensor, shape (n, C)
    labels : LongTensor, shape (n,)
    tau : float, > 0
    """
    log_q_local = F.log_softmax(not_true_logits(local_logits, labels) / tau, dim=1)
    q_global = F.softmax(not_true_logits(global_logits.detach(), labels) / tau, dim=1)
    return tau ** 2 * F.kl_div(log_q_local, q_global, reduction="batchmean")


# -- features / classifier of a SplittableModel ---------------------------------------------------
def _blocks(model: nn.Module) -> nn.ModuleList:
    """``model.blocks`` of a :class:`~sfl_sim.models.split.SplittableModel` (typed as such)."""
    return cast(nn.ModuleList, model.blocks)


def classifier_layer(model: nn.Module) -> nn.Linear:
    """The last ``nn.Linear`` of ``model``'s last block: the classifier (its input is the representation).

    Raises
    ------
    ValueError
        If the last block is neither an ``nn.Linear`` nor an ``nn.Sequential`` ending with one.
    """
    last = _blocks(model)[-1]
    if isinstance(last, nn.Linear):
        return last
    if isinstance(last, nn.Sequential) and len(last) > 0 and isinstance(last[-1], nn.Linear):
        return last[-1]
    raise ValueError(f"model {getattr(model, 'name', type(model).__name__)!r}: the last block must be an nn.Linear "
                     f"or an nn.Sequential ending with one (the classifier); got {type(last).__name__}")


def features_and_logits(model: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward pass of a SplittableModel returning ``(representation, logits)``.

    The representation is the input of the classifier (:func:`classifier_layer`): the output of all
    blocks but the last, then of the last block without its final Linear (for AlexNet: the 256-d
    output of the second hidden FC layer's ReLU), flattened to (n, d).
    """
    head = classifier_layer(model)
    blocks = _blocks(model)
    for block in blocks[:-1]:
        x = block(x)
    last = blocks[-1]
    if last is not head:
        for layer in list(cast(nn.Sequential, last))[:-1]:  # classifier_layer: a Sequential ending with head
            x = layer(x)
    feats = x.reshape(x.shape[0], -1)
    return feats, head(feats)


class FeatureExtractor(nn.Module):
    """A SplittableModel without its classifier: ``forward(x)`` is :func:`features_and_logits`'s representation."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        head = classifier_layer(model)
        blocks = _blocks(model)
        last = blocks[-1]
        layers: list[nn.Module] = list(blocks[:-1])
        if last is not head:
            layers += list(cast(nn.Sequential, last))[:-1]  # classifier_layer: a Sequential ending with head
        self.body = nn.Sequential(*layers)
        self.out_features = head.in_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return y.reshape(y.shape[0], -1)


class ConcatenatedModel(nn.Module):
    """FedConcat's model: ``head(concat_j encoder_j(x))`` over the clusters' encoders.

    The encoders are frozen: no gradient, and always in eval mode (``train()`` only switches the
    head), so their features are deterministic.
    """

    def __init__(self, encoders: Sequence[nn.Module], head: nn.Linear) -> None:
        super().__init__()
        self.encoders = nn.ModuleList(encoders)
        self.head = head
        for p in self.encoders.parameters():
            p.requires_grad_(False)
        self.encoders.eval()

    def train(self, mode: bool = True) -> ConcatenatedModel:
        super().train(mode)
        self.encoders.eval()
        return self

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([enc(x) for enc in self.encoders], dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def averaged_concat_head(heads: Sequence[nn.Linear]) -> nn.Linear:
    """Linear layer on the concatenated features whose output is the mean of the heads' logits:
    ``W = [W_1, ..., W_J] / J``, ``b = mean_j b_j``."""
    j = len(heads)
    out = nn.Linear(sum(h.in_features for h in heads), heads[0].out_features).to(heads[0].weight.device)
    with torch.no_grad():
        out.weight.copy_(torch.cat([h.weight for h in heads], dim=1) / j)
        out.bias.copy_(torch.stack([h.bias for h in heads]).mean(dim=0))
    return out


# -- FedConcat clustering --------------------------------------------------------------------------
def kmeans_label_clusters(distributions: np.ndarray, n_clusters: int, iterations: int = 100) -> np.ndarray:
    """Cluster clients by their label distributions with K-means (Lloyd), deterministically.

    Centres start by farthest-point traversal from client 0 (no randomness: the partition, which
    is seeded, fully determines the clusters); an emptied cluster is re-seeded with the point
    farthest from its centre.

    Parameters
    ----------
    distributions : ndarray, shape (K, N)
        Each client's label distribution (rows sum to 1).
    n_clusters : int, 1 <= n_clusters <= K

    Returns
    -------
    ndarray of int64, shape (K,), cluster of every client, clusters numbered 0..n_clusters-1.
    """
    x = np.asarray(distributions, dtype=float)
    k = x.shape[0]
    if not 1 <= n_clusters <= k:
        raise ValueError(f"n_clusters={n_clusters!r} is invalid; allowed: an int in 1..{k} (the number of clients)")
    centres = [x[0]]
    for _ in range(1, n_clusters):
        dist = np.min(((x[:, None, :] - np.asarray(centres)[None]) ** 2).sum(-1), axis=1)
        centres.append(x[int(np.argmax(dist))])
    c = np.asarray(centres)
    assign = np.zeros(k, dtype=np.int64)
    for _ in range(iterations):
        d2 = ((x[:, None, :] - c[None]) ** 2).sum(-1)
        new = np.argmin(d2, axis=1).astype(np.int64)
        for j in range(n_clusters):
            if not np.any(new == j):  # re-seed an empty cluster with the worst-fit point of a shared cluster
                sizes = np.bincount(new, minlength=n_clusters)
                fit = np.where(sizes[new] > 1, d2[np.arange(k), new], -1.0)
                new[int(np.argmax(fit))] = j
        if np.array_equal(new, assign) and _ > 0:
            break
        assign = new
        c = np.stack([x[assign == j].mean(axis=0) for j in range(n_clusters)])
    return assign


# -- FedVLS ----------------------------------------------------------------------------------------
def prior_calibrated_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
    """FedVLS's L_cal (eq. 2): ``-mean_i log( p(y_i) e^{f_i[y_i]} / sum_c p(c) e^{f_i[c]} )``.

    Equivalently the cross-entropy of ``f + log p`` (the paper's appendix eqs. 8-12).  ``p`` is the
    client's label distribution over its whole local data; a vacant class (``p(c) = 0``) drops
    out of the denominator (``log 0 = -inf``: zero probability, no gradient), exactly as eq. 2
    weights it by 0.  The labels present have ``p > 0``, so the loss stays finite.

    Parameters
    ----------
    logits : Tensor, shape (n, C)
    labels : LongTensor, shape (n,)
    prior : Tensor, shape (C,), the client's label distribution (sums to 1)
    """
    return F.cross_entropy(logits + torch.log(prior.to(logits.dtype)), labels)


def vacant_class_distillation_loss(local_logits: torch.Tensor, global_logits: torch.Tensor,
                                   vacant: torch.Tensor) -> torch.Tensor:
    """FedVLS's L_dis (eq. 3): ``mean_i KL( q^g(x_i) || q(x_i) )`` over the vacant classes O.

    ``q`` and ``q^g`` are the softmax (temperature 1, as in eq. 3) of the local and global model's
    logits restricted to O, the classes absent from the client's local data; the global model's
    prediction is the (constant) target.  Eq. 3 as printed reads ``sum q^g log(q / q^g)``, the
    *negative* KL; the text calls it the KL-divergence loss to minimise, so the sign is taken as a
    typo (``KL(q^g || q) = sum q^g log(q^g / q)``, as ``nn.KLDivLoss`` in the authors' code).
    With fewer than two vacant classes there is nothing to distil: the loss is 0 (a softmax over
    one class is 1 for both models).

    Parameters
    ----------
    local_logits, global_logits : Tensor, shape (n, C)
    vacant : BoolTensor, shape (C,), True for the classes the client lacks
    """
    if int(vacant.sum()) < 2:
        return local_logits.sum() * 0.0
    log_q_local = F.log_softmax(local_logits[:, vacant], dim=1)
    q_global = F.softmax(global_logits.detach()[:, vacant], dim=1)
    return F.kl_div(log_q_local, q_global, reduction="batchmean")


def logit_suppression_per_class(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """FedVLS's L^c_logit of every class c (eq. 4): ``log( (1/n) sum_i I(y_i != c) e^{f_i[c]} )``.

    The expectation is over the whole minibatch of n samples (Algorithm 1, line 16), the indicator
    inside it, computed stably with ``logsumexp``.  A class that every sample of the batch carries
    as its label has an empty sum (``log 0``): its entry is ``-inf`` here, and
    :func:`logit_suppression_loss` leaves it out.

    Parameters
    ----------
    logits : Tensor, shape (n, C)
    labels : LongTensor, shape (n,)

    Returns
    -------
    Tensor, shape (C,)
    """
    n, c = logits.shape
    not_label = labels.reshape(-1, 1) != torch.arange(c, device=logits.device).reshape(1, -1)
    has = not_label.any(dim=0)
    # Columns with no term get zeros instead of all -inf, so logsumexp's backward stays finite (no NaN).
    masked = logits.masked_fill(~not_label & has.reshape(1, -1), float("-inf"))
    lse = torch.logsumexp(masked, dim=0) - float(np.log(n))
    return torch.where(has, lse, torch.full_like(lse, float("-inf")))


def logit_suppression_loss(logits: torch.Tensor, labels: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
    """FedVLS's L_logit (eq. 5): ``sum_c p(c) L^c_logit`` (:func:`logit_suppression_per_class`).

    ``p`` is the client's label distribution, so vacant classes (``p = 0``) do not count and the
    logits of majority classes on other classes' samples are pushed down hardest.  Classes with
    ``p(c) = 0`` or an empty indicator sum in this batch (all its samples are of class c)
    contribute 0 and no gradient.

    Parameters
    ----------
    logits : Tensor, shape (n, C)
    labels : LongTensor, shape (n,)
    prior : Tensor, shape (C,)
    """
    per_class = logit_suppression_per_class(logits, labels)
    p = prior.to(logits.dtype)
    use = torch.isfinite(per_class) & (p > 0)
    return (p[use] * per_class[use]).sum() + logits.sum() * 0.0


#: FedVLS's two forms of L_logit: eqs. 4-5 as printed, and the authors' released code.
SUPPRESSION_FORMS = ("paper", "released")


def logit_suppression_loss_released(logits: torch.Tensor, labels: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
    """FedVLS's L_logit as the authors' released code computes it (``clientvls.py``, ``new_LADEloss``).

    ``sum_c p(c) [ log sum_i exp(s_i[c]) - log n ]`` with
    ``s_i[c] = (f_i[c] - log(p(c) + 1e-9) + log(1/C)) * I(y_i != c)``.  Two differences from eqs. 4-5
    (:func:`logit_suppression_loss`): the logits are prior-debiased first, and a sample's own label
    entry is *zeroed* rather than left out, so it adds ``e^0 = 1`` to the sum.  That bounds the term
    below (by ``sum_c p(c) log(n_c / n)``), where eqs. 4-5 are unbounded below and, with momentum SGD
    over several local epochs, drive the global model to one class.

    Parameters
    ----------
    logits : Tensor, shape (n, C)
    labels : LongTensor, shape (n,)
    prior : Tensor, shape (C,), the client's label distribution over its local data
    """
    n, c = logits.shape
    p = prior.to(logits.dtype)
    not_label = labels.reshape(-1, 1) != torch.arange(c, device=logits.device).reshape(1, -1)
    debiased = logits - torch.log(p + 1e-9) + float(np.log(1.0 / c))
    spread = debiased * not_label.to(logits.dtype)
    second = torch.logsumexp(spread, dim=0) - float(np.log(n))
    return (p * second).sum()


def fedvls_objective(local_logits: torch.Tensor, global_logits: torch.Tensor, labels: torch.Tensor,
                     prior: torch.Tensor, lam: float, suppression_weight: float = 1.0,
                     suppression_form: str = "paper") -> torch.Tensor:
    """FedVLS's local objective (eq. 6): ``L_cal + lam * L_dis + suppression_weight * L_logit``.

    ``suppression_weight = 1`` is eq. 6 / Algorithm 1 line 18.  The vacant classes are those with
    ``prior == 0``.  ``suppression_form`` picks L_logit: ``"paper"`` (eqs. 4-5,
    :func:`logit_suppression_loss`) or ``"released"`` (the authors' code,
    :func:`logit_suppression_loss_released`).

    Parameters
    ----------
    local_logits, global_logits : Tensor, shape (n, C)
    labels : LongTensor, shape (n,)
    prior : Tensor, shape (C,), the client's label distribution over its local data
    lam : float, >= 0
    suppression_weight : float, >= 0
    """
    loss = prior_calibrated_cross_entropy(local_logits, labels, prior)
    if lam != 0:
        loss = loss + lam * vacant_class_distillation_loss(local_logits, global_logits, prior == 0)
    if suppression_weight != 0:
        check_choice("suppression_form", suppression_form, SUPPRESSION_FORMS)
        term = logit_suppression_loss_released if suppression_form == "released" else logit_suppression_loss
        loss = loss + suppression_weight * term(local_logits, labels, prior)
    return loss
