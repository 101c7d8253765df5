"""Arguments before the file system: every option with a syntax is refused by argparse itself, in
one line naming the option and the value (exit 3), before any path is looked at. Each case pairs a
bad value with paths that would fail too (a tests directory the tier matches nothing in, sides and
run directories that do not exist, a results folder nobody may write), so the wrong error would show."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

UNWRITABLE = "/sys/harness-results"  # refused even to root (sysfs)
MISSING = "/nonexistent/harness-side"


@pytest.fixture
def unmatched(tmp_path: Path) -> Path:
    """A tests directory whose files no tier matches: `tier 'p1' matches no test files`."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "notes.txt").write_text("no tests here\n")
    return tmp_path / "tests"


def run_p1(tests: Path, *options: str) -> list[object]:
    return ["run", "--config", "cinderx-jit", "--tier", "p1", "--tests-dir", tests, "--results", UNWRITABLE, *options]


@pytest.mark.parametrize("shard", ["3/2", "0/0", "1/0", "a/b", "0/2", "1", "1/2/3", ""])
def test_a_bad_shard_is_named_before_the_tests_directory_is_searched(shard, refused, unmatched):
    line = refused(*run_p1(unmatched, "--shard", shard))
    assert f"argument --shard: must be I/N with 1 <= I <= N, not {shard!r}" in line
    assert "matches no test files" not in line


@pytest.mark.parametrize("value, says", [("0", "a positive whole number, not '0'"),
                                         ("-2", "a positive whole number, not '-2'"),
                                         ("two", "a whole number, not 'two'")])
def test_a_bad_jobs_count_is_named_first(value, says, refused, unmatched):
    assert f"argument --jobs: expected {says}" in refused(*run_p1(unmatched, "--jobs", value))


@pytest.mark.parametrize("value, says", [("-1", "must be 0 or more, not -1"), ("1k", "expected a whole number, not '1k'")])
def test_a_bad_threshold_is_named_first(value, says, refused, unmatched):
    assert f"argument --threshold: {says}" in refused(*run_p1(unmatched, "--threshold", value))


@pytest.mark.parametrize("command, says", [
    (["diff", MISSING, MISSING + "2", "--confirm", "0"], "argument --confirm: expected a positive whole number, not '0'"),
    (["diff", MISSING, MISSING + "2", "--out", UNWRITABLE, "--confirm", "x"], "argument --confirm: expected a whole number"),
    (["diff-latest", "--results", MISSING, "--confirm", "-3"], "argument --confirm: expected a positive whole number"),
    (["culprit", MISSING, "--jobs", "0"], "argument --jobs: expected a positive whole number"),
    (["culprit", MISSING, "--probes", "none"], "argument --probes: expected a whole number"),
    (["history", "--results", MISSING, "--last", "0"], "argument --last: expected a positive whole number"),
    (["perf", "run", "--config", "stock", "--results", UNWRITABLE, "--processes", "1"],
     "argument --processes: expected a whole number of at least 2, not '1'"),
    (["perf", "run", "--config", "stock", "--results", UNWRITABLE, "--values", "1"],
     "argument --values: expected a whole number of at least 2"),
    (["perf", "run", "--config", "stock", "--results", UNWRITABLE, "--rounds", "0"],
     "argument --rounds: expected a positive whole number"),
    (["perf", "run", "--config", "cinderx-jit", "--results", UNWRITABLE, "--threshold", "-5"],
     "argument --threshold: must be 0 or more, not -5"),
    (["scan-model", "--module", "no.such:Model", "--output", UNWRITABLE + "/m.yaml", "--max-cases", "0"],
     "argument --max-cases: expected a positive whole number"),
    (["db", "ingest", ""], "argument RUN_DIR: an empty path"),
])
def test_every_command_names_a_bad_value_before_any_path(command, says, refused):
    assert says in refused(*command)
