"""`python -m harness` as users and other tools call it: exit statuses and one-line errors."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES

import pytest

pytestmark = pytest.mark.integration


def harness(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True, cwd=cwd)


def pytest_junit(tmp_path: Path, name: str, *selection: str) -> Path:
    """A directory holding pytest's own --junitxml output for some fixture tests."""
    folder = tmp_path / name
    folder.mkdir()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection,
                    f"--junitxml={folder / 'test_outcomes.xml'}"], cwd=FIXTURES / "outcomes", capture_output=True)
    return folder


def test_diff_of_pytest_junit_directories_finds_the_regression(tmp_path):
    baseline = pytest_junit(tmp_path, "base", "test_outcomes.py::test_passes", "test_outcomes.py::TestGrouped")
    candidate = pytest_junit(tmp_path, "cand", "test_outcomes.py::test_fails", "test_outcomes.py::TestGrouped")
    (candidate / "test_outcomes.xml").write_text(
        (candidate / "test_outcomes.xml").read_text().replace('name="test_fails"', 'name="test_passes"'))
    done = harness("diff", baseline, candidate, "--format", "json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["valid"] is True and report["summary"]["regressions"] == 1
    assert report["regressions"][0]["test"].endswith("test_outcomes::test_passes")
    # plain pytest JUnit: the module comes from the classname (pytest's rootdir is this repository)
    assert report["modules"][0] == {"module": "tests.fixtures.outcomes.test_outcomes", "baseline": {"passed": 3}, "candidate": {"failed": 1, "passed": 2},
                                    "jit_compiled": None, "regressions": 1, "known_regressions": 0, "vacuous": False}


def test_same_junit_against_itself_exits_zero_and_writes_every_format(tmp_path):
    side = pytest_junit(tmp_path, "side", "test_outcomes.py", "-k", "not second_attempt")
    copy = shutil.copytree(side, tmp_path / "copy")  # the same folder twice is refused: it proves nothing
    done = harness("diff", side, copy, "--format", "md", "json", "html", "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    # pytest writes a non-strict xpass as a plain pass, so plain JUnit shows it among the passes
    assert "| tests.fixtures.outcomes.test_outcomes | 4/1/1/1/1 | 4/1/1/1/1 | — | 0 |" in (tmp_path / "out" / "report.md").read_text()
    assert json.loads((tmp_path / "out" / "report.json").read_text())["exit_status"] == 0
    assert "<html" in (tmp_path / "out" / "report.html").read_text().lower()


def test_unreadable_input_is_exit_3_with_the_file_named(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.xml").write_text("<testsuite><testcase name='x'")
    done = harness("diff", bad, shutil.copytree(bad, tmp_path / "copy"))
    assert done.returncode == 3
    assert done.stderr.strip().count("\n") == 0 and "broken.xml" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_directory_and_bad_options_are_exit_3(tmp_path):
    assert harness("diff", tmp_path / "nope", tmp_path).returncode == 3
    done = harness("run", "--config", "stock")
    assert done.returncode == 3 and "--tier" in done.stderr
    done = harness("run", "--config", "stock", "--tier", "p0", "--threshold", "1")
    assert done.returncode == 3 and "--threshold applies to JIT configurations" in done.stderr


def test_select_of_a_missing_file_is_exit_3(tmp_path):
    done = harness("run", "--config", "stock", "--tier", "p0", "--select", "nope/test_x.py", "--results", tmp_path)
    assert done.returncode == 3 and "--select: nope/test_x.py not found" in done.stderr


def test_an_interpreter_that_cannot_describe_itself_leaves_no_run_directory(tmp_path):
    """The first test processes start before the interpreter has described itself; when it cannot,
    they are stopped, the half-made run directory is removed, and the error is one line."""
    done = harness("run", "--config", "stock", "--tier", "p0", "--python", "/bin/false", "--results", tmp_path / "results")
    assert done.returncode == 3
    assert done.stderr.strip() == "harness: error: interpreter /bin/false failed to describe itself: no output"
    assert not any((tmp_path / "results").glob("*/run.json")) and not any((tmp_path / "results").glob("*/*"))
