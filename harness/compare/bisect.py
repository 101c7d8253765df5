"""Order dependence: the smallest set of earlier tests that makes a test fail.

The idea of CPython's `regrtest --bisect`: while the set has more than one test, keep whichever
half still reproduces the failure; when neither half does alone (two polluters in different
halves), stop halving; then try dropping each remaining test once. Halves are taken in run order,
not at random, so the same inputs give the same answer and the same number of runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Reproduces = Callable[[Sequence[str]], bool]


def smallest_polluting_set(earlier: Sequence[str], reproduces: Reproduces) -> tuple[str, ...] | None:
    """The tests (in run order) that make the failure come back; None if even all of them do not."""
    tests = list(earlier)
    if not tests or not reproduces(tests):
        return None
    while len(tests) > 1:
        half = len(tests) // 2
        first, second = tests[:half], tests[half:]
        if reproduces(first):
            tests = first
        elif reproduces(second):
            tests = second
        else:
            break
    for test in list(tests):
        without = [t for t in tests if t != test]
        if without and reproduces(without):
            tests = without
    return tuple(tests)
