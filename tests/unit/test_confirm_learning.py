"""Confirmation that learns (compare/confirm.py): reruns made only where they can change a verdict,
the polluter set bisected for one order-dependent regression tried on every later one of its file
at once, and only there; what each verdict costs is counted in reruns, the unit the real
confirmation's time is made of. The reruns are a fake here: the scheduling is the point."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence

import pytest

from harness.compare.bisect import smallest_polluting_set
from harness.compare.confirm import Confirmation, order_summary
from harness.compare.diff import Regression
from harness.compare.replay import Request

pytestmark = pytest.mark.unit

K = 2
CANDIDATE, BASELINE = "cd /t && jit-python -m pytest", "cd /t && python -m pytest"
POLLUTERS = {"test_a.py": "test_a.py::test_pollutes", "test_b.py": "test_b.py::test_pollutes"}


class Reruns:
    """Reruns of a JIT candidate in which each file's polluter breaks every later test of its process
    (and `broken` tests fail alone, `flaky` ones every other time), all recorded. With `jitter`, each
    batch's outcomes come back in a random order of completion, as real lanes finish them."""

    def __init__(self, broken: Sequence[str] = (), flaky: Sequence[str] = (), jitter: bool = False) -> None:
        self.made: list[Request] = []
        self.broken, self.flaky, self.jitter = set(broken), set(flaky), jitter
        self._lock = threading.Lock()

    def outcomes(self, requests: Sequence[Request]) -> list[dict[str, str]]:
        found: list[dict[str, str]] = [{} for _ in requests]
        order = list(range(len(requests)))
        if self.jitter:
            random.shuffle(order)
            time.sleep(random.random() / 100)
        for index in order:
            with self._lock:
                self.made.append(requests[index])
            found[index] = {nodeid: self._one(requests[index], nodeid) for nodeid in requests[index].nodeids}
        return found

    def _one(self, request: Request, nodeid: str) -> str:
        if request.prefix == BASELINE:
            return "passed"
        if nodeid in self.broken or (nodeid in self.flaky and sum(nodeid in r.nodeids for r in self.made) % 2):
            return "failed"
        polluter = POLLUTERS[nodeid.split("::")[0]]
        return "failed" if polluter in request.nodeids[:request.nodeids.index(nodeid)] else "passed"

    def count(self, prefix: str, polluted: bool | None = None) -> int:
        """Reruns made in `prefix`'s configuration (with a polluter in them, or without)."""
        return sum(r.prefix == prefix and (polluted is None or (set(POLLUTERS.values()) & set(r.nodeids) != set())
                                             == polluted) for r in self.made)


def _regression(nodeid: str) -> Regression:
    return Regression(test=nodeid, module=nodeid.split(".py")[0], baseline="passed", candidate="failed", detail="",
                      classification="", replay=f"{CANDIDATE} {nodeid}", baseline_replay=f"{BASELINE} {nodeid}",
                      nodeid=nodeid)


def _order(file: str, count: int) -> list[str]:
    """`count` tests of `file` in run order, its polluter tenth; victims are picked from after it."""
    tests = [f"{file}::test_{n:02d}" for n in range(count)]
    tests[9] = POLLUTERS[file]
    return tests


def _judge(reruns: Reruns, victims: Sequence[str], orders: dict[str, list[str]], seconds=None):
    lines: list[str] = []
    confirmation = Confirmation(reruns, K, lines.append, jobs=2, seconds=seconds)
    verdicts = confirmation.judge([_regression(v) for v in victims], orders)
    return verdicts, confirmation, lines


def test_one_bisection_explains_a_group_after_one_polluter_at_k_plus_k_reruns_each():
    """Four regressions after one polluter: each passes its rerun alone, one bisection finds the
    polluter, and then each fails after it K of K in the candidate and passes K of K in the baseline,
    all tried at once: 1 + 2K reruns each, and one bisection whatever the size of the group."""
    orders = {"test_a": _order("test_a.py", 64)}
    victims = [orders["test_a"][n] for n in (63, 20, 41, 12)]
    reruns = Reruns()
    verdicts, confirmation, lines = _judge(reruns, victims, orders)
    assert {test: (v.confirmed, v.polluters) for test, v in verdicts.items()} == {
        v: (True, ("test_a.py::test_pollutes",)) for v in victims}
    assert confirmation.bisections == 1
    first = orders["test_a"][12]  # the fewest tests before it: bisected
    assert verdicts[first].confirmation == (
        "order-dependent: alone: candidate passed 1/1; after 1 earlier test(s) (bisected for it): candidate failed "
        "2/2, baseline passed 2/2")
    assert verdicts[victims[0]].confirmation == (
        f"order-dependent: alone: candidate passed 1/1; after 1 earlier test(s) (the set bisected for {first}): "
        "candidate failed 2/2, baseline passed 2/2")
    after = [r for r in reruns.made if r.nodeids[0] == "test_a.py::test_pollutes" and len(r.nodeids) == 2]
    assert sorted(r.nodeids[1] for r in after if r.prefix == CANDIDATE and r.nodeids[1] != first) == sorted(
        [v for v in victims if v != first] * K)
    assert reruns.count(BASELINE) == 4 * K and reruns.count(BASELINE, polluted=False) == 0
    bisection = len(reruns.made) - 4 - 4 * 2 * K
    assert 1 <= bisection <= 8, bisection
    assert order_summary(verdicts.values(), 1) == "order dependence: 4 regressions explained by 1 polluter set, 1 bisection"
    assert lines[-1] == (f"test_a: after test_a.py::test_pollutes (bisected for {first}): 4 of 4 regressions tried "
                         "fail every time in the candidate and pass in the baseline")


def test_a_regression_that_fails_alone_is_compared_alone_and_one_that_does_not_every_time_is_flaky():
    orders = {"test_a": _order("test_a.py", 20)}
    broken, flaky = orders["test_a"][3], orders["test_a"][4]
    reruns = Reruns(broken=[broken], flaky=[flaky])
    verdicts, confirmation, _ = _judge(reruns, [broken, flaky], orders)
    assert (verdicts[broken].confirmed, verdicts[broken].confirmation) == (
        True, "alone: candidate failed 2/2, baseline passed 2/2")
    assert (verdicts[flaky].confirmed, verdicts[flaky].confirmation) == (
        False, "flaky: alone: candidate failed 1/2, passed 1/2, baseline passed 2/2")
    # Each alone once; failing, K - 1 more times alone and K times in the baseline: no bisection.
    assert len(reruns.made) == 2 * (1 + (K - 1) + K) and confirmation.bisections == 0


def test_a_set_is_tried_only_where_it_ran_before_the_test_and_each_file_is_bisected_apart():
    """A set from another file could not have caused the failure (each file ran in its own process):
    two files with a polluter each cost a bisection each, and never a try across them."""
    orders = {"test_a": _order("test_a.py", 30), "test_b": _order("test_b.py", 30)}
    victims = [orders["test_a"][15], orders["test_a"][25], orders["test_b"][12], orders["test_b"][29]]
    reruns = Reruns(jitter=True)
    verdicts, confirmation, lines = _judge(reruns, victims, orders)
    assert confirmation.bisections == 2
    assert {test: v.polluters for test, v in verdicts.items()} == {
        v: (POLLUTERS[v.split("::")[0]],) for v in victims}
    crossed = [r for r in reruns.made if len({n.split("::")[0] for n in r.nodeids}) > 1]
    assert crossed == []
    assert [line.split(":")[0] for line in lines[2:]] == ["test_a", "test_b"]  # file order, whichever ends first


def test_a_regression_the_known_set_does_not_explain_gets_its_own_bisection():
    """Two polluters in one file, each breaking the tests after it until the next one: the first set
    found does not explain the later group, which is bisected once, not once per regression."""
    orders = {"test_a": _order("test_a.py", 40)}
    second = "test_a.py::test_30"
    early, late = [orders["test_a"][n] for n in (12, 20)], [orders["test_a"][n] for n in (33, 36, 39)]

    class TwoPolluters(Reruns):
        def _one(self, request: Request, nodeid: str) -> str:
            before = request.nodeids[:request.nodeids.index(nodeid)]
            if request.prefix == BASELINE:
                return "passed"
            return "failed" if (second if nodeid in late else POLLUTERS["test_a.py"]) in before else "passed"

    reruns = TwoPolluters()
    verdicts, confirmation, _ = _judge(reruns, [*early, *late], orders)
    assert confirmation.bisections == 2
    assert {test: v.polluters for test, v in verdicts.items()} == {
        **{v: ("test_a.py::test_pollutes",) for v in early}, **{v: (second,) for v in late}}
    assert all(v.confirmed for v in verdicts.values())
    assert order_summary(verdicts.values(), 2) == "order dependence: 5 regressions explained by 2 polluter sets, 2 bisections"


def test_the_same_reruns_in_any_order_of_completion_give_the_same_verdicts_and_announcements():
    orders = {"test_a": _order("test_a.py", 30), "test_b": _order("test_b.py", 30)}
    victims = [orders["test_a"][15], orders["test_a"][2], orders["test_b"][12], orders["test_b"][29]]
    seen = {repr(_judge(Reruns(broken=[orders["test_a"][2]], jitter=True), victims, orders)[::2]) for _ in range(5)}
    assert len(seen) == 1


def test_bisection_splits_by_recorded_time_and_never_reruns_a_slow_test_that_does_not_matter():
    """test_custom_ops.py's shape: a 38 s test two places before the polluter, among tests of
    milliseconds. Halves by count would rerun it at every step; halves by time try the quick part first."""
    earlier = [f"t::test_{n}" for n in range(8)]
    seconds = dict.fromkeys(earlier, 0.003) | {"t::test_5": 38.0}
    calls: list[list[str]] = []

    def reproduces(subset):
        calls.append(list(subset))
        return "t::test_7" in subset

    assert smallest_polluting_set(earlier, reproduces, seconds) == ("t::test_7",)
    assert not any("t::test_5" in call for call in calls), calls
    calls.clear()
    assert smallest_polluting_set(earlier, reproduces) == ("t::test_7",)  # by count, without times
    assert any("t::test_5" in call for call in calls)
