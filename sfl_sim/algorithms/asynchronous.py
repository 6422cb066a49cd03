"""What every asynchronous algorithm shares: its concurrency, its refill rule and the staleness weights.

An asynchronous algorithm (:class:`AsynchronousAlgorithm`) does not run rounds: the runner drives
it with :class:`sfl_sim.engine.asynchronous.AsyncDriver`, which asks it to :meth:`dispatch` a
group of clients (send them the model of that moment, start their processes), to
:meth:`aggregate_updates` the updates the server's rule releases, and to :meth:`discard` what it kept for
a client whose upload was lost.  Its :meth:`async_policy` tells the driver how many clients train
at once and when the server aggregates.  The FL ones are in :mod:`sfl_sim.algorithms.fl.asynchronous`,
the split-learning ones in :mod:`sfl_sim.algorithms.split.asynchronous`.

Staleness weights (:func:`staleness_weight`), with tau the staleness of an update (aggregations
between the version it started from and the one it is applied to):

* ``constant``: s(tau) = 1;
* ``polynomial``: s_a(tau) = (tau + 1)^(-a) (FedAsync, Xie et al. 2019, our reading of its
  "polynomial" function);
* ``hinge``: s_{a,b}(tau) = 1 if tau <= b, else 1 / (a (tau - b) + 1) (FedAsync's "hinge", our
  reading);
* ``sqrt``: s(tau) = 1 / sqrt(1 + tau) (FedBuff, Nguyen et al. 2022, its staleness scaling as we
  read it).
"""
from __future__ import annotations

import abc
import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal

import simpy
from pydantic import Field

from sfl_sim.algorithms.base import Algorithm, dispatch_stream
from sfl_sim.engine import RoundContext, SimSteps
from sfl_sim.engine.asynchronous import Arrival, AsyncPolicy, Dispatch, RefillRule
from sfl_sim.kit.params import Doc, ParamsModel

__all__ = ["AsyncParams", "AsynchronousAlgorithm", "StalenessFunction", "half_the_concurrency", "is_asynchronous",
           "staleness_weight"]

StalenessFunction = Literal["constant", "polynomial", "hinge", "sqrt"]


def staleness_weight(function: StalenessFunction, staleness: int, a: float = 0.5, b: float = 4.0) -> float:
    """s(tau) of the module docstring for an update of staleness ``staleness`` (>= 0)."""
    tau = float(staleness)
    if tau < 0:
        raise ValueError(f"staleness={staleness!r}; allowed: an integer >= 0")
    if function == "constant":
        return 1.0
    if function == "polynomial":
        return (tau + 1.0) ** (-a)
    if function == "hinge":
        return 1.0 if tau <= b else 1.0 / (a * (tau - b) + 1.0)
    if function == "sqrt":
        return 1.0 / math.sqrt(1.0 + tau)
    raise ValueError(f"staleness function {function!r}; allowed: constant, polynomial, hinge, sqrt")


def half_the_concurrency(concurrency: int) -> int:
    """The default K of a buffered server (``buffer_size: null``): half the concurrency C, at least 1.

    Our choice (module docstring of :mod:`sfl_sim.algorithms.fl.asynchronous`): K < C for every C > 1,
    so that C - K clients are still in flight at an aggregation and their updates arrive stale (K =
    C with ``refill: on_use`` is a synchronous round), and a cohort of 2 or 3 runs with the default.
    """
    return max(1, concurrency // 2)


class AsyncParams(ParamsModel):
    """The parameters every asynchronous algorithm has (mixed into its ``Params``)."""

    concurrency: Annotated[int | None, Field(ge=1), Doc(
        "C, clients training at once (null: the scenario's cohort, round(clients.count x "
        "clients.participation)).")] = None
    refill: Annotated[RefillRule, Doc(
        "When a delivered client's slot frees: on_use (when the server has used its update: the next clients "
        "start from the new model) or on_arrival (when the update arrives, FedBuff's Algorithm 1).")] = "on_use"


class AsynchronousAlgorithm(Algorithm):
    """Base of the algorithms the runner drives asynchronously (module docstring).

    A subclass's ``Params`` extends :class:`AsyncParams` too; it implements :meth:`buffer_size_for`
    (or :meth:`period_for`), :meth:`dispatch`, :meth:`aggregate_updates` and :meth:`discard`.
    """

    asynchronous: ClassVar[bool] = True

    def async_policy(self, cohort_size: int) -> AsyncPolicy:
        """The driver's policy: C (``concurrency``, else ``cohort_size``), K, the period and the refill rule.

        Raises
        ------
        ValueError
            One line naming the parameter (e.g. ``buffer_size`` above the concurrency).
        """
        return type(self).policy_for(self.params, cohort_size)

    @classmethod
    def policy_for(cls, params: Any, cohort_size: int) -> AsyncPolicy:
        """The policy :meth:`async_policy` gives for a parameter model ``params`` (validated), without
        building the algorithm: what ``resolved.yaml`` records (:func:`sfl_sim.runs.resolved.resolve_run`).

        Raises
        ------
        ValueError
            As :meth:`async_policy`.
        """
        concurrency = params.concurrency if params.concurrency is not None else cohort_size
        return AsyncPolicy(concurrency=concurrency, buffer_size=cls.buffer_size_for(params, concurrency),
                           period_s=cls.period_for(params), refill=params.refill)

    @classmethod
    def buffer_size_for(cls, params: Any, concurrency: int) -> int:
        """K, the arrivals per aggregation, for ``params`` and the resolved concurrency (default 1:
        every arrival)."""
        return 1

    @classmethod
    def period_for(cls, params: Any) -> float | None:
        """Aggregate on this period instead of every K arrivals (default None)."""
        return None

    def round_process(self, ctx: RoundContext, cohort: Any) -> SimSteps[None]:
        """Refused: an asynchronous algorithm has no rounds (the runner drives it through
        :class:`sfl_sim.engine.asynchronous.AsyncDriver`)."""
        raise RuntimeError(f"{type(self).__name__} is asynchronous: it has no synchronous round; run it with "
                           f"sfl-sim scenario (the runner drives it asynchronously), or check it with "
                           f"check_algorithm (which drives it through the AsyncDriver)")
        yield  # a generator

    @abc.abstractmethod
    def dispatch(self, ctx: RoundContext, group: Sequence[Dispatch],
                 in_flight: Sequence[int]) -> SimSteps[Mapping[int, simpy.Event]]:
        """Send the model to ``group`` and start its clients (:class:`sfl_sim.engine.asynchronous.AsyncTraining`).

        Parameters
        ----------
        ctx : RoundContext
        group : sequence of Dispatch
        in_flight : sequence of int
            Every client in flight once the group has started, in dispatch order (the group
            last): the server-side minibatch B is split over them by eq. (3).
        """

    @abc.abstractmethod
    def aggregate_updates(self, used: Sequence[Arrival], staleness: Sequence[int]) -> None:
        """Apply the delivered updates ``used`` (dispatch order) with their staleness."""

    @abc.abstractmethod
    def discard(self, arrival: Arrival) -> None:
        """Forget what was kept for a dispatch whose upload was lost."""

    def end_dispatch(self, dispatch: Dispatch) -> None:
        """The dispatch's work is over (used or lost): forget its client stream
        (:meth:`~sfl_sim.algorithms.base.Algorithm.client_stream`; a dispatch draws from its own,
        seeded as the round of the model version it starts from)."""
        self.client_streams.forget(dispatch_stream(dispatch))


def is_asynchronous(algorithm: Any) -> bool:
    """Whether an algorithm (class or instance) is driven asynchronously (it has no synchronous round)."""
    cls = algorithm if isinstance(algorithm, type) else type(algorithm)
    return issubclass(cls, AsynchronousAlgorithm)
