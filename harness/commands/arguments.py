"""Argument types shared by every command's parser: the one place a path or a count option is read.

An empty path (`--results ""`, an unset shell variable) means the current directory to `Path`;
writing a run or a report there by accident is never what was meant, so it is refused (exit 3).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.compare.replay import RERUN_TIMEOUT
from harness.protocol import Setting

RESULTS_HELP = f"results root (default: ${Setting.RESULTS} or ./results)"


def path_argument(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path (write '.' for the current directory)")
    return Path(text)


def add_output_options(parser: argparse.ArgumentParser, formats: tuple[str, ...], stem: str) -> None:
    """`--format` and `--out`, as every command that writes reports (`diff`, `perf compare`) reads them."""
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
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, not {text!r}")
    return value
