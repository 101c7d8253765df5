"""Verdicts on real runs: A/A is clean; injected faults are found, classified, confirmed or
labelled flaky, and an order-dependent failure is bisected to the test that pollutes it."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

from harness.compare.bisect import smallest_polluting_set
from harness.compare.diff import compare
from harness.compare.replay import Rerunner
from harness.compare.sides import load_side
from harness.record.junit import read_results, replay_prefix
from tests.conftest import FIXTURES, run_fixtures

FILES = ("test_ops.py", "test_crash.py", "test_flaky.py", "test_order.py")
QUIET = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # no third-party plugins: each replay starts in half a second
FAULTS = "wrong_op,crash,flaky,pollute,skip,fixed"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("verdicts")

    def run(name: str, env: dict[str, str]) -> Path:
        return run_fixtures(root / name, FILES, env={**QUIET, **env}, tests_dir=FIXTURES / "verdicts").root

    return {
        "baseline": run("baseline", {}),
        "again": run("again", {}),
        "faulty": run("faulty", {"HARNESS_FAULT": FAULTS, "HARNESS_FLAKY_STATE": str(root / "flaky-calls")}),
    }


def diff(*args) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "diff", *map(str, args)], capture_output=True, text=True)


def test_same_configuration_against_itself_has_no_regression(runs):
    comparison = compare(load_side(runs["baseline"]), load_side(runs["again"]))
    assert comparison.valid and comparison.exit_status == 0
    assert not (comparison.regressions or comparison.flaky or comparison.skip_changes or comparison.xfail_drift)
    assert sum(sum(row.baseline.values()) for row in comparison.modules) == 16


def test_injected_faults_are_found_and_classified(runs):
    comparison = compare(load_side(runs["baseline"]), load_side(runs["faulty"]))
    found = {r.test: (r.candidate, r.classification) for r in comparison.regressions}
    assert found == {
        "test_crash::test_crashes": ("crashed", "crash (SIGABRT)"),
        "test_ops::test_add_is_right": ("failed", "numerics beyond tolerance"),
        "test_flaky::test_half_the_time": ("failed", "exception (AssertionError)"),
        "test_order::test_victim": ("failed", "exception (AssertionError)"),
    }
    crash = next(r for r in comparison.regressions if r.test == "test_crash::test_crashes")
    assert "HARNESS_FAULT=" in crash.replay and "HARNESS_FAULT=" not in crash.baseline_replay
    assert crash.replay.endswith("test_crash.py::test_crashes") and crash.baseline_replay.endswith("test_crash.py::test_crashes")
    assert [(c.test, c.baseline, c.candidate) for c in comparison.skip_changes] == [
        ("test_ops::test_skipped_only_in_candidate", "passed", "skipped")]
    assert [(c.test, c.baseline, c.candidate) for c in comparison.xfail_drift] == [
        ("test_ops::test_xfail_drifts", "xfailed", "xpassed")]
    assert comparison.exit_status == 1


@pytest.mark.parametrize("restart", ["warm", "fresh"])
def test_confirmation_keeps_real_regressions_moves_flaky_and_bisects_order_dependence(runs, tmp_path, restart):
    """Reruns in forks of one collected process per configuration and file (warm) or in fresh
    processes give the same verdicts; warm is the default wherever forking is safe."""
    done = diff(runs["baseline"], runs["faulty"], "--confirm", "2", "--format", "json", "md", "--out", tmp_path,
                *(["--confirm-restart", "fresh"] if restart == "fresh" else []))
    assert done.returncode == 1, done.stderr
    [tally] = [line for line in done.stderr.splitlines() if line.startswith("confirmation: ")]
    warm, fresh = (int(word) for word in tally.split() if word.isdigit())
    assert (warm > 0 and fresh == 0) if restart == "warm" else (warm == 0 and fresh > 0), tally
    assert restart == "warm" or tally.endswith("(test_crash.py: fresh processes were asked for; "
                                               "test_flaky.py: fresh processes were asked for; "
                                               "test_ops.py: fresh processes were asked for; "
                                               "test_order.py: fresh processes were asked for)"), tally
    report = json.loads((tmp_path / "report.json").read_text())
    confirmed = {r["test"]: (r["confirmed"], r["polluters"]) for r in report["regressions"]}
    assert confirmed == {
        "test_crash::test_crashes": (True, []),
        "test_ops::test_add_is_right": (True, []),
        "test_order::test_victim": (True, ["test_order.py::test_pollutes"]),
    }
    [flaky] = report["flaky"]
    assert flaky["test"] == "test_flaky::test_half_the_time" and flaky["confirmed"] is False
    # It fails every other call: alone (if its one rerun alone failed) or after earlier tests (if it
    # passed), K reruns in the candidate disagree.
    assert re.search(r"candidate (passed 1/2, failed 1/2|failed 1/2, passed 1/2)", flaky["reason"]), flaky["reason"]
    assert report["summary"]["regressions"] == 3 and report["summary"]["flaky"] == 1
    assert {m["module"]: m["regressions"] for m in report["modules"]}["test_flaky"] == 0
    markdown = (tmp_path / "report.md").read_text()
    assert "fails only after: `test_order.py::test_pollutes`" in markdown
    assert "baseline replay: `cd " in markdown and "candidate replay: `cd " in markdown


@pytest.mark.parametrize("entry", ["pytest", "script"])
def test_a_file_the_candidate_cannot_import_turns_its_tests_into_regressions_not_missing_ones(tmp_path, entry):
    """An import that only the candidate breaks stops the whole file before any of its tests runs
    (plain pytest: a collection error; PyTorch's way, `python FILE --use-pytest`: the script ends before
    pytest starts). Every test that passed in the baseline is a regression, with that error as its
    cause and a command that replays it; a diff that called them missing would exit 0."""
    def run(name: str, env: dict[str, str]) -> Path:
        return run_fixtures(tmp_path / name, ("test_stops_at_import.py",), env={**QUIET, **env}, entry=entry,
                            tests_dir=FIXTURES / "stopped").root

    comparison = compare(load_side(run("baseline", {})), load_side(run("candidate", {"HARNESS_FAULT": "import"})))
    assert [(r.test.rsplit("::", 1)[1], r.baseline, r.candidate) for r in comparison.regressions] == [
        ("test_one", "passed", "error"), ("test_two", "passed", "error")]
    assert comparison.missing == () and comparison.exit_status == 1
    for regression in comparison.regressions:
        assert regression.detail.startswith("not run: collection error: ")
        assert regression.classification == "infrastructure (collection or import)"
        assert regression.replay.endswith(f"test_stops_at_import.py::TestStops::{regression.test.rsplit('::', 1)[1]}")
    if entry == "pytest":
        assert "ImportError: cannot import name 'needed'" in comparison.regressions[0].detail
    else:
        assert "before pytest started" in comparison.regressions[0].detail


def test_bisection_finds_polluters_in_different_halves_and_nothing_when_nothing_reproduces():
    earlier = [f"test_{i}" for i in range(8)]
    calls = []

    def reproduces(subset):
        calls.append(list(subset))
        return {"test_1", "test_6"} <= set(subset)

    assert smallest_polluting_set(earlier, reproduces) == ("test_1", "test_6")
    # Neither half reproduces, so the whole set is rerun (it does), then each test is left out once.
    assert calls[:3] == [earlier[:4], earlier[4:], earlier] and len(calls) <= 12
    assert smallest_polluting_set(["test_0"], lambda subset: True) == ("test_0",)
    assert smallest_polluting_set(earlier, lambda subset: False) is None


def test_reruns_of_a_file_whose_collected_process_cannot_fork_are_fresh_and_say_why(tmp_path):
    """Threads alive after collection (an OpenMP pool, here a thread of the file's own) keep the rerun
    host from forking: the reruns still run, in fresh processes, and the summary names the file and why."""
    run = run_fixtures(tmp_path / "results", ("test_thread_at_import.py",), tests_dir=FIXTURES / "threads")
    [result] = read_results(run.junit("test_thread_at_import"))
    target = "test_thread_at_import.py::test_fails"
    with Rerunner(60) as rerunner:
        assert rerunner.outcome(replay_prefix(result.replay, target), [target], target) == "failed"
        assert rerunner.outcome(replay_prefix(result.replay, target), [target], target) == "failed"
        summary = rerunner.summary()
    assert summary == ("0 reruns in forks of collected processes, 2 in fresh processes (test_thread_at_import.py: "
                       "its rerun host could not fork (1 other thread(s) alive after collection (OpenMP or BLAS pools: "
                       "OMP_NUM_THREADS=1 avoids them)))"), summary


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_confirmation_learns_a_polluter_and_the_report_says_it_once(tmp_path, jobs):
    """Three regressions after one polluting test: the polluter found by bisecting the first is tried
    on the others at once (one bisection, not three), each is confirmed order-dependent, every report
    form groups them: "3 regressions, all after test_polluted.py::test_pollutes", and it costs each
    one rerun alone and 2 x K after the polluter, plus the bisection: 17 to 19 reruns, where
    bisecting each one and rerunning each alone K times in both configurations took 28 and more.
    Reruns a second at a time or two, the verdicts are the same."""
    files = ("test_polluted.py",)
    baseline = run_fixtures(tmp_path / "baseline", files, env=QUIET, tests_dir=FIXTURES / "verdicts").root
    faulty = run_fixtures(tmp_path / "faulty", files, env={**QUIET, "HARNESS_FAULT": "pollute"},
                          tests_dir=FIXTURES / "verdicts").root
    done = diff(baseline, faulty, "--confirm", "2", "--jobs", jobs, "--format", "json", "md", "html",
                "--out", tmp_path / "out")
    assert done.returncode == 1, done.stderr
    assert "order dependence: 3 regressions explained by 1 polluter set, 1 bisection" in done.stderr, done.stderr
    assert f"confirming 3 regressions: 2 reruns per check and configuration, {jobs} at a time" in done.stderr
    [tally] = [line for line in done.stderr.splitlines() if line.startswith("confirmation: ")]
    warm, fresh = (int(word) for word in tally.split() if word.isdigit())
    # 3 alone + 3 x (2 + 2) after the polluter + 2 to 4 bisection steps (the split follows recorded times).
    assert fresh == 0 and 17 <= warm <= 19, tally
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    polluter = "test_polluted.py::test_pollutes"
    assert {r["test"]: (r["confirmed"], r["polluters"]) for r in report["regressions"]} == {
        f"test_polluted::test_victim_{n}": (True, [polluter]) for n in ("one", "two", "three")}
    line = f"3 regressions, all after {polluter} (order dependence: each passes alone)"
    assert report["order_dependence"] == [{"polluters": [polluter], "summary": line, "regressions": [
        f"test_polluted::test_victim_{n}" for n in ("one", "three", "two")]}]
    assert f"- {line}" in (tmp_path / "out" / "report.md").read_text()
    assert line in (tmp_path / "out" / "report.html").read_text()


def _processes_with(marker: str) -> list[int]:
    """Processes whose environment holds `marker` (a variable=value pair unique to one test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:  # gone meanwhile, or not ours to read
                continue
    return found


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_confirmation_stopped_midway_leaves_no_rerun_host_behind(tmp_path, stop):
    """Ctrl-C or a CI cancel (SIGTERM) while reruns are under way: `diff --confirm` exits 130 and
    every rerun host it started (each in a session of its own) is gone with it."""
    files = ("test_polluted.py",)
    baseline = run_fixtures(tmp_path / "baseline", files, env=QUIET, tests_dir=FIXTURES / "verdicts").root
    faulty = run_fixtures(tmp_path / "faulty", files, env={**QUIET, "HARNESS_FAULT": "pollute"},
                          tests_dir=FIXTURES / "verdicts").root
    marker = f"LINGERING_IN={tmp_path}"
    command = [sys.executable, "-m", "harness", "diff", str(baseline), str(faulty), "--confirm", "2", "--jobs", "2"]
    linger = dict(os.environ, HARNESS_LINGER="300", LINGERING_IN=str(tmp_path))
    stopped = subprocess.Popen(command, env=linger, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(_processes_with(marker)) < 3:  # the diff and its rerun hosts
        time.sleep(0.2)
    assert len(_processes_with(marker)) >= 3, "no rerun host started"
    stopped.send_signal(stop)
    _, stderr = stopped.communicate(timeout=60)
    assert stopped.returncode == 130, stderr
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _processes_with(marker):
        time.sleep(0.2)
    assert not _processes_with(marker), f"left behind: {_processes_with(marker)}"
