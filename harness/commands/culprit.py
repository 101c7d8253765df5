"""`python -m harness culprit RUN_DIR_OR_REPORT` and `diff --culprit`: which functions to blame.

Each search's culprit is written into the candidate run directory (harness/record/culprits.py) as
soon as it is found, so an interrupted search loses nothing finished, and every later diff of that
run shows it in the Markdown, JSON and HTML reports.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.commands.arguments import add_rerun_options, jobs_argument, path_argument, positive
from harness.errors import HarnessError
from harness.exits import ExitStatus

if TYPE_CHECKING:
    from harness.compare.culprit.probes import Budget, Target
    from harness.compare.diff import Comparison
    from harness.record.culprits import Culprit
    from harness.compare.sides import Side

DEFAULT_PROBES = 2  # reruns per JIT list: two disagreeing reruns are enough to call a probe flaky
DEFAULT_ATTEMPTS = 10  # a compile-thread crash seen in 1 of 10 runs is caught again with probability 0.65


def add_commands(commands: argparse._SubParsersAction) -> None:
    culprit = commands.add_parser(
        "culprit", help="bisect the JIT list of failing tests down to the compiled functions to blame",
        description="For each confirmed regression, crash or timeout of a JIT configuration (a report.json "
                    "written by diff), or each crash and timeout of a run directory: the smallest set of "
                    "functions whose compilation makes it fail, the HIR passes that matter, and a reproducer "
                    "(a JIT list file in the run directory and a command). Results go into the run directory; "
                    "diff shows them.")
    culprit.add_argument("source", type=path_argument, metavar="RUN_DIR_OR_REPORT",
                         help="a run directory of a JIT configuration, or a report.json written by diff")
    culprit.add_argument("--test", action="append", default=[], metavar="ID",
                         help="only this test (classname::name or node id); repeatable. In a run directory: any "
                              "failing test")
    add_rerun_options(culprit, "--timeout", "--restart")
    add_search_options(culprit)
    culprit.set_defaults(handler=_culprit)


def add_search_options(parser: argparse.ArgumentParser) -> None:
    """Options a search shares between `culprit` and `diff --culprit`."""
    parser.add_argument("--probes", type=positive, default=DEFAULT_PROBES, metavar="K",
                        help=f"reruns per JIT list (default {DEFAULT_PROBES}); a list whose reruns disagree is "
                             "reported as a flaky probe and the search stops there")
    parser.add_argument("--jobs", type=jobs_argument, default=None, metavar="N",
                        help="reruns at the same time, confirming (diff --confirm) and searching (default: auto, the "
                             "cores this process may use, fewer if memory would not hold the rerun processes)")
    parser.add_argument("--attempts", type=positive, default=DEFAULT_ATTEMPTS, metavar="N",
                        help="reruns to catch a crash in CinderX's compile thread again when it does not happen every "
                             f"time (default {DEFAULT_ATTEMPTS})")


def rerun_jobs(jobs: int | None) -> int:
    """`--jobs N`, or for `auto` (None) the cores this process may use, fewer when memory would not hold
    that many test processes (harness/run/capacity.py, at its default size of a test process)."""
    from harness.run import capacity

    if jobs is not None:
        return jobs
    return capacity.choose(capacity.limits(), capacity.DEFAULT_PROCESS_MB, "the default").jobs


def _culprit(args: argparse.Namespace) -> int:
    from harness.compare.culprit import targets
    from harness.compare.culprit.probes import Budget
    from harness.compare.sides import load_side
    from harness.record.store import RUN_RECORD

    source: Path = args.source
    if source.is_file():
        found = [target for _, side_targets in targets.from_report(source, args.test) for target in side_targets]
    elif (source / RUN_RECORD).is_file():
        found = targets.from_run(load_side(source), args.test)
    else:
        raise HarnessError(f"{source}: neither a run directory ({RUN_RECORD}) nor a report.json")
    targets.check_named(args.test, found)
    if not found:
        print(f"{source}: no confirmed regression, crash or timeout of a JIT configuration to search "
              "(--test names one)")
        return ExitStatus.OK
    budget = Budget(args.probes, rerun_jobs(args.jobs), args.timeout, args.restart, args.attempts)
    for culprit_line in search(found, budget, _announce):
        print(culprit_line)
    return ExitStatus.OK


def search_comparisons(comparisons: Sequence[Comparison], candidates: Sequence[Side], args: argparse.Namespace) -> None:
    """`diff --culprit`: search every comparison's targets; the culprits land in the run directories."""
    from harness.compare.culprit import targets
    from harness.compare.culprit.probes import Budget

    found = [target for comparison, side in zip(comparisons, candidates) if comparison.valid
             for target in targets.from_regressions(comparison.regressions, side, ())]
    budget = Budget(args.probes, rerun_jobs(args.jobs), args.confirm_timeout, args.confirm_restart, args.attempts)
    for line in search(found, budget, _announce):
        _announce(line)


def search(found: Sequence[Target], budget: Budget, announce) -> list[str]:
    """Blame each target, writing each culprit into its run directory as soon as it is known. A
    culprit found for one regression of a polluter group (same run, same polluters) is checked first
    for the others of the group, which are searched only when it does not explain them."""
    from harness.compare.culprit.blame import blame, reuse
    from harness.record.culprits import CulpritStatus, write_culprit

    lines = []
    groups: dict[tuple[Path, tuple[str, ...]], tuple[str, Culprit]] = {}  # (run, polluters) -> a culprit found
    for number, target in enumerate(found, 1):
        announce(f"culprit {number}/{len(found)}: {target.test} ({target.outcome})")
        group = (target.run, target.polluters)
        known = groups.get(group) if target.polluters else None
        culprit = reuse(target, known[1], known[0], budget, announce) if known else None
        if culprit is None:
            culprit = blame(target, budget, announce)
            if target.polluters and culprit.status is CulpritStatus.FOUND and group not in groups:
                groups[group] = (target.test, culprit)
        write_culprit(target.run, target.test, culprit)
        lines.append(summary(target.test, culprit))
    return lines


def summary(test: str, culprit: Culprit) -> str:
    """A few lines per test, for the terminal."""
    lines = [f"{test}: {culprit.status}"]
    lines += [f"  culprit: {f.where}" + (f" (inlined into it: {', '.join(f.inlined)})" if f.inlined else "")
              for f in culprit.functions]
    if culprit.passes:
        lines.append(f"  HIR passes that matter: {', '.join(culprit.passes)}")
    if culprit.note:
        lines.append(f"  {culprit.note}")
    lines.append(f"  {culprit.candidates} candidates, {culprit.probes} probes, {culprit.reruns} reruns, "
                 f"{culprit.seconds:.0f} s")
    if culprit.reproducer:
        lines.append(f"  reproducer: {culprit.reproducer}")
    return "\n".join(lines)


def recorded_culprits(comparisons: Sequence[Comparison], candidates: Sequence[Side]) -> dict[tuple[str, str], Culprit]:
    """The culprits earlier searches wrote into the candidates' run directories, keyed for the report
    by (candidate label, test)."""
    from harness.record.culprits import read_culprits

    return {(comparison.candidate, test): culprit for comparison, side in zip(comparisons, candidates)
            for path, _ in side.parts for test, culprit in read_culprits(path).items()}


def _announce(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
