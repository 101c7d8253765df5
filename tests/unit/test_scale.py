"""Interrupts and --resume, parallel files, shards and stages, through `python -m harness run`."""

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from harness.configure.tiers import get_tier
from harness.record.store import RunDirectory, find_runs
from harness.run.schedule import longest_first
from harness.run.shards import parse_shard
from harness.errors import HarnessError
from harness.protocol import Setting
from tests.conftest import FIXTURES

SLOW = FIXTURES / "slow"


@pytest.fixture
def slow_tier(tmp_path, monkeypatch):
    tiers = tmp_path / "tiers.yaml"
    tiers.write_text("tiers:\n  slow:\n    files: ['test_*.py']\n    timeout: 120\n")
    log = tmp_path / "executions.log"
    env = {**os.environ, "HARNESS_TIERS": str(tiers), "FIXTURE_LOG": str(log)}
    return env, log


def harness_run(env, results, *extra):
    return [sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "slow", "--tests-dir", str(SLOW),
            "--python", sys.executable, "--results", str(results), *extra]


def _default_sigint() -> None:
    """A shell without job control (CI) starts children with SIGINT ignored; a user's Ctrl-C is not."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.integration
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_then_resume_reruns_nothing_that_finished(slow_tier, tmp_path, stop):
    env, log = slow_tier
    harness = subprocess.Popen(harness_run(env, tmp_path / "results"), env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, preexec_fn=_default_sigint)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # interrupt once one file finished and the next one is under way
        runs = find_runs(tmp_path / "results") if (tmp_path / "results").is_dir() else []
        if runs and runs[0][1].files and log.is_file() and len(log.read_text().splitlines()) >= 6:
            break
        time.sleep(0.1)
    harness.send_signal(stop)
    output, _ = harness.communicate(timeout=60)
    assert harness.returncode == 130, output
    [(run_dir, record)] = find_runs(tmp_path / "results")
    assert record.status == "interrupted" and len(record.files) >= 1
    assert "--resume" in output
    before = Counter(log.read_text().splitlines())

    done = subprocess.run([sys.executable, "-m", "harness", "run", "--resume", str(run_dir)], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    record = RunDirectory(run_dir).read_record()
    assert record.status == "complete" and len(record.files) == 3
    assert all(f.counts == {"passed": 4} for f in record.files)
    executions = Counter(log.read_text().splitlines())
    assert len(executions) == 12
    finished_before = {nodeid for nodeid in before}
    assert all(executions[nodeid] == 1 for nodeid in finished_before), executions


@pytest.mark.integration
def test_two_jobs_run_every_file_and_record_them_all(slow_tier, tmp_path):
    env, log = slow_tier
    done = subprocess.run(harness_run(env, tmp_path / "results", "--jobs", "2"), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    [(_, record)] = find_runs(tmp_path / "results")
    assert sorted(f.file for f in record.files) == ["test_slow_a.py", "test_slow_b.py", "test_slow_c.py"]
    assert len(log.read_text().splitlines()) == 12


@pytest.mark.integration
def test_shards_are_disjoint_cover_every_test_and_are_recorded(slow_tier, tmp_path):
    """Without history, every file is collected and split on test counts: 12 tests, 6 per shard."""
    env, log = slow_tier
    shards = []
    for index in (1, 2):
        done = subprocess.run(harness_run(env, tmp_path / f"r{index}", "--shard", f"{index}/2"), env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert f"shard {index}/2:" in done.stdout and "balanced on test counts" in done.stdout
        [(path, record)] = find_runs(tmp_path / f"r{index}")
        assert record.shard == f"{index}/2" and f"-shard{index}of2-" in path.name
        assert record.sharding is not None and record.sharding.weights == "counts"
        shards.append(set(record.targets))
    ran = log.read_text().splitlines()
    assert len(ran) == len(set(ran)) == 12  # every test once, over both shards
    assert shards[0].isdisjoint(shards[1]) and len(shards[0]) == len(shards[1]) == 6


@pytest.mark.integration
def test_bad_shard_and_jobs_are_rejected():
    with pytest.raises(HarnessError, match="--shard must be I/N"):
        parse_shard("3/2")
    done = subprocess.run([sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "p0", "--jobs", "0"],
                          capture_output=True, text=True)
    assert done.returncode == 3 and "argument --jobs: expected a positive whole number, not '0'" in done.stderr


@pytest.mark.unit
def test_longest_first_puts_untimed_files_first():
    assert longest_first(["a", "b", "c", "new"], {"a": 1.0, "b": 30.0, "c": 5.0}) == ["new", "b", "c", "a"]


@pytest.mark.integration
def test_p3_stage_selects_the_files_of_seed_003(tmp_path):
    for name in ("dynamo/test_misc.py", "inductor/test_pad_mm.py", "inductor/test_codecache.py", "export/test_export.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("def test_x():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "p3", "--tests-dir",
                           str(tmp_path), "--stage", "normalize", "caching", "--python", sys.executable,
                           "--results", str(tmp_path / "results")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    [(_, record)] = find_runs(tmp_path / "results")
    assert sorted(f.file for f in record.files) == ["inductor/test_codecache.py", "inductor/test_pad_mm.py"]
    assert set(get_tier("p3").stages) == {"capture", "normalize", "post-grad", "ir", "codegen", "runtime",
                                          "caching", "cross-cutting", "interop", "ops-eager", "ops-aot-eager",
                                          "ops-inductor", "modules", "optimizers", "hops", "python", "fx",
                                          "inductor-modes", "transforms", "export"}
    bad = subprocess.run([sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "p3", "--tests-dir",
                          str(tmp_path), "--stage", "lowering"], capture_output=True, text=True)
    assert bad.returncode == 3 and "--stage lowering: tier 'p3' has no such stage" in bad.stderr


@pytest.mark.integration
def test_a_stage_of_the_bundled_suites_runs_alone_without_a_selection(tmp_path):
    """`--stage export` with nothing else (the whole stage, as a nightly job runs it) stopped with an
    internal error: the stage's files had already become the tier's."""
    tiers = tmp_path / "tiers.yaml"
    tiers.write_text("tiers:\n  mine:\n    source: pytorch\n    files: [test_*.py]\n    stages:\n"
                     "      smoke: {source: torch, files: [harness/smoke/test_smoke.py]}\n"
                     "    bundled:\n      description: the smoke test\n      files: [harness/smoke/test_*.py]\n")
    done = subprocess.run([sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "mine", "--stage",
                           "smoke", "--python", sys.executable, "--results", str(tmp_path / "results")],
                          capture_output=True, text=True, env={**os.environ, Setting.TIERS: str(tiers)})
    assert done.returncode == 0, done.stderr[-2000:]
    [(_, record)] = find_runs(tmp_path / "results")
    assert [f.file for f in record.files] == ["harness/smoke/test_smoke.py"] and record.stages == ("smoke",)
