"""Run one test file to the end, whatever its tests do to the process running them.

A file runs in a fresh process with the harness plugin. While it runs, its event stream is
watched: a test past the per-test limit, or a file past the per-file limit, gets SIGABRT
(faulthandler dumps every stack), then SIGKILL. When a process dies with a test running, that
test is recorded as crashed (or timeout) with the tail of the faulthandler output, and the file
resumes after it in a fresh process that leaves out everything already finished.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.configure.configurations import Configuration
from harness.configure.tiers import Tier
from harness.record import junit
from harness.record.model import FileRecord, TestResult
from harness.record.store import RunDirectory
from harness.run.events import EventStream, summarize

POLL_SECONDS = 0.2
KILL_GRACE_SECONDS = 10  # after SIGABRT, for faulthandler to write every thread's stack
LOG_TAIL_LINES = 40  # kept of a dead process's output when faulthandler printed nothing
MAX_DUMP_LINES = 400  # a faulthandler dump of every thread's stack; the full log stays on disk

EventSink = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class FileContext:
    """What every file of one run shares."""

    python: str
    tests_dir: Path
    tier: Tier
    configuration: Configuration
    run: RunDirectory
    env: dict[str, str]


@dataclass(frozen=True)
class FileOutcome:
    record: FileRecord
    results: tuple[TestResult, ...]


class Interrupted(Exception):
    """The run is being stopped: a killed test process is not a crash of its test."""


class LiveProcesses:
    """Test processes running now, so an interrupt can stop them all (they run in their own sessions)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen[bytes]] = set()
        self.stopping = False

    def add(self, process: subprocess.Popen[bytes]) -> None:
        with self._lock:
            if self.stopping:
                _signal_group(process, signal.SIGKILL)
            self._processes.add(process)

    def discard(self, process: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._processes.discard(process)

    def stop(self) -> None:
        """Kill every test process now and start none after: an interrupt, not a crash."""
        with self._lock:
            self.stopping = True
            for process in self._processes:
                _signal_group(process, signal.SIGKILL)


LIVE = LiveProcesses()


def module_key(file: str) -> str:
    return file.removesuffix(".py").replace("/", ".")


def run_file(context: FileContext, file: str, targets: list[str], on_event: EventSink) -> FileOutcome:
    """Run `targets` of `file` until every test has an outcome; write the file's JUnit XML."""
    module = module_key(file)
    stream = EventStream(context.run.events(module))
    stream.read_new()  # a resumed run continues the stream an interrupted one left
    deselect = context.run.events(module).with_suffix(".done")
    env = {**context.env, "HARNESS_EVENTS": str(stream.path.resolve()), "HARNESS_DESELECT": str(deselect.resolve())}
    command = _command(context, file, targets)
    began = time.monotonic()
    file_deadline = began + context.tier.timeout
    culprits: list[str] = []
    signals: list[str] = []
    returncode = 0
    while True:
        deselect.write_text("".join(f"{nodeid}\n" for nodeid in sorted(stream.finished())))
        sessions_before = stream.sessions()
        returncode, ending = _run_process(command, context, env, module, stream, file_deadline,
                                          lambda event: on_event(file, event))
        if LIVE.stopping:
            raise Interrupted(file)
        started = stream.sessions() > sessions_before
        if started and stream.last_session_finished():
            break
        signal_name = _signal_name(returncode)
        if signal_name:
            signals.append(signal_name)
        progressed = started and stream.last_session_results() > 0
        running = stream.running() if started else None
        cause = {"test_timeout": f"test exceeded the tier's per-test limit ({context.tier.test_timeout} s)",
                 "file_timeout": f"file exceeded the tier's limit ({context.tier.timeout} s)"}.get(
            ending, f"process died with {signal_name or f'exit status {returncode}'}")
        culprit = running or f"{file}::<process>"
        # A file that fails before pytest starts (an import error at the top of a script) is an
        # import/collection error of the file; anything else that ends a process early is a crash.
        outcome = "timeout" if ending != "exited" else ("crashed" if started or signal_name else "error")
        message = f"{cause} while running {culprit}" if outcome != "error" else f"collection error: {cause} before pytest started"
        stream.append({"event": "result", "nodeid": culprit, "outcome": outcome, "duration": 0.0,
                       "message": message, "text": _log_tail(context.run.log(module)), "attempts": []})
        on_event(file, stream.events[-1])
        if outcome != "error":
            culprits.append(f"{culprit}: {cause}")
        if ending == "file_timeout" or not (running or progressed):
            break
    summary = summarize(module, file, stream.events)
    replay = _replay_prefix(context, env)
    junit.write_suite(
        context.run.junit(module), module, summary.results,
        properties={"configuration": context.configuration.name, "tier": context.tier.name, "file": file,
                    "replay_prefix": replay},
        replay={r.nodeid: f"{replay} {shlex.quote(r.nodeid)}" for r in summary.results if r.nodeid},
    )
    counts: dict[str, int] = {}
    for result in summary.results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    record = FileRecord(
        file=file, module=module, exit_status=returncode, signal=signals[0] if signals else None,
        duration=round(time.monotonic() - began, 3), counts=dict(sorted(counts.items())), jit=summary.jit,
        jit_error=summary.jit_error, contamination=summary.contamination,
        culprit="; ".join(culprits) or None, processes=summary.processes,
    )
    return FileOutcome(record, summary.results)


def _command(context: FileContext, file: str, targets: list[str]) -> list[str]:
    """PyTorch's way (`python -bb FILE --use-pytest`, options through to pytest) or plain pytest.

    The rootdir is the tests directory, so node ids are relative to it (as --select and replay
    commands use them) even when a pytest.ini above it (a PyTorch checkout's) is the inifile."""
    options = ["-p", "harness.run.plugin", "-q", "--color=no", f"--rootdir={context.tests_dir}",
               "-o", f"cache_dir={context.run.cache / 'pytest'}", *context.tier.pytest_args]
    interpreter = [context.python, "-bb", "-X", "faulthandler"]
    if context.tier.entry == "script" and targets == [file]:
        return [*interpreter, file, "--use-pytest", *options]
    return [*interpreter, "-m", "pytest", *targets, *options]


def _run_process(command: list[str], context: FileContext, env: dict[str, str], module: str,
                 stream: EventStream, file_deadline: float, on_event: Callable[[dict[str, Any]], None]) -> tuple[int, str]:
    """One test process, watched: returns its exit status and how it ended (exited, test_timeout, file_timeout)."""
    with open(context.run.log(module), "ab") as log:
        process = subprocess.Popen(command, cwd=context.tests_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    LIVE.add(process)
    try:
        ending = _watch(process, stream, context.tier.test_timeout, file_deadline, on_event)
    finally:
        LIVE.discard(process)
    return process.returncode, ending


def _watch(process: subprocess.Popen[bytes], stream: EventStream, test_limit: int, file_deadline: float,
           on_event: Callable[[dict[str, Any]], None]) -> str:
    started_at = time.monotonic()
    running: str | None = None
    while True:
        try:
            process.wait(timeout=POLL_SECONDS)
            exited = True
        except subprocess.TimeoutExpired:
            exited = False
        for event in stream.read_new():
            on_event(event)
            if event["event"] == "start":
                running, started_at = event["nodeid"], time.monotonic()
            elif event["event"] == "result":
                running = None
        if exited:
            return "exited"
        now = time.monotonic()
        if running is not None and now - started_at > test_limit:
            _abort(process)
            return "test_timeout"
        if now > file_deadline:
            _abort(process)
            return "file_timeout"


def _abort(process: subprocess.Popen[bytes]) -> None:
    """SIGABRT first, so faulthandler writes the hung stacks to the log; SIGKILL if that is not enough."""
    _signal_group(process, signal.SIGABRT)
    try:
        process.wait(timeout=KILL_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGKILL)
        process.wait()


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def _signal_name(returncode: int) -> str | None:
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _log_tail(path: Path) -> str:
    """The end of a process's output, from faulthandler's last dump if there is one."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    dumps = [i for i, line in enumerate(lines) if "Fatal Python error" in line or line.startswith("Timeout (")]
    start = max(dumps[-1] if dumps else len(lines) - LOG_TAIL_LINES, len(lines) - MAX_DUMP_LINES, 0)
    return "\n".join(lines[start:])


def _replay_prefix(context: FileContext, env: dict[str, str]) -> str:
    """The exact command (minus node ids) that reruns tests of this file alone in this configuration."""
    names = ("HARNESS_JIT", "HARNESS_THRESHOLD", "HARNESS_ACTIVATION", "HARNESS_DISENGAGE", "PYTHONPATH",
             "PYTORCH_PRINT_REPRO_ON_FAILURE", "PYTORCH_HYPOTHESIS_PROFILE", *context.tier.env,
             *context.configuration.env)
    assignments = " ".join(f"{name}={shlex.quote(env[name])}" for name in dict.fromkeys(names) if name in env)
    pytest_args = " ".join(map(shlex.quote, context.tier.pytest_args))
    return (f"cd {shlex.quote(str(context.tests_dir))} && env -u CI {assignments} {shlex.quote(context.python)} "
            f"-bb -X faulthandler -m pytest -p harness.run.plugin --rootdir=. {pytest_args}").rstrip()
