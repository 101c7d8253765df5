"""A full disk on a real file system (a tmpfs of a chosen size, tests/conftest.py: `small_disk`):
the command stops with one line naming the full disk, nothing written before is lost or damaged,
and once space is freed the same command (a run: `--resume`) finishes the work.

Class "Full disk" of docs/robustness.md. Mounting needs root: elsewhere these tests are skipped,
saying so."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.compare.culprit.cinderx import write_jit_list
from harness.errors import WriteError
from harness.record import coverage
from harness.record.culprits import Culprit, CulpritStatus, jit_list_path, read_culprits, write_culprit
from harness.record.junit import read_results
from harness.record.store import RunDirectory
from tests.adversarial.conftest import one_line
from tests.conftest import FIXTURES, write_run

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FILES = ("test_a_first.py", "test_b_fills_disk.py", "test_c_last.py")


def harness(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def cli(*args: object) -> int:
    return main([str(arg) for arg in args])


def outcomes(run: RunDirectory) -> dict[str, list[str]]:
    return {path.stem: sorted(result.outcome for result in read_results(path)) for path in run.junit_files()}


def test_a_run_that_fills_its_disk_keeps_every_finished_file_and_resumes_to_a_complete_run(small_disk, tmp_path):
    """The second file's test fills the disk (as a test writing a large artifact would): the run
    stops at the next write, keeps the first file's results, says how to go on; after the space is
    freed, `--resume` runs what is left and the run is complete, as if nothing had happened."""
    disk = small_disk("1m")
    filling = {"HARNESS_TEST_FILL": str(disk.root / "filler"), "HARNESS_TEST_FILLED": str(tmp_path / "filled")}
    stopped = harness("run", "--config", "stock", "--tier", "p0", "--tests-dir", FIXTURES / "disk", "--select", *FILES,
                      "--results", disk.root, env=filling)
    assert stopped.returncode == 3, stopped.stderr
    [root] = [path for path in disk.root.iterdir() if path.is_dir()]
    run = RunDirectory(root)
    line = one_line(stopped.stderr)
    assert line.startswith("harness: error: run stopped: ") and "cannot write" in line
    assert f"; 1 file's results are kept in {root}: free space, then continue with: " \
           f"python -m harness run --resume {root}" in line
    record = run.read_record()
    assert [f.file for f in record.files] == ["test_a_first.py"] and record.status == "interrupted"
    assert outcomes(run) == {"test_a_first": ["failed", "passed"]}
    assert not list(disk.root.rglob("*.partial")) and not list(disk.root.rglob("*.reserve"))

    disk.free()
    resumed = harness("run", "--resume", root, env=filling)
    assert resumed.returncode == 0, resumed.stderr
    assert "[1/2] " in resumed.stdout and "results database: added" in resumed.stdout
    record = run.read_record()
    assert record.status == "complete" and sorted(f.file for f in record.files) == sorted(FILES)
    assert not run.reserve.path.exists()
    assert outcomes(run) == {"test_a_first": ["failed", "passed"], "test_b_fills_disk": ["passed"],
                             "test_c_last": ["passed", "skipped"]}


def test_a_run_whose_results_folder_vanishes_stops_in_one_line(tmp_path):
    """Not only a full disk: any write refused mid-run stops the run the same way, and what was
    recorded stays where it is."""
    results = tmp_path / "results"
    env = {"HARNESS_TEST_FILL": "", "HARNESS_TEST_FILLED": ""}
    done = subprocess.Popen([sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "p0", "--tests-dir",
                             str(FIXTURES / "disk"), "--select", *FILES, "--results", str(results)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    out = done.stdout.readline() + done.stdout.readline()  # the sources line, then the first file done
    assert "[1/3] test_a_first.py" in out, out + done.stderr.read()
    [root] = list(results.iterdir())
    for part in ("junit", "events"):
        os.rename(root / part, tmp_path / part)  # a cleanup job takes them away
    assert done.wait(timeout=120) == 3
    line = one_line(done.stderr.read())
    assert "run stopped: " in line and "cannot write: its folder no longer exists" in line
    assert f"1 file's results are kept in {root}: restore the folder, then continue with" in line
    assert [f.file for f in RunDirectory(root).read_record().files] == ["test_a_first.py"]


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A baseline and two candidates in JUnit XML: the second one's report differs from the first's."""
    folders = []
    for name, outcome in (("base", ""), ("cand", '<failure message="boom"/>'), ("cand2", "<skipped/>")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "r.xml").write_text(f'<testsuite name="s"><testcase classname="m" name="t">{outcome}</testcase>'
                                      '<testcase classname="m" name="u"/></testsuite>')
        folders.append(folder)
    return folders[0], folders[1], folders[2]


def test_diff_reports_on_a_full_disk_leave_the_earlier_reports_whole(small_disk, sides, capsys):
    disk = small_disk("2m")
    base, cand, cand2 = sides
    out = disk.root / "reports"
    assert cli("diff", base, cand, "--format", "md", "json", "html", "--out", out) == 1
    written = disk.tree()
    assert json.loads(written["reports/report.json"])["summary"]["regressions"] == 1
    disk.fill()
    capsys.readouterr()
    assert cli("diff", base, cand2, "--format", "md", "json", "html", "--out", out) == 3
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"harness: error: {out}/report.") and line.endswith(": cannot write: the disk is full")
    assert disk.tree() == written and not list(disk.root.rglob("*.partial"))
    disk.free()
    assert cli("diff", base, cand2, "--format", "md", "json", "--out", out) == 0
    assert json.loads((out / "report.json").read_text())["summary"]["regressions"] == 0


def test_culprit_files_on_a_full_disk_keep_what_earlier_searches_found(small_disk):
    disk = small_disk("100k")
    run = write_run(disk.root, "cinderx-jit", {"test_x": "failed", "test_y": "failed"}, started="2026-11-02T00:00:00",
                    threshold=1)
    found = Culprit(CulpritStatus.FOUND, reproducer="env ... sh -c 'pytest ...'", candidates=3, probes=2)
    write_culprit(run, "test_mod.TestX::test_x", found)
    listed = jit_list_path(run, "test_mod.TestX::test_x")
    write_jit_list(listed, ["torch.nn.functional:relu"])
    before = disk.tree()
    disk.fill()
    with pytest.raises(WriteError, match=r"culprits\.json: cannot write: the disk is full$") as refused:
        write_culprit(run, "test_mod.TestX::test_y", found)
    assert refused.value.remedy == "free space"
    with pytest.raises(WriteError, match=r"\.jitlist: cannot write: the disk is full$"):
        write_jit_list(listed, ["torch.nn.functional:relu", "torch.nn.functional:gelu"])
    assert disk.tree() == before and not list(disk.root.rglob("*.partial"))
    assert list(read_culprits(run)) == ["test_mod.TestX::test_x"]
    disk.free()
    write_culprit(run, "test_mod.TestX::test_y", found)
    assert sorted(read_culprits(run)) == ["test_mod.TestX::test_x", "test_mod.TestX::test_y"]


def test_a_coverage_file_on_a_full_disk_keeps_the_one_before(small_disk):
    disk = small_disk("100k")
    run = RunDirectory(write_run(disk.root, "cinderx-jit", {"test_x": "passed"}, started="2026-11-02T00:00:00",
                                 threshold=1))
    first = coverage.Coverage("2.14.1", {"fx": 4}, {"fx": ("torch.fx.graph:f:1",)}, runs=(run.root.name,))
    coverage.write(run, first)
    disk.fill()
    more = coverage.Coverage("2.14.1", {"fx": 4}, {"fx": ("torch.fx.graph:f:1", "torch.fx.graph:g:9")} | {
        "nn": tuple(f"torch.nn.m:f{i}:1" for i in range(2000))}, runs=(run.root.name,))
    with pytest.raises(WriteError, match=r"coverage\.json: cannot write: the disk is full$"):
        coverage.write(run, more)
    assert coverage.read(run.root) == first and not list(disk.root.rglob("*.partial"))


def test_the_database_on_a_full_disk_is_named_full_and_stays_intact(small_disk, capsys):
    disk = small_disk("3m")
    first = write_run(disk.root, "stock", {f"test_{i}": "passed" for i in range(20)}, started="2026-11-01T00:00:00")
    second = write_run(disk.root, "cinderx-jit", {f"test_{i}": "failed" for i in range(2000)},
                       started="2026-11-02T00:00:00", threshold=1, messages={f"test_{i}": "x" * 200 for i in range(2000)})
    assert cli("db", "ingest", first, "--results", disk.root) == 0
    database = disk.root / "harness.db"
    disk.fill()
    for command in (["db", "ingest", second], ["db", "rebuild"]):
        capsys.readouterr()
        assert cli(*command, "--results", disk.root) == 3
        line = one_line(capsys.readouterr().err)
        assert f"the disk is full at {database}; the database is intact" in line or \
               f"{database}.rebuild; the database is intact; {database} is left as it was" in line, line
    assert not (disk.root / "harness.db.rebuild").exists()
    disk.free()  # (SQLite cannot even open a WAL database for reading on a full disk: its -shm is made anew)
    connection = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert connection.execute("SELECT configuration, tests FROM runs").fetchall() == [("stock", 20)]
    connection.close()
    assert cli("db", "ingest", second, "--results", disk.root) == 0
    assert "added:" in capsys.readouterr().out
