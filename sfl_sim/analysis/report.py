"""``sfl-sim report``: a study (or any set of run directories) into paper tables and figures.

Layout of a report directory::

    README.md                 every table and figure on one page, with the definitions
    runs.csv                  one row per run: path, setting, its fields, algorithm, seed, status,
                              final and best accuracy (and whether it was left out)
    accuracy.{csv,md,tex}     best and final test accuracy, rows algorithms, columns settings
    tta.{csv,md,tex}          time to each target (and speed-up over --reference, with CI)
    overhead.{csv,md,tex}     bytes, FLOPs and client energy per round and to each target (Table V
                              layout; the energy column when the runs recorded energy)
    energy.{csv,md,tex}       client energy to each target, total and per-client maximum (and the
                              ratio over --reference, with CI); only when the runs recorded energy
    figures/<setting>/accuracy_vs_time.{png,pdf}
    figures/<setting>/accuracy_vs_uplink.{png,pdf}
    figures/compression_<algorithm>[_<rest>]/accuracy_vs_{time,uplink}.{png,pdf}
                              a study over compression: one line per compression level
                              (:func:`compression_levels`) of one algorithm
    figures/<setting>/accuracy_vs_energy.{png,pdf}   (only when the runs recorded energy)

CSV files are tidy and in raw units (accuracy as a fraction, seconds, bytes, FLOPs); Markdown and
LaTeX are formatted for a paper (accuracy in %, MB, GFLOPs, ``mean ± std (n)``).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from sfl_sim.analysis.budget import budget_layout, budget_table, budget_warnings
from sfl_sim.analysis.energy import ENERGY_CURVE, energy_layouts, energy_table, has_energy, metrics_with_energy
from sfl_sim.analysis.figure_style import check_style, figure_style
from sfl_sim.analysis.figures import CURVES, DEFAULT_WIDTH_IN, band_text, check_figure_options
from sfl_sim.analysis.radio_table import has_cell_load, has_radio_losses, radio_layouts, radio_table, radio_title
from sfl_sim.analysis.report_figures import (
    ACROSS_SETTINGS_DIR,
    RADIO_DIR,
    SWEEP_DIR,
    CurveOptions,
    compression_levels,
    curve_figures,
    line_field_of,
    radio_figures,
    sweep_figures,
    write_figures,
)
from sfl_sim.analysis.stats import BOOTSTRAP_SEED, DDOF, MIN_PAIRS_FOR_CI, N_BOOT
from sfl_sim.analysis.study_data import StudyData, StudyError, load_study
from sfl_sim.analysis.tables import (
    LAST_K_EVALUATIONS,
    Layout,
    StatedNotes,
    accuracy_layouts,
    accuracy_table,
    overhead_layouts,
    overhead_table,
    per_run_accuracy,
    settings_layout,
    settings_table,
    target_text,
    to_latex,
    to_markdown,
    tta_layouts,
    tta_table,
)
from sfl_sim.analysis.tta import DEFAULT_TARGETS, check_target
from sfl_sim.runs.rundir import marker
from sfl_sim.runs.rundir.schema import COMPLETE, GLOBAL_MODEL_EVALUATION, REPORT_README_TITLE

__all__ = ["REPORT_FILES", "claim_report_dir", "write_report", "default_output_dir", "parse_targets",
           "report_target", "compression_levels", "COMPLETE"]


def default_output_dir(paths: Sequence[str | os.PathLike[str]], name: str = "report") -> Path:
    """``<deepest directory containing every given path>/<name>``.

    Parameters
    ----------
    paths : sequence of path
        The directories given on the command line.
    name : str
        Sub-directory name (``"report"``, ``"plots"``).

    Returns
    -------
    pathlib.Path
        For one directory ``DIR/name``; for several, under their common parent.
    """
    resolved = [os.path.abspath(p) for p in paths]
    return Path(os.path.commonpath(resolved)) / name


def report_target(value: float, field: str = "targets") -> float:
    """A report's accuracy target, refused unless a fraction in (0, 1], the range of a scenario's
    ``target_accuracies`` (a target of 0 is met by the first evaluation, before any training: a
    column of zeros that says nothing).

    Raises
    ------
    ValueError
        One line naming ``field`` and the value.
    """
    try:
        target = check_target(value)
    except (TypeError, ValueError):
        target = math.nan
    if not 0.0 < target <= 1.0:
        raise ValueError(f"{field}: got {value!r}; allowed: fractions in (0, 1], e.g. 0.6,0.7 (a target of 0 is "
                         f"met before any training)")
    return target


def parse_targets(text: str) -> tuple[float, ...]:
    """``"0.6,0.7"`` -> ``(0.6, 0.7)``; each a fraction in (0, 1] (:func:`report_target`).

    Raises
    ------
    ValueError
        Naming the bad item (e.g. a percentage such as 70).
    """
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            value = float(item)
        except ValueError:
            raise ValueError(f"--targets: {item!r} is not a number; give fractions, e.g. 0.6,0.7") from None
        out.append(report_target(value, "--targets"))
    if not out:
        raise ValueError("--targets: no target given; e.g. --targets 0.6,0.7")
    return tuple(dict.fromkeys(out))


#: The stems of the report's tables (each written as .csv, .md and .tex).
TABLE_STEMS = ("settings", "accuracy", "tta", "overhead", "energy", "radio")
#: Every name a report writes at the top of its folder (``figures`` is the folder of the figures).
REPORT_FILES = ("README.md", "runs.csv", "figures.tex", "figures",
                *(f"{stem}.{ext}" for stem in TABLE_STEMS for ext in ("csv", "md", "tex")))


def claim_report_dir(out: Path) -> None:
    """Check, before any work, that a report may be written into ``out``: writable, not a directory
    of another kind (a study's, a scenario's, a run's), and without a file of the report's names
    that sfl-sim did not write (:mod:`sfl_sim.runs.rundir.marker`).

    Raises
    ------
    sfl_sim.errors.RunDirError
        One line naming the directory or the file.
    """
    marker.check_writable(out, "--output-dir")
    marker.claim(out, "report", REPORT_FILES)


def _write(path: Path, text: str, written: list[Path]) -> None:
    path.write_text(text, encoding="utf-8")
    written.append(path)


def _write_table(out: Path, stem: str, table: pd.DataFrame, layouts: Sequence[Layout], title: str,
                 written: list[Path], readme_notes: StatedNotes) -> str:
    """Write ``stem``.csv/.md/.tex; return the tables' Markdown for the README.

    Each file states a footnote once (under the first of its tables that has it); the README, which
    holds every file's tables, states it once in all (``readme_notes``, shared by the calls).
    """
    table.to_csv(out / f"{stem}.csv", index=False)
    written.append(out / f"{stem}.csv")
    md_notes: StatedNotes = {}
    _write(out / f"{stem}.md", f"# {title}\n\n" + "\n".join(to_markdown(lo, md_notes) for lo in layouts), written)
    tex_notes: StatedNotes = {}
    tex = (f"% {title} -- written by sfl-sim report; needs \\usepackage{{booktabs}}\n"
           + "\n".join(to_latex(lo, tex_notes) for lo in layouts))
    _write(out / f"{stem}.tex", tex, written)
    return f"# {title}\n\n" + "\n".join(to_markdown(lo, readme_notes) for lo in layouts)


def write_report(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    reference: str | None = None,
    targets: Sequence[float] | None = None,
    band: str = "std",
    *,
    ignore: Sequence[str] = (),
    include_incomplete: bool = False,
    figures: bool = True,
    target_lines: bool | None = None,
    figure_width_in: float = DEFAULT_WIDTH_IN,
    seed_lines: bool = False,
    smooth: int = 0,
    log_x: bool = False,
    lines: str | None = None,
    style: str = "default",
    n_boot: int = N_BOOT,
    bootstrap_seed: int = BOOTSTRAP_SEED,
) -> list[Path]:
    """Write the tables and figures of a study.

    Parameters
    ----------
    paths : path or iterable of paths
        Study, scenario-output or run directories (searched recursively for run directories).
    out_dir : path
        Report directory; created if missing.  Its files are rewritten only when sfl-sim wrote them
        (:func:`claim_report_dir`): a study's or a scenario's directory, or a ``README.md`` or
        ``runs.csv`` of yours, is refused.
    reference : str, optional
        Algorithm label to compute speed-ups against (e.g. ``"fedavg"``).
    targets : sequence of float, optional
        Accuracy targets (fractions). Default: the ``target_accuracies`` common to every run's
        scenario, else :data:`sfl_sim.analysis.tta.DEFAULT_TARGETS`.
    band : {"std", "ci", "minmax"}
        Shaded band of the figures: ± 1 std, a bootstrap CI of the mean (from 5 seeds on) or min–max.
    ignore : sequence of str, optional
        Scenario fields to leave out of the setting (e.g. ``("rounds",)``).
    include_incomplete : bool, optional
        Keep runs whose ``summary.json`` status is not ``"complete"`` (default: leave them out
        and list them in README.md and runs.csv).
    figures : bool, optional
        Draw the figures (the tables alone are much faster).
    target_lines : bool, optional
        Draw each target as a labelled horizontal line in the figures. Default: only when
        ``targets`` is given (asked for), not for the scenarios' default targets.
    figure_width_in : float, optional
        Figure width in inches (3 to 12; about 3.5 for one column of a two-column paper).
    seed_lines : bool, optional
        Also draw every seed as a thin line (instead of the band).
    smooth : int, optional
        Rolling mean over this many evaluations of each seed before the mean and band (0: none).
    log_x : bool, optional
        Log x axes in the accuracy curves (the evaluation of the initial model, at 0, is left out).
    lines : str, optional
        A setting field (dotted or short name, e.g. ``scheduler``) drawn as lines of the figures against
        a numeric field instead of one figure per value of it.
    style : {"default", "paper"}, optional
        Figure style (:data:`~sfl_sim.analysis.figure_style.STYLES`): ``paper`` draws serif (STIX,
        Times-like) text; every PDF embeds its fonts as TrueType.
    n_boot, bootstrap_seed : int, optional
        Bootstrap resamples and seed of the speed-up CIs.

    Returns
    -------
    list of pathlib.Path
        Every file written, README.md first.

    Raises
    ------
    StudyError
        No runs found, none complete, duplicate runs, or an unknown reference.
    sfl_sim.errors.RunDirError
        ``out_dir`` cannot be written, or is not sfl-sim's report folder (:func:`claim_report_dir`).
    ValueError
        A bad ``band``, target, figure width, smoothing window, ``lines`` field or ``style``.
    """
    check_figure_options(band, figure_width_in, smooth)
    check_style(style)
    out = Path(out_dir)
    claim_report_dir(out)
    # the runs left out must not name the settings of those that remain (a killed run of another
    # `rounds` would otherwise make `rounds` a setting field of a one-setting study)
    loaded = load_study(paths, ignore=ignore, basis_statuses=None if include_incomplete else (COMPLETE,))
    complete = loaded.runs["status"] == COMPLETE
    study = loaded if include_incomplete else loaded.select(loaded.runs.loc[complete, "run_id"])
    left_out = loaded.runs.loc[~loaded.runs["run_id"].isin(study.runs["run_id"])]
    line_field = line_field_of(study, lines)
    if study.runs.empty:
        raise StudyError(f"none of the {len(loaded.runs)} run(s) found is complete; pass --include-incomplete "
                         f"to report them anyway")
    if reference is not None and reference not in study.algorithms:
        raise StudyError(f"unknown reference {reference!r}; algorithms: {', '.join(study.algorithms)}")
    if target_lines is None:
        target_lines = targets is not None
    targets = tuple(report_target(t) for t in (targets if targets is not None else (study.targets or DEFAULT_TARGETS)))
    algorithms = ((reference,) if reference else ()) + tuple(a for a in study.algorithms if a != reference)

    marker.record(out, "report", REPORT_FILES)  # before the files: a killed report leaves none unlisted
    written: list[Path] = []
    included = study.runs.loc[study.runs["status"] != COMPLETE]
    notes = _notes(study, left_out, included)

    readme_notes: StatedNotes = {}
    settings_md = ""
    if study.setting_fields:
        settings = settings_table(study)
        settings_md = _write_table(out, "settings", settings, [settings_layout(study, settings)], "Settings",
                                   written, readme_notes)
    budgets = budget_table(study)
    notes = [*budget_warnings(budgets), *notes]  # under every table, and in the README
    acc = accuracy_table(study, algorithms)
    md_acc = _write_table(out, "accuracy", acc, [*accuracy_layouts(acc, study, algorithms, notes),
                                                 budget_layout(budgets, study, algorithms)],
                          "Test accuracy", written, readme_notes)
    tta = tta_table(study, targets, reference, algorithms=algorithms, n_boot=n_boot, bootstrap_seed=bootstrap_seed)
    md_tta = _write_table(out, "tta", tta, tta_layouts(tta, study, algorithms, reference, notes, n_boot=n_boot),
                          "Time to accuracy", written, readme_notes)
    ovh = overhead_table(study, targets, algorithms)
    md_ovh = _write_table(out, "overhead", ovh, overhead_layouts(ovh, acc, study, algorithms, notes),
                          "Communication and computation overhead", written, readme_notes)

    tables = [*([settings_md] if settings_md else []), md_acc, md_tta, md_ovh]
    energy = has_energy(study)
    if energy:
        en = energy_table(study, targets, reference, algorithms=algorithms, n_boot=n_boot,
                          bootstrap_seed=bootstrap_seed)
        tables.append(_write_table(out, "energy", en, energy_layouts(en, study, algorithms, reference, notes,
                                                                      n_boot=n_boot),
                                   "Client energy to accuracy", written, readme_notes))

    # drops, failed attempts or HARQ copies: what the radio lost, and where time went; a network: each cell's load
    if has_radio_losses(study) or has_cell_load(study):
        radio = radio_table(study, algorithms)
        tables.append(_write_table(out, "radio", radio, radio_layouts(radio, study), radio_title(radio), written,
                                   readme_notes))

    runs = loaded.runs.drop(columns=["run_id"]).copy()
    per_run = per_run_accuracy(loaded).set_index("run_id")
    for c in ("final_round", "final_test_accuracy", "last_k_test_accuracy", "best_test_accuracy"):
        runs[c] = loaded.runs["run_id"].map(per_run[c]).to_numpy()
    runs["in_report"] = loaded.runs["run_id"].isin(study.runs["run_id"]).to_numpy()
    runs.to_csv(out / "runs.csv", index=False)
    written.append(out / "runs.csv")

    figure_section: list[str] = []
    if figures:
        curves = {kind: study for kind in CURVES}
        if energy:
            curves[ENERGY_CURVE] = dataclasses.replace(study, metrics=metrics_with_energy(study))
        options = CurveOptions(band=band, targets=targets if target_lines else (), width_in=figure_width_in,
                               seed_lines=seed_lines, smooth=smooth, log_x=log_x, n_boot=n_boot,
                               bootstrap_seed=bootstrap_seed)
        taken: set[str] = set()
        with figure_style(style):  # drawn and written in it: the fonts are chosen as text is drawn
            drawn = curve_figures(curves, algorithms, options, taken=taken)
            drawn += sweep_figures(study, algorithms, targets, figure_width_in, taken, n_boot=n_boot,
                                   bootstrap_seed=bootstrap_seed, line_field=line_field)
            drawn += radio_figures(study, algorithms, figure_width_in, taken)
            files, figure_section, tex = write_figures(out, drawn)
        written += files
        _write(out / "figures.tex", tex, written)

    readme = _readme(study, runs, left_out, included, targets, reference, band, ignore, n_boot, bootstrap_seed,
                     tables, figure_section, seed_lines=seed_lines, smooth=smooth,
                     target_lines=bool(target_lines))
    _write(out / "README.md", readme, written)
    return [written[-1], *written[:-1]]


def _notes(study: StudyData, left_out: pd.DataFrame, included: pd.DataFrame) -> list[str]:
    notes = []
    evaluated = study.runs.drop_duplicates("algorithm")[["algorithm", "evaluated"]]
    for r in evaluated.itertuples(index=False):
        if r.evaluated and r.evaluated != GLOBAL_MODEL_EVALUATION:
            notes.append(f"{r.algorithm}: accuracy is of the {r.evaluated}, not the global model.")
    if len(left_out):
        notes.append(f"{len(left_out)} run(s) not complete, left out (see runs.csv).")
    if len(included):
        notes.append(f"{len(included)} run(s) not complete, included (--include-incomplete): their last "
                     "evaluation counts as final (see runs.csv).")
    return notes


def _made_by_section(runs: pd.DataFrame) -> list[str]:
    """The README's account of a study's re-timed runs and of the runs trained because their
    re-timing was refused (``made_by``, :mod:`sfl_sim.study.execute`); nothing when all trained."""
    made = runs["made_by"].astype(str) if "made_by" in runs else pd.Series([], dtype=str)
    retimed = int(made.str.startswith("re-timed").sum())
    refused = runs.loc[made.str.startswith("trained, re-timing refused")]
    if not retimed and not len(refused):
        return []
    lines = ["## How the runs were made", "",
             f"{retimed} run(s) re-timed from a run with the same training (`sfl-sim retime`: its accuracies, "
             f"their own simulated times, energy and radio records); {len(refused)} run(s) trained because "
             f"their re-timing was refused (their training differs from the source's):", ""]
    lines += [f"- `{r.path}`: {r.made_by}" for r in refused.itertuples(index=False)]
    return [*lines, ""] if len(refused) else lines


def _readme(study: StudyData, runs: pd.DataFrame, left_out: pd.DataFrame, included: pd.DataFrame,
            targets: Sequence[float],
            reference: str | None, band: str, ignore: Sequence[str], n_boot: int, bootstrap_seed: int,
            sections: Sequence[str], figure_section: Sequence[str], *, seed_lines: bool = False, smooth: int = 0,
            target_lines: bool = False) -> str:
    seeds = sorted(study.runs["seed"].astype(str).unique(), key=lambda s: (len(s), s))
    lines = [
        REPORT_README_TITLE,
        "",
        f"{len(study.runs)} run(s): {len(study.settings)} setting(s) × {len(study.algorithms)} algorithm(s), "
        f"seeds {', '.join(seeds)}."
        + (f" {len(included)} of them did not complete and are included (--include-incomplete; listed below)."
           if len(included) else "")
        + (f" {len(left_out)} run(s) not complete are left out (listed below)." if len(left_out) else ""),
        "",
        "## Definitions",
        "",
        "- **Runs** are grouped by (setting, algorithm); seeds are replicates. Algorithm = the run's label. "
        "Setting = " + (
            "the scenario fields that differ between the runs: " + ", ".join(f"`{f}`" for f in study.setting_fields)
            if study.setting_fields else "one setting (no scenario field differs between the runs)")
        + ". Never part of a setting: the seed, the algorithm block, names, paths, device and host-only "
          "fields" + (f"; ignored on request: {', '.join(ignore)}" if ignore else "") + ".",
        f"- **mean ± std (n)**: over seeds; std is the sample standard deviation (ddof = {DDOF}); n counts seeds.",
        "- **Final** accuracy: the last evaluation (the accuracy and overhead tables' default); **mean of the "
        f"last {LAST_K_EVALUATIONS}**: the mean of a run's last {LAST_K_EVALUATIONS} evaluations; **best**: the "
        "maximum over its evaluations, which favours a method whose accuracy oscillates (one lucky evaluation "
        "suffices; see docs/guides/reports.md); all over trained rounds (round ≥ 1), then mean ± std over seeds.",
        "- **Time to accuracy**: simulated time of the first evaluation with test accuracy ≥ the target "
        "(a round-0 evaluation of the initial model counts, at t = 0); mean ± std over the seeds that reached "
        "it, k/n reached.",
    ]
    if reference:
        lines.append(
            f"- **Speed-up over {reference}**: mean time of {reference} / mean time of the algorithm, over the "
            f"seeds where both reached the target (paired by setting and seed). A target met at t = 0 (by the "
            f"initial model): both mean times 0 is a speed-up of 1 (\"both at start\"), only the algorithm's is ∞, "
            f"only the reference's is 0. 95 % CI (from {MIN_PAIRS_FOR_CI} pairs on): percentile bootstrap, "
            f"{n_boot} resamples of those seeds with replacement (pairs kept together), "
            f"`numpy.random.default_rng({bootstrap_seed})` for each interval; every resample counts, its "
            f"statistic by the same rule (tta.csv's `speedup_boot_edge` counts those with a mean time of 0, "
            f"marked † in the tables); bounds are resampled values (numpy's `inverted_cdf`). Below "
            f"{MIN_PAIRS_FOR_CI} pairs the percentile interval cannot cover 95 % (with 2 or 3 pairs it is "
            f"exactly the per-seed ratios' range), so the range of the per-seed ratios is given instead, "
            f"marked \"not a CI\".")
    lines += [
        "- **Overhead per round**: each run's mean over its rounds of that round's bytes and FLOPs "
        "(rounds.csv), then over seeds; **to a target**: cumulative counters at the first evaluation reaching it"
        + ("; client energy likewise (rounds.csv client_energy_j per round, cumulative to a target), over the "
           "seeds that recorded it" if has_energy(study) else "") + ".",
        "- **Figures**: accuracy in %; a line is the mean over its seeds (each linearly interpolated between its "
        "evaluations) where every seed has run, each seed running on after that drawn alone as a thin dashed line; "
        "○ marks each seed's last evaluation; " + band_text(band, seed_lines=seed_lines, n_boot=n_boot)
        + (f"; each seed smoothed by a centred rolling mean over {smooth} evaluations" if smooth > 1 else
           "; not smoothed")
        + ("; targets drawn as labelled lines" if target_lines and targets else "")
        + ". Each figure's caption is under it here and in `figures.tex`.",
        f"- Targets: {', '.join(target_text(t) for t in targets)}.",
        "",
    ]
    last_round = dict(zip(runs["path"], runs["final_round"], strict=True))

    def listed(frame: pd.DataFrame) -> list[str]:
        out = []
        for r in frame.itertuples(index=False):
            last = last_round.get(r.path)
            done = f", last evaluated round {int(last)}" if last is not None and pd.notna(last) else ""
            planned = f" of {r.rounds_planned}" if done and r.rounds_planned is not None else ""
            out.append(f"- `{r.path}` (status: {r.status or 'unknown'}{done}{planned})")
        return out

    if len(included):
        lines += ["## Included although not complete (--include-incomplete)", "",
                  "Their last evaluation counts as their final accuracy; a run that stopped early can lower "
                  "final accuracy and count as not reaching a target.", ""]
        lines += listed(included)
        lines.append("")
    if len(left_out):
        lines += ["## Left out (not complete)", ""]
        lines += listed(left_out)
        lines.append("")
    lines += _made_by_section(runs)
    lines += ["## Tables", ""]
    for s in sections:
        lines.append(s.replace("\n# ", "\n### ").replace("# ", "### ", 1) if s.startswith("# ") else s)
    if figure_section:
        lines += ["## Figures", "", *figure_section]
    lines += ["## Files", "",
              "- `runs.csv`: every run found, its coordinates, status, how it was made (`made_by`: trained or "
              "re-timed), final and best accuracy, `in_report`.",
              "- `accuracy.*`, `tta.*`, `overhead.*`: CSV (tidy, raw units), Markdown, LaTeX (booktabs).",
              "- `figures/<setting>/accuracy_vs_{time,uplink}.{png,pdf}` (one line per algorithm), "
              f"`figures/{ACROSS_SETTINGS_DIR}/<algorithm>/…` (one line per setting), `figures/{SWEEP_DIR}/` (a "
              f"metric against a numeric setting field), `figures/{RADIO_DIR}/` (round-time breakdown, SINR and "
              "rate CDFs from clients.csv; energy per client); `figures.tex`: every figure as a LaTeX float with its "
              "caption.", ""]
    return "\n".join(lines)
