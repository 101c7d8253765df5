"""Benchmark: the harness diff of two 500,000-test runs against a bare ElementTree iterparse of them.

    python benchmarks/diff_vs_iterparse.py [--files 500] [--cases 1000] [--style harness|pytest]
                                           [--rounds 3] [--keep DIR]

Generates two run directories of FILES x CASES tests (run.json and one JUnit XML per file; the
candidate has a regression every 1,000 tests). `--style harness` writes the harness's own JUnit
(outcome, node id and replay properties on every test, as the runner writes them); `--style
pytest` writes what plain `pytest --junitxml` writes (no properties). Then, in rounds, each phase
in a fresh process, in rotating order:
- bare: `xml.etree.ElementTree.iterparse` over every file of both sides, doing nothing else;
- diff: `load_side` of both sides + `compare` + the JSON report, with no results database: both
  sides are streamed into SQLite (the ingest the diff needs is included);
- re-diff: the same, once both runs are in the results database (`db ingest`, timed once).
Prints the median of each phase, the median of the per-round ratios diff/bare (target <= 1.2),
the re-diff time (target < 3 s) and peak RSS (target <= 300 MiB; the diff's worker process,
which streams one side, is reported beside the main one).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shlex
import statistics
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from junitparser import JUnitXml, TestCase, TestSuite  # noqa: E402
from junitparser import Failure as JUnitFailure  # noqa: E402

from harness.compare.diff import compare  # noqa: E402
from harness.protocol import Env, Setting  # noqa: E402
from harness.record.ingest import ingest  # noqa: E402
from harness.record.junit import write_suite  # noqa: E402
from harness.record.model import FileRecord, RunRecord, TestResult  # noqa: E402
from harness.compare.sides import load_side  # noqa: E402
from harness.record.store import RunDirectory  # noqa: E402
from harness.report.json_report import to_json  # noqa: E402
from harness.report.model import build  # noqa: E402

PREFIX = (f"cd /work/pytorch/test && env -u CI {Env.JIT}=on {Env.THRESHOLD}=1000 PYTHONPATH=/opt/harness "
          "/opt/python3.14/bin/python3.14 -bb -X faulthandler -m pytest -p harness.run.plugin")
TEMPLATE_MODULE = "test_bench_template"
SIDES = {"baseline": ("stock", None), "candidate": ("cinderx-jit", 1000)}


def template(path: Path, cases: int, regression_every: int | None, style: str) -> None:
    """One file of `cases` tests, as the harness's writer or plain pytest writes it."""
    results = []
    for i in range(cases):
        failed = i % 50 == 0 or (regression_every is not None and i % regression_every == 7)
        results.append(TestResult(
            classname=f"{TEMPLATE_MODULE}.TestOpsCPU", name=f"test_op_{i}_cpu_float32", module=TEMPLATE_MODULE,
            outcome="failed" if failed else "passed", duration=0.01,
            message="AssertionError: Tensor-likes are not close!" if failed else "",
            text="Mismatched elements: 1 / 4 (25.0%)\nGreatest absolute difference: 0.1\n" if failed else "",
            nodeid=f"{TEMPLATE_MODULE}.py::TestOpsCPU::test_op_{i}_cpu_float32"))
    if style == "harness":
        write_suite(path, TEMPLATE_MODULE, results, {"configuration": "bench", "tier": "p1",
                                                      "file": f"{TEMPLATE_MODULE}.py", "replay_prefix": PREFIX},
                    {r.nodeid: f"{PREFIX} {shlex.quote(r.nodeid)}" for r in results})
        return
    suite = TestSuite("pytest")
    for result in results:
        case = TestCase(result.name, result.classname, result.duration)
        if result.outcome == "failed":
            failure = JUnitFailure(result.message)
            failure.text = result.text
            case.result = [failure]
        suite.append(case)
    document = JUnitXml()
    document.add_testsuite(suite)
    document.write(str(path))


def generate(root: Path, files: int, cases: int, style: str) -> dict[str, Path]:
    """Two run directories, each with its run record and one JUnit XML per file."""
    runs = {}
    for number, (side, (config, threshold)) in enumerate(SIDES.items()):
        template(root / "template.xml", cases, None if side == "baseline" else 1000, style)
        text = (root / "template.xml").read_text(encoding="utf-8")
        run = RunDirectory(root / f"{config}-p1-2026112{number}T000000000000")
        run.create()
        records = []
        for index in range(files):
            module = f"test_bench_{index}"
            run.junit(module).write_text(text.replace(TEMPLATE_MODULE, module), encoding="utf-8")
            records.append(FileRecord(file=f"{module}.py", module=module, exit_status=1, signal=None, duration=10.0,
                                      counts={}, jit={"compiled": 5} if threshold else None))
        run.write_record(RunRecord(
            configuration={"name": config, "jit": "on" if threshold else "absent"}, tier="p1", threshold=threshold,
            interpreter={}, versions={"torch": "2.14.1", "python": "3.14.0"}, fingerprint={"hash": "bench"},
            tests_dir="/t", test_sources={"hash": "bench"}, started=f"2026-11-2{number}T00:00:00", status="complete",
            files=tuple(records)))
        runs[side] = run.root
    (root / "template.xml").unlink()
    return runs


def bare(root: Path) -> int:
    elements = 0
    for path in sorted(root.glob("*/junit/*.xml")):
        for _ in ElementTree.iterparse(path):
            elements += 1
    return elements


def diff(root: Path) -> int:
    baseline, candidate = (next(root.glob(f"{SIDES[side][0]}-p1-*")) for side in SIDES)
    comparison = compare(load_side(baseline), load_side(candidate))
    return len(json.dumps(to_json(build([comparison]))))


def measure(phase: str, root: str, database: str, queue: multiprocessing.Queue) -> None:
    os.environ[Setting.DATABASE] = database
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    began = time.perf_counter()
    size = {"bare": bare, "diff": diff}[phase](Path(root))
    seconds = time.perf_counter() - began
    after = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu = sum(a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime for a, b in zip(after, usage))
    queue.put((seconds, *(a.ru_maxrss / 1024 for a in after), size, cpu))


def in_fresh_process(phase: str, root: Path, database: Path) -> tuple[float, float, float, int, float]:
    """(seconds, peak RSS of the process, peak RSS of its largest child, output size, CPU seconds of
    the process and its children)."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=measure, args=(phase, str(root), str(database), queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--style", choices=("harness", "pytest"), default="harness")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="generate into this (empty) folder and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as temporary:
        root = args.keep or Path(temporary)
        root.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        runs = generate(root, args.files, args.cases, args.style)
        size = sum(p.stat().st_size for p in root.glob("*/junit/*.xml")) / 2**20
        print(f"generated 2 x {args.files * args.cases:,} tests, {args.style} style ({size:,.0f} MiB of JUnit XML) "
              f"in {time.perf_counter() - began:.1f} s")
        database = root / "harness.db"
        absent = root / "absent" / "harness.db"  # no results database: the diff streams both sides
        began = time.perf_counter()
        ingest(database, runs.values())
        ingested = time.perf_counter() - began
        phases = {"bare": ("bare", absent), "diff": ("diff", absent), "re-diff": ("diff", database)}
        seen: dict[str, list[tuple[float, float, float, int, float]]] = {name: [] for name in phases}
        for number in range(args.rounds):
            names = list(phases)[number % len(phases):] + list(phases)[:number % len(phases)]
            for name in names:
                seen[name].append(in_fresh_process(phases[name][0], root, phases[name][1]))
            print(f"round {number + 1}: " + ", ".join(f"{name} {seen[name][-1][0]:.2f} s" for name in phases),
                  flush=True)
    ratios = [d[0] / b[0] for d, b in zip(seen["diff"], seen["bare"])]
    cpu_ratios = [d[4] / b[4] for d, b in zip(seen["diff"], seen["bare"])]
    median = {name: statistics.median(r[0] for r in rounds) for name, rounds in seen.items()}
    cpu = {name: statistics.median(r[4] for r in rounds) for name, rounds in seen.items()}
    peak = {name: (max(r[1] for r in rounds), max(r[2] for r in rounds)) for name, rounds in seen.items()}
    print(f"bare iterparse, both sides:   {median['bare']:7.2f} s  CPU {cpu['bare']:6.2f} s  "
          f"peak RSS {peak['bare'][0]:5.0f} MiB ({seen['bare'][0][3]:,} elements)")
    print(f"diff + JSON report (streams): {median['diff']:7.2f} s  CPU {cpu['diff']:6.2f} s  "
          f"peak RSS {peak['diff'][0]:5.0f} MiB (worker {peak['diff'][1]:.0f} MiB; {seen['diff'][0][3]:,} bytes of JSON)")
    print(f"db ingest of both runs:       {ingested:7.2f} s  (once)")
    print(f"re-diff of the ingested runs: {median['re-diff']:7.2f} s  CPU {cpu['re-diff']:6.2f} s  "
          f"peak RSS {peak['re-diff'][0]:5.0f} MiB (target < 3 s)")
    print(f"ratio diff / bare iterparse:  {statistics.median(ratios):.2f} elapsed (median of {len(ratios)} rounds: "
          f"{', '.join(f'{r:.2f}' for r in ratios)}; target <= 1.2), "
          f"{statistics.median(cpu_ratios):.2f} in CPU time (the diff reads both sides at once, in two processes)")


if __name__ == "__main__":
    main()
