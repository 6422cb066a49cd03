"""What each run was given: its rounds, the client updates its server used and its simulated time.

An asynchronous run's ``rounds`` counts aggregations (FedAsync: one client update each), a
synchronous run's a cohort's updates each: 20 rounds can be 20 client updates or 200. The report
shows the three side by side (:func:`budget_table`, :func:`budget_layout`) and warns when the
algorithms compared in a setting had budgets more than :data:`BUDGET_RATIO_WARN` apart
(:func:`budget_warnings`).

Client updates are the run's own count, ``summary.json``'s ``client_updates`` (the cohort clients
the server used, as rounds end); a run without it counts the ``clients.csv`` rows whose
``outcome`` is ``kept`` — which miss an asynchronous run's dispatch groups still in flight at its
end (their rows are written when the group's last client arrives) — and one with neither has none
counted (``nan``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sfl_sim.analysis.study_data import StudyData
from sfl_sim.analysis.tables import Layout, setting_headers, wide_rows
from sfl_sim.runs.rundir.schema import CLIENT_KEPT, FIRST_TRAINED_ROUND

__all__ = ["BUDGET_RATIO_WARN", "BUDGET_COLUMNS", "run_budgets", "budget_table", "budget_layout", "budget_warnings"]

#: Budgets of compared runs further apart than this factor are warned about.
BUDGET_RATIO_WARN = 2.0
#: Per run: rounds run, client updates the server used, simulated seconds at the last evaluation.
BUDGET_COLUMNS = ("rounds", "client_updates", "sim_time_s")
_KEYS = ["setting", "algorithm"]


def run_budgets(study: StudyData) -> pd.DataFrame:
    """One row per run: ``run_id``, ``setting``, ``algorithm`` and :data:`BUDGET_COLUMNS`."""
    m = study.metrics.loc[study.metrics["round"] >= FIRST_TRAINED_ROUND]
    last = m.groupby("run_id")[["round", "sim_time_s"]].max()
    out = study.runs[["run_id", *_KEYS]].copy()
    out["rounds"] = out["run_id"].map(last["round"]).astype(float)
    out["sim_time_s"] = out["run_id"].map(last["sim_time_s"]).astype(float)
    c = study.clients
    kept = (c.loc[c["outcome"] == CLIENT_KEPT].groupby("run_id").size() if not c.empty
            else pd.Series(dtype=float))
    has_clients = set(c["run_id"]) if not c.empty else set()
    rows = [float(kept.get(r, 0)) if r in has_clients else np.nan for r in out["run_id"]]
    own = study.runs["client_updates"].to_numpy(dtype=float)
    out["client_updates"] = np.where(np.isfinite(own), own, rows)
    return out


def budget_table(study: StudyData) -> pd.DataFrame:
    """Per (setting, algorithm): the mean over seeds of :data:`BUDGET_COLUMNS`."""
    return run_budgets(study).groupby(_KEYS, sort=False)[list(BUDGET_COLUMNS)].mean().reset_index()


def _cell(r) -> str:
    updates = "? updates" if np.isnan(r.client_updates) else f"{r.client_updates:.0f} updates"
    return f"{r.rounds:.0f} rounds, {updates}, {r.sim_time_s:.3g} s"


def budget_layout(table: pd.DataFrame, study: StudyData, algorithms: Sequence[str],
                  notes: Sequence[str] = ()) -> Layout:
    """The budget table: rows algorithms, columns settings, cells ``rounds, client updates, simulated s``."""
    headers = setting_headers(study)
    return Layout("What each run was given: rounds, client updates used, simulated time (mean over seeds)",
                  [headers[s] for s in study.settings], [(None, wide_rows(table, study, algorithms, _cell))],
                  ["A round of an asynchronous algorithm is one aggregation, of a synchronous one a cohort's "
                   "updates: compare algorithms by client updates or simulated time, not by rounds. Client updates: "
                   "the run's summary.json count (older runs: clients.csv rows with outcome kept; ?: neither). "
                   "Simulated time: at the last evaluation.",
                   *notes], label="tab:budget")


def budget_warnings(table: pd.DataFrame) -> list[str]:
    """One line per setting where the algorithms' client updates or simulated time differ by more than
    :data:`BUDGET_RATIO_WARN` (smallest to largest mean)."""
    out = []
    for setting, part in table.groupby("setting", sort=False):
        for column, what in (("client_updates", "client updates"), ("sim_time_s", "simulated time")):
            v = part[["algorithm", column]].dropna()
            v = v.loc[v[column] > 0]
            if len(v) < 2:
                continue
            lo, hi = v.loc[v[column].idxmin()], v.loc[v[column].idxmax()]
            if hi[column] > BUDGET_RATIO_WARN * lo[column]:
                out.append(f"Warning: the compared runs' budgets differ by more than {BUDGET_RATIO_WARN:g}x in "
                           f"{setting}: {what} {lo.algorithm} {lo[column]:.3g} vs {hi.algorithm} {hi[column]:.3g} "
                           f"({hi[column] / lo[column]:.1f}x); give every algorithm one budget (max_sim_time_s in "
                           "the study's set:) to compare them at equal cost.")
    return out
