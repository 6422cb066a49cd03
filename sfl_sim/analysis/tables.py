"""The report's tables: accuracy, time-to-accuracy with speed-ups, and overhead (Table V layout).

Each table is computed as a tidy :class:`pandas.DataFrame` (one row per setting × algorithm
[× target]; numeric ``_mean``, ``_std``, ``_n`` columns, raw units: accuracy as a fraction,
seconds, bytes, FLOPs) — that is what the CSV files hold — and rendered for papers by
:func:`to_markdown` / :func:`to_latex` from a :class:`Layout` (accuracy in %, MB, GFLOPs).

Definitions (also printed under each rendered table):

* *final* accuracy: the last evaluation of the run (the tables' default); *last-k mean*: the mean
  of its last :data:`LAST_K_EVALUATIONS` evaluations (less sensitive to the one last round); *best*:
  the maximum over its evaluations (what FedVLS reports; it rewards a method whose accuracy
  oscillates, one lucky evaluation suffices). All over trained rounds only (round >= 1; a round-0
  row, the initial model, counts for time-to-accuracy and curves, not here).
* time to accuracy: :func:`sfl_sim.analysis.tta.first_reaching` — simulated time of the first
  evaluation with accuracy >= target; mean ± std over the seeds that reached it, ``k/n`` reached.
* speed-up: :func:`sfl_sim.analysis.stats.paired_speedup` — the edges (a target met at t = 0) and the
  small-sample rule (the per-seed ratios' range, not a CI, below
  :data:`sfl_sim.analysis.stats.MIN_PAIRS_FOR_CI` pairs) are defined there and spelled out in the notes.
* overhead per round: each run's mean over its rounds of the per-round bytes and FLOPs
  (``rounds.csv``; without that file, the cumulative totals at the last evaluation divided by its
  round), then mean ± std over seeds. To a target: the cumulative counters at the first
  evaluation reaching it, over the seeds that reached it. Client energy (when runs recorded it):
  per round, the mean over the run's rounds of ``client_energy_j``; to a target, the cumulative
  client energy there (:mod:`sfl_sim.analysis.energy_data`, the energy table's definition), over the
  seeds counted that recorded energy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from sfl_sim.analysis.energy_data import (
    energy_per_round_per_run,
    energy_to_target_per_run,
    has_energy,
    metrics_with_energy,
)
from sfl_sim.analysis.stats import (
    BOOTSTRAP_SEED,
    CASE_ALG_AT_START,
    CASE_BOTH_AT_START,
    CASE_REF_AT_START,
    DDOF,
    INTERVAL_BOOTSTRAP,
    INTERVAL_SEED_RANGE,
    MIN_PAIRS_FOR_CI,
    N_BOOT,
    describe,
    km_median,
    paired_speedup,
)
from sfl_sim.analysis.study_data import GROUP_KEYS, StudyData, short_field_names
from sfl_sim.analysis.tta import best_test_accuracy, first_reaching
from sfl_sim.analysis.units import BYTES_PER_MB, FLOPS_PER_GFLOP
from sfl_sim.runs.rundir.schema import CUMULATIVE_COLUMNS, FIRST_TRAINED_ROUND

__all__ = [
    "Layout",
    "per_run_accuracy",
    "accuracy_table",
    "tta_table",
    "overhead_table",
    "accuracy_layouts",
    "tta_layouts",
    "overhead_layouts",
    "to_markdown",
    "to_latex",
    "StatedNotes",
    "latex_escape",
    "target_text",
    "ratio_text",
    "speedup_cell",
    "speedup_notes",
    "SPEEDUP_COLUMNS",
    "ENERGY_COLUMN",
    "group_sizes",
    "in_study_order",
    "with_coordinates",
    "setting_headers",
    "wide_rows",
    "fmt_mean_std",
    "tta_cell",
    "km_tta_cell",
    "settings_table",
    "settings_layout",
    "LAST_K_EVALUATIONS",
    "ACCURACY_KINDS",
]

_KEYS = list(GROUP_KEYS)
_UNIT = {"uplink_bytes": BYTES_PER_MB, "downlink_bytes": BYTES_PER_MB,
         "client_flops": FLOPS_PER_GFLOP, "server_flops": FLOPS_PER_GFLOP}
_OVERHEAD_HEADERS = {"uplink_bytes": "Uplink (MB)", "downlink_bytes": "Downlink (MB)",
                     "client_flops": "Client (GFLOPs)", "server_flops": "Server (GFLOPs)"}
#: The overhead table's client-energy column (J): per round, and cumulative to a target.
ENERGY_COLUMN = "client_energy_j"
_ENERGY_HEADER = "Client energy (J)"
DASH = "–"
#: The speed-up columns of ``tta.csv`` (with a reference), :class:`sfl_sim.analysis.stats.SpeedUp`'s fields.
SPEEDUP_COLUMNS = ("speedup", "speedup_low", "speedup_high", "speedup_pairs", "speedup_interval",
                   "speedup_seed_min", "speedup_seed_max", "speedup_case", "speedup_boot_edge")
#: Marks a speed-up CI that counts resamples by the edge rule (listed in the table's notes).
EDGE_MARK = "†"


def target_text(target: float) -> str:
    """A target as percent text: 0.7 -> ``"70%"``, 0.755 -> ``"75.5%"``."""
    return f"{100 * target:.4g}%"


# ------------------------------------------------------------------------------ computations


#: How many of a run's last evaluations the *last-k mean* accuracy averages.
LAST_K_EVALUATIONS = 5
#: The per-run accuracies the report tabulates, in table order (final first: the default), each
#: column -> (its kind in the LaTeX label, the table's title saying what it is).
ACCURACY_KINDS: dict[str, tuple[str, str]] = {
    "final_test_accuracy": ("final", "Final test accuracy (%): at the last evaluated round"),
    "last_k_test_accuracy": (f"last{LAST_K_EVALUATIONS}",
                             f"Mean test accuracy over the last {LAST_K_EVALUATIONS} evaluations (%)"),
    "best_test_accuracy": ("best", "Best test accuracy (%): the maximum over the evaluated rounds (favours a "
                                   "method whose accuracy oscillates)"),
}


def per_run_accuracy(study: StudyData) -> pd.DataFrame:
    """Final, last-k mean and best test accuracy of every run (trained rounds only).

    Parameters
    ----------
    study : StudyData

    Returns
    -------
    pandas.DataFrame
        ``study.runs[["run_id", "setting", "algorithm", "seed"]]`` plus ``final_round``,
        ``final_test_accuracy``, ``last_k_test_accuracy`` (the mean of the last
        :data:`LAST_K_EVALUATIONS` evaluations, or of all when fewer), ``best_test_accuracy`` (``nan``
        for a run with no trained evaluation).
    """
    m = study.metrics
    trained = m.loc[m["round"] >= FIRST_TRAINED_ROUND]
    last = trained.drop_duplicates("run_id", keep="last").set_index("run_id")  # sorted by round
    best = pd.Series({run_id: best_test_accuracy(rows) for run_id, rows in trained.groupby("run_id", sort=False)},
                     dtype=float)
    out = study.runs[["run_id", *_KEYS, "seed"]].copy()
    out["final_round"] = out["run_id"].map(last["round"])
    out["final_test_accuracy"] = out["run_id"].map(last["test_accuracy"]).astype(float)
    last_k = trained.groupby("run_id", sort=False)["test_accuracy"].apply(
        lambda acc: float(acc.tail(LAST_K_EVALUATIONS).mean()))
    out["last_k_test_accuracy"] = out["run_id"].map(last_k).astype(float)
    out["best_test_accuracy"] = out["run_id"].map(best).astype(float)
    return out


def with_coordinates(table: pd.DataFrame, study: StudyData) -> pd.DataFrame:
    """``table`` (with a ``setting`` column) with the setting's fields as columns after ``setting``."""
    coords = study.runs.drop_duplicates("setting")[["setting", *study.setting_fields]]
    return coords.merge(table, on="setting", how="right")[
        ["setting", *study.setting_fields, *[c for c in table.columns if c != "setting"]]
    ]


def in_study_order(table: pd.DataFrame, study: StudyData, algorithms: Sequence[str]) -> pd.DataFrame:
    """``table``'s rows by setting (``study.settings`` order), then algorithm (``algorithms`` order),
    then ``target`` when it has one; index reset."""
    s_rank = {s: i for i, s in enumerate(study.settings)}
    a_rank = {a: i for i, a in enumerate(algorithms)}
    extra = ["target"] if "target" in table.columns else []
    key = table.assign(_s=table["setting"].map(s_rank), _a=table["algorithm"].map(a_rank))
    return key.sort_values(["_s", "_a", *extra], kind="stable").drop(columns=["_s", "_a"]).reset_index(drop=True)


def group_sizes(study: StudyData) -> pd.DataFrame:
    """Every (setting, algorithm) that has runs, with its number of seeds ``n_runs``."""
    return study.runs.groupby(_KEYS, sort=False).size().rename("n_runs").reset_index()


def accuracy_table(study: StudyData, algorithms: Sequence[str] | None = None) -> pd.DataFrame:
    """Final, last-k mean and best test accuracy per (setting, algorithm): mean, std (ddof 1), n over seeds.

    Parameters
    ----------
    study : StudyData
    algorithms : sequence of str, optional
        Row order (default ``study.algorithms``).

    Returns
    -------
    pandas.DataFrame
        Columns ``setting``, the setting fields, ``algorithm``, ``n_runs``,
        ``final_test_accuracy_{mean,std,n}``, ``last_k_test_accuracy_{mean,std,n}``,
        ``best_test_accuracy_{mean,std,n}`` (fractions).
    """
    runs = per_run_accuracy(study)
    stats = describe(runs, _KEYS, list(ACCURACY_KINDS)).reset_index()
    table = group_sizes(study).merge(stats, on=_KEYS, how="left")
    return with_coordinates(in_study_order(table, study, algorithms or study.algorithms), study)


def _tta_per_run(study: StudyData, target: float) -> pd.DataFrame:
    hit = first_reaching(study.metrics, target)
    out = study.runs[["run_id", *_KEYS, "seed"]].copy()
    out["tta_s"] = out["run_id"].map(hit["sim_time_s"]).astype(float)
    # where a seed that did not reach the target was last seen: its censoring time
    out["last_eval_s"] = out["run_id"].map(study.metrics.groupby("run_id")["sim_time_s"].max()).astype(float)
    for c in CUMULATIVE_COLUMNS:
        out[c] = out["run_id"].map(hit[c]).astype(float)
    return out


def tta_table(
    study: StudyData,
    targets: Sequence[float],
    reference: str | None = None,
    *,
    algorithms: Sequence[str] | None = None,
    n_boot: int = N_BOOT,
    bootstrap_seed: int = BOOTSTRAP_SEED,
) -> pd.DataFrame:
    """Time to each target per (setting, algorithm), and the paired speed-up over a reference.

    Parameters
    ----------
    study : StudyData
    targets : sequence of float
        Accuracy targets, fractions in [0, 1].
    reference : str, optional
        Algorithm label to compute speed-ups against (``T_ref / T_alg``).
    algorithms : sequence of str, optional
        Row order.
    n_boot, bootstrap_seed : int, optional
        Bootstrap resamples and generator seed (see :func:`sfl_sim.analysis.stats.paired_speedup`).

    Returns
    -------
    pandas.DataFrame
        Columns ``setting``, setting fields, ``algorithm``, ``target``, ``n_runs`` (seeds),
        ``reached`` (seeds that reached the target), ``tta_s_km_median`` (the Kaplan–Meier median
        over all seeds, those that did not reach the target censored at their last evaluation,
        :func:`sfl_sim.analysis.stats.km_median`; ``nan`` when it is not reached by half of them),
        ``tta_s_mean``, ``tta_s_std`` (simulated s, over the seeds that reached it), and with a
        reference the :class:`sfl_sim.analysis.stats.SpeedUp` fields: ``speedup`` (``inf`` when only
        the algorithm met the target at t = 0),
        ``speedup_low``, ``speedup_high`` (bootstrap 95 % CI, ``nan`` below
        :data:`sfl_sim.analysis.stats.MIN_PAIRS_FOR_CI` pairs), ``speedup_pairs``, ``speedup_interval``
        (``bootstrap``, ``seed_range``, ``none``), ``speedup_seed_min``, ``speedup_seed_max``
        (range of the per-seed ratios), ``speedup_case`` (``ratio``, ``both_at_start``,
        ``algorithm_at_start``, ``reference_at_start``, ``no_pairs``) and ``speedup_boot_edge``
        (resamples counted by the edge rule).
    """
    frames = []
    for target in targets:
        runs = _tta_per_run(study, target)
        stats = describe(runs, _KEYS, ["tta_s"]).reset_index()
        table = group_sizes(study).merge(stats, on=_KEYS, how="left")
        table = table.rename(columns={"tta_s_n": "reached"})
        table.insert(2, "target", float(target))
        km = runs.groupby(_KEYS, sort=False)[["tta_s", "last_eval_s"]].apply(
            lambda g: km_median(g["tta_s"].dropna(), g.loc[g["tta_s"].isna(), "last_eval_s"].dropna()))
        table = table.merge(km.rename("tta_s_km_median").reset_index(), on=_KEYS, how="left")
        if reference is not None:
            ref = runs.loc[runs["algorithm"] == reference, ["setting", "seed", "tta_s"]]
            paired = runs.merge(ref, on=["setting", "seed"], how="left", suffixes=("", "_ref"))
            rows = []
            for (setting, algorithm), g in paired.groupby(_KEYS, sort=False):
                su = paired_speedup(g["tta_s_ref"].to_numpy(), g["tta_s"].to_numpy(),
                                    n_boot=n_boot, seed=bootstrap_seed)
                rows.append((setting, algorithm, su.ratio, su.low, su.high, su.pairs, su.interval, su.seed_min,
                             su.seed_max, su.case, su.boot_edge))
            su_frame = pd.DataFrame(rows, columns=[*_KEYS, *SPEEDUP_COLUMNS])
            table = table.merge(su_frame, on=_KEYS, how="left")
        frames.append(table)
    table = pd.concat(frames, ignore_index=True)
    table["reached"] = table["reached"].fillna(0).astype(int)
    cols = [*_KEYS, "target", "n_runs", "reached", "tta_s_km_median", "tta_s_mean", "tta_s_std"]
    if reference is not None:
        cols += list(SPEEDUP_COLUMNS)
    return with_coordinates(in_study_order(table[cols], study, algorithms or study.algorithms), study)


def _per_round_per_run(study: StudyData) -> pd.DataFrame:
    per = study.rounds.groupby("run_id")[list(CUMULATIVE_COLUMNS)].mean()
    m = study.metrics
    last = m.loc[m["round"] >= FIRST_TRAINED_ROUND].drop_duplicates("run_id", keep="last").set_index("run_id")
    fallback = last[list(CUMULATIVE_COLUMNS)].div(last["round"], axis=0)
    out = study.runs[["run_id", *_KEYS, "seed"]].copy()
    for c in CUMULATIVE_COLUMNS:
        out[c] = out["run_id"].map(per[c]).astype(float)
        missing = out[c].isna()
        out.loc[missing, c] = out.loc[missing, "run_id"].map(fallback[c]).astype(float)
    return out


def overhead_table(
    study: StudyData, targets: Sequence[float], algorithms: Sequence[str] | None = None
) -> pd.DataFrame:
    """Communication and computation overhead per round and to reach each target.

    Parameters
    ----------
    study : StudyData
    targets : sequence of float
        Accuracy targets for the to-target rows.
    algorithms : sequence of str, optional
        Row order.

    Returns
    -------
    pandas.DataFrame
        Columns ``setting``, setting fields, ``algorithm``, ``basis`` (``"per_round"`` or
        ``"to_target"``), ``target`` (``nan`` per round), ``n_runs``, ``n`` (seeds counted: all
        with a value per round, those that reached the target otherwise), then for each of
        ``uplink_bytes``, ``downlink_bytes``, ``client_flops``, ``server_flops`` the ``_mean``
        and ``_std`` over seeds (bytes, FLOPs), then ``client_energy_j_{mean,std}`` (J per round,
        or to the target) and ``client_energy_j_n`` (the seeds counted that recorded energy;
        ``nan`` and 0 throughout when no run did).
    """
    cols = list(CUMULATIVE_COLUMNS)
    frames = []
    per_round = _per_round_per_run(study)
    per_round[ENERGY_COLUMN] = per_round["run_id"].map(energy_per_round_per_run(study)).astype(float)
    bases = [("per_round", float("nan"), per_round)]
    metrics = metrics_with_energy(study) if has_energy(study) else None
    for t in targets:
        runs = _tta_per_run(study, t)
        runs[ENERGY_COLUMN] = float("nan")
        if metrics is not None:
            to_target = energy_to_target_per_run(study, metrics, t).set_index("run_id")["energy_j"]
            runs[ENERGY_COLUMN] = runs["run_id"].map(to_target).astype(float)
        bases.append(("to_target", float(t), runs))
    for basis, target, runs in bases:
        stats = describe(runs, _KEYS, [*cols, ENERGY_COLUMN]).reset_index()
        table = group_sizes(study).merge(stats, on=_KEYS, how="left")
        table["n"] = table[f"{cols[0]}_n"].fillna(0).astype(int)
        table[f"{ENERGY_COLUMN}_n"] = table[f"{ENERGY_COLUMN}_n"].fillna(0).astype(int)
        table.insert(2, "basis", basis)
        table.insert(3, "target", target)
        frames.append(table[[*_KEYS, "basis", "target", "n_runs", "n",
                             *[f"{c}_{s}" for c in [*cols, ENERGY_COLUMN] for s in ("mean", "std")],
                             f"{ENERGY_COLUMN}_n"]])
    table = pd.concat(frames, ignore_index=True)
    s_rank = {s: i for i, s in enumerate(study.settings)}
    a_rank = {a: i for i, a in enumerate(algorithms or study.algorithms)}
    table = table.assign(_b=table["basis"] != "per_round", _t=table["target"].fillna(-1.0),
                         _s=table["setting"].map(s_rank), _a=table["algorithm"].map(a_rank))
    table = table.sort_values(["_b", "_t", "_s", "_a"], kind="stable").drop(columns=["_b", "_t", "_s", "_a"])
    return with_coordinates(table.reset_index(drop=True), study)


# ------------------------------------------------------------------------------ formatting


def _decimals(x: float, sig: int = 3) -> int:
    if not math.isfinite(x) or x == 0:
        return 0
    return max(0, sig - 1 - int(math.floor(math.log10(abs(x)))))


def _num(x: float, decimals: int) -> str:
    return f"{x:,.{decimals}f}".replace(",", "\u2009") if abs(x) >= 1e4 else f"{x:.{decimals}f}"


def fmt_mean_std(mean: float, std: float, scale: float = 1.0, decimals: int | None = None) -> str:
    """``"mean ± std"`` of scaled values; ``"mean"`` alone when std is undefined; ``–`` if no mean."""
    if mean is None or not math.isfinite(mean):
        return DASH
    m = mean / scale
    d = _decimals(m) if decimals is None else decimals
    if std is None or not math.isfinite(std):
        return _num(m, d)
    return f"{_num(m, d)} ± {_num(std / scale, d)}"


def _acc_cell(mean: float, std: float, n: int) -> str:
    n = 0 if n is None or (isinstance(n, float) and math.isnan(n)) else int(n)
    if n == 0:
        return DASH
    return f"{fmt_mean_std(mean, std, 0.01, 2)} ({n})"


def tta_cell(mean: float, std: float, reached: int, n: int) -> str:
    """A to-target cell: ``"mean ± std (k/n)"`` (:func:`fmt_mean_std`), k of n seeds reached it."""
    return f"{fmt_mean_std(mean, std)} ({int(reached)}/{int(n)})"


def km_tta_cell(median: float, mean: float, std: float, reached: int, n: int) -> str:
    """A time-to-target cell with its censoring stated: ``"median; mean ± std (k/n)"``, the median the
    Kaplan–Meier one over all n seeds (``>`` the latest evaluation, written ``–``, when fewer than
    half reached it); ``–`` alone when no seed did."""
    if not reached:
        return f"{DASH} (0/{int(n)})"
    med = DASH if median is None or math.isnan(median) else _num(median, _decimals(median))
    return f"{med}; {tta_cell(mean, std, reached, n)}"


def ratio_text(x: float) -> str:
    """A speed-up as text: ``"1.23×"``, ``"∞"`` for an infinite one, ``"–"`` for ``nan``."""
    if math.isnan(x):
        return DASH
    return "∞" if math.isinf(x) else f"{x:.2f}×"


def _bound_text(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.2f}"


def speedup_cell(r, is_reference: bool) -> str:
    """The Markdown/LaTeX text of one speed-up (a row of :func:`tta_table` with a reference).

    ``– (0 pairs)`` without a pair; ``1 (reference)``; the edges of :func:`sfl_sim.analysis.stats.time_ratio`
    in words (``1.00× (both at start, 5 pairs)``, ``∞ (only the algorithm at start, 5 pairs)``,
    ``0.00× (only the reference at start, 5 pairs)``); ``1.23× [1.01, 1.50] (5)`` with a bootstrap
    CI (``†`` when it counts edge resamples); ``1.23× (seed range 1.01–1.50, 3 pairs; not a CI)``
    below :data:`sfl_sim.analysis.stats.MIN_PAIRS_FOR_CI` pairs; ``1.23× (1 pair, no interval)``.
    """
    pairs = int(r.speedup_pairs)
    if pairs == 0:
        return f"{DASH} (0 pairs)"
    if is_reference:
        return "1 (reference)"
    unit = f"{pairs} pair{'s' if pairs != 1 else ''}"
    case = r.speedup_case
    if case == CASE_BOTH_AT_START:
        return f"{ratio_text(r.speedup)} (both at start, {unit})"
    if case == CASE_ALG_AT_START:
        return f"{ratio_text(r.speedup)} (only the algorithm at start, {unit})"
    if case == CASE_REF_AT_START:
        return f"{ratio_text(r.speedup)} (only the reference at start, {unit})"
    if r.speedup_interval == INTERVAL_BOOTSTRAP:
        mark = EDGE_MARK if r.speedup_boot_edge > 0 else ""
        return f"{ratio_text(r.speedup)} [{_bound_text(r.speedup_low)}, {_bound_text(r.speedup_high)}]{mark} ({pairs})"
    if r.speedup_interval == INTERVAL_SEED_RANGE:
        return (f"{ratio_text(r.speedup)} (seed range {_bound_text(r.speedup_seed_min)}–"
                f"{_bound_text(r.speedup_seed_max)}, {unit}; not a CI)")
    return f"{ratio_text(r.speedup)} ({unit}, no interval)"


# ------------------------------------------------------------------------------ layouts


@dataclass
class Layout:
    """A table ready to render: column headers (possibly multi-level), rows, optional row groups.

    Attributes
    ----------
    title : str
        Caption.
    columns : list of tuple of str
        One header tuple per data column, outermost level first (all tuples the same length).
    groups : list of (str or None, list of (str, list of str))
        Row groups: a group label (``None``: no group header) and its rows, each a row label and
        one cell per data column.
    notes : list of str
        Footnotes printed under the table.
    row_header : str
        Header of the row-label column.
    label : str
        LaTeX ``\\label`` key.
    """

    title: str
    columns: list[tuple[str, ...]]
    groups: list[tuple[str | None, list[tuple[str, list[str]]]]]
    notes: list[str] = field(default_factory=list)
    row_header: str = "Method"
    label: str = ""


def setting_headers(study: StudyData) -> dict[str, tuple[str, ...]]:
    """Per setting label, its column header: one ``field=value`` level per setting field (the label
    itself when the study has one setting)."""
    if not study.setting_fields:
        return {s: (s,) for s in study.settings}
    short = short_field_names(study.setting_fields)
    out = {}
    for s in study.settings:
        values = study.setting_values(s)
        out[s] = tuple(f"{short[f]}={values[f]}" for f in study.setting_fields)
    return out


def settings_table(study: StudyData) -> pd.DataFrame:
    """What each setting is: its label, then one column per setting field (the full dotted name) with
    the setting's value, and its seed and run counts.

    Returns
    -------
    pandas.DataFrame
        One row per setting, in study order: ``setting``, the setting fields, ``algorithms``
        (how many), ``runs``.
    """
    rows = []
    for s in study.settings:
        runs = study.runs.loc[study.runs["setting"] == s]
        rows.append({"setting": s, **study.setting_values(s), "algorithms": runs["algorithm"].nunique(),
                     "runs": len(runs)})
    return pd.DataFrame(rows, columns=["setting", *study.setting_fields, "algorithms", "runs"])


def settings_layout(study: StudyData, table: pd.DataFrame | None = None) -> Layout:
    """The settings table as a :class:`Layout`: one row per setting (named as the other tables' column
    headers name it), one column per setting field (full name), then the algorithm and run counts."""
    table = settings_table(study) if table is None else table
    headers = setting_headers(study)
    columns: list[tuple[str, ...]] = [(f,) for f in (*study.setting_fields, "Algorithms", "Runs")]
    rows = [(", ".join(headers[r["setting"]]), [*(str(r[f]) for f in study.setting_fields), str(r["algorithms"]),
                                                 str(r["runs"])]) for _, r in table.iterrows()]
    return Layout("Settings: the scenario fields in which the study's settings differ", columns, [(None, rows)],
                  ["Every other scenario field is the same in all runs (see each run's resolved.yaml). The other "
                   "tables head their columns with the short names of these fields."],
                  row_header="Setting", label="tab:settings")


def _seed_note() -> str:
    return (f"mean ± std over seeds (std: sample standard deviation, ddof = {DDOF}); "
            "(n): number of seeds; – : no run")


def wide_rows(table: pd.DataFrame, study: StudyData, algorithms: Sequence[str], cell) -> list[tuple[str, list[str]]]:
    """A table's rows laid out wide: one row per algorithm, one cell per setting (``study.settings``).

    ``cell(row)`` gives the text of a ``table`` row (an itertuples row of that setting and
    algorithm); ``–`` where the table has none.
    """
    index = {(r.setting, r.algorithm): r for r in table.itertuples(index=False)}
    rows = []
    for a in algorithms:
        cells = [cell(index[(s, a)]) if (s, a) in index else DASH for s in study.settings]
        rows.append((a, cells))
    return rows


def accuracy_layouts(table: pd.DataFrame, study: StudyData, algorithms: Sequence[str],
                     notes: Sequence[str] = ()) -> list[Layout]:
    """Final, last-k mean and best accuracy tables (%), in that order (:data:`ACCURACY_KINDS`), in the
    papers' layout: rows algorithms, columns settings."""
    headers = setting_headers(study)
    columns = [headers[s] for s in study.settings]
    out = []
    for column, (kind, title) in ACCURACY_KINDS.items():
        rows = wide_rows(table, study, algorithms, lambda r, c=column: _acc_cell(
            getattr(r, f"{c}_mean"), getattr(r, f"{c}_std"), getattr(r, f"{c}_n")))
        out.append(Layout(title, columns, [(None, rows)],
                          [_seed_note(), "Trained rounds only (round ≥ 1).", *notes], label=f"tab:accuracy-{kind}"))
    return out


def tta_layouts(table: pd.DataFrame, study: StudyData, algorithms: Sequence[str],
                reference: str | None, notes: Sequence[str] = (), *, n_boot: int = N_BOOT) -> list[Layout]:
    """Per target: time-to-accuracy table and (with a reference) the speed-up table."""
    headers = setting_headers(study)
    columns = [headers[s] for s in study.settings]
    out = []
    for target, part in table.groupby("target", sort=True):
        t = target_text(target)
        rows = wide_rows(part, study, algorithms,
                         lambda r: km_tta_cell(r.tta_s_km_median, r.tta_s_mean, r.tta_s_std, r.reached, r.n_runs))
        out.append(Layout(
            f"Simulated time to {t} test accuracy (s)", columns, [(None, rows)],
            [f"median; mean ± std (k/n). The median is the Kaplan–Meier median over all n seeds, a seed that did "
             f"not reach {t} counted as censored at its last evaluation (– : fewer than half reached it); mean ± "
             f"std (ddof = {DDOF}) over the k seeds that reached it only (first evaluation with accuracy ≥ "
             "target).", *notes],
            label=f"tab:tta-{t.rstrip('%')}"))
        if reference is not None:
            rows = wide_rows(part, study, algorithms, lambda r: speedup_cell(r, r.algorithm == reference))
            out.append(Layout(
                f"Speed-up to {t} over {reference} (time of {reference} / time of the algorithm)", columns,
                [(None, rows)],
                [*speedup_notes(part, t, reference, multi_setting=len(study.settings) > 1, n_boot=n_boot),
                 *notes],
                label=f"tab:speedup-{t.rstrip('%')}"))
    return out


def speedup_notes(part: pd.DataFrame, target_label: str, reference: str, *, multi_setting: bool = True,
                  n_boot: int = N_BOOT) -> list[str]:
    """Notes under a speed-up table: the definition, its edges, the interval rule and the edge resamples."""
    notes = [
        f"ratio of mean times over the seeds where both reached {target_label} (paired by setting and seed: same "
        "cell, partition and initial weights); (m): pairs used. A target met at t = 0 (by the initial model): "
        "both mean times 0 is a speed-up of 1 (both at start), only the algorithm's is ∞, only the reference's is 0.",
        f"[95 % CI]: percentile bootstrap, {n_boot} resamples of those seeds with replacement, pairs kept "
        f"together, given from {MIN_PAIRS_FOR_CI} pairs on; with fewer pairs the percentile interval cannot "
        "cover 95 % (with 2 or 3 pairs it is exactly the per-seed ratios' range), so the range of the per-seed "
        "ratios is shown instead and is not a confidence interval.",
    ]
    edge = part.loc[(part["speedup_boot_edge"] > 0) & (part["speedup_interval"] == INTERVAL_BOOTSTRAP)
                    & (part["algorithm"] != reference) & (part["speedup_case"] == "ratio")]
    if len(edge):
        items = [f"{r.algorithm}{f' ({r.setting})' if multi_setting else ''}: {int(r.speedup_boot_edge)}"
                 for r in edge.itertuples(index=False)]
        notes.append(f"{EDGE_MARK}: the CI counts resamples whose mean time is 0 on a side by the same rule "
                     f"(none dropped); resamples of {n_boot}: " + "; ".join(items) + ".")
    return notes


def overhead_layouts(table: pd.DataFrame, accuracy: pd.DataFrame, study: StudyData,
                     algorithms: Sequence[str], notes: Sequence[str] = ()) -> list[Layout]:
    """Table V layout: row groups = settings, rows = algorithms; accuracy, bytes and FLOPs columns,
    and client energy (J) when some run recorded it."""
    acc = {(r.setting, r.algorithm): r for r in accuracy.itertuples(index=False)}
    cols = list(CUMULATIVE_COLUMNS)
    energy = f"{ENERGY_COLUMN}_n" in table.columns and bool(table[f"{ENERGY_COLUMN}_n"].gt(0).any())
    out = []
    for (basis, target), part in table.groupby(["basis", "target"], sort=False, dropna=False):
        index = {(r.setting, r.algorithm): r for r in part.itertuples(index=False)}
        n_header = "n" if basis == "per_round" else "k/n"
        columns: list[tuple[str, ...]] = [("Acc. (%)",), *[(_OVERHEAD_HEADERS[c],) for c in cols],
                                          *([(_ENERGY_HEADER,)] if energy else []), (n_header,)]
        groups = []
        for s in study.settings:
            rows = []
            for a in algorithms:
                if (s, a) not in index:
                    continue
                r, ar = index[(s, a)], acc.get((s, a))
                cells = [_acc_cell(ar.final_test_accuracy_mean, ar.final_test_accuracy_std,
                                   ar.final_test_accuracy_n).rsplit(" (", 1)[0] if ar is not None else DASH]
                cells += [fmt_mean_std(getattr(r, f"{c}_mean"), getattr(r, f"{c}_std"), _UNIT[c]) for c in cols]
                if energy:
                    cells.append(_energy_cell(r))
                cells.append(str(r.n) if basis == "per_round" else f"{r.n}/{r.n_runs}")
                rows.append((a, cells))
            groups.append((s if len(study.settings) > 1 else None, rows))
        if basis == "per_round":
            title = "Communication and computation overhead per round"
            what = ("each run's mean over its rounds of the bytes and FLOPs of that round (rounds.csv), then "
                    "mean ± std over seeds")
        else:
            t = target_text(target)
            title = f"Communication and computation overhead to reach {t} test accuracy"
            what = (f"cumulative bytes and FLOPs at the first evaluation reaching {t}, mean ± std over the k of n "
                    "seeds that reached it")
        energy_note = []
        if energy:
            energy_note = ["Client energy: rounds.csv client_energy_j (the round's clients summed), "
                           + ("each run's mean over its rounds" if basis == "per_round" else
                              "summed up to that evaluation, as in the energy table")
                           + "; (m): only m of the seeds counted recorded energy (runs with rounds "
                             "trained without energy accounting did not); – : none did."]
        out.append(Layout(title, columns, groups,
                          [f"{what}; std with ddof = {DDOF}. MB = 10⁶ bytes, GFLOPs = 10⁹ FLOPs. Acc.: final test "
                           "accuracy (the last evaluation), mean ± std over all seeds.", *energy_note, *notes],
                          label="tab:overhead-" + ("round" if basis == "per_round"
                                                   else target_text(target).rstrip("%"))))
    return out


def _energy_cell(r) -> str:
    """An overhead row's client energy (J): ``mean ± std``, with ``(m)`` when only m of the
    seeds counted recorded energy, ``–`` when none did."""
    m = int(getattr(r, f"{ENERGY_COLUMN}_n"))
    if m == 0:
        return DASH
    text = fmt_mean_std(getattr(r, f"{ENERGY_COLUMN}_mean"), getattr(r, f"{ENERGY_COLUMN}_std"))
    return text if m == int(r.n) else f"{text} ({m})"


# ------------------------------------------------------------------------------ rendering


def _md_escape(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


#: Footnotes already stated in a document, each mapped to how the document refers to the table
#: under which it stands (Markdown: its title in quotes; LaTeX: ``Table~\ref{label}``). Tables
#: rendered into one document share one, so that a note common to several tables (the seed note, a
#: study-wide note) is stated once, under the first of them.
StatedNotes = dict[str, str]


def _new_notes(layout: Layout, stated: StatedNotes | None, where: str) -> tuple[list[str], list[str]]:
    """The layout's notes not yet stated (recorded in ``stated`` as stated at ``where``), and the places
    (in first-statement order, each once) of those it leaves out because an earlier table stated them."""
    if stated is None:
        return list(layout.notes), []
    new, earlier = [], []
    for n in dict.fromkeys(layout.notes):
        if n in stated:
            if stated[n] not in earlier:
                earlier.append(stated[n])
        else:
            stated[n] = where
            new.append(n)
    return new, earlier


def to_markdown(layout: Layout, stated: StatedNotes | None = None) -> str:
    """GitHub-flavoured Markdown: a caption line, one pipe table, the notes in italics.

    Multi-level column headers are joined with ", "; row groups become a leading column.

    Parameters
    ----------
    layout : Layout
    stated : StatedNotes, optional
        The notes already stated in the document this table goes into (updated with this table's):
        a note stated above is left out, and a line points to the table(s) it stands under. Without
        it every note is printed.
    """
    grouped = any(g is not None for g, _ in layout.groups)
    head = (["Setting"] if grouped else []) + [layout.row_header] + [", ".join(c) for c in layout.columns]
    align = (["---"] if grouped else []) + ["---"] + ["---:"] * len(layout.columns)
    lines = [f"**{_md_escape(layout.title)}**", "", "| " + " | ".join(map(_md_escape, head)) + " |",
             "|" + "|".join(align) + "|"]
    for group, rows in layout.groups:
        for i, (label, cells) in enumerate(rows):
            first = ([_md_escape(group or "") if i == 0 else ""] if grouped else [])
            lines.append("| " + " | ".join(first + [_md_escape(label)] + [_md_escape(c) for c in cells]) + " |")
    lines.append("")
    notes, earlier = _new_notes(layout, stated, f"“{_md_escape(layout.title)}”")
    lines += [f"_{_md_escape(n)}_  " for n in notes]
    if earlier:
        lines.append("_Also the notes under " + "; ".join(earlier) + "._  ")
    return "\n".join(lines).rstrip() + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "±": r"$\pm$", "×": r"$\times$", "–": "--", "≥": r"$\geq$", "\u2009": r"\,", "<": r"\textless{}",
    ">": r"\textgreater{}", "⁶": r"$^6$", "⁹": r"$^9$", '"': "''",
    "∞": r"$\infty$", "†": r"$^\dagger$",
}


def latex_escape(text: str) -> str:
    """Escape text for LaTeX (special characters, ±, ×, ≥, en dash)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def _spans(values: Sequence[tuple[str, ...]], level: int) -> list[tuple[str, int, int]]:
    """Runs of equal header prefixes at ``level``: (text, first column, last column), 0-based."""
    spans: list[tuple[str, int, int]] = []
    for i, v in enumerate(values):
        if spans and values[spans[-1][1]][: level + 1] == v[: level + 1]:
            spans[-1] = (spans[-1][0], spans[-1][1], i)
        else:
            spans.append((v[level], i, i))
    return spans


def to_latex(layout: Layout, stated: StatedNotes | None = None) -> str:
    """A booktabs ``table`` float: caption, label, ``tabular`` with multi-level headers, notes.

    Needs ``\\usepackage{booktabs}``. Row groups are ``\\multicolumn`` header rows separated by
    ``\\midrule``; header levels with spans use ``\\multicolumn`` and ``\\cmidrule``.

    Parameters
    ----------
    layout : Layout
    stated : StatedNotes, optional
        As for :func:`to_markdown`: a note stated in an earlier float of the document is left out and
        a line refers to that float (``Table~\\ref{...}``; floats move, so a reference, not "above").
    """
    ncol = len(layout.columns)
    lead = 1
    spec = "l" + "r" * ncol
    depth = len(layout.columns[0]) if layout.columns else 1
    lines = [r"\begin{table}[t]", r"\centering", r"\caption{" + latex_escape(layout.title) + "}"]
    if layout.label:
        lines.append(r"\label{" + layout.label + "}")
    lines += [r"\begin{tabular}{" + spec + "}", r"\toprule"]
    for level in range(depth):
        spans = _spans(layout.columns, level)
        cells = [latex_escape(layout.row_header) if level == depth - 1 else ""]
        for text, a, b in spans:
            if b > a:
                cells.append(r"\multicolumn{" + str(b - a + 1) + "}{c}{" + latex_escape(text) + "}")
            else:
                cells.append(latex_escape(text))
        lines.append(" & ".join(cells) + r" \\")
        if level < depth - 1:
            rules = [r"\cmidrule(lr){" + f"{a + 1 + lead}-{b + 1 + lead}" + "}" for _, a, b in spans if b > a]
            if rules:
                lines.append(" ".join(rules))
    lines.append(r"\midrule")
    for gi, (group, rows) in enumerate(layout.groups):
        if group is not None:
            if gi > 0:
                lines.append(r"\midrule")
            lines.append(r"\multicolumn{" + str(ncol + lead) + "}{l}{\\textit{" + latex_escape(group) + r"}} \\")
        for label, cells in rows:
            lines.append(" & ".join([latex_escape(label), *map(latex_escape, cells)]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    here = (r"Table~\ref{" + layout.label + "}") if layout.label else latex_escape(f"“{layout.title}”")
    notes, earlier = _new_notes(layout, stated, here)
    texts = [latex_escape(n) for n in notes]
    if earlier:
        texts.append("Also the notes of " + ", ".join(earlier) + ".")
    if texts:
        lines.append(r"\par\smallskip{\footnotesize " + r" \\ ".join(texts) + "}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"
