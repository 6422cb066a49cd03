"""What a run tells the person watching it, on stderr.

Before training, one header line per run: the scenario, which algorithm of how many, the device,
the run directory and the rounds (and the round it resumes after).  Then, on a terminal, a tqdm
bar with the round, the simulated time and the last accuracy.  When stderr is not a terminal (a
batch job, CI, ``2> log.txt``) a carriage-return bar would fill the log with one long line of
overwritten states, so each evaluation prints one plain line instead::

    scala: round 10/150, sim 1,234.5 s, acc 0.6120, host 35.2 s

The runner calls :class:`RunProgress` at four points (``start``, ``evaluated``, ``advance``,
``close``); a disabled one (``--no-progress``) prints nothing.  In a Jupyter notebook the bar is
``tqdm.auto``'s widget (:func:`interactive` counts a notebook as a terminal).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # annotations only: this module stays torch-free at import
    import torch

__all__ = ["RunProgress", "header_line", "evaluation_line", "interactive", "progress_bar"]


def _in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython already imported, with a kernel app)."""
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def interactive(stream: TextIO) -> bool:
    """Whether ``stream`` shows a live bar: a terminal, or the output of a notebook cell.

    Anywhere else (a batch log, CI, a pipe) a carriage-return bar would leave one long line of
    overwritten states, so callers print plain lines instead.
    """
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) or _in_notebook()


def progress_bar(**kwargs: Any) -> Any:
    """A ``tqdm.auto`` bar: a widget in a notebook, text on a terminal (``kwargs`` go to tqdm)."""
    from tqdm.auto import tqdm

    return tqdm(**kwargs)


def header_line(scenario: str, label: str, position: tuple[int, int], device: torch.device | str, run_dir: Path | str,
                rounds: int, start_round: int = 0) -> str:
    """The line printed before a run trains.

    Parameters
    ----------
    scenario : str
        The scenario's ``name``.
    label : str
        The run's label (algorithm name, or its ``label``).
    position : (int, int)
        This run's number, from 1, and the number of runs of the scenario.
    device : torch.device or str
    run_dir : path
    rounds : int
        Rounds planned in all.
    start_round : int
        Rounds already done (a resumed run); 0 for a fresh run.
    """
    i, n = position
    resumed = f", resuming after round {start_round}" if start_round else ""
    return (f"scenario {scenario}: run {i}/{n} {label} on {device}, {rounds} rounds{resumed}, "
            f"output {run_dir}")


def evaluation_line(label: str, rnd: int, rounds: int, sim_time_s: float, accuracy: float,
                    host_time_s: float) -> str:
    """One evaluation as a plain log line (simulated and host seconds, accuracy as a fraction)."""
    return (f"{label}: round {rnd}/{rounds}, sim {sim_time_s:,.1f} s, acc {accuracy:.4f}, "
            f"host {host_time_s:,.1f} s")


class RunProgress:
    """Header line, then a tqdm bar on a terminal or one line per evaluation elsewhere.

    Parameters
    ----------
    enabled : bool
        False prints nothing at all (``--no-progress``).
    stream : file, optional
        Where to write; ``sys.stderr`` (looked up when the object is made) by default.
    """

    def __init__(self, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.interactive = interactive(self.stream)
        self._bar: Any = None
        self._label, self._rounds, self._host_start = "", 0, time.perf_counter()

    def start(self, scenario: str, label: str, position: tuple[int, int], device: torch.device | str,
              run_dir: Path | str, rounds: int, start_round: int = 0) -> None:
        """Print the header line (see :func:`header_line`) and, on a terminal, open the bar."""
        self._label, self._rounds, self._host_start = label, rounds, time.perf_counter()
        if not self.enabled:
            return
        print(header_line(scenario, label, position, device, run_dir, rounds, start_round), file=self.stream,
              flush=True)
        if self.interactive:
            self._bar = progress_bar(total=rounds, initial=start_round, desc=label, unit="round",
                                     file=self.stream, dynamic_ncols=True)

    def evaluated(self, rnd: int, sim_time_s: float, accuracy: float, host_time_s: float | None = None) -> None:
        """Report an evaluation after round ``rnd``.

        Parameters
        ----------
        rnd : int
        sim_time_s : float
            Simulated clock after the round, seconds.
        accuracy : float
            Test accuracy, a fraction.
        host_time_s : float, optional
            Host seconds this run has spent (the ``metrics.csv`` column, which counts the time
            before a resume too); by default the seconds since :meth:`start`.
        """
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix_str(f"sim {sim_time_s:,.1f} s, acc {accuracy:.3f}")
            return
        host = time.perf_counter() - self._host_start if host_time_s is None else host_time_s
        print(evaluation_line(self._label, rnd, self._rounds, sim_time_s, accuracy, host), file=self.stream,
              flush=True)

    def advance(self) -> None:
        """One round done."""
        if self._bar is not None:
            self._bar.update(1)

    def close(self) -> None:
        """Close the bar (a no-op when there is none); safe to call twice."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
