"""CS-SFL: split federated learning with label-aware client sampling (Xie et al., IEEE TWC 2025;
scala-journal.txt [11]: "integrates label-aware client sampling into SFL, mitigating global label
distribution skew").

Two parts:

* the selector ``label_aware`` (registered in :data:`sfl_sim.clients.selection.SELECTORS`, so any
  algorithm can use it through ``clients.selection``), which draws a cohort whose combined label
  distribution is close to the global one;
* the algorithm ``cs_sfl``: the SplitFedV1 round (:class:`~sfl_sim.algorithms.split.splitfed.SplitFedV1`:
  per-client server-side copies, both sides averaged by |D_k|, plain cross-entropy) with
  ``label_aware`` as its own selector (``default_selection``; a scenario's
  ``clients.selection`` still overrides it).

The selector (our reading; the paper's joint optimisation of sampling with the wireless resources
is not modelled — a selector sees only the clients' label counts, not the channel):

1. the first client is drawn uniformly at random;
2. each further client is drawn from the clients not yet chosen with probability proportional
   to ``exp(-(d_j - min_j d_j) / temperature)``, where ``d_j`` is the total-variation distance
   between the label distribution of the cohort so far plus client j (sample counts added) and
   the target distribution (``target="global"``: the label distribution of all clients' data
   together; ``"uniform"``: 1/N per class).  ``temperature=0`` is the greedy choice (ties broken
   at random).

All randomness comes from the generator the runner passes to :meth:`LabelAwareSelection.select`.
The clients' label counts are taken to be reported once before training (N integers per client);
that report is not counted as traffic.
"""
from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from sfl_sim.algorithms.base import ALGORITHMS
from sfl_sim.algorithms.split.splitfed import SplitFedV1
from sfl_sim.clients.selection import SELECTORS, Selector
from sfl_sim.clients.selection import candidates as selectable
from sfl_sim.kit.params import Doc, NonNegative, ParamsModel


@SELECTORS.register("label_aware")
class LabelAwareSelection(Selector):
    """Sequential, softly greedy choice of a class-balanced cohort (see module docstring).

    """

    class Params(ParamsModel):
        """LabelAwareSelection's parameters (what a scenario sets beside ``name``)."""

        temperature: Annotated[NonNegative, Doc(
            "Softness of each draw (>= 0; 0 = greedy).  Distances are in [0, 1].")] = 0.02
        target: Annotated[Literal["global", "uniform"], Doc(
            "Label distribution the cohort's combined distribution should approach.")] = "global"

    params: Params

    def __post_init__(self) -> None:
        self._counts: np.ndarray | None = None
        self._target: np.ndarray | None = None

    def prepare(self, client_label_counts: np.ndarray) -> None:
        counts = np.asarray(client_label_counts, dtype=float)
        if counts.ndim != 2 or counts.shape[0] == 0 or np.any(counts < 0):
            raise ValueError(f"client_label_counts must be a (K, N) array of counts >= 0, got shape {counts.shape}")
        self._counts = counts
        n = counts.shape[1]
        total = counts.sum(axis=0)
        if self.params.target == "uniform" or total.sum() == 0:
            self._target = np.full(n, 1.0 / n)
        else:
            self._target = total / total.sum()

    def distance(self, counts: np.ndarray) -> np.ndarray:
        """Total-variation distance of each row of ``counts`` (label counts) to the target."""
        counts = np.atleast_2d(counts)
        p = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1e-12)
        return 0.5 * np.abs(p - self._target).sum(axis=1)

    def select(self, n_clients: int, n_selected: int, rng: np.random.Generator,
               available: np.ndarray | None = None) -> np.ndarray:
        if self._counts is None:
            raise ValueError("label_aware selection needs the clients' label counts: call prepare() first")
        if n_clients != len(self._counts):
            raise ValueError(f"n_clients={n_clients} but label counts were prepared for {len(self._counts)} clients")
        remaining = selectable(n_clients, n_selected, available)
        pool = np.flatnonzero(remaining)
        # all available: the draw the selector always made (the same numbers as before availability)
        first = int(rng.integers(n_clients)) if len(pool) == n_clients else int(pool[rng.integers(len(pool))])
        chosen = [first]
        remaining[first] = False
        acc = self._counts[first].copy()
        for _ in range(n_selected - 1):
            candidates = np.flatnonzero(remaining)
            d = self.distance(acc[None, :] + self._counts[candidates])
            if self.params.temperature == 0:
                best = np.flatnonzero(d <= d.min() + 1e-12)
                pick = int(candidates[best[rng.integers(len(best))]])
            else:
                w = np.exp(-(d - d.min()) / self.params.temperature)
                pick = int(candidates[rng.choice(len(candidates), p=w / w.sum())])
            chosen.append(pick)
            remaining[pick] = False
            acc += self._counts[pick]
        return np.sort(np.array(chosen, dtype=np.int64))


@ALGORITHMS.register("cs_sfl")
class CSSFL(SplitFedV1):
    """CS-SFL: the SplitFedV1 round over cohorts drawn by the ``label_aware`` selector."""

    default_selection = {"name": "label_aware"}
