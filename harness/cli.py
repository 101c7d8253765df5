"""`python -m harness`: the subcommands of harness/commands/ under one parser (argparse), and one
policy for what reaches the user when a command fails.

A command module imports only what its arguments need; its handlers import the rest when they run,
so each command starts without the others' modules (`run` without rich's Markdown, say).

Exit statuses (harness/exits.py; docs/background.md): 0 no regression, 1 regressions, 2 the comparison is not valid,
3 bad usage or unreadable input (always a one-line message naming the file, line or option), 4 an
internal error. No traceback reaches the user: an exception the harness did not expect is written,
with its traceback, to a log file, and the one line printed points at it (exit 4, never a verdict).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import harness
from harness.commands import COMMANDS
from harness.errors import MACHINE_ERRNOS, HarnessError, cause
from harness.exits import ExitStatus


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # bad usage is exit status 3 and one line, as every other bad input
        print(f"harness: error: {self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(ExitStatus.USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness",
                     description="Differential test harness for PyTorch under Python runtimes and JITs.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with _sigterm_as_interrupt():
            return args.handler(args)
    except HarnessError as error:
        return _fail(str(error))
    except KeyboardInterrupt:
        return ExitStatus.INTERRUPTED
    except BrokenPipeError:  # `harness diff ... | head`: the reader left; what it read stands
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - so the interpreter's final flush cannot fail
        return _fail("standard output was closed before everything was written")
    except OSError as error:
        if error.errno in MACHINE_ERRNOS and error.filename:  # the machine's, or a path given: not the harness's
            return _fail(f"{error.filename}: {cause(error)}")
        return _internal_error(error)
    except Exception as error:  # noqa: BLE001 - the last resort: exit 4 with the traceback in a log
        return _internal_error(error)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI cancel, `kill`) takes Ctrl-C's path in every command: a run records what finished,
    and the processes a command started (test files, rerun hosts) are stopped, not left behind."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _fail(message: str) -> int:
    print(f"harness: error: {' '.join(message.split())}", file=sys.stderr)
    return ExitStatus.USAGE


def _internal_error(error: BaseException) -> int:
    """One line pointing at a log that holds the command and the traceback; exit 4."""
    text = (f"command: {' '.join(sys.argv)}\nharness {harness.__version__}, Python {sys.version.split()[0]}\n\n"
            + "".join(traceback.format_exception(error)))
    where = _write_log(text)
    summary = " ".join(f"{type(error).__name__}: {error}".split())[:300]
    pointer = f"the traceback is in {where}" if where else f"traceback follows\n{text}"
    print(f"harness: internal error (a bug in the harness, not in your input): {summary}; {pointer}", file=sys.stderr)
    return ExitStatus.INTERNAL


def _write_log(text: str) -> Path | None:
    """The log of an internal error: in the harness cache, else the temporary folder."""
    from harness.configure.provision import cache_root

    name = f"internal-error-{datetime.now():%Y%m%dT%H%M%S}-{os.getpid()}.log"
    for folder in (cache_root() / "errors", Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
            return folder / name
        except OSError:
            continue
    return None
