"""How the harness writes a file: beside its place, then renamed over it.

A full disk, a kill or a read-only folder therefore never leaves half a file, and never damages the
file written before (a run record, a report, a JIT list keeps its last complete content). A write
the machine refuses is one line naming the file and the cause (harness/errors.py: `write_error`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import write_error


def partial_path(path: Path) -> Path:
    """Where a file is written before it takes its name (`NAME.partial`, beside it)."""
    return path.with_name(f"{path.name}.partial")


def replace_with(path: Path, write: Callable[[Path], None]) -> None:
    """`write(partial)` writes the whole file; it then replaces `path` at once. On failure the
    partial file is removed and the error names `path` and the cause."""
    partial = partial_path(path)
    try:
        write(partial)
        os.replace(partial, path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise write_error(path, error) from None


def write_atomically(path: Path, text: str) -> None:
    """Replace the text file `path` with `text`, all of it or none of it."""
    replace_with(path, lambda partial: partial.write_text(text, encoding="utf-8"))


NEARLY_FULL = 1 << 20  # bytes free under which a failed write is put down to a full disk


def nearly_full(path: Path) -> bool:
    """Whether the disk holding `path` (or its nearest existing folder) has all but run out of space:
    how a failure that does not say why (SQLite's "disk I/O error", a writer's own message) is
    recognised as a full disk."""
    for folder in (path, *path.parents):
        try:
            disk = os.statvfs(folder)
        except OSError:
            continue
        return disk.f_bavail * disk.f_frsize < NEARLY_FULL
    return False


@dataclass(frozen=True)
class Reserve:
    """Disk space held back for the one write a failure needs: a run that stops on a full disk must
    still mark its record interrupted. A file of allocated blocks beside `file`, a little larger
    than it, given back just before that last write."""

    file: Path
    margin: int = 64 * 1024  # the record grows between two writes: a file's entry, the final status

    @property
    def path(self) -> Path:
        return self.file.with_name(f"{self.file.name}.reserve")

    def hold(self) -> None:
        """Hold the size of `file` and the margin (best effort: a disk that is already full holds nothing)."""
        try:
            size = self.file.stat().st_size + self.margin
            with open(self.path, "ab") as handle:
                if os.fstat(handle.fileno()).st_size < size:
                    os.posix_fallocate(handle.fileno(), 0, size)
        except OSError:
            pass

    def release(self) -> None:
        self.path.unlink(missing_ok=True)


def make_folder(path: Path) -> Path:
    """A folder to write into, with its parents; a refusal names the folder and the cause."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise write_error(path, error) from None
    return path
