"""`python -m harness diff` and `diff-latest`: arguments, comparisons, confirmation, reports, exit status.

The comparison and report modules (junitparser, rich, markdown-it, Jinja2, matplotlib) are imported when
a comparison runs: every other harness command, and `--help`, starts without them.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from harness.commands.arguments import (RESULTS_HELP, Comparison, add_comparison_commands, add_rerun_options,
                                        path_argument, positive)
from harness.commands.culprit import add_search_options
from harness.compare.history import WINDOW
from harness.errors import HarnessError
from harness.exits import ExitStatus
from harness.protocol import Setting
from harness.report import FORMATS, unavailable

if TYPE_CHECKING:
    from harness.compare.history import History, Series
    from harness.perf.compare import PerfComparison
    from harness.compare.sides import Side
    from harness.report.model import CoverageSide



TESTS = Comparison(
    what="run", side="run directory or folder of JUnit XML (several candidates: shards of one run, or one per threshold)",
    description="Each side is a run directory, a folder of run directories (shards), or any folder of JUnit XML "
                "files. Consecutive shard run directories of one run make one side. The first side is the baseline; "
                "several candidates of one configuration at different thresholds also get a threshold-sweep table.")


def add_commands(commands: argparse._SubParsersAction) -> None:
    diff, latest = add_comparison_commands(commands, TESTS, FORMATS, "report")
    diff.set_defaults(handler=_diff)
    latest.set_defaults(handler=_diff_latest)
    for sub in (diff, latest):
        sub.add_argument("--confirm", type=positive, metavar="K",
                         help="rerun each regression K times alone in both configurations (and bisect earlier "
                              "tests when it passes alone); what does not reproduce is flaky")
        add_rerun_options(sub, "--confirm-timeout", "--confirm-restart")
        sub.add_argument("--allow-interpreter-mismatch", action="store_true",
                         help="compare runs of different interpreter versions (the report says so)")
        sub.add_argument("--allow-architecture-mismatch", action="store_true",
                         help="compare runs of different processor architectures, e.g. aarch64 with x86_64 "
                              "(the report says so)")
        sub.add_argument("--merged-junit", type=path_argument, metavar="PATH",
                         help="also write one JUnit XML of every side, the configuration as a property")
        sub.add_argument("--culprit", action="store_true",
                         help="bisect the JIT list of each confirmed regression, crash and timeout of a JIT "
                              "configuration to the functions to blame (confirms with --probes K unless --confirm "
                              "is given; see `harness culprit`)")
        add_search_options(sub)
        sub.add_argument("--known-regressions", type=path_argument, metavar="FILE",
                         help="known regressions that add to (per configuration: replace) the shipped "
                              f"harness/configure/data/known_regressions.yaml (default: ${Setting.KNOWN_REGRESSIONS}); "
                              "they are reported apart and do not count in the exit status")
    history = commands.add_parser("history", help="trends, new failures, recoveries, slower and flaky tests over the "
                                                  "runs in the results database")
    history.add_argument("--results", type=path_argument, help=f"{RESULTS_HELP}; ${Setting.DATABASE} names another database")
    history.add_argument("--last", type=positive, default=WINDOW, metavar="N",
                         help=f"runs of each series to look back over (default: {WINDOW})")
    history.add_argument("--config", help="only this configuration")
    history.add_argument("--tier", help="only this tier")
    history.add_argument("--test", metavar="TEXT", help="also show the timeline of every test whose name contains TEXT")
    history.add_argument("--format", choices=("md", "json"), default="md", help="Markdown (default) or JSON")
    history.set_defaults(handler=_history)


def _check_formats(args: argparse.Namespace) -> None:
    problem = unavailable(args.formats or ())
    if problem:
        raise HarnessError(problem)


def _diff(args: argparse.Namespace) -> int:
    from harness.compare.sides import group_shards, load_runs, load_side

    _check_formats(args)
    _refuse_repeated([args.baseline, *args.candidates])
    groups = group_shards([args.baseline, *args.candidates])
    if len(groups) < 2:
        raise HarnessError(f"the run directories given are shards of one run ({', '.join(map(str, groups[0]))}): "
                           "give a baseline and a candidate")
    sides = [load_side(group[0]) if len(group) == 1 else load_runs(group) for group in groups]
    return _report([(sides[0], candidate) for candidate in sides[1:]], args)


def _refuse_repeated(paths: list[Path]) -> None:
    """A folder compared with itself is valid and empty: a verdict that proves nothing, so none."""
    seen: dict[Path, Path] = {}
    for path in paths:
        same = seen.setdefault(path.resolve(), path)
        if same is not path:
            raise HarnessError(f"{path}: given twice (also as {same}): a side compared with itself proves nothing")


def _diff_latest(args: argparse.Namespace) -> int:
    from harness.compare.sides import latest_sides, load_runs
    from harness.configure.configurations import load_catalog
    from harness.record.store import default_results_root

    _check_formats(args)
    root = args.results or default_results_root()
    catalog = load_catalog()
    baseline_name = catalog.baseline
    baseline_of = {name: catalog.baseline_for(c).name for name, c in catalog.configurations.items()}
    latest = latest_sides(root)
    baselines = {(key.configuration, key.tier): paths for key, paths in latest.items()
                 if key.configuration in baseline_of.values()}
    loaded: dict[tuple[str, str], Side] = {}
    pairs = []
    for (config, tier, _), paths in sorted(latest.items(), key=lambda item: (
            item[0].tier, item[0].configuration, item[0].threshold is not None, item[0].threshold or 0)):
        if config in baseline_of.values():
            continue
        baseline = (baseline_of.get(config, baseline_name), tier)  # each architecture's own baseline
        if baseline not in baselines:
            raise HarnessError(f"no '{baseline[0]}' run of tier '{tier}' under {root} to compare '{config}' with "
                               f"(run: nox -s {baseline[0]}-{tier})")
        if baseline not in loaded:
            loaded[baseline] = load_runs(baselines[baseline])
        pairs.append((loaded[baseline], load_runs(paths)))
    if not pairs:
        raise HarnessError(f"no candidate runs under {root}: run a baseline and a candidate session first")
    return _report(pairs, args, perf=_latest_perf(root, baseline_name))


def _latest_perf(root: Path, baseline_name: str) -> PerfComparison | None:
    """The latest baseline perf run against the latest of every other configuration, when the results
    root holds both (the report then shows the forest plot); None otherwise."""
    from harness.perf.record import latest_pairing, load_perf_side

    baseline, candidates = latest_pairing(root, baseline_name)
    if baseline is None or not candidates:
        return None
    try:
        from harness.perf.compare import compare
    except ImportError:
        _announce(f"perf runs found under {root}, but pyperf is not installed here: the report leaves "
                  "performance out (pip install pyperf)")
        return None
    return compare(load_perf_side(baseline), [load_perf_side(path) for path in candidates])


def _check_outputs(args: argparse.Namespace) -> None:
    """Where reports go must be writable: found out before any comparison or confirmation runs."""
    from harness.record.store import ensure_folder

    if args.out is not None:
        ensure_folder(args.out, "--out")
    if args.merged_junit is not None:
        if args.merged_junit.is_dir():
            raise HarnessError(f"--merged-junit {args.merged_junit}: is a directory; name the XML file to write")
        ensure_folder(args.merged_junit.parent, "--merged-junit")


def _report(pairs: list[tuple[Side, Side]], args: argparse.Namespace, perf: PerfComparison | None = None) -> int:
    from harness.compare import known
    from harness.compare.confirm import Reruns, confirm
    from harness.commands.culprit import recorded_culprits, rerun_jobs, search_comparisons
    from harness.compare.diff import Comparison, compare
    from harness.compare.validity import Allowances
    from harness.configure.configurations import load_catalog
    from harness.report.merged_junit import write_merged
    from harness.report.model import build, history_part
    from harness.report.output import deliver

    _check_outputs(args)
    allow = Allowances(interpreter_mismatch=args.allow_interpreter_mismatch,
                       architecture_mismatch=args.allow_architecture_mismatch)
    ran = {str(c.record.configuration.get("name")) for _, c in pairs if c.record is not None}
    known_regressions = known.load(args.known_regressions, set(load_catalog().configurations) | ran)
    comparisons: list[Comparison] = []
    times = args.confirm or (args.probes if args.culprit else None)
    for baseline, candidate in pairs:
        comparison = compare(baseline, candidate, allow)
        if times and comparison.valid and comparison.regressions:
            reruns = Reruns(times, args.confirm_timeout, args.confirm_restart, rerun_jobs(args.jobs))
            comparison = confirm(comparison, candidate, reruns,
                                 _announce, _flaky_in_history(baseline, candidate))
        comparisons.append(known.classify(comparison, known_regressions, candidate.results, candidate.partial))
    candidates = [candidate for _, candidate in pairs]
    if args.culprit:
        search_comparisons(comparisons, candidates, args)
    if args.merged_junit:
        write_merged(args.merged_junit, [("baseline", b) for b, _ in pairs] + [("candidate", c) for _, c in pairs])
    found = _history_of(pairs)
    deliver(build(comparisons, perf=perf, culprits=recorded_culprits(comparisons, candidates),
                  history=history_part(found, comparisons) if found else None, coverage=_coverage_of(candidates)),
            args.formats or ["md"], args.out)
    statuses = [c.exit_status for c in comparisons]
    return ExitStatus.INVALID if ExitStatus.INVALID in statuses else max(statuses)


def _coverage_of(candidates: list[Side]) -> list[CoverageSide]:
    """The JIT coverage of torch each candidate's runs recorded, merged per candidate."""
    from harness.record.coverage import merge, read
    from harness.report.model import CoverageSide

    sides = []
    for candidate in candidates:
        found = [coverage for coverage in (read(path) for path, _ in candidate.parts) if coverage is not None]
        if found:
            sides.append(CoverageSide(candidate.label, merge(found)))
    return sides


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


def _history_of(pairs: list[tuple[Side, Side]]) -> History | None:
    """The history of every compared series (None without a results database)."""
    from harness.compare.history import history

    database, series = _runs_of([side for pair in pairs for side in pair])
    if database is None:
        return None
    wanted = set(series)
    return history(database, wanted=wanted.__contains__)


def _history(args: argparse.Namespace) -> int:
    from harness.compare.history import history
    from harness.record.database import database_path
    from harness.record.store import default_results_root
    from harness.report.history import render
    from harness.report.output import show

    found = history(database_path(args.results or default_results_root()), args.last,
                    lambda s: args.config in (None, s.configuration) and args.tier in (None, s.tier), args.test)
    if args.format == "json":
        sys.stdout.write(json.dumps(asdict(found), indent=2) + "\n")
    else:
        show(render(found))  # laid out as text, like the diff's screen
    return ExitStatus.OK
