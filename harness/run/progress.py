"""Live progress of a run: a rich display on a terminal, plain lines otherwise (CI logs, pipes)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.record.model import FileRecord

if TYPE_CHECKING:
    from rich.progress import Progress

from harness.protocol import Event, Outcome

FAILURES = frozenset({Outcome.FAILED, Outcome.ERROR})
CRASHES = frozenset({Outcome.CRASHED, Outcome.TIMEOUT})


class RunProgress:
    """Counts tests, failures and crashes as events arrive; shows files done and the time left."""

    def __init__(self, total_files: int, announce: Callable[[str], None] | None = None) -> None:
        self.total = total_files
        self.done = 0
        self.tests = self.failures = self.crashes = 0
        self._lock = threading.Lock()
        self._live: Progress | None = None
        if announce is None and sys.stdout.isatty():
            # Imported only for a terminal: a run in a pipe or CI log starts its tests sooner.
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            self._live = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("files · {task.fields[tally]}"), TimeElapsedColumn(),
                                  TimeRemainingColumn(), console=Console())
            self._task = self._live.add_task("running", total=total_files, tally="")
        self.announce: Callable[[str], None] = announce or (self._live.console.print if self._live else print)

    def __enter__(self) -> RunProgress:
        if self._live:
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live:
            self._live.stop()

    def event(self, file: str, event: dict[str, Any]) -> None:
        if event["event"] != Event.RESULT:
            return
        with self._lock:
            self.tests += 1
            self.failures += event["outcome"] in FAILURES
            self.crashes += event["outcome"] in CRASHES
            self._refresh(file)

    def file_done(self, record: FileRecord) -> None:
        with self._lock:
            self.done += 1
            self._refresh(record.file, advance=1)
        self.announce(_file_line(self.done, self.total, record))

    def _refresh(self, file: str, advance: int = 0) -> None:
        if self._live:
            tally = f"{self.tests} tests, {self.failures} failures, {self.crashes} crashes/timeouts"
            self._live.update(self._task, advance=advance, tally=tally, description=file)


def _file_line(index: int, total: int, record: FileRecord) -> str:
    counts = ", ".join(f"{n} {outcome}" for outcome, n in record.counts.items()) or "no tests"
    jit = f", {record.compiled} JIT-compiled" if record.jit and record.jit.get("loaded") else ""
    restarts = f", {record.processes} processes" if record.processes > 1 else ""
    split = f", {record.split}" if record.split else ""
    culprit = f"\n    !! {record.culprit}" if record.culprit else ""
    return f"[{index}/{total}] {record.file}: {counts} ({record.duration:.1f} s{jit}{restarts}{split}){culprit}"
