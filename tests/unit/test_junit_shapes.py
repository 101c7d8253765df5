"""JUnit XML as other tools write it, read as its writers mean it (issue 39): the verdict a user sees
for each shape in tests/fixtures/junit_shapes/ (the exit status and JSON report of `harness diff`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.compare.diff import compare
from harness.compare.sides import load_side
from harness.exits import ExitStatus
from harness.record.junit import read_results
from harness.report.json_report import to_json
from harness.report.model import build

pytestmark = pytest.mark.unit

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "junit_shapes"


def _diff(shape: str) -> tuple[int, dict]:
    """What `harness diff BASELINE CANDIDATE --format json` gives for a shape: exit status and report."""
    comparison = compare(load_side(SHAPES / shape / "baseline"), load_side(SHAPES / shape / "candidate"))
    return comparison.exit_status, to_json(build([comparison]))  # type: ignore[return-value]


def test_a_skip_marker_beside_a_failure_or_an_error_does_not_hide_it():
    """<skipped/> then <failure> (or <error>) in one test: the worst element decides, so both are
    regressions, and each keeps every element's message."""
    status, report = _diff("skip_then_failure")
    assert status == ExitStatus.REGRESSIONS
    found = {r["test"]: r for r in report["regressions"]}
    assert found["test_ops.TestOps::test_mul"]["candidate"] == "failed"
    assert found["test_ops.TestOps::test_div"]["candidate"] == "error"
    assert "AssertionError: 6 != 5" in found["test_ops.TestOps::test_mul"]["detail"]
    assert "marked slow" in found["test_ops.TestOps::test_mul"]["detail"]


def test_every_element_text_is_kept_worst_first():
    [_, mul, div] = read_results(SHAPES / "skip_then_failure" / "candidate" / "report.xml")
    assert mul.message == "AssertionError: 6 != 5; also skipped: marked slow"
    assert mul.text.startswith("mul returned 6")
    assert div.outcome == "error" and div.text.startswith("division by zero")


def test_counts_a_suite_claims_but_does_not_show_make_the_comparison_invalid():
    """A suite of only counts (tests=6 failures=1 skipped=2, no <testcase>): not a silent valid
    verdict over 0 tests, but a problem of that side naming its file and the numbers."""
    status, report = _diff("claimed_counts")
    assert status == ExitStatus.INVALID and report["valid"] is False
    [problem] = report["problems"]
    assert problem.startswith("candidate: ") and "claimed_counts/candidate/report.xml" in problem
    assert "claims tests=6, failures=1, skipped=2" in problem
    assert "show tests=0, failures=0, skipped=0" in problem


def test_a_nameless_test_is_named_by_its_place_and_the_rest_is_compared():
    """One <testcase> without name or classname no longer refuses the side: it is named by its file
    and place, a note says so, and the other tests' regression is found."""
    status, report = _diff("nameless")
    assert status == ExitStatus.REGRESSIONS
    assert [r["test"] for r in report["regressions"]] == ["test_ops.TestOps::test_mul"]
    notes = [n for n in report["notes"] if "without a name" in n]
    assert len(notes) == 2 and "unnamed testcase 2 of report.xml" in notes[1]
    assert "nameless/candidate/report.xml:5" in notes[1]
    assert not report["missing"] and not report["new"]  # named alike on both sides
