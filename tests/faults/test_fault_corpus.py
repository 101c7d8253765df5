"""The fault corpus: PyTorch-style test files (torch.testing._internal's TestCase, device-type
instantiation) that crash, abort, exit or hang at a known test. Every run must end with every
other test recorded and the culprit named with its signal or time limit."""

from collections import Counter

import pytest

from harness.record.junit import read_results
from tests.conftest import FIXTURES, run_fixtures

pytestmark = pytest.mark.integration

FILES = ("test_segfault_at_3.py", "test_sigbus.py", "test_abort.py", "test_exit_midway.py",
         "test_endless_loop.py", "test_collection_error.py", "test_import_error.py",
         "test_thousand_crash_at_10.py")


# Each entry mode and each restart mode once: the crossed pairs added four minutes of set-up to CI and
# no path of their own (the entry mode decides how a file starts, the restart mode how it resumes)
@pytest.fixture(scope="module", params=[("script", "warm"), ("pytest", "fresh")], ids="-".join)
def corpus(request, tmp_path_factory):
    """The corpus run the way PyTorch's CI runs files (`python FILE --use-pytest`), resuming after each
    crash in a fork of the collected process (warm), and as plain pytest, resuming in a new interpreter."""
    entry, restart = request.param
    # One OpenMP/BLAS thread per process: no thread pool alive after collection, so forking is safe.
    env = {"OMP_NUM_THREADS": "1"} if restart == "warm" else {}
    run = run_fixtures(tmp_path_factory.mktemp("faults"), FILES, tests_dir=FIXTURES / "faults", test_timeout=5,
                       timeout=300, jobs=2, entry=entry, restart=restart, env=env)
    files = {f.file: f for f in run.read_record().files}
    resumed = [f for f in files.values() if f.processes > 1]
    assert resumed and all(f.restart.startswith(restart) for f in resumed)  # the restart path under test was taken
    return run, files


def outcomes(run, file):
    return {r.name: r.outcome for r in read_results(run.junit(file.removesuffix(".py")))}


@pytest.mark.parametrize("file, suite, culprit, how, count", [
    ("test_segfault_at_3.py", "TestSegfaultCPU", 3, "SIGSEGV", 6),
    ("test_sigbus.py", "TestSigbusCPU", 2, "SIGBUS", 5),
    ("test_abort.py", "TestAbortCPU", 1, "SIGABRT", 5),
    ("test_exit_midway.py", "TestExitMidwayCPU", 2, "exit status 0", 5),
    ("test_endless_loop.py", "TestEndlessLoopCPU", 1, "per-test limit (5 s)", 4),
])
def test_culprit_named_and_every_other_test_recorded(corpus, file, suite, culprit, how, count):
    run, files = corpus
    results = outcomes(run, file)
    culprit_name = f"test_{culprit:04d}_cpu"
    expected = "timeout" if "limit" in how else "crashed"
    assert results == {f"test_{i:04d}_cpu": expected if i == culprit else "passed" for i in range(count)}
    record = files[file]
    assert f"{suite}::{culprit_name}" in record.culprit and how in record.culprit
    assert record.processes == 2  # resumed after the culprit in a new process (forked or fresh)


def test_thousand_tests_crash_at_10_loses_nothing(corpus):
    run, files = corpus
    counts = Counter(outcomes(run, "test_thousand_crash_at_10.py").values())
    assert counts == {"passed": 999, "crashed": 1}
    assert "TestThousandCPU::test_0010_cpu" in files["test_thousand_crash_at_10.py"].culprit


@pytest.mark.parametrize("file, text", [
    ("test_collection_error.py", "module-level failure while collecting"),
    ("test_import_error.py", "torch._no_such_module"),
])
def test_collection_and_import_errors_are_recorded_per_file(corpus, file, text):
    run, files = corpus
    [result] = read_results(run.junit(file.removesuffix(".py")))
    assert result.outcome == "error" and result.message.startswith("collection error") and text in result.text
    assert files[file].culprit is None and files[file].signal is None


def test_crashed_tests_carry_the_faulthandler_dump_and_a_replay_command(corpus):
    run, _ = corpus
    crashed = next(r for r in read_results(run.junit("test_sigbus")) if r.outcome == "crashed")
    assert "Fatal Python error: Bus error" in crashed.text
    assert crashed.replay.endswith("test_sigbus.py::TestSigbusCPU::test_0002_cpu")
    hung = next(r for r in read_results(run.junit("test_endless_loop")) if r.outcome == "timeout")
    assert "in spin" in hung.text  # the stack of the hung test, dumped by faulthandler
