"""Split a labelled dataset among clients: IID, quantity-based and Dirichlet label skew (two kinds).

Every partitioner has ``split(labels, n_clients, num_classes, rng) -> list of K index arrays``;
the arrays are ``int64``, sorted ascending, non-empty and pairwise disjoint.  Every random draw
comes from the ``numpy.random.Generator`` passed in, so equal seeds give equal partitions.

The two label-skew schemes ``quantity`` and ``dirichlet`` follow the SCALA paper's definitions
(quantity-based label skew with ``alpha`` classes per client, Dirichlet label skew with
concentration ``beta``, drawn per client over the classes).  ``dirichlet_over_clients`` is the
other common Dirichlet scheme, drawn per class over the clients (NIID-Bench, Li et al. 2022),
which FedVLS and BESplit use.
"""
from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from sfl_sim.data.protocols import PartitionerProtocol
from sfl_sim.kit.checks import check_int
from sfl_sim.kit.component import Component
from sfl_sim.kit.params import Doc, ParamsModel, Positive, PositiveInt
from sfl_sim.kit.registry import Registry

__all__ = [
    "PARTITIONERS",
    "Partitioner",
    "IIDPartitioner",
    "QuantityLabelSkew",
    "DirichletLabelSkew",
    "DirichletOverClients",
    "label_histogram",
]

PARTITIONERS = Registry("partitioner", protocol=PartitionerProtocol)


def _check_inputs(labels: Any, n_clients: Any, num_classes: Any, rng: Any) -> np.ndarray:
    n_clients = check_int("n_clients", n_clients, minimum=1)
    num_classes = check_int("num_classes", num_classes, minimum=1)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    arr = np.asarray(labels)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise ValueError(f"labels must be a 1-D integer array, got dtype {arr.dtype} and shape {arr.shape}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= num_classes):
        raise ValueError(f"labels must lie in [0, num_classes={num_classes}), got [{arr.min()}, {arr.max()}]")
    if arr.size < n_clients:
        raise ValueError(f"n_clients must be <= the number of samples ({arr.size}) so that every "
                         f"client gets at least one, got {n_clients}")
    return arr


def _finish(parts: list[np.ndarray]) -> list[np.ndarray]:
    return [np.sort(np.asarray(p, dtype=np.int64)) for p in parts]


class Partitioner(Component):
    """Base of the shipped partitioners (a partitioner of one's own needs only :meth:`split`)."""

    def split(self, labels: np.ndarray, n_clients: int, num_classes: int,
              rng: np.random.Generator) -> list[np.ndarray]:
        """Split sample indices among clients.

        Parameters
        ----------
        labels : numpy.ndarray
            Integer class labels in ``[0, num_classes)``, shape ``(N,)``.
        n_clients : int
            Number of clients K >= 1.
        num_classes : int
            Number of classes N >= 1.
        rng : numpy.random.Generator
            Source of every random draw.

        Returns
        -------
        list of numpy.ndarray
            K sorted, non-empty, disjoint ``int64`` index arrays into ``labels``.
        """
        raise NotImplementedError


@PARTITIONERS.register("iid")
class IIDPartitioner(Partitioner):
    """IID split: shuffle all indices and cut them into K near-equal parts.

    Part sizes differ by at most one sample; all samples are used.
    """

    def split(self, labels: np.ndarray, n_clients: int, num_classes: int,
              rng: np.random.Generator) -> list[np.ndarray]:
        """See :meth:`Partitioner.split`.

        Raises
        ------
        ValueError
            On invalid inputs, or if there are fewer samples than clients.
        """
        arr = _check_inputs(labels, n_clients, num_classes, rng)
        return _finish(np.array_split(rng.permutation(arr.size), int(n_clients)))



@PARTITIONERS.register("quantity")
class QuantityLabelSkew(Partitioner):
    """Quantity-based label skew: every client holds exactly ``alpha`` distinct classes.

    As in the SCALA paper: with K clients and N classes the data of each class is divided into
    about K*alpha/N portions and each client receives alpha portions of distinct classes.

    Algorithm (seeded by ``rng``, always succeeds):

    1. Class quotas: each class is held by ``floor(K*alpha/N)`` clients and a random
       ``(K*alpha) mod N`` classes by one more, so quotas differ by at most one and sum to
       K*alpha.
    2. Clients are filled one by one.  With ``m`` clients still to fill, a class whose remaining
       quota equals ``m`` must go to the current client (otherwise it could no longer be used
       up); the rest of the client's ``alpha`` classes are drawn without replacement with
       probability proportional to remaining quota.  The invariant "no remaining quota exceeds
       the number of clients left" (the Gale-Ryser condition for equal row sums) guarantees that
       the dealing never gets stuck.
    3. Each class's samples are shuffled and cut into as many near-equal portions as clients
       hold it; all samples are used.

    With ``distinct_classes=False`` step 2 is the paper's sentence read literally ("we divide the
    data of each label into K*alpha/N portions, and then randomly allocate alpha portions of data to
    each client.  Consequently, each client can obtain data from *at most* alpha classes",
    scala-icml.md §5.1): the K*alpha portions of step 1 are shuffled and dealt alpha to each client,
    so a client may get two portions of one class (and then holds fewer than alpha classes).  The
    default (distinct classes, exactly alpha each) is NIID-Bench's "#C = alpha" scheme, which the
    paper cites (Zhang et al., 2022) for these settings: our reading, since the paper's text allows both.

    Raises
    ------
    ValueError
        If ``alpha`` is not an integer >= 1.
    """

    class Params(ParamsModel):
        """QuantityLabelSkew's parameters (what a scenario sets beside ``name``)."""

        alpha: Annotated[PositiveInt, Doc("Classes per client, ``1 <= alpha <= num_classes`` (checked in split).")]
        distinct_classes: Annotated[bool, Doc(
            "Each client's alpha portions are of distinct classes (True) or dealt at random, so that a client "
            "may hold two portions of one class (False: 'at most alpha classes', the paper's text read "
            "literally).")] = True

    params: Params

    def assign_classes(self, n_clients: int, num_classes: int, rng: np.random.Generator) -> np.ndarray:
        """Decide which ``alpha`` distinct classes each client holds.

        Parameters
        ----------
        n_clients : int
            Number of clients K.
        num_classes : int
            Number of classes N (>= alpha).
        rng : numpy.random.Generator
            Source of the random draws.

        Returns
        -------
        numpy.ndarray
            ``int64`` array of shape ``(K, alpha)``; row k holds client k's classes (one entry per
            portion), sorted.  Each class appears ``floor(K*alpha/N)`` or ``ceil(K*alpha/N)`` times;
            a row repeats a class only with ``distinct_classes=False``.

        Raises
        ------
        ValueError
            If ``alpha > num_classes``.
        """
        k_total = check_int("n_clients", n_clients, minimum=1)
        n = check_int("num_classes", num_classes, minimum=1)
        a = self.params.alpha
        if a > n:
            raise ValueError(f"alpha must be between 1 and num_classes={n}, got {a}")
        slots = k_total * a
        quota = np.full(n, slots // n, dtype=np.int64)
        quota[rng.permutation(n)[: slots % n]] += 1
        if not self.params.distinct_classes:
            dealt = rng.permutation(np.repeat(np.arange(n, dtype=np.int64), quota))
            return np.sort(dealt.reshape(k_total, a), axis=1)
        out = np.empty((k_total, a), dtype=np.int64)
        for k in range(k_total):
            left = k_total - k  # clients still to fill, this one included
            forced = np.flatnonzero(quota == left)
            rest_needed = a - forced.size
            if rest_needed:
                pool = np.flatnonzero((quota > 0) & (quota < left))
                p = quota[pool] / quota[pool].sum()
                extra = rng.choice(pool, size=rest_needed, replace=False, p=p)
                chosen = np.concatenate([forced, extra])
            else:
                chosen = forced
            quota[chosen] -= 1
            out[k] = np.sort(chosen)
        return out

    def split(self, labels: np.ndarray, n_clients: int, num_classes: int,
              rng: np.random.Generator) -> list[np.ndarray]:
        """See :meth:`Partitioner.split`.

        Raises
        ------
        ValueError
            If ``alpha > num_classes``, on invalid inputs, or if some class has fewer samples
            than clients that must hold it (a client would get an empty portion).
        """
        arr = _check_inputs(labels, n_clients, num_classes, rng)
        assignment = self.assign_classes(n_clients, num_classes, rng)
        parts: list[list[np.ndarray]] = [[] for _ in range(int(n_clients))]
        for c in range(int(num_classes)):
            # one entry per portion: a client dealt two portions of c appears twice
            holders = np.flatnonzero(assignment == c) // assignment.shape[1]
            idx = np.flatnonzero(arr == c)
            if holders.size == 0:
                if idx.size:  # only when n_clients * alpha < num_classes
                    raise ValueError(
                        f"n_clients*alpha ({n_clients}*{self.params.alpha}) is smaller than num_classes={num_classes}, "
                        f"so the {idx.size} samples of class {c} would be dropped; use more clients or a "
                        f"larger alpha"
                    )
                continue
            if idx.size < holders.size:
                raise ValueError(
                    f"class {c} has {idx.size} samples but {holders.size} clients must each hold a "
                    f"portion of it (n_clients={n_clients}, alpha={self.params.alpha}, num_classes={num_classes}); "
                    f"use fewer clients, a smaller alpha or more data"
                )
            for holder, portion in zip(holders, np.array_split(rng.permutation(idx), holders.size), strict=True):
                parts[holder].append(portion)
        return _finish([np.concatenate(p) for p in parts])



class _RedrawnDirichlet(Partitioner):
    """What the two Dirichlet partitioners share: draws are repeated until every client holds at
    least ``min_samples_per_client`` samples (at most ``max_attempts`` draws).  Subclasses have
    ``beta``, ``min_samples_per_client`` and ``max_attempts`` parameters and implement :meth:`draw`."""

    params: Any  # a model with beta, min_samples_per_client and max_attempts

    def draw(self, class_idx: list[np.ndarray], n_clients: int, n_samples: int,
             rng: np.random.Generator) -> list[np.ndarray]:
        """One candidate partition: K index arrays, from the indices of each class."""
        raise NotImplementedError

    def split(self, labels: np.ndarray, n_clients: int, num_classes: int,
              rng: np.random.Generator) -> list[np.ndarray]:
        """See :meth:`Partitioner.split`.

        Raises
        ------
        ValueError
            On invalid inputs, if ``n_clients * min_samples_per_client`` exceeds the number of
            samples, or if no draw within ``max_attempts`` satisfies the minimum size.
        """
        arr = _check_inputs(labels, n_clients, num_classes, rng)
        k_total, n = int(n_clients), int(num_classes)
        if k_total * self.params.min_samples_per_client > arr.size:
            raise ValueError(
                f"min_samples_per_client={self.params.min_samples_per_client} times n_clients={k_total} exceeds "
                f"the {arr.size} samples available"
            )
        class_idx = [np.flatnonzero(arr == c) for c in range(n)]
        smallest = 0
        for _ in range(self.params.max_attempts):
            parts = self.draw(class_idx, k_total, arr.size, rng)
            smallest = min(p.size for p in parts)
            if smallest >= self.params.min_samples_per_client:
                return _finish(parts)
        raise ValueError(
            f"{type(self).__name__}(beta={self.params.beta}): no partition with min_samples_per_client="
            f"{self.params.min_samples_per_client} found in max_attempts={self.params.max_attempts} draws "
            f"(last smallest client had {smallest} samples); raise beta or max_attempts, or lower "
            f"min_samples_per_client or n_clients"
        )


@PARTITIONERS.register("dirichlet")
class DirichletLabelSkew(_RedrawnDirichlet):
    """Dirichlet label skew: client label proportions drawn from a symmetric Dirichlet.

    As in the SCALA paper: each client k draws ``p_k ~ Dir_N(beta)``; the (shuffled) samples of
    class y are split among the clients in proportion to ``p_{k,y} / sum_j p_{j,y}`` (cut points
    ``floor(cumsum * n_y)``).  The whole draw is repeated while some client has fewer than
    ``min_samples_per_client`` samples.  Small ``beta`` gives strong skew (few classes per
    client), large ``beta`` approaches IID.

    Raises
    ------
    ValueError
        If ``beta`` is not a finite number > 0, or the integers are < 1.
    """

    class Params(ParamsModel):
        """DirichletLabelSkew's parameters (what a scenario sets beside ``name``)."""

        beta: Annotated[Positive, Doc("Concentration, > 0.")]
        min_samples_per_client: Annotated[PositiveInt, Doc("Smallest acceptable client size (>= 1).")] = 10
        max_attempts: Annotated[PositiveInt, Doc("Number of draws before giving up.")] = 1000

    params: Params

    def draw(self, class_idx: list[np.ndarray], n_clients: int, n_samples: int,
             rng: np.random.Generator) -> list[np.ndarray]:
        """One draw: a Dir_N(beta) class mix per client, each class cut among the clients by it."""
        n = len(class_idx)
        props = rng.dirichlet(np.full(n, self.params.beta), size=n_clients)  # (K, N), rows sum to 1
        parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        for c in range(n):
            idx = class_idx[c]
            if idx.size == 0:
                continue
            col = props[:, c]
            total = col.sum()
            share = col / total if total > 0 and np.isfinite(total) else np.full(n_clients, 1.0 / n_clients)
            cuts = (np.cumsum(share) * idx.size).astype(np.int64)[:-1]
            for k, portion in enumerate(np.split(rng.permutation(idx), cuts)):
                parts[k].append(portion)
        return [np.concatenate(p) for p in parts]



@PARTITIONERS.register("dirichlet_over_clients")
class DirichletOverClients(_RedrawnDirichlet):
    """Dirichlet label skew over clients: each class is split among the clients by p_c ~ Dir_K(beta).

    The scheme of NIID-Bench (Li et al., ICDE 2022), which FedVLS follows, and of BESplit
    (Appendix E.2): for each class c in turn, its (shuffled) samples are split among the K clients
    in proportions ``p_c ~ Dir_K(beta)`` (cut points ``floor(cumsum * n_c)``).  With
    ``cap_at_mean`` (NIID-Bench's rule), a client that already holds N/K samples or more takes no
    share of the classes split after that (its proportion is zeroed, the others renormalised).  The
    whole draw is repeated while some client has fewer than ``min_samples_per_client`` samples.
    Unlike ``dirichlet`` (a draw per client over the classes), a class here tends to go to few
    clients and clients differ much in size.

    Raises
    ------
    ValueError
        If ``beta`` is not a finite number > 0, an integer is < 1 or ``cap_at_mean`` is not a bool.
    """

    class Params(ParamsModel):
        """DirichletOverClients's parameters (what a scenario sets beside ``name``)."""

        beta: Annotated[Positive, Doc("Concentration, > 0 (FedVLS's beta, BESplit's kappa).")]
        min_samples_per_client: Annotated[PositiveInt, Doc(
            "Smallest acceptable client size (>= 1); NIID-Bench uses 10.")] = 10
        cap_at_mean: Annotated[bool, Doc(
            "NIID-Bench's cap at N/K samples (False: BESplit's plain per-class split).")] = True
        max_attempts: Annotated[PositiveInt, Doc("Number of draws before giving up.")] = 1000

    params: Params

    def draw(self, class_idx: list[np.ndarray], n_clients: int, n_samples: int,
             rng: np.random.Generator) -> list[np.ndarray]:
        """One draw: each class in turn split among the clients by a Dir_K(beta) share."""
        mean_size = n_samples / n_clients
        parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        sizes = np.zeros(n_clients, dtype=np.int64)
        for c in range(len(class_idx)):
            idx = rng.permutation(class_idx[c])
            share = rng.dirichlet(np.full(n_clients, self.params.beta))
            if self.params.cap_at_mean:
                share = share * (sizes < mean_size)
            total = share.sum()
            share = share / total if total > 0 and np.isfinite(total) else np.full(n_clients, 1.0 / n_clients)
            cuts = (np.cumsum(share) * idx.size).astype(np.int64)[:-1]
            for k, portion in enumerate(np.split(idx, cuts)):
                parts[k].append(portion)
                sizes[k] += portion.size
        return [np.concatenate(p) for p in parts]



def label_histogram(labels: np.ndarray, parts: list[np.ndarray], num_classes: int) -> np.ndarray:
    """Per-client class counts.

    Parameters
    ----------
    labels : numpy.ndarray
        Integer labels in ``[0, num_classes)``, shape ``(N,)``.
    parts : list of numpy.ndarray
        K index arrays into ``labels``.
    num_classes : int
        Number of classes.

    Returns
    -------
    numpy.ndarray
        ``int64`` array of shape ``(K, num_classes)``; entry ``[k, c]`` counts the samples of
        class c held by client k.
    """
    n = check_int("num_classes", num_classes, minimum=1)
    arr = np.asarray(labels, dtype=np.int64)
    out = np.zeros((len(parts), n), dtype=np.int64)
    for k, part in enumerate(parts):
        out[k] = np.bincount(arr[np.asarray(part, dtype=np.int64)], minlength=n)[:n]
    return out
