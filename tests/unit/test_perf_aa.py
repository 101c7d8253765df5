"""A real A/A check with this interpreter: the pure-Python calibration benchmarks, measured twice
by `harness perf run` (real pyperf workers), compared by `harness perf diff`.

No torch and no JIT here (the test session's interpreter has neither): the JIT's own numbers come
from `nox -s <config>-perf` and benchmarks/perf_aa.py on the real CPython 3.14 environments.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyperf

from harness.perf.benchmarks import BENCHMARKS, CALIBRATION
from harness.perf.record import PerfRunDirectory

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CALIBRATION_BENCHES = [b.name for b in BENCHMARKS if b.tag == CALIBRATION]


def perf_runs(*results: Path) -> list[Path]:
    """One `perf run` per results folder, all at the same time: a drift in the machine's load
    between two runs made one after the other would shift every benchmark of one side alike."""
    runs = [subprocess.Popen([sys.executable, "-m", "harness", "perf", "run", "--config", "stock", "--python",
                              sys.executable, "--results", str(folder), "--processes", "4", "--values", "4",
                              "--rounds", "2", "--bench", *CALIBRATION_BENCHES], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for folder in results]
    directories = []
    for run in runs:
        stdout, stderr = run.communicate()
        assert run.returncode == 0, stdout[-2000:] + stderr[-2000:]
        directories.append(Path(stdout.strip().splitlines()[-1].split(": ", 1)[1]))
    return directories


def test_the_same_configuration_twice_is_not_significant_for_most_benchmarks(tmp_path):
    first, second = perf_runs(tmp_path / "first", tmp_path / "second")

    record = PerfRunDirectory(first).read_record()
    assert record.status == "complete" and record.configuration == "stock" and record.jit == "absent"
    assert record.versions["pyperf"] == pyperf.__version__
    suite = pyperf.BenchmarkSuite.load(str(PerfRunDirectory(first).pyperf_json))
    assert suite.get_benchmark_names() == CALIBRATION_BENCHES
    for bench in suite.get_benchmarks():
        measured = [run for run in bench.get_runs() if run.values]
        assert len(measured) == 4 and all(len(run.values) == 4 for run in measured)  # 2 rounds x 2 processes
        assert {run.get_metadata()["harness_jit"] for run in measured} == {"absent"}
        assert {run.get_metadata()["harness_clock"] for run in measured} == {"cpu"}

    done = subprocess.run([sys.executable, "-m", "harness", "perf", "diff", str(first), str(second), "--format",
                           "json"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    verdicts = [b["candidates"][0]["verdict"] for b in json.loads(done.stdout)["benchmarks"]]
    assert len(verdicts) == len(CALIBRATION_BENCHES)
    assert verdicts.count("not significant") >= len(verdicts) - 1, verdicts
