"""The runner with real test processes: every test recorded, crashes and hangs attributed."""

import json
import os
import subprocess
import sys

import pytest

from harness.record.junit import read_results
from harness.record.model import RunRecord
from harness.record.store import find_runs
from tests.conftest import FIXTURES, run_fixtures

ROOT = FIXTURES.parents[1]

pytestmark = pytest.mark.integration


def outcomes(run, module):
    return {r.name: r.outcome for r in read_results(run.junit(module))}


def test_every_outcome_is_recorded_in_junit_and_run_record(run_outcomes):
    run = run_outcomes("test_outcomes.py")
    assert outcomes(run, "test_outcomes") == {
        "test_passes": "passed", "test_fails": "failed", "test_skipped": "skipped",
        "test_xfails": "xfailed", "test_xpasses": "xpassed", "test_errors_in_setup": "error",
        "test_param[1]": "passed", "test_param[2]": "passed", "test_passes_on_second_attempt": "passed",
    }
    record = run.read_record()
    assert record.status == "complete"
    assert record.files[0].exit_status == 1 and record.files[0].signal is None
    assert record.files[0].counts == {"error": 1, "failed": 1, "passed": 4, "skipped": 1, "xfailed": 1, "xpassed": 1}


def test_the_record_says_how_much_of_its_tests_wall_time_had_a_core(run_outcomes):
    """The CPU share that recorded durations are weighed with (record/durations.py): measured in the
    test process, so a test that sleeps counts its wall time but no CPU time."""
    for restart in ("warm", "fresh"):
        [record] = run_outcomes("test_cpu_and_sleep.py", restart=restart).read_record().files
        assert record.counts == {"passed": 2}
        assert 0.05 < record.cpu_share <= 0.55, (restart, record.cpu_share)


def test_rerun_attempts_are_kept_and_the_final_attempt_decides(run_outcomes):
    run = run_outcomes("test_outcomes.py::test_passes_on_second_attempt")
    [result] = read_results(run.junit("test_outcomes"))
    assert result.outcome == "passed"
    assert len(result.attempts) == 1 and result.attempts[0].startswith("failed: AssertionError: first attempt fails")


def test_failure_keeps_message_and_a_replay_command_that_reruns_it(run_outcomes):
    run = run_outcomes("test_outcomes.py")
    failed = next(r for r in read_results(run.junit("test_outcomes")) if r.name == "test_fails")
    assert "assert [1, 2] == [1, 3]" in failed.message
    assert failed.replay.endswith(" test_outcomes.py::test_fails") and "HARNESS_JIT=absent" in failed.replay
    # node ids are relative to the tests directory although this repository's pytest.ini is above it
    replayed = subprocess.run(failed.replay, shell=True, capture_output=True, text=True)
    assert replayed.returncode == 1 and "1 failed" in replayed.stdout, replayed.stdout[-500:]


def test_a_failure_that_announces_its_cause_keeps_the_cause_in_its_message(run_outcomes):
    """dynamo's BackendCompilerFailed says `raised:` on its first line and the backend's error on
    the next: the message (what reports show and known regressions match) holds both."""
    run = run_outcomes("test_wrapped_failure.py")
    [failed] = read_results(run.junit("test_wrapped_failure"))
    assert failed.message == "RuntimeError: backend='counting' raised: AssertionError: dynamo captured an empty graph"


def test_segfault_names_the_culprit_and_the_file_resumes_after_it(run_outcomes):
    run = run_outcomes("test_segfault.py")
    assert outcomes(run, "test_segfault") == {"test_before_crash": "passed", "test_segfaults": "crashed",
                                              "test_after_crash": "passed"}
    record = run.read_record().files[0]
    assert record.signal == "SIGSEGV" and record.processes == 2
    assert "test_segfault.py::test_segfaults" in record.culprit and "SIGSEGV" in record.culprit
    crashed = next(r for r in read_results(run.junit("test_segfault")) if r.outcome == "crashed")
    assert "Fatal Python error: Segmentation fault" in crashed.text  # faulthandler's dump is kept
    assert 'test_segfault.py", line 9 in test_segfaults' in crashed.text


def test_hung_test_hits_the_per_test_limit_with_its_stack_and_the_file_resumes(run_outcomes):
    run = run_outcomes("test_hangs.py", timeout=60, test_timeout=3)
    assert outcomes(run, "test_hangs") == {"test_quick": "passed", "test_hangs_forever": "timeout",
                                           "test_after_hang": "passed"}
    timed_out = next(r for r in read_results(run.junit("test_hangs")) if r.outcome == "timeout")
    assert "per-test limit (3 s)" in timed_out.message
    assert "in test_hangs_forever" in timed_out.text  # faulthandler dumped the hung stack


def test_file_over_its_limit_stops_and_keeps_what_finished(run_outcomes):
    run = run_outcomes("test_hangs.py", timeout=4, test_timeout=60)
    assert outcomes(run, "test_hangs") == {"test_quick": "passed", "test_hangs_forever": "timeout"}
    assert "file exceeded the tier's limit (4 s)" in run.read_record().files[0].culprit


def test_import_error_is_a_recorded_collection_error(run_outcomes):
    run = run_outcomes("test_import_error.py")
    results = read_results(run.junit("test_import_error"))
    assert [r.outcome for r in results] == ["error"]
    assert "module_that_does_not_exist" in results[0].message
    assert results[0].message.startswith("collection error")


def test_os_exit_midway_is_a_crash_not_a_pass(run_outcomes):
    run = run_outcomes("test_exits_midway.py")
    assert outcomes(run, "test_exits_midway") == {"test_first": "passed", "test_exits_process": "crashed",
                                                  "test_never_reached": "passed"}
    assert "exit status 0" in run.read_record().files[0].culprit


def test_process_dying_outside_any_test_is_recorded_without_looping(run_outcomes):
    run = run_outcomes("test_dies_at_import.py")
    [result] = read_results(run.junit("test_dies_at_import"))
    assert (result.name, result.outcome) == ("<process>", "crashed")
    assert run.read_record().files[0].processes == 1  # no test progressed, so no second process


def test_node_id_selection_runs_only_those_tests(run_outcomes):
    run = run_outcomes("test_outcomes.py::test_passes", "test_outcomes.py::TestGrouped")
    assert outcomes(run, "test_outcomes") == {"test_passes": "passed", "test_param[1]": "passed", "test_param[2]": "passed"}
    assert len(run.read_record().files) == 1


def test_run_record_describes_interpreter_versions_and_sources(run_outcomes):
    run = run_outcomes("test_outcomes.py")
    data = json.loads(run.record_path.read_text())
    record = RunRecord.from_json(data)
    assert record.interpreter["version"] and record.interpreter["path"]
    assert record.versions["pytest"] and "harness" in record.versions
    assert len(record.test_sources["hash"]) == 16
    assert record.fingerprint["hash"] and record.started < record.finished
    assert record.configuration["name"] == "fixture"
    again = run_outcomes("test_outcomes.py").read_record()
    assert again.fingerprint == record.fingerprint  # nothing per-run (cache folders) in the fingerprint


def event_kinds(run, module):
    return [json.loads(line)["event"] for line in run.events(module).read_text().splitlines()]


def test_plugin_streams_events_as_tests_run_and_resumes_in_a_fresh_process(run_outcomes):
    run = run_outcomes("test_segfault.py", restart="fresh")
    kinds = event_kinds(run, "test_segfault")
    assert kinds[:4] == ["session_start", "collected", "restart", "jit_applied"]
    first_process = kinds[:kinds.index("session_start", 1)]
    assert first_process[4:] == ["start", "result", "start", "result"]  # the culprit's result is the runner's
    assert kinds.count("session_start") == 2 and kinds[-1] == "session_finish"
    [record] = run.read_record().files
    assert record.restart == "fresh: the tier asks for fresh processes" and record.processes == 2


def test_a_crash_resumes_in_a_fork_of_the_collected_process(run_outcomes):
    """Warm restart: the collected process forks one worker per attempt; it imports the file once."""
    run = run_outcomes("test_segfault.py")
    kinds = event_kinds(run, "test_segfault")
    assert kinds[:5] == ["session_start", "collected", "restart", "worker_start", "jit_applied"]
    first_worker = kinds[3:kinds.index("worker_start", 4)]
    assert first_worker[2:] == ["start", "result", "start", "worker_exit", "result"]  # the host saw it die
    assert kinds.count("session_start") == 1 and kinds.count("worker_start") == 2 and kinds[-1] == "session_finish"
    [record] = run.read_record().files
    assert record.restart == "warm" and record.processes == 2 and record.signal == "SIGSEGV"
    assert {r.name: r.outcome for r in read_results(run.junit("test_segfault"))} == {
        "test_before_crash": "passed", "test_segfaults": "crashed", "test_after_crash": "passed"}


def test_no_fork_while_other_threads_run(run_outcomes):
    run = run_outcomes("test_thread_at_import.py")
    [record] = run.read_record().files
    assert record.restart.startswith("fresh: 1 other thread(s) alive after collection")
    assert record.counts == {"crashed": 1, "passed": 2} and record.processes == 2


def test_gpu_tier_without_a_gpu_is_skipped_with_its_reason(run_outcomes):
    run = run_outcomes("test_outcomes.py", requires="cuda")
    record = run.read_record()
    assert record.status == "complete" and record.files == ()
    assert "no CUDA device visible to torch" in record.skipped_reason


def test_results_are_written_when_the_session_ends_even_if_the_process_never_exits(run_outcomes):
    """A process that hangs at exit (a thread joined at interpreter shutdown) keeps its results
    and is stopped at the file's limit, with the hang named."""
    run = run_outcomes("test_hangs_at_exit.py", timeout=6)
    [record] = run.read_record().files
    assert record.counts == {"passed": 2}
    assert "did not exit within the tier's limit (6 s) after its tests finished" in record.culprit
    assert record.exit_status == -6 and record.duration < 30  # SIGABRT: faulthandler dumped its stacks


def test_stress_tier_reproducer_passes_without_a_jit(tmp_path):
    """The stress tier's fx loop is a CinderX crash reproducer: without a JIT it must simply pass."""
    env = {**os.environ, "HARNESS_STRESS_SECONDS": "0.5"}
    done = subprocess.run([sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "stress",
                           "--python", sys.executable, "--results", str(tmp_path)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    [(_, record)] = find_runs(tmp_path)
    assert [(f.file, f.counts) for f in record.files] == [("harness/stress/test_fx_trace_loop.py", {"passed": 5})]


def test_pytest_internal_error_is_recorded_with_the_tests_it_left_unrun(tmp_path):
    """INTERNALERROR ends pytest mid-file: the test it broke in and the tests it never ran are
    named in the record, never dropped in silence."""
    run = run_fixtures(tmp_path, ("test_breaks_pytest.py",), tests_dir=FIXTURES / "internal_error")
    [file] = run.read_record().files
    assert file.exit_status == 3 and file.counts == {"passed": 1, "error": 2}
    assert file.culprit == ("test_breaks_pytest.py::<pytest internal error>: pytest INTERNALERROR: "
                            "KeyError: 'a reporting plugin failed'; 3 collected tests never ran")
    results = {r.name: (r.outcome, r.message) for r in read_results(run.junit("test_breaks_pytest"))}
    assert results["test_number[1]"] == (
        "error", "pytest INTERNALERROR: KeyError: 'a reporting plugin failed' (while this test ran)")
    assert results["<pytest internal error>"][0] == "error"


def test_script_mode_without_pytorchs_conftest_collects_from_the_running_script(tmp_path):
    """`run_tests()` passes --use-main-module, PyTorch's conftest's option: without that conftest the
    harness gives it the same meaning, so the file's body runs once, as __main__."""
    log = tmp_path / "bodies.log"
    run = run_fixtures(tmp_path / "results", ("test_script_mode.py",), tests_dir=FIXTURES / "script", entry="script",
                       env={"HARNESS_FIXTURE_LOG": str(log)})
    [file] = run.read_record().files
    assert file.counts == {"passed": 1}, run.log("test_script_mode").read_text()[-2000:]
    assert log.read_text().splitlines() == ["__main__"]


CHECKOUT = FIXTURES / "checkout"  # a conftest that defines PyTorch's options in PyTorch's option groups


def test_script_mode_leaves_a_checkouts_options_to_its_conftest(tmp_path):
    """A checkout's conftest defines --use-main-module and --junit-xml-reruns (in named groups, not
    pytest's unnamed one): the harness must not define them a second time, or pytest's parser dies
    before any test runs, in every file of the checkout."""
    run = run_fixtures(tmp_path / "results", ("test_checkout_options.py",), tests_dir=CHECKOUT, entry="script")
    [file] = run.read_record().files
    assert file.counts == {"passed": 2}, run.log("test_checkout_options").read_text()[-2000:]


@pytest.mark.parametrize("ci", ["true", None])
def test_a_checkout_file_run_by_hand_as_a_script_with_the_plugin_with_and_without_ci(tmp_path, ci):
    """As a replay or a user runs it: `python -bb FILE --use-pytest` with the harness plugin; with CI set,
    run_tests() also passes --junit-xml-reruns, which the checkout's conftest defines."""
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env.update({"PYTEST_ADDOPTS": "-p harness.run.plugin -p no:cacheprovider", "PYTHONPATH": str(ROOT),
                **({"CI": ci} if ci else {})})
    done = subprocess.run([sys.executable, "-bb", str(CHECKOUT / "test_checkout_options.py"), "--use-pytest", "-q"],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    reports = list((tmp_path / "test-reports").rglob("*.xml"))  # the conftest's --junit-xml-reruns wrote it
    assert len(reports) == (1 if ci else 0), reports


def test_failure_text_with_characters_xml_cannot_hold_is_kept_escaped(tmp_path):
    """A message with ESC, NUL or a lone surrogate once made a file's JUnit XML unwritable, and the run
    ended as an internal error: every result is kept, those characters as their Python escapes."""
    run = run_fixtures(tmp_path / "results", ("test_control_characters.py",), tests_dir=FIXTURES / "text")
    record = run.read_record()
    assert record.status == "complete" and record.files[0].counts == {"failed": 2, "passed": 1}
    messages = {r.name: r.message for r in read_results(run.junit("test_control_characters"))}
    assert "two options, \\x1b[1mdo those steps" in messages["test_message_with_ansi_codes"]
    assert "b'\\x00\\x01' then \\ud800" in messages["test_message_with_nul_and_a_lone_surrogate"]


@pytest.mark.parametrize("shard", [(), ("--shard", "1/2")])
def test_a_relative_interpreter_path_runs_from_any_folder(tmp_path, shard):
    """`--python ./venv/bin/python` as a user types it: the test processes start in other folders,
    where the relative path named nothing (a traceback when sharding collected, a wrong 'folder no
    longer exists' otherwise)."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_one():\n    pass\n")
    (tmp_path / "py").symlink_to(sys.executable)
    done = subprocess.run([sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "p0",
                           "--python", "./py", "--tests-dir", "tests", "--select", "test_a.py", *shard,
                           "--results", "results"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [(_, record)] = find_runs(tmp_path / "results")
    assert [(f.file, f.counts) for f in record.files] == [("test_a.py", {"passed": 1})]
    assert record.python == str(tmp_path / "py")
