"""Both sides of a comparison in one SQLite connection, walked pair by pair in bounded memory.

A side that the results database holds as it is on disk (one run directory, ingested when it ended
or by `db ingest`) is read there. Any other side (a folder of JUnit XML, shards, results in memory)
is streamed into a scratch database first (harness/record/stream.py), both sides at once, in two
processes, when they are large; when both are, their plain passes (passed, no message, node id,
replay or attempts) are no rows but lists of keys by module, compared a module at a time. SQLite
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
from harness.record.stream import COLUMNS, Streamed, passes, stored, stream

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
        """Rows of the baseline with their candidate row or plain pass; candidate rows with no
        baseline row, with their baseline plain pass if any; then the plain passes of one side that
        the other side lacks."""
        b, c = self.schemas[self.before.path], self.schemas[self.after.path]
        plain = _plain_differences(passes(self.connection, b), passes(self.connection, c))
        old_passes, new_passes = plain.before, plain.after
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
            module = new_passes.pop(old.test, None)
            if module is None:
                yield old.test, old, None
            elif old.outcome != Outcome.PASSED or old.attempts:
                yield old.test, old, _passed(old.test, module)
        if unmatched > 0:
            for row in self.connection.execute(
                    f"SELECT {', '.join(f'y.{name}' for name in COLUMNS)}, py.prefix FROM {c}.results AS y "
                    f"LEFT JOIN {c}.prefixes AS py ON py.run = y.run AND py.module = y.module "
                    f"WHERE y.run = :after AND NOT EXISTS "
                    f"(SELECT 1 FROM {b}.results AS x WHERE x.run = :before AND x.test = y.test)",
                    {"before": self.before.run, "after": self.after.run}):
                new = stored(row[:-1], row[-1])
                module = old_passes.pop(new.test, None)
                if module is None:
                    yield new.test, None, new
                elif new.outcome != Outcome.PASSED or new.attempts:
                    yield new.test, _passed(new.test, module), new
        for test, module in old_passes.items():
            yield test, _passed(test, module), None
        for test, module in new_passes.items():
            yield test, None, _passed(test, module)

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
    """The plain passes held aside (harness/record/stream.py) of each side that are no plain pass
    of the other side, by key: their module; and how many each side held."""

    before: dict[str, str]
    after: dict[str, str]
    held: tuple[int, int]


def _plain_differences(before: Iterator[tuple[str, set[str]]],
                       after: Iterator[tuple[str, set[str]]]) -> PlainDifferences:
    """Both sides' plain passes, read a module at a time in the order of module names; a test whose
    module is another on the other side is matched at the end. Memory holds the differences."""
    only_before: dict[str, str] = {}
    only_after: dict[str, str] = {}
    held_before = held_after = 0
    for module, old, new in _aligned(before, after):
        only_before.update(dict.fromkeys(old - new, module))
        only_after.update(dict.fromkeys(new - old, module))
        held_before += len(old)
        held_after += len(new)
    for test in only_before.keys() & only_after.keys():
        del only_before[test], only_after[test]
    return PlainDifferences(only_before, only_after, (held_before, held_after))


def _aligned(before: Iterator[tuple[str, set[str]]],
             after: Iterator[tuple[str, set[str]]]) -> Iterator[tuple[str, set[str], set[str]]]:
    """Two module-ordered streams of (module, keys) as (module, keys before, keys after)."""
    old, new = next(before, None), next(after, None)
    while old is not None or new is not None:
        if new is None or (old is not None and old[0] < new[0]):
            yield old[0], old[1], set()
            old = next(before, None)
        elif old is None or new[0] < old[0]:
            yield new[0], set(), new[1]
            new = next(after, None)
        else:
            yield old[0], old[1], new[1]
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
