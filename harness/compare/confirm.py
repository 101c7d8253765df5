"""Confirmation: rerun each regression alone, K times, in both configurations, before calling it one.

The first JIT baselines' apparent regressions were test-order noise and flaky tests
(docs/background.md §2). A regression is confirmed when it fails every time alone in the candidate
and passes every time in the baseline; when it fails sometimes, it is flaky. When it passes every
time alone, the tests that ran before it in its file are rerun with it: if they make it fail, they
are bisected to the smallest set that does (order dependence), and that set is rerun K times in both
configurations like the test alone was. Anything that does not reproduce moves to `flaky`.

Confirmation learns: one polluting test usually breaks many tests after it (PyTorch's
test_custom_ops.py under CinderX: every regression after one test), so a polluter set found for one
regression is tried first for every later one whose file ran it earlier, over the whole
confirmation (every file of the run): the set then the test, K times in the candidate, K times in
the baseline. Only a regression that no known set explains is bisected, and the set it finds joins
the known ones. Sets from another file are not tried: each file ran in a process of its own, so
they could not have caused the failure. Regressions are confirmed in run order, so the first one
bisected has the fewest tests before it: the cheapest bisection.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from harness.compare import replay
from harness.compare.bisect import smallest_polluting_set
from harness.compare.diff import Comparison, Flaky, Regression
from harness.compare.replay import Rerunner
from harness.protocol import BAD_OUTCOMES, Outcome
from harness.record.junit import replay_prefix
from harness.compare.sides import Side

Announce = Callable[[str], None]


@dataclass(frozen=True)
class Reruns:
    """How many times each rerun is made, how long one may take, and in what process: warm (a fork
    of a collected process per configuration and file, where that is safe) or fresh."""

    count: int
    timeout: float
    restart: str = "warm"


@dataclass(frozen=True)
class Verdict:
    confirmed: bool | None  # None: could not be rerun (no replay command, or the replay ran no test)
    confirmation: str
    polluters: tuple[str, ...] = ()


def confirm(comparison: Comparison, candidate: Side, reruns: Reruns, announce: Announce,
            known_flaky: Mapping[str, str] | None = None) -> Comparison:
    """The comparison with each regression confirmed, or moved to flaky. A test on the history's
    flaky list (`known_flaky`: test -> evidence) is labelled flaky with that evidence, not rerun."""
    kept: list[Regression] = []
    flaky = list(comparison.flaky)
    verdicts: dict[str, Verdict] = {}
    known = Polluters()
    orders = run_orders(candidate, {r.module for r in comparison.regressions})
    # In run order: the regression that ran first has the fewest tests before it, so if it needs a
    # bisection that one is the cheapest, and the polluters it finds are then known for the later ones.
    ordered = sorted(comparison.regressions, key=lambda r: (r.module, len(earlier_in(orders, r)), r.test))
    with Rerunner(reruns.timeout, reruns.restart) as rerunner:
        for number, regression in enumerate(ordered, 1):
            evidence = (known_flaky or {}).get(regression.test)
            if evidence is not None:
                announce(f"flaky in history, not rerun {number}/{len(comparison.regressions)}: {regression.test}")
                flaky.append(Flaky(regression.test, regression.module, regression.baseline, regression.candidate,
                                   f"flaky in history: {evidence}", regression.replay, confirmed=False))
                continue
            announce(f"confirming {number}/{len(comparison.regressions)}: {regression.test}")
            verdicts[regression.test] = judge(regression, earlier_in(orders, regression), reruns.count, rerunner,
                                              known)
        announce(f"confirmation: {rerunner.summary()}")
        if known.sets:
            announce(known.summary())
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


def run_orders(candidate: Side, modules: set[str]) -> dict[str, list[str]]:
    """Node ids of each of `modules`' tests, in run order (JUnit order), read in one pass of the side."""
    orders: dict[str, list[str]] = {module: [] for module in modules}
    for result in candidate.results:
        if result.module in orders and result.nodeid:
            orders[result.module].append(result.nodeid)
    return orders


def earlier_in(orders: Mapping[str, list[str]], regression: Regression) -> list[str]:
    """Node ids of the tests that ran before this one in its file, in run order."""
    order = orders.get(regression.module, [])
    return order[: order.index(regression.nodeid)] if regression.nodeid in order else order


@dataclass
class Polluters:
    """The polluter sets confirmation has found so far, each with the regressions it explained: tried
    on later regressions, the set that explained most first (ties: the one found first)."""

    sets: dict[tuple[str, ...], int] = field(default_factory=dict)
    bisections: int = 0  # regressions that no known set explained, bisected

    def candidates(self, earlier: Sequence[str]) -> list[tuple[str, ...]]:
        """Known sets whose every test ran before the regression in its file, in run order."""
        ran = set(earlier)
        return [found for found, _ in sorted(self.sets.items(), key=lambda item: -item[1]) if ran.issuperset(found)]

    def explained(self, polluters: tuple[str, ...]) -> None:
        self.sets[polluters] = self.sets.get(polluters, 0) + 1

    def summary(self) -> str:
        """`order dependence: 10 regressions explained by 1 polluter set, 1 bisection`."""
        explained = sum(self.sets.values())
        return (f"order dependence: {explained} regression{'s' * (explained != 1)} explained by {len(self.sets)} "
                f"polluter set{'s' * (len(self.sets) != 1)}, {self.bisections} bisection{'s' * (self.bisections != 1)}")


def judge(regression: Regression, earlier: Sequence[str], count: int, rerunner: Rerunner,
          known: Polluters | None = None) -> Verdict:
    target = regression.nodeid
    candidate = replay_prefix(regression.replay, target)
    baseline = replay_prefix(regression.baseline_replay, target)
    if not (candidate and baseline):
        return Verdict(None, "not confirmed: no replay command recorded on both sides (plain JUnit XML)")
    rerunner.prepare([candidate, baseline], target)
    alone = _outcomes(rerunner, candidate, [target], target, count)
    before = _outcomes(rerunner, baseline, [target], target, count)
    if replay.NOT_RUN in alone or replay.NOT_RUN in before:
        return Verdict(None, f"not confirmed: the replay ran no test (candidate {_tally(alone)}; "
                             f"baseline {_tally(before)})")
    seen = f"alone: candidate {_tally(alone)}, baseline {_tally(before)}"
    if _all_bad(alone) and _all_passed(before):
        return Verdict(True, seen)
    if not (_all_passed(alone) and _all_passed(before)):
        return Verdict(False, f"flaky: {seen}")
    return _order_dependence(candidate, baseline, target, earlier, count, rerunner, seen,
                             known if known is not None else Polluters())


def _order_dependence(candidate: str, baseline: str, target: str, earlier: Sequence[str], count: int,
                      rerunner: Rerunner, seen: str, known: Polluters) -> Verdict:
    """It passes alone: find the earlier tests that make it fail (a known polluter set first, else by
    bisection), and check they do so every time."""
    for polluters in known.candidates(earlier):
        after = _outcomes(rerunner, candidate, [*polluters, target], target, count, stop=Outcome.PASSED)
        if not _all_bad(after):
            continue  # this set does not explain it (or not every time): the next one, or a bisection
        verdict = _after_polluters(candidate, baseline, target, polluters, after, count, rerunner,
                                   f"{seen}; a known polluter set")
        if verdict.confirmed:
            known.explained(polluters)
            return verdict

    def reproduces(subset: Sequence[str]) -> bool:
        return rerunner.outcome(candidate, [*subset, target], target) in BAD_OUTCOMES

    known.bisections += 1
    polluters = smallest_polluting_set(earlier, reproduces)
    if polluters is None:
        earlier_tests = f"{len(earlier)} test{'' if len(earlier) == 1 else 's'}"
        return Verdict(False, f"flaky: {seen}; the {earlier_tests} before it in its file did not make it fail again")
    after = _outcomes(rerunner, candidate, [*polluters, target], target, count)
    verdict = _after_polluters(candidate, baseline, target, polluters, after, count, rerunner, seen)
    if verdict.confirmed:
        known.explained(polluters)
    return verdict


def _after_polluters(candidate: str, baseline: str, target: str, polluters: tuple[str, ...], after: list[str],
                     count: int, rerunner: Rerunner, seen: str) -> Verdict:
    """The verdict once the polluters then the test ran K times in the candidate (`after`): the same
    K times in the baseline decide whether the failure is the candidate's."""
    before = _outcomes(rerunner, baseline, [*polluters, target], target, count)
    seen = f"{seen}; after {len(polluters)} earlier test(s): candidate {_tally(after)}, baseline {_tally(before)}"
    if _all_bad(after) and _all_passed(before):
        return Verdict(True, f"order-dependent: {seen}", polluters)
    return Verdict(False, f"flaky: {seen}", polluters)


def _outcomes(rerunner: Rerunner, prefix: str, nodeids: list[str], target: str, count: int,
              stop: str | None = None) -> list[str]:
    """K reruns' outcomes; with `stop`, none after the first that ended so (the rest cannot agree)."""
    seen: list[str] = []
    for _ in range(count):
        seen.append(rerunner.outcome(prefix, nodeids, target))
        if seen[-1] == stop:
            break
    return seen


def _all_bad(outcomes: list[str]) -> bool:
    return all(outcome in BAD_OUTCOMES for outcome in outcomes)


def _all_passed(outcomes: list[str]) -> bool:
    return all(outcome == Outcome.PASSED for outcome in outcomes)


def _tally(outcomes: list[str]) -> str:
    """`failed 3/3` or `passed 2/3, failed 1/3`."""
    counts = Counter(outcomes)
    return ", ".join(f"{outcome} {n}/{len(outcomes)}" for outcome, n in counts.most_common())
