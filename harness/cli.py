"""`python -m harness`: each stage adds its own subcommands; arguments by argparse.

A stage's command module imports only what its arguments need; its handlers import the rest when
they run, so each command starts without the others' modules (`run` without rich's Markdown, say).

Exit statuses follow PRODUCT.md: 0 no regression, 1 regressions, 2 the comparison is not valid,
3 bad usage or unreadable input (always a one-line message naming the file, line or option).
"""

from __future__ import annotations

import argparse
import sys

from harness.compare import command as compare_command
from harness.compare.culprit import command as culprit_command
from harness.errors import HarnessError
from harness.exits import ExitStatus
from harness.perf import command as perf_command
from harness.run import command as run_command
from harness.scan import command as scan_command


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # bad usage is exit status 3, as for every other bad input
        self.print_usage(sys.stderr)
        print(f"harness: error: {message}", file=sys.stderr)
        raise SystemExit(ExitStatus.USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness",
                     description="Differential test harness for PyTorch under Python runtimes and JITs.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run_command.add_commands(commands)
    compare_command.add_commands(commands)
    culprit_command.add_commands(commands)
    scan_command.add_commands(commands)
    perf_command.add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except HarnessError as error:
        print(f"harness: error: {error}", file=sys.stderr)
        return ExitStatus.USAGE
    except KeyboardInterrupt:
        return ExitStatus.INTERRUPTED
