"""Command line: ``sfl-sim scenario PATH``, ``sfl-sim plot DIR...`` and ``sfl-sim report DIR...``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from sfl_sim.config import ConfigError, load_scenario


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sfl-sim", description="Split federated learning over a simulated wireless cell.")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)

    sc = sub.add_parser("scenario", help="run every algorithm of a scenario file")
    sc.add_argument("path", help="scenario YAML, e.g. scenarios/cellular_100clients.yaml")
    sc.add_argument("--output-dir", "-o", help="where run directories go (one per algorithm)")
    sc.add_argument("--seed", type=int, help="root seed of every random stream")
    sc.add_argument("--rounds", type=int, help="global iterations")
    sc.add_argument("--device", choices=["cpu", "cuda", "auto"], help="torch device")
    sc.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                    help="override any field, e.g. --set clients.participation=0.2 (repeatable)")
    sc.add_argument("--resume", action="store_true", help="continue interrupted runs from their checkpoints")
    sc.add_argument("--no-progress", action="store_true", help="no progress bar")
    sc.add_argument("--check", action="store_true", help="validate the scenario and build every part, train nothing")
    sc.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show the traceback of an error")

    ch = sub.add_parser("channel", help="print and plot a scenario's cell (positions, path loss, SNR, rate)")
    ch.add_argument("path", help="scenario YAML")
    ch.add_argument("--out", "-o", default="cell_report", help="folder for cell.csv and cell.png (default: cell_report)")
    ch.add_argument("--seed", type=int, help="root seed (placement, shadowing, LOS streams)")
    ch.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                    help="override any field (repeatable)")

    sub.add_parser("schema", help="print the JSON Schema of scenario files (for editor completion and checks)")

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
    rp.add_argument("--band", choices=["std", "minmax"], default="std",
                    help="shaded band of the figures: mean ± 1 std (default) or min-max over seeds")
    rp.add_argument("--ignore-field", dest="ignore", action="append", default=[], metavar="FIELD",
                    help="scenario field not to split settings by, e.g. rounds (repeatable)")
    rp.add_argument("--include-incomplete", action="store_true", help="also report runs that did not finish")
    rp.add_argument("--no-figures", action="store_true", help="tables only")
    return parser


def _scenario(args: argparse.Namespace) -> int:
    extra = {"output_dir": args.output_dir, "seed": args.seed, "rounds": args.rounds, "device": args.device}
    cfg = load_scenario(args.path, args.overrides, extra)
    from sfl_sim import runner  # imported late: torch is slow to import, errors above need none

    if args.check:
        runner.prepare_scenario(cfg, resume=args.resume)
        print(f"scenario {args.path}: valid; {len(cfg.algorithms)} run(s) build")
        return 0
    summaries = runner.run_scenario(cfg, resume=args.resume, progress=not args.no_progress)
    _print_summaries(summaries, Path(cfg.output_dir))
    failed = [s for s in summaries if s.get("status") not in ("complete", "running")]
    for s in failed:
        print(f"sfl-sim: {s.get('status')}: {s.get('error', s.get('label'))}", file=sys.stderr)
    return 1 if failed else 0


def _print_summaries(summaries: List[dict], out: Path) -> None:
    print(f"\nresults in {out}/")
    print(f"{'run':<14}{'rounds':>7}{'final acc':>11}{'best acc':>10}{'sim time (s)':>14}{'host time (s)':>15}"
          f"{'uplink (MB)':>13}")
    for s in summaries:
        if not s:
            continue
        print(f"{s['label']:<14}{s['rounds_completed']:>7}{s['final_test_accuracy']:>11.4f}"
              f"{s['best_test_accuracy']:>10.4f}{s['final_sim_time_s']:>14.1f}{s['host_time_s']:>15.1f}"
              f"{s['uplink_bytes'] / 1e6:>13.1f}")
    targets = list(summaries[0].get("time_to_accuracy_s", {})) if summaries and summaries[0] else []
    if targets:
        print("simulated time to accuracy (s): " + "; ".join(
            s["label"] + " " + ", ".join(f"{t}: {'-' if v is None else f'{v:.0f}'}"
                                         for t, v in s["time_to_accuracy_s"].items())
            for s in summaries if s))
    from sfl_sim.algorithms.base import GLOBAL_MODEL_EVALUATION  # late, as runner: torch is loaded by now
    for s in summaries:  # accuracies of something other than the global model are not comparable as-is
        if s and s.get("evaluated", GLOBAL_MODEL_EVALUATION) != GLOBAL_MODEL_EVALUATION:
            print(f"note: {s['label']} accuracy is of the {s['evaluated']}")


def _channel(args: argparse.Namespace) -> int:
    cfg = load_scenario(args.path, args.overrides, {"seed": args.seed})
    from sfl_sim.channel_report import channel_report

    channel_report(cfg, Path(args.out))
    print(f"wrote {Path(args.out) / 'cell.csv'} and {Path(args.out) / 'cell.png'}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from analysis import plot_runs
    from analysis.report import default_output_dir
    from analysis.runs import RunFormatError

    try:
        paths = plot_runs(args.run_dirs, args.out or default_output_dir(args.run_dirs, "plots"))
    except (FileNotFoundError, NotADirectoryError, RunFormatError) as exc:
        print(f"sfl-sim plot: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(p)
    return 0


def _schema(args: argparse.Namespace) -> int:
    import json

    from sfl_sim.config import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def _error_line(exc: BaseException) -> str:
    from sfl_sim.errors import ConfigError

    kind = "invalid scenario: " if isinstance(exc, ConfigError) else ""
    if type(exc).__name__ == "DatasetNotFoundError":
        kind = "data set not found: "
    return f"sfl-sim: {kind}{' '.join(str(exc).split())}"


def _show_warning(message: Warning | str, category: type, filename: str, lineno: int, file: object = None,
                  line: Optional[str] = None) -> None:
    """Warnings (e.g. clients outside the path-loss model's range) as one plain line on stderr."""
    print(f"sfl-sim: warning: {' '.join(str(message).split())}", file=sys.stderr)


def _report(args: argparse.Namespace) -> int:
    from analysis.report import default_output_dir, parse_targets, write_report
    from analysis.runs import RunFormatError
    from analysis.study_data import StudyError

    out = Path(args.out) if args.out else default_output_dir(args.dirs, "report")
    try:
        targets = parse_targets(args.targets) if args.targets else None
        files = write_report(args.dirs, out, reference=args.reference, targets=targets, band=args.band,
                             ignore=args.ignore, include_incomplete=args.include_incomplete,
                             figures=not args.no_figures)
    except (FileNotFoundError, NotADirectoryError, StudyError, RunFormatError, ValueError) as exc:
        print(f"sfl-sim report: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {len(files)} files to {out}/ (start with {files[0]})")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the ``sfl-sim`` console script.

    Exit codes: 0 success; 2 bad input (nothing was run); 1 a run failed or diverged, or an
    unexpected error (``--debug`` shows its traceback); 130 interrupted.
    """
    args = _parser().parse_args(argv)
    import warnings

    warnings.showwarning = _show_warning
    commands = {"scenario": _scenario, "channel": _channel, "plot": _plot, "schema": _schema,
                "report": _report}
    from sfl_sim.errors import UserError

    try:
        return commands[args.command](args)
    except KeyboardInterrupt:
        print("\nsfl-sim: interrupted; results so far are on disk, continue with --resume", file=sys.stderr)
        return 130
    except Exception as exc:
        if getattr(args, "debug", False):
            raise
        if isinstance(exc, UserError) or type(exc).__name__ == "DatasetNotFoundError":
            print(_error_line(exc), file=sys.stderr)
            return 2
        print(f"sfl-sim: error: {type(exc).__name__}: {' '.join(str(exc).split())} "
              f"(rerun with --debug for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
