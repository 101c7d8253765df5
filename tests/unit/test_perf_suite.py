"""The pyperf suite's own rules: what each benchmark says, warm-up, the JIT facts it records,
which environment its workers inherit, and how a perf run spends its processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.configure.configurations import Configuration
from harness.perf import benchmarks, suite
from harness.perf.effort import EFFORTS, Effort
from harness.perf.run import inherited_names
from harness.protocol import Activation, JitMode, Request

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.unit
def test_every_benchmark_states_what_it_measures_and_the_issue_workloads_are_there():
    names = {b.name for b in benchmarks.BENCHMARKS}
    assert {"module_call", "optimizer_step", "autograd_small_graph", "fx_trace", "dynamo_trace",
            "dataloader_collate"} <= names
    assert sum(b.tag == benchmarks.CALIBRATION for b in benchmarks.BENCHMARKS) >= 3
    for benchmark in benchmarks.BENCHMARKS:
        assert len(benchmark.description) > 30, benchmark.name
        assert benchmark.tag in (benchmarks.TORCH, benchmarks.CALIBRATION)


@pytest.mark.integration
def test_calibration_benchmarks_run_without_importing_torch():
    """Their workers start in a fraction of a second instead of paying for `import torch`."""
    code = ("import sys; from harness.perf.benchmarks import BENCHMARKS, CALIBRATION\n"
            "for b in BENCHMARKS:\n    if b.tag == CALIBRATION: b.setup()()\n"
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.unit
def test_selection_keeps_suite_order_and_names_unknown_benchmarks():
    chosen = benchmarks.select(["py_method_calls", "module_call"])
    assert [b.name for b in chosen] == ["module_call", "py_method_calls"]
    with pytest.raises(ValueError, match="unknown benchmark nope .known: autograd_small_graph, "):
        benchmarks.select(["nope"])


@pytest.mark.unit
def test_warm_up_covers_the_default_thresholds_compile_on_call_1001():
    calls = []
    done = suite.warm_up(lambda: calls.append(1))
    assert done.calls == len(calls) == suite.WARMUP_CALLS == 1001


@pytest.mark.unit
def test_warm_up_of_a_slow_body_stops_at_its_time_budget(monkeypatch):
    monkeypatch.setattr(suite, "WARMUP_SECONDS", 0.05)
    done = suite.warm_up(lambda: time.sleep(0.02))
    assert 2 <= done.calls <= 5 and done.seconds >= 0.04


@pytest.mark.unit
def test_the_time_function_times_the_loops_it_is_given():
    calls = []
    time_func = suite.timer(lambda: calls.append(1), suite.CLOCKS["wall"])
    assert time_func(7) >= 0 and len(calls) == 7


@pytest.mark.unit
def test_cpu_clock_ignores_time_spent_waiting():
    """On a shared machine a worker also waits for a core; the default clock does not count that."""
    elapsed = suite.timer(lambda: time.sleep(0.05), suite.CLOCKS["cpu"])(2)
    assert elapsed < 0.02
    assert suite.timer(lambda: time.sleep(0.05), suite.CLOCKS["wall"])(2) >= 0.1


@pytest.mark.unit
def test_jit_metadata_of_a_stock_worker_says_absent_and_compiled_nothing():
    metadata = suite.jit_metadata(Request(JitMode.ABSENT, None, Activation.AFTER_COLLECTION), None,
                                  suite.WarmUp(calls=1001, seconds=0.2))
    assert metadata["harness_jit"] == "absent" and metadata["harness_jit_compiled"] == 0
    assert metadata["harness_warmup_calls"] == 1001
    assert "harness_jit_error" not in metadata and "harness_threshold" not in metadata
    assert all(isinstance(value, (int, float, str)) and value != "" for value in metadata.values())


@pytest.mark.unit
def test_a_jit_error_is_recorded_on_one_line():
    metadata = suite.jit_metadata(Request(JitMode.ON, 1, Activation.STARTUP), "cannot import\ncinderx",
                                  suite.WarmUp(calls=2, seconds=0.1))
    assert metadata["harness_jit_error"] == "cannot import cinderx" and metadata["harness_threshold"] == 1


@pytest.mark.unit
def test_workers_inherit_the_jit_request_and_the_configurations_variables():
    configuration = Configuration(name="vendor", python="python3", env={"MY_FLAG": "1"})
    env = {"HARNESS_JIT": "on", "HARNESS_THRESHOLD": "1", "HARNESS_ACTIVATION": "startup", "MY_FLAG": "1",
           "PYTHONPATH": "/harness", "TORCHINDUCTOR_CACHE_DIR": "/c", "HOME": "/root", "SECRET_TOKEN": "x"}
    names = inherited_names(env, configuration)
    assert {"HARNESS_JIT", "HARNESS_THRESHOLD", "HARNESS_ACTIVATION", "MY_FLAG", "TORCHINDUCTOR_CACHE_DIR"} <= set(names)
    assert "SECRET_TOKEN" not in names


@pytest.mark.unit
def test_a_perf_run_spreads_its_processes_over_rounds():
    default = EFFORTS["default"]
    assert default.per_round * default.rounds == default.processes
    assert Effort(processes=5, values=3, rounds=2).per_round == 3  # never fewer processes than asked
    assert EFFORTS["fast"].processes < default.processes < EFFORTS["rigorous"].processes


@pytest.mark.integration
def test_a_failed_suite_invocation_is_run_again_and_kept_in_the_record(tmp_path, monkeypatch):
    """A worker crash (seen once with CinderX: SIGSEGV during fx tracing) costs a retry, not the run."""
    from harness.perf import run as perf_run
    from harness.perf.record import PerfRunDirectory

    real_stream, calls = perf_run._stream, []

    def crash_first(command, env, log, announce):
        calls.append(command)
        if len(calls) == 1:
            log.write("RuntimeError: python failed with exit code -11\n")
            log.flush()
            return 1
        return real_stream(command, env, log, announce)

    monkeypatch.setattr(perf_run, "_stream", crash_first)
    request = perf_run.PerfRequest(configuration=Configuration(name="stock", python=sys.executable), results_root=tmp_path,
                                   python=sys.executable, benchmarks=("py_dict_strings",),
                                   effort=Effort(processes=2, values=2, rounds=1))
    record = PerfRunDirectory(perf_run.execute(request, announce=lambda line: None)).read_record()
    assert len(calls) == 2 and record.status == "complete"
    assert record.failures == ("py_dict_strings, round 1, attempt 1: RuntimeError: python failed with exit code -11",)


@pytest.mark.integration
def test_a_suite_that_keeps_failing_fails_the_run_naming_the_benchmark(tmp_path, monkeypatch):
    from harness.errors import HarnessError
    from harness.perf import run as perf_run
    from harness.perf.record import PerfRunDirectory

    def always_fail(command, env, log, announce):
        log.write("boom\n")
        log.flush()
        return 1

    monkeypatch.setattr(perf_run, "_stream", always_fail)
    request = perf_run.PerfRequest(configuration=Configuration(name="stock", python=sys.executable), results_root=tmp_path,
                                   python=sys.executable, benchmarks=("py_dict_strings",),
                                   effort=Effort(processes=2, values=2, rounds=1))
    with pytest.raises(HarnessError, match="failed on py_dict_strings 3 times: boom"):
        perf_run.execute(request, announce=lambda line: None)
    record = PerfRunDirectory(next(tmp_path.iterdir())).read_record()
    assert record.status == "failed" and len(record.failures) == 3
