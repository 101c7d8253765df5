"""The processes of a run, found and ended whatever they did to hide: test processes never outlive
their runner, and nothing a test started outlives its file.

- A test process gets the parent-death signal (Linux `prctl(PR_SET_PDEATHSIG)`): when its runner
  dies, even by SIGKILL, the kernel kills it; a warm host's workers get it toward their host.
- Every process of a run carries two environment variables (protocol.Env.RUN_DIR and FILE) that
  its descendants inherit, whatever session or parent they end up with: at the end of a file, its
  processes are found by them in /proc and ended, and `--resume` refuses to start while any
  process of the run is alive. Descendants that cleared their environment are found as children
  of children of the test process while it lives.

Standard library only: a warm host (forkserver.py) uses `die_with_parent` inside the test interpreter.
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable, Iterable
from pathlib import Path

from harness.protocol import Env

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
PROC = Path("/proc")


def _prctl() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: processes are still ended at the end of each file
        return None


_PRCTL = _prctl()


def die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies; if the parent is already gone
    (it died before this call), die now. Runs between fork and exec: two system calls, no lock."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(128 + signal.SIGKILL)


def dying_with(parent: int) -> Callable[[], None]:
    """A `preexec_fn` for subprocess.Popen: the child dies with `parent` (this process)."""
    return lambda: die_with_parent(parent)


def marks(run_root: Path, file: str | None = None) -> dict[str, str]:
    """The environment marks of every process of a run (of one file's processes, with `file`)."""
    return {Env.RUN_DIR: str(run_root.resolve()), **({Env.FILE: file} if file is not None else {})}


def marked(marks: dict[str, str]) -> set[int]:
    """Live processes (other than this one) whose environment holds every `NAME=value` of `marks`."""
    wanted = [f"{name}={value}".encode() for name, value in marks.items()]
    found = set()
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # gone, or another user's
            continue
        if all(mark in environment for mark in wanted):
            found.add(int(entry.name))
    return found


def descendants(root: int) -> set[int]:
    """Children of children of `root`, however deep, whatever their session (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        parent = parent_of(int(entry.name)) if entry.name.isdigit() else None
        if parent is not None:
            children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    pending = [root]
    while pending:
        for child in children.get(pending.pop(), ()):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def parent_of(pid: int) -> int | None:
    """The parent of a live process; None when it is gone (or a zombie, which holds nothing)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    state, parent = stat[stat.rindex(")") + 2:].split()[:2]  # the name, in parentheses, may hold spaces
    return None if state in ("Z", "X") else int(parent)


def kill(pids: Iterable[int], sig: signal.Signals = signal.SIGKILL) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
