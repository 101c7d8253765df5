"""Argument types shared by every command's parser: the one place a path or a count option is read.

Every option with a syntax is checked by argparse itself (`type=`), so a bad value is named in one
line (exit 3) before any file is read or written: `--shard 3/2` is refused before the tests
directory is searched. An empty path (`--results ""`, an unset shell variable) means the current
directory to `Path`; writing a run or a report there by accident is never what was meant, so it is
refused too.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.compare.replay import RERUN_TIMEOUT
from harness.protocol import Setting, threshold_problem
from harness.record.model import shard_problem

RESULTS_HELP = f"results root (default: ${Setting.RESULTS} or ./results)"


def path_argument(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path (write '.' for the current directory)")
    return Path(text)


def interpreter_argument(text: str) -> str:
    """`--python`: a path with a folder in it made absolute, since the test processes start in other
    folders (a relative one was not found there); a bare name is looked up on PATH, as a shell would."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty interpreter path")
    return str(Path(text).absolute()) if "/" in text else text


@dataclass(frozen=True)
class Comparison:
    """What differs between the test pipeline's comparison commands and perf's: the words."""

    what: str  # "run" or "perf run"
    side: str  # what one side may be
    description: str


def add_comparison_commands(commands: argparse._SubParsersAction, comparison: Comparison, formats: tuple[str, ...],
                            stem: str, aliases: tuple[str, ...] = ()) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """`diff BASELINE CANDIDATE...` and `diff-latest [--results]`: the same verbs, arguments and
    output options for test runs and perf runs (perf's older `compare`, `compare-latest` as aliases)."""
    pair = commands.add_parser("diff", aliases=aliases[:1], help=f"compare a baseline {comparison.what} with one or "
                               "more candidates", description=comparison.description)
    pair.add_argument("baseline", type=path_argument, help=comparison.side)
    pair.add_argument("candidates", type=path_argument, nargs="+", metavar="candidate", help=comparison.side)
    latest = commands.add_parser("diff-latest", aliases=aliases[1:], help=f"compare the latest baseline "
                                 f"{comparison.what} with the latest {comparison.what} of every other configuration "
                                 "(and threshold)")
    latest.add_argument("--results", type=path_argument, help=RESULTS_HELP)
    for parser in (pair, latest):
        add_output_options(parser, formats, stem)
    return pair, latest


def add_output_options(parser: argparse.ArgumentParser, formats: tuple[str, ...], stem: str) -> None:
    """`--format` and `--out`, as every command that writes reports (`diff`, `perf diff`) reads them."""
    parser.add_argument("--format", nargs="+", action="extend", choices=formats, dest="formats",
                        help="report formats (default: md)")
    parser.add_argument("--out", type=path_argument, help=f"write {stem}.<format> files into this directory")


def add_rerun_options(parser: argparse.ArgumentParser, timeout: str, restart: str) -> None:
    """How reruns start and how long one may take, as `diff --confirm` and `culprit` read them."""
    parser.add_argument(timeout, type=positive, default=RERUN_TIMEOUT, metavar="SECONDS",
                        help=f"time limit of one rerun (default: {RERUN_TIMEOUT})")
    parser.add_argument(restart, choices=("warm", "fresh"), default="warm",
                        help="warm (default): each rerun in a fork of a process that has collected the file, where "
                             "that is safe (CinderX's settings can still be applied there); fresh: a new process each time")


def positive(text: str) -> int:
    return at_least(1)(text)


def jobs_argument(text: str) -> int | None:
    """`--jobs N`, or `--jobs auto` (None: the run chooses N from its cores and memory, run/capacity.py)."""
    return None if text == "auto" else positive(text)


def at_least(minimum: int) -> Callable[[str], int]:
    """A whole number of at least `minimum` (a count: jobs, reruns, processes)."""
    def whole(text: str) -> int:
        value = _whole(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number of at least {minimum}, not {text!r}"
                                             if minimum > 1 else f"expected a positive whole number, not {text!r}")
        return value
    return whole


def threshold_argument(text: str) -> int:
    """`--threshold N`, by the range rule a configuration file's threshold obeys."""
    value = _whole(text)
    _refuse(threshold_problem(value))
    return value


def shard_argument(text: str) -> str:
    """`--shard I/N`, by the rule a run record's shard obeys."""
    _refuse(shard_problem(text))
    return text


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None


def _refuse(problem: str | None) -> None:
    if problem:
        raise argparse.ArgumentTypeError(problem)
