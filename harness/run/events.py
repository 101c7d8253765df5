"""Read the plugin's event stream of one test file, incrementally and across processes.

The stream is the single source of truth for a file: every process that ran it appends to it,
and the runner appends a `result` for each test that a dead process was running. Re-reading it
therefore tells what finished, what must be left out of the next process, and the final results.

A session is one process running tests: a test process (`session_start`) or a worker forked
from one (`worker_start`, warm restarts); a test process that forks workers runs none itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.protocol import SESSION_STARTS, Event, Outcome
from harness.record.model import TestResult, junit_names


@dataclass
class EventStream:
    """An append-only JSON-lines file, read as it grows; a line cut short by a crash is skipped."""

    path: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    _offset: int = 0

    def read_new(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        fresh = []
        for line in complete.decode("utf-8", errors="replace").splitlines():
            try:
                fresh.append(json.loads(line))
            except ValueError:
                continue
        self.events.extend(fresh)
        return fresh

    def append(self, event: dict[str, Any]) -> None:
        """Add an event of the runner's own (a culprit's result) to the file and to what was read."""
        self.read_new()
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")
        self.read_new()

    def sessions(self) -> int:
        return sum(1 for event in self.events if event["event"] in SESSION_STARTS)

    def last_session(self) -> list[dict[str, Any]]:
        starts = [i for i, event in enumerate(self.events) if event["event"] in SESSION_STARTS]
        return self.events[starts[-1]:] if starts else []

    def running(self) -> str | None:
        """The test the last process started and did not finish."""
        current = None
        for event in self.last_session():
            if event["event"] == Event.START:
                current = event["nodeid"]
            elif event["event"] == Event.RESULT and event["nodeid"] == current:
                current = None
        return current

    def last_session_finished(self) -> bool:
        return any(event["event"] == Event.SESSION_FINISH for event in self.last_session())

    def last_session_results(self) -> int:
        return sum(1 for event in self.last_session() if event["event"] == Event.RESULT)

    def finished(self) -> set[str]:
        return {event["nodeid"] for event in self.events if event["event"] == Event.RESULT}


@dataclass(frozen=True)
class FileSummary:
    """What a file's whole stream says, over every process that ran it."""

    results: tuple[TestResult, ...]
    processes: int  # that ran tests (a warm host only forks the workers that do)
    jit: dict[str, Any] | None
    jit_error: str | None
    contamination: str | None
    restart: str | None  # how the last test process would resume after a crash: "warm" or "fresh: <why>"
    jit_processes: tuple[dict[str, Any], ...] = ()  # per process that switched the JIT: `applied`, `finished` states


def summarize(module: str, file: str, events: list[dict[str, Any]]) -> FileSummary:
    results: dict[str, TestResult] = {}
    sessions: list[dict[str, Any]] = []  # per session: its last known JIT state
    readbacks: list[dict[str, Any]] = []  # per session: the JIT state at its switch and at its end
    hosts = 0
    jit_error = contamination = restart = None
    for event in events:
        kind = event["event"]
        if kind in SESSION_STARTS:
            sessions.append({})
            readbacks.append({})
            contamination = contamination or event.get("contamination")
        elif kind == Event.RESTART:
            restart = event["mode"]
            hosts += restart == "warm"
        elif kind == Event.RESULT:
            results[event["nodeid"]] = result_from_event(module, event)
        elif kind == Event.COLLECT_ERROR:
            nodeid = event["nodeid"] or file
            results[nodeid] = result_from_event(module, {**event, "nodeid": nodeid, "outcome": Outcome.ERROR, "duration": 0.0,
                                                   "message": f"collection error: {event['message']}"})
        elif kind == Event.JIT_APPLIED:
            jit_error = jit_error or event.get("error")
            if sessions:
                sessions[-1].update(event["state"])
                readbacks[-1]["applied"] = {**event["state"], "collected": event.get("collected"),
                                            "compiled_before": event.get("compiled_before")}
        elif kind == Event.JIT_COUNT and sessions:
            sessions[-1]["compiled"] = event["compiled"]
        elif kind == Event.SESSION_FINISH and sessions:
            sessions[-1].update(event["jit"])
            readbacks[-1]["finished"] = event["jit"]
    return FileSummary(tuple(results.values()), len(sessions) - hosts, _jit_over(sessions), jit_error, contamination,
                       restart, tuple(r for r in readbacks if "applied" in r))


def _jit_over(sessions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One JIT record for the file: the last process's settings, compiled counts summed over processes."""
    known = [s for s in sessions if s]
    if not known:
        return None
    return {**known[-1], "compiled": sum(s.get("compiled", 0) for s in known)}


def result_from_event(module: str, event: dict[str, Any]) -> TestResult:
    classname, name = junit_names(event["nodeid"])
    return TestResult(classname=classname, name=name, outcome=event["outcome"], module=module,
                      duration=event.get("duration", 0.0), message=event.get("message", ""),
                      text=event.get("text", ""), nodeid=event["nodeid"], attempts=tuple(event.get("attempts", ())))

