"""Read the plugin's event stream of one test file, incrementally and across processes.

The stream is the single source of truth for a file: every process that ran it appends to it,
and the runner appends a `result` for each test that a dead process was running. Re-reading it
therefore tells what finished, what must be left out of the next process, and the final results.

The stream is written by test processes, which are not trusted: a line that is not an event of
the protocol (not JSON, not an object, an unknown kind, a field of the wrong type) is kept as a
stream error with its text, and every well-formed event is still used. An event glued to the end
of junk (a stray write without a newline, then the plugin's next line) is recovered, and before
the runner starts the next process or writes its own event, it ends any half-written line, so
nobody's next line is glued to it.

A session is one process running tests: a test process (`session_start`) or a worker forked
from one (`worker_start`, warm restarts); a test process that forks workers runs none itself.
The workers of a split file run at once, their events interleaved: each names its piece.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.protocol import PIECE, SESSION_STARTS, WARM, Event, JitMode, Outcome, collection_error
from harness.record.model import Descendants, TestResult, junit_names


MAX_LINE_BYTES = 4 << 20  # no event is longer (failure text is capped at 20,000 characters); junk can be
MAX_ERRORS_KEPT = 20  # stream errors kept with their text; all are counted
_EVENT_START = '{"event"'  # how every event line begins (json.dumps of a dict whose first key is "event")


@dataclass
class EventStream:
    """An append-only JSON-lines file, read as it grows; what is not an event becomes an error."""

    path: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "line N: text" of the first MAX_ERRORS_KEPT bad lines
    error_count: int = 0
    _offset: int = 0
    _lines: int = 0

    def read_new(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        with open(self.path, "rb") as handle:
            waiting = os.fstat(handle.fileno()).st_size - self._offset
            if waiting <= 0:
                return []
            handle.seek(self._offset)
            # Only what is there: a read asks for a buffer of its size, and under qemu-user 7.2 each
            # 256 MiB request leaked about 1.4 MB, 5 times a second, until the OOM killer ended the run.
            chunk = handle.read(min(waiting, 64 * MAX_LINE_BYTES))
        end = chunk.rfind(b"\n") + 1
        if end == 0 and len(chunk) > MAX_LINE_BYTES:  # a line no event can be: junk, taken as it is
            end = len(chunk)
        self._offset += end
        fresh = []
        for line in chunk[:end].decode("utf-8", errors="replace").splitlines():
            self._lines += 1
            event, junk = parse_line(line)
            if junk:
                self._error(junk)
            if event is not None:
                fresh.append(event)
        self.events.extend(fresh)
        return fresh

    def _error(self, text: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(f"line {self._lines}: {text[:200]!r}")

    def seal(self) -> None:
        """End a half-written last line (a process died or wrote junk mid-line), so the next line
        written, the runner's or a new process's, is a line of its own."""
        with open(self.path, "ab+") as handle:
            if handle.seek(0, 2) > 0:
                handle.seek(-1, 2)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")

    def append(self, event: dict[str, Any]) -> None:
        """Add an event of the runner's own (a culprit's result) to the file and to what was read."""
        self.seal()
        self.read_new()
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")
        self.read_new()

    def sessions(self) -> int:
        return sum(1 for event in self.events if event["event"] in SESSION_STARTS)

    def last_session(self, piece: int | None = None) -> list[dict[str, Any]]:
        """The events of the last process that ran tests; of a split file's `piece`: of its last worker."""
        events = self.events if piece is None else [event for event in self.events if event.get(PIECE) == piece]
        starts = [i for i, event in enumerate(events) if event["event"] in SESSION_STARTS]
        return events[starts[-1]:] if starts else []

    def running(self, piece: int | None = None) -> str | None:
        """The test the last process (of `piece`) started and did not finish."""
        current = None
        for event in self.last_session(piece):
            if event["event"] == Event.START:
                current = event["nodeid"]
            elif event["event"] == Event.RESULT and event["nodeid"] == current:
                current = None
        return current

    def last_session_finished(self, piece: int | None = None) -> bool:
        return any(event["event"] == Event.SESSION_FINISH for event in self.last_session(piece))

    def last_session_results(self, piece: int | None = None) -> int:
        return sum(1 for event in self.last_session(piece) if event["event"] == Event.RESULT)

    def pieces_since(self, mark: int) -> list[int]:
        """The pieces whose workers started after the first `mark` events: a split process's."""
        return list(dict.fromkeys(event[PIECE] for event in self.events[mark:]
                                  if event["event"] == Event.WORKER_START and PIECE in event))

    def finished(self) -> set[str]:
        return {event["nodeid"] for event in self.events if event["event"] == Event.RESULT}


def parse_line(line: str) -> tuple[dict[str, Any] | None, str]:
    """(the event on this line or None, the junk on it or ""): an event written after junk with no
    newline between them is recovered from the end of the line."""
    if not line.strip():
        return None, ""
    event = parse_event(line)
    if event is not None:
        return event, ""
    start = line.rfind(_EVENT_START)  # inside an event, quotes are escaped: this only starts one
    if start > 0:
        event = parse_event(line[start:])
        if event is not None:
            return event, line[:start]
    return None, line


# Checked fields of each kind of event, with the types the runner relies on. A kind of the
# protocol not listed here passes as it is; a kind outside the protocol is an error.
_NUMBER = (int, float)
_TEXT_OR_NONE = (str, type(None))
_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    Event.SESSION_START: {"pid": int, "contamination": _TEXT_OR_NONE},
    Event.WORKER_START: {"pid": int},
    Event.WORKER_EXIT: {"pid": int, "status": int},
    Event.COLLECTED: {"count": int},
    Event.RESTART: {"mode": str},
    Event.JIT_APPLIED: {"state": dict, "error": _TEXT_OR_NONE},
    Event.JIT_COUNT: {"compiled": int},
    Event.COLLECT_ERROR: {"nodeid": str, "message": str, "text": _TEXT_OR_NONE},
    Event.START: {"nodeid": str},
    Event.RESULT: {"nodeid": str, "outcome": str, "duration": _NUMBER, "message": str, "text": str, "attempts": list},
    Event.SESSION_FINISH: {"jit": dict},
    Event.INTERNAL_ERROR: {"message": str, "text": str},
    Event.CHILD_START: {"pid": int, "method": str},
    Event.CHILD_EXIT: {"pid": int, "status": int},
}
_KINDS = frozenset(Event)
_OUTCOMES = frozenset(Outcome)


def parse_event(text: str) -> dict[str, Any] | None:
    """One line as an event of the protocol, or None."""
    try:
        event = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(event, dict) or event.get("event") not in _KINDS:
        return None
    if PIECE in event and (not isinstance(event[PIECE], int) or isinstance(event[PIECE], bool) or event[PIECE] < 0):
        return None
    for name, kind in _FIELDS.get(event["event"], {}).items():
        value = event.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            return None
    if event["event"] == Event.RESULT and (event["outcome"] not in _OUTCOMES
                                          or not all(isinstance(a, str) for a in event["attempts"])):
        return None
    for state in (event.get("state"), event.get("jit")):
        compiled = state.get("compiled", 0) if isinstance(state, dict) else 0
        if not isinstance(compiled, int) or isinstance(compiled, bool):
            return None
    return event


@dataclass(frozen=True)
class FileSummary:
    """What a file's whole stream says, over every process that ran it."""

    results: tuple[TestResult, ...]
    processes: int  # that ran tests (a warm host only forks the workers that do)
    jit: dict[str, Any] | None
    jit_error: str | None
    contamination: str | None
    restart: str | None  # how the last test process would resume after a crash: "warm" or "fresh: <why>"
    internal_error: str | None = None  # pytest broke (INTERNALERROR), and how many tests never ran
    jit_processes: tuple[dict[str, Any], ...] = ()  # per process that switched the JIT: `applied`, `finished` states
    cpu_share: float | None = None  # CPU over wall seconds of the tests, in the processes that finished
    peak_mb: float | None = None  # the largest peak RSS a finished test process reported
    pieces: int = 1  # the most workers a process of the file forked at once (a split file's pieces)


def summarize(module: str, file: str, events: list[dict[str, Any]]) -> FileSummary:
    results: dict[str, TestResult] = {}
    sessions: list[dict[str, Any]] = []  # per session: its last known JIT state
    readbacks: list[dict[str, Any]] = []  # per session: the JIT state at its switch and at its end
    hosts = 0
    jit_error = contamination = restart = internal_error = None
    running: dict[int | None, str] = {}  # per piece (None: unsplit), the test started and not finished
    current: dict[int | None, int] = {}  # per piece, the index of its worker's session
    pieces = 1
    order: dict[str, int] = {}  # a split file's tests in collection order (its pieces' results arrive interleaved)
    collected = 0
    busy = [0.0, 0.0]  # CPU and wall seconds of the tests of the sessions that finished
    peaks: list[float] = []
    for event in events:
        kind = event["event"]
        piece = event.get(PIECE)
        session = current.get(piece)
        if kind in SESSION_STARTS:
            current[piece] = len(sessions)
            sessions.append({})
            readbacks.append({})
            contamination = contamination or event.get("contamination")
        elif kind == Event.RESTART:
            restart = event["mode"]
            hosts += restart == WARM
            pieces = max(pieces, event.get("pieces", 1) if isinstance(event.get("pieces"), int) else 1)
        elif kind == Event.START:
            running[piece] = event["nodeid"]
        elif kind == Event.COLLECTED:
            collected = max(collected, event["count"])
            listed = event.get("nodeids")
            if isinstance(listed, list):
                order.update((nodeid, len(order)) for nodeid in listed if isinstance(nodeid, str) and nodeid not in order)
        elif kind == Event.RESULT:
            results[event["nodeid"]] = result_from_event(module, event)
            running.pop(piece, None)
        elif kind == Event.INTERNAL_ERROR:
            internal_error = f"pytest INTERNALERROR: {event['message']}"
            broken = running.get(piece)
            if broken is not None:  # the test pytest broke in has no outcome of its own
                results[broken] = result_from_event(module, {**event, "nodeid": broken, "outcome": Outcome.ERROR,
                                                              "message": f"{internal_error} (while this test ran)"})
            lost = f"{file}::<pytest internal error>"
            unrun = max(0, collected - len(results))
            results[lost] = result_from_event(module, {**event, "nodeid": lost, "outcome": Outcome.ERROR,
                                                       "message": f"{internal_error}; {unrun} collected tests never ran"})
            internal_error = f"{internal_error}; {unrun} collected tests never ran"
        elif kind == Event.COLLECT_ERROR:
            nodeid = event["nodeid"] or file
            results[nodeid] = result_from_event(module, {**event, "nodeid": nodeid, "outcome": Outcome.ERROR, "duration": 0.0,
                                                   "message": collection_error(event['message'])})
        elif kind == Event.JIT_APPLIED:
            jit_error = jit_error or event.get("error")
            if session is not None:
                sessions[session].update(event["state"])
                readbacks[session]["applied"] = {**event["state"], "collected": event.get("collected"),
                                            "compiled_before": event.get("compiled_before")}
        elif kind == Event.JIT_COUNT and session is not None:
            sessions[session]["compiled"] = event["compiled"]
        elif kind == Event.SESSION_FINISH and session is not None:
            sessions[session].update(event["jit"])
            readbacks[session]["finished"] = event["jit"]
            busy = [total + seconds for total, seconds in zip(busy, _test_seconds(event))]
            peak = event.get("peak_mb")
            if isinstance(peak, _NUMBER) and not isinstance(peak, bool) and peak > 0:
                peaks.append(float(peak))
    listed = sorted(results.values(), key=lambda result: order.get(result.nodeid, len(order))) if order \
        else results.values()
    return FileSummary(tuple(listed), len(sessions) - hosts, _jit_over(sessions), jit_error, contamination,
                       restart, internal_error, tuple(r for r in readbacks if "applied" in r),
                       round(busy[0] / busy[1], 4) if busy[1] > 0 else None, max(peaks, default=None), pieces)


def _test_seconds(finish: dict[str, Any]) -> tuple[float, float]:
    """The CPU and wall seconds a finished session's tests took (none from an older plugin, or a
    value that is not a pair of non-negative numbers)."""
    tests = finish.get("tests")
    if not isinstance(tests, dict):
        return 0.0, 0.0
    cpu, wall = tests.get("cpu"), tests.get("wall")
    numbers = all(isinstance(value, _NUMBER) and not isinstance(value, bool) and value >= 0 for value in (cpu, wall))
    return (float(cpu), float(wall)) if numbers else (0.0, 0.0)


def summarize_descendants(events: list[dict[str, Any]], reports: Path) -> Descendants | None:
    """The processes the file's tests started, joined with what each reported at its end
    (harness/run/descendant.py); None when the tests started none."""
    states = [report for report in map(_read_report, sorted(reports.glob("*.json"))) if report is not None]
    exits = {event["pid"]: event["status"] for event in events if event["event"] == Event.CHILD_EXIT}
    started = [event["pid"] for event in events if event["event"] == Event.CHILD_START]
    if not states and not started:
        return None
    reported = {report.get("pid") for report in states}
    silent = [pid for pid in started if pid not in reported]
    unreported = tuple(f"{pid}: exit status {exits.get(pid, 'unknown: still running at the end')}"
                       for pid in silent if exits.get(pid, 0) >= 0)
    without = tuple(f"{report.get('pid')} {' '.join(map(str, report.get('argv', [])))}: {_state_text(report)}"
                    for report in states if not _as_requested(report))
    compiled = sum(max(0, report["jit"].get("compiled", 0) - report.get("inherited", 0)) for report in states)
    return Descendants(started=len(started), reported=len(states), as_requested=len(states) - len(without),
                       compiled=compiled, without_jit=without, unreported=unreported,
                       killed=sum(1 for pid in silent if exits.get(pid, 0) < 0))


def _read_report(path: Path) -> dict[str, Any] | None:
    """A descendant's report; one that cannot be read (a process killed while writing) is left out."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(report, dict) and isinstance(report.get("jit"), dict)):
        return None
    numbers = (report.get("pid"), report.get("inherited", 0), report["jit"].get("compiled", 0))
    return report if all(isinstance(n, int) and not isinstance(n, bool) for n in numbers) else None


def _as_requested(report: dict[str, Any]) -> bool:
    state = report["jit"]
    if report.get("error") or state.get("error"):
        return False
    if report.get("request") == JitMode.ON:
        return bool(state.get("enabled"))
    return bool(state.get("loaded")) and not state.get("enabled")  # off: CinderX loaded, its JIT disabled


def _state_text(report: dict[str, Any]) -> str:
    state = report["jit"]
    problem = report.get("error") or state.get("error")
    return problem or ("JIT enabled" if state.get("enabled") else "JIT not enabled" if state.get("loaded")
                       else "CinderX not loaded")


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

