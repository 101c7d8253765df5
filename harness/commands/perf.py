"""`python -m harness perf run | diff | diff-latest`: arguments and what they do (`compare` and
`compare-latest` are the older names of the last two, kept as aliases).

Exit statuses: 0 a valid comparison, 2 a comparison that is not valid (speed-ups withheld: the JIT
compiled nothing, versions or machines differ, the baseline could import CinderX), 3 bad usage or
unreadable input. The perf modules, and the catalog and results modules, are imported when a
command runs, so `--help` and the other commands start without them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.commands.arguments import (RESULTS_HELP, Comparison, add_comparison_commands, at_least,
                                        interpreter_argument, path_argument, positive, threshold_argument)
from harness.errors import HarnessError
from harness.perf import benchmarks
from harness.perf.effort import EFFORTS, Effort

FORMATS = ("md", "json")
PERF = Comparison(what="perf run", side="perf run directory or pyperf JSON file",
                  description="Each side is a perf run directory or any pyperf JSON file; the first is the baseline. "
                              "Speed-ups are withheld when the comparison is not valid.")


def _require_pyperf() -> None:
    """The perf modules import pyperf, which test-run environments need not have: checked on use."""
    try:
        import pyperf  # noqa: F401
    except ImportError:
        raise HarnessError("`harness perf` needs pyperf in this interpreter: pip install pyperf "
                           "(or the harness's `perf` extra)") from None


def add_commands(commands: argparse._SubParsersAction) -> None:
    perf = commands.add_parser("perf", help="performance: run the pyperf suite, compare perf runs")
    actions = perf.add_subparsers(dest="perf_command", required=True, parser_class=type(perf))

    run = actions.add_parser("run", help="run the benchmark suite under one configuration with this interpreter")
    run.add_argument("--config", required=True, help="configuration name (see configurations.yaml)")
    run.add_argument("--threshold", type=threshold_argument,
                     help="JIT compile threshold for this run (JIT configurations)")
    run.add_argument("--results", type=path_argument, help=RESULTS_HELP)
    run.add_argument("--python", type=interpreter_argument, help="interpreter to benchmark (default: the one running this)")
    run.add_argument("--bench", nargs="+", action="extend", metavar="NAME",
                     help=f"only these benchmarks ({', '.join(b.name for b in benchmarks.BENCHMARKS)})")
    effort = run.add_mutually_exclusive_group()
    effort.add_argument("--fast", action="store_true",
                        help=f"rough and quick: {EFFORTS['fast']} (default: {EFFORTS['default']})")
    effort.add_argument("--rigorous", action="store_true", help=f"twice the processes: {EFFORTS['rigorous']}")
    run.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                     help="cpu: the benchmark thread's CPU time (default, robust on a shared machine); wall: elapsed")
    default = EFFORTS["default"]
    run.add_argument("--processes", type=at_least(2), metavar="N",
                     help=f"worker processes per benchmark (default {default.processes})")
    run.add_argument("--values", type=at_least(2), metavar="N",
                     help=f"measured values per worker process (default {default.values})")
    run.add_argument("--rounds", type=positive, metavar="N",
                     help=f"passes through the suite that share the processes out over time "
                          f"(default {default.rounds})")
    run.set_defaults(handler=_run)

    pair, latest = add_comparison_commands(actions, PERF, FORMATS, "perf-report", aliases=("compare", "compare-latest"))
    pair.set_defaults(handler=_diff)
    latest.set_defaults(handler=_diff_latest)


def effort_of(args: argparse.Namespace) -> Effort:
    """--fast / --rigorous / the default, with --processes, --values and --rounds applied."""
    effort = EFFORTS["fast" if args.fast else "rigorous" if args.rigorous else "default"]
    return Effort(processes=args.processes or effort.processes, values=args.values or effort.values,
                  rounds=args.rounds or effort.rounds)


def _run(args: argparse.Namespace) -> int:
    from harness.configure.configurations import load_catalog
    from harness.record.store import default_results_root, ensure_folder

    configuration = load_catalog().get(args.config).with_threshold(args.threshold)
    try:
        selected = benchmarks.select(args.bench)
    except ValueError as error:
        raise HarnessError(f"--bench: {error}") from None
    _require_pyperf()
    from harness.perf.run import PerfRequest, execute

    request = PerfRequest(
        configuration=configuration,
        results_root=ensure_folder((args.results or default_results_root()).resolve(), "results folder"),
        python=args.python or sys.executable, benchmarks=tuple(b.name for b in selected),
        effort=effort_of(args), clock=args.clock, command=tuple(sys.argv),
    )
    print(f"perf run complete: {execute(request, announce=_echo)}")
    return 0


def _echo(line: str) -> None:
    print(line, flush=True)


def _diff(args: argparse.Namespace) -> int:
    return _report(args.baseline, args.candidates, args)


def _report(baseline: Path, candidates: list[Path], args: argparse.Namespace) -> int:
    _require_pyperf()
    from harness.perf.compare import compare
    from harness.perf.record import load_perf_side
    from harness.perf.report import render
    from harness.report.output import write_out

    comparison = compare(load_perf_side(baseline), [load_perf_side(path) for path in candidates])
    write_out(lambda fmt: render(comparison, fmt), args.formats or ["md"], args.out, "perf-report")
    return comparison.exit_status


def _diff_latest(args: argparse.Namespace) -> int:
    _require_pyperf()
    from harness.configure.configurations import load_catalog
    from harness.perf.record import latest_pairing
    from harness.record.store import default_results_root

    root = args.results or default_results_root()
    baseline_name = load_catalog().baseline
    baseline, candidates = latest_pairing(root, baseline_name)
    if baseline is None:
        raise HarnessError(f"no complete '{baseline_name}' perf run under {root} (run: nox -s {baseline_name}-perf)")
    if not candidates:
        raise HarnessError(f"no candidate perf runs under {root}: run a `<configuration>-perf` session first")
    return _report(baseline, candidates, args)
