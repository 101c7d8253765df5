"""`python -m harness diff` and `diff-latest`: arguments, comparisons, reports, exit status."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.compare.diff import EXIT_INVALID, Comparison, compare
from harness.configure.configurations import load_catalog
from harness.errors import HarnessError
from harness.record.store import default_results_root, latest_runs, load_side
from harness.report.output import FORMATS, deliver


def add_commands(commands: argparse._SubParsersAction) -> None:
    diff = commands.add_parser("diff", help="compare a baseline with a candidate")
    diff.add_argument("baseline", type=Path, help="run directory or folder of JUnit XML")
    diff.add_argument("candidate", type=Path, help="run directory or folder of JUnit XML")
    diff.set_defaults(handler=_diff)
    latest = commands.add_parser("diff-latest", help="compare the latest baseline run of each tier with the "
                                                     "latest run of every other configuration")
    latest.add_argument("--results", type=Path, help="results root (default: $HARNESS_RESULTS or ./results)")
    latest.set_defaults(handler=_diff_latest)
    for sub in (diff, latest):
        sub.add_argument("--format", nargs="+", action="extend", choices=FORMATS, dest="formats",
                         help="report formats (default: md)")
        sub.add_argument("--out", type=Path, help="write report.<format> files into this directory")


def _diff(args: argparse.Namespace) -> int:
    return _report([compare(load_side(args.baseline), load_side(args.candidate))], args)


def _diff_latest(args: argparse.Namespace) -> int:
    root = args.results or default_results_root()
    baseline_name = load_catalog().baseline
    latest = latest_runs(root)
    comparisons = []
    for (config, tier), path in sorted(latest.items()):
        if config == baseline_name:
            continue
        baseline_path = latest.get((baseline_name, tier))
        if baseline_path is None:
            raise HarnessError(f"no '{baseline_name}' run of tier '{tier}' under {root} to compare '{config}' with "
                               f"(run: nox -s {baseline_name}-{tier})")
        comparisons.append(compare(load_side(baseline_path), load_side(path)))
    if not comparisons:
        raise HarnessError(f"no candidate runs under {root}: run a baseline and a candidate session first")
    return _report(comparisons, args)


def _report(comparisons: list[Comparison], args: argparse.Namespace) -> int:
    deliver(comparisons, args.formats or ["md"], args.out)
    statuses = [c.exit_status for c in comparisons]
    return EXIT_INVALID if EXIT_INVALID in statuses else max(statuses)
