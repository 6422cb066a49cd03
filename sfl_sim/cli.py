"""Command line: ``sfl-sim scenario PATH``, ``channel``, ``plot RUN_DIR...``, ``scenarios``, ``list [KIND]``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from sfl_sim.config import ConfigError, load_scenario
from sfl_sim import catalog, output_paths, scenario_files  # scenarios by name, listings, default outputs
from sfl_sim.workdir_imports import import_from_working_directory


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sfl-sim", description="Split federated learning over a simulated wireless cell.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {catalog.package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    sc = sub.add_parser("scenario", help="run every algorithm of a scenario file")
    sc.add_argument("path", help="scenario YAML, or a shipped scenario's name, e.g. cellular_100clients.yaml "
                                 "(see 'sfl-sim scenarios')")
    sc.add_argument("--output-dir", "-o", help="where run directories go (one per algorithm)")
    sc.add_argument("--seed", type=int, help="root seed of every random stream")
    sc.add_argument("--rounds", type=int, help="global iterations")
    sc.add_argument("--device", choices=["cpu", "cuda", "auto"], help="torch device")
    sc.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                    help="override any field, e.g. --set clients.participation=0.2 (repeatable)")
    sc.add_argument("--resume", action="store_true", help="continue interrupted runs from their checkpoints")
    sc.add_argument("--no-progress", action="store_true", help="no progress bar")
    sc.add_argument("--check", action="store_true", help="validate the scenario and build every part, train nothing")

    ch = sub.add_parser("channel", help="print and plot a scenario's cell (positions, path loss, SNR, rate)")
    ch.add_argument("path", help="scenario YAML, or a shipped scenario's name")
    ch.add_argument("--output-dir", "-o",
                    help="folder for cell.csv and cell.png (default: <scenario output_dir>/cell_report)")
    ch.add_argument("--out", dest="output_dir", help=argparse.SUPPRESS)  # the old name, still accepted
    ch.add_argument("--seed", type=int, help="root seed (placement, shadowing, LOS streams)")
    ch.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                    help="override any field (repeatable)")

    pl = sub.add_parser("plot", help="accuracy and uplink bytes versus simulated time, one PNG each")
    pl.add_argument("run_dirs", nargs="+", help="run directories written by 'sfl-sim scenario'")
    pl.add_argument("--output-dir", "-o", help="folder for the PNG files (default: plots/ in the runs' scenario "
                                             "directory)")
    pl.add_argument("--out", dest="output_dir", help=argparse.SUPPRESS)  # the old name, still accepted

    # Listings: sfl_sim.scenario_files, sfl_sim.catalog
    sub.add_parser("scenarios", help="list the shipped scenarios with their descriptions")
    ls = sub.add_parser("list", help="list registered components with their parameters and defaults")
    ls.add_argument("kind", nargs="?", help=f"one of {', '.join(catalog.KINDS)}, channel (default: all)")
    return parser


def _scenario(args: argparse.Namespace) -> int:
    from sfl_sim.data import DatasetNotFoundError

    extra = {"output_dir": args.output_dir, "seed": args.seed, "rounds": args.rounds, "device": args.device}
    try:
        cfg = load_scenario(scenario_files.resolve_scenario(args.path), args.overrides, extra)
        from sfl_sim import runner  # imported late: torch is slow to import, errors above need none

        if args.check:
            dataset = runner._component(runner.DATASETS, cfg["data"]["dataset"], "data.dataset").load()
            for spec in cfg["algorithms"]:
                runner.build_run(cfg, spec, dataset)
            print(f"scenario {args.path}: valid; {len(cfg['algorithms'])} run(s) build")
            return 0
        summaries = runner.run_scenario(cfg, resume=args.resume, progress=not args.no_progress)
    except ConfigError as exc:
        print(f"sfl-sim: invalid scenario: {exc}", file=sys.stderr)
        return 2
    except DatasetNotFoundError as exc:
        print(f"sfl-sim: data set not found: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nsfl-sim: interrupted; results so far are on disk, continue with --resume", file=sys.stderr)
        return 130
    _print_summaries(summaries, Path(cfg["output_dir"]))
    return 0


def _print_summaries(summaries: List[dict], out: Path) -> None:
    from sfl_sim.summary_table import format_tables, write_summary_files  # late: pandas, torch

    csv_path, md_path = write_summary_files(summaries, out)
    print(f"\nresults in {out}/")
    print(format_tables(summaries))
    print(f"(tables also in {csv_path} and {md_path.name})")


def _channel(args: argparse.Namespace) -> int:
    try:
        cfg = load_scenario(scenario_files.resolve_scenario(args.path), args.overrides, {"seed": args.seed})
        from sfl_sim.channel_report import channel_report

        out = Path(args.output_dir) if args.output_dir else output_paths.cell_report_dir(cfg["output_dir"])
        channel_report(cfg, out)
    except ConfigError as exc:
        print(f"sfl-sim: invalid scenario: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out / 'cell.csv'} and {out / 'cell.png'}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from analysis import plot_runs
    from analysis.runs import RunFormatError

    try:
        paths = plot_runs(args.run_dirs, args.output_dir or output_paths.plot_dir(args.run_dirs))
    except (FileNotFoundError, RunFormatError) as exc:
        print(f"sfl-sim plot: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(p)
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


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the ``sfl-sim`` console script."""
    import_from_working_directory()  # module:Class from the working directory, as `python -m` does
    args = _parser().parse_args(argv)
    commands = {"scenario": _scenario, "channel": _channel, "plot": _plot, "scenarios": _scenarios, "list": _list}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
