"""The results database: one SQLite file of runs and their test results, derived from run directories.

Run directories stay the source of truth: the database is what they say, in a form that answers
questions about time (harness/compare/history.py) and compares runs of any size without holding
them in memory (harness/compare/pairs.py). `python -m harness db rebuild` makes it again from the
run directories at any time.

Schema at a glance (docs/history.md has every column):

    runs      one row per run: configuration, tier, threshold, shard, versions, fingerprint,
              source identity, status, the run record itself, and where it was read from
    files     one row per test file of a run: exit status, signal, duration, JIT compile count
    results   one row per test of a run: outcome, duration, message, node id, replay command,
              earlier attempts; `test` is the test's identity key (harness/record/identity.py)
    counts    per run and module, how many tests ended with each outcome
    prefixes  per run and module, the replay command without a node id (a test's own is stored only
              when it is not this prefix followed by its node id: most of a row's bytes otherwise)
    coverage  per JIT run and torch subpackage, functions defined and functions the JIT compiled
    compiled_functions  per JIT run, every torch function the JIT compiled (merged over runs by union)

Many processes write one database (CI shards, parallel sessions): it runs in WAL mode, a writer
waits up to BUSY_TIMEOUT for another, and every write is one transaction. A file that is not
SQLite, or is another program's SQLite, or comes from a newer harness, is refused with one line
naming it, and is never modified.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from harness.errors import MACHINE_ERRNOS, HarnessError, disk_full, write_error
from harness.protocol import BAD_OUTCOMES, Setting
from harness.record.writing import make_folder, nearly_full

DATABASE_NAME = "harness.db"  # in the results root, beside the run directories
APPLICATION_ID = 0x48524E53  # "HRNS" in SQLite's header: this file is the harness's
BUSY_TIMEOUT = 300.0  # seconds a writer waits for another one (an ingest holds the lock for seconds)
REBUILD = "python -m harness db rebuild rebuilds it from the run directories"

# The results that count against a test (harness.protocol.BAD_OUTCOMES), as SQL: the partial index
# results_failing holds them, and a query answers from it when its WHERE has this very term.
FAILING = "outcome IN (" + ", ".join(f"'{outcome}'" for outcome in sorted(BAD_OUTCOMES)) + ")"

# MIGRATIONS[n] takes a database from schema version n to n + 1; a released step never changes.
MIGRATIONS: tuple[str, ...] = (
    f"""
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        identity TEXT NOT NULL UNIQUE,  -- configuration|tier|threshold|shard|started|fingerprint
        directory TEXT NOT NULL,        -- the run directory it was read from
        stamp TEXT NOT NULL,            -- sizes and times of its files then: stale when they differ
        configuration TEXT NOT NULL,
        tier TEXT NOT NULL,
        threshold INTEGER,
        shard TEXT,                     -- "I/N", or NULL for a whole run
        jit TEXT NOT NULL,              -- absent | off | on
        python TEXT,
        torch TEXT,
        cinderx TEXT,
        harness TEXT,
        fingerprint TEXT,               -- the environment fingerprint's hash
        sources TEXT,                   -- the test sources' content hash
        sources_commit TEXT,
        started TEXT NOT NULL,          -- ISO 8601, UTC
        finished TEXT,
        status TEXT NOT NULL,           -- running | complete | interrupted
        compiled INTEGER,               -- functions the JIT compiled, all files; NULL without a JIT
        tests INTEGER NOT NULL,         -- rows in results
        record TEXT NOT NULL            -- run.json as read (JSON)
    ) STRICT;
    CREATE INDEX runs_by_series ON runs (configuration, tier, threshold, started);
    CREATE TABLE files (
        run INTEGER NOT NULL REFERENCES runs (id),
        file TEXT NOT NULL,
        module TEXT NOT NULL,
        exit_status INTEGER,
        signal TEXT,
        duration REAL NOT NULL,
        compiled INTEGER,
        culprit TEXT,                   -- the test that crashed or hung its process
        processes INTEGER NOT NULL,
        PRIMARY KEY (run, file)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE results (
        run INTEGER NOT NULL,           -- runs.id; 0 in a comparison's scratch database
        test TEXT NOT NULL,             -- identity key: classname::name, per-process noise removed
        module TEXT NOT NULL,
        seq INTEGER NOT NULL,           -- position in the run (JUnit order)
        outcome TEXT NOT NULL,          -- passed failed error skipped xfailed xpassed crashed timeout
        duration REAL NOT NULL,         -- seconds
        message TEXT,                   -- the failure's message; NULL when none
        nodeid TEXT,
        replay TEXT,                    -- the command that reruns it alone; NULL when it is its module's
                                        -- prefix (prefixes) followed by the quoted node id
        attempts TEXT,                  -- JSON list of earlier attempts ("failed: message"); NULL when none
        PRIMARY KEY (run, test)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX results_failing ON results (run, test) WHERE {FAILING};
    CREATE TABLE prefixes (
        run INTEGER NOT NULL,
        module TEXT NOT NULL,
        prefix TEXT NOT NULL,           -- the replay command of the module's tests, without a node id
        PRIMARY KEY (run, module)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE counts (
        run INTEGER NOT NULL,
        module TEXT NOT NULL,
        outcome TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (run, module, outcome)
    ) STRICT, WITHOUT ROWID;
    """,
    """
    CREATE TABLE coverage (
        run INTEGER NOT NULL,
        subpackage TEXT NOT NULL,       -- torch's subpackage (_dynamo, fx, ...); "" for its top-level modules
        defined INTEGER NOT NULL,       -- functions its sources define (harness/run/census.py)
        compiled INTEGER NOT NULL,      -- of those, compiled by the JIT at least once in the run
        PRIMARY KEY (run, subpackage)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE compiled_functions (
        run INTEGER NOT NULL,
        subpackage TEXT NOT NULL,
        function TEXT NOT NULL,         -- module:qualname:line of a torch definition the JIT compiled
        PRIMARY KEY (run, function)
    ) STRICT, WITHOUT ROWID;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def database_path(results_root: Path) -> Path:
    """HARNESS_DB, or the database beside the run directories of `results_root`."""
    named = os.environ.get(Setting.DATABASE)
    return Path(named) if named else results_root / DATABASE_NAME


@contextmanager
def reported(path: Path) -> Iterator[None]:
    """SQLite's errors on this file as one line naming it (exit status 3), never a traceback."""
    try:
        yield
    except OSError as error:  # the lock file or the folder beside the database
        if error.errno not in MACHINE_ERRNOS:
            raise
        raise write_error(error.filename or path, error) from None
    except sqlite3.OperationalError as error:
        if "locked" in str(error) or "busy" in str(error):
            raise HarnessError(f"{path}: still locked by another writer after {BUSY_TIMEOUT:.0f} s") from None
        if _out_of_space(error, path):
            raise disk_full(path) from None
        raise HarnessError(f"{path}: not a usable results database: {error} ({REBUILD})") from None
    except sqlite3.DatabaseError as error:
        raise HarnessError(f"{path}: not a usable results database: {error} ({REBUILD})") from None


def _out_of_space(error: sqlite3.Error, path: Path) -> bool:
    """SQLite says SQLITE_FULL when a page does not fit; a write the kernel refuses in the write-ahead
    log or its shared memory reaches it as an I/O error ("disk I/O error"): then the disk is asked.
    Either way SQLite has rolled the transaction back, and the database is as it was before."""
    name = getattr(error, "sqlite_errorname", "")
    if name == "SQLITE_FULL":
        return True
    return name.startswith("SQLITE_IOERR") and nearly_full(path.parent)


def connect(path: Path, *, create: bool = True, scratch: bool = False) -> sqlite3.Connection:
    """An open results database at its newest schema, created when `create` and absent.

    A scratch database (one side of a comparison, a run before it is merged in) is private to one
    process and can be remade: it skips the journal's durability."""
    if not create and not path.is_file():
        raise HarnessError(f"{path}: no results database (runs are added as they end; {REBUILD})")
    if path.is_dir():
        raise HarnessError(f"{path}: is a directory, not a results database")
    make_folder(path.parent)
    with reported(path), nullcontext() if scratch else _one_opener(path):
        if path.is_file() and path.stat().st_size:
            read_only(path).close()  # look before opening for writing, see read_only
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
        try:
            if scratch:
                connection.execute("PRAGMA journal_mode = OFF")
                connection.execute("PRAGMA synchronous = OFF")
            else:
                connection.execute("PRAGMA journal_mode = WAL")
                connection.execute("PRAGMA synchronous = NORMAL")
            _migrate(connection, path)
            if scratch:  # written once, read by test: the history's index of failing results only costs here
                connection.execute("DROP INDEX IF EXISTS results_failing")
        except BaseException:
            connection.close()
            raise
    return connection


@contextmanager
def _one_opener(path: Path) -> Iterator[None]:
    """Processes open (create, migrate) a shared database one at a time, under a lock file beside it.
    SQLite's own locks leave a window while a new file is being made: 8 writers starting at once
    on a new database saw it half-made ("another program's SQLite database") in 1 of 4 runs. Once
    open, writers share it through SQLite (WAL, busy timeout)."""
    with open(path.with_name(f"{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextmanager
def opened(path: Path, *, create: bool = True, scratch: bool = False) -> Iterator[sqlite3.Connection]:
    """`connect`, closed when the block ends; SQLite's errors inside it are one line naming the file."""
    connection = connect(path, create=create, scratch=scratch)
    try:
        with reported(path):
            yield connection
    finally:
        connection.close()


@contextmanager
def writing(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, taken at once (BEGIN IMMEDIATE), so two writers never deadlock
    upgrading a read lock; committed when the block ends, rolled back when it raises."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        if connection.in_transaction:  # SQLite has already rolled back after SQLITE_FULL or an I/O error
            connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def read_only(path: Path) -> sqlite3.Connection:
    """An existing database opened for reading only, once it is known to be ours. Nothing is
    written through it: closing a writable connection checkpoints a pending write-ahead log into
    the file, which must never happen to a file that is not ours (or on a read-only disk)."""
    with reported(path):
        connection = sqlite3.connect(read_only_uri(path), uri=True, timeout=BUSY_TIMEOUT, isolation_level=None)
        try:
            _check_foreign(connection, path)
        except BaseException:
            connection.close()
            raise
    return connection


def read_only_uri(path: Path) -> str:
    """The URI that opens (or attaches) `path` for reading only."""
    return f"{path.resolve().as_uri()}?mode=ro"


def _check_foreign(connection: sqlite3.Connection, path: Path) -> None:
    """Refuse, before changing anything, a database that is not ours or is newer than this harness."""
    application = connection.execute("PRAGMA application_id").fetchone()[0]
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if application == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise HarnessError(f"{path}: written by a newer harness (schema {version}; this one knows up to "
                               f"{SCHEMA_VERSION}): upgrade the harness, or point {Setting.DATABASE} at another file")
        return
    tables = connection.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0]
    if application != 0 or version != 0 or tables:
        raise HarnessError(f"{path}: another program's SQLite database (application id {application:#x}, "
                           f"{tables} schema objects), not a results database; point {Setting.DATABASE} at another file")


def _migrate(connection: sqlite3.Connection, path: Path) -> None:
    """Bring the schema to SCHEMA_VERSION, step by step, in one write transaction (a second process
    opening the same new file waits, then finds the work done)."""
    if connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return
    with writing(connection):
        _check_foreign(connection, path)  # again, under the lock: another process may have made it meanwhile
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        for step in MIGRATIONS[version:]:
            for statement in _statements(step):
                connection.execute(statement)
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _statements(script: str) -> list[str]:
    """A migration's statements, one by one: executescript would commit the transaction they belong to."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    return statements
