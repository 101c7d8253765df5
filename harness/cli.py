"""`python -m harness`: run, diff, diff-latest, provision. Arguments by argparse.

Exit statuses follow PRODUCT.md: 0 no regression, 1 regressions, 2 the comparison is not valid,
3 bad usage or unreadable input (always a one-line message naming the file, line or option).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.compare.diff import EXIT_INVALID, EXIT_OK, EXIT_USAGE, Comparison, compare
from harness.configure.configurations import load_catalog
from harness.configure.provision import ensure_python
from harness.configure.tiers import get_tier
from harness.errors import HarnessError
from harness.record.store import default_results_root, latest_runs, load_side
from harness.report.output import FORMATS, deliver
from harness.run.runner import RunRequest, default_python, execute


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # bad usage is exit status 3, as for every other bad input
        self.print_usage(sys.stderr)
        print(f"harness: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness",
                     description="Differential test harness for PyTorch under Python runtimes and JITs.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="run one configuration x one tier with this interpreter")
    run.add_argument("--config", required=True, help="configuration name (see configurations.yaml)")
    run.add_argument("--tier", required=True, help="tier name (see tiers.yaml)")
    run.add_argument("--threshold", type=int, help="JIT compile threshold for this run (JIT configurations)")
    run.add_argument("--tests-dir", type=Path, help="a PyTorch checkout's test/ or any folder of test files")
    run.add_argument("--select", nargs="+", action="extend", metavar="FILE_OR_NODEID",
                     help="test files or node ids, relative to the tests directory, instead of the tier's list")
    run.add_argument("--results", type=Path, help="results root (default: $HARNESS_RESULTS or ./results)")
    run.add_argument("--python", help="interpreter for the test processes (default: the one running this)")

    for name, summary in (("diff", "compare a baseline with a candidate"),
                          ("diff-latest", "compare the latest baseline run of each tier with the latest run of every other configuration")):
        sub = commands.add_parser(name, help=summary)
        if name == "diff":
            sub.add_argument("baseline", type=Path, help="run directory or folder of JUnit XML")
            sub.add_argument("candidate", type=Path, help="run directory or folder of JUnit XML")
        else:
            sub.add_argument("--results", type=Path, help="results root (default: $HARNESS_RESULTS or ./results)")
        sub.add_argument("--format", nargs="+", action="extend", choices=FORMATS, dest="formats",
                         help="report formats (default: md)")
        sub.add_argument("--out", type=Path, help="write report.<format> files into this directory")

    provision = commands.add_parser("provision", help="find or provision an interpreter (e.g. 3.14)")
    provision.add_argument("version", nargs="?", default="3.14")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except HarnessError as error:
        print(f"harness: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


def _run(args: argparse.Namespace) -> int:
    configuration = load_catalog().get(args.config).with_threshold(args.threshold)
    tier = get_tier(args.tier)
    tests_dir = tier.tests_dir(args.tests_dir).resolve()
    targets = tuple(args.select) if args.select else tuple(tier.discover(tests_dir))
    if not targets:
        raise HarnessError(f"tier '{tier.name}' matches no test files under {tests_dir}")
    request = RunRequest(
        configuration=configuration, tier=tier, tests_dir=tests_dir, targets=targets,
        results_root=(args.results or default_results_root()).resolve(),
        python=args.python or default_python(), command=sys.argv,
    )
    run_dir = execute(request)
    print(f"run directory: {run_dir}")
    return EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    comparison = compare(load_side(args.baseline), load_side(args.candidate))
    return _report([comparison], args)


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


def _provision(args: argparse.Namespace) -> int:
    print(ensure_python(args.version))
    return EXIT_OK


_COMMANDS = {"run": _run, "diff": _diff, "diff-latest": _diff_latest, "provision": _provision}
