"""Hostile test processes, run by the real runner: junk in the event stream, a child pytest, a forked
copy writing a forged result, processes left in sessions of their own, a process that never exits.

Class "hostile test processes" of docs/robustness.md: every result that finished is kept, nothing
a test started outlives its file, and a stray write costs nobody else's result."""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path

import pytest

from harness.record.junit import read_results
from tests.adversarial.conftest import HOSTILE
from tests.conftest import FIXTURES, run_fixtures

pytestmark = pytest.mark.integration


def run_hostile(tmp_path: Path, *targets: str, **options):
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    options.setdefault("tests_dir", HOSTILE)
    run = run_fixtures(tmp_path / "results", targets, env={"HOSTILE_STATE": str(state), "OMP_NUM_THREADS": "1"},
                       **options)
    return run, state


def outcomes(run, module: str) -> dict[str, str]:
    return {result.name: result.outcome for result in read_results(run.junit(module))}


def alive(pid: int) -> bool:
    """Running (a zombie, whose parent is gone, counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def ended(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


@pytest.mark.parametrize("restart", ["warm", "fresh"])
def test_junk_in_the_stream_costs_no_result_and_is_recorded(restart, tmp_path):
    run, _ = run_hostile(tmp_path, "test_stream_junk.py", "test_stream_cut_then_crash.py", restart=restart)
    assert outcomes(run, "test_stream_junk") == {"test_writes_junk_lines": "passed", "test_leaves_half_a_line": "passed",
                                                 "test_after_the_half_line": "passed"}
    assert outcomes(run, "test_stream_cut_then_crash") == {"test_before": "passed", "test_cuts_a_line_then_dies": "crashed",
                                                           "test_after": "passed"}
    record = run.read_record()
    assert record.status == "complete"
    files = {f.file: f for f in record.files}
    written = [ast.literal_eval(error.split(": ", 1)[1]) for error in files["test_stream_junk.py"].stream_errors]
    expected = ["not json at all", "[1, 2, 3]", '{"event": "result", "nodeid": 5}', '{"event": "no_such_kind"}',
                '{"event": "result", "nodeid": "test_stream_junk.py::forged"', "[[[[[[", '{"event": "res']
    assert len(written) == len(expected) and all(w.startswith(e) for w, e in zip(written, expected)), written
    assert files["test_stream_cut_then_crash.py"].stream_errors[0].endswith("""'{"event": "start", "nodeid": "cut sh'""")
    assert "test_stream_cut_then_crash.py::test_cuts_a_line_then_dies: process died with exit status 7" in \
        files["test_stream_cut_then_crash.py"].culprit


def test_neither_a_child_pytest_nor_a_forked_copy_writes_the_stream(tmp_path):
    run, state = run_hostile(tmp_path, "test_children_and_forks.py")
    assert outcomes(run, "test_children_and_forks") == {"test_runs_a_child_pytest_with_the_plugin": "passed",
                                                        "test_a_forked_copy_writes_a_forged_result": "passed",
                                                        "test_after": "passed"}
    events = [json.loads(line) for line in run.events("test_children_and_forks").read_text().splitlines()]
    assert not [e for e in events if "test_inner" in str(e.get("nodeid")) or e.get("nodeid", "").endswith("::forged")]
    assert [e["event"] for e in events].count("session_start") == 1
    # what a test's children see: the JIT request and the run's marks, not the stream or the host's commands
    seen = set((state / "child-env").read_text().split())
    assert not seen & {"HARNESS_EVENTS", "HARNESS_DESELECT", "HARNESS_CONTROL_FD"}
    assert {"HARNESS_JIT", "HARNESS_RUN_DIR", "HARNESS_FILE"} <= seen


def test_processes_left_in_sessions_of_their_own_end_with_their_file(tmp_path, leftovers):
    run, state = run_hostile(tmp_path, "test_leaves_processes.py")
    leftovers.extend(int((state / name).read_text()) for name in ("own-session", "daemon"))
    assert outcomes(run, "test_leaves_processes") == {"test_starts_a_process_in_its_own_session": "passed",
                                                      "test_double_forks_a_daemon": "passed", "test_after": "passed"}
    for name in ("own-session", "daemon"):
        assert ended(int((state / name).read_text())), name


def test_a_process_that_never_exits_is_stopped_after_the_grace_period(tmp_path):
    run, _ = run_hostile(tmp_path, "test_hangs_at_exit.py", tests_dir=FIXTURES / "outcomes", timeout=600, exit_grace=2)
    [record] = run.read_record().files
    assert record.counts == {"passed": 2} and record.exit_status == -6  # SIGABRT: faulthandler dumped the stacks
    assert record.duration < 60  # not the file's limit of 600 s
    assert "did not exit within 2 s after its tests finished" in record.culprit
    assert "in _forever" in run.log("test_hangs_at_exit").read_text()  # the thread that kept it alive
