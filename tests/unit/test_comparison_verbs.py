"""Test runs and perf runs are compared with the same verbs, arguments and labels: `diff` and
`diff-latest` (perf's older `compare` and `compare-latest` still work), sides named
"<configuration> (threshold N)" in both reports."""

from __future__ import annotations

import pytest

from harness.cli import build_parser
from harness.commands import diff as diff_command
from harness.commands import perf as perf_command
from harness.perf.record import PerfRecord
from harness.record.model import side_label

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("prefix", [[], ["perf"]], ids=["tests", "perf"])
def test_both_pipelines_take_the_same_diff_and_diff_latest_arguments(prefix):
    parser = build_parser()
    pair = parser.parse_args([*prefix, "diff", "base", "c1", "c2", "--format", "md", "json", "--out", "o"])
    assert (str(pair.baseline), [str(c) for c in pair.candidates], pair.formats, str(pair.out)) == \
        ("base", ["c1", "c2"], ["md", "json"], "o")
    latest = parser.parse_args([*prefix, "diff-latest", "--results", "r"])
    assert str(latest.results) == "r"


def test_perf_keeps_its_older_verbs_as_aliases_of_the_same_commands():
    parser = build_parser()
    assert parser.parse_args(["perf", "compare", "a", "b"]).handler is parser.parse_args(["perf", "diff", "a", "b"]).handler
    assert parser.parse_args(["perf", "compare-latest"]).handler is parser.parse_args(["perf", "diff-latest"]).handler
    assert parser.parse_args(["perf", "diff", "a", "b"]).handler is not parser.parse_args(["diff", "a", "b"]).handler


def test_a_perf_side_is_labelled_as_a_test_side():
    record = PerfRecord(configuration="cinderx-jit", threshold=1, jit="on", interpreter={}, versions={}, fingerprint={},
                        command=(), benchmarks=(), started="t0")
    assert record.label == side_label("cinderx-jit", 1) == "cinderx-jit (threshold 1)"
    assert side_label("stock", None) == "stock"
    assert diff_command.TESTS.what == "run" and perf_command.PERF.what == "perf run"
