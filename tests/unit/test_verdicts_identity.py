"""Test identity across the ways JUnit XML gets written: pytest reruns, xdist, unittest-style
reports, surefire rerun elements, per-process noise in names; shards merged into one side."""

import itertools
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

from junitparser import JUnitXml, TestCase, TestSuite

from harness.cli import main
from tests.conftest import markdown_report
from harness.compare.diff import compare
from harness.compare.identity import index
from harness.record.junit import RERUN_ATTEMPT, read_results
from harness.record.junit import write_suite
from harness.record.model import FileRecord, RunRecord, TestResult
from harness.compare.sides import Side, load_side
from harness.record.store import RunDirectory
from tests.conftest import FIXTURES

import pytest

OUTCOMES = FIXTURES / "outcomes"
_CLOCK = itertools.count()  # start times in creation order, so the newest run is the last made


def make_run(results: Path, config: str, threshold: int | None, modules: dict[str, dict[str, str]],
             shard: str | None = None, python: str = "3.14.0", compiled: int = 5) -> Path:
    """A run directory as the runner leaves it: run.json and one JUnit XML per module."""
    jit = "on" if threshold is not None else "absent"
    run = RunDirectory(results / f"{config}-p1-{threshold}-{(shard or '').replace('/', 'of')}-{len(list(results.glob('*')))}")
    run.create()
    files = []
    for module, outcomes in modules.items():
        tests = [TestResult(f"{module}.TestX", name, outcome, module, message="AssertionError: x" if outcome == "failed" else "")
                 for name, outcome in outcomes.items()]
        write_suite(run.junit(module), module, tests, {"file": f"{module}.py"}, {})
        files.append(FileRecord(file=f"{module}.py", module=module, exit_status=0, signal=None, duration=1.0, counts={},
                                jit={"compiled": compiled, "enabled": True, "threshold": threshold} if jit == "on" else None))
    run.write_record(RunRecord(
        configuration={"name": config, "jit": jit}, tier="p1", threshold=threshold, interpreter={},
        versions={"torch": "2.13.0", "python": python}, fingerprint={}, tests_dir="/t",
        test_sources={"hash": f"sources-{shard}"}, started=f"2026-11-22T00:00:{next(_CLOCK):02d}", status="complete",
        files=tuple(files), shard=shard))
    return run.root


def pytest_junit(path: Path, *args: str) -> list[TestResult]:
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_outcomes.py", *args,
                    f"--junitxml={path}"], cwd=OUTCOMES, capture_output=True)
    return read_results(path)


@pytest.mark.integration
def test_pytest_rerunfailures_reruns_are_one_test_with_its_attempts_and_xdist_changes_nothing(tmp_path):
    serial = pytest_junit(tmp_path / "serial.xml")
    parallel = pytest_junit(tmp_path / "xdist.xml", "-p", "xdist", "-n", "2")
    rerun = [r for r in serial if r.name == "test_passes_on_second_attempt"]
    assert len(rerun) == 1 and rerun[0].outcome == "passed" and rerun[0].attempts == (RERUN_ATTEMPT,)
    assert sorted(index(serial)) == sorted(index(parallel)) and len(serial) == 9
    assert {r.module for r in serial} == {"tests.fixtures.outcomes.test_outcomes"}


@pytest.mark.integration
def test_a_test_that_passed_only_on_a_rerun_is_flaky_not_a_regression(tmp_path):
    candidate = pytest_junit(tmp_path / "candidate.xml", "-k", "second_attempt")
    baseline = [TestResult(r.classname, r.name, "passed", r.module) for r in candidate]
    comparison = compare(Side(tmp_path, tuple(baseline), None), Side(tmp_path, tuple(candidate), None))
    assert comparison.regressions == () and [f.test.split("::")[1] for f in comparison.flaky] == [
        "test_passes_on_second_attempt"]
    assert "passed only on a rerun" in comparison.flaky[0].reason


@pytest.mark.unit
def test_a_would_be_regression_whose_baseline_also_failed_is_flaky(tmp_path):
    baseline = TestResult("m.T", "t", "passed", "m", attempts=("failed: AssertionError",))
    candidate = TestResult("m.T", "t", "failed", "m", message="AssertionError")
    comparison = compare(Side(tmp_path, (baseline,), None), Side(tmp_path, (candidate,), None))
    assert comparison.regressions == () and comparison.flaky[0].reason.startswith("the baseline failed too")


@pytest.mark.unit
def test_unittest_style_reports_and_surefire_rerun_elements(tmp_path):
    suite = TestSuite("TestTorch")
    suite.add_testcase(TestCase("test_add_cpu_float32", "test_torch.TestTorchDeviceTypeCPU", 0.1))
    document = JUnitXml()
    document.add_testsuite(suite)
    document.write(str(tmp_path / "TEST-TestTorch-20260217.xml"))
    tree = ElementTree.parse(tmp_path / "TEST-TestTorch-20260217.xml")
    case = tree.getroot().find(".//testcase")
    ElementTree.SubElement(case, "flakyFailure", message="AssertionError: first try")
    tree.write(tmp_path / "TEST-TestTorch-20260217.xml")
    [result] = read_results(tmp_path / "TEST-TestTorch-20260217.xml")
    assert (result.module, result.outcome, result.attempts) == ("test_torch", "passed", ("failed: AssertionError: first try",))


@pytest.mark.unit
def test_addresses_and_xdist_groups_do_not_split_a_test(tmp_path):
    before = TestResult("m.T", "test_f[<function g at 0x7f3a2c1b9e50>]", "passed", "m")
    after = TestResult("m.T", "test_f[<function g at 0x7fee01234560>]@gpu", "passed", "m")
    comparison = compare(Side(tmp_path, (before,), None), Side(tmp_path, (after,), None))
    assert comparison.new == comparison.missing == ()


@pytest.mark.unit
def test_shards_given_as_run_directories_or_a_folder_make_one_side(tmp_path, capsys):
    passing = {"test_a": "passed", "test_b": "passed"}
    base = [make_run(tmp_path / "b", "stock", None, {"test_one": passing}, shard="1/2"),
            make_run(tmp_path / "b", "stock", None, {"test_two": passing}, shard="2/2")]
    cand = [make_run(tmp_path / "c", "cinderx-jit", 1000, {"test_one": passing}, shard="1/2"),
            make_run(tmp_path / "c", "cinderx-jit", 1000, {"test_two": {"test_a": "failed"}}, shard="2/2")]
    for sides in ([*base, *cand], [tmp_path / "b", tmp_path / "c"]):
        status, out = markdown_report(["diff", *map(str, sides)], tmp_path / "reports")
        assert status == 1
        assert "## cinderx-jit (threshold 1000) [2 shards] vs stock [2 shards] (tier p1)" in out
        assert "| test_two | 2/0/0/0/0 | 0/1/0/0/0 | 5 | **1** |" in out
        assert "· missing: 1 ·" in out  # the short Markdown counts them; the JSON and HTML reports list them
    assert main(["diff", str(tmp_path / "b"), str(cand[0])]) == 2
    assert "test sources cannot be compared: baseline ran as shards 1/2, 2/2, candidate as shards 1/2" in capsys.readouterr().out


@pytest.mark.unit
def test_missing_and_foreign_shards_make_the_comparison_invalid(tmp_path):
    passing = {"test_one": {"test_a": "passed"}}
    base = make_run(tmp_path / "b", "stock", None, passing)
    shards = [make_run(tmp_path / "c", "cinderx-jit", 1000, passing, shard=shard) for shard in ("1/3", "3/3")]
    problems = compare(load_side(base), load_side(tmp_path / "c")).problems
    assert "candidate: shards missing: 2/3 (the run is incomplete)" in problems
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shards[0].rename(mixed / shards[0].name)
    make_run(mixed, "cinderx-nojit", None, passing, shard="2/3")
    problems = compare(load_side(base), load_side(mixed)).problems
    assert "candidate: merges runs of different configurations (cinderx-jit, cinderx-nojit): give the shards of one run" in problems
