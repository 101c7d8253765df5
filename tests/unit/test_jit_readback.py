"""The JIT state is proven, not assumed: what CinderX reported in every test process must be what
the configuration asked for, or the comparison is invalid (exit status 2) with the file named."""

import json
from pathlib import Path

import pytest

from tests.conftest import markdown_report
from harness.compare.sweep import column_label
from harness.compare.validity import problems
from harness.record.model import FileRecord, RunRecord, TestResult
from harness.compare.sides import Side
from harness.run.events import summarize

pytestmark = pytest.mark.unit


def state(enabled=True, threshold=1000, compiled=10):
    return {"loaded": True, "available": True, "enabled": enabled, "threshold": threshold, "compiled": compiled}


def process(applied=None, finished=None, collected=True, compiled_before=0):
    return {"applied": {**(applied or state(compiled=0)), "collected": collected, "compiled_before": compiled_before},
            "finished": finished or state()}


def jit_record(*processes, jit="on", threshold=1000, activation="after-collection"):
    file = FileRecord(file="test_mod.py", module="test_mod", exit_status=0, signal=None, duration=1.0, counts={},
                      jit=processes[-1]["finished"], jit_processes=processes)
    return RunRecord(configuration={"name": "cinderx-jit", "jit": jit, "activation": activation}, tier="p0",
                     threshold=threshold if jit == "on" else None, interpreter={}, versions={}, fingerprint={},
                     tests_dir="/t", test_sources={"hash": "h"}, started="t0", status="complete", files=(file,))


def candidate_problems(record):
    baseline = RunRecord(configuration={"name": "stock", "jit": "absent"}, tier="p0", threshold=None,
                         interpreter={}, versions={}, fingerprint={}, tests_dir="/t", test_sources={"hash": "h"},
                         started="t0", status="complete")
    return problems(Side(None, (), baseline), Side(None, (), record))


def test_what_was_asked_and_read_back_everywhere_is_valid():
    assert candidate_problems(jit_record(process(), process())) == []


@pytest.mark.parametrize("record, problem", [
    (jit_record(process(), process(finished=state(threshold=5))),
     "candidate: test_mod.py: CinderX reported threshold 5 at the end (requested 1000)"),
    (jit_record(process(applied=state(threshold=None, compiled=0))),
     "candidate: test_mod.py: CinderX reported threshold None when switched (requested 1000)"),
    (jit_record(process(finished=state(enabled=False))), "candidate: test_mod.py: the JIT was off at the end (requested: on)"),
    (jit_record(process(applied=state(enabled=True), finished=state(enabled=False)), jit="off"),
     "candidate: test_mod.py: the JIT was on when switched (requested: off)"),
    (jit_record(process(collected=False)),
     "candidate: test_mod.py: the JIT was switched on before collection (requested activation: after-collection)"),
    (jit_record(process(compiled_before=212)),
     "candidate: test_mod.py: CinderX had compiled 212 functions before the harness switched the JIT on after "
     "collection: it ran from start-up (requested activation: after-collection)"),
    (jit_record(process(collected=True), activation="startup"),
     "candidate: test_mod.py: the JIT was switched on after collection (requested activation: startup)"),
])
def test_a_read_back_that_differs_from_the_request_makes_the_comparison_invalid(record, problem):
    assert candidate_problems(record) == [problem]


def test_every_process_counts_not_only_the_last(tmp_path, capsys):
    """A file resumed after a crash ran in two processes: the first one's threshold was wrong."""
    record = jit_record(process(finished=state(threshold=1)), process())
    assert candidate_problems(record) == ["candidate: test_mod.py: CinderX reported threshold 1 at the end (requested 1000)"]


def test_the_event_stream_keeps_each_process_read_back():
    applied = {"event": "jit_applied", "error": None, "state": state(compiled=0), "collected": True, "compiled_before": 0}
    events = [{"event": "session_start", "contamination": None}, {"event": "collected", "count": 1},
              {"event": "restart", "mode": "warm"}, {"event": "worker_start"}, applied,
              {"event": "session_finish", "exitstatus": 0, "jit": state(threshold=7)},
              {"event": "worker_start"}, applied, {"event": "session_finish", "exitstatus": 0, "jit": state()}]
    summary = summarize("test_mod", "test_mod.py", events)
    assert [p["finished"]["threshold"] for p in summary.jit_processes] == [7, 1000]
    assert summary.jit_processes[0]["applied"]["collected"] is True


def test_a_sweep_column_is_labelled_by_the_read_back_threshold(tmp_path, capsys):
    from tests.unit.test_verdicts_identity import make_run

    passing = {"test_ops": {"test_add": "passed"}}
    stock = make_run(tmp_path, "stock", None, passing)
    at_1 = make_run(tmp_path, "cinderx-jit", 1, passing)
    at_1000 = make_run(tmp_path, "cinderx-jit", 1000, passing)
    record_path = at_1000 / "run.json"
    record = json.loads(record_path.read_text())
    record["files"][0]["jit"]["threshold"] = 100  # CinderX ran at 100 although 1000 was asked
    record_path.write_text(json.dumps(record))
    status, out = markdown_report(["diff", str(stock), str(at_1), str(at_1000)], tmp_path / "reports")
    assert status == 2
    assert "| Module | Baseline P/F/E/S/XF | threshold 1 | threshold 100 (requested 1000) (INVALID) |" in out
    assert "candidate: test_ops.py: CinderX reported threshold 100 at the end (requested 1000)" in out


def test_a_column_without_a_read_back_says_so():
    from dataclasses import replace

    from harness.compare.diff import compare

    record = jit_record(process())
    record = replace(record, files=(replace(record.files[0], jit={"compiled": 3}, jit_processes=()),))
    result = TestResult("m.T", "t", "passed", "m")
    comparison = compare(Side(Path("stock"), (result,), None), Side(Path("jit"), (result,), record))
    assert column_label(comparison) == "threshold 1000 (not read back)"
