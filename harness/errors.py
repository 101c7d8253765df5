"""The one exception type the harness turns into a one-line message and exit status 3, and the one
rule that says why the machine refused a write (a full disk, a read-only or vanished folder)."""

from __future__ import annotations

import difflib
import errno
import os
from collections.abc import Iterable


class HarnessError(Exception):
    """Bad input or an unmet precondition, explained in one line for the user."""


class WriteError(HarnessError):
    """A write the machine refused. What was written before it stands (every write is atomic), so
    the user's part is only `remedy`, then the same command again (a run: `--resume`)."""

    def __init__(self, message: str, remedy: str) -> None:
        super().__init__(message)
        self.remedy = remedy


# errno -> (what the user is told, what frees the way): refusals of the machine or of a path given,
# never errors of the harness (an OSError of these is one line and exit status 3 wherever it arises).
_CAUSES: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("the disk is full", "free space"),
    errno.EDQUOT: ("the disk quota is used up", "free space"),
    errno.EFBIG: ("the file is larger than the file system allows", "free space"),
    errno.EROFS: ("the file system is read-only", "make it writable"),
    errno.EACCES: ("permission denied", "make it writable"),
    errno.EPERM: ("permission denied", "make it writable"),
    errno.ENOTDIR: ("a file stands where a folder belongs", "move the file away"),
    errno.EISDIR: ("a folder stands where a file belongs", "move the folder away"),
    errno.EEXIST: ("a file of that name already exists", "move it away"),
}
MACHINE_ERRNOS = frozenset(_CAUSES)
# A write also fails when its folder was removed meanwhile (a cleanup, an unmounted disk); a read of
# a missing file is no refusal of the machine, so this one counts for writes only.
_VANISHED = ("its folder no longer exists", "restore the folder")
WRITE_ERRNOS = MACHINE_ERRNOS | {errno.ENOENT}


def cause(error: OSError) -> str:
    """Why the machine refused, in the user's words (the system's own text for an errno not named)."""
    return _CAUSES.get(error.errno or 0, (error.strerror or str(error), ""))[0]


def write_error(path: str | os.PathLike[str], error: OSError) -> WriteError:
    """`PATH: cannot write: the disk is full`, and what frees the way: the message of every failed
    write of the harness (run records, reports, JIT lists, coverage, the database's folder)."""
    told, remedy = _VANISHED if error.errno == errno.ENOENT \
        else _CAUSES.get(error.errno or 0, (cause(error), "fix the cause"))
    return WriteError(f"{os.fspath(path)}: cannot write: {told}", remedy)


def disk_full(path: str | os.PathLike[str]) -> WriteError:
    """A database's write refused for want of space: SQLite rolled the transaction back."""
    return WriteError(f"the disk is full at {os.fspath(path)}; the database is intact", "free space")


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean: a, b?)`: up to three close matches of a name the user mistyped, or nothing."""
    close = difflib.get_close_matches(name, sorted(known), n=3)
    return f" (did you mean: {', '.join(close)}?)" if close else ""
