"""Confirmation that learns (compare/confirm.py): the polluter set found for one order-dependent
regression is tried first for the next ones, only where it ran before them in their file; what each
way costs is counted in reruns, the unit the real confirmation's time is made of."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from harness.compare.confirm import Polluters, judge
from harness.compare.diff import Regression

pytestmark = pytest.mark.unit

CANDIDATE, BASELINE = "cd /t && jit-python -m pytest", "cd /t && python -m pytest"
POLLUTER = "test_a.py::test_pollutes"


class Reruns:
    """Reruns as a JIT candidate whose POLLUTER breaks every later test of its process: counted."""

    def __init__(self) -> None:
        self.count = 0

    def prepare(self, prefixes: Sequence[str], target: str) -> None:
        pass

    def outcome(self, prefix: str, nodeids: Sequence[str], target: str) -> str:
        self.count += 1
        return "failed" if prefix == CANDIDATE and POLLUTER in nodeids[:-1] else "passed"


def _regression(nodeid: str) -> Regression:
    return Regression(test=nodeid, module=nodeid.split(".py")[0], baseline="passed", candidate="failed", detail="",
                      classification="", replay=f"{CANDIDATE} {nodeid}", baseline_replay=f"{BASELINE} {nodeid}",
                      nodeid=nodeid)


def _earlier(count: int) -> list[str]:
    """`count` tests of test_a.py run before a regression, the polluter among them."""
    return [f"test_a.py::test_{n}" for n in range(count // 2)] + [POLLUTER] + [
        f"test_a.py::test_{n}" for n in range(count // 2, count - 1)]


def test_a_known_polluter_confirms_the_next_regression_without_a_bisection():
    known, reruns = Polluters(), Reruns()
    first = judge(_regression("test_a.py::test_victim_1"), _earlier(64), 2, reruns, known)
    bisected = reruns.count
    second = judge(_regression("test_a.py::test_victim_2"), _earlier(80), 2, reruns, known)
    assert (first.confirmed, first.polluters) == (True, (POLLUTER,))
    assert (second.confirmed, second.polluters) == (True, (POLLUTER,))
    assert "a known polluter set" in second.confirmation and "order-dependent" in second.confirmation
    assert reruns.count - bisected == 2 * 2 + 2 * 2  # alone K + K, then polluter-then-test K + K: no bisection
    assert bisected > reruns.count - bisected
    assert (known.sets, known.bisections) == ({(POLLUTER,): 2}, 1)
    assert known.summary() == "order dependence: 2 regressions explained by 1 polluter set, 1 bisection"


def test_a_known_polluter_that_did_not_run_before_the_test_is_not_tried():
    """A set from another file (or one that ran after the test) could not have caused its failure."""
    known = Polluters({(POLLUTER,): 3})
    assert known.candidates(["test_b.py::test_one", "test_b.py::test_two"]) == []
    assert known.candidates(_earlier(4)) == [(POLLUTER,)]
