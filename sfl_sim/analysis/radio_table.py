"""The report's "what the radio lost" table: drops by cause, outage, HARQ copies and where a round's
time went, per (setting, algorithm), with a flag where drops shortened the rounds.

Read from each run's ``rounds.csv`` (:attr:`StudyData.rounds`: uplink attempts, failed attempts,
dropped clients, HARQ copies, round durations) and, where the runs wrote one, ``clients.csv``
(:attr:`StudyData.clients`: each client-round's outcome, hence the drops by cause, and the time split).
Every number is a mean over seeds of a per-run quantity:

* ``drop_rate``: dropped client-rounds over client-rounds (``dropped_clients`` / cohort sizes);
* ``drops_<cause>``: the same for one cause (``clients.csv``'s ``outcome``);
* ``outage_rate``: failed uplink attempts over attempts (``(retransmissions + dropped_transmissions) /
  uplink_attempts``, as ``summary.json``'s ``outage_rate``);
* ``harq_per_round``: HARQ copies per round;
* ``round_s``: mean simulated round duration, and the mean client time split
  (:data:`~sfl_sim.runs.rundir.schema.CLIENT_TIME_COLUMNS`) from ``clients.csv``;
* with a network and edge servers (``server.edge``), per round: the handovers of the round's clients,
  the client-seconds they lost (interruptions and migrations), the migrations, the backhaul's
  megabytes and its joules (``backhaul_energy_j``: unknown, '-', for a run without an energy ledger
  or older than the column) (:data:`EDGE_COLUMNS`, ``rounds.csv``), shown where any run has them;
* with a network (``cell.network``; ``summary.json``'s ``n_cells``), each cell's load
  (:data:`CELL_LOAD_COLUMNS`): the cell count and the busiest and the least-busy cell's share of the
  run's client-rounds, by ``clients.csv``'s ``cell`` (the serving cell at the round's start; a
  client-round without a link, -1, counts for no cell, so the shares of a run's cells add up to
  less than 1 where some had none; a cell that served none has share 0).  The busiest cell of one
  seed need not be that of another: the table's value is the mean over seeds of each run's largest
  (smallest) share, against an even load of 1 / cells.  Our choice over a per-cell breakdown: two
  numbers read the same for 7 cells or 57, and for networks that differ between settings.  A run
  whose ``clients.csv`` does not say (written before the column, or without the file) shows none.
  Runs without a network get no such columns (a study of none: the table as without networks).

A setting whose runs dropped clients gets a note: a dropped client's payload never reaches the
server, so its round ends without waiting for it — a lossy setting looks faster in simulated time
than the same setting without loss, and trains on fewer clients.

Imports neither torch nor the engine.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sfl_sim.analysis.study_data import GROUP_KEYS, StudyData
from sfl_sim.analysis.tables import Layout, in_study_order
from sfl_sim.runs.rundir.schema import CLIENT_KEPT, CLIENT_TIME_COLUMNS

__all__ = ["has_radio_losses", "has_cell_load", "radio_table", "radio_layouts", "radio_title", "DROPS_SHORTEN_ROUNDS",
           "EDGE_COLUMNS", "CELL_LOAD_COLUMNS"]

_KEYS = list(GROUP_KEYS)

#: rounds.csv's edge columns the table shows per round where a run has them: column -> (header, scale).
EDGE_COLUMNS: dict[str, tuple[str, float]] = {
    "handovers": ("handovers / round", 1.0), "handover_lost_s": ("handover s / round", 1.0),
    "migrations": ("migrations / round", 1.0), "backhaul_bytes": ("backhaul MB / round", 1e-6),
    "backhaul_energy_j": ("backhaul J / round", 1.0)}
#: Edge columns a run may leave empty for "not recorded" (no energy ledger, or a rounds.csv older than
#: the column): such a run's value is unknown ('-'), not 0.
_EDGE_UNKNOWN_WHEN_EMPTY = ("backhaul_energy_j",)

#: The per-cell load columns of runs with a network (:func:`radio_table`): column -> header.
CELL_LOAD_COLUMNS: dict[str, str] = {"n_cells": "cells", "cell_share_max": "busiest cell %",
                                     "cell_share_min": "least-busy cell %"}

_TITLE = "What the radio lost"

#: The note under the table where a setting dropped clients.
DROPS_SHORTEN_ROUNDS = ("dropped clients shorten rounds: a round ends without waiting for a client whose payload "
                        "was lost, so a lossy setting looks faster in simulated time (and trains on fewer clients)")


def _per_run(study: StudyData) -> pd.DataFrame:
    """One row per run with rounds.csv: its drop, outage and HARQ numbers and mean round duration."""
    rounds = study.rounds
    if rounds.empty:
        return pd.DataFrame(columns=["run_id", *_KEYS, "rounds", "drop_rate", "outage_rate", "harq_per_round",
                                     "round_s"])
    rows = []
    cohorts = (study.clients.groupby("run_id").size() if not study.clients.empty else pd.Series(dtype=float))
    for (run_id, setting, algorithm), r in rounds.groupby(["run_id", *_KEYS], sort=False):
        attempts = float(r["uplink_attempts"].sum()) if "uplink_attempts" in r else 0.0
        failed = float(r["retransmissions"].sum() + r["dropped_transmissions"].sum())
        client_rounds = float(cohorts.get(run_id, np.nan))
        rows.append({"run_id": run_id, "setting": setting, "algorithm": algorithm, "rounds": len(r),
                     "dropped": float(r["dropped_clients"].sum()), "client_rounds": client_rounds,
                     "outage_rate": failed / attempts if attempts else np.nan,
                     "harq_per_round": float(r["harq_retransmissions"].mean()),
                     "round_s": float(r["round_sim_time_s"].mean()),
                     **{c: float((r[c] if c in _EDGE_UNKNOWN_WHEN_EMPTY else r[c].fillna(0)).mean()) * scale
                        for c, (_, scale) in EDGE_COLUMNS.items() if c in r}})
    per_run = pd.DataFrame(rows)
    per_run["drop_rate"] = per_run["dropped"] / per_run["client_rounds"]
    return per_run


def _causes(study: StudyData) -> pd.DataFrame:
    """Per run, the share of its client-rounds dropped for each cause (``clients.csv``)."""
    clients = study.clients
    if clients.empty:
        return pd.DataFrame(columns=["run_id"])
    dropped = clients.loc[clients["outcome"] != CLIENT_KEPT]
    counts = dropped.groupby(["run_id", "outcome"]).size().unstack(fill_value=0)
    totals = clients.groupby("run_id").size()
    shares = counts.div(totals.reindex(counts.index), axis=0).reindex(totals.index, fill_value=0.0)
    shares.columns = [f"drops_{c}" for c in shares.columns]
    return shares.reset_index()


def _network_runs(study: StudyData) -> pd.DataFrame:
    """The runs with a network: ``run_id`` and ``n_cells`` (summary.json's)."""
    runs = study.runs
    if "n_cells" not in runs:
        return pd.DataFrame(columns=["run_id", "n_cells"])
    return runs.loc[runs["n_cells"].notna(), ["run_id", "n_cells"]]


def _cell_load(study: StudyData) -> pd.DataFrame:
    """Per run with a network: ``n_cells`` and its busiest and least-busy cell's share of its client-rounds
    (NaN where ``clients.csv`` does not say which cell served each: none, or written before ``cell``)."""
    networks = _network_runs(study)
    cells = study.clients.groupby("run_id")["cell"] if not study.clients.empty else None
    rows = []
    for run_id, n_cells in networks.itertuples(index=False):
        n = int(n_cells)
        served = cells.get_group(run_id) if cells is not None and run_id in cells.groups else None
        shares = np.full(n, np.nan)
        if served is not None and len(served) and served.notna().all():
            on = served.to_numpy(dtype=np.int64)
            on = on[(on >= 0) & (on < n)]  # -1: no link at the round's start, no cell's load
            shares = np.bincount(on, minlength=n)[:n] / len(served)
        rows.append({"run_id": run_id, "n_cells": float(n), "cell_share_max": float(shares.max()) if n else np.nan,
                     "cell_share_min": float(shares.min()) if n else np.nan})
    return pd.DataFrame(rows, columns=["run_id", *CELL_LOAD_COLUMNS])


def has_cell_load(study: StudyData) -> bool:
    """Whether any run has a network of cells (``summary.json``'s ``n_cells``): its table shows each
    setting's cell load, even where the radio lost nothing."""
    return not _network_runs(study).empty


def radio_title(table: pd.DataFrame) -> str:
    """The radio table's title: what the radio lost, and the cells' load where it shows it."""
    return f"{_TITLE}, and the cells' load" if "n_cells" in table.columns else _TITLE


def has_radio_losses(study: StudyData) -> bool:
    """Whether any run dropped a client, failed an uplink attempt, sent a HARQ copy or (with edge
    servers) saw a handover or used the backhaul."""
    r = study.rounds
    if r.empty:
        return False
    seen = ["dropped_clients", "retransmissions", "dropped_transmissions", "harq_retransmissions",
            *[c for c in EDGE_COLUMNS if c in r]]
    return bool((r[seen].fillna(0).to_numpy() > 0).any())


def radio_table(study: StudyData, algorithms: Sequence[str] | None = None) -> pd.DataFrame:
    """Drops, outage, HARQ and the round's time split per (setting, algorithm), means over seeds.

    Parameters
    ----------
    study : StudyData
    algorithms : sequence of str, optional
        Row order (default: the study's).

    Returns
    -------
    pandas.DataFrame
        ``setting``, ``algorithm``, ``n_runs``, ``drop_rate``, one ``drops_<cause>`` per cause seen,
        ``outage_rate``, ``harq_per_round``, ``round_s`` and the mean of each
        :data:`~sfl_sim.runs.rundir.schema.CLIENT_TIME_COLUMNS` (NaN without ``clients.csv``); where
        any run has a network, :data:`CELL_LOAD_COLUMNS` (``n_cells``, ``cell_share_max``,
        ``cell_share_min``: means over the seeds with a known load; NaN for a setting without a network).
    """
    per_run = _per_run(study)
    if per_run.empty:
        return pd.DataFrame(columns=[*_KEYS, "n_runs", "drop_rate", "outage_rate", "harq_per_round", "round_s"])
    per_run = per_run.merge(_causes(study), on="run_id", how="left")
    if not study.clients.empty:
        split = study.clients.groupby("run_id")[list(CLIENT_TIME_COLUMNS)].mean().reset_index()
        per_run = per_run.merge(split, on="run_id", how="left")
    if has_cell_load(study):
        per_run = per_run.merge(_cell_load(study), on="run_id", how="left")
    values = [c for c in per_run.columns if c not in ("run_id", *_KEYS, "rounds", "dropped", "client_rounds")]
    table = per_run.groupby(_KEYS, sort=False)[values].mean()
    table.insert(0, "n_runs", per_run.groupby(_KEYS, sort=False).size())
    table = table.reset_index()
    order = list(algorithms) if algorithms is not None else list(study.algorithms)
    return in_study_order(table, study, order)


def _pct(x: float) -> str:
    return "-" if not np.isfinite(x) else f"{100 * x:.1f}"


def _sec(x: float) -> str:
    return "-" if not np.isfinite(x) else f"{x:.3g}"


def radio_layouts(table: pd.DataFrame, study: StudyData) -> list[Layout]:
    """One layout: a row per (setting, algorithm), the loss and time columns; the note once.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`radio_table`.
    study : StudyData
    """
    causes = sorted(c for c in table.columns if c.startswith("drops_"))
    split = [c for c in CLIENT_TIME_COLUMNS if c in table.columns and table[c].notna().any()]
    edge = [c for c in EDGE_COLUMNS if c in table.columns and (table[c].fillna(0) > 0).any()]
    load = [c for c in CELL_LOAD_COLUMNS if c in table.columns]
    columns: list[tuple[str, ...]] = [
        ("seeds",), ("drop %",), *[(f"drop: {c.removeprefix('drops_')} %",) for c in causes], ("failed attempts %",),
        ("HARQ copies / round",), ("round s",), *[(EDGE_COLUMNS[c][0],) for c in edge],
        *[(CELL_LOAD_COLUMNS[c],) for c in load], *[(c,) for c in split]]
    groups: list[tuple[str | None, list[tuple[str, list[str]]]]] = []
    for setting in study.settings:
        part = table.loc[table["setting"] == setting]
        if part.empty:
            continue
        rows = []
        for _, r in part.iterrows():
            cells = [str(int(r["n_runs"])), _pct(r["drop_rate"]), *[_pct(r[c]) for c in causes],
                     _pct(r["outage_rate"]), _sec(r["harq_per_round"]), _sec(r["round_s"]),
                     *[_sec(r[c]) for c in edge], *[_load(c, r[c]) for c in load], *[_sec(r[c]) for c in split]]
            rows.append((str(r["algorithm"]), cells))
        groups.append((setting if len(study.settings) > 1 else None, rows))
    notes = ["Means over seeds of each run's rates (drops: share of client-rounds, in all and by cause; failed "
             "attempts: uplink attempts in outage over attempts; time split: the mean client-round, s, from "
             "clients.csv)."]
    if edge:
        joules = (" and its joules (8 x bytes x server.edge.backhaul_j_per_bit; '-': no energy ledger)"
                  if "backhaul_energy_j" in edge else "")
        notes.append("With edge servers, per round: the handovers of the round's clients, the client-seconds they "
                     f"lost (interruptions and migrations over the backhaul), the migrations, the backhaul's MB"
                     f"{joules} (rounds.csv).")
    if load:
        notes.append("With a network of cells: the busiest and the least-busy cell's share of the run's client-rounds "
                     "(clients.csv's cell, the serving cell at the round's start; an even load is 100 / cells %; a "
                     "client-round without a link counts for no cell), means over seeds of each run's largest and "
                     "smallest share; '-': no network, or a clients.csv that does not say.")
    lossy = table.loc[table["drop_rate"].fillna(0) > 0, "setting"].unique().tolist()
    if lossy:
        notes.append(f"{DROPS_SHORTEN_ROUNDS}: {', '.join(map(str, lossy))}.")
    return [Layout(radio_title(table), columns, groups, notes, label="tab:radio")]


def _load(column: str, x: float) -> str:
    """A cell-load cell: the cell count as an integer (the same in every seed of a setting), a share in %."""
    if column == "n_cells":
        return "-" if not np.isfinite(x) else f"{x:.0f}"
    return _pct(x)
