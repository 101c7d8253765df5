"""pytest plugin loaded into every test process (`-p harness.run.plugin`).

What it does, driven by HARNESS_* environment variables set by the runner:
- switches the JIT as the configuration asks, after collection (docs/background.md §2) or at start-up;
- in `jit: absent` configurations, proves CinderX cannot be imported (a falsifier, docs/background.md §1);
- streams every test's start and outcome to HARNESS_EVENTS as JSON lines, as they happen, so a
  crash or hang loses nothing already obtained, and ends the stream with the JIT's real state;
- leaves out the tests listed in HARNESS_DESELECT, so a new process resumes a file after the
  test that crashed the previous one;
- when it is safe, runs the tests in forked workers of the collected process (warm restarts,
  see forkserver.py), so resuming after a crash costs a fork instead of a new interpreter.

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
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from harness.protocol import PRIVATE_ENV, Activation, Env, Event, JitMode, Outcome, Request
from harness.run import descendant, forkserver, jit, script_mode

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

    def emit(self, event: str, **fields: Any) -> None:
        if self.stream is not None and os.getpid() == self.owner:
            self.stream.write(json.dumps({"event": event, "time": time.time(), **fields}) + "\n")
            self.stream.flush()


pytest_plugins = (script_mode.__name__,)  # --use-main-module's collection, where the harness defines the option
_request = Request.from_env()
_private = {name: os.environ.pop(name, None) for name in PRIVATE_ENV}  # see the module's docstring
if _private[Env.CONTROL_FD]:
    os.set_inheritable(int(_private[Env.CONTROL_FD]), False)  # no program a test runs gets the runner's commands
_recorder = Recorder(None)
_restart = "fresh"  # "warm" when this process forks its tests' workers, else "fresh: <why>"
_collected = False  # collection finished in this process (or in the warm host it was forked from)


def pytest_configure(config: pytest.Config) -> None:
    global _recorder
    path = _private[Env.EVENTS]
    _recorder = Recorder(open(path, "a", encoding="utf-8", buffering=1) if path else None)
    contamination = jit.cinderx_origin() if _request.mode == JitMode.ABSENT else None
    _recorder.emit(Event.SESSION_START, pid=os.getpid(), jit_request=_request.__dict__, contamination=contamination)
    if _request.activation == Activation.STARTUP:
        _switch_jit()


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> object:
    """After the conftests: PyTorch's defines the script-mode options; elsewhere the harness does."""
    result = yield
    script_mode.add_options(parser)
    return result


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _leave_out_finished(config, items)


def _leave_out_finished(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out tests an earlier process of this file already finished (or crashed in)."""
    path = _private[Env.DESELECT]
    if not path or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as handle:
        done = set(handle.read().splitlines())
    kept = [item for item in items if item.nodeid not in done]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid in done])
        items[:] = kept


def pytest_collection_finish(session: pytest.Session) -> None:
    global _restart, _collected
    _collected = True
    _recorder.emit(Event.COLLECTED, count=len(session.items))
    why_not = _why_not_warm(session)
    _restart = f"fresh: {why_not}" if why_not else "warm"
    _recorder.emit(Event.RESTART, mode=_restart)
    if why_not and _request.activation != Activation.STARTUP:
        _switch_jit()  # a warm host leaves the JIT off: each worker engages it after the fork


def _why_not_warm(session: pytest.Session) -> str | None:
    if _request.activation == Activation.STARTUP:
        return "the JIT is on before collection (activation: startup)"
    if session.testsfailed:
        return "collection failed"
    if session.config.option.collectonly:
        return "collection only"
    if session.config.pluginmanager.hasplugin("dsession"):
        return "pytest-xdist runs the tests"
    if _private[Env.JIT_SETTINGS] and jit.cinderx_loaded():
        return f"{jit.cinderx_loaded()} was imported during collection: a fork cannot change CinderX's settings"
    return forkserver.unsafe_to_fork(_private[Env.CONTROL_FD])


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """In a warm host, returns only inside a forked worker, which then runs pytest's own loop.
    A rerun host that cannot fork runs nothing: its client reruns in fresh processes instead."""
    rerun_host = _private[Env.SELECT] is not None
    if _restart == "warm":
        session.config.get_terminal_writer().flush()
        serve = forkserver.serve_reruns if rerun_host else forkserver.serve
        serve(_private[Env.CONTROL_FD], lambda: _start_worker(session), _recorder.emit)
    elif rerun_host:
        return True
    return None


def _start_worker(session: pytest.Session) -> None:
    _recorder.owner = os.getpid()
    _recorder.emit(Event.WORKER_START, pid=os.getpid())
    capture = session.config.pluginmanager.getplugin("capturemanager")
    if capture is not None and capture.is_globally_capturing():
        capture.read_global_capture()  # drop what a dead worker wrote into the shared capture file
    _leave_out_finished(session.config, session.items)
    _keep_selected(session.config, session.items)
    settings = _private[Env.JIT_SETTINGS]
    _switch_jit(jit.load_settings(settings) if settings else None)


def _keep_selected(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a rerun host's worker: only the node ids its client asked for, in collection order."""
    path = _private[Env.SELECT]
    if not path:
        return
    with open(path, encoding="utf-8") as handle:
        wanted = set(handle.read().splitlines())
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in wanted])
    items[:] = [item for item in items if item.nodeid in wanted]


def _switch_jit(settings_error: str | None = None) -> None:
    """Apply the JIT request; record what CinderX reports before and after (validity compares them)."""
    before = jit.snapshot()
    error = "; ".join(filter(None, [settings_error, jit.apply(_request)])) or None
    _recorder.emit(Event.JIT_APPLIED, error=error, state=jit.snapshot().as_dict(), collected=_collected,
                   compiled_before=before.compiled)
    if _request.mode != JitMode.ABSENT:  # the processes the tests start get the same JIT, and prove it
        _recorder.children_ended = descendant.engage_descendants(_recorder.emit)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _recorder.emit(Event.COLLECT_ERROR, nodeid=report.nodeid, message=_first_line(report),
                       text=report.longreprtext[-MAX_TEXT:])


def _fresh_result() -> dict[str, Any]:
    return {"outcome": Outcome.PASSED, "duration": 0.0, "message": "", "text": ""}


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _recorder.outcomes[nodeid] = _fresh_result()
    _recorder.emit(Event.START, nodeid=nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    result = _recorder.outcomes.setdefault(report.nodeid, _fresh_result())
    result["duration"] += report.duration
    outcome = _phase_outcome(report)
    if outcome is not None and outcome.rank > result["outcome"].rank:
        result["outcome"] = outcome
        result["message"] = _first_line(report)
        result["text"] = report.longreprtext[-MAX_TEXT:]


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    """The final word on a test; a test run again in this process (pytest-rerunfailures,
    flakefinder) carries its earlier attempts, oldest first, and the last attempt decides."""
    result = _recorder.outcomes.pop(nodeid)
    earlier = _recorder.attempts.setdefault(nodeid, [])
    _recorder.emit(Event.RESULT, nodeid=nodeid, attempts=list(earlier), **result)
    earlier.append(f"{result['outcome']}: {result['message']}".rstrip(": "))
    _recorder.children_ended()
    if _request.mode != JitMode.ABSENT and time.monotonic() - _recorder.last_jit_count > JIT_COUNT_INTERVAL:
        _recorder.last_jit_count = time.monotonic()
        _recorder.emit(Event.JIT_COUNT, compiled=jit.compiled_now())


def pytest_internalerror(excrepr: object, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """pytest itself failed (a plugin or conftest bug): say so, or the tests it never ran would vanish."""
    _recorder.emit(Event.INTERNAL_ERROR, message=f"{excinfo.typename}: {excinfo.value}"[:500],
                   text=str(excrepr)[-MAX_TEXT:])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _recorder.children_ended()
    _recorder.emit(Event.SESSION_FINISH, exitstatus=int(exitstatus), jit=jit.snapshot().as_dict())
    forkserver.end_rerun_worker(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    forkserver.worker_finished()


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
        return str(crash.message).splitlines()[0][:500] if crash.message else ""
    text = report.longreprtext.strip().splitlines()
    return text[-1][:500] if text else ""
