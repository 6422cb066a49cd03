"""The report's figures, each with its caption beside it (never in the image): which figures a study
gets, where they go, and the Markdown and LaTeX that show them.

* Accuracy curves (:mod:`sfl_sim.analysis.figures`): per setting, one line per algorithm
  (``figures/<setting>/<kind>``); per algorithm, one line per setting when the study has several
  (``figures/across_settings/<algorithm>/<kind>``); per algorithm and group of compression levels
  (``figures/compression_<algorithm>[_<rest>]/<kind>``). All figures of a kind share their axes' ranges.
* What the radio did and where the time went (:mod:`sfl_sim.analysis.radio_figures`), when the runs
  recorded it.
* A metric against a numeric setting field (:mod:`sfl_sim.analysis.sweep`), when the study has one.

:func:`write_figures` saves each as PNG and PDF and returns the Markdown of the README's figure
section and ``figures.tex`` (a LaTeX ``figure`` float per figure, with its caption and label).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from sfl_sim.analysis.figure_style import save_figure, setting_slug
from sfl_sim.analysis.figures import common_limits, curves_caption, levels_figure, setting_figure
from sfl_sim.analysis.radio_data import (
    UPLINK_RATE_GOT,
    client_energy,
    energy_fairness,
    time_breakdown,
    with_uplink_rate_got,
)
from sfl_sim.analysis.radio_figures import (
    breakdown_caption,
    breakdown_figure,
    cdf_caption,
    cdf_figure,
    energy_caption,
    energy_figure,
)
from sfl_sim.analysis.study_data import StudyData, short_field_names
from sfl_sim.analysis.sweep import numeric_fields, sweep_caption, sweep_figure, sweep_groups
from sfl_sim.analysis.tables import latex_escape, per_run_accuracy, setting_headers, target_text
from sfl_sim.analysis.tta import first_reaching

__all__ = ["ReportFigure", "CurveOptions", "curve_figures", "radio_figures", "sweep_figures", "compression_levels",
           "write_figures", "ACROSS_SETTINGS_DIR", "RADIO_DIR", "SWEEP_DIR"]

#: The folder (under ``figures/``) of the figures with one line per setting.
ACROSS_SETTINGS_DIR = "across_settings"
#: The folder of the figures of what the radio did, where the time went and the clients' energy.
RADIO_DIR = "radio"
#: The folder of the metric-against-parameter figures.
SWEEP_DIR = "sweep"


@dataclass
class ReportFigure:
    """One figure of the report, before it is saved.

    Attributes
    ----------
    stem : str
        Its path under the report folder without suffix (``figures/<setting>/accuracy_vs_time``).
    section : str
        The README section it appears under.
    title : str
        What it shows, in a few words (the image's alternative text).
    caption : str
        The caption written beside it, in Markdown and LaTeX.
    figure : matplotlib.figure.Figure
    """

    stem: str
    section: str
    title: str
    caption: str
    figure: Figure


@dataclass(frozen=True)
class CurveOptions:
    """How the report draws its accuracy curves (:func:`sfl_sim.analysis.figures.setting_figure`'s options)."""

    band: str = "std"
    targets: tuple[float, ...] = ()
    width_in: float = 6.4
    seed_lines: bool = False
    smooth: int = 0
    log_x: bool = False
    n_boot: int = 10_000
    bootstrap_seed: int = 0


def compression_levels(study: StudyData) -> list[tuple[str, list[tuple[str, str]]]]:
    """The study's compression levels: settings that differ only in ``compression`` fields,
    grouped by the rest of the setting.

    Returns
    -------
    list of (rest, levels)
        ``rest``: the other setting fields as ``name=value`` text ("" when there are none);
        ``levels``: (setting, its compression fields as ``name=value`` text) of each setting of
        the group, in study order.  Only groups of two or more levels; none without compression fields.
    """
    fields = [f for f in study.setting_fields if f == "compression" or f.startswith("compression.")]
    if not fields:
        return []
    short = short_field_names(study.setting_fields)
    groups: dict[str, list[tuple[str, str]]] = {}
    for setting in study.settings:
        values = study.setting_values(setting)
        rest = ", ".join(f"{short[f]}={values[f]}" for f in study.setting_fields if f not in fields)
        level = ", ".join(f"{short[f]}={values[f]}" for f in fields)
        groups.setdefault(rest, []).append((setting, level))
    return [(rest, levels) for rest, levels in groups.items() if len(levels) > 1]


def curve_figures(curves: Mapping[str, StudyData], algorithms: Sequence[str], options: CurveOptions,
                  taken: set[str]) -> list[ReportFigure]:
    """Every accuracy-curve figure of the report, the figures of each kind on common axes.

    Parameters
    ----------
    curves : mapping of str to StudyData
        Figure kind -> the study whose metrics it draws (the energy kind's has the energy column).
    algorithms : sequence of str
        Line order of the per-setting figures.
    options : CurveOptions
    taken : set of str
        Folder names already used under ``figures/`` (the new ones are added).

    Returns
    -------
    list of ReportFigure
    """
    o = options
    draw: dict[str, Any] = {"band": o.band, "targets": o.targets, "width_in": o.width_in,
                            "seed_lines": o.seed_lines, "smooth": o.smooth, "log_x": o.log_x, "n_boot": o.n_boot,
                            "bootstrap_seed": o.bootstrap_seed}
    words: dict[str, Any] = {"band": o.band, "seed_lines": o.seed_lines, "smooth": o.smooth, "log_x": o.log_x,
                             "targets": o.targets, "n_boot": o.n_boot}
    study = next(iter(curves.values()))
    out: list[ReportFigure] = []
    by_kind: dict[str, list[Figure]] = {}

    def add(stem: str, section: str, title: str, kind: str, per: str, fig: Figure) -> None:
        out.append(ReportFigure(stem, section, title, curves_caption(kind, per=per, common_axes=True, **words), fig))
        by_kind.setdefault(kind, []).append(fig)

    slugs = {s: setting_slug(s, taken) for s in study.settings}
    for setting in study.settings:
        for kind, data in curves.items():
            fig = setting_figure(data, setting, kind, algorithms=algorithms, **draw)
            add(f"figures/{slugs[setting]}/{kind}", "Accuracy per setting", f"{kind}: {setting}", kind, "algorithm",
                fig)
    if len(study.settings) > 1:
        taken.add(ACROSS_SETTINGS_DIR)
        within: set[str] = set()
        levels = [(s, s) for s in study.settings]
        for algorithm in algorithms:
            slug = setting_slug(algorithm, within)
            for kind, data in curves.items():
                fig = levels_figure(data, algorithm, levels, f"{algorithm}: every setting", kind, **draw)
                if fig.legends:
                    add(f"figures/{ACROSS_SETTINGS_DIR}/{slug}/{kind}", "Accuracy per algorithm, across settings",
                        f"{kind}: {algorithm} across settings", kind, "setting", fig)
    for rest, group in compression_levels(study):
        for algorithm in algorithms:
            title = f"{algorithm}: compression levels" + (f" ({rest})" if rest else "")
            slug = setting_slug(f"compression_{algorithm}" + (f"_{rest}" if rest else ""), taken)
            for kind, data in curves.items():
                fig = levels_figure(data, algorithm, group, title, kind, **draw)
                if fig.legends:  # the algorithm has runs at these levels
                    add(f"figures/{slug}/{kind}", "Compression levels", f"{kind}: {title}", kind, "compression level",
                        fig)
    for figs in by_kind.values():
        common_limits(figs)
    return out


def _setting_names(study: StudyData) -> dict[str, str]:
    return {s: ", ".join(h) for s, h in setting_headers(study).items()}


def radio_figures(study: StudyData, algorithms: Sequence[str], width_in: float, taken: set[str]) -> list[ReportFigure]:
    """The round-time breakdown, the SINR and rate CDFs (from ``clients.csv``) and the clients' energy
    (from ``energy.csv``), for the runs that recorded them; none when no run did.

    Returns
    -------
    list of ReportFigure
        Under ``figures/radio/``.
    """
    out: list[ReportFigure] = []
    names = _setting_names(study)
    section = "What the radio did, where the time went, energy per client"
    clients = with_uplink_rate_got(study.clients) if not study.clients.empty else study.clients
    if not clients.empty:
        table = time_breakdown(clients)
        out.append(ReportFigure(f"figures/{RADIO_DIR}/round_time_breakdown", section, "round-time breakdown",
                                breakdown_caption(table),
                                breakdown_figure(table, study.settings, algorithms, setting_names=names,
                                                 width_in=width_in)))
        for column, stem in (("sinr_db", "sinr_cdf"), (UPLINK_RATE_GOT, "uplink_rate_cdf"),
                             ("downlink_rate_bps", "downlink_rate_cdf")):
            if clients[column].notna().any():
                out.append(ReportFigure(f"figures/{RADIO_DIR}/{stem}", section, stem.replace("_", " "),
                                        cdf_caption(column),
                                        cdf_figure(clients, column, study.settings, setting_names=names,
                                                   width_in=width_in)))
    energy = client_energy(study)
    if not energy.empty:
        out.append(ReportFigure(f"figures/{RADIO_DIR}/client_energy_cdf", section, "energy per client",
                                energy_caption(),
                                energy_figure(energy, energy_fairness(energy), study.settings, algorithms,
                                              setting_names=names, width_in=width_in)))
    if out:
        taken.add(RADIO_DIR)
    return out


def sweep_figures(study: StudyData, algorithms: Sequence[str], targets: Sequence[float], width_in: float,
                  taken: set[str], *, n_boot: int = 10_000, bootstrap_seed: int = 0,
                  line_field: str | None = None) -> list[ReportFigure]:
    """Per numeric setting field: time to the first target and final accuracy against it, one line per
    algorithm (:mod:`sfl_sim.analysis.sweep`); none without a numeric field.

    ``line_field`` (a setting field, :func:`line_field_of`): one line per (algorithm, value of it)
    rather than one figure per value.

    Returns
    -------
    list of ReportFigure
        Under ``figures/sweep/``.
    """
    fields = numeric_fields(study)
    if not fields:
        return []
    per_run = per_run_accuracy(study)[["run_id", "setting", "algorithm", "final_test_accuracy"]].copy()
    per_run["final_test_accuracy"] *= 100
    metrics = [("final_test_accuracy", "final test accuracy (%)", "the final test accuracy (last evaluation)")]
    if targets:
        hit = first_reaching(study.metrics, targets[0])
        per_run["tta_s"] = per_run["run_id"].map(hit["sim_time_s"]).astype(float)
        t = target_text(targets[0])
        metrics.insert(0, ("tta_s", f"simulated time to {t} (s)", f"the simulated time to {t} test accuracy"))
    taken.add(SWEEP_DIR)
    short = short_field_names(study.setting_fields)
    within: set[str] = set()
    out = []
    for field in fields:
        lines_by = line_field if line_field != field else None
        line_of = ({s: f"{short[lines_by]}={study.setting_values(s)[lines_by]}" for s in study.settings}
                   if lines_by else None)
        for rest, points in sweep_groups(study, field, lines_by):
            for column, label, what in metrics:
                title = f"{label.split(' (')[0]} against {short[field]}" + (f" ({rest})" if rest else "")
                stem = setting_slug(f"{column}_vs_{short[field]}" + (f"_{rest}" if rest else ""), within)
                fig = sweep_figure(per_run, column, label, field, points, algorithms, title=title, width_in=width_in,
                                   n_boot=n_boot, bootstrap_seed=bootstrap_seed, line_of=line_of)
                out.append(ReportFigure(f"figures/{SWEEP_DIR}/{stem}", "Against a numeric setting field", title,
                                        sweep_caption(what, field, n_boot), fig))
    return out


def line_field_of(study: StudyData, name: str | None) -> str | None:
    """The setting field ``name`` names (its dotted name or its short name in the report), or None.

    Raises
    ------
    ValueError
        One line naming the fields allowed, when ``name`` is none of the study's setting fields.
    """
    if name is None:
        return None
    short = short_field_names(study.setting_fields)
    for f in study.setting_fields:
        if name in (f, short[f]):
            return f
    allowed = ", ".join(study.setting_fields) or "none: every run of this study has the same setting"
    raise ValueError(f"lines: got {name!r}; allowed: a setting field of the study ({allowed})")


def write_figures(out_dir: Path, figures: Sequence[ReportFigure]) -> tuple[list[Path], list[str], str]:
    """Save every figure (PNG and PDF) and write their captions.

    Returns
    -------
    (list of pathlib.Path, list of str, str)
        The files written; the README's figure section (Markdown lines: per section a heading, then
        each image followed by its caption); the text of ``figures.tex`` (one ``figure`` float per
        figure: the PDF, its caption and a label ``fig:<stem>``).
    """
    written: list[Path] = []
    md: list[str] = []
    tex = ["% Figures of the sfl-sim report: one float per figure, paths relative to the report folder "
           "(needs \\usepackage{graphicx})."]
    section = None
    for f in figures:
        written += save_figure(f.figure, out_dir / f.stem)
        if f.section != section:
            section = f.section
            md += [f"### {section}", ""]
        md += [f"![{f.title}]({f.stem}.png)", "", f"_{f.caption}_", ""]
        label = "fig:" + f.stem.removeprefix("figures/").replace("/", ":")
        tex += [r"\begin{figure}[t]", r"\centering", r"\includegraphics[width=\linewidth]{" + f.stem + ".pdf}",
                r"\caption{" + latex_escape(f.caption) + "}", r"\label{" + label + "}", r"\end{figure}", ""]
    return written, md, "\n".join(tex)
