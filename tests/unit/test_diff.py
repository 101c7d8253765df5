"""The verdict: regressions, fixes, new and missing tests, validity, exit statuses."""

from dataclasses import replace
from pathlib import Path

import pytest

from harness.compare.classify import classify
from harness.compare.diff import compare
from harness.record.model import FileRecord, RunRecord, TestResult
from harness.compare.sides import Side

pytestmark = pytest.mark.unit


def result(name, outcome, module="test_mod", message=""):
    return TestResult(classname=f"{module}.TestX", name=name, outcome=outcome, module=module, message=message)


def record(jit="absent", compiled=0, status="complete", torch="2.14.1", sources="abc", contamination=None,
           culprit=None, python="3.14.0"):
    jit_state = {"compiled": compiled, "loaded": jit != "absent"} if jit != "absent" else None
    file = FileRecord(file="test_mod.py", module="test_mod", exit_status=0, signal=None, duration=1.0,
                      counts={}, jit=jit_state, contamination=contamination, culprit=culprit)
    return RunRecord(configuration={"name": "x", "jit": jit}, tier="p0", threshold=1000 if jit == "on" else None,
                     interpreter={"cinderx_origin": None}, versions={"torch": torch, "python": python},
                     fingerprint={}, tests_dir="/t", test_sources={"hash": sources}, started="t0",
                     status=status, files=(file,))


def side(results, rec=None):
    return Side(Path("side"), tuple(results), rec)


BASE = [result("test_a", "passed"), result("test_b", "passed"), result("test_c", "failed"), result("test_d", "passed")]


def test_regressions_fixes_new_and_missing():
    candidate = [result("test_a", "failed", message="AssertionError: nope"), result("test_b", "passed"),
                 result("test_c", "passed"), result("test_e", "passed")]
    comparison = compare(side(BASE, record()), side(candidate, record(jit="on", compiled=5)))
    assert [(r.test, r.baseline, r.candidate) for r in comparison.regressions] == [("test_mod.TestX::test_a", "passed", "failed")]
    assert comparison.regressions[0].classification == "exception (AssertionError)"
    assert comparison.fixes == ("test_mod.TestX::test_c",)
    assert comparison.new == ("test_mod.TestX::test_e",)
    assert comparison.missing == ("test_mod.TestX::test_d",)
    assert comparison.valid and comparison.exit_status == 1


def test_identical_runs_are_valid_with_no_regressions():
    comparison = compare(side(BASE, record()), side(BASE, record(jit="on", compiled=3)))
    assert comparison.exit_status == 0
    row = comparison.modules[0]
    assert (row.module, row.jit_compiled, row.regressions) == ("test_mod", 3, 0)
    assert row.baseline == {"passed": 3, "failed": 1}


def test_a_file_split_over_shards_counts_the_functions_compiled_in_every_piece():
    one = record(jit="on", compiled=3)
    split = replace(one, files=(*one.files, replace(one.files[0], jit={"compiled": 4, "loaded": True})))
    row = compare(side(BASE, record()), side(BASE, split)).modules[0]
    assert row.jit_compiled == 7 and not row.vacuous


def test_tests_missing_because_the_file_crashed_are_regressions():
    candidate = [result("test_a", "passed"), result("test_b", "crashed", message="process died with SIGSEGV")]
    crashed = record(jit="on", compiled=9, culprit="test_mod.py::test_b: process died with SIGSEGV")
    comparison = compare(side(BASE, record()), side(candidate, crashed))
    assert [(r.test.split("::")[1], r.candidate) for r in comparison.regressions] == [("test_b", "crashed"), ("test_d", "crashed")]
    assert comparison.regressions[0].classification == "crash (SIGSEGV)"
    assert comparison.missing == ("test_mod.TestX::test_c",)  # failing before, not run after: not a regression


@pytest.mark.parametrize("stopped", [
    TestResult(classname="", name="test_mod", outcome="error", module="test_mod",
               message="collection error: ImportError: cannot import name 'x'"),  # this harness: pytest collected nothing
    TestResult(classname="test_mod", name="<process>", outcome="error", module="test_mod",
               message="collection error: process died with exit status 1 before pytest started"),  # PyTorch's script way
    TestResult(classname="", name="test_mod", outcome="error", module="junit-report",
               message="collection failure"),  # pytest's own --junitxml names the file in the case's name
], ids=["collection-error", "script-ended-before-pytest", "plain-pytest-junit"])
def test_tests_of_a_file_that_stopped_before_its_tests_ran_are_regressions(stopped):
    comparison = compare(side(BASE, record()), side([stopped], record(jit="on", compiled=4)))
    assert [(r.test.split("::")[1], r.candidate) for r in comparison.regressions] == [
        ("test_a", "error"), ("test_b", "error"), ("test_d", "error")]
    assert comparison.regressions[0].detail == f"not run: {stopped.message}"
    assert comparison.regressions[0].classification == "infrastructure (collection or import)"
    assert comparison.missing == ("test_mod.TestX::test_c",)  # failing before, not run after: not a regression
    assert comparison.exit_status == 1


def test_an_error_of_one_test_stops_no_other_test():
    """Only a file-level error explains the file's missing tests: a test's own error does not."""
    candidate = [result("test_a", "error", message="ImportError: inside the test"), result("test_b", "passed")]
    comparison = compare(side(BASE, record()), side(candidate, record(jit="on", compiled=4)))
    assert [r.test.split("::")[1] for r in comparison.regressions] == ["test_a"]
    assert comparison.missing == ("test_mod.TestX::test_c", "test_mod.TestX::test_d")


def test_vacuous_jit_run_is_invalid():
    comparison = compare(side(BASE, record()), side(BASE, record(jit="on", compiled=0)))
    assert comparison.exit_status == 2
    assert any("vacuous" in p for p in comparison.problems)
    assert comparison.modules[0].vacuous


def test_contaminated_baseline_is_invalid():
    comparison = compare(side(BASE, record(contamination="cinderx importable from /x")), side(BASE, record(jit="on", compiled=1)))
    assert comparison.problems == ("baseline is contaminated: cinderx importable from /x",)


def test_different_torch_interpreter_sources_and_incomplete_runs_are_invalid():
    candidate = replace(record(jit="on", compiled=1, torch="2.13.0", sources="def", python="3.12.0"), status="interrupted")
    problems = compare(side(BASE, record()), side(BASE, candidate)).problems
    assert len(problems) == 4
    assert "candidate run is incomplete (status: interrupted)" in problems
    assert any(p.startswith("torch versions differ") for p in problems)
    assert any(p.startswith("interpreter versions differ") for p in problems)
    assert any(p.startswith("test sources differ") for p in problems)


def test_plain_junit_sides_are_compared_with_a_note():
    comparison = compare(side(BASE), side([result("test_a", "error")]))
    assert comparison.valid and len(comparison.regressions) == 1
    assert len(comparison.notes) == 2 and "no run record" in comparison.notes[0]


def test_classification_hints():
    assert classify("failed", "Tensor-likes are not close!") == "numerics beyond tolerance"
    assert classify("timeout", "timed out") == "timeout"
    assert classify("failed", "InductorBuildFailed: Inductor's C++ build failed: x.cpp:3: error: 'y' was not declared"
                    ) == "Inductor's C++ build failed"
    assert classify("error", "collection error: ImportError") == "infrastructure (collection or import)"
    assert classify("crashed", "process died with SIGBUS while running x") == "crash (SIGBUS)"
    assert classify("failed", "AssertionError: dynamo captured no graph of f: torch.compile's callable ran it "
                              "eagerly (silent fallback)") == "torch.compile fell back to eager"
    assert classify("failed", "RuntimeError: torch.compile with fullgraph=True found no compiled frames. "
                              "Compilation was not attempted") == "torch.compile fell back to eager"
    assert classify("failed", "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>") \
        == "network (no network access)"
    assert classify("error", "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='x', port=443): "
                             "Max retries exceeded with url: /a") == "network (no network access)"


def test_pytorch_test_switches_must_match(tmp_path):
    """PYTORCH_TEST_WITH_SLOW=1 on one side only runs other tests: no verdict."""
    slow = replace(record(jit="on", compiled=3), fingerprint={"pytorch_switches": {"PYTORCH_TEST_WITH_SLOW": "1"}})
    plain = replace(record(), fingerprint={"pytorch_switches": {}})
    comparison = compare(side(BASE, plain), side(BASE, slow))
    assert comparison.exit_status == 2
    assert comparison.problems == ("PyTorch test switch PYTORCH_TEST_WITH_SLOW differs: baseline unset, candidate 1",)
    assert compare(side(BASE, plain), side(BASE, replace(slow, fingerprint=plain.fingerprint))).valid


def test_worker_processes_without_the_jit_make_a_jit_run_invalid():
    escaped = {"started": 2, "reported": 3, "as_requested": 2, "compiled": 40, "killed": 0,
               "without_jit": ["1234 -c from multiprocessing.spawn import spawn_main: JIT not enabled"],
               "unreported": ["1240: exit status 0"]}
    jit_run = record(jit="on", compiled=0)
    jit_run = replace(jit_run, files=(replace(jit_run.files[0], descendants=escaped),))
    comparison = compare(side(BASE, record()), side(BASE, jit_run))
    assert comparison.exit_status == 2
    assert comparison.problems == (
        "candidate: test_mod.py: 1 of 3 worker processes ran without the JIT "
        "(1234 -c from multiprocessing.spawn import spawn_main: JIT not enabled)",
        "candidate: test_mod.py: 1 of 2 worker processes ended without reporting their JIT state (1240: exit status 0)")
    assert comparison.modules[0].jit_compiled == 40  # what the workers compiled counts: not vacuous
