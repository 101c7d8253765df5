"""Run directories into the results database: a run as it ends, runs already on disk, a rebuild, and
the databases of other machines (CI jobs) merged into one.

Ingesting is idempotent, keyed by run identity (configuration, tier, threshold, shard, start time,
environment fingerprint: the same in every copy of the run, wherever it was ingested). A run whose
stamp (sizes and modification times of run.json and its JUnit files) is unchanged is left alone; a
changed one (resumed since, say) replaces its rows, unless the copy already stored is further along
(a complete run is never replaced by an interrupted copy of itself).

A run is first streamed into a private scratch database, without holding the shared one; the shared
one is then written in one short transaction (`copy_runs`, which `db merge` uses too), so many
writers take turns of seconds, and no reader ever sees half a run.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError, WriteError
from harness.record import coverage, database
from harness.record.database import connect, opened, reported, writing
from harness.record.junit import JUnitFiles
from harness.record.model import RunRecord
from harness.record.store import RUN_RECORD, RunDirectory
from harness.record.stream import COLUMNS as _RESULT_COLUMNS
from harness.record.stream import stream

_STATUS_RANK = {"running": 0, "interrupted": 1, "complete": 2}  # how far along a run got
_RUN_COLUMNS = ("identity", "directory", "stamp", "configuration", "tier", "threshold", "shard", "jit", "python",
                "torch", "cinderx", "harness", "fingerprint", "sources", "sources_commit", "started", "finished",
                "status", "compiled", "tests", "record")
_FILE_COLUMNS = ("file", "module", "exit_status", "signal", "duration", "compiled", "culprit", "processes")
_COUNT_COLUMNS = ("module", "outcome", "n")
_COVERAGE_COLUMNS = ("subpackage", "defined", "compiled")
_FUNCTION_COLUMNS = ("subpackage", "function")


@dataclass(frozen=True)
class Ingested:
    """What became of one run: added, replaced (changed since), unchanged, or kept (the database
    holds a copy further along)."""

    identity: str
    directory: str
    action: str


def run_identity(record: RunRecord) -> str:
    """The same string for every copy of one run, on any machine."""
    return "|".join(str(part) for part in (
        record.configuration.get("name"), record.tier, record.threshold, record.shard or "", record.started,
        record.fingerprint.get("hash", "")))


def stamp(run_dir: Path) -> str:
    """What a run directory's results look like now: a hash of the names, sizes and modification
    times of its run record and JUnit files."""
    entries = []
    for path in [run_dir / RUN_RECORD, *sorted((run_dir / "junit").glob("*.xml"))]:
        status = path.stat()
        entries.append((path.name, status.st_size, status.st_mtime_ns))
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()[:16]


def run_directories(paths: Iterable[Path]) -> list[Path]:
    """Run directories, and the run directories inside folders (a results root)."""
    found = []
    for path in paths:
        if (path / RUN_RECORD).is_file():
            found.append(path)
            continue
        inside = sorted(record.parent for record in path.glob(f"*/{RUN_RECORD}")) if path.is_dir() else []
        if not inside:
            raise HarnessError(f"{path}: not a run directory (no {RUN_RECORD}) and no run directories in it")
        found.extend(inside)
    return found


def ingest(target: Path, run_dirs: Iterable[Path]) -> list[Ingested]:
    """Add run directories to the database at `target` (created if absent). Each run is one
    transaction: a full disk stops the rest, and the runs stored before it stay."""
    done: list[Ingested] = []
    runs = list(run_dirs)
    with opened(target) as connection:
        try:
            for run_dir in runs:
                done.append(_ingest_one(connection, target, run_dir))
        except WriteError as error:
            if len(runs) == 1:
                raise
            raise WriteError(f"{error}; {len(done)} of the {len(runs)} runs were stored before it",
                             error.remedy) from None
    return done


def merge(target: Path, sources: Iterable[Path]) -> list[Ingested]:
    """Add every run of other results databases (one per CI job, say) to the one at `target`."""
    with opened(target) as connection:
        done = []
        for source in sources:
            if source.resolve() == target.resolve():
                raise HarnessError(f"{source}: is the database being merged into")
            connect(source, create=False).close()  # refused with one line unless it is a results database
            done.extend(copy_runs(connection, target, source))
        return done


def rebuild(target: Path, results_root: Path, announce: Callable[[str], None] = print) -> tuple[list[Ingested], list[str]]:
    """Make the database at `target` again from the run directories under `results_root`; the old
    file (corrupt, foreign or fine) is replaced, never read. Returns what was ingested and, for
    run directories that could not be read, why (they are left out)."""
    fresh = target.with_name(target.name + ".rebuild")
    _remove_database(fresh)
    done, skipped = [], []
    try:
        with opened(fresh) as connection:
            for run_dir in sorted(record.parent for record in results_root.glob(f"*/{RUN_RECORD}")):
                try:
                    done.append(_ingest_one(connection, fresh, run_dir))
                except WriteError:
                    raise  # the new file cannot be finished: no run is to blame
                except HarnessError as error:
                    skipped.append(str(error))
                    announce(f"left out: {error}")
    except WriteError as error:
        _remove_database(fresh)
        raise WriteError(f"{error}; {target} is left as it was", error.remedy) from None
    _remove_database(target)
    fresh.replace(target)
    return done, skipped


def stored_run(run_dir: Path, record: RunRecord) -> tuple[Path, int] | None:
    """Where the results database holds this run directory's results as they are on disk now
    (its file and run id), or None: not ingested, or changed since."""
    target = database.database_path(run_dir.parent)
    if not target.is_file():
        return None
    connection = database.read_only(target)  # a diff only reads: results on a read-only disk are fine
    try:
        with reported(target):
            if connection.execute("PRAGMA user_version").fetchone()[0] != database.SCHEMA_VERSION:
                return None  # not made yet, or older: the next write migrates it; read the JUnit meanwhile
            found = connection.execute("SELECT id, stamp FROM runs WHERE identity = ?",
                                       (run_identity(record),)).fetchone()
    finally:
        connection.close()
    return (target, found[0]) if found is not None and found[1] == stamp(run_dir) else None


def ingest_finished(run_dir: Path, results_root: Path, announce: Callable[[str], None] = print) -> None:
    """What the runner does when a run ends: add it to the results root's database."""
    target = database.database_path(results_root)
    try:
        [done] = ingest(target, [run_dir])
    except WriteError as error:
        raise WriteError(f"{error}; the run is kept whole in {run_dir}: {error.remedy}, then add it with: "
                         f"python -m harness db ingest {run_dir} --results {results_root}", error.remedy) from None
    announce(f"results database: {done.action} in {target}")


def _ingest_one(connection: sqlite3.Connection, target: Path, run_dir: Path) -> Ingested:
    record = RunDirectory(run_dir).read_record()
    identity, current = run_identity(record), stamp(run_dir)
    with reported(target):
        found = connection.execute("SELECT stamp FROM runs WHERE identity = ?", (identity,)).fetchone()
    if found is not None and found[0] == current:
        return Ingested(identity, str(run_dir), "unchanged")
    with _scratch() as scratch:
        _write_run(scratch, run_dir, record, current)
        [done] = copy_runs(connection, target, scratch)
    return done


def _write_run(path: Path, run_dir: Path, record: RunRecord, current: str) -> None:
    """One run, complete, as run 1 of a scratch database."""
    with opened(path, scratch=True) as connection:
        tests = stream(connection, 1, JUnitFiles.of(RunDirectory(run_dir).junit_files())).tests
        with writing(connection):
            connection.execute(_insert("runs", ("id", *_RUN_COLUMNS)), (1, *_run_row(record, run_dir, current, tests)))
            connection.executemany(_insert("files", ("run", *_FILE_COLUMNS)), [
                (1, f.file, f.module, f.exit_status, f.signal, f.duration, (f.jit or {}).get("compiled"), f.culprit,
                 f.processes) for f in record.files])
            _write_coverage(connection, coverage.read(run_dir))


def _write_coverage(connection: sqlite3.Connection, found: coverage.Coverage | None) -> None:
    """A JIT run's coverage of torch: per subpackage, and every function compiled."""
    if found is None:
        return
    connection.executemany(_insert("coverage", ("run", *_COVERAGE_COLUMNS)),
                           [(1, row.part, row.defined, row.compiled) for row in found.rows])
    connection.executemany(_insert("compiled_functions", ("run", *_FUNCTION_COLUMNS)),
                           [(1, sub, key) for sub, keys in found.compiled.items() for key in keys])


def _run_row(record: RunRecord, run_dir: Path, current: str, tests: int) -> tuple:
    versions = record.versions
    return (run_identity(record), str(run_dir.resolve()), current, str(record.configuration.get("name")),
            record.tier, record.threshold, record.shard, record.jit_mode, versions.get("python"),
            versions.get("torch"), versions.get("cinderx"), versions.get("harness"), record.fingerprint.get("hash"),
            record.test_sources.get("hash"), record.test_sources.get("commit"), record.started, record.finished,
            record.status, record.compiled if record.jit_mode == "on" else None, tests,
            json.dumps(record.to_json(), sort_keys=True))


def copy_runs(connection: sqlite3.Connection, target: Path, source: Path) -> list[Ingested]:
    """Copy every run of the database at `source` into `connection`'s, in one transaction."""
    with reported(target):
        connection.execute("ATTACH DATABASE ? AS source", (str(source),))
        try:
            with writing(connection):
                return [_copy_run(connection, *run) for run in connection.execute(
                    "SELECT id, identity, directory, stamp, status, tests FROM source.runs ORDER BY started").fetchall()]
        finally:
            connection.execute("DETACH DATABASE source")


def _copy_run(connection: sqlite3.Connection, run: int, identity: str, directory: str, current: str, status: str,
              tests: int) -> Ingested:
    found = connection.execute("SELECT id, stamp, status, tests FROM runs WHERE identity = ?", (identity,)).fetchone()
    if found is not None:
        if found[1] == current:
            return Ingested(identity, directory, "unchanged")
        if (_STATUS_RANK.get(found[2], 0), found[3]) > (_STATUS_RANK.get(status, 0), tests):
            return Ingested(identity, directory, "kept")
        for table in ("prefixes", "counts", "results", "files", "coverage", "compiled_functions"):
            connection.execute(f"DELETE FROM {table} WHERE run = ?", (found[0],))
        connection.execute("DELETE FROM runs WHERE id = ?", (found[0],))
    added = connection.execute(f"INSERT INTO runs ({', '.join(_RUN_COLUMNS)}) SELECT {', '.join(_RUN_COLUMNS)} "
                               "FROM source.runs WHERE id = ?", (run,)).lastrowid
    for table, columns in (("files", _FILE_COLUMNS), ("results", _RESULT_COLUMNS), ("counts", _COUNT_COLUMNS),
                           ("prefixes", ("module", "prefix")), ("coverage", _COVERAGE_COLUMNS),
                           ("compiled_functions", _FUNCTION_COLUMNS)):
        connection.execute(f"INSERT INTO {table} (run, {', '.join(columns)}) SELECT ?, {', '.join(columns)} "
                           f"FROM source.{table} WHERE run = ?", (added, run))
    return Ingested(identity, directory, "replaced" if found is not None else "added")


def _insert(table: str, columns: tuple[str, ...]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


@contextmanager
def _scratch() -> Iterator[Path]:
    """A private scratch database file in a temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="harness-ingest-") as folder:
        yield Path(folder) / "run.db"


def _remove_database(path: Path) -> None:
    """A database file and its WAL companions (a stale -wal would be replayed into a new file)."""
    for companion in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        companion.unlink(missing_ok=True)
