"""One run on N workers: which files run whole and which are split into tests across workers, and
how long the plan takes (its makespan) beside the shortest any plan could take (its lower bound).

A run whose unit of work is a whole file is never shorter than its longest file: test_ops_refs
alone is a third of the breadth tier. So a run is planned like `--shard` plans shards
(harness/run/shards.py: files heavier than half a fair share split into their tests, longest
processing time first), with the workers as the shards. What differs is what a piece costs: the
pieces of a split file are forked from the one process that imported and collected the file, so
the file's start (import, collection: its recorded duration outside its tests) is paid once, by
the worker that collects it, and every further worker pays a fork (FORK_SECONDS, measured by
benchmarks/split_cost.py) once the collection has ended. Where a configuration cannot fork
(`forked=False`), every piece pays the whole start again, as a shard does.

benchmarks/scaling.py times these plans against the bound on recorded durations. The runner runs
them: `split_files` says which files of a run are split into how many pieces (harness/run/runner.py
gives such a file that many of its `--jobs` slots; its test process forks the pieces).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.record.durations import History
from harness.run.collect import Collected
from harness.run.shards import SPLIT_ABOVE, Collector, Plan, Unit, assign, units

# Seconds a worker forked from a process that has imported torch and collected a file takes to run
# its first test, beyond what the test itself takes: 0.10 s under stock CPython 3.14, torch 2.14.1, against
# 9.5 s for a fresh process to import torch and collect a breadth module (benchmarks/split_cost.py).
FORK_SECONDS = 0.1


@dataclass(frozen=True)
class Timed:
    """A plan, how long it takes, and the least any plan of the same tests could take (seconds)."""

    plan: Plan
    makespan: float
    bound: float


def plan_run(grouped: Mapping[str, Sequence[str]], history: History, collect: Collector, workers: int,
             *, forked: bool = True, fork_seconds: float = FORK_SECONDS) -> Plan:
    """The run's files and split-off tests over `workers` workers (weights: `history`'s CPU-scaled
    durations, else test counts, as for shards)."""
    found = units(grouped, history, collect, workers)
    if not forked:
        return assign(found, history.overhead, workers)
    split = {unit.file for unit in found if not unit.whole}
    return assign(found, {file: fork_seconds for file in split}, workers, first=history.overhead)


def file_plan(grouped: Mapping[str, Sequence[str]], history: History, workers: int) -> Plan:
    """The run as whole files, longest first, each to the worker that frees up first: what the
    runner does (harness/run/schedule.py orders files longest first)."""
    seconds = file_seconds(history)
    return assign([Unit(file, file, seconds.get(file, 0.0)) for file in grouped], {}, workers)


def file_seconds(history: History) -> dict[str, float]:
    """Seconds per test file run whole: its tests, and its start, import and collection once."""
    seconds = dict(history.overhead)
    for nodeid, duration in history.tests.items():
        file = nodeid.split("::", 1)[0]
        seconds[file] = seconds.get(file, 0.0) + duration
    return seconds


def lower_bound(history: History, workers: int) -> float:
    """No plan is shorter than the work over the workers, nor than the longest test after its
    file's start (a test is never split)."""
    total = sum(history.tests.values()) + sum(history.overhead.values())
    longest = max((seconds + history.overhead.get(nodeid.split("::", 1)[0], 0.0)
                   for nodeid, seconds in history.tests.items()), default=0.0)
    return max(total / workers, longest)


def timed(plan: Plan, history: History, workers: int) -> Timed:
    """The plan's longest worker (its load counts the waits for collections) against the bound."""
    return Timed(plan, max(plan.loads, default=0.0), lower_bound(history, workers))


@dataclass(frozen=True)
class Split:
    """One file of a run split across workers: how many pieces, and each test's weight for cutting
    the collected tests into pieces of equal weight (harness/run/forkserver.contiguous_pieces)."""

    pieces: int
    weights: Mapping[str, float]


def split_files(grouped: Mapping[str, Sequence[str]], history: History, workers: int,
                *, fork_seconds: float = FORK_SECONDS) -> dict[str, Split]:
    """The files this run's plan splits (`plan_run` on the recorded durations, else on the counts
    of explicit node ids), each into as many pieces as the plan gives it workers. No file is
    collected for the plan: a recorded file's tests are those the history timed, and the file's own
    test process collects it and cuts what it collected."""
    if workers < 2:
        return {}
    recorded: dict[str, list[str]] = {}
    for nodeid in history.tests:
        recorded.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    plan = plan_run(grouped, history, lambda files: {file: Collected(tuple(recorded[file]))
                                                     for file in files if file in recorded},
                    workers, fork_seconds=fork_seconds)
    holders: dict[str, set[int]] = {}
    weight: dict[str, float] = {}
    for index, shard in enumerate(plan.shards):
        for unit in shard:
            holders.setdefault(unit.file, set()).add(index)
            weight[unit.file] = weight.get(unit.file, 0.0) + unit.weight
    fair = sum(weight.values()) / workers
    return {file: Split(len(held), {nodeid: history.tests[nodeid] for nodeid in recorded.get(file, ())})
            for file, held in holders.items() if len(held) > 1 and weight[file] > SPLIT_ABOVE * fair}
