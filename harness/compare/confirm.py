"""Confirmation: rerun each regression alone and K times in both configurations before calling it one.

The first JIT baselines' apparent regressions were test-order noise and flaky tests
(docs/background.md §2). What each verdict rests on (K = `--confirm`):

- confirmed: alone, it failed K of K reruns in the candidate and passed K of K in the baseline;
- confirmed order-dependent, after polluters P: alone, it passed in the candidate (one rerun);
  P then the test failed K of K in the candidate and passed K of K in the baseline. The baseline
  is not rerun alone: the verdict compares the sequence that fails, and the baseline passes that;
- flaky: anything else (it failed sometimes alone, the earlier tests did not make it fail again,
  or the baseline failed too). A replay that ran no test, or no replay command, decides nothing.

The cost is reruns (a candidate rerun under CinderX at threshold 1 costs seconds: its JIT compiles
everything the test calls), so none is made whose answer cannot change a verdict, and those that
do not depend on each other run `jobs` at a time (Rerunner.outcomes), in rounds:

1. every regression alone in the candidate, once: failing alone, or passing alone, tells which
   evidence decides it. Each file's first regression goes first, and if it passes alone its
   bisection (step 3) starts while the others' reruns alone go on;
2. those that failed: K - 1 more times alone in the candidate and K times in the baseline;
3. per file, those that passed, in run order (the first has the fewest tests before it: the
   cheapest bisection). The first is bisected (bisect.py: its earlier tests, one rerun per step);
   the polluter set found is then tried on every one left in the file that ran that set earlier:
   the set then the test, K times in each configuration, all at once. One polluting test usually
   breaks many tests after it (PyTorch's test_custom_ops.py under CinderX: every regression after
   one test), so one bisection explains them all. What the set does not explain is bisected next,
   the first in run order, and so on. Sets are not tried across files: each file ran in a process
   of its own, so they could not have caused the failure. Files go concurrently.

A verdict depends only on its reruns' outcomes, never on their timing; results and announcements
come in a fixed order (files in order, each in run order).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

from harness.compare import replay
from harness.compare.bisect import smallest_polluting_set
from harness.compare.diff import Comparison, Flaky, Regression
from harness.compare.replay import Request, Rerunner
from harness.compare.sides import Side
from harness.protocol import BAD_OUTCOMES, Outcome, tallied
from harness.record.junit import replay_prefix

Announce = Callable[[str], None]


@dataclass(frozen=True)
class Reruns:
    """How many times each rerun is made, how long one may take, in what process (warm: a fork of a
    collected process per configuration and file, where that is safe; or fresh), how many at once."""

    count: int
    timeout: float
    restart: str = "warm"
    jobs: int = 1


@dataclass(frozen=True)
class Verdict:
    confirmed: bool | None  # None: could not be rerun (no replay command, or the replay ran no test)
    confirmation: str
    polluters: tuple[str, ...] = ()


class Runs(Protocol):
    """What confirmation needs of a Rerunner: the outcomes of independent reruns, in order."""

    def outcomes(self, requests: Sequence[Request]) -> list[dict[str, str]]: ...


def confirm(comparison: Comparison, candidate: Side, reruns: Reruns, announce: Announce,
            known_flaky: Mapping[str, str] | None = None) -> Comparison:
    """The comparison with each regression confirmed, or moved to flaky. A test on the history's
    flaky list (`known_flaky`: test -> evidence) is labelled flaky with that evidence, not rerun."""
    flaky = list(comparison.flaky)
    todo: list[Regression] = []
    for regression in sorted(comparison.regressions, key=lambda r: r.test):
        evidence = (known_flaky or {}).get(regression.test)
        if evidence is None:
            todo.append(regression)
            continue
        announce(f"flaky in history, not rerun: {regression.test}")
        flaky.append(Flaky(regression.test, regression.module, regression.baseline, regression.candidate,
                           f"flaky in history: {evidence}", regression.replay, confirmed=False))
    with Rerunner(reruns.timeout, reruns.restart, jobs=reruns.jobs) as rerunner:
        orders, seconds = run_orders(candidate, {r.module for r in todo})
        confirmation = Confirmation(rerunner, reruns.count, announce, reruns.jobs, seconds)
        verdicts = confirmation.judge(todo, orders)
        announce(f"confirmation: {rerunner.summary()}")
        if confirmation.bisections:
            announce(order_summary(verdicts.values(), confirmation.bisections))
    kept: list[Regression] = []
    for regression in comparison.regressions:
        verdict = verdicts.get(regression.test)
        if verdict is None:  # flaky in history: already listed
            continue
        confirmed = replace(regression, confirmed=verdict.confirmed, confirmation=verdict.confirmation,
                            polluters=verdict.polluters)
        if verdict.confirmed is False:
            flaky.append(Flaky(regression.test, regression.module, regression.baseline, regression.candidate,
                               verdict.confirmation, regression.replay, confirmed=False))
        else:
            kept.append(confirmed)
    modules = tuple(replace(row, regressions=sum(r.module == row.module for r in kept)) for row in comparison.modules)
    return replace(comparison, regressions=tuple(kept), flaky=tuple(sorted(flaky, key=lambda f: f.test)),
                   modules=modules)


def run_orders(candidate: Side, modules: set[str]) -> tuple[dict[str, list[str]], dict[str, float]]:
    """Node ids of each of `modules`' tests, in run order (JUnit order), and the seconds each took,
    read in one pass of the side."""
    orders: dict[str, list[str]] = {module: [] for module in modules}
    seconds: dict[str, float] = {}
    for result in candidate.results:
        if result.module in orders and result.nodeid:
            orders[result.module].append(result.nodeid)
            seconds[result.nodeid] = result.duration
    return orders, seconds


def earlier_in(orders: Mapping[str, list[str]], regression: Regression) -> list[str]:
    """Node ids of the tests that ran before this one in its file, in run order."""
    order = orders.get(regression.module, [])
    return order[: order.index(regression.nodeid)] if regression.nodeid in order else order


def order_summary(verdicts: Iterable[Verdict], bisections: int) -> str:
    """`order dependence: 10 regressions explained by 1 polluter set, 1 bisection`: what learning saved."""
    sets = Counter(v.polluters for v in verdicts if v.confirmed and v.polluters)
    explained = sum(sets.values())
    return (f"order dependence: {explained} regression{'s' * (explained != 1)} explained by {len(sets)} "
            f"polluter set{'s' * (len(sets) != 1)}, {bisections} bisection{'s' * (bisections != 1)}")


@dataclass(frozen=True)
class _Case:
    """A regression with its replay prefixes in both configurations, and its outcomes rerun alone."""

    regression: Regression
    candidate: str
    baseline: str
    alone: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        return self.regression.nodeid

    @property
    def file(self) -> str:
        return self.regression.module


class Confirmation:
    """The rounds of reruns of one confirmation (module docstring), over any `Runs`."""

    def __init__(self, runs: Runs, count: int, announce: Announce, jobs: int = 1,
                 seconds: Mapping[str, float] | None = None) -> None:
        self.runs = runs
        self.count = count
        self.announce = announce
        self.jobs = jobs
        self.seconds = seconds or {}  # node id -> seconds it took in the candidate's run (bisection splits)
        self.bisections = 0  # regressions that no polluter set found before explained, bisected

    def judge(self, regressions: Sequence[Regression], orders: Mapping[str, list[str]]) -> dict[str, Verdict]:
        """Each regression's verdict, by test."""
        verdicts: dict[str, Verdict] = {}
        cases: list[_Case] = []
        for regression in regressions:
            candidate = replay_prefix(regression.replay, regression.nodeid)
            baseline = replay_prefix(regression.baseline_replay, regression.nodeid)
            if candidate and baseline:
                cases.append(_Case(regression, candidate, baseline))
            else:
                verdicts[regression.test] = Verdict(
                    None, "not confirmed: no replay command recorded on both sides (plain JUnit XML)")
        if not cases:
            return verdicts
        cases.sort(key=lambda case: (case.file, _position(orders, case)))
        self.announce(f"confirming {len(cases)} regression{'s' * (len(cases) != 1)}: {self.count} rerun"
                      f"{'s' * (self.count != 1)} per check and configuration, {self.jobs} at a time")
        once, bisected = self._alone_and_first_bisections(cases, orders)
        cases = [replace(case, alone=tuple(once[case.target])) for case in cases]
        failing = [case for case in cases if _all_bad(case.alone) and replay.NOT_RUN not in case.alone]
        more = self._each([(prefix, (case.target,), times) for case in failing
                           for prefix, times in ((case.candidate, self.count - 1), (case.baseline, self.count))])
        passing: list[_Case] = []
        for case in cases:
            if case in failing:
                outcomes = more.get(case.target, [])
                case = replace(case, alone=case.alone + tuple(outcomes[:self.count - 1]))
                verdict = _alone(case.alone, outcomes[self.count - 1:])
            else:
                verdict = _alone(case.alone, None)
            if verdict is None:
                passing.append(case)
            else:
                verdicts[case.regression.test] = verdict
        self.announce(f"alone: {len(passing)} passed (order dependence suspected), {len(failing)} failed")
        verdicts.update(self._order_dependence(passing, orders, bisected))
        return verdicts

    def _alone_and_first_bisections(self, cases: Sequence[_Case], orders: Mapping[str, list[str]]
                                    ) -> tuple[dict[str, list[str]], dict[str, tuple[str, ...] | None]]:
        """Every regression alone in the candidate, once, by test; and the polluters of each file's first
        regression, bisected as soon as it passed alone, while the others' reruns alone go on (a
        bisection is one rerun at a time: it would leave the other lanes idle)."""
        firsts = list({case.file: case for case in reversed(cases)}.values())
        once = self._each([(case.candidate, (case.target,), 1) for case in firsts])
        rest = [case for case in cases if case.target not in once]
        ordered = [case for case in firsts if _all_passed(once[case.target])]
        with ThreadPoolExecutor(max_workers=1 + len(ordered), thread_name_prefix="confirm") as pool:
            later = pool.submit(self._each, [(case.candidate, (case.target,), 1) for case in rest])
            early = {case.target: pool.submit(self._bisect, case, orders) for case in ordered}
            once.update(later.result())
            return once, {target: future.result() for target, future in early.items()}

    def _bisect(self, case: _Case, orders: Mapping[str, list[str]]) -> tuple[str, ...] | None:
        return smallest_polluting_set(earlier_in(orders, case.regression), lambda subset: self._bad(case, subset),
                                      self.seconds)

    def _order_dependence(self, passing: Sequence[_Case], orders: Mapping[str, list[str]],
                          bisected: Mapping[str, tuple[str, ...] | None]) -> dict[str, Verdict]:
        """The verdicts of the regressions that pass without their earlier tests, file by file (files
        at the same time); `bisected`: polluters already found, by test."""
        files: dict[str, list[_Case]] = {}
        for case in passing:
            files.setdefault(case.file, []).append(case)
        verdicts: dict[str, Verdict] = {}
        if not files:
            return verdicts
        with ThreadPoolExecutor(max_workers=len(files), thread_name_prefix="confirm-file") as pool:
            futures = [pool.submit(self._file, sorted(cases, key=lambda case: _position(orders, case)), orders,
                                   bisected)
                       for _, cases in sorted(files.items())]
            for future in futures:  # in file order: the same announcements whichever file finishes first
                found, lines, bisections = future.result()
                verdicts.update(found)
                self.bisections += bisections
                for line in lines:
                    self.announce(line)
        return verdicts

    def _file(self, cases: list[_Case], orders: Mapping[str, list[str]],
              bisected: Mapping[str, tuple[str, ...] | None]) -> tuple[dict[str, Verdict], list[str], int]:
        """One file's regressions that pass without their earlier tests, in run order: bisect the first
        unexplained one, try what it finds on all the others at once, until each has a verdict.
        Returns the verdicts, the announcements and the number of bisections."""
        verdicts: dict[str, Verdict] = {}
        lines: list[str] = []
        pending = list(cases)
        bisections = 0
        while pending:
            first = pending[0]
            earlier = earlier_in(orders, first.regression)
            bisections += 1
            polluters = bisected[first.target] if first.target in bisected else self._bisect(first, orders)
            if polluters is None:
                tests = f"{len(earlier)} test{'' if len(earlier) == 1 else 's'}"
                verdicts[first.regression.test] = Verdict(
                    False, f"flaky: {_without(first)}; the {tests} before it in its file did not make it fail again")
                lines.append(f"{first.target}: the {tests} before it did not make it fail again")
                pending.pop(0)
                continue
            tried = [case for case in pending if set(polluters) <= set(earlier_in(orders, case.regression))]
            found = self._after(polluters, first, tried)
            verdicts.update(found)
            explained = sum(bool(verdict.confirmed) for verdict in found.values())
            lines.append(f"{first.file}: after {' then '.join(polluters)} (bisected for {first.target}): {explained} "
                         f"of {len(tried)} regression{'s' * (len(tried) != 1)} tried fail every time in the candidate "
                         "and pass in the baseline")
            pending = [case for case in pending if case.regression.test not in verdicts]
        return verdicts, lines, bisections

    def _after(self, polluters: tuple[str, ...], first: _Case, tried: list[_Case]) -> dict[str, Verdict]:
        """Verdicts of the `tried` regressions the polluters explain (and of `first` in any case): the
        polluters then the test, K times in each configuration, all at once."""
        seen = self._each([(prefix, (*polluters, case.target), self.count) for case in tried
                           for prefix in (case.candidate, case.baseline)])
        verdicts: dict[str, Verdict] = {}
        for case in tried:
            outcomes = seen[case.target]
            how = "bisected for it" if case is first else f"the set bisected for {first.target}"
            verdict = _after_polluters(polluters, case, outcomes[:self.count], outcomes[self.count:], how)
            if verdict.confirmed or case is first:
                verdicts[case.regression.test] = verdict
        return verdicts

    def _bad(self, case: _Case, subset: Sequence[str]) -> bool:
        """One bisection step: does the candidate fail after `subset`?"""
        [found] = self.runs.outcomes([Request(case.candidate, (*subset, case.target))])
        return found.get(case.target) in BAD_OUTCOMES

    def _each(self, wanted: Sequence[tuple[str, tuple[str, ...], int]]) -> dict[str, list[str]]:
        """Reruns of each (prefix, node ids, times), all at once: each node id's outcomes, in the order asked."""
        requests = [Request(prefix, nodeids) for prefix, nodeids, times in wanted for _ in range(times)]
        found: dict[str, list[str]] = {}
        for outcomes in self.runs.outcomes(requests) if requests else []:
            for nodeid, outcome in outcomes.items():
                found.setdefault(nodeid, []).append(outcome)
        return found


def _position(orders: Mapping[str, list[str]], case: _Case) -> int:
    return len(earlier_in(orders, case.regression))


def _without(case: _Case) -> str:
    """What its reruns alone showed: `alone: candidate passed 1/1`."""
    return f"alone: candidate {_tally(case.alone)}"


def _alone(alone: Sequence[str], before: list[str] | None) -> Verdict | None:
    """The verdict the reruns alone give, or None when it passed alone every time (order dependence)."""
    if replay.NOT_RUN in alone or (before is not None and replay.NOT_RUN in before):
        baseline = f"; baseline {_tally(before)}" if before is not None else ""
        return Verdict(None, f"not confirmed: the replay ran no test (candidate {_tally(alone)}{baseline})")
    if before is not None:  # it failed its first rerun alone in the candidate
        seen = f"alone: candidate {_tally(alone)}, baseline {_tally(before)}"
        return Verdict(True, seen) if _all_bad(alone) and _all_passed(before) else Verdict(False, f"flaky: {seen}")
    if _all_passed(alone):
        return None
    return Verdict(False, f"flaky: alone: candidate {_tally(alone)}")


def _after_polluters(polluters: tuple[str, ...], case: _Case, after: list[str], before: list[str],
                     how: str) -> Verdict:
    """The verdict of a test that passed without its earlier tests, once the polluters then the test
    ran K times in the candidate (`after`) and K times in the baseline (`before`)."""
    seen = (f"{_without(case)}; after {len(polluters)} earlier test(s) ({how}): candidate {_tally(after)}, "
            f"baseline {_tally(before)}")
    if _all_bad(after) and _all_passed(before):
        return Verdict(True, f"order-dependent: {seen}", polluters)
    return Verdict(False, f"flaky: {seen}", polluters)


def _all_bad(outcomes: Sequence[str]) -> bool:
    return all(outcome in BAD_OUTCOMES for outcome in outcomes)


def _all_passed(outcomes: Sequence[str]) -> bool:
    return all(outcome == Outcome.PASSED for outcome in outcomes)


def _tally(outcomes: Sequence[str]) -> str:
    """`failed 3/3` or `passed 2/3, failed 1/3`."""
    return ", ".join(f"{outcome} {n}/{len(outcomes)}" for outcome, n in tallied(outcomes))
