"""`--shard I/N`: which tests shard I of N runs, balanced on recorded durations, test by test.

The bundled tiers have few, very uneven files, so whole files cannot make shards of equal length:
a file heavier than half a fair shard (SPLIT_ABOVE) is split into its tests, found by collection
(harness/run/collect.py); the others stay whole, so their start, imports and collection are paid
once. Units go to shards by the greedy longest-processing-time rule, each to the shard it leaves
lightest, counting the overhead of a split file (its start, import and collection, recorded as its
duration outside its tests) again in every shard that gets a piece of it.

Weights: the durations recorded in the results database for the baseline configuration's runs of
the tier with the same torch (harness/record/durations.py says why those, and how a sweep pins
them); `--durations RUN_DIR` names one run instead. Without any history, every test weighs the
same (test counts) and every file is collected. The choice is the same for every configuration,
so baseline shard k and candidate shard k hold the same tests, and the diff checks that they do.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.record import durations
from harness.record.database import database_path, read_only
from harness.record.durations import NO_HISTORY, History, Sweep
from harness.record.model import Shard, Sharding, shard_problem
from harness.run.collect import Collected

SPLIT_ABOVE = 0.5  # of a fair shard: longest-processing-time packs items up to about half a bin closely
Collector = Callable[[list[str]], Mapping[str, Collected]]


def parse_shard(text: str) -> Shard:
    problem = shard_problem(text)
    if problem:
        raise HarnessError(f"--shard {problem}")
    return Shard.of(text)


@dataclass(frozen=True)
class Unit:
    """What goes to one shard: a whole file (`name` is the file) or one test of a split file."""

    name: str
    file: str
    weight: float
    position: int = 0  # in the run's order (files, then each file's tests in collection order)

    @property
    def whole(self) -> bool:
        return self.name == self.file


@dataclass(frozen=True)
class Plan:
    """Every shard's units and estimated load (the weights' unit: seconds, or tests)."""

    shards: tuple[tuple[Unit, ...], ...]
    loads: tuple[float, ...]

    @property
    def balance(self) -> float:
        """The longest shard over the mean shard: 1.0 is perfect."""
        mean = statistics.fmean(self.loads)
        return max(self.loads) / mean if mean else 1.0


@dataclass(frozen=True)
class Chosen:
    """One shard's targets, how they were chosen (for the run record), and a line saying so."""

    targets: tuple[str, ...]
    sharding: Sharding
    summary: str


def selection_hash(targets: Sequence[str], entries: Sequence[str]) -> str:
    """What is being split: the same for every shard and configuration of one sweep."""
    text = json.dumps([sorted(targets), sorted(entries)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def assign(units: Sequence[Unit], overhead: Mapping[str, float], count: int,
           first: Mapping[str, float] | None = None) -> Plan:
    """Longest first, each unit to the shard it leaves lightest (a split file's overhead counted once
    per shard that runs a piece of it); ties go to the lower shard, so the result is deterministic.
    `first`: split files are collected once, each by one process before any test (its `first`
    seconds, on the shard then lightest), and every other shard that runs a piece of one is forked
    from it (harness/run/split.py): it pays `overhead` (the fork), after the collection has ended."""
    shards: list[list[Unit]] = [[] for _ in range(count)]
    loads = [0.0] * count
    present: list[set[str]] = [set() for _ in range(count)]
    ready: dict[str, float] = {}  # when a forked file's collection ends
    if first is not None:
        for file in sorted({unit.file for unit in units if not unit.whole}, key=lambda f: (-first.get(f, 0.0), f)):
            best = min(range(count), key=lambda index: (loads[index], index))
            loads[best] = ready[file] = loads[best] + first.get(file, 0.0)
            present[best].add(file)
    for unit in sorted(units, key=lambda u: (-u.weight, u.name)):
        def cost(index: int, unit: Unit = unit) -> float:
            if unit.whole or unit.file in present[index]:
                return unit.weight
            wait = max(ready[unit.file] - loads[index], 0.0) if unit.file in ready else 0.0
            return unit.weight + wait + overhead.get(unit.file, 0.0)
        best = min(range(count), key=lambda index: (loads[index] + cost(index), index))
        loads[best] += cost(best)
        shards[best].append(unit)
        present[best].add(unit.file)
    return Plan(tuple(tuple(shard) for shard in shards), tuple(loads))


def units(grouped: Mapping[str, Sequence[str]], history: History, collect: Collector, count: int) -> list[Unit]:
    """Whole files, and the tests of files too heavy to stay whole (collected only when needed)."""
    explicit = {file: tuple(targets) for file, targets in grouped.items() if targets != [file]}
    weigh = _duration_weigher(history) if history.tests else _count_weigher()
    need = [file for file in grouped if file not in explicit and not weigh.recorded(file)]
    known = {**explicit, **{file: found.nodeids for file, found in collect(need).items() if not found.error}}
    sizes = {file: weigh.file(file, known.get(file)) for file in grouped}
    fair = sum(sizes.values()) / count
    heavy = [file for file in grouped if file not in known and sizes[file] > SPLIT_ABOVE * fair]
    known.update({file: found.nodeids for file, found in collect(heavy).items() if not found.error})
    names: list[tuple[str, str, float]] = []
    for file in grouped:
        tests = known.get(file)
        if file in explicit or (tests and sizes[file] > SPLIT_ABOVE * fair):
            names.extend((nodeid, file, weigh.test(nodeid)) for nodeid in tests or ())
        else:
            names.append((file, file, sizes[file]))
    return [Unit(name, file, weight, position) for position, (name, file, weight) in enumerate(names)]


@dataclass(frozen=True)
class _Weigher:
    test: Callable[[str], float]
    file: Callable[[str, tuple[str, ...] | None], float]
    recorded: Callable[[str], bool]  # whether a file's tests have recorded durations (else it is collected)


def _count_weigher() -> _Weigher:
    """No history: every test weighs one; a file its number of tests (one if it collected none)."""
    return _Weigher(lambda nodeid: 1.0, lambda file, tests: float(max(len(tests or ()), 1)), lambda file: False)


def _duration_weigher(history: History) -> _Weigher:
    """Recorded medians; a test never recorded weighs the median of its file's tests (or of all); a
    file never recorded is collected and weighs its tests at the median test and the median start,
    so a big new file is not planned as a typical one (a 4,651-test file was, before)."""
    by_file: dict[str, list[float]] = {}
    for nodeid, seconds in history.tests.items():
        by_file.setdefault(nodeid.split("::", 1)[0], []).append(seconds)
    typical_test = statistics.median(history.tests.values())
    totals = {file: sum(values) + history.overhead.get(file, 0.0) for file, values in by_file.items()}
    typical_file = statistics.median(totals.values())

    def test(nodeid: str) -> float:
        if nodeid in history.tests:
            return history.tests[nodeid]
        file = nodeid.split("::", 1)[0]
        return statistics.median(by_file[file]) if file in by_file else typical_test

    typical_overhead = statistics.median(history.overhead.values()) if history.overhead else 0.0

    def file(name: str, tests: tuple[str, ...] | None) -> float:
        if tests is not None and (name in by_file or any(t in history.tests for t in tests)):
            return history.overhead.get(name, 0.0) + sum(test(t) for t in tests)
        if tests is not None and name not in totals:
            return typical_overhead + typical_test * max(len(tests), 1)
        return totals.get(name, typical_file)

    return _Weigher(test, file, lambda name: name in by_file)


def shard_targets(plan: Plan, index: int, grouped: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """Shard `index`'s targets in the run's file order: a file whose every test it holds runs whole."""
    pieces: dict[str, list[Unit]] = {}
    for unit in sorted(plan.shards[index - 1], key=lambda u: u.position):
        pieces.setdefault(unit.file, []).append(unit)
    everywhere = Counter(unit.file for unit in _all(plan))
    targets: list[str] = []
    for file, given in grouped.items():
        held = pieces.get(file, [])
        whole = held and (held[0].whole or (list(given) == [file] and len(held) == everywhere[file]))
        targets.extend([file] if whole else [unit.name for unit in held])
    return tuple(targets)


def _all(plan: Plan) -> list[Unit]:
    return [unit for shard in plan.shards for unit in shard]


def history_for(results_root: Path, sweep: Sweep, baseline: str, named: Path | None) -> tuple[History, list[str]]:
    """The durations this shard is weighed on, and notes on histories left out (printed once)."""
    if named is not None:
        history, torch = durations.run_history(named)
        if torch != sweep.torch:
            return NO_HISTORY, [f"shards: --durations {named} ran torch {torch}, this run has torch {sweep.torch}: "
                                "ignored, balanced on test counts"]
        return history, []
    path = database_path(results_root)
    if not path.is_file():
        return NO_HISTORY, []
    connection = read_only(path)
    try:
        note = durations.ignored(connection, sweep.tier, sweep.torch, baseline)
        basis = durations.pinned_basis(connection, sweep)
        if basis is None:
            basis = durations.baseline_basis(connection, sweep.tier, sweep.torch, baseline)
        return durations.read_history(connection, basis), [note] if note else []
    finally:
        connection.close()


def choose(grouped: Mapping[str, Sequence[str]], sweep: Sweep, history: History, collect: Collector) -> Chosen:
    """Shard `sweep.shard` of the grouped targets (file -> [file] or its node ids)."""
    shard = sweep.shard
    if shard.count == 1:
        return Chosen(tuple(t for targets in grouped.values() for t in targets),
                      Sharding(sweep.selection, "counts", ()), "shard 1/1: the whole run")
    plan = assign(units(grouped, history, collect, shard.count), history.overhead, shard.count)
    targets = shard_targets(plan, shard.index, grouped)
    if not targets:
        raise HarnessError(f"--shard {shard.index}/{shard.count}: this shard holds no tests (the run splits into "
                           f"{len(_all(plan))} units); use fewer shards")
    kind = "durations" if history.tests else "counts"
    mine = plan.shards[shard.index - 1]
    unit_name = "s" if history.tests else " tests"
    how = (f"recorded durations of {len(history.basis)} run(s)" if history.tests
           else "test counts (no recorded durations of this tier and torch)")
    summary = (f"shard {shard.index}/{shard.count}: {sum(u.whole for u in mine)} whole file(s) and "
               f"{sum(not u.whole for u in mine)} test(s) of split files, about {plan.loads[shard.index - 1]:,.0f}"
               f"{unit_name} of {sum(plan.loads):,.0f}{unit_name} (longest/mean shard {plan.balance:.2f}), "
               f"balanced on {how}")
    return Chosen(targets, Sharding(sweep.selection, kind, history.basis), summary)
