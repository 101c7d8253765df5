"""Stream test results into a results table, one row per test identity, in bounded memory.

A side of a comparison, or a run being ingested, may hold a million tests. Results arrive one JUnit
suite at a time (harness/record/junit.py) and are written in batches; the table, not memory, knows
which tests were already seen. A test seen again (overlapping shards, a rerun report beside the
first one) is folded into one row as harness/record/identity.py says: the last report decides, the
earlier ones become its attempts. Then the per-module outcome counts and replay prefixes are written
beside the rows.

A replay command is most of a row's bytes, and nearly always its module's prefix followed by the
test's node id: the prefix (what the module's first test with a replay command gives) is stored once
per module, and a test's own command only when it is something else.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from harness.protocol import Outcome
from harness.record.database import writing
from harness.record.identity import Reported, key, merge
from harness.record.junit import JUnitFiles, replay_command, replay_prefix
from harness.record.model import Fields, StoredResult, TestResult, fields_of

BATCH = 2000  # rows per INSERT: large enough to amortize the call, small enough to stay flat in memory
REPEATED_NAMED = 5  # tests reported more than once that a side names (it counts them all)
COLUMNS = ("test", "module", "seq", "outcome", "duration", "message", "nodeid", "replay", "attempts")
_INSERT = (f"INSERT INTO results (run, {', '.join(COLUMNS)}) VALUES ({', '.join('?' * (len(COLUMNS) + 1))}) "
           "ON CONFLICT (run, test) DO NOTHING")
_FOLDED = tuple(c for c in COLUMNS if c not in ("test", "seq"))  # what a better report replaces; it keeps its place
_UPDATE = f"UPDATE results SET {', '.join(f'{c} = ?' for c in _FOLDED)} WHERE run = ? AND test = ?"


@dataclass(frozen=True)
class Streamed:
    """What a stream wrote: its tests (rows), and the tests that more than one report named (in
    different suites or files: overlapping shards, a rerun file), folded into one row each."""

    tests: int
    repeated: int = 0
    repeated_named: tuple[str, ...] = ()  # the first REPEATED_NAMED of them, by key


def stream(connection: sqlite3.Connection, run: int, results: Iterable[TestResult]) -> Streamed:
    """Write `results` as run `run` of the connection's results table, in one transaction, then
    its counts and replay prefixes. JUnit files are read as Fields, never as TestResults."""
    with writing(connection):
        writer = _Writer(connection, run)
        for batch in _batches(results):
            for start in range(0, len(batch), BATCH):
                writer.write(batch[start:start + BATCH])
        connection.executemany("INSERT INTO prefixes (run, module, prefix) VALUES (?, ?, ?)",
                               [(run, module, prefix) for module, prefix in writer.prefixes.items() if prefix])
        connection.execute("INSERT INTO counts (run, module, outcome, n) SELECT run, module, outcome, count(*) "
                           "FROM results WHERE run = ? GROUP BY module, outcome", (run,))
        tests = connection.execute("SELECT coalesce(sum(n), 0) FROM counts WHERE run = ?", (run,)).fetchone()[0]
        return Streamed(tests, len(writer.repeated), tuple(sorted(writer.repeated)[:REPEATED_NAMED]))


def _batches(results: Iterable[TestResult]) -> Iterator[list[Fields]]:
    if isinstance(results, JUnitFiles):
        yield from results.batches()
        return
    batch: list[Fields] = []
    for result in results:
        batch.append(fields_of(result))
        if len(batch) == BATCH:
            yield batch
            batch = []
    yield batch


def stored(row: tuple, prefix: str | None) -> StoredResult:
    """A results row (its COLUMNS, in order) as a StoredResult; `prefix`: its module's replay prefix."""
    test, module, _, outcome, duration, message, nodeid, replay, attempts = row
    return StoredResult(test, module, outcome, duration, message or "", nodeid or "",
                        replay or replay_command(prefix or "", nodeid or ""),
                        tuple(json.loads(attempts)) if attempts else ())


class _Writer:
    """Batches of one run's results into rows; the modules' replay prefixes as they are first seen."""

    def __init__(self, connection: sqlite3.Connection, run: int) -> None:
        self.connection, self.run, self.seq = connection, run, 0
        self.prefixes: dict[str, str] = {}  # module -> prefix ("" when its first replay has none)
        self.repeated: set[str] = set()
        self.insert_pass = (f"INSERT INTO results (run, test, module, seq, outcome, duration) "
                            f"VALUES ({int(run)}, ?, ?, ?, '{Outcome.PASSED}', ?) ON CONFLICT (run, test) DO NOTHING")

    def write(self, batch: list[Fields]) -> None:
        """Insert a batch; a test already in the table (from an earlier batch) is folded into its row
        afterwards, and one that the batch holds twice before it is written. A plain pass (no
        message, node id, replay or attempts: most tests of pytest's own JUnit) binds 4 values
        instead of 10, which halves what SQLite spends on it."""
        first = self.seq + 1
        self.seq += len(batch)
        tests = [key(fields[0], fields[1]) for fields in batch]  # (no starred unpacking: a list per test)
        reports = list(zip(tests, range(first, self.seq + 1), batch))
        if len(set(tests)) < len(tests):
            reports = self._folded(reports)
        rows, passes = [], []
        for test, seq, (_, _, outcome, module, duration, message, _, nodeid, replay, attempts) in reports:
            if outcome == Outcome.PASSED and not (message or nodeid or replay or attempts):
                passes.append((test, module, seq, duration))
            else:
                rows.append(self._row(test, seq, outcome, module, duration, message, nodeid, replay, attempts))
        before = self.connection.total_changes
        self.connection.executemany(self.insert_pass, passes)
        self.connection.executemany(_INSERT, rows)
        if self.connection.total_changes - before < len(reports):
            for test, _, fields in reports:
                self._fold(test, first, TestResult(*fields))

    def _folded(self, reports: list[tuple[str, int, Fields]]) -> list[tuple[str, int, Fields]]:
        """A batch's reports with one per test: a test it holds twice is folded in its first place."""
        found: dict[str, tuple[int, Fields]] = {}
        for test, seq, fields in reports:
            earlier = found.get(test)
            if earlier is None:
                found[test] = (seq, fields)
            else:
                self.repeated.add(test)
                found[test] = (earlier[0], fields_of(merge(TestResult(*earlier[1]), TestResult(*fields))))
        return [(test, seq, fields) for test, (seq, fields) in found.items()]

    def _fold(self, test: str, first: int, result: TestResult) -> None:
        """A report of a batch whose first row is `first`: if its test's row comes from an earlier
        batch, the report was not inserted, and the two become one (in the earlier one's place)."""
        earlier = self.connection.execute(
            f"SELECT {', '.join(COLUMNS)} FROM results WHERE run = ? AND test = ?", (self.run, test)).fetchone()
        if earlier[2] >= first:  # this batch inserted it
            return
        self.repeated.add(test)
        folded = merge(stored(earlier, self.prefixes.get(earlier[1])), result)
        values = dict(zip(("run", *COLUMNS), self._result_row(test, earlier[2], folded)))
        self.connection.execute(_UPDATE, (*(values[c] for c in _FOLDED), self.run, test))

    def _result_row(self, test: str, seq: int, result: Reported) -> tuple:
        return self._row(test, seq, result.outcome, result.module, result.duration, result.message,
                         result.nodeid, result.replay, result.attempts)

    def _row(self, test: str, seq: int, outcome: str, module: str, duration: float, message: str, nodeid: str,
             replay: str, attempts: tuple[str, ...]) -> tuple:
        """`run` and COLUMNS, in order, for one report."""
        if replay:
            prefix = self.prefixes.get(module)
            if prefix is None:
                prefix = self.prefixes[module] = replay_prefix(replay, nodeid)
            if prefix and replay == replay_command(prefix, nodeid):
                replay = ""
        return (self.run, test, module, seq, str(outcome), duration, message or None, nodeid or None, replay or None,
                json.dumps(attempts) if attempts else None)
