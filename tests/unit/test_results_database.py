"""The results database: idempotent ingest, merge, many real writers at once, bad database files,
rebuild, and the diff reading ingested runs exactly as it reads their JUnit XML."""

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cli import main
from harness.compare.diff import compare
from harness.errors import HarnessError
from harness.record.database import connect
from harness.record.ingest import ingest, merge, stored_run
from harness.record.junit import write_suite
from harness.record.model import TestResult
from harness.compare.sides import Side, load_side
from harness.record.junit import JUnitFiles
from harness.record.store import RunDirectory
from tests.conftest import FIXTURES, run_fixtures, write_run

MANY = {f"test_{i}": "failed" if i % 7 == 0 else "passed" for i in range(5000)}


def rows(database: Path, sql: str) -> list[tuple]:
    connection = sqlite3.connect(database)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def tree_digest(root: Path) -> str:
    """Every file under `root` (names and bytes), except the database itself."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "harness.db" not in p.name):
        digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.unit
def test_ingest_is_idempotent_and_a_further_along_copy_is_kept(tmp_path):
    run = write_run(tmp_path / "results", "stock", {"test_a": "passed", "test_b": "failed"}, started="2026-11-01T00:00:00")
    database = tmp_path / "results" / "harness.db"
    assert [d.action for d in ingest(database, [run, run])] == ["added", "unchanged"]
    assert rows(database, "SELECT count(*) FROM runs") == [(1,)]
    assert sorted(rows(database, "SELECT test, outcome FROM results")) == [
        ("test_mod.TestX::test_a", "passed"), ("test_mod.TestX::test_b", "failed")]
    # the same run, copied while it was still going: it never replaces the complete one
    copy = write_run(tmp_path / "copy", "stock", {"test_a": "passed"}, started="2026-11-01T00:00:00", status="interrupted")
    assert [d.action for d in ingest(database, [copy])] == ["kept"]
    assert rows(database, "SELECT status, tests FROM runs") == [("complete", 2)]
    other = tmp_path / "other.db"
    assert [d.action for d in ingest(other, [copy])] == ["added"]
    assert [d.action for d in merge(other, [database])] == ["replaced"]  # the complete copy wins, in either order
    assert [d.action for d in merge(other, [database])] == ["unchanged"]
    assert rows(other, "SELECT status, tests FROM runs") == [("complete", 2)]


@pytest.mark.integration
def test_eight_concurrent_writers_lose_and_duplicate_nothing(tmp_path):
    first = write_run(tmp_path / "results", "config0", MANY, started="2026-11-01T00:00:00")
    runs = [first]
    for i in range(1, 16):  # copies of one run, each its own run (configuration, start)
        run = RunDirectory(first.with_name(f"config{i % 4}-p1-{i}"))
        shutil.copytree(first, run.root)
        run.write_record(replace(run.read_record(), configuration={"name": f"config{i % 4}", "jit": "absent"},
                                 started=f"2026-11-01T00:00:{i:02d}"))
        runs.append(run.root)
    database = tmp_path / "shared.db"
    writers = [subprocess.Popen([sys.executable, "-m", "harness", "db", "ingest", *map(str, runs[w::8] + runs[(w + 1) % 8::8])],
                                env={**os.environ, "HARNESS_DB": str(database)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for w in range(8)]  # every run is ingested by two writers at once
    outputs = [writer.communicate(timeout=600) for writer in writers]
    assert [writer.returncode for writer in writers] == [0] * 8, [err for _, err in outputs]
    actions = [line.split(": ", 1) for out, _ in outputs for line in out.splitlines() if not line.startswith("results")]
    assert sorted(directory for action, directory in actions if action == "added") == sorted(map(str, runs))
    assert {action for action, _ in actions} == {"added", "unchanged"}
    assert rows(database, "SELECT count(*), count(DISTINCT identity), sum(tests) FROM runs") == [(16, 16, 16 * 5000)]
    assert rows(database, "SELECT count(*) FROM results") == [(16 * 5000,)]
    assert rows(database, "SELECT sum(n) FROM counts WHERE outcome = 'failed'") == [(16 * 715,)]


@pytest.mark.unit
@pytest.mark.parametrize("kind", ["corrupt", "foreign"])
def test_a_corrupt_or_foreign_database_is_one_line_naming_it_and_rebuild_recovers(kind, tmp_path, capsys):
    results = tmp_path / "results"
    write_run(results, "stock", {"test_a": "passed"}, started="2026-11-01T00:00:00")
    database = results / "harness.db"
    if kind == "corrupt":
        database.write_bytes(b"SQLite format 3\x00" + b"\x07" * 4000)
    else:  # another program's database, with writes still in its write-ahead log
        other = sqlite3.connect(tmp_path / "other.db")
        other.executescript("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; "
                            "CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL); INSERT INTO invoices VALUES (1, 9.5);")
        for suffix in ("", "-wal"):
            shutil.copy(tmp_path / f"other.db{suffix}", results / f"harness.db{suffix}")
        other.close()
    companions = sorted(results.glob("harness.db*"))
    before, runs_before = [path.read_bytes() for path in companions], tree_digest(results)
    for command in (["history"], ["db", "ingest"], ["db", "merge", str(database)]):
        arguments = command + ([str(results)] if command == ["db", "ingest"] else []) + ["--results", str(results)]
        assert main(arguments) == 3
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(database) in err and "Traceback" not in err, err
        assert ("another program's SQLite database" in err) == (kind == "foreign")
    assert [path.read_bytes() for path in companions] == before and tree_digest(results) == runs_before
    assert main(["db", "rebuild", "--results", str(results)]) == 0  # the stale write-ahead log is not replayed
    assert tree_digest(results) == runs_before
    assert main(["history", "--results", str(results)]) == 0
    assert "stock-p1-20261101T000000" in capsys.readouterr().out


@pytest.mark.integration
def test_a_run_whose_database_is_unusable_is_kept_whole(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "harness.db").write_bytes(b"not a database at all, but long enough to look like a header")
    with pytest.raises(HarnessError, match="harness.db: not a usable results database"):
        run_fixtures(results, ("test_outcomes.py",))
    [run] = [path for path in results.iterdir() if path.is_dir()]
    assert RunDirectory(run).read_record().status == "complete"
    assert main(["db", "rebuild", "--results", str(results)]) == 0
    assert rows(results / "harness.db", "SELECT count(*) FROM results") == [(9,)]


@pytest.mark.unit
def test_the_diff_reads_ingested_runs_and_notices_when_they_change(tmp_path):
    results = tmp_path / "results"
    baseline = write_run(results, "stock", {"test_a": "passed", "test_b": "passed", "test_c": "failed"},
                         started="2026-11-01T00:00:00")
    candidate = write_run(results, "cinderx-jit", {"test_a": "failed", "test_b": "passed", "test_d": "passed"},
                          started="2026-11-01T00:00:01", threshold=1000)
    streamed = compare(load_side(baseline), load_side(candidate))
    ingest(results / "harness.db", [baseline, candidate])
    assert stored_run(candidate, RunDirectory(candidate).read_record()) is not None
    assert compare(load_side(baseline), load_side(candidate)) == streamed
    assert [r.test for r in streamed.regressions] == ["test_mod.TestX::test_a"]
    write_run(results, "cinderx-jit", {"test_a": "passed", "test_b": "passed", "test_d": "passed"},
              started="2026-11-01T00:00:01", threshold=1000)  # rewritten in place: the database copy is stale
    assert stored_run(candidate, RunDirectory(candidate).read_record()) is None
    assert compare(load_side(baseline), load_side(candidate)).regressions == ()


@pytest.mark.unit
def test_a_test_reported_twice_on_one_side_is_one_test_with_its_attempts(tmp_path):
    """Across files (a rerun report beside the first one) the last report decides, as within one file."""
    first, second = tmp_path / "side" / "first.xml", tmp_path / "side" / "second.xml"
    first.parent.mkdir()
    failed = TestResult("m.T", "test_x", "failed", "m", message="AssertionError: boom")
    write_suite(first, "m", [failed, TestResult("m.T", "test_y", "passed", "m")], {}, {})
    write_suite(second, "m", [TestResult("m.T", "test_x", "passed", "m")], {}, {})
    baseline = Side(tmp_path, (TestResult("m.T", "test_x", "passed", "m"), TestResult("m.T", "test_y", "passed", "m")), None)
    for candidate in (Side(tmp_path, JUnitFiles((first, second)), None), load_side(tmp_path / "side")):
        comparison = compare(baseline, candidate)
        assert comparison.regressions == () and comparison.missing == comparison.new == ()
        [flaky] = comparison.flaky
        assert flaky.reason == "the candidate passed only on a rerun (failed: AssertionError: boom)"
        assert comparison.modules[0].candidate == {"passed": 2}


@pytest.mark.unit
def test_a_database_from_a_newer_harness_is_refused_untouched(tmp_path):
    database = tmp_path / "harness.db"
    connect(database).close()
    newer = sqlite3.connect(database)
    newer.execute("PRAGMA user_version = 99")
    newer.close()
    before = database.read_bytes()
    with pytest.raises(HarnessError, match="written by a newer harness"):
        connect(database)
    assert database.read_bytes() == before


@pytest.mark.integration
def test_a_run_is_ingested_when_it_ends(tmp_path):
    run = run_fixtures(tmp_path / "results", ("test_ops.py",), tests_dir=FIXTURES / "verdicts",
                       env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    [file] = RunDirectory(run.root).read_record().files
    assert rows(tmp_path / "results" / "harness.db", "SELECT directory, status, tests FROM runs") == [
        (str(run.root.resolve()), "complete", sum(file.counts.values()))]
