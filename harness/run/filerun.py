"""Run one test file to the end, whatever its tests do to the process running them.

A file runs in a fresh process with the harness plugin. While it runs, its event stream is
watched: a test past the per-test limit, or a file past the per-file limit, gets SIGABRT
(faulthandler dumps every stack), then SIGKILL. When a process dies with a test running, that
test is recorded as crashed (or timeout) with the tail of the faulthandler output, and the file
resumes after it in a new process that leaves out everything already finished: a fork of the
collected test process when it could keep one (warm restart, see forkserver.py), else a fresh one.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.configure.architectures import PREFIX_VARIABLE
from harness.configure.configurations import Configuration
from harness.configure.tiers import Tier
from harness.protocol import PIECE, Env, Event, Outcome, Request, collection_error, why_not_warm
from harness.record import junit
from harness.record.model import FileRecord, TestResult
from harness.record.store import RunDirectory
from harness.run import processes
from harness.run.events import EventStream, FileSummary, summarize, summarize_descendants
from harness.run.split import Split

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
    env_per_file: dict[str, dict[str, str]] = field(default_factory=dict)  # added for one file (runner.narrowing)
    split: Mapping[str, Split] = field(default_factory=dict)  # files the run's plan splits into pieces (split.py)


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

    def reset(self) -> None:
        """A run starts: nothing is being stopped."""
        with self._lock:
            self.stopping = False

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
    reports, compiled = context.run.processes(module), context.run.compiled(module)
    for folder in (reports, compiled):
        folder.mkdir(parents=True, exist_ok=True)
    env = {**context.env, **context.env_per_file.get(file, {}), Env.EVENTS: str(stream.path.resolve()), Env.DESELECT: str(deselect.resolve()),
           Env.PROCESS_REPORTS: str(reports.resolve()), Env.COMPILED: str(compiled.resolve()),
           **processes.marks(context.run.root, file)}
    split = context.split.get(file)
    if split is not None:
        asked = context.run.events(module).with_suffix(".split")
        asked.write_text(json.dumps({"pieces": split.pieces, "weights": dict(split.weights)}), encoding="utf-8")
        env[Env.SPLIT] = str(asked.resolve())
    command = _command(context, file, targets)
    began = time.monotonic()
    file_deadline = began + context.tier.timeout
    culprits: list[str] = []
    signals: list[str] = []
    process: FileProcess | None = None
    mark = 0  # where the stream's events of the current test process begin
    dropped: set[int] = set()  # pieces of the current (split) process that are not resumed: they made no progress
    while True:
        deselect.write_text("".join(f"{nodeid}\n" for nodeid in sorted(stream.finished())))
        stream.seal()  # a line the last process left half-written must not swallow the next one's first
        sessions_before = stream.sessions()
        if process is not None and process.waiting:
            process.resume()
        elif process is None or process.exited:
            if process is not None:
                process.finish(file_deadline)
            mark, dropped = len(stream.events), set()
            process = FileProcess.start(command, context, env, module, processes.marks(context.run.root, file))
        # else: a split host whose other pieces still run, one piece dropped: watch on
        ending = process.watch(stream, context.tier.test_timeout, file_deadline, lambda event: on_event(file, event))
        if LIVE.stopping:
            raise Interrupted(file)
        split_pieces: list[int | None] = [*stream.pieces_since(mark)]
        started = bool(split_pieces) or stream.sessions() > sessions_before
        # The pieces still owed results (an unsplit file is one piece, None): none left, the file is done.
        unfinished = [piece for piece in split_pieces or [None]
                      if piece not in dropped and not (started and stream.last_session_finished(piece))]
        if started and not unfinished:
            break
        assert ending.status is not None  # only a finished session leaves its process running
        signal_name = _signal_name(ending.status)
        if signal_name:
            signals.append(signal_name)
        # Whose tests the ending cut short: one piece's worker, or every unfinished piece of a
        # process that died whole.
        scope = [ending.piece] if ending.piece is not None else unfinished
        progressed = started and any(stream.last_session_results(piece) > 0 for piece in scope)
        running = {piece: stream.running(piece) for piece in scope if started and stream.running(piece)}
        cause = {"test_timeout": f"test exceeded the tier's per-test limit ({context.tier.test_timeout} s)",
                 "file_timeout": f"file exceeded the tier's limit ({context.tier.timeout} s)"}.get(
            ending.how, f"process died with {signal_name or f'exit status {ending.status}'}")
        # A file that fails before pytest starts (an import error at the top of a script) is an
        # import/collection error of the file; anything else that ends a process early is a crash.
        outcome = (Outcome.TIMEOUT if ending.how.endswith("timeout")
                   else Outcome.CRASHED if started or signal_name else Outcome.ERROR)
        for piece, culprit in (running.items() or [(ending.piece, f"{file}::<process>")]):
            message = (f"{cause} while running {culprit}" if outcome != Outcome.ERROR
                       else collection_error(f"{cause} before pytest started"))
            stream.append({"event": Event.RESULT, "nodeid": culprit, "outcome": outcome, "duration": 0.0,
                           "message": message, "text": _log_tail(context.run.log(module)), "attempts": [],
                           **({PIECE: piece} if piece is not None else {})})
            on_event(file, stream.events[-1])
            if outcome != Outcome.ERROR:
                culprits.append(f"{culprit}: {cause}")
        if ending.how == "file_timeout":
            break
        if not (running or progressed):
            if ending.piece is None:
                break
            process.drop()  # this piece made no progress: the host ends it, the other pieces carry on
            dropped.add(ending.piece)
    # Every result is final now: write them while the process still exits (interpreter teardown).
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
    if summary.internal_error:
        culprits.append(f"{file}::<pytest internal error>: {summary.internal_error}")
    grace = time.monotonic() + context.tier.exit_grace
    ending = process.finish(min(file_deadline, grace))
    descendants = summarize_descendants(stream.events, reports)  # after the end: their reports are written
    if ending.how == "exit_timeout":
        limit = (f"{context.tier.exit_grace} s" if grace < file_deadline
                 else f"the tier's limit ({context.tier.timeout} s)")
        culprits.append(f"{file}::<process>: did not exit within {limit} after its tests finished (a thread or a "
                        "child process it waits for); stopped, results kept, its stacks are in the log")
    record = FileRecord(
        file=file, module=module, exit_status=ending.status, signal=signals[0] if signals else None,
        duration=round(time.monotonic() - began, 3), counts=dict(sorted(counts.items())), jit=summary.jit,
        jit_error=summary.jit_error, contamination=summary.contamination,
        culprit="; ".join(culprits) or None, processes=summary.processes, restart=summary.restart,
        descendants=descendants.as_dict() if descendants else None,
        stream_errors=_stream_errors(stream),
        jit_processes=summary.jit_processes, cpu_share=summary.cpu_share, peak_mb=summary.peak_mb,
        split=_split_note(split, summary) if split is not None else None,
    )
    return FileOutcome(record, summary.results)


def _split_note(split: Split, summary: FileSummary) -> str:
    """How a file the plan split ran: in how many pieces, or unsplit and why (shown per file)."""
    if summary.pieces > 1:
        return f"{summary.pieces} pieces, forked after one collection"
    return f"unsplit: {why_not_warm(summary.restart) or f'too few tests for {split.pieces} pieces'}"


def _stream_errors(stream: EventStream) -> tuple[str, ...]:
    more = stream.error_count - len(stream.errors)
    return (*stream.errors, *([f"... and {more} more"] if more else []))


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


@dataclass(frozen=True)
class Ending:
    """How a watch of a test process ended."""

    how: str  # exited, worker_exited, session_finished, test_timeout, file_timeout (or exit_timeout)
    status: int | None  # of the process or worker that ended (negative: its signal); None: still running
    piece: int | None = None  # of a split file: the piece whose worker ended (None: the whole process, or unsplit)


class FileProcess:
    """A test process of one file, and the pipe on which a warm host is told to fork again."""

    def __init__(self, popen: subprocess.Popen[bytes], control: int, marks: dict[str, str]) -> None:
        self.popen = popen
        self.control = control  # write end; the host reads commands from its copy of the read end
        self.waiting = False  # a warm host is alive and waits to fork the next worker
        self.marks = marks  # in the environment of every process of this file, descendants included
        self.split = False  # the host forks a worker per piece at once (its events name their pieces)
        self.running: dict[int | None, tuple[str, float]] = {}  # per piece: the test running, since when
        self.workers: dict[int | None, int] = {}  # per piece: the pid of its worker

    @classmethod
    def start(cls, command: list[str], context: FileContext, env: dict[str, str], module: str,
              marks: dict[str, str]) -> FileProcess:
        """The test process, in a session of its own, killed by the kernel if this runner dies."""
        read, write = os.pipe()
        env = {**env, Env.CONTROL_FD: str(read)} if context.tier.restart == "warm" else env
        try:
            with open(context.run.log(module), "ab") as log:
                popen = subprocess.Popen(command, cwd=context.tests_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, pass_fds=(read,),
                                         preexec_fn=processes.dying_with(os.getpid()))
        finally:
            os.close(read)
        LIVE.add(popen)
        return cls(popen, write, marks)

    def resume(self) -> None:
        """Tell the waiting host to fork a worker that continues after what finished."""
        self.waiting = False
        os.write(self.control, b"resume\n")

    def drop(self) -> None:
        """Tell the waiting host of a split file not to follow the dead worker's piece."""
        self.waiting = False
        os.write(self.control, b"end\n")

    @property
    def exited(self) -> bool:
        return self.popen.poll() is not None

    def finish(self, deadline: float) -> Ending:
        """Let the process end (a waiting host ends as its worker did) by `deadline`; stop whatever
        it left running."""
        os.close(self.control)
        how = "exited"
        stray: set[int] = set()
        if not self._exited_within(max(0.0, deadline - time.monotonic())):
            how = "exit_timeout"
            # SIGABRT, for faulthandler to write every thread's stack to the log: first to the
            # descendants (a warm host's worker, which dies with its host, and the host then ends
            # like it), then to whatever is left; SIGKILL if that is not enough.
            stray = processes.descendants(self.popen.pid)
            processes.kill(stray, signal.SIGABRT)
            if not self._exited_within(KILL_GRACE_SECONDS if stray else 0):
                _signal_group(self.popen, signal.SIGABRT)
                if not self._exited_within(KILL_GRACE_SECONDS):
                    _signal_group(self.popen, signal.SIGKILL)
            self.popen.wait()
        LIVE.discard(self.popen)
        _signal_group(self.popen, signal.SIGKILL)  # orphans: a test's children, a worker of a dead host
        processes.kill(stray | processes.marked(self.marks))  # descendants in sessions of their own
        return Ending(how, self.popen.returncode)

    def watch(self, stream: EventStream, test_limit: int, file_deadline: float,
              on_event: Callable[[dict[str, Any]], None]) -> Ending:
        """Follow the stream until the process exits, a worker exits, or a limit is hit."""
        while True:
            exited = self._exited_within(POLL_SECONDS)
            ending: Ending | None = None
            for event in stream.read_new():
                on_event(event)
                ending = self._track(event) or ending
            if ending is not None and (ending.how == "worker_exited" or not exited):
                return ending
            if exited:
                return Ending("exited", self.popen.returncode)
            now = time.monotonic()
            late = [piece for piece, (_, since) in self.running.items() if now - since > test_limit]
            if late:
                return self._abort(self.workers.get(late[0]), stream, on_event, "test_timeout")
            if now > file_deadline:
                # The file's time is up: every worker of a split host, or the one running
                ending = self._abort(None if self.split else self.workers.get(None), stream, on_event, "file_timeout")
                if self.waiting or not self.exited:  # no next worker
                    self.waiting = False
                    _signal_group(self.popen, signal.SIGKILL)
                    self.popen.wait()
                return ending

    def _track(self, event: dict[str, Any]) -> Ending | None:
        """Follow one event: which test each worker runs since when; how a worker or session ended."""
        kind, piece = event["event"], event.get(PIECE)
        if kind == Event.START:
            self.running[piece] = (event["nodeid"], time.monotonic())
        elif kind == Event.RESULT:
            self.running.pop(piece, None)
        elif kind == Event.WORKER_START:
            self.workers[piece] = event["pid"]
        elif kind == Event.RESTART:
            self.split = event.get("pieces", 1) != 1
        elif kind == Event.WORKER_EXIT:
            self.waiting = True
            self.running.pop(piece, None)
            self.workers.pop(piece, None)
            return Ending("worker_exited", event["status"], piece)
        elif kind == Event.SESSION_FINISH:
            self.running.pop(piece, None)
            if piece is None:
                return Ending("session_finished", None)  # its results are final; it exits meanwhile
        return None

    def _abort(self, worker: int | None, stream: EventStream, on_event: Callable[[dict[str, Any]], None],
               how: str) -> Ending:
        """SIGABRT first, so faulthandler writes the hung stacks to the log; SIGKILL if that is not
        enough. Only the worker, when there is one: its host survives to fork the next (unless the
        host does not answer either)."""
        if worker is not None and processes.parent_of(worker) != self.popen.pid:
            worker = None  # the stream named a process that is not the host's child: signal only what is ours
        group = functools.partial(_signal_group, self.popen)
        steps = [group, group] if worker is None else [functools.partial(processes.kill, [worker])] * 2 + [group]
        for send, sig in zip(steps, (signal.SIGABRT, signal.SIGKILL, signal.SIGKILL)):
            send(sig)
            deadline = time.monotonic() + KILL_GRACE_SECONDS
            while time.monotonic() < deadline:
                exited = self._exited_within(POLL_SECONDS)
                for event in stream.read_new():
                    on_event(event)
                    ended = self._track(event)
                    if ended is not None and ended.how == "worker_exited":
                        return Ending(how, ended.status, ended.piece)
                if exited:
                    return Ending(how, self.popen.returncode)
        self.popen.wait()  # the whole group got SIGKILL
        return Ending(how, self.popen.returncode)

    def _exited_within(self, seconds: float) -> bool:
        try:
            self.popen.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False


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
    names = (*Request().to_env(), Env.ENTRIES, "PYTHONPATH", PREFIX_VARIABLE,  # an emulated interpreter's root
             "PYTORCH_PRINT_REPRO_ON_FAILURE", "PYTORCH_HYPOTHESIS_PROFILE", *context.tier.env,
             *context.configuration.env)
    assignments = " ".join(f"{name}={shlex.quote(env[name])}" for name in dict.fromkeys(names) if name in env)
    pytest_args = " ".join(map(shlex.quote, context.tier.pytest_args))
    return (f"cd {shlex.quote(str(context.tests_dir))} && env -u CI {assignments} {shlex.quote(context.python)} "
            f"-bb -X faulthandler -m pytest -p harness.run.plugin --rootdir=. {pytest_args}").rstrip()
