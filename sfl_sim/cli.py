"""Command line: ``sfl-sim scenario|study|channel|traces|plot|report|scenarios|list|schema``.

Every command reports bad input as one line on stderr (exit code 2, nothing run), a run that
failed or diverged as one line per run (exit code 1), and keeps tracebacks behind ``--debug``.
The commands that run or write call :mod:`sfl_sim.api` (the Python API) and print what it returns,
so the command line and a notebook cannot do different things.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sfl_sim import api, catalog
from sfl_sim.config import scenario_files
from sfl_sim.kit.checks import one_line
from sfl_sim.kit.workdir_imports import import_from_working_directory
from sfl_sim.runs.rundir.schema import COMPLETE, RUNNING


def _debug_flag(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: a subcommand's flag must not reset `sfl-sim --debug CMD` to False.
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of an error")


def _strict_versions_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strict-versions", action="store_true",
                        help="refuse to continue (or, in a study, reuse) a run made with other versions of sfl-sim, "
                             "its git commit, torch, numpy or Python (default: a warning)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sfl-sim",
                                     description="Split federated learning over a simulated wireless cell.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {catalog.package_version()}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)

    sc = sub.add_parser("scenario", help="run every algorithm of a scenario file")
    sc.add_argument("path", help="scenario YAML, or a shipped scenario's name (see 'sfl-sim scenarios')")
    sc.add_argument("--output-dir", "-o", help="where run directories go (one per algorithm)")
    sc.add_argument("--seed", type=int, help="root seed of every random stream")
    sc.add_argument("--seeds", help="run these seeds as a study, e.g. 0,1,2 (one run directory per algorithm "
                                    "and seed)")
    sc.add_argument("--workers", type=int, default=1, help="with --seeds: runs at once (default 1)")
    sc.add_argument("--rounds", type=int, help="global iterations")
    sc.add_argument("--device", choices=["cpu", "cuda", "auto"], help="torch device")
    sc.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                    help="override any field, e.g. --set clients.participation=0.2 (repeatable)")
    sc.add_argument("--resume", action="store_true", help="continue interrupted runs from their checkpoints")
    sc.add_argument("--overwrite", action="store_true",
                    help="replace the runs the run directories hold (each is replaced once its new run has finished; "
                         "only the files sfl-sim wrote go)")
    _strict_versions_flag(sc)
    sc.add_argument("--no-progress", action="store_true", help="no progress output")
    sc.add_argument("--check", action="store_true", help="validate the scenario and build every part, train nothing")
    _debug_flag(sc)

    rt = sub.add_parser("retime", help="time a finished run again under other timing-only settings, without "
                                       "training")
    rt.add_argument("run_dir", metavar="RUN_DIR", help="a complete run directory (one algorithm's)")
    rt.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                    help="a timing-only field, e.g. --set cell.uplink_bandwidth_hz=5e6 (repeatable)")
    rt.add_argument("--output-dir", "-o", required=True, help="the re-timed run directory (new or empty)")
    rt.add_argument("--no-progress", action="store_true", help="no progress output")
    _debug_flag(rt)

    st = sub.add_parser("study", help="run a study (base scenario x seeds x grid), resumably, in parallel")
    st.add_argument("path", help="study YAML (base, seeds, grid, set, output_dir)")
    st.add_argument("--output-dir", "-o", help="study directory (default: the study's output_dir, else "
                                               "runs/studies/<file stem>)")
    st.add_argument("--workers", type=int, default=1, help="runs at once with the local executor (default 1)")
    st.add_argument("--threads-per-worker", type=int, help="torch threads per worker (default: free cores / workers)")
    st.add_argument("--executor", choices=["local", "ray"], default="local", help="local process pool or Ray tasks")
    st.add_argument("--address", help="Ray cluster address (default: start a local Ray instance)")
    st.add_argument("--cpus-per-run", type=float, default=1.0, help="Ray: CPUs each run asks for (default 1)")
    st.add_argument("--gpus-per-run", type=float, default=0.0, help="Ray: GPU fraction each run asks for (default 0)")
    st.add_argument("--dry-run", action="store_true", help="list the runs (and which are done), run nothing")
    st.add_argument("--list-all", action="store_true",
                    help=f"--dry-run: list every run (default: the count, then the first {DRY_RUN_LISTED} runs)")
    _strict_versions_flag(st)
    st.add_argument("--no-progress", action="store_true", help="no progress output")
    _debug_flag(st)

    ch = sub.add_parser("channel", help="print and plot a scenario's cell and its rounds' draws (SNR, SINR, rates, "
                                            "outage, path loss)")
    ch.add_argument("path", help="scenario YAML, or a shipped scenario's name")
    ch.add_argument("--output-dir", "-o",
                    help="folder for cell.csv and cell.png (default: <scenario output_dir>/cell_report)")
    ch.add_argument("--out", dest="output_dir", help=argparse.SUPPRESS)  # an undocumented alias of --output-dir
    ch.add_argument("--seed", type=int, help="root seed (placement, shadowing, LOS streams)")
    ch.add_argument("--colour-by", choices=("rate", "cqi"), default="rate",
                    help="colour the clients in cell.png by uplink rate (default) or CQI (cell.rate: mcs_table)")
    ch.add_argument("--rounds", type=int, default=None,
                    help="rounds of fading and interference drawn for the distributions, 1 to 10,000 (default 20); "
                         "a time-varying fading's autocorrelation is estimated over rounds x round-s seconds")
    ch.add_argument("--round-s", type=float, default=None,
                    help="simulated seconds between drawn rounds: how far mobile clients move (default 1)")
    ch.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                    help="override any field (repeatable)")
    _debug_flag(ch)

    tr = sub.add_parser("traces", help="summarise and plot a device trace (availability or capability)")
    tr.add_argument("path", metavar="FILE", help="the trace file")
    tr.add_argument("--format", default="csv", choices=["csv", "flash", "fedscale"],
                    help="file format (default csv; capability traces: csv or fedscale)")
    tr.add_argument("--kind", default="availability", choices=["availability", "capability"],
                    help="what the file holds: online intervals (default) or device speeds")
    tr.add_argument("--output-dir", "-o", help="folder for traces.csv and traces.png (default: FILE_report beside it)")
    _debug_flag(tr)

    pl = sub.add_parser("plot", help="accuracy and uplink bytes versus simulated time, one PNG each")
    pl.add_argument("run_dirs", nargs="+", metavar="DIR",
                    help="run directories, or scenario / study directories with run directories below")
    pl.add_argument("--output-dir", "--out", "-o", dest="out",
                    help="folder for the PNG files (default: DIR/plots, under the common parent of several DIRs)")

    rp = sub.add_parser("report", help="tables (accuracy, time to accuracy, overhead) and figures of a study")
    rp.add_argument("dirs", nargs="+", metavar="DIR", help="study, scenario-output or run directories")
    rp.add_argument("--output-dir", "--out", "-o", dest="out",
                    help="report folder (default: DIR/report, under the common parent of several DIRs)")
    rp.add_argument("--reference", metavar="ALG", help="algorithm label to report speed-ups against, e.g. fedavg")
    rp.add_argument("--targets", metavar="T1,T2", help="accuracy targets as fractions, e.g. 0.6,0.7, also drawn "
                    "as lines in the figures (default: the scenarios' target_accuracies, no lines)")
    rp.add_argument("--band", choices=["std", "ci", "minmax"], default="std",
                    help="shaded band of the figures: mean ± 1 std (default), 95%% bootstrap CI of the mean "
                    "(5 seeds or more) or min-max over seeds")
    rp.add_argument("--ignore-field", dest="ignore", action="append", default=[], metavar="FIELD",
                    help="scenario field not to split settings by, e.g. rounds (repeatable)")
    rp.add_argument("--include-incomplete", action="store_true", help="also report runs that did not finish")
    rp.add_argument("--no-figures", action="store_true", help="tables only")
    rp.add_argument("--figure-width", type=float, default=None, metavar="IN",
                    help="figure width in inches, 3 to 12 (default 6.4, with --style paper 3.5: one column), "
                    "fonts >= 7 pt")
    rp.add_argument("--style", choices=["default", "paper"], default="default",
                    help="figure style: paper is serif (STIX, Times-like) and one column wide; every PDF embeds "
                    "its fonts (TrueType)")
    rp.add_argument("--seed-lines", action="store_true", help="also draw every seed as a thin line (no band)")
    rp.add_argument("--smooth", type=int, default=0, metavar="K",
                    help="rolling mean over K evaluations of each seed in the figures (default 0: none)")
    rp.add_argument("--log-x", action="store_true", help="log x axes in the accuracy figures")
    rp.add_argument("--lines", metavar="FIELD", help="setting field drawn as lines (one per value and algorithm) "
                    "in the figures against a numeric field, e.g. scheduler, instead of one figure per value")

    # Listings: sfl_sim.config.scenario_files, sfl_sim.catalog
    sub.add_parser("scenarios", help="list the shipped scenarios with their descriptions")
    ls = sub.add_parser("list", help="list registered components with their parameters and defaults")
    ls.add_argument("kind", nargs="?", help=f"one of {', '.join(catalog.KINDS)}, channel (default: all)")
    sub.add_parser("schema", help="print the JSON Schema of scenario files (for editor completion and checks)")
    return parser


def _scenario(args: argparse.Namespace) -> int:
    options = dict(overrides=args.overrides, output_dir=args.output_dir, seed=args.seed, rounds=args.rounds,
                   device=args.device, strict_versions=args.strict_versions, overwrite=args.overwrite)
    if args.check:
        plan = api.check(args.path, seeds=args.seeds, workers=args.workers, resume=args.resume, **options)
        if args.seeds is not None:
            return _print_plan(plan)
        print(f"scenario {args.path}: valid; {len(plan.runs)} run(s) build")
        for line in plan.radio:
            print(line)
        return 0
    results = api.run(args.path, seeds=args.seeds, workers=args.workers, resume=args.resume,
                      progress=not args.no_progress, **options)
    if args.seeds is not None:
        return _study_outcome(results)
    _print_summaries([r.summary for r in results], results[0].path.parent)
    return _report_failures(results)


def _retime(args: argparse.Namespace) -> int:
    result = api.retime(args.run_dir, overrides=args.overrides, output_dir=args.output_dir,
                        progress=not args.no_progress)
    _print_summaries([result.summary], result.path, tables_written=False)
    return _report_failures([result])


def _report_failures(results: list[api.RunResult]) -> int:
    failed = [r for r in results if r.status not in (COMPLETE, RUNNING)]
    for r in failed:
        print(f"sfl-sim: {r.status}: {r.error or r.label}", file=sys.stderr)
    return 1 if failed else 0


def _study(args: argparse.Namespace) -> int:
    if args.dry_run:
        return _print_plan(api.plan_study(args.path, output_dir=args.output_dir, workers=args.workers,
                                          strict_versions=args.strict_versions, progress=not args.no_progress),
                           listed=None if args.list_all else DRY_RUN_LISTED)
    return _study_outcome(api.run_study(
        args.path, output_dir=args.output_dir, workers=args.workers, executor=args.executor, address=args.address,
        threads_per_worker=args.threads_per_worker, cpus_per_run=args.cpus_per_run,
        gpus_per_run=args.gpus_per_run, progress=not args.no_progress, strict_versions=args.strict_versions))


#: Runs ``study --dry-run`` lists before it summarises the rest (``--list-all``: every one): a
#: 64,000-point grid's listing is no plan a reader can check.
DRY_RUN_LISTED = 50


def _print_plan(plan: api.Plan, listed: int | None = None) -> int:
    """The count and the expected cost first, then the runs (up to ``listed`` of them, None: all),
    each with how it is to be made (trained, or re-timed from which run), then what was left out."""
    done = sum(run.done for run in plan.runs)
    print(f"{len(plan.runs):,} runs ({len(plan.seeds)} seeds) from {plan.base}: {done:,} done, "
          f"{len(plan.runs) - done:,} to run")
    if plan.expected:
        print(plan.expected)
    shown = plan.runs if listed is None else plan.runs[:listed]
    for run in shown:
        how = "" if run.done else f"  (re-time from {run.retime_from})" if run.retime_from else "  (train)"
        print(f"{'done   ' if run.done else 'to run '} {run.path}{how}")
    left = plan.runs[len(shown):]
    if left:
        left_done = sum(run.done for run in left)
        print(f"... and {len(left):,} more ({left_done:,} done, {len(left) - left_done:,} to run); --list-all lists "
              f"every run")
    return 0


def _study_outcome(results: list[api.RunResult]) -> int:
    out = results[0].path.parent
    failed = [r for r in results if not r.ok]
    print(f"study in {out}/: {len(results) - len(failed)} of {len(results)} runs complete"
          + (f"; report with: sfl-sim report {out}" if not failed else ""))
    for r in failed:
        print(f"sfl-sim: {r.status}: {r.path.name}: {r.error or 'see its summary.json'}", file=sys.stderr)
    return 1 if failed else 0


def _print_summaries(summaries: list[dict], out: Path, tables_written: bool = True) -> None:
    """The end-of-run tables; ``tables_written``: ``summary.csv`` and ``summary.md`` were written
    into ``out`` (a scenario's, not a re-timing's)."""
    from sfl_sim.analysis.comparison import format_tables, summary_paths  # late: pandas

    print(f"\nresults in {out}/")
    print(format_tables(summaries))
    if tables_written:
        csv_path, md_path = summary_paths(out)
        print(f"(tables also in {csv_path} and {md_path.name})")


def _channel(args: argparse.Namespace) -> int:
    cell = api.channel_report(args.path, overrides=args.overrides, output_dir=args.output_dir, seed=args.seed,
                              stream=sys.stdout, colour_by=args.colour_by, rounds=args.rounds,
                              round_s=args.round_s)
    print(f"wrote {', '.join(map(str, cell.files[:-1]))} and {cell.files[-1]}")
    return 0


def _traces(args: argparse.Namespace) -> int:
    report = api.trace_report(args.path, format=args.format, kind=args.kind, output_dir=args.output_dir,
                              stream=sys.stdout)
    print(f"wrote {report.files[0]} and {report.files[1]}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from sfl_sim.analysis.runs import RunFormatError

    try:
        paths = api.plot(args.run_dirs, output_dir=args.out)
    except (FileNotFoundError, NotADirectoryError, RunFormatError) as exc:
        print(f"sfl-sim plot: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(p)
    return 0


def _report(args: argparse.Namespace) -> int:
    from sfl_sim.analysis.runs import RunFormatError
    from sfl_sim.analysis.study_data import StudyError

    try:
        report = api.report(args.dirs, output_dir=args.out, reference=args.reference, targets=args.targets,
                            band=args.band, ignore=args.ignore, include_incomplete=args.include_incomplete,
                            figures=not args.no_figures, figure_width_in=args.figure_width,
                            seed_lines=args.seed_lines, smooth=args.smooth, log_x=args.log_x, lines=args.lines,
                            style=args.style)
    except (FileNotFoundError, NotADirectoryError, StudyError, RunFormatError, ValueError) as exc:
        print(f"sfl-sim report: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {len(report.files)} files to {report.path}/ (start with {report.files[0]})")
    return 0


def _scenarios(args: argparse.Namespace) -> int:
    print(scenario_files.listing())
    return 0


def _list(args: argparse.Namespace) -> int:
    try:
        print(catalog.listing(args.kind))
    except catalog.UnknownKindError as exc:
        print(f"sfl-sim list: {exc}", file=sys.stderr)
        return 2
    return 0


def _schema(args: argparse.Namespace) -> int:
    import json

    from sfl_sim.catalog.component_schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def _error_line(exc: BaseException) -> str:
    from sfl_sim.errors import ArgumentError, ConfigError

    kind = "invalid scenario: " if isinstance(exc, ConfigError) and not isinstance(exc, ArgumentError) else ""
    if type(exc).__name__ == "DatasetNotFoundError":
        kind = "data set not found: "
    if getattr(exc, "multiline", False):  # one line per differing field (sfl_sim.runs.resolved)
        return f"sfl-sim: {kind}" + "\n".join(line.rstrip() for line in str(exc).splitlines())
    return f"sfl-sim: {kind}{one_line(exc)}"


def _show_warning(message: Warning | str, category: type, filename: str, lineno: int, file: object = None,
                  line: str | None = None) -> None:
    """Warnings (e.g. clients outside the path-loss model's range) as one plain line on stderr."""
    print(f"sfl-sim: warning: {' '.join(str(message).split())}", file=sys.stderr)


COMMANDS = {"scenario": _scenario, "retime": _retime, "study": _study, "channel": _channel, "traces": _traces,
            "plot": _plot, "report": _report,
            "scenarios": _scenarios, "list": _list, "schema": _schema}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sfl-sim`` console script.

    Exit codes: 0 success; 2 bad input (nothing was run); 1 a run failed or diverged, or an
    unexpected error (``--debug`` shows its traceback); 130 interrupted.
    """
    import_from_working_directory()  # module:Class from the working directory, as `python -m` does
    args = _parser().parse_args(argv)
    import warnings

    from sfl_sim.errors import UserError

    warnings.showwarning = _show_warning
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("\nsfl-sim: interrupted; results so far are on disk, continue with --resume", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `sfl-sim list | head`
        sys.stderr.close()
        return 0
    except Exception as exc:
        if getattr(args, "debug", False):
            raise
        if isinstance(exc, UserError) or type(exc).__name__ == "DatasetNotFoundError":
            print(_error_line(exc), file=sys.stderr)
            return 2
        print(f"sfl-sim: error: {one_line(exc, with_type=True)} "
              f"(rerun with --debug for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
