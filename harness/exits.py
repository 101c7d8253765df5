"""Exit statuses of every harness command: the one place they are defined.

Only a verdict that was really computed may exit 0, 1 or 2; bad input is 3 with one line naming
the file, line or option; anything unexpected is 4, never a verdict.
"""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    OK = 0  # done; for a comparison: valid, no regression
    REGRESSIONS = 1  # a valid comparison found regressions
    INVALID = 2  # the comparison is not valid (its problems are listed)
    USAGE = 3  # bad usage or unreadable input
    INTERNAL = 4  # an internal error of the harness
    INTERRUPTED = 130  # Ctrl-C or SIGTERM (128 + SIGINT, as shells report it)
