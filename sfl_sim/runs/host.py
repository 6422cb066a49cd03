"""The host a run executes on: the cores free for it now, and the defaults that follow from them.

Torch's default is one thread per core.  On a machine where another process holds a core, the
intra-op threads of every op wait for the one that was descheduled: measured on a 2-core CPU,
a SCALA round took 0.91 s with 2 threads on an idle host but 3.58 s with 2 threads
when another process held a core, against 1.51 s with 1 thread.  So a run whose scenario leaves
``training.torch_threads`` null uses :func:`default_torch_threads` — the cores not busy with
other processes when the run starts — and a study gives each of its workers a share of them.

This module imports nothing heavy (no torch), so the study executor can use it in its parent.
"""
from __future__ import annotations

import functools
import gc
import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: this module stays torch-free at import
    import torch

__all__ = ["load_average", "free_cores", "default_torch_threads", "affinity_cores", "eval_batch_size",
           "EVAL_BATCH_SIZE", "LongLivedObjects", "VECTORISED_BY_DEFAULT", "auto_execution"]


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages (``os.getloadavg``), for benches to print beside a
    measurement: on a shared machine a ratio means little without the load it was taken under.

    Returns
    -------
    str
        ``"0.52 0.61 0.70"``, or ``"n/a"`` where the platform has no load average.
    """
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def affinity_cores() -> int:
    """Cores this process may run on (its affinity set; every core where that is unknown)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _proc_stat() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs since boot, from ``/proc/stat``; None where unreadable."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 5:
        return None
    values = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    total = sum(values)
    return total - idle, total


def _busy_cores_of_others(sample_s: float) -> float | None:
    """Cores other processes kept busy over the next ``sample_s`` seconds (this process excluded)."""
    first = _proc_stat()
    if first is None:
        return None
    own_first = os.times()
    start = time.monotonic()
    time.sleep(sample_s)
    second = _proc_stat()
    own_second = os.times()
    elapsed = time.monotonic() - start
    if second is None or elapsed <= 0:
        return None
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy_s = (second[0] - first[0]) / hz
    own_s = (own_second.user - own_first.user) + (own_second.system - own_first.system)
    return max(0.0, (busy_s - own_s) / elapsed)


def free_cores(sample_s: float = 0.5) -> int:
    """Cores this process may use that other processes are not busy with (at least 1).

    On Linux the CPU time other processes spend is sampled over ``sample_s`` seconds from
    ``/proc/stat`` (this process's own time subtracted, so a busy caller does not count itself);
    elsewhere the 1-minute load average stands in for it.  A core counts as busy from half a
    core of load.

    Parameters
    ----------
    sample_s : float
        Length of the sample, seconds.

    Returns
    -------
    int
        In ``[1, affinity_cores()]``.
    """
    cores = affinity_cores()
    busy = _busy_cores_of_others(sample_s)
    if busy is None:
        try:
            busy = os.getloadavg()[0]
        except (OSError, AttributeError):
            busy = 0.0
    return max(1, min(cores, cores - int(busy + 0.5)))


@functools.lru_cache(maxsize=1)
def default_torch_threads() -> int:
    """Torch threads of a run whose scenario leaves ``training.torch_threads`` null: the cores
    free when this process first asks (:func:`free_cores`; measured once per process, so every
    run of a process — and a run and its resume in one process — use the same count)."""
    return free_cores()


#: ``eval_batch_size: auto`` per device type: the batch measured fastest for the shipped models
#: with ``bench/eval_batch.py`` (CPU: see the README's Benchmarks; CUDA: not measured yet — a GPU
#: is not launch-bound at these sizes, so it keeps 1000 until someone measures).
EVAL_BATCH_SIZE = {"cpu": 250, "cuda": 1000}


def eval_batch_size(value: int | str, device: torch.device | str) -> int:
    """The test batch a run uses: ``value`` itself, or for ``"auto"`` the table's entry for the
    device's type (:data:`EVAL_BATCH_SIZE`; 1000 for a type it does not list).

    Parameters
    ----------
    value : int or "auto"
        The scenario's ``eval_batch_size``.
    device : torch.device or str
    """
    if value != "auto":
        return int(value)
    kind = getattr(device, "type", None) or str(device).split(":")[0]
    return EVAL_BATCH_SIZE.get(kind, 1000)


class LongLivedObjects:
    """Keeps the cyclic garbage collector off a run's long-lived objects once it has warmed up.

    After the first round everything a run keeps — the data set's tensors, models, working copies,
    the cell — exists, and the collector's full (generation-2) passes walk all of it again and
    again: 0.3 s each at 1,000 clients per round (measured on a 2-core CPU).  :meth:`after_round` collects once
    and then freezes what survives (:func:`gc.freeze`: those objects are never traversed again,
    and reference counting still frees them); :meth:`end` unfreezes them, so a process that runs
    another run afterwards collects this one's cycles as usual.
    """

    def __init__(self) -> None:
        self._frozen = False

    def after_round(self) -> None:
        """Call after every round; acts once."""
        if not self._frozen and hasattr(gc, "freeze"):
            gc.collect()
            gc.freeze()
            self._frozen = True

    def end(self) -> None:
        """Call when the run ends (normally or not)."""
        if self._frozen:
            gc.unfreeze()
            self._frozen = False


#: ``execution: auto`` per device type: whether an algorithm that has a vectorised path
#: (:mod:`sfl_sim.algorithms._exec.vectorised`) takes it.  Only where it was measured faster than the
#: loop with ``bench/vectorised.py``: on CPU it is slower (a vmap prototype: 0.88x for the client part,
#: 0.97x for a whole-model step); on CUDA it has not been measured yet, so the loop stays.
VECTORISED_BY_DEFAULT = {"cpu": False, "cuda": False}


def auto_execution(device: torch.device | str) -> str:
    """What ``execution: auto`` means on ``device``: ``"vectorised"`` or ``"loop"``."""
    kind = getattr(device, "type", None) or str(device).split(":")[0]
    return "vectorised" if VECTORISED_BY_DEFAULT.get(kind, False) else "loop"
