"""The JIT in the processes a test starts, and the proof of it.

PyTorch's distributed and RPC suites run their tests in worker processes (multiprocessing spawn,
forkserver or fork). A worker started with a fresh interpreter has no JIT unless something engages
it, so a JIT run that proved its JIT only in the test process would prove nothing about the
workers (a glass prison one level down). Two halves make the proof:
- inside each descendant (`engage`, run by the start-up hook in descendants/, and `watch_forks`,
  run by the plugin for forks of the test process): apply the configuration's JIT request at
  start, and at exit write one report file, `<pid>.json`, into the file's reports folder, with the
  JIT state read back from the JIT itself (and the functions it compiled, see compiled.py);
- in the test process (`track_children`): every multiprocessing child it starts is announced in
  the event stream with its pid, and its exit status once it ended, so a worker that never
  reported is seen (the runner joins both: see harness/run/events.py).

Standard library only: this runs in every descendant of every configuration's interpreter.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from harness.protocol import Env, Event, JitMode, Request
from harness.run import compiled, jit

HOOK_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "descendants")
HARNESS_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_state: dict[str, Any] = {"origin": "exec", "inherited": 0, "error": None, "reported": False}


def engage() -> None:
    """In a process started by an engaged test process: the same JIT request, reported at exit."""
    request = Request.from_env()
    if request.mode == JitMode.ABSENT:
        return
    # A descendant has no collection phase: it engages at start. The dynamo pause of
    # compile_disengage would import torch in every descendant; it applies in test processes only.
    jit.own_log()
    _state["error"] = jit.apply(Request(request.mode, request.threshold))
    watch_forks()
    atexit.register(_report)


def watch_forks() -> None:
    """Forks of this process report too: multiprocessing's fork workers end with os._exit, past
    atexit, so the report is armed as a multiprocessing finalizer after each fork."""
    os.register_at_fork(after_in_child=_forked)
    from multiprocessing import util

    util.register_after_fork(_ANCHOR, lambda _: util.Finalize(None, _report, exitpriority=-100))


class _Anchor:
    """Keeps the after-fork registration alive (multiprocessing holds it by weak reference)."""


_ANCHOR = _Anchor()


def _forked() -> None:
    _state.update(origin="fork", inherited=jit.compiled_now(), reported=False)
    atexit.register(_report)


def _report() -> None:
    folder = os.environ.get(Env.PROCESS_REPORTS)
    if _state["reported"] or not folder:
        return
    _state["reported"] = True
    report = {"pid": os.getpid(), "ppid": os.getppid(), "origin": _state["origin"], "argv": sys.argv[:3],
              "request": Request.from_env().mode, "inherited": _state["inherited"], "error": _state["error"],
              "jit": jit.snapshot().as_dict()}
    path = os.path.join(folder, f"{os.getpid()}.json")
    try:
        with open(path + ".partial", "w", encoding="utf-8") as handle:
            json.dump(report, handle)
        os.replace(path + ".partial", path)
    except OSError:
        pass  # a vanished run directory: the runner sees an unreported worker
    compiled.write()


Emit = Callable[..., None]


def engage_descendants(emit: Emit) -> Callable[[], None]:
    """In a test process whose JIT was just applied: every process it starts from now on runs the
    start-up hook (first on PYTHONPATH, the harness beside it), its forks report, and its
    multiprocessing children are announced. Returns what announces the ended children."""
    paths = [HOOK_FOLDER, HARNESS_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    watch_forks()
    return track_children(emit)


def track_children(emit: Emit) -> Callable[[], None]:
    """Announce every multiprocessing child this process starts; returns the function that
    announces the exit status of those that ended since (called after each test)."""
    from multiprocessing import process

    started: list[Any] = []
    original = process.BaseProcess.start

    def start(self: Any) -> None:
        original(self)
        started.append(self)
        emit(Event.CHILD_START, pid=self.pid, method=type(self).__name__)

    def ended() -> None:
        for child in list(started):
            status = child._popen.poll() if child._popen is not None else None
            if status is not None:
                started.remove(child)
                emit(Event.CHILD_EXIT, pid=child.pid, status=status)

    process.BaseProcess.start = start
    return ended
