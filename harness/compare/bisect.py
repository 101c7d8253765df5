"""Order dependence: the smallest set of earlier tests that makes a test fail.

The idea of CPython's `regrtest --bisect`: while the set has more than one test, keep a half that
still reproduces the failure; when neither half does alone (two polluters in different halves),
stop halving; then try dropping each remaining test once.

Each rerun costs what its tests cost, and one slow test among the earlier ones (PyTorch's
test_custom_ops.py under CinderX at threshold 1: one test of 38 s among tests of milliseconds)
would otherwise be rerun at every step. So the set is split in run order where each part holds
about half of the time the tests took in the run (`seconds`), and the quicker part is tried first;
a test that took more than half of the time is a part of its own, tried last, after the tests
before it and those after it. The whole set is rerun only when no part reproduces. Splits and
order follow the recorded times, not the reruns', so the same inputs give the same answer and the
same number of reruns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

Reproduces = Callable[[Sequence[str]], bool]
EACH_TEST_SECONDS = 0.001  # what a test costs beyond its recorded time: with no times, halves by count


def smallest_polluting_set(earlier: Sequence[str], reproduces: Reproduces,
                           seconds: Mapping[str, float] | None = None) -> tuple[str, ...] | None:
    """The tests (in run order) that make the failure come back; None if even all of them do not."""
    tests = list(earlier)
    if not tests:
        return None
    cost = {test: (seconds or {}).get(test, 0.0) + EACH_TEST_SECONDS for test in tests}
    known = False  # whether `tests` has been seen to reproduce the failure
    while len(tests) > 1:
        found = next((part for part in _parts(tests, cost) if reproduces(part)), None)
        if found is None:
            break
        tests, known = found, True
    if not known and not reproduces(tests):
        return None
    for test in list(tests):
        without = [t for t in tests if t != test]
        if without and reproduces(without):
            tests = without
    return tuple(tests)


def _parts(tests: list[str], cost: Mapping[str, float]) -> list[list[str]]:
    """The parts to try, in order: the quicker half first, or, around a test that took more than
    half of the time, the tests before it and after it (the quicker first), then it alone."""
    total = sum(cost[test] for test in tests)
    slow = max(tests, key=lambda test: cost[test])
    if cost[slow] > total / 2:
        at = tests.index(slow)
        around = [part for part in (tests[:at], tests[at + 1:]) if part]
        return [*sorted(around, key=lambda part: sum(cost[test] for test in part)), [slow]]
    return sorted(_halves(tests, cost, total), key=lambda part: sum(cost[test] for test in part))


def _halves(tests: list[str], cost: Mapping[str, float], total: float) -> tuple[list[str], list[str]]:
    """`tests` cut in two where the first part's time comes closest to half of the whole (in run order)."""
    running, best, cut = 0.0, float("inf"), 1
    for index, test in enumerate(tests[:-1], 1):
        running += cost[test]
        if abs(running - total / 2) < best:
            best, cut = abs(running - total / 2), index
    return tests[:cut], tests[cut:]
