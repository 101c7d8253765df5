"""Warm restarts: once its tests are collected, a test process forks a worker to run them and
keeps itself (torch imported, tests collected, JIT not yet engaged) as the template of the next.

A fresh process after a crash pays interpreter start-up, `import torch` and collection again:
seconds per crash, most of a small file's run. A fork of the collected process pays none of that.
Forking is only safe in a single-threaded process (the workers and locks of a thread pool do not
survive fork: a child of a process that has used libgomp hangs in its next parallel region), so
the host forks only as the sole thread, before the JIT is on; otherwise the tests run in the host
itself and a crash resumes in a fresh process, as PyTorch's runner would.

Protocol with the runner (harness/run/filerun.py), through the event stream and one pipe:
- the worker emits `worker_start`, leaves out what HARNESS_DESELECT lists, engages the JIT, runs;
- a worker that finishes its session ends the host at once, with the worker's exit status;
- otherwise the host emits `worker_exit` and reads one line from the control descriptor: `resume`
  forks the next worker; anything else (or end of file) ends the host the way its worker ended.
- A split file (HARNESS_SPLIT): the host forks one worker per piece at once, each event of a worker
  names its piece, and a `worker_exit` names the piece whose next worker `resume` forks (anything
  else ends that piece alone); the host ends once every piece has ended.

Standard library only: it runs inside every configuration's interpreter.
"""

from __future__ import annotations

import faulthandler
import os
import platform
import signal
import sys
import threading
import warnings
from collections.abc import Callable
from typing import IO, NoReturn

from harness.configure.architectures import is_emulated
from harness.protocol import PIECE, Event
from harness.run import processes

_finished_fd: int | None = None  # in a worker: where to say the session finished
_rerun_worker = False  # in a worker of a rerun host: nothing of it is needed once its session finished


# CinderX's JIT switched on in a forked child of an emulated aarch64 interpreter (qemu-user 7.2) died
# with SIGILL, or its compile thread spun for ever holding the GIL, once torch.compile imported
# dynamo; unforked, and natively on x86_64 forked, the same passes (docs/aarch64.md, findings).
EMULATED_JIT = ("a JIT switched on in a forked worker of an emulated interpreter dies (SIGILL) or hangs under "
                "qemu-user (docs/aarch64.md): the file runs unforked")

# Threads known to hold nothing a forked child needs, so a fork may leave them behind:
# pytest-rerunfailures' status server (idle in accept(); it serves pytest-xdist workers only).
_FORK_SAFE_THREADS = {("pytest_rerunfailures", "ServerStatusDB.run_server")}


def unsafe_to_fork(control: str | None, jit_in_workers: bool) -> str | None:
    """Why this process must not become a fork host now (None: it may); `control` is the
    descriptor the runner passed in HARNESS_CONTROL_FD (None: none); `jit_in_workers`: each worker
    would switch a JIT on after the fork."""
    if control is None:
        return "the tier asks for fresh processes"
    if jit_in_workers and _emulated():
        return EMULATED_JIT
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        return "cannot count this process's threads on this platform"
    others = threads - 1 - sum(1 for thread in threading.enumerate() if _fork_safe(thread)) - _emulator_threads()
    if others > 0:
        return (f"{others} other thread(s) alive after collection (OpenMP or BLAS pools: "
                f"OMP_NUM_THREADS=1 avoids them)")
    return None


def _emulator_threads() -> int:
    """Threads of the emulator, not of this process: qemu-user runs one of its own (RCU) beside an
    emulated interpreter's and carries it across the guest's forks itself."""
    return 1 if _emulated() else 0


def _emulated() -> bool:
    return is_emulated(platform.machine())


def _fork_safe(thread: threading.Thread) -> bool:
    target = getattr(thread, "_target", None)
    return (getattr(target, "__module__", None), getattr(target, "__qualname__", None)) in _FORK_SAFE_THREADS


def serve(control_fd: str, start_worker: Callable[[int | None], None], emit: Callable[..., None],
          pieces: int = 1) -> None:
    """Fork workers until each has finished; returns only inside a worker, which then runs the tests.

    `pieces` > 1 (a split file): that many workers at once, worker i running piece i
    (`start_worker(i)`); a worker that dies unfinished is followed by the next of its piece when
    the runner answers `resume`, while the other pieces carry on; the host ends once every piece
    has ended, like the worst of them. One piece: `start_worker(None)`, and the host ends as soon as
    its worker finishes, with the worker's exit status."""
    control = os.fdopen(int(control_fd), "r", encoding="utf-8")
    host = os.getpid()
    live: dict[int, tuple[int | None, int]] = {}  # worker pid -> (its piece, the read end of its finished pipe)
    for piece in range(pieces) if pieces > 1 else (None,):
        if _fork_worker(host, control, piece, live, start_worker):
            return
    ended: list[int] = []
    while live:
        pid, wait_status = os.wait()
        if pid not in live:
            continue
        piece, finished_read = live.pop(pid)
        finished = os.read(finished_read, 1) == b"1"
        os.close(finished_read)
        status = os.waitstatus_to_exitcode(wait_status)
        if not finished:
            emit(Event.WORKER_EXIT, pid=pid, status=status, **({PIECE: piece} if piece is not None else {}))
            if control.readline().strip() == "resume":
                if _fork_worker(host, control, piece, live, start_worker):
                    return
                continue
        ended.append(status)
    _end_like(next((status for status in ended if status < 0), max(ended, default=0)))


def _fork_worker(host: int, control: IO[str], piece: int | None, live: dict[int, tuple[int | None, int]],
                 start_worker: Callable[[int | None], None]) -> bool:
    """Fork the worker of `piece`; True inside it (started), False in the host (it is in `live`)."""
    global _finished_fd
    _flush_streams()
    finished_read, finished_write = os.pipe()
    pid = _fork()
    if pid == 0:
        processes.die_with_parent(host)  # a worker never outlives its host (nor so its runner)
        control.close()
        for _, other in live.values():
            os.close(other)  # another piece's pipe: only its own worker may say it finished
        os.close(finished_read)
        _finished_fd = finished_write
        start_worker(piece)
        return True
    os.close(finished_write)
    live[pid] = (piece, finished_read)
    return False


def serve_reruns(control_fd: str, start_worker: Callable[[], None], emit: Callable[..., None]) -> None:
    """A rerun host (confirmation, bisection): one worker per `run` command, each running the node
    ids its client wrote to the HARNESS_SELECT file, until the client says anything else or goes
    away. Returns only inside a worker, which then runs the tests."""
    control = os.fdopen(int(control_fd), "r", encoding="utf-8")
    for line in control:
        if line.strip() != "run":
            break
        _flush_streams()
        pid = _fork()
        if pid == 0:
            global _rerun_worker
            _rerun_worker = True
            control.close()
            start_worker()
            return
        _, wait_status = os.waitpid(pid, 0)
        emit(Event.WORKER_EXIT, pid=pid, status=os.waitstatus_to_exitcode(wait_status))
    os._exit(0)


def end_rerun_worker(status: int) -> None:
    """In a rerun worker whose session just finished (its events written): end now. Its terminal
    summary and the teardown of an interpreter holding torch take seconds; its client waits for them."""
    if _rerun_worker:
        _flush_streams()
        os._exit(status)


def _fork() -> int:
    with warnings.catch_warnings():
        # Python warns on fork with any other thread alive; the only ones left are known idle.
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is not None:
            stream.flush()  # nothing buffered here may be written twice, by host and worker


def worker_finished() -> None:
    """Called as a worker's session ends: its host need not wait for the runner."""
    global _finished_fd
    if _finished_fd is not None:
        os.write(_finished_fd, b"1")
        os.close(_finished_fd)
        _finished_fd = None


def _end_like(status: int) -> NoReturn:
    """End the host with its worker's exit status, or by its worker's signal, as if it had run the tests."""
    if status < 0:
        faulthandler.disable()  # the worker's stacks are already in the log; the host's are noise
        if -status not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-status, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {-status})
        os.kill(os.getpid(), -status)
        status = 128 - status  # only if the signal did not end this process
    os._exit(status)


def contiguous_pieces(nodeids: list[str], weights: dict[str, float], count: int) -> list[list[str]]:
    """The collected tests in `count` runs of consecutive tests of about equal weight (a test never
    recorded weighs the median of those that were; with none recorded, every test weighs one).
    Consecutive, so a test class's setup and its tests' order stay as in an unsplit run; never an
    empty piece (fewer pieces when there are fewer tests)."""
    known = sorted(weights[nodeid] for nodeid in nodeids if nodeid in weights)
    typical = known[len(known) // 2] if known else 1.0
    sizes = [max(weights.get(nodeid, typical), 0.0) or 1e-9 for nodeid in nodeids]
    count = max(1, min(count, len(nodeids)))
    share = sum(sizes) / count
    pieces: list[list[str]] = [[] for _ in range(count)]
    before = 0.0
    for index, (nodeid, size) in enumerate(zip(nodeids, sizes)):
        piece = min(int((before + size / 2) / share), count - 1) if share > 0 else 0
        piece = max(piece, count - (len(nodeids) - index))  # leave at least one test for each later piece
        piece = min(piece, next((i for i, found in enumerate(pieces) if not found), count))  # nor skip one
        pieces[piece].append(nodeid)
        before += size
    return pieces
