"""`python -m harness diff` and `diff-latest`: arguments, comparisons, confirmation, reports, exit status.

The comparison and report modules (junitparser, rich, markdown-it) are imported when a comparison
runs: every other harness command, and `--help`, starts without them.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from harness.compare.history import WINDOW
from harness.errors import HarnessError
from harness.exits import ExitStatus
from harness.report import FORMATS

if TYPE_CHECKING:
    from harness.compare.history import Series
    from harness.record.store import Side

DEFAULT_CONFIRM_TIMEOUT = 900  # seconds for one rerun process: a slow PyTorch test file's test, alone


def add_commands(commands: argparse._SubParsersAction) -> None:
    diff = commands.add_parser("diff", help="compare a baseline with one or more candidates",
                               description="Each side is a run directory, a folder of run directories (shards), "
                                           "or any folder of JUnit XML files. Consecutive shard run directories of "
                                           "one run make one side. The first side is the baseline; several "
                                           "candidates of one configuration at different thresholds also get a "
                                           "threshold-sweep table.")
    diff.add_argument("baseline", type=Path, help="run directory or folder of JUnit XML")
    diff.add_argument("candidates", type=Path, nargs="+", metavar="candidate",
                      help="run directory or folder of JUnit XML (several: shards of one run, or one per threshold)")
    diff.set_defaults(handler=_diff)
    latest = commands.add_parser("diff-latest", help="compare the latest baseline run of each tier with the "
                                                     "latest run of every other configuration (and threshold)")
    latest.add_argument("--results", type=Path, help="results root (default: $HARNESS_RESULTS or ./results)")
    latest.set_defaults(handler=_diff_latest)
    for sub in (diff, latest):
        sub.add_argument("--format", nargs="+", action="extend", choices=FORMATS, dest="formats",
                         help="report formats (default: md)")
        sub.add_argument("--out", type=Path, help="write report.<format> files into this directory")
        sub.add_argument("--confirm", type=_positive, metavar="K",
                         help="rerun each regression K times alone, in fresh processes, in both configurations "
                              "(and bisect earlier tests when it passes alone); what does not reproduce is flaky")
        sub.add_argument("--confirm-timeout", type=_positive, default=DEFAULT_CONFIRM_TIMEOUT, metavar="SECONDS",
                         help=f"time limit of one rerun process (default: {DEFAULT_CONFIRM_TIMEOUT})")
        sub.add_argument("--allow-interpreter-mismatch", action="store_true",
                         help="compare runs of different interpreter versions (the report says so)")
        sub.add_argument("--merged-junit", type=Path, metavar="PATH",
                         help="also write one JUnit XML of every side, the configuration as a property")
    history = commands.add_parser("history", help="trends, new failures, recoveries, slower and flaky tests over the "
                                                  "runs in the results database")
    history.add_argument("--results", type=Path, help="results root (default: $HARNESS_RESULTS or ./results); "
                                                      "$HARNESS_DB names another database")
    history.add_argument("--last", type=_positive, default=WINDOW, metavar="N",
                         help=f"runs of each series to look back over (default: {WINDOW})")
    history.add_argument("--config", help="only this configuration")
    history.add_argument("--tier", help="only this tier")
    history.add_argument("--test", metavar="TEXT", help="also show the timeline of every test whose name contains TEXT")
    history.add_argument("--format", choices=("md", "json"), default="md", help="Markdown (default) or JSON")
    history.set_defaults(handler=_history)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, not {text!r}")
    return value


def _diff(args: argparse.Namespace) -> int:
    from harness.record.store import group_shards, load_runs, load_side

    groups = group_shards([args.baseline, *args.candidates])
    if len(groups) < 2:
        raise HarnessError(f"the run directories given are shards of one run ({', '.join(map(str, groups[0]))}): "
                           "give a baseline and a candidate")
    sides = [load_side(group[0]) if len(group) == 1 else load_runs(group) for group in groups]
    return _report([(sides[0], candidate) for candidate in sides[1:]], args)


def _diff_latest(args: argparse.Namespace) -> int:
    from harness.configure.configurations import load_catalog
    from harness.record.store import default_results_root, latest_sides, load_runs

    root = args.results or default_results_root()
    baseline_name = load_catalog().baseline
    latest = latest_sides(root)
    baselines = {tier: paths for (config, tier, _), paths in latest.items() if config == baseline_name}
    loaded: dict[str, Side] = {}
    pairs = []
    for (config, tier, threshold), paths in sorted(latest.items(), key=lambda item: (
            item[0][1], item[0][0], item[0][2] is not None, item[0][2] or 0)):
        if config == baseline_name:
            continue
        if tier not in baselines:
            raise HarnessError(f"no '{baseline_name}' run of tier '{tier}' under {root} to compare '{config}' with "
                               f"(run: nox -s {baseline_name}-{tier})")
        if tier not in loaded:
            loaded[tier] = load_runs(baselines[tier])
        pairs.append((loaded[tier], load_runs(paths)))
    if not pairs:
        raise HarnessError(f"no candidate runs under {root}: run a baseline and a candidate session first")
    return _report(pairs, args)


def _report(pairs: list[tuple[Side, Side]], args: argparse.Namespace) -> int:
    from harness.compare.confirm import Reruns, confirm
    from harness.compare.diff import Comparison, compare
    from harness.compare.validity import Allowances
    from harness.report.merged_junit import write_merged
    from harness.report.output import deliver

    allow = Allowances(interpreter_mismatch=args.allow_interpreter_mismatch)
    comparisons: list[Comparison] = []
    for baseline, candidate in pairs:
        comparison = compare(baseline, candidate, allow)
        if args.confirm and comparison.valid and comparison.regressions:
            comparison = confirm(comparison, candidate, Reruns(args.confirm, args.confirm_timeout), _announce,
                                 _flaky_in_history(baseline, candidate))
        comparisons.append(comparison)
    if args.merged_junit:
        write_merged(args.merged_junit, [("baseline", b) for b, _ in pairs] + [("candidate", c) for _, c in pairs])
    deliver(comparisons, args.formats or ["md"], args.out, _history_of(pairs))
    statuses = [c.exit_status for c in comparisons]
    return ExitStatus.INVALID if ExitStatus.INVALID in statuses else max(statuses)


def _announce(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _runs_of(sides: list[Side]) -> tuple[Path | None, list[Series]]:
    """The results database beside the sides' run directories (if there is one), and their series."""
    from harness.compare.history import series_of
    from harness.record.database import database_path

    runs = [(path, record) for side in sides for path, record in side.parts]
    database = database_path(runs[0][0].parent) if runs else None
    return (database if database is not None and database.is_file() else None,
            list(dict.fromkeys(series_of(record) for _, record in runs)))


def _flaky_in_history(baseline: Side, candidate: Side) -> dict[str, str]:
    """Tests on the flaky list of either side's series, with their evidence (what --confirm consults)."""
    from harness.compare.history import flaky_tests

    database, series = _runs_of([candidate, baseline])
    if database is None:
        return {}
    return {test: f"{one.label}: {timeline.evidence}" for test, (one, timeline) in flaky_tests(database, series).items()}


def _history_of(pairs: list[tuple[Side, Side]]) -> str:
    """The history of every compared series, as Markdown for the report (empty without a database)."""
    from harness.compare.history import history
    from harness.report.history import render

    database, series = _runs_of([side for pair in pairs for side in pair])
    if database is None:
        return ""
    wanted = set(series)
    return render(history(database, wanted=wanted.__contains__))


def _history(args: argparse.Namespace) -> int:
    from harness.compare.history import history
    from harness.record.database import database_path
    from harness.record.store import default_results_root
    from harness.report.history import render

    found = history(database_path(args.results or default_results_root()), args.last,
                    lambda s: args.config in (None, s.configuration) and args.tier in (None, s.tier), args.test)
    sys.stdout.write(json.dumps(asdict(found), indent=2) + "\n" if args.format == "json" else render(found))
    return ExitStatus.OK
