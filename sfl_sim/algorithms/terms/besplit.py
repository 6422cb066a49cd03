"""The pure mathematics of BESplit (besplit.txt §3.2, §4, Appendix D), free of any simulation.

* Dirichlet evidential framework: evidence ``e = phi(logits)``, ``alpha = e + 1``, strength
  ``S = sum alpha``; aleatoric uncertainty (eq. 3), epistemic uncertainty (eq. 4), evidential
  loss with the annealed KL term (eq. 5).
* Evidential Aggregation: per-client state records (Table 6: E, M, U_ale, U_epi), their
  staleness-aware EMA (eq. 6), per-class normalisation (eq. 7) and aggregation weights
  (eqs. 8-10).
* Bias-Compensated Collaboration: Jensen-Shannon divergence to the global label distribution,
  largest-gap threshold (eq. 11), over-represented classes (eq. 13), edge weights (Appendix D
  eq. 33), greedy matching, transfer ratio rho (eqs. 31-32 and case 3).
* Dual-Teacher Distillation: relational matrices (eq. 16), KD-C (eq. 17), KD-G (eq. 15), total
  auxiliary loss (eq. 18).

Every function works on a batch and returns batch means unless its docstring says otherwise.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

EVIDENCE_FUNCTIONS = ("softplus", "relu", "exp")


# -- Dirichlet evidential framework -------------------------------------------------------------
def evidence(logits: torch.Tensor, kind: str = "softplus") -> torch.Tensor:
    """Non-negative evidence e = phi(logits) (eq. 20); ``exp`` is clamped at logits 10 for stability."""
    if kind == "softplus":
        return F.softplus(logits)
    if kind == "relu":
        return F.relu(logits)
    if kind == "exp":
        return torch.exp(torch.clamp(logits, max=10.0))
    raise ValueError(f"evidence={kind!r}; allowed: {', '.join(EVIDENCE_FUNCTIONS)}")


def aleatoric_uncertainty(alpha: torch.Tensor) -> torch.Tensor:
    """Eq. (3): sum_i alpha_i / S [psi(S + 1) - psi(alpha_i + 1)], one value per row, shape (B,)."""
    s = alpha.sum(dim=-1, keepdim=True)
    return (alpha / s * (torch.digamma(s + 1) - torch.digamma(alpha + 1))).sum(dim=-1)


def epistemic_uncertainty(alpha: torch.Tensor) -> torch.Tensor:
    """Eq. (4), the differential entropy of Dir(alpha), one value per row, shape (B,).

    As printed, eq. (4) puts log Gamma(S) inside the sum over i; the entropy of a Dirichlet is
    ``log B(alpha) - (S - N) psi(S) - sum_i (alpha_i - 1) psi(alpha_i)`` with
    ``log B(alpha) = sum_i log Gamma(alpha_i) - log Gamma(S)`` (log Gamma(S) once).  We use the
    entropy, which is what the text defines ("the differential entropy of the Dirichlet").
    """
    s = alpha.sum(dim=-1)
    log_beta = torch.lgamma(alpha).sum(dim=-1) - torch.lgamma(s)
    return log_beta - ((alpha - 1) * (torch.digamma(alpha) - torch.digamma(s).unsqueeze(-1))).sum(dim=-1)


EPISTEMIC_MEASURES = ("entropy", "relative_entropy")


def epistemic_measure(alpha: torch.Tensor, kind: str = "relative_entropy") -> torch.Tensor:
    """The epistemic uncertainty a state record sums, one value per row, shape (B,).

    ``"entropy"``: eq. (4), the differential entropy H[Dir(alpha)].  It is negative for N >= 3
    (at most -log Gamma(N), reached by Dir(1)) and grows more negative as the model gets more
    certain, so the ratio of eq. (9) built on it gives *more* weight to the *less* certain
    client, the reverse of the text's intent ("penalize clients whose evidential predictions
    exhibit high uncertainty").  ``"relative_entropy"``: exp(H[Dir(alpha)] - H[Dir(1)]) =
    exp(-KL[Dir(alpha) || Dir(1)]) in (0, 1], the same ordering as eq. (4) mapped to a positive
    scale (1 for no evidence at all), so eq. (9) penalises uncertainty as intended."""
    if kind == "entropy":
        return epistemic_uncertainty(alpha)
    if kind == "relative_entropy":
        return torch.exp(-kl_to_uniform_dirichlet(alpha))
    raise ValueError(f"epistemic={kind!r}; allowed: {', '.join(EPISTEMIC_MEASURES)}")


def kl_to_uniform_dirichlet(alpha: torch.Tensor) -> torch.Tensor:
    """KL[Dir(p | alpha) || Dir(p | 1)] per row, shape (B,)."""
    n = alpha.shape[-1]
    s = alpha.sum(dim=-1)
    return (torch.lgamma(s) - torch.lgamma(torch.tensor(float(n), dtype=alpha.dtype, device=alpha.device))
            - torch.lgamma(alpha).sum(dim=-1)
            + ((alpha - 1) * (torch.digamma(alpha) - torch.digamma(s).unsqueeze(-1))).sum(dim=-1))


def annealing(round_index: int, anneal_rounds: int) -> float:
    """lambda_t = min(1, t / T) of eq. (5); t counts rounds from 1, T = ``anneal_rounds``."""
    return min(1.0, round_index / max(1, anneal_rounds))


def evidential_loss(alpha: torch.Tensor, labels: torch.Tensor, kl_weight: float) -> torch.Tensor:
    """Eq. (5), batch mean: sum_i y_i [psi(S) - psi(alpha_i)] + lambda_t KL[Dir(alpha~) || Dir(1)],
    alpha~ = y + (1 - y) * alpha (the evidence of the true class removed)."""
    y = F.one_hot(labels, alpha.shape[-1]).to(alpha.dtype)
    s = alpha.sum(dim=-1, keepdim=True)
    nll = (y * (torch.digamma(s) - torch.digamma(alpha))).sum(dim=-1)
    if kl_weight == 0:
        return nll.mean()
    alpha_tilde = y + (1 - y) * alpha
    return (nll + kl_weight * kl_to_uniform_dirichlet(alpha_tilde)).mean()


# -- Evidential Aggregation ---------------------------------------------------------------------
@dataclass
class StateRecord:
    """Client state record (Table 6): sums over the samples the server has seen of one client.

    Attributes
    ----------
    evidence : ndarray (N, N)
        Row i: summed evidence vectors of the samples with true label i.
    counts : ndarray (N,)
        M, samples per true label.
    u_ale, u_epi : ndarray (N,)
        Summed aleatoric / epistemic uncertainty per true label.
    last_round : int
        Round t_k of the latest update (0 for a record that has only been accumulated).
    """

    evidence: np.ndarray
    counts: np.ndarray
    u_ale: np.ndarray
    u_epi: np.ndarray
    last_round: int = 0

    @classmethod
    def empty(cls, num_classes: int) -> StateRecord:
        n = num_classes
        return cls(np.zeros((n, n)), np.zeros(n), np.zeros(n), np.zeros(n))

    def accumulate(self, alpha: torch.Tensor, labels: torch.Tensor, epistemic: str = "relative_entropy") -> None:
        """Add one batch of the server's evidential outputs (alpha = e + 1) to the sums;
        ``epistemic`` picks the measure of :func:`epistemic_measure`."""
        with torch.no_grad():
            a = alpha.detach().double()
            y = labels.detach().cpu().numpy()
            e = (a - 1).cpu().numpy()
            ale = aleatoric_uncertainty(a).cpu().numpy()
            epi = epistemic_measure(a, epistemic).cpu().numpy()
        np.add.at(self.evidence, y, e)
        np.add.at(self.counts, y, 1.0)
        np.add.at(self.u_ale, y, ale)
        np.add.at(self.u_epi, y, epi)

    def as_tuple(self) -> tuple[np.ndarray, ...]:
        return self.evidence, self.counts, self.u_ale, self.u_epi


def ema_update(stored: StateRecord | None, fresh: StateRecord, beta: float, round_index: int) -> StateRecord:
    """Eq. (6): R = beta_dec R_tk + (1 - beta_dec) R_tc, beta_dec = beta^max(1, t_c - t_k).

    A client without a stored record takes the fresh one as it is.  Returns a new record with
    ``last_round = round_index``."""
    if stored is None:
        parts = fresh.as_tuple()
    else:
        decay = beta ** max(1, round_index - stored.last_round)
        parts = tuple(decay * old + (1 - decay) * new for old, new in zip(stored.as_tuple(), fresh.as_tuple(),
                                                                          strict=True))
    evidence, counts, u_ale, u_epi = (p.copy() for p in parts)
    return StateRecord(evidence, counts, u_ale, u_epi, last_round=round_index)


def normalised_record(record: StateRecord) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Eq. (7): (E_bar, M, U_ale_bar, U_epi_bar); rows/classes with M_i = 0 are left at 0."""
    m = record.counts
    safe = np.where(m > 0, m, 1.0)
    seen = m > 0
    e_bar = np.where(seen[:, None], record.evidence / safe[:, None], 0.0)
    return e_bar, m, np.where(seen, record.u_ale / safe, 0.0), np.where(seen, record.u_epi / safe, 0.0)


def evidence_concentration(e_bar: np.ndarray, counts: np.ndarray, eps: float = 1e-8) -> float:
    """Eq. (8): Q = mean_i E_ii / (sum_j E_ij + eps), over the classes the record has seen
    (M_i > 0; the paper's mean over all N leaves the unseen rows 0/0 undefined)."""
    seen = counts > 0
    if not seen.any():
        return 0.0
    q = np.diag(e_bar)[seen] / (e_bar.sum(axis=1)[seen] + eps)
    return float(np.nan_to_num(q).mean())


def ea_weights(records: Sequence[StateRecord], eps: float = 1e-8, uncertainty_reduce: str = "sum",
               use_evidence: bool = True, use_aleatoric: bool = True, use_epistemic: bool = True) -> np.ndarray:
    """Eqs. (8)-(10): w_k = s_k / sum_j s_j, s_k = Q_k R_ale,k R_epi,k over the given records.

    ``uncertainty_reduce="sum"`` is eq. (9) as printed (sum of the per-class means over the
    classes); ``"mean"`` divides each client's sum by its number of seen classes.  The
    ``use_*`` flags drop a factor (the paper's ablations "w/o E", "w/o U_ale", "w/o U_epi").
    If every score is 0 the weights are uniform."""
    if uncertainty_reduce not in ("sum", "mean"):
        raise ValueError(f"uncertainty_reduce={uncertainty_reduce!r}; allowed: sum, mean")
    q_k: list[float] = []
    ale_k: list[float] = []
    epi_k: list[float] = []
    for r in records:
        e_bar, m, u_ale, u_epi = normalised_record(r)
        q_k.append(evidence_concentration(e_bar, m, eps))
        div = max(1, int((m > 0).sum())) if uncertainty_reduce == "mean" else 1
        ale_k.append(u_ale.sum() / div)
        epi_k.append(u_epi.sum() / div)
    q, ale, epi = np.asarray(q_k), np.asarray(ale_k), np.asarray(epi_k)
    s = np.ones(len(records))
    if use_evidence:
        s = s * q
    if use_aleatoric:
        s = s * ale.sum() / (ale + eps)
    if use_epistemic:
        s = s * epi.sum() / (epi + eps)
    total = s.sum()
    if not np.isfinite(total) or total <= 0:
        return np.full(len(records), 1.0 / len(records))
    return s / total


# -- Bias-Compensated Collaboration -------------------------------------------------------------
def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence (natural log), 0 log 0 = 0."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    m = (p + q) / 2

    def kl(a: np.ndarray, b: np.ndarray) -> float:
        mask = a > 0
        return float(np.sum(a[mask] * np.log(a[mask] / b[mask])))

    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


def biased_clients(divergences: dict[int, float]) -> list[int]:
    """Eq. (11): clients whose divergence exceeds d_(i*), i* = argmax_i d_(i+1) - d_(i) over the
    sorted divergences (the first gap on ties).  Fewer than 2 clients: none is biased."""
    if len(divergences) < 2:
        return []
    d = np.sort(np.asarray(list(divergences.values()), dtype=float))
    gaps = np.diff(d)
    if gaps.max() <= 0:
        return []
    threshold = d[int(np.argmax(gaps))]
    return sorted(k for k, v in divergences.items() if v > threshold)


def edge_weight(p_i: np.ndarray, p_j: np.ndarray, p_g: np.ndarray) -> float:
    """Appendix D eq. (33): |P_i - P_g|_1 + |P_j - P_g|_1 - |(P_i - P_g) + (P_j - P_g)|_1."""
    di, dj = np.asarray(p_i) - p_g, np.asarray(p_j) - p_g
    return float(np.abs(di).sum() + np.abs(dj).sum() - np.abs(di + dj).sum())


def greedy_matching(clients: Sequence[int], dists: dict[int, np.ndarray], p_g: np.ndarray,
                    min_weight: float = 1e-12) -> list[tuple[int, int]]:
    """Greedy maximum-weight matching over ``clients`` with eq. (33) edge weights: the heaviest
    edge whose two ends are both free, then the next...  Edges of weight <= ``min_weight`` are
    never taken.  Ties keep the order (i, j) of ``clients`` (stable sort).  Pairs come as (i, j)
    with i before j in ``clients``."""
    edges = []
    for a in range(len(clients)):
        for b in range(a + 1, len(clients)):
            i, j = clients[a], clients[b]
            edges.append((edge_weight(dists[i], dists[j], p_g), i, j))
    edges.sort(key=lambda e: -e[0])
    used: set[int] = set()
    pairs: list[tuple[int, int]] = []
    for w, i, j in edges:
        if w <= min_weight:
            break
        if i in used or j in used:
            continue
        used.update((i, j))
        pairs.append((i, j))
    return pairs


def overrepresented_classes(p_i: np.ndarray, p_j: np.ndarray) -> np.ndarray:
    """Eq. (13): C_{i->j} = {n | p_i,n > p_j,n}, as an index array."""
    return np.flatnonzero(np.asarray(p_i) > np.asarray(p_j))


def transfer_ratio(p_i_n: float, p_j_n: float, p_g_n: float, w_i: float, w_j: float, rho_max: float = 1.0,
                   tie_tol: float = 1e-12) -> float:
    """rho*_{i,j,n} of Appendix D.2 for a class n with P_i,n >= P_j,n (mass moves i -> j).

    Case 1 (w_i > w_j): (P_i,n - P_g,n) / P_i,n (eq. 31); case 2 (w_j > w_i): (P_g,n - P_j,n) /
    P_i,n (eq. 32); case 3 (|w_i - w_j| <= tie_tol): the midpoint of the case-3 interval.  The
    result is clipped to [0, rho_max] (a negative ratio means nothing to transfer)."""
    if p_i_n <= 0:
        return 0.0
    over, under = p_i_n - p_g_n, p_g_n - p_j_n
    if abs(w_i - w_j) <= tie_tol:
        rho = 0.5 * (min(over, under) + max(over, under)) / p_i_n
    elif w_i > w_j:
        rho = over / p_i_n
    else:
        rho = under / p_i_n
    return float(min(max(rho, 0.0), rho_max))


# -- Dual-Teacher Distillation ------------------------------------------------------------------
def relational_matrix(z: torch.Tensor) -> torch.Tensor:
    """Eq. (16): M^{ab} = |z^a - z^b|_2^2 over the batch (features flattened), shape (B, B)."""
    flat = z.reshape(z.shape[0], -1)
    return (flat.unsqueeze(1) - flat.unsqueeze(0)).pow(2).sum(dim=-1)


def _normalised(m: torch.Tensor) -> torch.Tensor:
    """M divided by its mean off-diagonal entry (relational KD's distance normalisation)."""
    b = m.shape[0]
    mean = m.sum() / max(1, b * (b - 1))
    return m / (mean + 1e-12)


def kd_c_loss(z_client: torch.Tensor, z_aux: torch.Tensor, tau: float, normalise: bool = False) -> torch.Tensor:
    """Eq. (17): tau^2 KL(LogSoftmax(M_C / tau), Softmax(M_Ae / tau)) in torch's ``kl_div``
    convention (first argument the log-probabilities, second the target probabilities),
    row-wise softmax, ``batchmean`` reduction:
    tau^2 / B sum_a sum_b P_Ae^{ab} (log P_Ae^{ab} - log P_C^{ab}).  ``normalise=True`` first
    divides each matrix by its mean off-diagonal entry (not in the paper; see BESplit's docstring)."""
    m_c, m_ae = relational_matrix(z_client), relational_matrix(z_aux)
    if normalise:  # squared distances of wide activations are in the thousands: scale-free version
        m_c, m_ae = _normalised(m_c), _normalised(m_ae)
    log_c = F.log_softmax(m_c / tau, dim=1)
    p_ae = F.softmax(m_ae / tau, dim=1)
    return tau ** 2 * F.kl_div(log_c, p_ae, reduction="batchmean")


def kd_g_loss(aux_logits: torch.Tensor, global_logits: torch.Tensor, tau: float) -> torch.Tensor:
    """Eq. (15): tau^2 sum_n p_g^n(tau) (log p_g^n(tau) - log p_a^n(tau)), batch mean, with
    p(tau) = softmax(logits / tau)."""
    log_pa = F.log_softmax(aux_logits / tau, dim=-1)
    log_pg = F.log_softmax(global_logits / tau, dim=-1)
    return tau ** 2 * (log_pg.exp() * (log_pg - log_pa)).sum(dim=-1).mean()


def dtd_loss(aux_logits: torch.Tensor, labels: torch.Tensor, z_client: torch.Tensor, z_aux: torch.Tensor,
             global_logits: torch.Tensor, tau: float, lambda_c: float, lambda_g: float, kl_weight: float,
             evidence_fn: str = "softplus", normalise_relations: bool = False) -> torch.Tensor:
    """Eq. (18): L_evid(alpha_a, y) + lambda_C L_KD-C + lambda_G L_KD-G."""
    alpha = evidence(aux_logits, evidence_fn) + 1
    return (evidential_loss(alpha, labels, kl_weight)
            + lambda_c * kd_c_loss(z_client, z_aux, tau, normalise_relations)
            + lambda_g * kd_g_loss(aux_logits, global_logits, tau))
