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
from collections.abc import Iterable

from harness.record.database import writing
from harness.record.identity import key_of, merge
from harness.record.junit import replay_command, replay_prefix
from harness.record.model import StoredResult, TestResult

BATCH = 2000  # rows per INSERT: large enough to amortize the call, small enough to stay flat in memory
COLUMNS = ("test", "module", "seq", "outcome", "duration", "message", "nodeid", "replay", "attempts")
_INSERT = (f"INSERT INTO results (run, {', '.join(COLUMNS)}) VALUES ({', '.join('?' * (len(COLUMNS) + 1))}) "
           "ON CONFLICT (run, test) DO NOTHING")
_FOLDED = tuple(c for c in COLUMNS if c not in ("test", "seq"))  # what a later report replaces; it keeps its place
_UPDATE = f"UPDATE results SET {', '.join(f'{c} = ?' for c in _FOLDED)} WHERE run = ? AND test = ?"


def stream(connection: sqlite3.Connection, run: int, results: Iterable[TestResult]) -> int:
    """Write `results` as run `run` of the connection's results table, in one transaction, then
    its counts and replay prefixes; returns the number of tests (rows)."""
    with writing(connection):
        writer = _Writer(connection, run)
        batch: list[TestResult] = []
        for result in results:
            batch.append(result)
            if len(batch) == BATCH:
                writer.write(batch)
                batch = []
        writer.write(batch)
        connection.executemany("INSERT INTO prefixes (run, module, prefix) VALUES (?, ?, ?)",
                               [(run, module, prefix) for module, prefix in writer.prefixes.items() if prefix])
        connection.execute("INSERT INTO counts (run, module, outcome, n) SELECT run, module, outcome, count(*) "
                           "FROM results WHERE run = ? GROUP BY module, outcome", (run,))
        return connection.execute("SELECT coalesce(sum(n), 0) FROM counts WHERE run = ?", (run,)).fetchone()[0]


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

    def write(self, batch: list[TestResult]) -> None:
        """Insert a batch; a test already in the table (from this batch or an earlier one) is
        folded into its row afterwards, in order."""
        rows = [self._row(key_of(result), self.seq + number, result) for number, result in enumerate(batch, 1)]
        self.seq += len(batch)
        before = self.connection.total_changes
        self.connection.executemany(_INSERT, rows)
        if self.connection.total_changes - before == len(rows):
            return
        for (_, key, _, number, *_), result in zip(rows, batch):
            earlier = self.connection.execute(
                f"SELECT {', '.join(COLUMNS)} FROM results WHERE run = ? AND test = ?", (self.run, key)).fetchone()
            if earlier[2] != number:  # not the row this result inserted: fold it into the earlier one
                folded = merge(stored(earlier, self.prefixes.get(earlier[1])), result)
                row = dict(zip(("run", *COLUMNS), self._row(key, earlier[2], folded)))
                self.connection.execute(_UPDATE, (*(row[c] for c in _FOLDED), self.run, key))

    def _row(self, key: str, seq: int, result: TestResult) -> tuple:
        """`run` and COLUMNS, in order, for one result."""
        replay = result.replay
        if replay:
            prefix = self.prefixes.get(result.module)
            if prefix is None:
                prefix = self.prefixes[result.module] = replay_prefix(replay, result.nodeid)
            if prefix and replay == replay_command(prefix, result.nodeid):
                replay = ""
        return (self.run, key, result.module, seq, str(result.outcome), result.duration, result.message or None,
                result.nodeid or None, replay or None, json.dumps(result.attempts) if result.attempts else None)
