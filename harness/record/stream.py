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

A comparison's scratch side may hold its plain tests aside (`aside`): a row per test costs SQLite
more than parsing the test's XML, and a plain pass (passed, no message, node id, replay or attempts:
most of pytest's own JUnit) or a plain skip (the JUnit reader's plain path: a skip and its message,
a tenth of PyTorch CI's reports) is only ever looked up by key. They are kept in memory while the
side is read (folded like rows), then written as lists of keys (and a skip's messages) by module
and outcome in table `held`.
"""

from __future__ import annotations

import json
import marshal
import sqlite3
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, groupby, repeat
from operator import itemgetter

from harness.protocol import Outcome
from harness.record.database import writing
from harness.record.identity import Reported, keyed, keys, merge
from harness.record.junit import Findings, JUnitFiles, replay_command, replay_prefix
from harness.record.model import Batch, Fields, Plain, PlainFile, StoredResult, TestResult, fields_of

BATCH = 2000  # rows per INSERT: large enough to amortize the call, small enough to stay flat in memory
# Tests a side streamed with `aside` keeps track of in memory (plain passes held, and the keys of
# its rows): about 200 bytes each. Past it, the side's further plain passes are rows like any other.
HELD = 1_000_000
REPEATED_NAMED = 5  # tests reported more than once that a side names (it counts them all)
COLUMNS = ("test", "module", "seq", "outcome", "duration", "message", "nodeid", "replay", "attempts")
_INSERT = (f"INSERT INTO results (run, {', '.join(COLUMNS)}) VALUES ({', '.join('?' * (len(COLUMNS) + 1))}) "
           "ON CONFLICT (run, test) DO NOTHING")
_FOLDED = tuple(c for c in COLUMNS if c not in ("test", "seq"))  # what a better report replaces; it keeps its place
_IDENTITY = itemgetter(0, 1)  # a test's (classname, name) in its Fields
_UPDATE = f"UPDATE results SET {', '.join(f'{c} = ?' for c in _FOLDED)} WHERE run = ? AND test = ?"


@dataclass(frozen=True)
class Streamed:
    """What a stream wrote: its tests (rows), and the tests that more than one report named (in
    different suites or files: overlapping shards, a rerun file), folded into one row each."""

    tests: int
    repeated: int = 0
    repeated_named: tuple[str, ...] = ()  # the first REPEATED_NAMED of them, by key
    findings: Findings = Findings()  # what reading its JUnit files found beyond their results


def stream(connection: sqlite3.Connection, run: int, results: Iterable[TestResult], *, aside: bool = False) -> Streamed:
    """Write `results` as run `run` of the connection's results table, in one transaction, then
    its counts and replay prefixes. JUnit files are read as Fields, never as TestResults. `aside`:
    plain tests go to table `held` (read with `held`), not to rows (a comparison's scratch side)."""
    with writing(connection):
        writer = _Writer(connection, run, _Aside() if aside else None)
        findings: list[Findings] = []
        for batch in _batches(results, findings):
            if isinstance(batch, PlainFile):
                writer.write_file(batch)
                continue
            for start in range(0, len(batch), BATCH):
                writer.write(batch[start:start + BATCH])
        connection.executemany("INSERT INTO prefixes (run, module, prefix) VALUES (?, ?, ?)",
                               [(run, module, prefix) for module, prefix in writer.prefixes.items() if prefix])
        connection.execute("INSERT INTO counts (run, module, outcome, n) SELECT run, module, outcome, count(*) "
                           "FROM results WHERE run = ? GROUP BY module, outcome", (run,))
        if writer.aside is not None:
            writer.aside.write(connection, run)
        tests = connection.execute("SELECT coalesce(sum(n), 0) FROM counts WHERE run = ?", (run,)).fetchone()[0]
        return Streamed(tests, len(writer.repeated), tuple(sorted(writer.repeated)[:REPEATED_NAMED]),
                        sum(findings, Findings()))


@dataclass(frozen=True)
class Held:
    """One module's plain tests that `stream` held aside: the passes' keys, and the others (skips,
    expected failures) by key with their outcome and message."""

    module: str
    passes: set[str]
    others: dict[str, tuple[str, str]]

    def __len__(self) -> int:
        return len(self.passes) + len(self.others)


def held(connection: sqlite3.Connection, schema: str = "main") -> Iterator[Held]:
    """The plain tests that `stream` held aside in a database's schema, a module at a time, in the
    order of module names."""
    if not connection.execute(f"SELECT 1 FROM {schema}.sqlite_schema WHERE name = 'held'").fetchone():
        return
    rows = connection.execute(f"SELECT module, outcome, tests, messages FROM {schema}.held ORDER BY module")
    for module, same in groupby(rows, key=itemgetter(0)):
        found = Held(module, set(), {})
        for _, outcome, tests, messages in same:
            if messages is None:
                found.passes.update(marshal.loads(tests))
            else:
                found.others.update(zip(marshal.loads(tests), zip(repeat(outcome), marshal.loads(messages))))
        yield found


def _batches(results: Iterable[TestResult], findings: list[Findings]) -> Iterator[Batch]:
    if isinstance(results, JUnitFiles):
        yield from results.batches(findings)
        return
    batch: list[Fields] = []
    for result in results:
        batch.append(fields_of(result))
        if len(batch) == BATCH:
            yield batch
            batch = []
    yield batch


def _or_null(message: str) -> str | None:
    """A message as a row holds it: NULL for none."""
    return message or None


def stored(row: tuple, prefix: str | None) -> StoredResult:
    """A results row (its COLUMNS, in order) as a StoredResult; `prefix`: its module's replay prefix."""
    test, module, _, outcome, duration, message, nodeid, replay, attempts = row
    return StoredResult(test, module, outcome, duration, message or "", nodeid or "",
                        replay or replay_command(prefix or "", nodeid or ""),
                        tuple(json.loads(attempts)) if attempts else ())


class _Aside:
    """Plain tests held out of the results table, a batch at a time in the order read (their keys,
    modules, durations and places, and a skip's outcome and message: columns of plain values, as a
    Python object per test would cost more than its XML). A later report of the same test takes its
    plain result out to fold with it."""

    def __init__(self) -> None:
        self.held: set[str] = set()  # the tests held
        self.at: dict[str, int] | None = None  # test -> its batch (among `batches`), made at the first pop
        # per batch: tests, modules, durations, seqs, outcomes and messages (None: all passed)
        self.batches: list[tuple[Sequence[str], Sequence[str], array, array,
                                 Sequence[str] | None, Sequence[str] | None]] = []
        self.taken: set[int] = set()  # batches a test was taken out of

    def hold(self, tests: Sequence[str], modules: Sequence[str], seqs: Sequence[int], durations: Sequence[float],
             outcomes: Sequence[str] | None = None, messages: Sequence[str] | None = None) -> None:
        """Plain tests not yet seen, as columns (`outcomes` None: passes)."""
        if tests:
            self.held.update(tests)
            if self.at is not None:
                self.at.update(dict.fromkeys(tests, len(self.batches)))
            self.batches.append((tests, modules, array("d", durations), array("q", seqs), outcomes, messages))

    def pop(self, test: str) -> tuple[int, StoredResult]:
        """The plain result of `test` (held) with its place, taken out to be folded."""
        if self.at is None:  # a test reported again is rare: where each one is held is found once
            self.at = {test: number for number, (tests, *_) in enumerate(self.batches) for test in tests
                       if test in self.held}
        number = self.at.pop(test)
        self.held.discard(test)
        self.taken.add(number)
        tests, modules, durations, seqs, outcomes, messages = self.batches[number]
        at = tests.index(test)
        if outcomes is None:
            return seqs[at], StoredResult(test, modules[at], Outcome.PASSED.value, durations[at])
        return seqs[at], StoredResult(test, modules[at], outcomes[at], durations[at], messages[at])  # type: ignore[index]

    def write(self, connection: sqlite3.Connection, run: int) -> None:
        """Table `held` (a row per run of one module's tests of one outcome in a batch: the module,
        the outcome, the keys and, but for passes, the messages, as lists in `marshal`'s format: this
        process's own scratch data, read back by the same interpreter, three times faster than JSON),
        and the tests' counts beside the rows'."""
        counts: dict[tuple[str, str], int] = {}
        rows = []
        for number, (tests, modules, _, _, outcomes, messages) in enumerate(self.batches):
            kept = [test in self.held for test in tests] if number in self.taken else None
            outcomes = outcomes if outcomes is not None else (Outcome.PASSED.value,) * len(tests)
            columns = [tests, modules, outcomes] + ([messages] if messages is not None else [])
            if kept is not None:
                columns = [tuple(compress(column, kept)) for column in columns]
            start = 0
            for (module, outcome), same in groupby(zip(columns[1], columns[2])):
                end = start + len(list(same))
                rows.append((module, outcome, marshal.dumps(list(columns[0][start:end])),
                             marshal.dumps(list(columns[3][start:end])) if messages is not None else None))
                counts[module, outcome] = counts.get((module, outcome), 0) + end - start
                start = end
        connection.execute("CREATE TABLE held (module TEXT NOT NULL, outcome TEXT NOT NULL, tests BLOB NOT NULL, "
                           "messages BLOB) STRICT")
        connection.executemany("INSERT INTO held (module, outcome, tests, messages) VALUES (?, ?, ?, ?)", rows)
        connection.executemany("INSERT INTO counts (run, module, outcome, n) VALUES (?, ?, ?, ?) "
                               "ON CONFLICT (run, module, outcome) DO UPDATE SET n = n + excluded.n",
                               [(run, module, outcome, n) for (module, outcome), n in counts.items()])


class _Writer:
    """Batches of one run's results into rows; the modules' replay prefixes as they are first seen."""

    def __init__(self, connection: sqlite3.Connection, run: int, aside: _Aside | None) -> None:
        self.connection, self.run, self.seq, self.aside = connection, run, 0, aside
        self.rows: set[str] = set()  # with `aside`: the tests written as rows (a plain pass may fold into one)
        self.full = False  # with `aside`: whether plain passes stopped being held (see HELD)
        self.prefixes: dict[str, str] = {}  # module -> prefix ("" when its first replay has none)
        self.repeated: set[str] = set()
        self.insert_pass = (f"INSERT INTO results (run, test, module, seq, outcome, duration) "
                            f"VALUES ({int(run)}, ?, ?, ?, '{Outcome.PASSED}', ?) ON CONFLICT (run, test) DO NOTHING")
        self.insert_skip = (f"INSERT INTO results (run, test, module, seq, outcome, duration, message) "
                            f"VALUES ({int(run)}, ?, ?, ?, ?, ?, ?) ON CONFLICT (run, test) DO NOTHING")

    def write(self, batch: list[Fields], places: Sequence[int] | None = None) -> None:
        """Insert a batch; a test already in the table (from an earlier batch) is folded into its row
        afterwards, and one that the batch holds twice before it is written. A plain pass (no
        message, node id, replay or attempts: most tests of pytest's own JUnit) binds 4 values
        instead of 10, which halves what SQLite spends on it. `places`: the tests' places, when the
        batch is part of a file whose places are already taken (`write_file`), else the next ones."""
        if places is None:
            places = range(self.seq + 1, self.seq + 1 + len(batch))
            self.seq += len(batch)
        first = min(places, default=self.seq + 1)
        tests = keys(map(_IDENTITY, batch))
        reports = list(zip(tests, places, batch))
        if len(set(tests)) < len(tests):
            reports = self._folded(reports)
        rows, passes = [], []
        for test, seq, (_, _, outcome, module, duration, message, _, nodeid, replay, attempts) in reports:
            if outcome == Outcome.PASSED and not (message or nodeid or replay or attempts):
                passes.append((test, module, seq, duration))
            else:
                rows.append(self._row(test, seq, outcome, module, duration, message, nodeid, replay, attempts))
        if self.aside is not None:
            self._write_aside(self.aside, reports, rows, passes, first)
            return
        before = self.connection.total_changes
        self.connection.executemany(self.insert_pass, passes)
        self.connection.executemany(_INSERT, rows)
        if self.connection.total_changes - before < len(reports):
            for test, _, fields in reports:
                self._fold(test, first, TestResult(*fields))

    def write_file(self, file: PlainFile) -> None:
        """A file read on the JUnit reader's plain path: its plain passes and skips from their
        columns (no Python object per test), its other tests in one batch, each in its place. Every
        test of such a file is new to the file, so only earlier files' tests can fold with them."""
        start = self.seq + 1
        self.seq += len(file)
        for plain in (file.passes, file.skips):
            if plain:
                self._write_plain(plain, list(map(start.__add__, plain.places)))
        if file.fields:
            self.write(file.fields, list(map(start.__add__, file.places)))

    def _write_plain(self, plain: Plain, seqs: list[int]) -> None:
        """Plain tests from their columns, held aside or as rows. Any folding (a test seen before,
        or two whose keys became one once per-process noise was taken out) goes the way of `write`."""
        tests = keyed(plain.joined, zip(plain.classnames, plain.names))
        if (tests is not plain.joined and len(set(tests)) < len(tests)) or self._seen(tests):
            self.write(plain.fields(), seqs)
            return
        if self._holding(len(tests)):
            self.aside.hold(tests, plain.modules, seqs, plain.durations,  # type: ignore[union-attr]
                            plain.outcomes, plain.messages)
            return
        before = self.connection.total_changes
        if plain.outcomes is None:
            self.connection.executemany(self.insert_pass, zip(tests, plain.modules, seqs, plain.durations))
        else:
            self.connection.executemany(self.insert_skip, zip(tests, plain.modules, seqs, plain.outcomes,
                                                              plain.durations, map(_or_null, plain.messages)))
        if self.connection.total_changes - before < len(tests):
            for test, fields in zip(tests, plain.fields()):
                self._fold(test, seqs[0], TestResult(*fields))

    def _holding(self, more: int) -> bool:
        """Whether `more` plain passes are held aside: while the side holds fewer than HELD tests in
        memory; once it does not, never again (a row written since is not among `rows`)."""
        self.full = self.full or self.aside is None or len(self.aside.held) + len(self.rows) + more > HELD
        return not self.full

    def _seen(self, tests: list[str]) -> bool:
        """Whether any of `tests` is held aside or written as a row already (only asked with `aside`:
        rows tell it themselves, by a conflict)."""
        return self.aside is not None and not (self.aside.held.isdisjoint(tests) and self.rows.isdisjoint(tests))

    def _write_aside(self, aside: _Aside, reports: list[tuple[str, int, Fields]], rows: list[tuple],
                     passes: list[tuple[str, str, int, float]], first: int) -> None:
        """`write`, its plain passes held aside. A report of a test held aside takes it out and
        folds with it (the fold is a row, in the place of the one held); a plain pass of a test that
        is a row already folds into that row. Those are found for the whole batch at once."""
        written = self.rows
        columns = tuple(zip(*passes)) or ((), (), (), ())
        held = aside.held
        again = (held.intersection([row[1] for row in rows]) | held.intersection(columns[0])
                 | written.intersection(columns[0]))
        if again:
            rows = [row for row in rows if row[1] not in again]
            columns = tuple(zip(*(report for report in passes if report[0] not in again))) or ((), (), (), ())
        if self._holding(len(columns[0])):
            aside.hold(*columns)
        else:
            rows += [self._row(test, seq, Outcome.PASSED, module, duration, "", "", "", ())
                     for test, module, seq, duration in zip(*columns)]
        before = self.connection.total_changes
        self.connection.executemany(_INSERT, rows)
        inserted = {row[1] for row in rows}
        if not self.full:
            written.update(inserted)
        if self.connection.total_changes - before < len(rows):  # a row of a test that is a row already
            for test, _, fields in reports:
                if test in inserted:
                    self._fold(test, first, TestResult(*fields))
        for test, _, fields in reports:
            if test not in again:
                continue
            if test in aside.held:
                seq, held = aside.pop(test)
                self.repeated.add(test)
                self.connection.execute(_INSERT, self._result_row(test, seq, merge(held, TestResult(*fields))))
                written.add(test)
            else:
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
