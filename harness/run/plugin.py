"""pytest plugin loaded into every test process (`-p harness.run.plugin`).

What it does, driven by HARNESS_* environment variables set by the runner:
- switches the JIT as the configuration asks, after collection (docs/background.md §2) or at start-up;
- in `jit: absent` configurations, proves CinderX cannot be imported (a falsifier, docs/background.md §1);
- streams every test's start and outcome to HARNESS_EVENTS as JSON lines, as they happen, so a
  crash or hang loses nothing already obtained, and ends the stream with the JIT's real state;
- at the end of a JIT session, writes the functions its JIT compiled (JIT coverage, compiled.py);
- ends the stream with the CPU and wall seconds its tests took, so that recorded durations can be
  told apart from the time the process waited for a core on a loaded machine (record/durations.py);
- leaves out the tests listed in HARNESS_DESELECT, so a new process resumes a file after the
  test that crashed the previous one;
- when it is safe, runs the tests in forked workers of the collected process (warm restarts,
  see forkserver.py), so resuming after a crash costs a fork instead of a new interpreter;
- for a file the runner splits (HARNESS_SPLIT), forks one such worker per piece at once, each
  running consecutive collected tests and naming its piece in every event it writes.

Standard library only: it runs inside every configuration's interpreter. Without HARNESS_EVENTS
(plain `pytest harness/smoke`) it records nothing and only applies the JIT request.

The stream, the list of finished tests and the warm host's control descriptor belong to this
process (and the workers it forks) alone: their variables are removed from the environment as
the plugin loads, so a child process (a child pytest with this plugin, a script a test runs)
neither writes the stream nor reads the runner's commands; a process forked by a test, which
shares the open stream, writes nothing to it either.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

import pytest

from harness.protocol import PIECE, PRIVATE_ENV, WARM, Activation, Env, Event, JitMode, Outcome, Request, restart_mode
from harness.run import compiled, descendant, forkserver, jit, script_mode

MAX_TEXT = 20_000  # characters of failure text kept per test: enough to classify, bounded on disk
JIT_COUNT_INTERVAL = 5.0  # seconds between compiled-function counts, so a crash keeps a recent one


class Recorder:
    """Writes one JSON object per line; each line is flushed so it survives a crash of this process.

    Only its owner writes: the test process, or the worker a warm host forked (`owner` is reset
    there); a copy of this process forked by a test stays silent."""

    def __init__(self, stream: IO[str] | None) -> None:
        self.stream = stream
        self.owner = os.getpid()
        self.outcomes: dict[str, dict[str, Any]] = {}
        self.attempts: dict[str, list[str]] = {}
        self.last_jit_count = time.monotonic()
        self.children_ended: Callable[[], None] = lambda: None  # announces ended multiprocessing children
        self.test_began: tuple[float, float] | None = None  # (wall, CPU) clocks as the running test began
        self.test_seconds = {"cpu": 0.0, "wall": 0.0}  # summed over this process's tests, start to finish
        self.piece: int | None = None  # in a worker of a split file: the piece it runs, named by each event

    def emit(self, event: str, **fields: Any) -> None:
        if self.stream is not None and os.getpid() == self.owner:
            tag = {PIECE: self.piece} if self.piece is not None else {}
            self.stream.write(json.dumps({"event": event, "time": time.time(), **tag, **fields}) + "\n")
            self.stream.flush()


pytest_plugins = (script_mode.__name__,)  # --use-main-module's collection, where the harness defines the option


@dataclass(frozen=True)
class Handed:
    """What the runner handed this process, read once as the plugin loads: the request, and the
    private variables (removed from the environment at once, see the module's docstring)."""

    request: Request
    private: dict[str, str | None]

    @classmethod
    def take(cls) -> Handed:
        request = Request.from_env()
        private = {name: os.environ.pop(name, None) for name in PRIVATE_ENV}
        if private[Env.CONTROL_FD]:
            os.set_inheritable(int(private[Env.CONTROL_FD]), False)  # no program a test runs gets the runner's commands
        return cls(request, private)


_HANDED = Handed.take()
SESSION = pytest.StashKey["HarnessSession"]()


def pytest_configure(config: pytest.Config) -> None:
    """The session's state lives in one object, kept in the config's stash and registered for its hooks."""
    session = HarnessSession(_HANDED)
    config.stash[SESSION] = session
    config.pluginmanager.register(session, "harness-session")
    session.start()


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> object:
    """After the conftests: PyTorch's defines the script-mode options; elsewhere the harness does."""
    result = yield
    script_mode.add_options(parser)
    return result


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is not None:
        del config.stash[SESSION]
        config.pluginmanager.unregister(session)
    forkserver.worker_finished()


class HarnessSession:
    """The hooks that record one test process (or a warm host and the workers it forks)."""

    def __init__(self, handed: Handed) -> None:
        self.request = handed.request
        self.private = handed.private
        path = handed.private[Env.EVENTS]
        self.recorder = Recorder(open(path, "a", encoding="utf-8", buffering=1) if path else None)
        self.restart = "fresh"  # "warm" when this process forks its tests' workers, else "fresh: <why>"
        self.collected = False  # collection finished in this process (or in the warm host it was forked from)
        self.pieces: list[list[str]] = []  # a warm host of a split file: the node ids of each worker's piece

    def start(self) -> None:
        contamination = jit.cinderx_origin() if self.request.mode == JitMode.ABSENT else None
        self.recorder.emit(Event.SESSION_START, pid=os.getpid(), jit_request=self.request.__dict__,
                           contamination=contamination)
        if self.request.activation == Activation.STARTUP:
            self.switch_jit()

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        self.leave_out_finished(config, items)

    def leave_out_finished(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Leave out tests an earlier process of this file already finished (or crashed in)."""
        path = self.private[Env.DESELECT]
        if not path or not os.path.exists(path):
            return
        with open(path, encoding="utf-8") as handle:
            done = set(handle.read().splitlines())
        kept = [item for item in items if item.nodeid not in done]
        if len(kept) != len(items):
            config.hook.pytest_deselected(items=[item for item in items if item.nodeid in done])
            items[:] = kept

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = True
        # A file the runner may split names its tests in collection order: its pieces' results
        # arrive interleaved, and its JUnit keeps this order, as an unsplit run's does.
        order = {"nodeids": [item.nodeid for item in session.items]} if self.private[Env.SPLIT] else {}
        self.recorder.emit(Event.COLLECTED, count=len(session.items), **order)
        why_not = self.why_not_warm(session)
        self.restart = restart_mode(why_not)
        if not why_not:
            self.pieces = self.split(session.items)
        self.recorder.emit(Event.RESTART, mode=self.restart, pieces=max(len(self.pieces), 1))
        if why_not and self.request.activation != Activation.STARTUP:
            self.switch_jit()  # a warm host leaves the JIT off: each worker engages it after the fork

    def why_not_warm(self, session: pytest.Session) -> str | None:
        if self.request.activation == Activation.STARTUP:
            return "the JIT is on before collection (activation: startup)"
        if session.testsfailed:
            return "collection failed"
        if session.config.option.collectonly:
            return "collection only"
        if session.config.pluginmanager.hasplugin("dsession"):
            return "pytest-xdist runs the tests"
        if self.private[Env.JIT_SETTINGS] and jit.cinderx_loaded():
            return f"{jit.cinderx_loaded()} was imported during collection: a fork cannot change CinderX's settings"
        return forkserver.unsafe_to_fork(self.private[Env.CONTROL_FD], self.request.mode == JitMode.ON)

    def split(self, items: list[pytest.Item]) -> list[list[str]]:
        """The pieces the runner asked this host to split the remaining tests into (none: unsplit)."""
        path = self.private[Env.SPLIT]
        if not path or self.private[Env.SELECT] is not None:
            return []
        with open(path, encoding="utf-8") as handle:
            asked = json.load(handle)
        pieces = forkserver.contiguous_pieces([item.nodeid for item in items], asked.get("weights", {}),
                                              int(asked["pieces"]))
        return pieces if len(pieces) > 1 else []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        """In a warm host, returns only inside a forked worker, which then runs pytest's own loop.
        A rerun host that cannot fork runs nothing: its client reruns in fresh processes instead."""
        rerun_host = self.private[Env.SELECT] is not None
        if self.restart == WARM:
            session.config.get_terminal_writer().flush()
            if rerun_host:
                forkserver.serve_reruns(self.private[Env.CONTROL_FD], lambda: self.start_worker(session, None),
                                        self.recorder.emit)
            else:
                forkserver.serve(self.private[Env.CONTROL_FD], lambda piece: self.start_worker(session, piece),
                                 self.recorder.emit, max(len(self.pieces), 1))
        elif rerun_host:
            return True
        return None

    def start_worker(self, session: pytest.Session, piece: int | None) -> None:
        self.recorder.owner = os.getpid()
        self.recorder.piece = piece
        self.recorder.emit(Event.WORKER_START, pid=os.getpid())
        capture = session.config.pluginmanager.getplugin("capturemanager")
        if capture is not None and capture.is_globally_capturing():
            capture.read_global_capture()  # drop what a dead worker wrote into the shared capture file
        self.leave_out_finished(session.config, session.items)
        if piece is not None:
            self.keep(session.config, session.items, set(self.pieces[piece]))
        self.keep_selected(session.config, session.items)
        settings = self.private[Env.JIT_SETTINGS]
        self.switch_jit(jit.load_settings(settings) if settings else None)

    def keep_selected(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """In a rerun host's worker: only the node ids its client asked for, in collection order."""
        path = self.private[Env.SELECT]
        if not path:
            return
        with open(path, encoding="utf-8") as handle:
            self.keep(config, items, set(handle.read().splitlines()))

    @staticmethod
    def keep(config: pytest.Config, items: list[pytest.Item], wanted: set[str]) -> None:
        """Only the tests `wanted`, in collection order; the others deselected."""
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in wanted])
        items[:] = [item for item in items if item.nodeid in wanted]

    def switch_jit(self, settings_error: str | None = None) -> None:
        """Apply the JIT request; record what CinderX reports before and after (validity compares them)."""
        before = jit.snapshot()
        error = "; ".join(filter(None, [settings_error, jit.apply(self.request)])) or None
        self.recorder.emit(Event.JIT_APPLIED, error=error, state=jit.snapshot().as_dict(), collected=self.collected,
                           compiled_before=before.compiled)
        if self.request.mode != JitMode.ABSENT:  # the processes the tests start get the same JIT, and prove it
            self.recorder.children_ended = descendant.engage_descendants(self.recorder.emit)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.recorder.emit(Event.COLLECT_ERROR, nodeid=report.nodeid, message=_first_line(report),
                               text=report.longreprtext[-MAX_TEXT:])

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.recorder.outcomes[nodeid] = _fresh_result()
        self.recorder.emit(Event.START, nodeid=nodeid)
        self.recorder.test_began = (time.monotonic(), _cpu_seconds())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = self.recorder.outcomes.setdefault(report.nodeid, _fresh_result())
        result["duration"] += report.duration
        outcome = _phase_outcome(report)
        if outcome is not None and outcome.rank > result["outcome"].rank:
            result["outcome"] = outcome
            result["message"] = _first_line(report)
            result["text"] = report.longreprtext[-MAX_TEXT:]

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        """The final word on a test; a test run again in this process (pytest-rerunfailures,
        flakefinder) carries its earlier attempts, oldest first, and the last attempt decides."""
        recorder = self.recorder
        if recorder.test_began is not None:
            recorder.test_seconds["wall"] += time.monotonic() - recorder.test_began[0]
            recorder.test_seconds["cpu"] += _cpu_seconds() - recorder.test_began[1]
            recorder.test_began = None
        result = recorder.outcomes.pop(nodeid)
        earlier = recorder.attempts.setdefault(nodeid, [])
        recorder.emit(Event.RESULT, nodeid=nodeid, attempts=list(earlier), **result)
        earlier.append(f"{result['outcome']}: {result['message']}".rstrip(": "))
        recorder.children_ended()
        if self.request.mode != JitMode.ABSENT and time.monotonic() - recorder.last_jit_count > JIT_COUNT_INTERVAL:
            recorder.last_jit_count = time.monotonic()
            recorder.emit(Event.JIT_COUNT, compiled=jit.compiled_now())

    def pytest_internalerror(self, excrepr: object, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """pytest itself failed (a plugin or conftest bug): say so, or the tests it never ran would vanish."""
        self.recorder.emit(Event.INTERNAL_ERROR, message=f"{excinfo.typename}: {excinfo.value}"[:500],
                           text=str(excrepr)[-MAX_TEXT:])

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.recorder.children_ended()
        self.recorder.emit(Event.SESSION_FINISH, exitstatus=int(exitstatus), jit=jit.snapshot().as_dict(),
                           tests={kind: round(seconds, 3) for kind, seconds in self.recorder.test_seconds.items()},
                           peak_mb=_peak_mb())
        if self.request.mode == JitMode.ON and os.getpid() == self.recorder.owner:
            compiled.write()
        forkserver.end_rerun_worker(int(exitstatus))


def _peak_mb() -> float:
    """This process's peak resident memory (what `--jobs auto` sizes a run with: harness/run/capacity.py)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _cpu_seconds() -> float:
    """CPU time of this process and of the children it has waited for (a test's subprocesses)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _fresh_result() -> dict[str, Any]:
    return {"outcome": Outcome.PASSED, "duration": 0.0, "message": "", "text": ""}


def _phase_outcome(report: pytest.TestReport) -> Outcome | None:
    """One phase's outcome; the highest-ranked phase decides (a failing teardown makes a pass an error)."""
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            return Outcome.XPASSED if xfail else Outcome.PASSED
        if report.skipped:
            return Outcome.XFAILED if xfail else Outcome.SKIPPED
        return Outcome.FAILED
    if report.failed:
        return Outcome.ERROR
    if report.skipped:
        return Outcome.XFAILED if xfail else Outcome.SKIPPED
    return None


def _first_line(report: pytest.TestReport | pytest.CollectReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])[:500]
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return _headline(str(crash.message or ""))
    text = report.longreprtext.strip().splitlines()
    return text[-1][:500] if text else ""


def _headline(message: str) -> str:
    """An exception's message as one line: its first, joined with the next where the first only
    announces the cause (dynamo's `BackendCompilerFailed: backend='...' raised:` puts it there)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].endswith(":"):
        return f"{lines[0]} {lines[1]}"[:500]
    return lines[0][:500] if lines else ""
