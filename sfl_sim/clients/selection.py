"""Client selection: which clients take part in a round.

A selector is a component of its own (registry :data:`SELECTORS`), so any algorithm runs with any
selector from the scenario (``clients.selection``).  When the scenario leaves it unset, the
algorithm's own choice (:attr:`sfl_sim.algorithms.Algorithm.default_selection`) is used, and
uniform selection when the algorithm has none.

Availability (``clients.availability``) reaches selectors in one place, :func:`select_online`:
when every client is online it calls ``select(n_clients, n_selected, rng)`` as always; otherwise
it asks for ``min(n_selected, online)`` clients with ``available=`` the online mask, and checks
that none of them is offline.  Every shipped selector takes ``available``; a selector of your own
needs it only with an availability model other than ``always``.
"""
from __future__ import annotations

import inspect
from typing import Annotated, Any

import numpy as np

from sfl_sim.clients.protocols import SelectorProtocol
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, NonNegative, ParamsModel, Positive
from sfl_sim.kit.registry import Registry

SELECTORS = Registry("selector", protocol=SelectorProtocol)


class Selector(Component):
    """Base of the shipped client selectors (one of one's own needs only the protocol's methods).

    Subclasses implement :meth:`select`; selectors that need to know the clients' data override
    :meth:`prepare`, which the runner calls once before the first round.
    """

    def prepare(self, client_label_counts: np.ndarray) -> None:
        """Receive the (K, N) label counts of every client's local data (no-op by default)."""

    def state_dict(self) -> dict:
        """State to checkpoint (selection history of adaptive selectors); empty by default."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (no-op by default)."""

    def select(self, n_clients: int, n_selected: int, rng: np.random.Generator,
               available: np.ndarray | None = None) -> np.ndarray:
        """Pick ``n_selected`` distinct client indices, sorted, int64, shape (n_selected,), only
        among the clients whose entry of ``available`` (a bool mask of length ``n_clients``;
        None: all) is True."""
        raise NotImplementedError


def candidates(n_clients: int, n_selected: int, available: np.ndarray | None) -> np.ndarray:
    """The bool mask of selectable clients (all when ``available`` is None), checked against
    ``n_selected`` (every selector's first line)."""
    mask = np.ones(n_clients, dtype=bool) if available is None else np.asarray(available)
    if mask.shape != (n_clients,) or mask.dtype != bool:
        raise ValueError(f"available: got {mask.dtype} {mask.shape}; allowed: a bool mask of {n_clients} clients")
    if not 1 <= n_selected <= int(mask.sum()):
        raise ValueError(f"n_selected={n_selected} must be in [1, {int(mask.sum())}] "
                         f"(the available clients of n_clients={n_clients})")
    return mask.copy()


def takes_available(selector: Any) -> bool:
    """Whether ``selector.select`` accepts the ``available`` keyword (every shipped selector does)."""
    try:
        params = inspect.signature(selector.select).parameters
    except (TypeError, ValueError):
        return False
    return "available" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def select_online(selector: Any, n_clients: int, n_selected: int, rng: np.random.Generator,
                  online: np.ndarray) -> np.ndarray:
    """The round's pick of ``selector`` among the ``online`` clients (a bool mask).

    Everyone online: the selector's plain call, so runs without availability draw exactly as
    before.  Otherwise it picks ``min(n_selected, online.sum())`` clients with ``available=online``
    (at least one client must be online).

    Raises
    ------
    ValueError
        One line when the selector picks an offline client.
    """
    online = np.asarray(online, dtype=bool)
    if online.all():
        return np.asarray(selector.select(n_clients, n_selected, rng))
    n = min(n_selected, int(online.sum()))
    picked = np.asarray(selector.select(n_clients, n, rng, available=online))
    inside = picked.astype(np.int64, copy=False) if np.issubdtype(picked.dtype, np.integer) else None
    if inside is not None and inside.size and inside.min() >= 0 and inside.max() < n_clients \
            and not online[inside].all():
        raise ValueError(f"clients.selection: {type(selector).__name__}.select picked offline client(s) "
                         f"{inside[~online[inside]].tolist()}; allowed: clients whose available entry is True")
    return picked


@SELECTORS.register("uniform")
class UniformSelection(Selector):
    """Uniform random selection without replacement, as in SCALA (Algorithm 1, line 5)."""

    def select(self, n_clients: int, n_selected: int, rng: np.random.Generator,
               available: np.ndarray | None = None) -> np.ndarray:
        if available is None:
            if not 1 <= n_selected <= n_clients:
                raise ValueError(f"n_selected={n_selected} must be in [1, n_clients={n_clients}]")
            return np.sort(rng.choice(n_clients, size=n_selected, replace=False)).astype(np.int64)
        pool = np.flatnonzero(candidates(n_clients, n_selected, available))
        return np.sort(rng.choice(pool, size=n_selected, replace=False)).astype(np.int64)


def cohort_size(n_clients: int, participation: float) -> int:
    """Number of clients per round: ``round(participation * n_clients)``, at least 1."""
    return max(1, int(round(participation * n_clients)))


def qcid(label_counts: np.ndarray) -> float:
    """Quadratic class-imbalance degree of a grouped data set (Fed-CBS, Zhang et al. 2023, eq. 2).

    ``QCID = sum_c (n_c / n - 1/N)^2`` for the grouped class counts ``n_c`` (``n = sum_c n_c``,
    N classes): 0 for a perfectly balanced group, ``1 - 1/N`` for a single class.

    Parameters
    ----------
    label_counts : ndarray, shape (N,) or (m, N)
        Class counts of the group, or of its m members (summed).
    """
    counts = np.asarray(label_counts, dtype=float)
    if counts.ndim == 2:
        counts = counts.sum(axis=0)
    total = counts.sum()
    if total <= 0:
        raise ValueError("qcid needs a group holding at least one sample")
    return float(((counts / total - 1.0 / len(counts)) ** 2).sum())


@SELECTORS.register("class_balanced")
class ClassBalancedSelection(Selector):
    """Fed-CBS class-balanced sampling (Zhang et al., ICML 2023, §4.2, Alg. 1).

    The cohort is drawn one client at a time, without replacement, so that its grouped label
    histogram has a small QCID (:func:`qcid`).  With M the clients drawn so far and beta_j rising
    linearly from ``beta_first`` (j = 1) to ``beta_last`` (j = m):

    * first client:  P(n) proportional to ``QCID({n})^{-beta_1} + exploration * sqrt(3 ln t / (2 T_n))``,
      t the selection round (1, 2, ...) and T_n how often client n was selected before (counted from 1,
      as in the authors' code) — an upper-confidence bonus that keeps rarely chosen clients coming;
    * j-th client:   P(n | M) proportional to ``QCID(M + {n})^{-beta_j}`` (the paper's ratio
      ``QCID(M)^{beta_{j-1}} / QCID(M + {n})^{beta_j}`` has a numerator that does not depend on n).

    QCID is evaluated from the (K, N) label counts given to :meth:`prepare` (the paper obtains it
    under homomorphic encryption; that exchange is not simulated).  Weights are computed in log space
    with QCID floored at ``qcid_floor`` (a perfectly balanced group would otherwise give 1/0).
    All randomness comes from the ``rng`` argument.  The selection counts T_n and the round t are
    state: :meth:`state_dict` / :meth:`load_state_dict` (the runner checkpoints them).
    """

    class Params(ParamsModel):
        """ClassBalancedSelection's parameters (what a scenario sets beside ``name``)."""

        beta_first: Annotated[Positive, Doc("Exponent of the first draw (> 0); the authors' released value.")] = 1.0
        beta_last: Annotated[Positive, Doc("Exponent of the last draw (> 0); the authors' released value.")] = 10.0
        exploration: Annotated[NonNegative, Doc(
            "Weight lambda of the exploration bonus of the first draw (>= 0; 0 turns it off).")] = 10.0
        qcid_floor: Annotated[Positive, Doc("Lower bound of QCID in the weights (> 0).")] = 1e-6

    params: Params

    def __post_init__(self) -> None:
        self.counts: np.ndarray | None = None
        self.times_selected: np.ndarray | None = None
        self.round = 0

    def prepare(self, client_label_counts: np.ndarray) -> None:
        counts = np.asarray(client_label_counts, dtype=float)
        if counts.ndim != 2 or np.any(counts < 0) or np.any(counts.sum(axis=1) <= 0):
            raise ValueError("client_label_counts must be a (K, N) array of non-negative counts, every client "
                             "holding at least one sample")
        self.counts = counts
        self.times_selected = np.ones(len(counts), dtype=np.int64)
        self.round = 0

    def state_dict(self) -> dict:
        return {"times_selected": None if self.times_selected is None else self.times_selected.tolist(),
                "round": self.round}

    def load_state_dict(self, state: dict) -> None:
        if state.get("times_selected") is not None:
            self.times_selected = np.asarray(state["times_selected"], dtype=np.int64)
        self.round = int(state["round"])

    def _log_inverse_qcid(self, group_counts: np.ndarray, beta: float) -> np.ndarray:
        """``-beta * log max(QCID, floor)`` of each row of (n, N) grouped counts."""
        p = group_counts / group_counts.sum(axis=1, keepdims=True)
        q = ((p - 1.0 / group_counts.shape[1]) ** 2).sum(axis=1)
        return -beta * np.log(np.maximum(q, self.params.qcid_floor))

    def select(self, n_clients: int, n_selected: int, rng: np.random.Generator,
               available: np.ndarray | None = None) -> np.ndarray:
        if self.counts is None or self.times_selected is None:
            raise RuntimeError("ClassBalancedSelection.select called before prepare(client_label_counts)")
        if n_clients != len(self.counts):
            raise ValueError(f"n_clients={n_clients} does not match the {len(self.counts)} clients given to prepare")
        left = candidates(n_clients, n_selected, available)
        self.round += 1
        betas = (np.linspace(self.params.beta_first, self.params.beta_last, n_selected) if n_selected > 1
                 else np.array([self.params.beta_first]))
        chosen: list[int] = []
        group = np.zeros(self.counts.shape[1])
        for j in range(n_selected):
            cand = np.flatnonzero(left)
            logw = self._log_inverse_qcid(group[None, :] + self.counts[cand], betas[j])
            if j == 0 and self.params.exploration > 0:
                bonus = self.params.exploration * np.sqrt(3.0 * np.log(self.round) / (2.0 * self.times_selected[cand]))
                w = np.exp(logw - logw.max()) + bonus * np.exp(-logw.max())
            else:
                w = np.exp(logw - logw.max())
            pick = int(cand[rng.choice(len(cand), p=w / w.sum())])
            chosen.append(pick)
            left[pick] = False
            group += self.counts[pick]
        self.times_selected[chosen] += 1
        return np.sort(np.asarray(chosen, dtype=np.int64))


@SELECTORS.register("battery_aware")
class BatteryAwareSelection(Selector):
    """Selection weighted by the charge left in each client's battery (``energy.battery``).

    Clients whose charge cannot cover a round are never offered to a selector (the runner leaves
    them out of ``available``, as it does offline clients); among the others this one draws the
    cohort without replacement with probability proportional to the charge left, so the clients
    with the fullest batteries carry more rounds and fewer empty.  Before each round the runner
    passes the charges (:meth:`observe_battery`); without batteries (no charges, or every charge
    infinite) it draws like ``uniform``.
    """

    def __post_init__(self) -> None:
        self.remaining_j: np.ndarray | None = None

    def observe_battery(self, remaining_j: np.ndarray) -> None:
        """The charge left in each client's battery, J, for the coming round's draw."""
        self.remaining_j = np.asarray(remaining_j, dtype=float).copy()

    def select(self, n_clients: int, n_selected: int, rng: np.random.Generator,
               available: np.ndarray | None = None) -> np.ndarray:
        if available is None:
            if not 1 <= n_selected <= n_clients:
                raise ValueError(f"n_selected={n_selected} must be in [1, n_clients={n_clients}]")
            pool = np.arange(n_clients)
        else:
            pool = np.flatnonzero(candidates(n_clients, n_selected, available))
        charge = None if self.remaining_j is None else self.remaining_j[pool]
        if charge is None or not np.isfinite(charge).all() or np.count_nonzero(charge > 0) < n_selected:
            return np.sort(rng.choice(pool, size=n_selected, replace=False)).astype(np.int64)
        weight = np.maximum(charge, 0.0)
        return np.sort(rng.choice(pool, size=n_selected, replace=False, p=weight / weight.sum())).astype(np.int64)
