"""Command-line misuse: one line naming the option, exit 3, nothing written where it should not be.

Class "CLI misuse" of docs/robustness.md. The run cases are refused before a test process starts;
the report cases before any comparison is made (so a long confirmation never ends in a crash)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

pytestmark = pytest.mark.unit

SMOKE = "harness/smoke/test_smoke.py"
UNWRITABLE = "/sys/harness-results"  # refused even to root (sysfs)


def run(*options: object) -> list[object]:
    return ["run", "--config", "stock", "--tier", "p0", *options]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    test = tmp_path / "elsewhere" / "test_outside.py"
    test.parent.mkdir()
    test.write_text("def test_outside():\n    open('ran-outside', 'w')\n")
    return test


@pytest.fixture
def junit_sides(tmp_path: Path) -> tuple[Path, Path]:
    sides = []
    for name in ("base", "cand"):
        side = tmp_path / name
        side.mkdir()
        (side / "r.xml").write_text('<testsuite name="s"><testcase classname="m" name="t"/></testsuite>')
        sides.append(side)
    return sides[0], sides[1]


def test_empty_results_is_refused_not_the_current_directory(refused, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "argument --results: an empty path" in refused(*run("--select", SMOKE, "--results", ""))
    assert list(tmp_path.iterdir()) == []


def test_empty_results_variable_means_the_default(tmp_path, monkeypatch):
    from harness.record.store import default_results_root

    monkeypatch.setenv("HARNESS_RESULTS", "")
    assert default_results_root() == Path("results")


def test_results_that_is_a_file(refused, tmp_path):
    (tmp_path / "afile").write_text("")
    message = refused(*run("--select", SMOKE, "--results", tmp_path / "afile"))
    assert message == f"harness: error: results folder {tmp_path / 'afile'}: is a file, not a folder"


def test_results_in_a_place_nobody_may_write(refused):
    assert f"results folder {UNWRITABLE}: cannot write there" in refused(*run("--select", SMOKE, "--results", UNWRITABLE))


@pytest.mark.parametrize("how", ["absolute", "climbing", "node id climbing"])
def test_select_outside_the_tests_directory_is_refused(how, refused, outside, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = {"absolute": str(outside),
              "climbing": os.path.relpath(outside, FIXTURES / "outcomes"),
              "node id climbing": f"{os.path.relpath(outside, FIXTURES / 'outcomes')}::test_outside"}[how]
    message = refused(*run("--tests-dir", FIXTURES / "outcomes", "--select", target, "--results", tmp_path / "r"))
    assert "is outside the tests directory" in message
    assert not (tmp_path / "ran-outside").exists() and not list((tmp_path / "r").iterdir())


@pytest.mark.parametrize("options, says", [
    (["--select", ""], "--select '': no file named"),
    (["--jobs", "0"], "argument --jobs: expected a positive whole number, not '0'"),
    (["--shard", "3/2"], "argument --shard: must be I/N with 1 <= I <= N, not '3/2'"),
    (["--config", "cinderx-jit", "--threshold", "-1"], "argument --threshold: must be 0 or more, not -1"),
    (["--tests-dir", ""], "argument --tests-dir: an empty path"),
    (["--no-such-option"], "unrecognized arguments: --no-such-option"),
])
def test_bad_run_options(options, says, refused, tmp_path):
    assert says in refused(*run(*options, "--results", tmp_path / "r"))


def test_resume_of_a_folder_that_is_no_run(refused, tmp_path):
    assert "run.json: not a readable run record" in refused("run", "--resume", tmp_path)


def test_the_same_folder_on_both_sides_of_a_diff(refused, junit_sides, tmp_path):
    base, _ = junit_sides
    assert "given twice" in refused("diff", base, base)
    assert "given twice" in refused("diff", base, tmp_path / "." / "base")


@pytest.mark.parametrize("option, where, says", [
    ("--out", "afile", "--out {target}: is a file, not a folder"),
    ("--out", UNWRITABLE, "--out {target}: cannot write there"),
    ("--merged-junit", "base", "--merged-junit {target}: is a directory"),
    ("--merged-junit", UNWRITABLE + "/merged.xml", "--merged-junit {parent}: cannot write there"),
])
def test_report_destinations_are_checked_before_comparing(option, where, says, refused, junit_sides, tmp_path):
    base, cand = junit_sides
    (tmp_path / "afile").write_text("")
    target = Path(where) if where.startswith("/") else tmp_path / where
    assert says.format(target=target, parent=target.parent) in refused("diff", base, cand, option, target)
    assert not list(tmp_path.rglob("*.partial"))
