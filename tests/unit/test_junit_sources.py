"""JUnit from other producers as a side: PyTorch CI's test-report folders (reruns, several files per
test file, names that describe the job), a test reported in two files (the verdict does not depend
on which is read first), folders with links that lead nowhere, and the fast reading path against
the one that builds TestResults."""

import itertools
import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import markdown_report
from harness.compare.identity import index
from harness.record.ci_reports import Artifact, describe
from harness.record.database import opened
from harness.record.junit import JUnitFiles, read_results, write_suite
from harness.record.model import TestResult
from harness.record.stream import BATCH, COLUMNS, stream
from harness.record.stream import held as held_aside
from tests.conftest import FIXTURES

pytestmark = pytest.mark.unit

SAMPLE = FIXTURES / "pytorch_ci"
NN_FILES = SAMPLE / "candidate" / "test-reports-test-default-2-2-linux.2xlarge_8002" / "test" / "test-reports" / \
    "python-pytest" / "test_nn"


def diff_json(baseline: Path, candidate: Path, capsys) -> tuple[int, dict]:
    status = main(["diff", str(baseline), str(candidate), "--format", "json"])
    return status, json.loads(capsys.readouterr().out)


def test_pytorch_ci_reports_reruns_are_flaky_and_the_folders_name_the_side(capsys, tmp_path):
    status, report = diff_json(SAMPLE / "baseline", SAMPLE / "candidate", capsys)
    assert status == 1
    assert [r["test"] for r in report["regressions"]] == ["test_ops.TestCommonCPU::test_mul_cpu_float32"]
    flaky = {f["test"]: f["reason"] for f in report["flaky"]}
    assert sorted(flaky) == ["test_nn.TestNN::test_conv2d", "test_ops.TestCommonCPU::test_div_cpu_float32"]
    assert "passed only on a rerun (failed: RuntimeError: sample flake)" in flaky[
        "test_ops.TestCommonCPU::test_div_cpu_float32"]
    assert "failed: RuntimeError: sample failure in a fresh process" in flaky["test_nn.TestNN::test_conv2d"]
    assert any("candidate: tests reported more than once (in different suites or files): 1;" in note
               and note.endswith("test_nn.TestNN::test_conv2d") for note in report["notes"])
    status, markdown = markdown_report(["diff", str(SAMPLE / "baseline"), str(SAMPLE / "candidate")], tmp_path / "reports")
    assert status == 1
    assert ("## default shards 1/2, 2/2 (linux.2xlarge, jobs 8001, 8002) vs default shards 1/2, 2/2 "
            "(linux.2xlarge, jobs 7001, 7002)") in markdown


def test_rerun_elements_are_failed_attempts_and_a_test_that_never_passed_keeps_them():
    [path] = (SAMPLE / "candidate").rglob("test_ops-*.xml")
    results = {r.name: r for r in read_results(path)}
    assert (results["test_div_cpu_float32"].outcome, results["test_div_cpu_float32"].attempts) == (
        "passed", ("failed: RuntimeError: sample flake",))
    assert results["test_mul_cpu_float32"].outcome == "failed"
    assert results["test_mul_cpu_float32"].attempts == ("failed: AssertionError: Tensor-likes are not close!",) * 2


@pytest.mark.parametrize("first", ["failing", "passing"])
def test_a_test_in_two_files_gives_the_same_verdict_whichever_file_is_read_first(first, tmp_path, capsys):
    base, cand = tmp_path / "base", tmp_path / "cand"
    base.mkdir()
    cand.mkdir()
    (base / "r.xml").write_text('<testsuite name="s"><testcase classname="m.T" name="t"/></testsuite>')
    reports = {"failing": '<testsuite name="s"><testcase classname="m.T" name="t"><failure message="boom"/>'
                          '</testcase></testsuite>',
               "passing": '<testsuite name="s"><testcase classname="m.T" name="t"/></testsuite>'}
    second = "passing" if first == "failing" else "failing"
    (cand / "a.xml").write_text(reports[first])
    (cand / "b.xml").write_text(reports[second])
    status, report = diff_json(base, cand, capsys)
    assert status == 0 and report["regressions"] == []
    assert [(f["test"], f["candidate"], f["reason"]) for f in report["flaky"]] == [
        ("m.T::t", "passed", "the candidate passed only on a rerun (failed: boom)")]
    assert any(note.startswith("candidate: tests reported more than once") for note in report["notes"])


def test_the_in_memory_index_folds_reports_in_any_order_alike():
    reports = read_results(_candidate_nn("1a2b")) + read_results(_candidate_nn("f0e1"))
    assert index(reports) == index(reversed(reports))
    assert index(reports)["test_nn.TestNN::test_conv2d"].attempts == (
        "failed: RuntimeError: sample failure in a fresh process",)


def _candidate_nn(prefix: str) -> Path:
    [path] = NN_FILES.glob(f"test_nn-{prefix}*.xml")
    return path


@pytest.mark.parametrize("link", ["dangling", "loop"])
def test_a_link_to_nothing_is_one_line_naming_it(link, tmp_path, capsys):
    base, cand = tmp_path / "base", tmp_path / "cand"
    for side in (base, cand):
        side.mkdir()
        (side / "r.xml").write_text('<testsuite name="s"><testcase classname="m" name="t"/></testsuite>')
    (cand / "again").symlink_to(cand)  # a folder that holds itself: not followed
    bad = cand / f"{link}.xml"
    bad.symlink_to(bad if link == "loop" else cand / "nowhere.xml")
    assert main(["diff", str(base), str(cand)]) == 3
    err = capsys.readouterr().err
    assert err == f"harness: error: {bad}: not readable as JUnit XML: a symbolic link that leads to no file " \
                  "(dangling, or a loop)\n"
    bad.unlink()
    assert main(["diff", str(base), str(cand)]) == 0


@pytest.mark.parametrize("name, expected", [
    ("test-reports-test-default-2-5-linux.2xlarge_4711", Artifact("test", "default", 2, 5, "linux.2xlarge", "4711")),
    ("unzipped-test-reports-test-dynamo_wrapped-1-3-macos-m1-stable_12.zip",
     Artifact("test", "dynamo_wrapped", 1, 3, "macos-m1-stable", "12")),
    ("test-reports", None), ("results", None)])
def test_artifact_names(name, expected):
    assert Artifact.named(name) == expected


def test_a_plain_folder_has_no_ci_description(tmp_path):
    assert describe(tmp_path) is None
    (tmp_path / "test-reports-test-slow-1-1-linux.4xlarge_9").mkdir()
    assert describe(tmp_path) == "slow shard 1/1 (test on linux.4xlarge, job 9)"


def test_the_fast_path_writes_the_rows_that_the_results_would(tmp_path):
    """JUnit of every kind the repository has (PyTorch CI's sample, the harness's own with replay
    commands, attempts and a test written twice), streamed from its XML as Fields and from
    TestResults: the same rows, counts and prefixes."""
    prefix = "cd /t && python -m pytest"
    results = [TestResult("m.T", f"t{i}", outcome, "m", 0.5, "AssertionError: x" if outcome == "failed" else "",
                          nodeid=f"m.py::T::t{i}", attempts=("failed: first",) if i == 3 else ())
               for i, outcome in enumerate(["passed", "failed", "skipped", "passed", "crashed"])]
    write_suite(tmp_path / "harness.xml", "m", results, {"file": "m.py", "replay_prefix": prefix},
                {r.nodeid: f"{prefix} {r.nodeid}" for r in results})
    write_suite(tmp_path / "again.xml", "m", results[:2], {"file": "m.py"}, {})
    sources = sorted(SAMPLE.rglob("*.xml")) + [tmp_path / "harness.xml", tmp_path / "again.xml"]
    tables = []
    for name, side in (("fast", JUnitFiles.of(sources)), ("results", [r for p in sources for r in read_results(p)])):
        with opened(tmp_path / f"{name}.db", scratch=True) as connection:
            stream(connection, 0, side)
            tables.append([connection.execute(f"SELECT {', '.join(COLUMNS)} FROM results ORDER BY test").fetchall(),
                           connection.execute("SELECT * FROM counts ORDER BY module, outcome").fetchall(),
                           connection.execute("SELECT * FROM prefixes ORDER BY module").fetchall()])
    assert tables[0] == tables[1]
    assert len(tables[0][0]) == 13 and tables[0][2] == [(0, "m", prefix)]


@pytest.mark.parametrize("aside", [False, True], ids=["rows", "passes aside"])
@pytest.mark.parametrize("apart", [False, True], ids=["one batch", "batches apart"])
def test_reports_of_one_test_fold_alike_in_every_order(apart, aside, tmp_path):
    """Three reports of one test, written in every order, in one batch of the stream or in batches
    far apart, with plain passes as rows or held aside: one row, the same every time, in the place
    of the first report."""
    reports = [TestResult("m.T", "t", "failed", "m", message="AssertionError: x"),
               TestResult("m.T", "t", "passed", "m", attempts=("failed: first",)),
               TestResult("m.T", "t", "skipped", "m", message="no GPU")]
    filler = [TestResult("m.T", f"other{i}", "passed", "m") for i in range(BATCH if apart else 3)]
    rows = set()
    for number, order in enumerate(itertools.permutations(reports)):
        with opened(tmp_path / f"{number}.db", scratch=True) as connection:
            written = stream(connection, 0, [order[0], *filler, order[1], order[2]], aside=aside)
            rows.add(connection.execute(f"SELECT {', '.join(COLUMNS)} FROM results WHERE test = 'm.T::t'").fetchone())
        assert (written.tests, written.repeated, written.repeated_named) == (len(filler) + 1, 1, ("m.T::t",))
    assert rows == {("m.T::t", "m", 1, "passed", 0.0, None, None, None,
                     json.dumps(["failed: AssertionError: x", "failed: first", "skipped: no GPU"]))}


@pytest.mark.parametrize("apart", [False, True], ids=["one batch", "batches apart"])
def test_a_plain_pass_reported_twice_folds_alike_held_aside(apart, tmp_path):
    """A plain pass reported again (as a plain pass, then as a failure) in every order, plain passes
    held aside: the same row as when they are rows; the other plain passes are no rows but counted."""
    reports = [TestResult("m.T", "t", "passed", "m", duration=0.5),
               TestResult("m.T", "t", "passed", "n", duration=0.25),
               TestResult("m.T", "t", "failed", "m", message="AssertionError: x")]
    filler = [TestResult("m.T", f"other{i}", "passed", "m") for i in range(BATCH if apart else 3)]
    for number, order in enumerate(itertools.permutations(reports)):
        found = []
        for aside in (False, True):
            with opened(tmp_path / f"{number}-{aside}.db", scratch=True) as connection:
                written = stream(connection, 0, [order[0], *filler, order[1], order[2]], aside=aside)
                found.append((written, connection.execute(f"SELECT {', '.join(COLUMNS)} FROM results "
                                                          "WHERE test = 'm.T::t'").fetchone(),
                              connection.execute("SELECT * FROM counts ORDER BY module, outcome").fetchall()))
                if aside:
                    assert connection.execute("SELECT count(*) FROM results").fetchone()[0] == 1
                    held = {test for module in held_aside(connection) for test in module.passes}
                    assert held == {f"m.T::other{i}" for i in range(len(filler))}
        assert found[0] == found[1]
