"""The comparison table of runs, one row per run, defined once.

A row is a run's summary (the keys of its ``summary.json``) under :data:`CSV_COLUMNS`, then one
``tta_<target>_s`` column per target accuracy.  ``sfl-sim scenario`` prints it and writes it
from the summaries its runs return; :func:`summary_table` gives it as a DataFrame for loaded run
directories, with the numbers taken from ``metrics.csv`` (:func:`run_summary`).

Files (:func:`write_summary_files`), so they say exactly what the run directories say:

``summary.csv``
    One row per run, the numbers of its ``summary.json`` under the same names
    (:data:`CSV_COLUMNS`), then one ``dropped_<cause>_clients`` column per drop cause any run had
    (client-rounds dropped for it, :func:`drop_cause_column`), then one ``tta_<target>_s`` column
    per target accuracy: simulated seconds to reach it, empty when it was not reached.
``summary.md``
    The same runs as Markdown tables: totals, what the radio lost (drops by cause, outage, HARQ
    copies), with a network its handovers and cells' load, with edge servers (``server.edge``) the
    backhaul (migrations, handover drops, bytes and joules: ``summary.json``'s totals) and time to
    accuracy.

Beside the rounds, every form shows ``client_updates`` (client-rounds whose update the server
used): an asynchronous algorithm's round is one aggregation, a synchronous one's a cohort's updates.

The printed form (:func:`format_tables`) fits 80 columns: the totals (with the drop rate when a
run dropped clients, the client energy and the best accuracy when they fit), then time to
accuracy in a table of its own (one row per run, one column per target).  Both forms end with the
runs' warnings (every round lost every selected client) and, when a run dropped clients, the note
that drops shorten rounds (:func:`notes`).
"""
from __future__ import annotations

import csv
import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sfl_sim.analysis.runs import Run
from sfl_sim.analysis.tta import DEFAULT_TARGETS, best_test_accuracy, time_to_accuracy_s, tta_column_name
from sfl_sim.analysis.units import BYTES_PER_MB, FLOPS_PER_GFLOP
from sfl_sim.runs.rundir.schema import (
    GLOBAL_MODEL_EVALUATION,
    SCENARIO_SUMMARY_CSV,
    SCENARIO_SUMMARY_MD,
    SCENARIO_SUMMARY_MD_TITLE,
)

__all__ = ["CSV_COLUMNS", "DROPS_NOTE", "csv_rows", "drop_cause_column", "format_tables", "markdown", "notes",
           "run_summary", "summary_paths", "summary_table", "write_summary_files"]

#: Columns of ``summary.csv`` before the drop-cause and time-to-accuracy columns: keys of ``summary.json``.
CSV_COLUMNS = ("label", "algorithm", "seed", "status", "evaluated", "rounds_completed", "rounds_planned",
               "client_updates", "final_test_accuracy", "best_test_accuracy", "final_sim_time_s", "host_time_s",
               "uplink_bytes", "downlink_bytes", "client_flops", "server_flops", "client_energy_j", "client_rounds",
               "dropped_clients", "drop_rate", "rounds_all_lost", "uplink_attempts", "outage_rate",
               "retransmissions", "dropped_transmissions", "harq_retransmissions")

#: Why drops matter when runs are compared by simulated time (printed once, after the tables).
DROPS_NOTE = ("drops shorten rounds: the server does not wait for a dropped client, so a run that "
              "drops clients looks faster in simulated time than it would without its losses")

Summary = Mapping[str, Any]


def _present(summaries: Sequence[Summary]) -> list[Summary]:
    return [s for s in summaries if s]  # a run with nothing to report has an empty summary


def _targets(summaries: Sequence[Summary]) -> list[str]:
    """Target accuracies as ``summary.json`` writes them (``"0.5"``), in order of first appearance."""
    keys: dict[str, None] = {}
    for s in summaries:
        keys.update(dict.fromkeys(s.get("time_to_accuracy_s") or {}))
    return list(keys)


def _causes(summaries: Sequence[Summary]) -> list[str]:
    """The drop causes of the summaries (``dropped_clients_by_cause`` keys), sorted."""
    return sorted({cause for s in summaries for cause in (s.get("dropped_clients_by_cause") or {})})


def drop_cause_column(cause: str) -> str:
    """The ``summary.csv`` column of client-rounds dropped for ``cause``: ``dropped_<cause>_clients``."""
    return f"dropped_{cause}_clients"


def csv_rows(summaries: Sequence[Summary],
             targets: Sequence[str] | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows of ``summary.csv``.

    Parameters
    ----------
    summaries : sequence of dict
        The runs' summaries (empty ones are skipped).
    targets : sequence of str, optional
        The ``time_to_accuracy_s`` keys to give a column (default: every key of the summaries,
        in order of first appearance).

    Returns
    -------
    columns : list of str
        :data:`CSV_COLUMNS`, then :func:`drop_cause_column` per drop cause of any summary (sorted),
        then ``tta_<target>_s`` per target (:func:`sfl_sim.analysis.tta.tta_column_name`).
    rows : list of dict
        One per non-empty summary; a missing value or an unreached target is ``None``; a cause
        a run did not drop for is 0 (None for a summary without drop counts).
    """
    present = _present(summaries)
    targets = _targets(present) if targets is None else list(targets)
    causes = _causes(present)
    columns = list(CSV_COLUMNS) + [drop_cause_column(c) for c in causes] + [tta_column_name(float(t))
                                                                            for t in targets]
    rows = []
    for s in present:
        row = {c: s.get(c) for c in CSV_COLUMNS}
        by_cause = s.get("dropped_clients_by_cause")
        row.update({drop_cause_column(c): None if by_cause is None else by_cause.get(c, 0) for c in causes})
        tta = s.get("time_to_accuracy_s") or {}
        row.update({tta_column_name(float(t)): tta.get(t) for t in targets})
        rows.append(row)
    return columns, rows


def _number(fmt: str) -> Callable[[Any], str]:
    return lambda v: "-" if v is None else format(v, fmt)


def _seconds(v: Any) -> str:
    """Whole seconds with thousands separators; a decimal or two below 100 s (short test runs)."""
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def _joules(v: Any) -> str:
    """Three significant digits (a tiny test run spends millijoules, a study megajoules)."""
    return "-" if v is None else f"{v:.3g}"


def _mega(v: Any) -> str:
    return "-" if v is None else f"{v / BYTES_PER_MB:,.1f}"


def _giga(v: Any) -> str:
    return "-" if v is None else f"{v / FLOPS_PER_GFLOP:,.1f}"


def _percent(v: Any) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


def _dropped(s: Summary) -> int:
    return sum((s.get("dropped_clients_by_cause") or {}).values())


# (header, summary key, formatter, also in the 80-column printout)
_TOTALS: tuple[tuple[str, str, Callable[[Any], str], bool], ...] = (
    ("algorithm", "algorithm", lambda v: "-" if v is None else str(v), False),
    ("seed", "seed", _number("d"), False),
    ("status", "status", lambda v: "-" if v is None else str(v), False),
    ("rounds", "rounds_completed", _number("d"), True),
    ("updates", "client_updates", _number("d"), True),
    ("final acc", "final_test_accuracy", _number(".4f"), True),
    ("best acc", "best_test_accuracy", _number(".4f"), False),  # printed when it fits (format_tables)
    ("sim s", "final_sim_time_s", _seconds, True),
    ("host s", "host_time_s", _seconds, True),
    ("up MB", "uplink_bytes", _mega, True),
    ("down MB", "downlink_bytes", _mega, True),
    ("client GFLOP", "client_flops", _giga, False),
    ("server GFLOP", "server_flops", _giga, False),
    ("client J", "client_energy_j", _joules, False),
    ("drop %", "drop_rate", _percent, False),
)

_LEGEND = ("updates: client updates used (an asynchronous round is one aggregation);",
           "acc: test accuracy (a fraction); sim s: simulated seconds;",
           "host s: seconds this computer took; MB: 10^6 bytes sent, cumulative")


def _totals(summaries: Sequence[Summary], short: bool) -> tuple[list[str], list[list[str]]]:
    columns = [c for c in _TOTALS if c[3] or not short]
    header = ["run"] + [c[0] for c in columns]
    rows = [[str(s.get("label", "?"))] + [fmt(s.get(key)) for _, key, fmt, _ in columns] for s in summaries]
    return header, rows


_ENERGY_LEGEND = "client J: joules all clients spent (the energy ledger)"
_DROP_LEGEND = "drop %: selected client-rounds dropped"


def _per_round(total: Any, rounds: Any) -> Any:
    return total / rounds if isinstance(total, (int, float)) and isinstance(rounds, int) and rounds > 0 else None


def _drops(summaries: Sequence[Summary]) -> tuple[list[str], list[list[str]]]:
    """What the radio lost, per run: drops by cause, the drop and outage rates, HARQ copies per round."""
    causes = _causes(summaries)
    header = ["run", "client-rounds", *(f"{c} drops" for c in causes), "drop %", "outage %", "HARQ copies/round",
              "rounds all lost"]
    rows = [[str(s.get("label", "?")), _number("d")(s.get("client_rounds")),
             *(_number("d")((s.get("dropped_clients_by_cause") or {}).get(c, 0)) for c in causes),
             _percent(s.get("drop_rate")), _percent(s.get("outage_rate")),
             _number(".3g")(_per_round(s.get("harq_retransmissions"), s.get("rounds_completed"))),
             _number("d")(s.get("rounds_all_lost"))] for s in summaries]
    return header, rows


def _tta(summaries: Sequence[Summary]) -> tuple[list[str], list[list[str]]]:
    targets = _targets(summaries)
    header = ["run"] + targets
    rows = [[str(s.get("label", "?"))] + [_seconds((s.get("time_to_accuracy_s") or {}).get(t))
                                          for t in targets] for s in summaries]
    return header, rows


def _plain(header: list[str], rows: list[list[str]], width: int) -> str:
    """A space-aligned table; the first column (run labels) is cut with ``~`` when too wide."""
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    rest = sum(widths[1:]) + 2 * (len(widths) - 1)
    if widths[0] + rest > width:
        widths[0] = max(len(header[0]), width - rest, 6)

    def line(cells: list[str]) -> str:
        first = cells[0] if len(cells[0]) <= widths[0] else cells[0][:widths[0] - 1] + "~"
        return "  ".join([first.ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:],
                                                                                strict=True)]).rstrip()

    return "\n".join(line(r) for r in [header] + rows)


_TEXT_COLUMNS = ("run", "algorithm", "status")


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    align = ["---" if h in _TEXT_COLUMNS else "---:" for h in header]  # numbers right-aligned
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def notes(summaries: Sequence[Summary]) -> list[str]:
    """What the tables must not hide, one line each: each run's ``warnings`` (every round lost every
    selected client), a run whose accuracy is not the global model's (so it is not compared
    unawares), and, once, :data:`DROPS_NOTE` with the runs that dropped clients."""
    present = _present(summaries)
    lines = [f"warning: {s.get('label', '?')}: {w}" for s in present for w in s.get("warnings") or ()]
    lines += [f"note: {s['label']} accuracy is of the {s['evaluated']}" for s in present
              if s.get("evaluated", GLOBAL_MODEL_EVALUATION) != GLOBAL_MODEL_EVALUATION]
    lossy = [f"{s.get('label', '?')} {_dropped(s)} of {s.get('client_rounds')} client-rounds" for s in present
             if _dropped(s)]
    if lossy:
        lines.append(f"note: {DROPS_NOTE} (dropped: {'; '.join(lossy)})")
    return lines


def format_tables(summaries: Sequence[Summary], width: int = 80) -> str:
    """The printed comparison: totals, a legend, then simulated time to each target accuracy.

    Parameters
    ----------
    summaries : sequence of dict
        The runs' summaries (empty ones are skipped).
    width : int
        No line is longer than this (labels are cut with ``~`` when needed; the files keep them whole).
    """
    present = _present(summaries)
    header, rows = _totals(present, short=True)
    totals, legend = _plain(header, rows, width=width), list(_LEGEND)
    # Columns the files always have, printed when a run has them and they fit the width without
    # cutting a label (the note after the tables gives the drops in any case), in this order; the
    # best accuracy (the final one is the default: best favours oscillating methods) beside the final one, whose
    # legend line covers it, the others at the end.
    optional = [("drop %", "drop_rate", _percent, _DROP_LEGEND, any(_dropped(s) for s in present)),
                ("client J", "client_energy_j", _joules, _ENERGY_LEGEND,
                 any(s.get("client_energy_j") is not None for s in present)),
                ("best acc", "best_test_accuracy", _number(".4f"), None, True)]
    for name, key, fmt, explained, wanted in optional:
        if not wanted:
            continue
        at = header.index("final acc") + 1 if explained is None else len(header)
        wider = (header[:at] + [name] + header[at:],
                 [r[:at] + [fmt(s.get(key))] + r[at:] for r, s in zip(rows, present, strict=True)])
        text = _plain(*wider, width=10**6)
        if max(len(line) for line in text.splitlines()) <= width:
            (header, rows), totals = wider, text
            if explained is not None:
                legend = [*legend[:-1], legend[-1] + ";", explained]
    parts = [totals, *legend]
    if _targets(present):
        parts += ["", "simulated time to accuracy (s; - = not reached)", _plain(*_tta(present), width=width)]
    wrapped = [textwrap.fill(n, width=width, subsequent_indent="  ") for n in notes(present)]
    return "\n".join(parts + wrapped)


def markdown(summaries: Sequence[Summary]) -> str:
    """``summary.md``: every total of every run, then time to accuracy, as Markdown tables."""
    present = _present(summaries)
    parts = [SCENARIO_SUMMARY_MD_TITLE, "", _markdown(*_totals(present, short=False)), "",
             " ".join(_LEGEND) + "; GFLOP: 10^9 FLOPs, cumulative; " + _DROP_LEGEND + ".",
             "", "# What the radio lost", "", _markdown(*_drops(present)), "",
             "client-rounds: clients selected, summed over the rounds; drops by cause (outage: its upload failed "
             "after its last attempt; deadline, over_selection: the straggler policy left it out; unavailable: it "
             "went offline; battery: its battery emptied); outage %: uplink attempts that failed; HARQ "
             "copies/round: transport-block copies beyond the first, per round; rounds all lost: rounds that "
             "dropped every selected client."]
    with_network = [s for s in present if isinstance(s.get("handovers"), dict)]
    if with_network:
        causes = sorted({c for s in with_network for c in s["handovers"]})
        parts += ["", "# Handovers", "", _markdown(["run", "cells", *causes],
                                                    [[str(s.get("label", "?")), _number("d")(s.get("n_cells")),
                                                      *(_number("d")(s["handovers"].get(c, 0)) for c in causes)]
                                                     for s in with_network]),
                  "", "a3: handovers (TS 38.331 event A3); rlf: radio link failures (T310); handovers.csv lists "
                  "each."]
        loaded = [s for s in with_network if isinstance(s.get("cells"), list)]
        if loaded:
            parts += ["", "# Load per cell", "", _markdown(
                ["run", "cell", "client-rounds", "uplink MB", "uplink air s", "handovers in", "handovers out"],
                [[str(s.get("label", "?")), str(c.get("cell")), _number("d")(c.get("client_rounds")),
                  _number(".3g")(None if c.get("uplink_bytes") is None else c["uplink_bytes"] / 1e6),
                  _number(".3g")(c.get("uplink_air_s")), _number("d")(c.get("handovers_in")),
                  _number("d")(c.get("handovers_out"))] for s in loaded for c in s["cells"]]),
                "", "client-rounds: the rounds' clients by their serving cell at the round's start (clients.csv's "
                "cell), with their uplink bytes and time on the air; handovers in and out: every client's, into "
                "and out of the cell (handovers.csv)."]
    parts += _backhaul(present)
    if _targets(present):
        parts += ["", "# Simulated time to accuracy (s)", "", _markdown(*_tta(present)), "", "- = not reached."]
    extra = notes(present)
    return "\n".join(parts + ([""] + extra if extra else [])) + "\n"


def _backhaul(summaries: Sequence[Summary]) -> list[str]:
    """summary.md's backhaul section: the runs with edge servers (``summary.json``'s ``backhaul_bytes``),
    their migrations, handover drops, backhaul MB and J; nothing when no run has edge servers."""
    edged = [s for s in summaries if s.get("backhaul_bytes") is not None]
    if not edged:
        return []
    return ["", "# Edge servers: the backhaul", "", _markdown(
        ["run", "migrations", "handover drops", "backhaul MB", "backhaul J"],
        [[str(s.get("label", "?")), _number("d")(s.get("migrations")), _number("d")(s.get("handover_drops")),
          _number(".3g")(s["backhaul_bytes"] / BYTES_PER_MB), _joules(s.get("backhaul_energy_j"))] for s in edged]),
        "", "migrations: server-side states moved edge to edge on handovers; backhaul MB: 10^6 bytes over the "
        "backhaul (migrations, the cloud's steps' payloads, the hierarchical aggregation); backhaul J: their "
        "energy, 8 x bytes x server.edge.backhaul_j_per_bit (- without an energy ledger)."]


def summary_paths(out_dir: Path | str) -> tuple[Path, Path]:
    """Where :func:`write_summary_files` writes in ``out_dir``: ``summary.csv`` and ``summary.md``."""
    out = Path(out_dir)
    return out / SCENARIO_SUMMARY_CSV, out / SCENARIO_SUMMARY_MD


def write_summary_files(summaries: Sequence[Summary], out_dir: Path | str) -> tuple[Path, Path]:
    """Write ``summary.csv`` and ``summary.md`` into ``out_dir`` (created if missing).

    Returns
    -------
    (pathlib.Path, pathlib.Path)
        The CSV and Markdown paths.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    columns, rows = csv_rows(summaries)
    csv_path, md_path = summary_paths(out)
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in row.items()} for row in rows)
    md_path.write_text(markdown(summaries))
    return csv_path, md_path


#: What the radio lost, as ``summary.json`` says it (:mod:`sfl_sim.runs.summary`); a loaded run
#: takes these from its summary, the rows of ``metrics.csv`` do not hold them.
_RADIO_KEYS = ("client_rounds", "client_updates", "dropped_clients", "dropped_clients_by_cause", "drop_rate",
               "rounds_all_lost", "uplink_attempts", "outage_rate", "retransmissions", "dropped_transmissions",
               "harq_retransmissions", "warnings")


def _last(metrics: pd.DataFrame, column: str) -> float | None:
    if column not in metrics.columns:
        return None
    values = metrics[column].dropna()
    return float(values.iloc[-1]) if len(values) else None


def run_summary(run: Run, targets: Sequence[float] = DEFAULT_TARGETS) -> dict[str, Any]:
    """The summary of a loaded run as its ``metrics.csv`` says it now (a running run included).

    Parameters
    ----------
    run : Run
        A run loaded with :func:`sfl_sim.analysis.load_run`.
    targets : sequence of float
        Accuracy targets (fractions 0..1) of ``time_to_accuracy_s``.

    Returns
    -------
    dict
        The keys of :data:`CSV_COLUMNS` and ``time_to_accuracy_s`` (keyed ``f"{target:g}"``, None
        when not reached): the final, best (:func:`sfl_sim.analysis.tta.best_test_accuracy`) and
        cumulative numbers of the last evaluated row, ``rounds_completed`` of ``summary.json``
        (else the last evaluated round), ``seed`` and ``rounds_planned`` of ``summary.json``
        (else of ``scenario.yaml``), ``status``, ``evaluated``, the drop and outage counts and
        ``warnings`` of ``summary.json``; None where there is nothing to take it from.
    """
    m, s = run.metrics, run.summary
    missing = [c for c in ("round", "sim_time_s", "test_accuracy") if c not in m.columns]
    if missing:
        raise KeyError(f"run {run.label!r} ({run.path}): metrics is missing column(s) {missing}")
    rounds = s.get("rounds_completed")
    if not isinstance(rounds, (int, float)) or isinstance(rounds, bool) or not math.isfinite(rounds):
        last_round = _last(m, "round")
        rounds = 0 if last_round is None else last_round
    best = best_test_accuracy(m)
    tta = {f"{t:g}": time_to_accuracy_s(m, t) for t in targets}
    return {
        "label": run.label,
        "algorithm": run.algorithm,
        "seed": s.get("seed", run.scenario.get("seed")),
        "status": str(s.get("status", "")),
        "evaluated": s.get("evaluated"),
        "rounds_completed": int(rounds),
        "rounds_planned": s.get("rounds_planned", run.scenario.get("rounds")),
        "final_test_accuracy": _last(m, "test_accuracy"),
        "best_test_accuracy": None if math.isnan(best) else best,
        "final_sim_time_s": _last(m, "sim_time_s"),
        **{c: _last(m, c) for c in ("host_time_s", "uplink_bytes", "downlink_bytes", "client_flops", "server_flops")},
        "client_energy_j": s.get("client_energy_j"),
        **{key: s.get(key) for key in _RADIO_KEYS},
        "time_to_accuracy_s": {k: None if math.isnan(v) else v for k, v in tta.items()},
    }


def summary_table(runs: Sequence[Run], targets: Sequence[float] = DEFAULT_TARGETS) -> pd.DataFrame:
    """The comparison table of loaded runs: one row per run, numbers from ``metrics.csv``.

    Parameters
    ----------
    runs : sequence of Run
        Runs loaded with :func:`sfl_sim.analysis.load_run` / :func:`sfl_sim.analysis.load_runs`.
    targets : sequence of float, optional
        Accuracy targets (fractions 0..1) for the time-to-accuracy columns.

    Returns
    -------
    pandas.DataFrame
        The columns of ``summary.csv`` (:data:`CSV_COLUMNS`, then one ``tta_<target>_s`` per
        target: simulated seconds, ``nan`` when not reached), the values of :func:`run_summary`;
        a measured number (accuracy, times, counters) there is nothing to take from is ``nan``.

    Raises
    ------
    ValueError
        If a target is not a fraction in [0, 1], or two targets share a column name.
    KeyError
        If a run's metrics lack ``sim_time_s`` or ``test_accuracy``.
    """
    targets = tuple(float(t) for t in targets)
    tta_cols = [tta_column_name(t) for t in targets]
    if len(set(tta_cols)) != len(tta_cols):
        raise ValueError(f"duplicate targets in {targets}")
    columns, rows = csv_rows([run_summary(run, targets) for run in runs], targets=[f"{t:g}" for t in targets])
    table = pd.DataFrame(rows, columns=columns)
    measured = ["client_updates", *columns[columns.index("final_test_accuracy"):]]
    table[measured] = table[measured].astype(float)
    return table
