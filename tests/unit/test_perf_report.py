"""`python -m harness perf compare` on small synthetic pyperf files: what a reviewer reads.

The pyperf JSON files are built with pyperf's own API (Run, Benchmark, BenchmarkSuite), with the
per-worker metadata the suite writes (harness_jit, harness_jit_compiled, ...).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyperf
import pytest

from harness.perf.record import PerfRecord, PerfRunDirectory

pytestmark = pytest.mark.integration

BENCHES = (("module_call", "torch", 1e-4), ("optimizer_step", "torch", 1e-3), ("py_method_calls", "calibration", 3e-5))


def harness(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True)


def suite_file(path: Path, *, factor: float = 1.0, jit: str = "absent", compiled: int = 0, threshold: int | None = None,
               benches=BENCHES, extra: dict | None = None, processes: int = 6) -> Path:
    """A pyperf suite as the harness suite writes it: `processes` worker runs of 4 values each per benchmark."""
    benchmarks = []
    for name, tag, seconds in benches:
        runs = []
        for process in range(processes):
            offset = 1.0 + 0.01 * ((process * 7) % 5 - 2)  # process-to-process spread, about 1%
            metadata = {"name": name, "unit": "second", "loops": 100, "description": f"what {name} measures",
                        "tags": [tag], "harness_jit": jit, "harness_clock": "cpu", "harness_jit_compiled": compiled,
                        "harness_jit_compile_ms": 40 + process, **(extra or {})}
            if threshold is not None:
                metadata["harness_threshold"] = threshold
            values = [seconds * factor * offset * (1.0 + 0.002 * v) for v in range(4)]
            runs.append(pyperf.Run(values, warmups=[(100, values[0])], metadata=metadata, collect_metadata=False))
        benchmarks.append(pyperf.Benchmark(runs))
    pyperf.BenchmarkSuite(benchmarks).dump(str(path))
    return path


def run_directory(root: Path, name: str, suite: Path, *, configuration: str, jit: str, threshold: int | None,
                  started: str, status: str = "complete", torch: str = "2.14.1", failures: tuple = ()) -> Path:
    run = PerfRunDirectory(root / name)
    run.cache.mkdir(parents=True)
    run.pyperf_json.write_bytes(suite.read_bytes())
    run.write_record(PerfRecord(
        configuration=configuration, threshold=threshold, jit=jit,
        interpreter={"path": "/x/python", "version": "3.14.10", "cinderx_origin": None},
        versions={"torch": torch, "python": "3.14.10"}, fingerprint={"machine": "x86_64", "cpu": "Xeon", "cpu_count": 2},
        command=(), benchmarks=(), started=started, status=status, failures=failures))
    return run.root


def test_a_jit_candidate_twice_as_fast_is_reported_per_benchmark_with_interval_and_geomean(tmp_path):
    base = suite_file(tmp_path / "stock.json")
    cand = suite_file(tmp_path / "jit.json", factor=0.5, jit="on", compiled=120, threshold=1000)
    done = harness("perf", "compare", base, cand, "--format", "md", "json", "--out", tmp_path / "out")  # `compare`: the older name of `perf diff`
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "perf-report.json").read_text())
    assert report["valid"] is True
    cells = {b["name"]: b["candidates"][0] for b in report["benchmarks"]}
    assert set(cells) == {"module_call", "optimizer_step", "py_method_calls"}
    for cell in cells.values():
        assert cell["verdict"] == "faster"
        assert cell["speedup"] == pytest.approx(2.0, rel=0.01)
        assert cell["ci95"][0] < 2.0 < cell["ci95"][1] and cell["ci95"][0] > 1.0
        assert cell["jit"]["compiled_median"] == 120
    means = report["candidates"][0]["geometric_mean"]
    assert means["all"]["speedup"] == pytest.approx(2.0, rel=0.01)
    assert set(means) == {"all", "torch", "calibration"}
    markdown = (tmp_path / "out" / "perf-report.md").read_text()
    assert "| Benchmark | stock | jit |" in markdown
    assert "| module_call | 100 us ± " in markdown and "**2.00x** [" in markdown and "] faster |" in markdown
    assert "| **geometric mean (all)** | |" in markdown
    assert "| module_call | 120 [120-120] in 0.04 s |" in markdown  # compile count and time per benchmark
    assert "what module_call measures" in markdown
    assert done.stdout.startswith("Performance: jit vs stock")  # the log gets text; perf-report.md the Markdown
    assert "**" not in done.stdout and "| module_call |" not in done.stdout


def test_the_same_file_against_itself_is_not_significant_everywhere(tmp_path):
    side = suite_file(tmp_path / "stock.json")
    done = harness("perf", "diff", side, side, "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [b["candidates"][0]["verdict"] for b in report["benchmarks"]] == ["not significant"] * 3
    assert report["candidates"][0]["geometric_mean"]["all"]["speedup"] == pytest.approx(1.0)


def test_a_jit_that_compiled_nothing_gets_no_speedup_and_the_comparison_is_invalid(tmp_path):
    """Seed 001's glass prison: the JIT was 'on' and compiled nothing; its numbers prove nothing."""
    base = suite_file(tmp_path / "stock.json")
    cand = suite_file(tmp_path / "jit.json", factor=0.5, jit="on", compiled=0, threshold=1000)
    done = harness("perf", "diff", base, cand, "--format", "json")
    assert done.returncode == 2, done.stderr
    report = json.loads(done.stdout)
    assert report["valid"] is False
    assert any("compiled nothing" in problem for problem in report["problems"])
    for bench in report["benchmarks"]:
        cell = bench["candidates"][0]
        assert cell["verdict"] == "withheld" and cell["speedup"] is None
        assert "compiled nothing in 6 of 6 worker processes" in cell["reason"]
    assert report["candidates"][0]["geometric_mean"] == {}


def test_one_vacuous_benchmark_is_withheld_while_the_others_are_reported(tmp_path):
    base = suite_file(tmp_path / "stock.json")
    cand = tmp_path / "jit.json"
    good = suite_file(tmp_path / "good.json", factor=0.5, jit="on", compiled=50, threshold=1, benches=BENCHES[:2])
    bad = suite_file(tmp_path / "bad.json", factor=0.5, jit="on", compiled=0, threshold=1, benches=BENCHES[2:])
    merged = pyperf.BenchmarkSuite.load(str(good))
    merged.add_benchmark(pyperf.BenchmarkSuite.load(str(bad)).get_benchmarks()[0])
    merged.dump(str(cand))
    report = json.loads(harness("perf", "diff", base, cand, "--format", "json").stdout)
    verdicts = {b["name"]: b["candidates"][0]["verdict"] for b in report["benchmarks"]}
    assert verdicts == {"module_call": "faster", "optimizer_step": "faster", "py_method_calls": "withheld"}
    assert set(report["candidates"][0]["geometric_mean"]) == {"torch", "all"}


def test_two_candidates_give_one_column_each_in_the_order_given(tmp_path):
    base = suite_file(tmp_path / "stock.json")
    t1000 = suite_file(tmp_path / "t1000.json", factor=0.9, jit="on", compiled=30, threshold=1000)
    t1 = suite_file(tmp_path / "t1.json", factor=0.6, jit="on", compiled=300, threshold=1)
    done = harness("perf", "diff", base, t1000, t1, "--out", tmp_path / "reports")
    assert done.returncode == 0, done.stderr
    markdown = (tmp_path / "reports" / "perf-report.md").read_text(encoding="utf-8")  # standard output is laid out
    assert "| Benchmark | stock | t1000 | t1 |" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| optimizer_step | 1 ms"))
    assert row.count("faster") == 2 and "**1.11x**" in row and "**1.67x**" in row


def test_a_baseline_that_could_import_cinderx_invalidates_every_candidate(tmp_path):
    base = suite_file(tmp_path / "stock.json", extra={"harness_cinderx_origin": "cinderx importable from /x"})
    cand = suite_file(tmp_path / "jit.json", factor=0.5, jit="on", compiled=10, threshold=1)
    done = harness("perf", "diff", base, cand, "--format", "json")
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert any("could import CinderX" in p for p in report["problems"])
    assert all(b["candidates"][0]["speedup"] is None for b in report["benchmarks"])


def test_different_clocks_are_not_compared(tmp_path):
    base = suite_file(tmp_path / "stock.json")
    cand = suite_file(tmp_path / "wall.json", extra={"harness_clock": "wall"})
    report = json.loads(harness("perf", "diff", base, cand, "--format", "json").stdout)
    assert report["valid"] is False and any("different clocks" in p for p in report["problems"])


def test_a_benchmark_on_one_side_only_is_missing_not_dropped(tmp_path):
    base = suite_file(tmp_path / "stock.json")
    cand = suite_file(tmp_path / "jit.json", benches=BENCHES[:2])
    report = json.loads(harness("perf", "diff", base, cand, "--format", "json").stdout)
    verdicts = {b["name"]: b["candidates"][0]["verdict"] for b in report["benchmarks"]}
    assert verdicts["py_method_calls"] == "missing"


def test_perf_run_directories_are_labelled_by_configuration_and_threshold_and_versions_checked(tmp_path):
    root = tmp_path / "results"
    stock = run_directory(root, "perf-stock-1", suite_file(tmp_path / "s.json"), configuration="stock", jit="absent",
                          threshold=None, started="2026-11-22T01:00:00")
    jit = run_directory(root, "perf-cinderx-jit-t1-1", suite_file(tmp_path / "j.json", factor=0.8, jit="on", compiled=9,
                        threshold=1), configuration="cinderx-jit", jit="on", threshold=1,
                        started="2026-11-22T01:10:00", torch="2.13.0")
    done = harness("perf", "diff", stock, jit, "--format", "json")
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert report["candidates"][0]["label"] == "cinderx-jit (threshold 1)"
    assert any("torch versions differ: 2.14.1 (baseline) vs 2.13.0" in p for p in report["problems"])


def test_compare_latest_takes_the_newest_complete_run_of_each_configuration_and_threshold(tmp_path):
    root = tmp_path / "results"
    suite = suite_file(tmp_path / "s.json")
    run_directory(root, "perf-stock-old", suite_file(tmp_path / "old.json", factor=3.0), configuration="stock",
                  jit="absent", threshold=None, started="2026-11-22T01:00:00")
    run_directory(root, "perf-stock-new", suite, configuration="stock", jit="absent", threshold=None,
                  started="2026-11-22T02:00:00")
    run_directory(root, "perf-stock-broken", suite, configuration="stock", jit="absent", threshold=None,
                  started="2026-11-22T03:00:00", status="failed")
    for threshold, factor in ((1, 0.5), (1000, 0.8)):
        run_directory(root, f"perf-cinderx-jit-t{threshold}", suite_file(tmp_path / f"t{threshold}.json", factor=factor,
                      jit="on", compiled=5, threshold=threshold), configuration="cinderx-jit", jit="on",
                      threshold=threshold, started="2026-11-22T02:30:00")
    done = harness("perf", "compare-latest", "--results", root, "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["baseline"]["path"].endswith("perf-stock-new")
    assert [c["label"] for c in report["candidates"]] == ["cinderx-jit (threshold 1000)", "cinderx-jit (threshold 1)"]
    speedups = [b["candidates"] for b in report["benchmarks"] if b["name"] == "module_call"][0]
    assert [round(c["speedup"], 2) for c in speedups] == [1.25, 2.0]


def test_an_incomplete_perf_run_is_refused_with_one_line(tmp_path):
    run = run_directory(tmp_path, "perf-stock-x", suite_file(tmp_path / "s.json"), configuration="stock", jit="absent",
                        threshold=None, started="2026-11-22T01:00:00", status="interrupted")
    done = harness("perf", "diff", run, run)
    assert done.returncode == 3
    assert done.stderr.strip().splitlines()[-1] == f"harness: error: {run}: the perf run is interrupted, not complete " \
                                                   f"(see {run / 'suite.log'})"


def test_unreadable_input_is_exit_3_naming_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    done = harness("perf", "diff", bad, bad)
    assert done.returncode == 3
    assert f"{bad}: not a readable pyperf JSON file" in done.stderr


def test_perf_run_refuses_bad_usage_before_measuring(tmp_path):
    done = harness("perf", "run", "--config", "stock", "--threshold", "1", "--results", tmp_path)
    assert done.returncode == 3 and "--threshold applies to JIT configurations" in done.stderr
    done = harness("perf", "run", "--config", "stock", "--bench", "nope", "--results", tmp_path)
    assert done.returncode == 3 and "unknown benchmark nope (known: " in done.stderr
    assert not list(tmp_path.iterdir())


def test_a_worker_crash_that_was_run_again_is_shown_as_a_note(tmp_path):
    stock = run_directory(tmp_path, "perf-stock-1", suite_file(tmp_path / "s.json"), configuration="stock",
                          jit="absent", threshold=None, started="2026-11-22T01:00:00")
    jit = run_directory(tmp_path, "perf-cinderx-jit-1", suite_file(tmp_path / "j.json", factor=0.8, jit="on",
                        compiled=9, threshold=1000), configuration="cinderx-jit", jit="on", threshold=1000,
                        started="2026-11-22T01:10:00", failures=("fx_trace, round 2, attempt 1: exit code -11",))
    done = harness("perf", "diff", stock, jit)
    assert done.returncode == 0
    assert "• note: cinderx-jit (threshold 1000): worker failure, run again: fx_trace, round 2, attempt 1: exit code -11" \
        in " ".join(done.stdout.split())  # laid out as text: a bullet, wrapped at 120 columns
