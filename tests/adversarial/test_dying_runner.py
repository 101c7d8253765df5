"""A runner killed with SIGKILL, and two runners of one run: class "dying runner" of docs/robustness.md.

Its test processes die with it (parent-death signal), a resume refuses while anything of the run is
still alive or while another runner holds the run, and the resumed run finishes with every test
recorded once: nothing run twice, nothing lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.record.junit import read_results
from tests.adversarial.conftest import HOSTILE
from tests.adversarial.test_hostile_tests import alive, ended

pytestmark = pytest.mark.integration


def harness(*args: object, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "harness", *map(str, args)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for(path: Path, process: subprocess.Popen[str], seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return path.read_text()


def test_a_killed_runner_takes_its_tests_with_it_and_its_run_resumes_once(tmp_path, leftovers):
    state, results = tmp_path / "state", tmp_path / "results"
    state.mkdir()
    env = {**os.environ, "HOSTILE_STATE": str(state)}
    runner = harness("run", "--config", "stock", "--tier", "p0", "--tests-dir", HOSTILE, "--select",
                     "test_killed_runner.py", "--results", results, env=env)
    leftovers.append(runner.pid)
    worker, host = map(int, wait_for(state / "waiting.1", runner).split())
    survivor = int((state / "survivor").read_text())
    leftovers.extend([worker, host, survivor])
    [run] = list(results.iterdir())

    runner.send_signal(signal.SIGKILL)
    runner.communicate()
    assert ended(worker) and ended(host)  # the parent-death signal: no test runs on without its runner
    assert alive(survivor)  # started by a test in a session of its own: no parent-death signal reaches it

    refused = subprocess.run([sys.executable, "-m", "harness", "run", "--resume", run], env=env, capture_output=True,
                             text=True)
    assert refused.returncode == 3 and refused.stderr.count("\n") == 1
    assert f"1 process(es) of this run still alive (pid {survivor})" in refused.stderr

    os.kill(survivor, signal.SIGKILL)
    assert ended(survivor)
    first = harness("run", "--resume", run, env=env)
    leftovers.append(first.pid)
    wait_for(state / "waiting.2", first)
    second = subprocess.run([sys.executable, "-m", "harness", "run", "--resume", run], env=env, capture_output=True,
                            text=True)
    assert second.returncode == 3 and second.stderr.count("\n") == 1
    assert f"process {first.pid} is running this run" in second.stderr

    (state / "release").write_text("")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    results_ = {r.name: r.outcome for r in read_results(run / "junit" / "test_killed_runner.xml")}
    assert results_ == {"test_quick": "passed", "test_waits": "passed", "test_after": "passed"}
    starts = [json.loads(line).get("nodeid") for line in (run / "events" / "test_killed_runner.jsonl").read_text().splitlines()
              if '"event": "start"' in line]
    assert starts.count("test_killed_runner.py::test_quick") == 1  # finished before the kill: not run again
    assert json.loads((run / "run.json").read_text())["status"] == "complete"
