"""Both sides of a comparison in one SQLite connection, walked pair by pair in bounded memory.

A side that the results database holds as it is on disk (one run directory, ingested when it ended
or by `db ingest`) is read there. Any other side (a folder of JUnit XML, shards, results in memory)
is streamed into a scratch database first (harness/record/stream.py), both sides at once, in two
processes, when they are large; when both are, their plain tests (passed, or skipped as pytest
writes a skip; no node id, replay or attempts) are no rows but lists of keys by module, compared a
module at a time. SQLite
then hands over the tests that can matter, and each side's per-module counts: a test that ended
alike on both sides, not in a failure, with no reruns (passed, skipped, an expected failure) falls
in no category of the diff, so it is counted but never reaches Python as a result. Memory holds what the comparison finds (and one module's keys).
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import tempfile
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.protocol import Outcome
from harness.record.database import opened as opened_database
from harness.record.database import FAILING, read_only_uri, reported
from harness.record.ingest import stored_run
from harness.record.model import StoredResult, TestResult
from harness.compare.sides import Side
from harness.record.junit import JUnitFiles
from harness.record.stream import COLUMNS, Held, Streamed, held, stored, stream

PARALLEL_BYTES = 32 << 20  # XML worth a process of its own: starting one costs a fraction of a second
SCRATCH_RUN = 0  # the run number of a side streamed into a scratch database

Pair = tuple[str, StoredResult | None, StoredResult | None]  # test, baseline result, candidate result


@dataclass(frozen=True)
class Source:
    """Where one side's rows are: a database file and the run in it."""

    path: Path
    run: int


class Pairs:
    """The two sides, attached to one connection: `b` is the baseline's schema, `c` the candidate's."""

    def __init__(self, connection: sqlite3.Connection, before: Source, after: Source,
                 streamed: dict[str, Streamed]) -> None:
        self.connection, self.before, self.after = connection, before, after
        self.streamed = streamed  # by role (baseline, candidate): what streaming a side wrote, if it was streamed
        self.schemas = {before.path: "b", after.path: "c" if after.path != before.path else "b"}

    def counts(self, source: Source) -> dict[str, dict[str, int]]:
        """Tests per module and outcome."""
        found: dict[str, dict[str, int]] = {}
        for module, outcome, n in self.connection.execute(
                f"SELECT module, outcome, n FROM {self.schemas[source.path]}.counts WHERE run = ? "
                "ORDER BY module, outcome", (source.run,)):
            found.setdefault(module, {})[outcome] = n
        return found

    def interesting(self) -> tuple[dict[str, StoredResult], dict[str, StoredResult]]:
        """Each side's results by test, for every test except those that ended alike on both sides,
        not in a failure, with no earlier attempts (which fall in no category of the diff): a test on
        both sides is in both, a new one only in the second, a missing one only in the first."""
        before: dict[str, StoredResult] = {}
        after: dict[str, StoredResult] = {}
        for key, old, new in self._walk():
            if old is not None:
                before[key] = old
            if new is not None:
                after[key] = new
        return before, after

    def _walk(self) -> Iterator[Pair]:
        """Rows of the baseline with their candidate row or held plain test; candidate rows with no
        baseline row, with their baseline plain test if any; then the plain tests held on both sides
        that ended differently, and those of one side that the other side lacks."""
        b, c = self.schemas[self.before.path], self.schemas[self.after.path]
        plain = _plain_differences(held(self.connection, b), held(self.connection, c))
        old_held, new_held = plain.before, plain.after
        # candidate rows that no baseline row matches, ...
        unmatched = (self._total(self.after) - plain.held[1]) - (self._total(self.before) - plain.held[0])
        columns = ", ".join([*(f"x.{name}" for name in COLUMNS), "px.prefix",
                             *(f"y.{name}" for name in COLUMNS), "py.prefix"])
        width = len(COLUMNS) + 1
        for row in self.connection.execute(
                f"SELECT {columns} FROM {b}.results AS x LEFT JOIN {c}.results AS y ON y.run = :after AND y.test = x.test "
                f"LEFT JOIN {b}.prefixes AS px ON px.run = x.run AND px.module = x.module "
                f"LEFT JOIN {c}.prefixes AS py ON py.run = y.run AND py.module = y.module "
                f"WHERE x.run = :before AND (y.test IS NULL OR x.outcome != y.outcome OR x.{FAILING} "
                "OR x.attempts IS NOT NULL OR y.attempts IS NOT NULL)",
                {"before": self.before.run, "after": self.after.run}):
            old = stored(row[:width - 1], row[width - 1])
            if row[width] is not None:
                yield old.test, old, stored(row[width:-1], row[-1])
                continue
            unmatched += 1  # ... once every baseline row that matches none is added
            new = new_held.pop(old.test, None)
            if new is None or old.outcome != new.outcome or old.attempts:
                yield old.test, old, new
        if unmatched > 0:
            for row in self.connection.execute(
                    f"SELECT {', '.join(f'y.{name}' for name in COLUMNS)}, py.prefix FROM {c}.results AS y "
                    f"LEFT JOIN {c}.prefixes AS py ON py.run = y.run AND py.module = y.module "
                    f"WHERE y.run = :after AND NOT EXISTS "
                    f"(SELECT 1 FROM {b}.results AS x WHERE x.run = :before AND x.test = y.test)",
                    {"before": self.before.run, "after": self.after.run}):
                new = stored(row[:-1], row[-1])
                old = old_held.pop(new.test, None)
                if old is None or old.outcome != new.outcome or new.attempts:
                    yield new.test, old, new
        yield from plain.changed
        for test, old in old_held.items():
            yield test, old, None
        for test, new in new_held.items():
            yield test, None, new

    def replay_prefix(self, source: Source, module: str) -> str:
        """The replay command of a module's tests without a node id (what its first test that has a
        replay command says), or "" when there is none."""
        found = self.connection.execute(f"SELECT prefix FROM {self.schemas[source.path]}.prefixes "
                                        "WHERE run = ? AND module = ?", (source.run, module)).fetchone()
        return found[0] if found else ""

    def _total(self, source: Source) -> int:
        return self.connection.execute(f"SELECT coalesce(sum(n), 0) FROM {self.schemas[source.path]}.counts "
                                       "WHERE run = ?", (source.run,)).fetchone()[0]


@dataclass(frozen=True)
class PlainDifferences:
    """The plain tests held aside (harness/record/stream.py): those of each side that the other side
    holds in no plain result, by key; those both sides hold that ended differently; and how many
    each side held."""

    before: dict[str, StoredResult]
    after: dict[str, StoredResult]
    changed: list[Pair]
    held: tuple[int, int]


def _plain_differences(before: Iterator[Held], after: Iterator[Held]) -> PlainDifferences:
    """Both sides' plain tests, read a module at a time in the order of module names; a test whose
    module is another on the other side is matched at the end. Memory holds the differences."""
    only_before: dict[str, StoredResult] = {}
    only_after: dict[str, StoredResult] = {}
    changed: list[Pair] = []
    counted = [0, 0]
    for old, new in _aligned(before, after):
        counted[0] += len(old)
        counted[1] += len(new)
        module = old.module
        old_passes, new_passes = old.passes - new.passes, new.passes - old.passes
        for test, result in old.others.items():
            was = _other(test, module, result)
            if test in new.others:
                if new.others[test][0] != was.outcome:
                    changed.append((test, was, _other(test, module, new.others[test])))
            elif test in new_passes:
                new_passes.discard(test)
                changed.append((test, was, _passed(test, module)))
            else:
                only_before[test] = was
        for test, result in new.others.items():
            if test in old.others:
                continue
            now = _other(test, module, result)
            if test in old_passes:
                old_passes.discard(test)
                changed.append((test, _passed(test, module), now))
            else:
                only_after[test] = now
        only_before.update((test, _passed(test, module)) for test in old_passes)
        only_after.update((test, _passed(test, module)) for test in new_passes)
    for test in only_before.keys() & only_after.keys():
        was, now = only_before.pop(test), only_after.pop(test)
        if was.outcome != now.outcome:
            changed.append((test, was, now))
    return PlainDifferences(only_before, only_after, changed, (counted[0], counted[1]))


def _aligned(before: Iterator[Held], after: Iterator[Held]) -> Iterator[tuple[Held, Held]]:
    """Two module-ordered streams of held tests as pairs for the same module (empty where a side
    has none)."""
    old, new = next(before, None), next(after, None)
    while old is not None or new is not None:
        if new is None or (old is not None and old.module < new.module):
            yield old, Held(old.module, set(), {})  # type: ignore[union-attr]
            old = next(before, None)
        elif old is None or new.module < old.module:
            yield Held(new.module, set(), {}), new
            new = next(after, None)
        else:
            yield old, new
            old, new = next(before, None), next(after, None)


@contextmanager
def opened(baseline: Side, candidate: Side) -> Iterator[Pairs]:
    """Both sides, read from the results database or streamed into scratch databases."""
    with tempfile.TemporaryDirectory(prefix="harness-diff-") as folder:
        before, after, streamed = _sources(baseline, candidate, Path(folder))
        connection = sqlite3.connect(":memory:", uri=True, isolation_level=None)
        try:
            pairs = Pairs(connection, before, after, streamed)
            for path, schema in pairs.schemas.items():
                with reported(path):
                    connection.execute(f"ATTACH DATABASE ? AS {schema}", (read_only_uri(path),))
            stored_at = [source.path for source in (before, after) if source.run != SCRATCH_RUN]
            with reported(stored_at[0] if stored_at else Path(folder)):
                yield pairs
        finally:
            connection.close()


def _sources(baseline: Side, candidate: Side, folder: Path) -> tuple[Source, Source, dict[str, Streamed]]:
    """Each side's rows: stored, or streamed into `folder` (a large XML side in a second process
    while this one streams the other)."""
    found: dict[str, Source] = {}
    pending: dict[str, Iterable[TestResult]] = {}
    for role, side in (("baseline", baseline), ("candidate", candidate)):
        stored_at = stored_run(*side.parts[0]) if len(side.parts) == 1 else None
        if stored_at is not None:
            found[role] = Source(*stored_at)
        else:
            found[role] = Source(folder / f"{role}.db", SCRATCH_RUN)
            pending[role] = side.results
    streamed: dict[str, Streamed] = {}
    apart = [role for role, results in pending.items()
             if isinstance(results, JUnitFiles) and results.size >= PARALLEL_BYTES]
    if len(pending) == 2 and apart and threading.active_count() == 1:
        # A fork: no interpreter to start, no __main__ to import again (a caller's script need not
        # guard itself); safe only in a process with no other threads, else both stream here.
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
            elsewhere = pool.submit(write_scratch, found[apart[0]].path, pending.pop(apart[0]), aside=True)
            for role, results in pending.items():
                streamed[role] = write_scratch(found[role].path, results, aside=True)
            streamed[apart[0]] = elsewhere.result()
    else:
        for role, results in pending.items():
            streamed[role] = write_scratch(found[role].path, results, aside=len(pending) == 2)
    return found["baseline"], found["candidate"], streamed


def write_scratch(path: Path, results: Iterable[TestResult], aside: bool) -> Streamed:
    """One side, streamed into a new scratch database (in this process or a worker). `aside`: its
    plain passes are held aside (when both sides are streamed: the walk then compares them a module
    at a time; against a stored side, each would be looked up by key)."""
    with opened_database(path, scratch=True) as connection:
        return stream(connection, SCRATCH_RUN, results, aside=aside)


def _passed(test: str, module: str) -> StoredResult:
    """A plain pass that a scratch side held aside (harness/record/stream.py), as its row would read."""
    return StoredResult(test, module, Outcome.PASSED.value)


def _other(test: str, module: str, held: tuple[str, str]) -> StoredResult:
    """A plain skip (or expected failure) that a scratch side held aside, by its outcome and message."""
    return StoredResult(test, module, held[0], message=held[1])
