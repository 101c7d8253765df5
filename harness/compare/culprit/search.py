"""The search: the smallest JIT list that still makes a test fail, trusting no single probe.

Delta debugging over a JIT list, the way CinderX's own `jitlist_bisect.py` goes about it: while more
than one function is left, keep whichever half still fails; when neither half fails alone (the
failure needs functions from both), reduce each half with the other one kept on the list, and join
the two. Halves are taken in the candidates' stable order, so the same inputs give the same answer.

Unlike a single rerun per list, every probe here is a verdict over K reruns: `fails` only when all K
fail, `passes` only when all K pass. A probe that did both is `flaky`, and the search stops there
(`FlakyProbe`) rather than follow a coin toss to a wrong culprit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum

JitList = tuple[str, ...]


class Verdict(StrEnum):
    FAILS = "fails"
    PASSES = "passes"
    FLAKY = "flaky"


class FlakyProbe(Exception):
    """A probe's reruns disagreed: the search cannot go on from it."""

    def __init__(self, jit_list: JitList, seen: str, narrowed: JitList = ()) -> None:
        super().__init__(f"with {len(jit_list)} function(s) on the JIT list the test {seen}")
        self.jit_list = jit_list
        self.seen = seen
        self.narrowed = narrowed  # the smallest list known to fail every time when it stopped


# The first of these JIT lists whose probe fails, or None when all pass; raises FlakyProbe at the
# first that is flaky. Lists are judged in order (a prober may run them at the same time, but a later
# list's verdict counts only when every earlier one passed), so the answer does not depend on --jobs.
FirstFailing = Callable[[Sequence[JitList]], int | None]


def smallest_failing(candidates: JitList, first_failing: FirstFailing) -> JitList:
    """The reduced JIT list; the caller has checked that all of `candidates` fails and none passes."""
    return _reduce((), candidates, first_failing)


def _reduce(fixed: JitList, items: JitList, first_failing: FirstFailing) -> JitList:
    """Reduce `items`, with `fixed` always on the list too. On entry and at each step, `fixed + items`
    fails every time: that is how far a flaky probe lets the search narrow the failure down."""
    while len(items) > 1:
        half = len(items) // 2
        left, right = items[:half], items[half:]
        try:
            found = first_failing([fixed + left, fixed + right])
        except FlakyProbe as flaky:
            if flaky.narrowed:
                raise
            raise FlakyProbe(flaky.jit_list, flaky.seen, fixed + items) from None
        if found is not None:
            items = (left, right)[found]
            continue
        right = _reduce(fixed + left, right, first_failing)
        left = _reduce(fixed + right, left, first_failing)
        return left + right
    return items
