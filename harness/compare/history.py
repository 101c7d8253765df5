"""Questions about time, answered from the results database (harness/record/database.py).

A *series* is one configuration's runs of one tier at one JIT threshold (and one shard: shard I of
N always runs the same files). Over the last WINDOW runs of a series:

- per test: its outcome timeline, how often it flipped between passing and failing (flip rate, with
  the lower bound of its Wilson score interval, so three flips in four runs and thirty in forty are
  told apart), the run since which it fails ("new since") or in which it recovered;
- per run pair (the newest run against the one before): new failures, recovered tests, persistent
  failures, and tests slower beyond their own noise (once they have a history to measure it on);
- the flaky list: tests that flipped at least FLAKY_FLIPS times with a flip rate whose lower bound
  is at least FLAKY_BOUND. `diff --confirm` labels a regression on that list flaky, with this
  evidence, instead of rerunning it as a fresh regression.

Only tests that failed at least once in the window are read back (a partial index keeps them), so
the history of a series of million-test runs costs what its failures cost.
"""

from __future__ import annotations

import math
import sqlite3
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.protocol import BAD_OUTCOMES, Outcome
from harness.record.database import FAILING, opened
from harness.record.model import RunRecord, side_label

WINDOW = 30  # runs of a series looked back over: a month of nightly runs
CONFIDENCE = 0.95  # of the Wilson interval around a flip rate
FLAKY_FLIPS = 2  # one flip is a change (a regression, or a fix); flaky needs a failure and a recovery
FLAKY_BOUND = 0.2  # a flip rate credibly above one flip in five transitions: PFPF... has 0.57 after 6 runs
SLOWER_RATIO = 1.5  # a test slower than this times its usual duration ...
SLOWER_SECONDS = 0.25  # ... by at least this much (shorter changes are scheduler noise on shared machines) ...
SLOWER_SPREADS = 4.0  # ... and beyond this many robust standard deviations (1.4826 x MAD) of its own history,
SLOWER_HISTORY = 3  # ... judged only with this many earlier passing runs: one earlier run says nothing of noise


@dataclass(frozen=True)
class Series:
    configuration: str
    tier: str
    threshold: int | None
    shard: str | None = None

    @property
    def label(self) -> str:
        shard = f" shard {self.shard}" if self.shard else ""
        return f"{side_label(self.configuration, self.threshold)} {self.tier}{shard}"


@dataclass(frozen=True)
class RunPoint:
    """One run in a series' trend."""

    id: int
    directory: str
    started: str
    status: str
    counts: dict[str, int]  # tests per outcome
    compiled: int | None  # functions the JIT compiled (None without a JIT)

    @property
    def name(self) -> str:
        return Path(self.directory).name


@dataclass(frozen=True)
class Timeline:
    """One test over the runs of a series in which it ran, oldest first."""

    test: str
    outcomes: tuple[str, ...]
    runs: tuple[str, ...]  # the run directory names, beside the outcomes
    flips: int  # changes between passing and failing (skips and xfails do not count)
    transitions: int  # consecutive pairs of passing/failing results
    flip_rate: float  # flips / transitions
    lower_bound: float  # of the flip rate's Wilson interval at CONFIDENCE
    flaky: bool  # at least FLAKY_FLIPS flips and a lower bound of at least FLAKY_BOUND
    failing_since: str | None  # the first run of its current failing streak ("new since")
    recovered_in: str | None  # the run that ended its last failing streak, when it passes now
    message: str = ""  # its newest failure's message

    @property
    def evidence(self) -> str:
        """Why it is on the flaky list, in words."""
        return (f"{self.flips} flips in {self.transitions + 1} runs (flip rate {self.flip_rate:.2f}, "
                f"{CONFIDENCE:.0%} lower bound {self.lower_bound:.2f}): {' '.join(self.outcomes)}")


@dataclass(frozen=True)
class Slower:
    """A test slower in the newest run than its own history allows."""

    test: str
    duration: float
    usual: float  # median duration of its earlier passing runs
    spread: float  # 1.4826 x the median absolute deviation of those
    runs: int  # how many earlier runs that is


@dataclass(frozen=True)
class RunPair:
    """The newest run of a series against the one before it."""

    earlier: RunPoint
    later: RunPoint
    new_failures: tuple[Timeline, ...]  # bad in the later run, not in the earlier
    recovered: tuple[Timeline, ...]  # bad in the earlier run, passed in the later
    persistent: tuple[Timeline, ...]  # bad in both
    slower: tuple[Slower, ...]


@dataclass(frozen=True)
class SeriesHistory:
    series: Series
    runs: tuple[RunPoint, ...]  # the trend, oldest first
    latest: RunPair | None  # None with a single run
    flaky: tuple[Timeline, ...]
    failing: tuple[Timeline, ...]  # failing in the newest run, each with the run it fails since
    tests: tuple[Timeline, ...] = ()  # timelines asked for by name (`history --test`)


@dataclass(frozen=True)
class History:
    database: str
    window: int
    series: tuple[SeriesHistory, ...]


def wilson_lower_bound(successes: int, trials: int, confidence: float = CONFIDENCE) -> float:
    """The lower end of the Wilson score interval of successes/trials (0 when there are no trials)."""
    if trials == 0:
        return 0.0
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    rate = successes / trials
    centre = rate + z * z / (2 * trials)
    margin = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials))
    return max(0.0, (centre - margin) / (1 + z * z / trials))


def history(database: Path, window: int = WINDOW, wanted: Callable[[Series], bool] = lambda series: True,
            tests: str | None = None) -> History:
    """The series of the database that are `wanted`, each over its last `window` runs; `tests` (a
    substring of test keys) adds those tests' timelines."""
    with opened(database, create=False) as connection:
        found = [series_history(connection, series, window, tests) for series in _series(connection) if wanted(series)]
    return History(str(database), window, tuple(found))


def series_of(record: RunRecord) -> Series:
    return Series(str(record.configuration.get("name")), record.tier, record.threshold, record.shard)


def flaky_tests(database: Path, series: Iterable[Series], window: int = WINDOW) -> dict[str, tuple[Series, Timeline]]:
    """The flaky list of each series, by test (the first series listing a test wins); empty
    without a database."""
    if not database.is_file():
        return {}
    found: dict[str, tuple[Series, Timeline]] = {}
    with opened(database, create=False) as connection:
        for one in series:
            for timeline in _timelines(connection, _runs(connection, one, window), FAILING):
                if timeline.flaky:
                    found.setdefault(timeline.test, (one, timeline))
    return found


def series_history(connection: sqlite3.Connection, series: Series, window: int = WINDOW,
                   tests: str | None = None) -> SeriesHistory:
    runs = _runs(connection, series, window)
    timelines = _timelines(connection, runs, FAILING)
    return SeriesHistory(
        series, runs, _pair(connection, runs, timelines) if len(runs) > 1 else None,
        flaky=tuple(t for t in timelines if t.flaky), failing=tuple(t for t in timelines if t.failing_since),
        tests=tuple(_timelines(connection, runs, "instr(test, ?) > 0", (tests,))) if tests else ())


def _series(connection: sqlite3.Connection) -> list[Series]:
    return [Series(*row) for row in connection.execute(
        "SELECT DISTINCT configuration, tier, threshold, shard FROM runs ORDER BY tier, configuration, threshold, shard")]


def _runs(connection: sqlite3.Connection, series: Series, window: int) -> tuple[RunPoint, ...]:
    """The last `window` runs of a series, oldest first."""
    rows = connection.execute(
        "SELECT id, directory, started, status, compiled FROM runs WHERE configuration = ? AND tier = ? "
        "AND threshold IS ? AND shard IS ? ORDER BY started DESC LIMIT ?",
        (series.configuration, series.tier, series.threshold, series.shard, window)).fetchall()[::-1]
    counts: dict[int, dict[str, int]] = {row[0]: {} for row in rows}
    for run, outcome, n in connection.execute(
            f"SELECT run, outcome, sum(n) FROM counts WHERE run IN ({_ids(row[0] for row in rows)}) "
            "GROUP BY run, outcome ORDER BY run, outcome"):
        counts[run][outcome] = n
    return tuple(RunPoint(run, directory, started, status, counts[run], compiled)
                 for run, directory, started, status, compiled in rows)


def _ids(runs: Iterable[int]) -> str:
    return ", ".join(str(int(run)) for run in runs)


def _timelines(connection: sqlite3.Connection, runs: tuple[RunPoint, ...], condition: str,
               parameters: tuple = ()) -> list[Timeline]:
    """The timelines of the tests that meet `condition` (SQL on results) in at least one of the runs."""
    ids = _ids(run.id for run in runs)
    order = {run.id: position for position, run in enumerate(runs)}
    seen: dict[str, list[tuple[int, str, str]]] = {}
    for test, run, outcome, message in connection.execute(
            f"SELECT test, run, outcome, message FROM results WHERE run IN ({ids}) AND test IN "
            f"(SELECT DISTINCT test FROM results WHERE run IN ({ids}) AND {condition})", parameters):
        seen.setdefault(test, []).append((order[run], outcome, message or ""))
    names = [run.name for run in runs]
    return [_timeline(test, sorted(points), names) for test, points in sorted(seen.items())]


def _timeline(test: str, points: list[tuple[int, str, str]], names: list[str]) -> Timeline:
    """Flips, bound, "failing since" and "recovered in" of one test's results, oldest first."""
    judged = [(position, outcome in BAD_OUTCOMES) for position, outcome, _ in points
              if outcome == Outcome.PASSED or outcome in BAD_OUTCOMES]
    flips = sum(a[1] != b[1] for a, b in zip(judged, judged[1:]))
    transitions = max(len(judged) - 1, 0)
    streak = None  # the position where the newest failing streak began
    recovered = None
    for (position, bad), previous in zip(judged, [None, *judged]):
        if bad and (previous is None or not previous[1]):
            streak = position
        if not bad and previous is not None and previous[1]:
            recovered = position
    newest_bad = bool(judged) and judged[-1][1]
    failures = [message for _, outcome, message in points if outcome in BAD_OUTCOMES]
    bound = wilson_lower_bound(flips, transitions)
    return Timeline(
        test=test, outcomes=tuple(outcome for _, outcome, _ in points),
        runs=tuple(names[position] for position, _, _ in points), flips=flips, transitions=transitions,
        flip_rate=flips / transitions if transitions else 0.0, lower_bound=bound,
        flaky=flips >= FLAKY_FLIPS and bound >= FLAKY_BOUND,
        failing_since=names[streak] if newest_bad and streak is not None else None,
        recovered_in=names[recovered] if not newest_bad and judged and recovered is not None else None,
        message=failures[-1] if failures else "")


def _pair(connection: sqlite3.Connection, runs: tuple[RunPoint, ...], timelines: list[Timeline]) -> RunPair:
    earlier, later = runs[-2], runs[-1]
    new_failures, recovered, persistent = [], [], []
    for timeline in timelines:
        outcomes = dict(zip(timeline.runs, timeline.outcomes))
        before, after = outcomes.get(earlier.name), outcomes.get(later.name)
        if after in BAD_OUTCOMES:
            (persistent if before in BAD_OUTCOMES else new_failures).append(timeline)
        elif before in BAD_OUTCOMES and after == Outcome.PASSED:
            recovered.append(timeline)
    return RunPair(earlier, later, tuple(new_failures), tuple(recovered), tuple(persistent),
                   tuple(_slower(connection, runs)))


def _slower(connection: sqlite3.Connection, runs: tuple[RunPoint, ...]) -> list[Slower]:
    """Tests of the newest run slower than the run before allows, then judged against their own
    history: only those beyond SLOWER_SPREADS of their usual noise are kept."""
    earlier, later = runs[-2], runs[-1]
    candidates = connection.execute(
        "SELECT y.test, y.duration FROM results AS y JOIN results AS x ON x.run = ? AND x.test = y.test "
        "WHERE y.run = ? AND y.outcome = ? AND x.outcome = ? AND y.duration >= x.duration * ? "
        "AND y.duration - x.duration >= ? ORDER BY y.test",
        (earlier.id, later.id, Outcome.PASSED, Outcome.PASSED, SLOWER_RATIO, SLOWER_SECONDS)).fetchall()
    found = []
    history_ids = _ids(run.id for run in runs[:-1])
    for test, duration in candidates:
        durations = [row[0] for row in connection.execute(
            f"SELECT duration FROM results WHERE run IN ({history_ids}) AND test = ? AND outcome = ?",
            (test, Outcome.PASSED))]
        if len(durations) < SLOWER_HISTORY:
            continue
        usual = statistics.median(durations)
        spread = 1.4826 * statistics.median(abs(d - usual) for d in durations)
        if duration >= max(usual * SLOWER_RATIO, usual + SLOWER_SECONDS, usual + SLOWER_SPREADS * spread):
            found.append(Slower(test, duration, usual, spread, len(durations)))
    return found
