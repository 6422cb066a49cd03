"""Client energy in the report: energy to each target (total and per-client maximum) with paired
ratios over a reference, and the cumulative energy curve of the accuracy-versus-energy figure.

Definitions (also printed under the rendered tables):

* cumulative client energy at an evaluated round: the sum of ``rounds.csv``'s ``client_energy_j``
  over the rounds up to it (0 at round 0); ``nan`` for a run without an energy ledger;
* energy to a target: that sum at the first evaluation reaching the target
  (:func:`analysis.tta.first_reaching`, the time table's definition), mean ± std over the seeds
  that reached it;
* per-client maximum to a target: the most any one client had spent by then (``energy.csv``
  summed per client over those rounds);
* energy ratio: :func:`analysis.stats.paired_speedup` of the energies, ``E_ref / E_alg`` (above 1:
  the algorithm spent less), with the time table's pairing, edges and interval rule.

Imports neither torch nor the engine (only the run files, through :mod:`analysis.schema`).
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Sequence

import numpy as np
import pandas as pd

from .schema import ENERGY_FILE, ROUNDS_FILE
from .stats import BOOTSTRAP_SEED, DDOF, N_BOOT, describe, paired_speedup
from .study_data import StudyData
from .tables import (SPEEDUP_COLUMNS, Layout, _groups, _ordered, _setting_headers, _tta_cell, _wide,
                     _with_coordinates, speedup_cell, speedup_notes, target_text)
from .tta import first_reaching

__all__ = ["ENERGY_CURVE", "ENERGY_CURVE_COLUMN", "cumulative_energy_j", "metrics_with_energy", "has_energy",
           "energy_table", "energy_layouts"]

#: The report's accuracy-versus-energy figure kind (:data:`analysis.figures.EXTRA_CURVES`).
ENERGY_CURVE = "accuracy_vs_energy"
#: The cumulative client-energy column :func:`metrics_with_energy` adds to the metrics (J).
ENERGY_CURVE_COLUMN = "client_energy_j"
_KEYS = ["setting", "algorithm"]
_QUANTITIES = {"energy_j": "total client energy", "energy_max_j": "most any one client spent"}


def has_energy(study: StudyData) -> bool:
    """Whether any run of ``study`` recorded client energy (a non-empty ``client_energy_j``)."""
    return "client_energy_j" in study.rounds.columns and bool(study.rounds["client_energy_j"].notna().any())


def metrics_with_energy(study: StudyData) -> pd.DataFrame:
    """``study.metrics`` with :data:`ENERGY_CURVE_COLUMN`: each evaluated row's cumulative client
    energy (J); ``nan`` for the runs without an energy ledger."""
    m = study.metrics.copy()
    if not has_energy(study):
        m[ENERGY_CURVE_COLUMN] = np.nan
        return m
    r = study.rounds[["run_id", "round", "client_energy_j"]].sort_values(["run_id", "round"], kind="stable")
    recorded = r.groupby("run_id")["client_energy_j"].apply(lambda s: s.notna().all() and len(s) > 0)
    r = r.assign(cum=r.groupby("run_id")["client_energy_j"].cumsum())
    cum = r.set_index(["run_id", "round"])["cum"]
    keys = pd.MultiIndex.from_arrays([m["run_id"].to_numpy(), m["round"].to_numpy()])
    values = np.array(cum.reindex(keys).to_numpy(dtype=float), copy=True)
    values[m["round"].to_numpy() == 0] = 0.0
    values[~m["run_id"].map(recorded).fillna(False).to_numpy(dtype=bool)] = np.nan
    m[ENERGY_CURVE_COLUMN] = values
    return m


def cumulative_energy_j(run_dir: str | Path, rounds: Sequence[int] | np.ndarray) -> np.ndarray:
    """One run's cumulative client energy (J) at each of ``rounds`` (0 at round 0), from its
    ``rounds.csv``; ``nan`` throughout when the run recorded no energy."""
    wanted = np.asarray(rounds, dtype=float)
    file = Path(run_dir) / ROUNDS_FILE
    nan = np.full(wanted.shape, np.nan)
    if not file.is_file():
        return nan
    r = pd.read_csv(file)
    if "client_energy_j" not in r.columns or r.empty:
        return nan
    energy = pd.to_numeric(r["client_energy_j"], errors="coerce")
    if energy.isna().any():
        return nan
    cum = pd.Series(energy.cumsum().to_numpy(), index=r["round"].to_numpy())
    out = cum.reindex(wanted).to_numpy(dtype=float).copy()
    out[wanted == 0] = 0.0
    return out


class _MaxClientEnergy:
    """The most any one client of a run had spent by each round (from its ``energy.csv``, read once)."""

    def __init__(self) -> None:
        self._curves: dict[str, pd.Series | None] = {}

    def __call__(self, path: str, through_round: int) -> float:
        """The most any one client of the run in ``path`` spent in rounds 1..``through_round`` (J)."""
        if through_round <= 0:
            return 0.0
        if path not in self._curves:
            file = Path(path) / ENERGY_FILE
            curve = None
            if file.is_file():
                e = pd.read_csv(file, usecols=["round", "client", "total_j"]).sort_values("round", kind="stable")
                spent = e.pivot_table(index="round", columns="client", values="total_j", aggfunc="sum")
                curve = spent.fillna(0.0).cumsum().max(axis=1)
            self._curves[path] = curve
        curve = self._curves[path]
        if curve is None:
            return float("nan")
        upto = curve.loc[curve.index <= through_round]
        return float(upto.iloc[-1]) if len(upto) else 0.0


def _energy_per_run(study: StudyData, metrics: pd.DataFrame, target: float,
                    max_energy: _MaxClientEnergy) -> pd.DataFrame:
    hit = first_reaching(metrics, target)
    out = study.runs[["run_id", *_KEYS, "seed", "path"]].copy()
    out["energy_j"] = out["run_id"].map(hit[ENERGY_CURVE_COLUMN]).astype(float)
    rounds = out["run_id"].map(hit["round"])
    out["energy_max_j"] = [max_energy(p, int(rnd)) if pd.notna(rnd) and pd.notna(e) else np.nan
                           for p, rnd, e in zip(out["path"], rounds, out["energy_j"])]
    return out.drop(columns=["path"])


def energy_table(
    study: StudyData,
    targets: Sequence[float],
    reference: str | None = None,
    *,
    algorithms: Sequence[str] | None = None,
    n_boot: int = N_BOOT,
    bootstrap_seed: int = BOOTSTRAP_SEED,
) -> pd.DataFrame:
    """Client energy to each target per (setting, algorithm), and paired ratios over a reference.

    Returns
    -------
    pandas.DataFrame
        Columns ``setting``, setting fields, ``algorithm``, ``target``, ``n_runs``, ``reached``,
        ``energy_j_{mean,std}`` and ``energy_max_j_{mean,std}`` (J, over the seeds that reached the
        target), and with a reference, for ``q`` in ``energy_j``, ``energy_max_j``, the
        :class:`analysis.stats.SpeedUp` fields as ``{q}_ratio``, ``{q}_ratio_low`` ... (the
        names of :data:`analysis.tables.SPEEDUP_COLUMNS` with ``speedup`` replaced).
    """
    metrics = metrics_with_energy(study)
    max_energy = _MaxClientEnergy()
    frames = []
    for target in targets:
        runs = _energy_per_run(study, metrics, target, max_energy)
        stats = describe(runs, _KEYS, list(_QUANTITIES)).reset_index()
        table = _groups(study).merge(stats, on=_KEYS, how="left")
        table = table.rename(columns={"energy_j_n": "reached"}).drop(columns=["energy_max_j_n"])
        table.insert(2, "target", float(target))
        if reference is not None:
            ref = runs.loc[runs["algorithm"] == reference, ["setting", "seed", *_QUANTITIES]]
            paired = runs.merge(ref, on=["setting", "seed"], how="left", suffixes=("", "_ref"))
            rows = []
            for (setting, algorithm), g in paired.groupby(_KEYS, sort=False):
                row: list = [setting, algorithm]
                for q in _QUANTITIES:
                    su = paired_speedup(g[f"{q}_ref"].to_numpy(), g[q].to_numpy(), n_boot=n_boot,
                                        seed=bootstrap_seed)
                    row += [su.ratio, su.low, su.high, su.pairs, su.interval, su.seed_min, su.seed_max, su.case,
                            su.boot_edge]
                rows.append(row)
            table = table.merge(pd.DataFrame(rows, columns=[*_KEYS, *_ratio_columns()]), on=_KEYS, how="left")
        frames.append(table)
    table = pd.concat(frames, ignore_index=True)
    table["reached"] = table["reached"].fillna(0).astype(int)
    cols = [*_KEYS, "target", "n_runs", "reached", *[f"{q}_{s}" for q in _QUANTITIES for s in ("mean", "std")]]
    if reference is not None:
        cols += _ratio_columns()
    return _with_coordinates(_ordered(table[cols], study, algorithms or study.algorithms), study)


def _ratio_columns(quantity: str | None = None) -> list[str]:
    qs = [quantity] if quantity else list(_QUANTITIES)
    return [f"{q}_{c.replace('speedup', 'ratio')}" for q in qs for c in SPEEDUP_COLUMNS]


def _as_speedup(r, quantity: str) -> SimpleNamespace:
    """A row's ratio of ``quantity`` under the speed-up names :func:`analysis.tables.speedup_cell` reads."""
    return SimpleNamespace(**{c: getattr(r, f"{quantity}_{c.replace('speedup', 'ratio')}") for c in SPEEDUP_COLUMNS})


def energy_layouts(table: pd.DataFrame, study: StudyData, algorithms: Sequence[str], reference: str | None,
                   notes: Sequence[str] = (), *, n_boot: int = N_BOOT) -> list[Layout]:
    """Per target: total client energy and per-client maximum to it (J), and with a reference the
    energy ratios (``E_ref / E_alg``)."""
    columns = [_setting_headers(study)[s] for s in study.settings]
    out = []
    for target, part in table.groupby("target", sort=True):
        t = target_text(target)
        for q, what in _QUANTITIES.items():
            rows = _wide(part, study, algorithms, lambda r, q=q: _tta_cell(getattr(r, f"{q}_mean"),
                                                                            getattr(r, f"{q}_std"), r.reached,
                                                                            r.n_runs))
            tag = "max" if q == "energy_max_j" else "total"
            source = "rounds.csv client_energy_j" + ("; per client from energy.csv" if tag == "max" else "")
            out.append(Layout(
                f"Client energy to {t} test accuracy, {what} (J)", columns, [(None, rows)],
                [f"cumulative client energy ({source}) "
                 f"at the first evaluation reaching {t}; mean ± std (ddof = {DDOF}) over the seeds that reached it; "
                 "(k/n): k of n seeds reached it.", *notes],
                label=f"tab:energy-{tag}-{t.rstrip('%')}"))
            if reference is not None:
                rows = _wide(part, study, algorithms,
                             lambda r, q=q: speedup_cell(_as_speedup(r, q), r.algorithm == reference))
                sub = part.rename(columns={f"{q}_{c.replace('speedup', 'ratio')}": c for c in SPEEDUP_COLUMNS})
                out.append(Layout(
                    f"Energy ratio to {t} over {reference}, {what} ({reference}'s energy / the algorithm's)",
                    columns, [(None, rows)],
                    ["above 1: the algorithm spent less. The pairing, edges and interval are the speed-up's: "
                     "energies in place of times (0 J at round 0 plays the role of t = 0).",
                     *speedup_notes(sub, t, reference, multi_setting=len(study.settings) > 1, n_boot=n_boot),
                     *notes],
                    label=f"tab:energy-ratio-{tag}-{t.rstrip('%')}"))
    return out
