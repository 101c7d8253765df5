"""The one exception type the harness turns into a one-line message and exit status 3."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class HarnessError(Exception):
    """Bad input or an unmet precondition, explained in one line for the user."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean: a, b?)`: up to three close matches of a name the user mistyped, or nothing."""
    close = difflib.get_close_matches(name, sorted(known), n=3)
    return f" (did you mean: {', '.join(close)}?)" if close else ""
