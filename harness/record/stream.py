"""Stream test results into a results table, one row per test identity, in bounded memory.

A side of a comparison, or a run being ingested, may hold a million tests. Results arrive one JUnit
suite at a time (harness/record/junit.py) and are written in batches; the table, not memory, knows
which tests were already seen. A test seen again (overlapping shards, a rerun report beside the
first one) is folded into one row as harness/record/identity.py says: the last report decides, the
earlier ones become its attempts. Then the per-module outcome counts are written beside the rows.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from harness.record.database import writing
from harness.record.identity import key_of, merge
from harness.record.model import StoredResult, TestResult

BATCH = 2000  # rows per INSERT: large enough to amortize the call, small enough to stay flat in memory
COLUMNS = ("test", "module", "seq", "outcome", "duration", "message", "nodeid", "replay", "attempts")
_INSERT = (f"INSERT INTO results (run, {', '.join(COLUMNS)}) VALUES ({', '.join('?' * (len(COLUMNS) + 1))}) "
           "ON CONFLICT (run, test) DO NOTHING")
_FOLDED = tuple(c for c in COLUMNS if c not in ("test", "seq"))  # what a later report replaces; it keeps its place
_UPDATE = f"UPDATE results SET {', '.join(f'{c} = ?' for c in _FOLDED)} WHERE run = ? AND test = ?"


def stream(connection: sqlite3.Connection, run: int, results: Iterable[TestResult]) -> int:
    """Write `results` as run `run` of the connection's results table, in one transaction, then
    its counts; returns the number of tests (rows)."""
    with writing(connection):
        batch: list[TestResult] = []
        seq = 0
        for result in results:
            batch.append(result)
            if len(batch) == BATCH:
                _write(connection, run, seq, batch)
                seq += len(batch)
                batch = []
        _write(connection, run, seq, batch)
        connection.execute("INSERT INTO counts (run, module, outcome, n) SELECT run, module, outcome, count(*) "
                           "FROM results WHERE run = ? GROUP BY module, outcome", (run,))
        return connection.execute("SELECT coalesce(sum(n), 0) FROM counts WHERE run = ?", (run,)).fetchone()[0]


def stored(row: tuple) -> StoredResult:
    """A results row (its COLUMNS, in order) as a StoredResult."""
    test, module, _, outcome, duration, message, nodeid, replay, attempts = row
    return StoredResult(test, module, outcome, duration, message or "", nodeid or "", replay or "",
                        tuple(json.loads(attempts)) if attempts else ())


def _write(connection: sqlite3.Connection, run: int, seq: int, batch: list[TestResult]) -> None:
    """Insert a batch; a test already in the table (from this batch or an earlier one) is folded
    into its row afterwards, in order."""
    rows = [_row(run, key_of(result), seq + number, result) for number, result in enumerate(batch, 1)]
    before = connection.total_changes
    connection.executemany(_INSERT, rows)
    if connection.total_changes - before == len(rows):
        return
    for (_, key, _, number, *_), result in zip(rows, batch):
        earlier = connection.execute(f"SELECT {', '.join(COLUMNS)} FROM results WHERE run = ? AND test = ?",
                                     (run, key)).fetchone()
        if earlier[2] != number:  # not the row this result inserted: fold it into the earlier one
            folded = dict(zip(("run", *COLUMNS), _row(run, key, earlier[2], merge(stored(earlier), result))))
            connection.execute(_UPDATE, (*(folded[c] for c in _FOLDED), run, key))


def _row(run: int, key: str, seq: int, result: TestResult) -> tuple:
    """`run` and COLUMNS, in order, for one result."""
    return (run, key, result.module, seq, str(result.outcome), result.duration, result.message or None,
            result.nodeid or None, result.replay or None, json.dumps(result.attempts) if result.attempts else None)
